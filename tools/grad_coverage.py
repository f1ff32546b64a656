"""Gradient-check coverage: differentiable ops (the registry) against the ops whose gradient
tests/test_all_ops.py checks in float64 by finite differences (its SAMPLES table).

    python tools/grad_coverage.py
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from test_all_ops import SAMPLES  # noqa: E402

from nbflow.core import REGISTRY  # noqa: E402
from nbflow.ops import BUILTIN  # noqa: E402


def coverage() -> tuple[list[str], list[str], list[str]]:
    """(differentiable ops, those with a float64 gradient check, those without)."""
    differentiable = sorted(n for n in BUILTIN if REGISTRY[n].differentiable)
    checked = [n for n in differentiable if n in SAMPLES]
    return differentiable, checked, sorted(set(differentiable) - set(checked))


if __name__ == "__main__":
    differentiable, checked, missing = coverage()
    print(f"ops in the registry:        {len(BUILTIN)}")
    print(f"differentiable ops:         {len(differentiable)}")
    print(f"checked in float64:         {len(checked)} ({len(checked) / len(differentiable):.0%})")
    print(f"not checked:                {', '.join(missing) or 'none'}")
