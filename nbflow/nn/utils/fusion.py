"""PyTorch's torch.nn.utils.fusion: fold an eval-mode BatchNorm into the convolution or linear
layer before it (inference: one layer instead of two, the same outputs)."""

from __future__ import annotations

import copy

from ... import ops
from ..modules.module import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _check_eval(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def _parameter(value, like):
    """A new parameter holding value, requiring grad as `like` does (PyTorch's
    Parameter(value, like.requires_grad))."""
    return Parameter(value.detach()).requires_grad_(like.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` whose weight and bias include `bn` (both in eval mode): conv then bn
    in one convolution. transpose: conv is a transposed convolution (its output channels are
    the weight's dim 1)."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        transpose,
    )
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) of the convolution equal to conv(conv_w, conv_b) then the batch norm
    (bn_rm, bn_rv, bn_eps, bn_w, bn_b; None weight / bias: 1 / 0): w * gamma / sqrt(var + eps)
    per output channel, (b - mean) * gamma / sqrt(var + eps) + beta; in the conv's dtypes."""
    conv_b_dtype = conv_b.dtype if conv_b is not None else conv_w.dtype
    if conv_b is None:
        conv_b = ops.zeros_like(bn_rm)
    bn_w = ops.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = ops.zeros_like(bn_rm) if bn_b is None else bn_b
    bn_var_rsqrt = ops.rsqrt(bn_rv + bn_eps)
    rest = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    fused_w = ops.cast(conv_w * ops.reshape(bn_w * bn_var_rsqrt, shape), dtype=conv_w.dtype)
    fused_b = ops.cast((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b, dtype=conv_b_dtype)
    return _parameter(fused_w, conv_w), _parameter(fused_b, conv_b)


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` whose weight and bias include `bn` (both in eval mode; bn's
    features equal to linear's out_features, or 1)."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
    )
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) of the linear layer equal to linear(linear_w, linear_b) then the batch
    norm: each output row scaled by gamma / sqrt(var + eps)."""
    linear_b_dtype = linear_b.dtype if linear_b is not None else linear_w.dtype
    if linear_b is None:
        linear_b = ops.zeros_like(bn_rm)
    bn_scale = bn_w * ops.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * ops.cast(ops.unsqueeze(bn_scale, -1), dtype=linear_w.dtype)
    fused_b = ops.cast((linear_b - bn_rm) * bn_scale + bn_b, dtype=linear_b_dtype)
    return _parameter(fused_w, linear_w), _parameter(fused_b, linear_b)
