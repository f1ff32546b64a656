"""Every op is complete (reference, dtypes, gradient or explicit none, doc) and public."""

import importlib
import pathlib
import re

import pytest

import nbflow as nb
from nbflow import dtypes as dt
from nbflow.core import REGISTRY
from nbflow.ops import BUILTIN

ISSUE_OPS = """
add sub mul div floor_div mod pow neg abs sign exp log log1p expm1 sqrt rsqrt sin cos tanh
sigmoid relu leaky_relu gelu softplus maximum minimum clip where eq ne lt le gt ge logical_and
logical_or logical_not logical_xor isnan isinf isfinite cast
sum mean prod max min argmax argmin var std logsumexp all any
matmul
reshape transpose permute broadcast_to squeeze unsqueeze flatten concat stack split
take_along_axis index_select scatter_add pad flip tile repeat
softmax log_softmax cross_entropy mse_loss
full arange linspace eye full_like uniform normal randint
add_ sub_ mul_ fill_ copy_ clip_
""".split()


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_op_is_complete(name):
    op = REGISTRY[name]
    assert op.ref is not None, f"{name} has no numpy reference"
    assert op.dtypes and all(d in dt.ALL + dt.COMPLEX for d in op.dtypes)
    assert op.grad is not None or not op.differentiable, f"{name}: gradient or explicit none"
    assert op.doc, f"{name} has no docstring"
    assert "cpu" in op.kernels and op.kernels["cpu"] is not None
    assert "cuda" in op.kernels  # the slot the GPU work fills


@pytest.mark.parametrize("name", ISSUE_OPS)
def test_issue_ops_are_declared(name):
    assert name in REGISTRY


def test_public_names():
    for name in (
        "zeros",
        "ones",
        "full",
        "arange",
        "linspace",
        "eye",
        "zeros_like",
        "ones_like",
        "full_like",
        "uniform",
        "normal",
        "randint",
        "Generator",
        "tensor",
        "from_numpy",
        "grad",
        "no_grad",
        "Tensor",
    ):
        assert hasattr(nb, name), name
    for name in importlib.import_module("nbflow.eager.operators").METHODS:
        assert hasattr(nb.Tensor, name), f"Tensor.{name} is missing"


def test_imports_flow_one_way():
    root = pathlib.Path(nb.__file__).parent
    imports = re.compile(r"^\s*from \.+([\w.]+)|^\s*import nbflow\.([\w.]+)", re.M)

    def deps(path):
        return {a or b for a, b in imports.findall(path.read_text())}

    assert deps(root / "core" / "op.py") <= {"dtypes", "errors"}
    for f in list((root / "ops").glob("*.py")) + list((root / "kernels").glob("*.py")):
        assert not {d.split(".")[0] for d in deps(f)} & {"autograd", "graph"}, f.name
        assert "eager.tensor" not in deps(f), f.name
