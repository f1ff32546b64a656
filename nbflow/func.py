"""nbflow.func: PyTorch's torch.func (grad, grad_and_value, vjp, jacrev, hessian, vmap, the
forward-mode jvp and jacfwd, functional_call and stack_module_state) on nbflow's eager tape.

The transforms are built on `nbflow.grad`, not on functorch's levels. A transform records the
backward pass (create_graph) exactly when the function's result depends on a tensor that
requires grad other than the transform's own fresh inputs: an outer transform's input, a
closed-over parameter, an input that already carries a graph. So `grad(grad(f))`,
`jacrev(jacrev(f))`, per-sample gradients in `vmap(grad(f))` and ordinary autograd through
`grad(f)(x)` all compose, and a top-level call returns plain tensors.

`vmap` is a loop over the mapped dimension whose results are stacked, not a batching
transform: same values, no speed-up.

nbflow has reverse mode only, so `jvp` and `jacfwd` are built from it by the double-vjp trick
(as nbflow.autograd.functional.jvp): g(u) = u^T J is linear in the seed u, so its vjp with a
tangent v is J v. A jvp costs a forward pass and two reverse passes (PyTorch's forward mode
costs about one forward pass); jacfwd reuses the first reverse pass for every column, so it
costs about what jacrev does. The values, and their composition with grad/jacrev/vmap
(hessian = jacfwd(jacrev(f))), are forward mode's. `functional_call` and `stack_module_state`
run a module with other parameters and buffers (ensembles).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from . import ops
from .autograd.backprop import grad as _grad
from .autograd.backprop import toposort
from .autograd.functional import vjp_allow_unused
from .core import enable_grad, rebuilt
from .core.errors import ArgumentError, DomainError, ShapeError, UnsupportedError
from .eager.tensor import Tensor, tensor
from .ops.queries import is_tensor

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "hessian", "vmap"]
__all__ += ["functional_call", "jacfwd", "jvp", "stack_module_state"]


def _argnums(argnums, nargs: int, fn: str) -> tuple[bool, tuple]:
    """(was argnums a tuple, the indices); PyTorch's checks on the indices."""
    is_tuple = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if is_tuple else (argnums,)
    if is_tuple and not nums:
        raise RuntimeError(f"{fn}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{fn}: argnums must be int or Tuple[int, ...], got {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(
                f"{fn}: Got argnums={n}, but only {nargs} positional inputs were given"
            )
    return is_tuple, tuple(n % nargs for n in nums)


def _fresh(x, fn: str):
    """A handle to differentiate with respect to: viewed (keeping its graph) if x has one."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{fn}: the argument to differentiate must be a Tensor, got {type(x)}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _needs_graph(outputs, own) -> bool:
    """Does any output reach a leaf requiring grad that is not one of `own`?

    Then someone outside this transform (an outer transform, ordinary autograd) may
    differentiate the result, so the backward pass must be recorded."""
    own_ids = {id(t) for t in own}
    edges = []
    for o in outputs:
        if o._node is None:
            if o.requires_grad and id(o) not in own_ids:
                return True
        else:
            edges.append((o._node, o._index))
    for node in toposort(edges):
        for e in node.edges:
            if isinstance(e, Tensor) and id(e) not in own_ids:
                return True
    return False


def _split_aux(out, has_aux: bool, fn: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise RuntimeError(
            f"{fn}(f)(*args): output of function f should be a tuple: (output, aux) "
            "if has_aux is True"
        )
    return out[0], out[1]


def _detach_tree(x):
    """Top-level results hold no graph (PyTorch unwraps them the same way)."""
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return rebuilt(type(x), [_detach_tree(v) for v in x])
    if isinstance(x, dict):
        return {k: _detach_tree(v) for k, v in x.items()}
    return x


def _zeros_for_none(grads, refs) -> tuple:
    """torch.func's convention: an input the output does not use gets a zero gradient."""
    return tuple(ops.zeros_like(r) if g is None else g for g, r in zip(grads, refs))


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (d func / d args[argnums], func(args)); func returns a scalar."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        is_tuple, nums = _argnums(argnums, len(args), "grad_and_value")
        args = list(args)
        xs = tuple(_fresh(args[n], "grad_and_value") for n in nums)
        for n, x in zip(nums, xs):
            args[n] = x
        with enable_grad():
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
        _check_scalar(out)
        keep = _needs_graph([out], xs)
        gs = (
            _grad(out, xs, retain_graph=True, create_graph=keep, allow_unused=True)
            if out.requires_grad
            else None
        )
        gs = _zeros_for_none(gs or (None,) * len(xs), xs)
        gs = gs if is_tuple else gs[0]
        if not keep:
            out, aux = out.detach(), _detach_tree(aux)
        return (gs, (out, aux)) if has_aux else (gs, out)

    return wrapper


