"""PyTorch's torch.nn.utils.parametrizations: weight_norm and spectral_norm as
parametrizations (module.parametrizations.weight.original0 / original1 for weight_norm: the
magnitude g and the direction v; module.parametrizations.weight.original and the power
iteration vectors as buffers parametrizations.weight.0._u / _v for spectral_norm)."""

from __future__ import annotations

from ... import ops
from ...core import no_grad
from ...core.errors import DomainError
from ..modules.module import Module
from .parametrize import register_parametrization


def _norm_except_dim(v, dim):
    """The 2-norm of v over every axis but `dim`, kept broadcastable (dim None: of all of v,
    0-d), as torch.norm_except_dim."""
    if dim is None:
        return ops.sqrt(ops.sum(v * v))
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return ops.sqrt(ops.sum(v * v, axis=axes, keepdims=True)) if axes else ops.abs(v)


class _WeightNorm(Module):
    """w = g * v / ||v||: decouples a weight's length from its direction (Salimans & Kingma)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize module.<name> as g * v / ||v|| (norm over all axes but `dim`; None or
    -1: over all of it), with original0 = g and original1 = v."""
    weight = getattr(module, name)
    if dim is not None and dim < -1:
        dim += weight.ndim
    return register_parametrization(module, name, _WeightNorm(None if dim == -1 else dim))


class _SpectralNorm(Module):
    """w / sigma(w), sigma estimated by power iteration on w reshaped to a matrix with `dim`
    first; u and v persist as buffers so each training step refines the estimate (eval mode
    reuses them unchanged, as PyTorch)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        if n_power_iterations <= 0:
            raise DomainError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + weight.ndim
        self.eps, self.n_power_iterations = eps, int(n_power_iterations)
        if weight.ndim > 1:
            mat = self._matrix(weight.detach())
            rows, cols = mat.shape
            # on the weight's device (a module moved to the GPU before it is parametrized)
            u = ops.randn(rows, dtype=weight.dtype, device=weight.device)
            v = ops.randn(cols, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", self._normalize(u))
            self.register_buffer("_v", self._normalize(v))
            self._power_method(mat, 15)

    def _normalize(self, x):
        return x / ops.maximum(ops.sqrt(ops.sum(x * x)), self.eps)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = ops.permute(
                weight, self.dim, *(d for d in range(weight.ndim) if d != self.dim)
            )
        return ops.reshape(weight, (weight.shape[0], -1))

    def _power_method(self, mat, iterations):
        with no_grad():
            mat = mat.detach()
            for _ in range(iterations):
                self._u.copy_(self._normalize(ops.mv(mat, self._v)))
                self._v.copy_(self._normalize(ops.mv(ops.matrix_transpose(mat), self._u)))

    def forward(self, weight):
        if weight.ndim == 1:
            return self._normalize(weight)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.detach(), self._v.detach()
        sigma = ops.sum(u * ops.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize module.<name> as w / sigma(w), the largest singular value estimated by
    n_power_iterations steps of power iteration per training forward (dim: 1 for the
    transposed convolutions, else 0)."""
    weight = getattr(module, name)
    if dim is None:
        dim = 1 if "ConvTranspose" in type(module).__name__ else 0
    return register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )


__all__ = ["spectral_norm", "weight_norm"]
