"""Factories for the common declaration shapes: an elementwise op from one scalar body, and
the in-place variant of an op."""

import inspect

from ..argcheck import shown
from ..core import REGISTRY, Op, Spec, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import ArgumentError, DTypeError, NbflowError, ShapeError
from ..kernels.cpu.templates import Elementwise
from ..kernels.cuda.loader import CudaElementwise

# the `no_derivative` of ops whose derivative PyTorch does not implement either
NOT_IN_PYTORCH = "none is implemented (nor in PyTorch)"


def elementwise(
    *,
    dtypes,
    ref,
    attrs=None,
    out_dtype=None,
    real_out=False,
    to_float=False,
    promote=None,
    differentiable=True,
    no_derivative="",
    check=None,
    cls=Op,
):
    """Declare an elementwise op from its scalar body, written once for every device.

    The body's leading parameters are the tensor inputs; the parameters that follow are attrs
    (declared in `attrs`) and reach the kernel as scalars of the compute dtype. Attrs that are
    not body parameters (such as cast's dtype) are only seen by the spec rule. The output
    broadcasts the inputs; its dtype is the promoted dtype of the `promote` inputs (with
    `real_out`, a complex one gives the real dtype of its precision: abs), or `out_dtype`: a
    dtype (bool for comparisons) or a function of the input specs and attrs. `check(*inputs)`,
    if given, runs before the kernel and raises a typed error for values the body rejects.
    `cls` is the Op class: a subclass whose __call__ also takes PyTorch's call forms that are
    compositions of ops (div's rounding_mode=, clamp's tensor bounds)."""
    attrs = {} if attrs is None else attrs
    if not isinstance(attrs, dict):
        raise ArgumentError(f"elementwise: attrs must be a dict of Attr, got {shown(attrs)}")

    def wrap(body) -> Op:
        if body.__name__ in REGISTRY:  # before the body replaces the existing op's kernel body
            raise NbflowError(f"op '{body.__name__}' is declared twice")
        try:
            kernel_dtypes = tuple(dt.as_dtype(d) for d in dtypes)
        except (TypeError, ValueError, NbflowError) as e:
            raise DTypeError(f"{body.__name__}: dtypes={dtypes!r}: {e}") from None
        names = list(inspect.signature(body).parameters)
        inputs = tuple(n for n in names if n not in attrs)
        params = tuple(names[len(inputs) :])
        assert set(params) <= set(attrs), f"{body.__name__}: attr parameters must come last"
        cpu = Elementwise(body.__name__, body, len(inputs), params, check)
        gpu = CudaElementwise(body.__name__, body, len(inputs), params, check)  # same body

        def spec(*specs, **kw):
            shape = broadcast_shapes(*(s.shape for s in specs))
            if out_dtype is None:
                key = op.key_dtype(specs)
                return Spec(shape, dt.to_real(key) if real_out else key)
            return Spec(shape, out_dtype(*specs, **kw) if callable(out_dtype) else out_dtype)

        op = cls(
            name=body.__name__,
            inputs=inputs,
            outputs=("out",),
            spec=spec,
            kernels={"cpu": cpu, "cuda": gpu},
            dtypes=kernel_dtypes,
            ref=ref,
            differentiable=differentiable,
            no_derivative=no_derivative,
            attrs=attrs,
            promote=promote,
            to_float=to_float,
            doc=inspect.getdoc(body) or "",
        )
        op.scalar_body = body  # the CUDA template and the fusion pass build on it
        return op

    return wrap


def inplace_variant(op: Op, name: str, ref=None, saves_target=False) -> Op:
    """`op` writing its result into its first input (`add_` from `add`).

    The result must keep the first input's shape and dtype (no broadcasting of the target,
    no promotion to a higher kind), as in PyTorch."""

    def spec(*specs, **kw):
        (out,) = (o for o in _as_tuple(op.spec(*specs, **kw)))
        target = specs[0]
        if tuple(out.shape) != tuple(target.shape) and -1 not in target.shape:
            raise ShapeError(f"the result's shape {out.shape} differs from the target's")
        if dt.kind(out.dtype) > dt.kind(target.dtype):
            raise DTypeError(f"the result dtype {out.dtype} can't be cast to {target.dtype}")
        return Spec(target.shape, target.dtype)

    return Op(
        name=name,
        inputs=op.inputs,
        outputs=op.outputs,
        spec=spec,
        kernels=op.kernels,
        dtypes=op.dtypes,
        ref=ref or op.ref,
        grad=op.grad,
        differentiable=op.differentiable,
        no_derivative=op.no_derivative,
        attrs=op.attrs,
        inplace={0: 0},
        saves_target=saves_target,
        promote=op.promote,
        to_float=op.to_float,
        doc=f"In-place {op.name}: writes the result into the first input.",
    )


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)