def _check_scalar(out):
    if not isinstance(out, Tensor):
        raise RuntimeError(
            f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}"
        )
    if out.ndim != 0:
        raise RuntimeError(
            "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
            f"tensor with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs "
            "instead?"
        )


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning d func / d args[argnums] (and aux when has_aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def _outputs(out, fn: str) -> tuple[bool, tuple]:
    is_tuple = isinstance(out, (tuple, list))
    outs = tuple(out) if is_tuple else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{fn}(f, ...): expected f(*primals) to return only tensors, got unsupported "
                f"type {type(o)}"
            )
    return is_tuple, outs


def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) gives one gradient per primal.

    The forward pass runs once; vjp_fn may be called any number of times."""
    xs = tuple(_fresh(p, "vjp") for p in primals)
    with enable_grad():
        out, aux = _split_aux(func(*xs), has_aux, "vjp")
    is_tuple, outs = _outputs(out, "vjp")
    keep = _needs_graph(outs, xs)

    def vjp_fn(cotangents):
        cts = tuple(cotangents) if is_tuple else (cotangents,)
        _check_cotangents(cts, outs)
        live = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        gs = (None,) * len(xs)
        if live:
            os_, cs = zip(*live)
            with enable_grad():
                gs = _grad(list(os_), list(xs), list(cs), True, keep, allow_unused=True)
        return _zeros_for_none(gs, xs)

    if not keep:
        out, aux = _detach_tree(out), _detach_tree(aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _check_cotangents(cts, outs):
    if len(cts) != len(outs):
        raise RuntimeError(
            f"Expected pytree structure of cotangents to be the same as pytree structure of "
            f"outputs to the function: {len(outs)} outputs, {len(cts)} cotangents"
        )
    for c, o in zip(cts, outs):
        if not isinstance(c, Tensor) or tuple(c.shape) != tuple(o.shape):
            raise RuntimeError(
                f"Mismatch in shape: cotangent has shape {getattr(c, 'shape', type(c))} and "
                f"output has shape {tuple(o.shape)}"
            )


def jacrev(func, argnums=0, has_aux: bool = False):
    """A function returning the Jacobian by reverse mode, one vjp per output element.

    Its blocks have shape output.shape + input.shape; a tuple of outputs gives a tuple over
    outputs, each a tuple over argnums when argnums is a tuple (torch.func's nesting)."""

    @functools.wraps(func)
    def wrapper(*args):
        is_tuple, nums = _argnums(argnums, len(args), "jacrev")
        args = list(args)
        xs = tuple(_fresh(args[n], "jacrev") for n in nums)
        for n, x in zip(nums, xs):
            args[n] = x
        with enable_grad():
            out, aux = _split_aux(func(*args), has_aux, "jacrev")
        out_tuple, outs = _outputs(out, "jacrev")
        keep = _needs_graph(outs, xs)
        jac = tuple(_blocks(o, xs, keep) for o in outs)
        jac = tuple(j if is_tuple else j[0] for j in jac)
        jac = jac if out_tuple else jac[0]
        return (jac, aux if keep else _detach_tree(aux)) if has_aux else jac

    return wrapper


def _blocks(out, xs, keep: bool) -> tuple:
    """d out / d x for every x: rows from one-hot cotangents, stacked and reshaped."""
    n = out.numel()
    if n == 0 or not out.requires_grad:
        shape = tuple(out.shape)
        return tuple(ops.zeros(shape + x.shape, dtype=x.dtype, device=x.device) for x in xs)
    rows = [[] for _ in xs]
    for k in range(n):
        seed = np.zeros(n, dtype=out.dtype)
        seed[k] = 1
        # on out's device: the backward pass combines the seed with out's graph
        seed = tensor(seed.reshape(tuple(out.shape)), dtype=out.dtype, device=out.device)
        with enable_grad():
            gs = _grad(out, xs, seed, True, keep, allow_unused=True)
        for r, g in zip(rows, _zeros_for_none(gs, xs)):
            r.append(g)
    return tuple(
        ops.stack(r, axis=0).reshape(tuple(out.shape) + tuple(x.shape)) for r, x in zip(rows, xs)
    )


def hessian(func, argnums=0):
    """jacrev of jacrev: the inner Jacobian is recorded because the outer input reaches it."""
    return jacrev(jacrev(func, argnums), argnums)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: a Python loop over that dimension whose
    results are stacked at out_dims. Not a batching transform (no speed-up), but the same
    values, and it composes with grad (per-sample gradients).

    Inputs and outputs may be pytrees (nested tuples, lists and dicts of tensors), as in
    torch.func.vmap. in_dims: an int or None for every input, or a tuple with one entry per
    argument, each an int, None (passed unchanged to every call) or a pytree matching that
    argument's structure down to where an int or None covers a whole subtree. out_dims: the
    same for the outputs; None keeps an output that does not vary across the slices (and
    lets func return non-tensors there). randomness, for draws from the default generator
    (nbflow.manual_seed's): 'error' (func may not draw), 'different' (each slice its own
    draws) or 'same' (every slice the draws the first one gets). So PyTorch's ensembling
    recipe works: vmap(lambda p, b, x: functional_call(model, (p, b), (x,)), in_dims=(0, 0,
    None))(*stack_module_state(models), x)."""
    if randomness not in ("error", "different", "same"):
        raise DomainError(
            f"vmap: randomness must be 'error', 'different' or 'same', got {randomness!r}"
        )

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, structure = tree_flatten(args)
        dims = _in_dims(in_dims, args, leaves, structure)
        size = _batch_size(leaves, dims)
        if size == 0:  # (a batching transform would know the outputs' shapes; a loop does not)
            raise UnsupportedError(
                "vmap: the mapped dimension has size 0; nbflow's vmap calls func once per "
                "slice, so it cannot tell the shapes of no results"
            )
        start, results = _random_state(), []
        for b in range(size):
            if randomness == "same":
                _set_random_state(start)
            sliced = tree_unflatten(structure, iter(_slice(leaves, dims, b)))
            results.append(func(*sliced, **kwargs))
            if randomness == "error" and _random_state() != start:
                raise UnsupportedError(
                    "vmap: func draws random numbers, which randomness='error' refuses; pass "
                    "randomness='different' (each slice its own draws) or 'same'"
                )
        return _stack(results, out_dims)

    return wrapper


def _random_state() -> dict:
    return ops.creation.default_generator.numpy.bit_generator.state


def _set_random_state(state: dict):
    ops.creation.default_generator.numpy.bit_generator.state = state


# ---------------------------------------------------------------- pytrees
# A structure is None for a leaf, else (container type, dict keys or None, child structures).
# None counts as a leaf: an in_dims entry of None covers a subtree as an int does.


def tree_flatten(tree) -> tuple[list, object]:
    """(the leaves in order, the structure to rebuild the tree from them)."""
    if isinstance(tree, dict):
        keys = list(tree)
        children = [tree_flatten(tree[k]) for k in keys]
    elif isinstance(tree, (tuple, list)):
        keys, children = None, [tree_flatten(v) for v in tree]
    else:
        return [tree], None
    leaves = [leaf for sub, _ in children for leaf in sub]
    return leaves, (type(tree), keys, [s for _, s in children])


def tree_unflatten(structure, leaves):
    """The tree of `structure` with the next leaves of the iterator `leaves`."""
    if structure is None:
        return next(leaves)
    kind, keys, children = structure
    values = [tree_unflatten(s, leaves) for s in children]
    if keys is not None:
        return kind(zip(keys, values))
    return rebuilt(kind, values)


def _n_leaves(structure) -> int:
    return 1 if structure is None else sum(_n_leaves(s) for s in structure[2])


def _broadcast(dims, structure):
    """One dim per leaf of `structure`: an int or None (or anything that is not a container)
    covers its whole subtree; containers must match the structure's. None where they do not
    (torch's _broadcast_to_and_flatten)."""
    if structure is None or not isinstance(dims, (tuple, list, dict)):
        return [dims] * _n_leaves(structure)
    kind, keys, children = structure
    if type(dims) is not kind or len(dims) != len(children):
        return None
    if keys is not None and set(dims) != set(keys):
        return None
    result = []
    for d, s in zip(dims if keys is None else [dims[k] for k in keys], children):
        sub = _broadcast(d, s)
        if sub is None:
            return None
        result += sub
    return result


def _in_dims(in_dims, args, leaves, structure) -> list:
    """One mapped dim (or None) per input leaf, checked against the leaf as torch does."""
    if not isinstance(in_dims, (int, tuple, list)) and in_dims is not None:
        raise DomainError(
            "vmap: expected `in_dims` to be int or a (potentially nested) tuple matching the "
            f"structure of inputs, got: {type(in_dims)}"
        )
    if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
        raise ShapeError(
            f"vmap: in_dims is not compatible with the structure of `inputs`. in_dims has "
            f"{len(in_dims)} entries but there are {len(args)} inputs"
        )
    dims = _broadcast(tuple(in_dims) if isinstance(in_dims, list) else in_dims, structure)
    if dims is None:
        raise ShapeError(
            f"vmap: in_dims is not compatible with the structure of `inputs`. in_dims is "
            f"{in_dims!r}, but the inputs are {_describe(structure)}"
        )
    for i, (a, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise DomainError(f"vmap: in_dim for input {i} must be an int or None, got {d!r}")
        if not is_tensor(a):
            raise DomainError(
                f"vmap: Got in_dim={d} for an input but the input is of type {type(a)}. We "
                "cannot vmap over non-Tensor arguments, please use None as the respective "
                "in_dim"
            )
        if a.ndim == 0 or not -a.ndim <= d < a.ndim:
            raise ShapeError(
                f"vmap: Got in_dim={d} for input {i}, but input {i} is a Tensor of "
                f"dimensionality {a.ndim} so expected in_dim to satisfy -{a.ndim} <= in_dim "
                f"< {a.ndim}."
            )
    return [None if d is None else d % a.ndim for a, d in zip(leaves, dims)]


def _describe(structure) -> str:
    """The tree's shape in words, with * for a leaf (for error messages)."""
    if structure is None:
        return "*"
    kind, keys, children = structure
    parts = [_describe(s) for s in children]
    if keys is not None:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts)) + "}"
    inner = ", ".join(parts) + ("," if kind is tuple and len(parts) == 1 else "")
    return f"[{inner}]" if issubclass(kind, list) else f"({inner})"


def _batch_size(leaves, dims) -> int:
    sizes = {a.shape[d] for a, d in zip(leaves, dims) if d is not None}
    if not sizes:
        raise ShapeError(
            "vmap: at least one input must be a Tensor mapped over a dimension (in_dims not None)"
        )
    if len(sizes) > 1:
        raise DomainError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sorted(sizes)} for the mapped dimension"
        )
    return sizes.pop()


