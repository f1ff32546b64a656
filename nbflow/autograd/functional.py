"""nbflow.autograd.functional: PyTorch's torch.autograd.functional on the eager tape.

Every function here is built from `nbflow.grad` (reverse mode with `create_graph`), so no op
needs a forward-mode rule: `jvp` uses the double-vjp trick, `jacobian` takes one vjp per output
element, `hessian` is the jacobian of a jacobian recorded with `create_graph=True`.
Return structures follow PyTorch: a tuple where the inputs (or outputs) were a tuple, a single
tensor otherwise.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..core import enable_grad
from ..eager.tensor import Tensor, tensor
from .backprop import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(x, what: str, fn: str) -> tuple[bool, tuple]:
    """(was it a tuple, the tensors as a tuple); a non-tensor is a TypeError, as in PyTorch."""
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            where = f"entry {i} of " if is_tuple else ""
            raise TypeError(
                f"The {where}{what} given to {fn} must be either a Tensor or a tuple of Tensors "
                f"but the value got is {type(t).__name__}."
            )
    return is_tuple, xs


def _untuple(res, is_tuple):
    """Undo _as_tuple: `is_tuple` is one flag, or two (outer, inner) for a nested result."""
    if isinstance(is_tuple, tuple):
        if not is_tuple[1]:
            res = tuple(r[0] for r in res)
        return res if is_tuple[0] else res[0]
    return res if is_tuple else res[0]


def _prepare(inputs, create_graph: bool, need_graph: bool = True) -> tuple:
    """Fresh differentiable handles on the inputs.

    With create_graph, an input that already carries a graph is viewed (not detached) so the
    result stays differentiable with respect to whatever produced it (needed by hessian)."""
    if create_graph:
        return tuple(x.view_as(x) if x.requires_grad else _leaf(x, need_graph) for x in inputs)
    return tuple(_leaf(x, need_graph) for x in inputs)


def _leaf(x, need_graph):
    return x.detach().requires_grad_(need_graph)


def _finish(xs, create_graph: bool) -> tuple:
    """Results are detached unless the caller asked for a graph through them."""
    return tuple(x if create_graph or x is None else x.detach() for x in xs)


def vjp_allow_unused(outputs, inputs, seeds, create_graph: bool) -> tuple:
    """nbflow.grad over the outputs that carry a graph; None for inputs nothing reaches."""
    live = [(o, s) for o, s in zip(outputs, seeds) if o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    outs, gs = zip(*live)
    return _grad(list(outs), list(inputs), list(gs), True, create_graph, allow_unused=True)


def _fill_zeros(grads, refs, strict: bool, message: str) -> tuple:
    """Zeros for the None gradients (PyTorch's convention); under strict, an error instead."""
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(i=i))
            g = ops.zeros_like(r)
        out.append(g)
    return tuple(out)


def _check_outputs_require_grad(outputs, strict: bool):
    """Under strict, an output with no graph at all is independent of every input."""
    if strict:
        for i, o in enumerate(outputs):
            if not o.requires_grad:
                raise RuntimeError(
                    f"Output {i} of the user-provided function does not require gradients. The "
                    "outputs must be computed in a differentiable manner from the input when "
                    "running in strict mode."
                )


def _seeds(v, outputs, fn: str, what: str) -> tuple:
    """The vectors to contract with; None is allowed only for single-element tensors."""
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                f"The vector v can only be None if the {what} of the user-provided function "
                "is a single Tensor with a single element."
            )
        return (ops.ones_like(outputs[0]),)
    _, vs = _as_tuple(v, "v", fn)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v has {len(vs)} tensors but the {what} has {len(outputs)}")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(
                f"Entry {i} in v has shape {tuple(a.shape)} but the matching {what} entry "
                f"has shape {tuple(b.shape)}"
            )
    return vs


