"""ONNX export (`pip install nbflow[onnx]`): `nbflow.onnx.export(model_or_program,
example_inputs, path, opset_version=17, dynamic_axes=...)`, as torch.onnx.export.

    import nbflow as nb
    nb.onnx.export(model, x, "model.onnx", input_names=["x"], output_names=["logits"],
                   dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})

The driver is export.py, the op table ops.py (one converter per nbflow op), sizes that follow
the dynamic dims shapes.py.
"""

try:
    import onnx  # noqa: F401
except ImportError as e:  # pragma: no cover (the extra is in the test extra)
    raise ImportError(
        "nbflow.onnx needs the onnx package: pip install 'nbflow[onnx]' (onnx and onnxruntime)"
    ) from e

from .export import UnmappedOpError, export, supported_ops

__all__ = ["UnmappedOpError", "export", "supported_ops"]