def _slice(leaves, dims, b) -> list:
    return [a if d is None else a.movedim(d, 0)[b] for a, d in zip(leaves, dims)]


def _stack(results, out_dims):
    """The per-slice results (pytrees of one structure) stacked leaf by leaf at out_dims."""
    flat, structure = tree_flatten(results[0])
    columns = [[leaf] for leaf in flat]
    for r in results[1:]:
        leaves, s = tree_flatten(r)
        if s != structure:
            raise DomainError(
                "vmap: `func` returned outputs of different structures for different slices: "
                f"{_describe(structure)} and {_describe(s)}"
            )
        for column, leaf in zip(columns, leaves):
            column.append(leaf)
    if structure is None and isinstance(out_dims, tuple) and len(out_dims) == 1:
        out_dims = out_dims[0]  # torch takes (d,) for a single tensor output too
    dims = _broadcast(out_dims, structure)
    if dims is None:
        raise ShapeError(
            f"vmap: out_dims is not compatible with the structure of `outputs`. out_dims is "
            f"{out_dims!r}, but the outputs are {_describe(structure)}"
        )
    stacked = [_stack_one(column, d) for column, d in zip(columns, dims)]
    return tree_unflatten(structure, iter(stacked))


def _stack_one(ts, d):
    """One output leaf over the slices: stacked at d, or (d None) the one value they share."""
    if d is None:
        if all(t is ts[0] for t in ts) or (all(is_tensor(t) for t in ts) and _all_equal(ts)):
            return ts[0]
        raise ShapeError(
            "vmap: `out_dims` can be None only if the output does not vary across the mapped "
            "dimension"
        )
    if not all(is_tensor(t) for t in ts):
        bad = next(t for t in ts if not is_tensor(t))
        raise DomainError(
            f"vmap: `func` must only return Tensors, got type {type(bad)}. Did you mean to set "
            "out_dims= to None for output?"
        )
    if not isinstance(d, int):
        raise DomainError(f"vmap: out_dim must be an int or None, got {d!r}")
    stacked = ops.stack(ts, axis=0)
    if not -stacked.ndim <= d < stacked.ndim:
        raise ShapeError(
            f"vmap: Got out_dim={d} for an output of dimensionality {stacked.ndim - 1}; "
            f"expected -{stacked.ndim} <= out_dim < {stacked.ndim}"
        )
    return stacked if d % stacked.ndim == 0 else stacked.movedim(0, d)


