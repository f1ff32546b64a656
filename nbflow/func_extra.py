"""The rest of PyTorch's torch.func on nbflow: `functional_call` and `stack_module_state`
(a module run with other parameters and buffers, ensembles), and the forward-mode transforms
`jvp` and `jacfwd`.

nbflow has reverse mode only, so `jvp` and `jacfwd` are built from it by the double-vjp trick
(as nbflow.autograd.functional.jvp): g(u) = u^T J is linear in the seed u, so its vjp with a
tangent v is J v. A jvp costs a forward pass and two reverse passes (PyTorch's forward mode
costs about one forward pass); jacfwd reuses the first reverse pass for every column, so it
costs about what jacrev does. The values, and their composition with grad/jacrev/vmap
(hessian = jacfwd(jacrev(f))), are forward mode's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from . import ops
from .core import enable_grad
from .func import _argnums, _detach_tree, _fresh, _needs_graph, _outputs, _split_aux
from .functional_autograd import _vjp_raw
from .tensor import Tensor, tensor

__all__ = ["functional_call", "jacfwd", "jvp", "stack_module_state"]


# ---------------------------------------------------------------- functional_call


def _merged(dicts) -> dict:
    """One dict of the parameters and buffers given (a dict, or a sequence of dicts with no
    key in two of them)."""
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, Sequence) or isinstance(dicts, str):
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(dicts)}"
        )
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    seen, repeated = set(), []
    for d in dicts:
        for k in d:
            if k in seen and k not in repeated:
                repeated.append(k)
            seen.add(k)
    if repeated:
        raise ValueError(
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
            raise ValueError(
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
        back = _vjp_raw(outs, xs, us, create_graph=True)
    back = tuple(ops.zeros_like(x) if b is None else b for b, x in zip(back, xs))
    return xs, outs, is_tuple, aux, us, back


def _push(back, us, outs, tangents, keep: bool) -> tuple:
    """J v for each output: the vjp of u^T J with respect to the seeds u, with v."""
    with enable_grad():
        fwd = _vjp_raw(back, us, tangents, create_graph=keep)
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
        raise ValueError(
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
