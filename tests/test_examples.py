"""The examples run and learn (shorter runs than their defaults)."""

import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_main_job_cnn_in_graph_mode_learns_the_digits():
    accuracy = _load("train_digits_cnn").train(epochs=6, progress=False)
    assert accuracy >= 0.95


def test_eager_mlp_learns_the_digits():
    assert _load("train_digits").main(epochs=10) >= 0.9
