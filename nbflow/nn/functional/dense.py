"""The dense maps: linear and bilinear."""

from ... import ops
from ...core.errors import ShapeError


def linear(input, weight, bias=None):
    return ops.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """input1^T weight[o] input2 for each output o (+ bias[o]); weight (out, in1, in2), the
    inputs (..., in1) and (..., in2)."""
    if min(input1.ndim, input2.ndim) < 1:
        raise ShapeError(
            f"bilinear: inputs need at least 1 dim, got shapes {tuple(input1.shape)} and "
            f"{tuple(input2.shape)}"
        )
    if (
        weight.ndim != 3
        or input1.shape[-1] != weight.shape[1]
        or input2.shape[-1] != weight.shape[2]
    ):
        raise ShapeError(
            f"bilinear: weight {tuple(weight.shape)} does not fit inputs {tuple(input1.shape)} "
            f"and {tuple(input2.shape)}: expected (out, {input1.shape[-1]}, {input2.shape[-1]})"
        )
    outs, n1, n2 = weight.shape
    # one matmul: input1 against every weight[o] side by side, then the dot with input2
    flat = ops.reshape(ops.permute(weight, 1, 0, 2), (n1, outs * n2))
    partial = ops.reshape(ops.matmul(input1, flat), (*input1.shape[:-1], outs, n2))
    out = ops.sum(partial * ops.unsqueeze(input2, -2), axis=-1)
    return out if bias is None else out + bias


__all__ = ["bilinear", "linear"]