def _all_equal(ts) -> bool:
    """Whether eager tensors hold one value (graph values cannot be compared: they differ)."""
    if not all(isinstance(t, Tensor) for t in ts):
        return False
    first = ts[0].detach().numpy()
    return all(
        t.shape == ts[0].shape and np.array_equal(t.detach().numpy(), first, equal_nan=True)
        for t in ts[1:]
    )


# ---------------------------------------------------------------- functional_call


def _merged(dicts) -> dict:
    """One dict of the parameters and buffers given (a dict, or a sequence of dicts with no
    key in two of them)."""
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, Sequence) or isinstance(dicts, str):
        raise DomainError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(dicts)}"
        )
    if not all(isinstance(d, dict) for d in dicts):
        raise DomainError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    seen, repeated = set(), []
    for d in dicts:
        for k in d:
            if k in seen and k not in repeated:
                repeated.append(k)
            seen.add(k)
    if repeated:
        raise DomainError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    return {k: v for d in dicts for k, v in d.items()}


def _named_tensors(module, prefix: str = ""):
    """(dotted name, tensor) of every parameter and buffer under every name it has (PyTorch's
    remove_duplicate=False: a tied weight under each of its names)."""
    for registry in ("_parameters", "_buffers"):
        for name, t in module.__dict__[registry].items():
            if t is not None:
                yield prefix + name, t
    for name, child in module._modules.items():
        if child is not None:
            yield from _named_tensors(child, f"{prefix}{name}.")


