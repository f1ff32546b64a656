"""Train the digits CNN briefly, export it to ONNX and run it with onnxruntime.

The model is examples/train_digits_cnn.py's, trained for a few graph-mode steps; nbflow.onnx
traces it for inference with a dynamic batch dim, onnx's checker checks the file, and
onnxruntime runs it on the whole test set (another batch size than the export's example),
giving nbflow's logits and predictions.

    pip install -e ".[examples,onnx]" && python examples/export_digits_onnx.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

import nbflow as nb
import nbflow.onnx
from nbflow.data import DataLoader, load_digits

try:
    from train_digits_cnn import make_model  # run as a script from examples/
except ImportError:  # loaded by path (tests/test_examples.py)
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "train_digits_cnn", os.path.join(os.path.dirname(__file__), "train_digits_cnn.py")
    )
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    make_model = _module.make_model


def train(steps: int, seed: int = 0):
    nb.manual_seed(seed)
    model = make_model(nb.Generator(seed))
    optimizer = nb.optim.Adam(model.parameters(), lr=0.01)

    @nb.jit
    def train_step(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    loader = DataLoader(load_digits("train", seed=seed, image=True), batch_size=64, seed=seed)
    done = 0
    with nb.no_grad():
        while done < steps:
            for x, y in loader:
                loss = train_step(x, y).item()
                done += 1
                if done == steps:
                    break
    return model, loss


def main(steps: int = 30, path: str | None = None, seed: int = 0) -> dict:
    start = time.perf_counter()
    model, loss = train(steps, seed)
    print(f"trained {steps} steps in {time.perf_counter() - start:.1f} s (last loss {loss:.3f})")

    x_test, y_test = load_digits("test", seed=seed, image=True).tensors
    path = path or os.path.join(tempfile.mkdtemp(), "digits_cnn.onnx")
    nb.onnx.export(
        model,
        x_test[:4],  # the example's batch of 4 is not baked in: the batch dim is dynamic
        path,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
    )
    onnx.checker.check_model(onnx.load(path), full_check=True)
    print(f"exported to {path} ({os.path.getsize(path)} bytes)")

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"image": x_test.numpy()})
    model.eval()
    with nb.no_grad():
        expected = model(x_test).numpy()
    difference = float(np.max(np.abs(logits - expected)))
    same = float(np.mean(logits.argmax(1) == expected.argmax(1)))
    accuracy = float(np.mean(logits.argmax(1) == y_test.numpy()))
    print(
        f"onnxruntime on {len(logits)} test digits: max |logits - nbflow's| = {difference:.2e}, "
        f"same prediction {same:.0%}, accuracy {accuracy:.3f}"
    )
    return {"max_difference": difference, "same_prediction": same, "accuracy": accuracy}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", default=None, help="where to write the .onnx file")
    args = parser.parse_args()
    main(steps=args.steps, path=args.out)