def _call(func, inputs, fn: str):
    with enable_grad():
        out = func(*inputs)
    is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn)
    return is_tuple, outs


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T J): one reverse pass, the cheap direction for many inputs."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
    xs = _prepare(xs, create_graph)
    out_tuple, outs = _call(func, xs, "vjp")
    _check_outputs_require_grad(outs, strict)
    seeds = _seeds(v, outs, "vjp", "output")
    grads = vjp_allow_unused(outs, xs, seeds, create_graph)
    msg = "The output of the user-provided function is independent of input {i}. This is not "
    grads = _fill_zeros(grads, xs, strict, msg + "allowed in strict mode.")
    return _untuple(_finish(outs, create_graph), out_tuple), _untuple(grads, in_tuple)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v) by the double-vjp trick: J v = d/du (u^T J) v, linear in u.

    nbflow has reverse mode only; differentiating the vjp with respect to its (zero) seed
    gives the forward-mode product at the cost of two reverse passes."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "jvp")
    xs = _prepare(xs, create_graph)
    vs = _seeds(v, xs, "jvp", "input")
    out_tuple, outs = _call(func, xs, "jvp")
    _check_outputs_require_grad(outs, strict)
    us = tuple(ops.zeros_like(o).requires_grad_(True) for o in outs)
    with enable_grad():
        back = vjp_allow_unused(outs, xs, us, create_graph=True)
    msg = "The output of the user-provided function is independent of input {i}. This is not "
    back = _fill_zeros(back, xs, strict, msg + "allowed in strict mode.")
    with enable_grad():
        fwd = vjp_allow_unused(back, us, vs, create_graph)
    msg = "The gradient with respect to the input is independent of entry {i} in the grad_outputs"
    fwd = _fill_zeros(fwd, outs, strict, msg + " when using the double backward trick.")
    return _untuple(_finish(outs, create_graph), out_tuple), _untuple(fwd, out_tuple)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """d func / d inputs, one vjp per output element (row by row).

    `result[i][j]` has shape `outputs[i].shape + inputs[j].shape`. `vectorize` is accepted for
    PyTorch's signature but changes nothing here: rows are always computed in a loop."""
    if strategy != "reverse-mode":
        raise NotImplementedError("nbflow's jacobian has only strategy='reverse-mode'")
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`."
        )
    in_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
    xs = _prepare(xs, create_graph)
    out_tuple, outs = _call(func, xs, "jacobian")
    _check_outputs_require_grad(outs, strict)
    jac = tuple(_jacobian_of(i, o, xs, create_graph, strict) for i, o in enumerate(outs))
    return _untuple(jac, (out_tuple, in_tuple))


def _jacobian_of(i, out, xs, create_graph, strict) -> tuple:
    """The blocks d out / d x_j for one output, stacked from one vjp per element of `out`."""
    rows = [[] for _ in xs]
    n = out.numel()
    for k in range(n):
        with enable_grad():
            gs = vjp_allow_unused((out,), xs, (_one_hot(out, k),), create_graph)
        for j, g in enumerate(gs):
            if g is None and strict:
                raise RuntimeError(
                    f"Output {i} of the user-provided function is independent of input {j}. "
                    "This is not allowed in strict mode."
                )
            rows[j].append(ops.zeros_like(xs[j]) if g is None else g)
    blocks = []
    for j, x in enumerate(xs):
        shape = tuple(out.shape) + tuple(x.shape)
        if n == 0:
            blocks.append(ops.zeros(shape, dtype=x.dtype, device=x.device))
        else:
            blocks.append(ops.stack(rows[j], axis=0).reshape(shape))
    return _finish(blocks, create_graph)


def _one_hot(out, k):
    """A seed shaped like `out` with a one at flat position k: picks row k of the Jacobian."""
    seed = np.zeros(out.numel(), dtype=out.dtype)
    seed[k] = 1
    # on out's device: the vjp combines the seed with out's gradient graph
    return tensor(seed.reshape(tuple(out.shape)), dtype=out.dtype, device=out.device)


def _scalar_output(func, fn: str, strict: bool):
    """func, checked to return one single-element tensor (hessian, hvp and vhp need that)."""

    def checked(*xs):
        out = func(*xs)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn)
        _check_outputs_require_grad(outs, strict)
        if is_tuple:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                f"The Tensor returned by the function given to {fn} should contain a single element"
            )
        return out

    return checked


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The jacobian of the gradient: the inner jacobian is recorded (create_graph=True) so the
    outer one can differentiate it. `result[i][j]` has shape `inputs[i].shape + inputs[j].shape`."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "hessian")
    scalar = _scalar_output(func, "hessian", strict)

    def jac_func(*ys):
        jac = jacobian(lambda *zs: scalar(*zs).reshape(()), ys, create_graph=True)
        _, jacs = _as_tuple(jac, "jacobian", "hessian")
        _check_outputs_require_grad(jacs, strict)
        return jac

    res = jacobian(jac_func, xs, create_graph=create_graph, strict=strict, vectorize=vectorize)
    return _untuple(res, (in_tuple, in_tuple))


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T H): the vjp of the gradient, two reverse passes and no Hessian."""
    return _vhp(func, inputs, v, create_graph, strict, "vhp")


def _vhp(func, inputs, v, create_graph, strict, fn):
    in_tuple, xs = _as_tuple(inputs, "inputs", fn)
    xs = _prepare(xs, create_graph)
    vs = _seeds(v, xs, fn, "input")
    _, (out,) = _call(_scalar_output(func, fn, strict), xs, fn)
    with enable_grad():
        jac = vjp_allow_unused((out,), xs, (ops.ones_like(out),), create_graph=True)
    msg = "The output of the user-provided function is independent of input {i}. This is not "
    jac = _fill_zeros(jac, xs, strict, msg + "allowed in strict mode.")
    with enable_grad():
        res = vjp_allow_unused(jac, xs, vs, create_graph)
    msg = "The hessian of the user-provided function with respect to input {i} is independent "
    res = _fill_zeros(res, xs, strict, msg + "of the input. This is not allowed in strict mode.")
    return _finish((out,), create_graph)[0], _untuple(res, in_tuple)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v). The Hessian of a twice continuously differentiable function is
    symmetric, so H v = (v^T H)^T and this is vhp; PyTorch uses a double-backward trick
    instead, which gives the same numbers at a higher cost."""
    return _vhp(func, inputs, v, create_graph, strict, "hvp")
