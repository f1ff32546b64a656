"""CosineSimilarity and PairwiseDistance."""

from __future__ import annotations

from ...argcheck import real
from .. import functional as F
from .module import Module
from .utils import flag, reals


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, [self.eps] = dim, reals(self, eps=eps)

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = real(p, "PairwiseDistance: p")
        self.eps, self.keepdim = real(eps, "PairwiseDistance: eps"), flag(self, "keepdim", keepdim)

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"


__all__ = ["CosineSimilarity", "PairwiseDistance"]
