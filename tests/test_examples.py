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


def test_eager_cnn_learns_the_digits():
    accuracy = _load("train_digits_cnn_eager").train(epochs=4, progress=False)
    assert accuracy >= 0.9


def test_char_lstm_loss_goes_down_and_it_samples():
    char_lstm = _load("char_lstm")
    model, vocab, losses = char_lstm.train(steps=40, batch=16, seq_len=16, hidden=64, log_every=0)
    assert len(losses) == 40
    assert sum(losses[-5:]) / 5 < 0.8 * losses[0]  # about 3.1 -> 1.2
    text = char_lstm.sample(model, vocab, "the ", length=30, seed=1)
    assert text.startswith("the ") and len(text) == 34
    assert set(text) <= set(vocab.chars)


def test_sequence_classifier_in_graph_mode_learns_on_variable_lengths():
    # ignoring the lengths (counting the padding too) agrees with the labels 79% of the time
    accuracy = _load("train_sequence_graph").train(steps=80, log_every=0)
    assert accuracy >= 0.9


def test_transformer_written_as_pytorch_code_learns_the_digits():
    assert _load("transformer_digits").train(epochs=8, log=False) >= 0.93


def test_digits_cnn_exported_to_onnx_runs_the_same_under_onnxruntime(tmp_path):
    import pytest

    pytest.importorskip("onnxruntime")
    result = _load("export_digits_onnx").main(steps=20, path=str(tmp_path / "digits.onnx"))
    assert result["max_difference"] < 1e-4 and result["same_prediction"] == 1.0
    assert result["accuracy"] >= 0.7