def _untied(module, given: dict) -> dict:
    """`given` with each tied tensor's value under all of its names; two different values for
    one tied tensor are an error (PyTorch's tie_weights=True)."""
    names_of: dict[int, set] = {}
    for name, t in _named_tensors(module):
        names_of.setdefault(id(t), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    out = dict(given)
    for name in [n for n in given if n in tied]:
        values = {id(given[n]) for n in tied[name] if n in given}
        if len(values) > 1:
            raise DomainError(
                f"functional_call got multiple values for keys {sorted(tied[name])}, which "
                "are tied. Consider using tie_weights=False"
            )
        out.update((n, given[name]) for n in tied[name])
    return out


def _check_keys(module, given: dict) -> None:
    valid = {name for name, _ in _named_tensors(module)}
    missing, unexpected = sorted(valid - set(given)), sorted(set(given) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError(
            f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(errors)
        )


_ABSENT = object()


def _swap(module, name: str, value):
    """Put `value` at dotted `name` (a parameter, a buffer, or a new attribute); the old value
    (or _ABSENT). Written to the registries directly: no renaming, no checks of the value."""
    path, _, attr = name.rpartition(".")
    owner = module.get_submodule(path)
    d = owner.__dict__
    for registry in ("_parameters", "_buffers"):
        if attr in d[registry]:
            old = d[registry][attr]
            d[registry][attr] = value
            d[attr] = value
            return old
    old = d.get(attr, _ABSENT)
    if value is _ABSENT:
        d.pop(attr, None)
    else:
        d[attr] = value
    return old


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call only,
    by the tensors given by dotted name (a dict, or a sequence of dicts); the others stay the
    module's own. Gradients flow to the tensors given. args that is not a tuple is one
    argument. tie_weights: a value given for one name of a tied tensor is used for all of
    them. strict: every parameter and buffer must be given, and nothing else. In-place
    changes the module makes (BatchNorm's running statistics) land in the tensors given.
    Works eagerly and under @nbflow.jit."""
    given = _merged(parameter_and_buffer_dicts)
    if tie_weights:
        given = _untied(module, given)
    if strict:
        _check_keys(module, given)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    originals = {}
    try:
        for name, value in given.items():
            originals[name] = _swap(module, name, value)
        return module(*args, **(kwargs or {}))
    finally:
        for name, old in reversed(originals.items()):
            _swap(module, name, old)


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): each parameter and buffer of the same-class `models` stacked along
    a new first dim, by name. The stacked parameters are new leaves that require grad (for an
    optimizer), unrelated to the models' own."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors, name: str) -> Tensor:
    flags = {t.requires_grad for t in tensors}
    if len(flags) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    stacked = ops.stack([t.detach() for t in tensors], axis=0)
    return stacked.requires_grad_(True) if flags == {True} else stacked


# ---------------------------------------------------------------- forward mode


def _linearize(func, args, nums, has_aux: bool, fn: str):
    """func at args with the inputs args[nums] made differentiable, and the first reverse
    pass of the double-vjp trick: (xs, outs, is_tuple, aux, seeds u, u^T J per input)."""
    args = list(args)
    xs = tuple(_fresh(args[n], fn) for n in nums)
    for n, x in zip(nums, xs):
        args[n] = x
    with enable_grad():
        out, aux = _split_aux(func(*args), has_aux, fn)
    is_tuple, outs = _outputs(out, fn)
    us = tuple(ops.zeros_like(o).requires_grad_(True) for o in outs)
    with enable_grad():
        back = vjp_allow_unused(outs, xs, us, create_graph=True)
    back = tuple(ops.zeros_like(x) if b is None else b for b, x in zip(back, xs))
    return xs, outs, is_tuple, aux, us, back


def _push(back, us, outs, tangents, keep: bool) -> tuple:
    """J v for each output: the vjp of u^T J with respect to the seeds u, with v."""
    with enable_grad():
        fwd = vjp_allow_unused(back, us, tangents, create_graph=keep)
    return tuple(ops.zeros_like(o) if f is None else f for f, o in zip(fwd, outs))


def _check_tangents(primals, tangents):
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be "
            f"valid to call f(*primals). Got {type(primals).__name__}"
        )
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must be."
        )
    for p, t in zip(primals, tangents):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(
                "jvp(f, primals, tangents): Expected primals and tangents to be tensors"
            )
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"jvp(f, primals, tangents): Expected tangent of shape {tuple(p.shape)} to "
                f"match its primal, got {tuple(t.shape)}"
            )


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J v[, aux]): the Jacobian of func at primals times the tangents, by
    the double-vjp trick (module doc). `strict` is accepted for PyTorch's signature."""
    _check_tangents(primals, tangents)
    nums = tuple(range(len(primals)))
    xs, outs, is_tuple, aux, us, back = _linearize(func, primals, nums, has_aux, "jvp")
    keep = _needs_graph(outs, xs) or any(t.requires_grad for t in tangents)
    jv = _push(back, us, outs, tangents, keep)
    out = tuple(outs) if is_tuple else outs[0]
    jv = jv if is_tuple else jv[0]
    if not keep:
        out, jv, aux = _detach_tree(out), _detach_tree(jv), _detach_tree(aux)
    return (out, jv, aux) if has_aux else (out, jv)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian by forward mode, one jvp per input element (a
    column): blocks of shape output.shape + input.shape, nested as jacrev's. Built on the
    double-vjp trick (module doc). `randomness` is accepted for PyTorch's signature (it is
    vmap's; nbflow's jacfwd loops)."""
    if randomness not in ("error", "different", "same"):
        raise DomainError(
            f"jacfwd: randomness must be 'error', 'different' or 'same', got {randomness!r}"
        )

    @functools.wraps(func)
    def wrapper(*args):
        is_tuple, nums = _argnums(argnums, len(args), "jacfwd")
        xs, outs, out_tuple, aux, us, back = _linearize(func, args, nums, has_aux, "jacfwd")
        keep = _needs_graph(outs, xs)
        columns = [[[] for _ in xs] for _ in outs]  # [output][input] -> columns
        for j, x in enumerate(xs):
            for k in range(x.numel()):
                tangents = _one_hot_tangent(x, k)
                for i, col in enumerate(_push((back[j],), us, outs, (tangents,), keep)):
                    columns[i][j].append(col)
        jac = tuple(
            tuple(_block(columns[i][j], o, x) for j, x in enumerate(xs)) for i, o in enumerate(outs)
        )
        jac = tuple(j if is_tuple else j[0] for j in jac)
        jac = jac if out_tuple else jac[0]
        if not keep:
            jac, aux = _detach_tree(jac), _detach_tree(aux)
        return (jac, aux) if has_aux else jac

    return wrapper


def _one_hot_tangent(x: Tensor, k: int) -> Tensor:
    seed = np.zeros(x.numel(), dtype=x.dtype)
    seed[k] = 1
    return tensor(seed.reshape(tuple(x.shape)), dtype=x.dtype, device=x.device)


def _block(columns, out: Tensor, x: Tensor) -> Tensor:
    """d out / d x from its columns (one per element of x): shape out.shape + x.shape."""
    shape = tuple(out.shape) + tuple(x.shape)
    if not columns:
        return ops.zeros(shape, dtype=out.dtype, device=out.device)
    return ops.stack(columns, axis=out.ndim).reshape(shape)
