"""nbflow.onnx.export: the benchmark models (CNN with batch norm and residual blocks, Transformer
encoder, LSTM, MLP) and the digits CNN, small, exported and run under onnxruntime: the file
passes onnx's full check and gives nbflow's outputs to float32 tolerance, at the example's
batch size and at another one where the batch dim is dynamic (docs/interop.md, "ONNX
export")."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import nbflow as nb  # noqa: E402
import nbflow.onnx  # noqa: E402
from nbflow import nn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import models  # noqa: E402
from train_digits_cnn import make_model  # noqa: E402

SIZES = {
    "cnn": {"width": 4},
    "transformer": {"vocab": 30, "d_model": 16, "heads": 2, "ff": 32},
    "lstm": {"n_in": 6, "hidden": 8},
    "mlp": {"sizes": (12, 16, 10)},
}


def example(name: str, batch: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "cnn":
        return rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
    if name == "transformer":
        return rng.integers(0, 30, (batch, 5)).astype(np.int64)
    if name == "lstm":
        return rng.standard_normal((batch, 4, 6)).astype(np.float32)
    return rng.standard_normal((batch, 12)).astype(np.float32)


def session(proto):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def reference(model, x):
    model.eval()
    with nb.no_grad():
        out = model(nb.tensor(x))
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def assert_agree(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def with_batch_statistics(model, seed=2):
    """Running statistics away from 0 and 1, so that eval-mode batch norm does something."""
    rng = np.random.default_rng(seed)
    state = model.state_dict()
    for key, value in state.items():
        if key.endswith("running_mean"):
            state[key] = nb.tensor(rng.standard_normal(value.shape).astype(np.float32))
        elif key.endswith("running_var"):
            state[key] = nb.tensor(rng.uniform(0.5, 2.0, value.shape).astype(np.float32))
    model.load_state_dict(state)
    return model


@pytest.mark.parametrize("name", models.MODELS)
def test_benchmark_models_agree_with_dynamic_batch(name, tmp_path):
    model = models.build(nb, name, **SIZES[name])
    if name == "cnn":
        with_batch_statistics(model)
    model.train()  # exported for inference whatever its mode, which is restored
    path = tmp_path / f"{name}.onnx"
    x = example(name, 2)
    nb.onnx.export(
        model,
        x,
        path,
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
    )
    assert model.training
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == 17
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"
    run = session(proto)
    for batch in (2, 5):
        x = example(name, batch, seed=batch)
        assert_agree(run.run(None, {"x": x}), reference(model, x))


def test_parameters_are_initializers():
    model = models.build(nb, "mlp", **SIZES["mlp"])
    proto = nb.onnx.export(model, example("mlp", 2))
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    for key, value in model.state_dict().items():  # named as the state_dict names them
        np.testing.assert_array_equal(initializers[key], value.numpy())
    assert [i.name for i in proto.graph.input] == ["input_0"]  # parameters are not inputs


def test_digits_cnn_and_opsets():
    model = make_model(nb.Generator(0))
    x = np.random.default_rng(0).random((3, 1, 8, 8), np.float32)
    for opset in (17, 18, 20):
        proto = nb.onnx.export(model, x, opset_version=opset, dynamic_axes={"input_0": [0]})
        assert proto.opset_import[0].version == opset
        run = session(proto)
        for batch in (3, 1, 8):
            xb = np.resize(x, (batch, 1, 8, 8))
            assert_agree(run.run(None, {"input_0": xb}), reference(model, xb))


def test_lstm_states_and_dynamic_time():
    """A 2-layer bidirectional LSTM returning (out, h_n, c_n), batch and time both dynamic:
    sizes such as batch x time follow both."""

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            return out, h, c

    model = Encoder()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    proto = nb.onnx.export(model, x, dynamic_axes={"input_0": {0: "batch", 1: "time"}})
    run = session(proto)
    for shape in ((2, 4, 3), (3, 7, 3), (1, 1, 3)):
        x = rng.standard_normal(shape).astype(np.float32)
        assert_agree(run.run(None, {"input_0": x}), reference(model, x))


def test_elementwise_views_and_reductions():
    import nbflow.nn.functional as F

    def f(x):
        y = F.gelu(x) + F.gelu(x, approximate="tanh") + F.leaky_relu(x, 0.1) + F.softplus(x)
        y = y + x.clamp(-0.5, 0.5) + nb.where(x > 0, x, -x) + nb.sqrt(x.abs())
        y = y + F.log_softmax(x, dim=-1) + x.sigmoid() * x.exp()
        z = y[:, None, ..., ::-1].squeeze(1) + y.sum(1, keepdim=True) + y.mean()
        z = z - y.max(axis=1, keepdims=True)
        both = nb.cat([z, z * 2], dim=0)
        return both.reshape(-1, 6).argmax(1), z.flatten(), nb.stack([z, z], axis=1).permute(2, 0, 1)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    proto = nb.onnx.export(f, x, dynamic_axes={"input_0": [0]})
    run = session(proto)
    for batch in (4, 7):
        xb = rng.standard_normal((batch, 6)).astype(np.float32)
        want = [t.numpy() for t in f(nb.tensor(xb))]
        assert_agree(run.run(None, {"input_0": xb}), want)


def test_static_program_with_unknown_batch():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        w = nb.static.create_parameter("w", [4, 3])
        probs = nb.softmax(nb.tanh(x @ w), axis=-1)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    proto = nb.onnx.export(main, scope=scope, output_names=[probs.name])
    assert [i.name for i in proto.graph.input] == ["x"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param  # dynamic
    run = session(proto)
    for batch in (1, 6):
        xs = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        (want,) = exe.run(main, feed={"x": xs}, fetch_list=[probs], scope=scope)
        assert_agree(run.run(None, {"x": xs}), [want])


def test_traced_program_from_jit():
    model = models.build(nb, "mlp", **SIZES["mlp"])
    predict = nb.jit(lambda x: model(x))
    x = example("mlp", 3)
    program = predict.program(nb.tensor(x))
    proto = nb.onnx.export(program, output_names=None)
    assert_agree(session(proto).run(None, {proto.graph.input[0].name: x}), reference(model, x))
    with pytest.raises(nb.ProgramError, match="fixes dim 0"):
        nb.onnx.export(program, dynamic_axes={proto.graph.input[0].name: [0]})
    # the jitted function itself is traced again at other sizes, so its batch may be dynamic
    proto = nb.onnx.export(predict, x, dynamic_axes={"input_0": [0]})
    xb = example("mlp", 6)
    assert_agree(session(proto).run(None, {"input_0": xb}), reference(model, xb))


def test_unmapped_op_raises_a_typed_error_naming_it():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(nb.onnx.UnmappedOpError, match="'lgamma'") as info:
        nb.onnx.export(lambda x: nb.lgamma(x) * 2.0, x)
    assert info.value.op == "lgamma"
    assert isinstance(info.value, nb.UnsupportedError)
    assert "test_onnx.py" in str(info.value)  # the user's line that made the op


def test_batch_dependent_python_branch_is_refused():
    def f(x):
        return x * 2.0 if x.shape[0] < 3 else x.sum(0)

    with pytest.raises(nb.UnsupportedError, match="branches on a size"):
        nb.onnx.export(f, np.ones((2, 3), np.float32), dynamic_axes={"input_0": [0]})


def test_importing_nbflow_does_not_import_onnx():
    import subprocess

    code = "import sys, nbflow; assert 'onnx' not in sys.modules; nbflow.onnx.export"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_windows_tiles_gathers_and_casts():
    import nbflow.nn.functional as F

    rng = np.random.default_rng(0)
    w = nb.tensor(rng.standard_normal((2, 3, 2, 2, 2)).astype(np.float32))

    def f(x):
        a = F.conv3d(x, w, padding=1, stride=(1, 2, 1))
        b = F.avg_pool2d(x[:, 0], 2, count_include_pad=False, padding=1)
        c = nb.tile(x[:, 0, 0], (1, 2, 1)).sum() + nb.broadcast_to(x[:1, 0, 0], (3, 4, 4))
        d = nb.index_select(x, 1, nb.tensor([2, 0])).min(axis=1) * x.prod(axis=1).round()
        e = (x.argmin(1) != 1).float() + F.hardtanh(x).sum(1)
        g = nb.split(x, [1, 2], axis=1)[1].unsqueeze(0) + x[:, 1:].astype("float64").sum(0)
        return a, b, c, d, e, g

    proto = nb.onnx.export(
        f, rng.standard_normal((2, 3, 3, 4, 4)).astype(np.float32), dynamic_axes={"input_0": [0]}
    )
    run = session(proto)
    for batch in (2, 4):
        x = rng.standard_normal((batch, 3, 3, 4, 4)).astype(np.float32)
        assert_agree(run.run(None, {"input_0": x}), [t.numpy() for t in f(nb.tensor(x))])
