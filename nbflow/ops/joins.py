"""PyTorch's joins of tensors composed from concat and stack (hstack, vstack, dstack,
column_stack, block_diag, cartesian_prod), atleast_1d/2d/3d, and broadcast_tensors, which makes
tensors fit for an elementwise join."""

from ..argcheck import tensor_args, tensor_list
from ..core import UNKNOWN, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import ShapeError
from .creation import zeros
from .elementwise import astype
from .shape import broadcast_to, concat, meshgrid, pad, reshape, stack, unsqueeze


def _at_least_1d(x):
    return reshape(x, (1,)) if x.ndim == 0 else x


def _at_least_2d(x):
    return unsqueeze(_at_least_1d(x), 0) if x.ndim < 2 else x


def _at_least_3d(x):
    if x.ndim == 2:
        return unsqueeze(x, -1)
    return unsqueeze(_at_least_2d(x), -1) if x.ndim < 2 else x


def _at_least(name, tensors, fix):
    # one tensor gives a tensor; several (or one list of them) give a tuple, as PyTorch
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return fix(tensor_args(name, tensors)[0])
    return tuple(fix(x) for x in tensor_args(name, tensors))


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d one as shape (1,))."""
    return _at_least("atleast_1d", tensors, _at_least_1d)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (a 1-d one of n as (1, n))."""
    return _at_least("atleast_2d", tensors, _at_least_2d)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims ((n,) as (1, n, 1), (m, n) as (m, n, 1))."""
    return _at_least("atleast_3d", tensors, _at_least_3d)


def hstack(tensors):
    """The tensors joined column-wise: along dim 1, or dim 0 when they are 1-D (numpy's)."""
    xs = [_at_least_1d(x) for x in tensor_list("hstack", tensors)]
    return concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined row-wise: along dim 0 after atleast_2d."""
    return concat([_at_least_2d(x) for x in tensor_list("vstack", tensors)], axis=0)


row_stack = vstack


def dstack(tensors):
    """The tensors joined depth-wise: along dim 2 after atleast_3d."""
    return concat([_at_least_3d(x) for x in tensor_list("dstack", tensors)], axis=2)


def column_stack(tensors):
    """The tensors as columns: 0-d and 1-d ones become (n, 1), then joined along dim 1."""
    xs = tensor_list("column_stack", tensors)
    return concat([unsqueeze(_at_least_1d(x), 1) if x.ndim < 2 else x for x in xs], axis=1)


def block_diag(*tensors):
    """A block-diagonal matrix of the tensors (0-d as 1x1, 1-D of n as 1xn), zeros elsewhere;
    dtypes promote together."""
    xs = [_at_least_2d(x) for x in tensor_args("block_diag", tensors)]
    if not xs:
        return zeros(1, 0)  # PyTorch's answer for no blocks
    for x in xs:
        if x.ndim > 2 or UNKNOWN in x.shape:
            raise ShapeError(f"block_diag: each block must be at most 2-D and known, got {x.shape}")
    dtype = dt.promote([x.dtype for x in xs])
    width = sum(x.shape[1] for x in xs)
    rows, left = [], 0
    for x in xs:  # each block padded out to the full width, the rows then stacked
        right = width - left - x.shape[1]
        rows.append(pad(astype(x, dtype), ((0, 0), (left, right))))
        left += x.shape[1]
    return concat(rows, axis=0)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, one row per combination (itertools.product's
    order); one tensor is returned as it is."""
    xs = tensor_args("cartesian_prod", tensors)
    if not xs:
        raise ShapeError("cartesian_prod needs at least one tensor")
    if any(x.ndim != 1 for x in xs):
        raise ShapeError(f"cartesian_prod needs 1-D tensors, got {[tuple(x.shape) for x in xs]}")
    if len(xs) == 1:
        return xs[0]
    return stack([reshape(g, (-1,)) for g in meshgrid(*xs, indexing="ij")], axis=1)


def _broadcast_shape(name, shapes):
    """core.broadcast_shapes (an unknown (-1) dim taken as matching), its error naming `name`."""
    try:
        return broadcast_shapes(*shapes)
    except ShapeError as e:
        raise ShapeError(f"{name}: {e}") from None


def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape (a tuple of views)."""
    xs = tensor_args("broadcast_tensors", tensors)
    shape = _broadcast_shape("broadcast_tensors", [tuple(x.shape) for x in xs])
    out = []
    for x in xs:
        if tuple(x.shape) == shape:
            out.append(x)
            continue
        lead = len(shape) - x.ndim
        # an unknown target dim can only be kept from x (broadcast_to's -1), never grown
        if any(
            n == UNKNOWN and (d < lead or x.shape[d - lead] != UNKNOWN) for d, n in enumerate(shape)
        ):
            raise ShapeError(
                f"broadcast_tensors: can't broadcast shape {x.shape} to {shape}, whose -1 dims "
                "are known only at run time"
            )
        out.append(broadcast_to(x, shape))
    return tuple(out)


__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hstack",
    "vstack",
    "row_stack",
    "dstack",
    "column_stack",
    "block_diag",
    "cartesian_prod",
    "broadcast_tensors",
]
