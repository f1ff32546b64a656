"""The safetensors format (nbflow/safetensors_io.py): state_dicts to and from PyTorch through
safetensors.torch, the format picked by suffix or format=, atomic saves, typed errors for
files and values the format or nbflow cannot hold."""

import os
import struct

import numpy as np
import pytest

import nbflow as nb
from nbflow.errors import CheckpointError

st_torch = pytest.importorskip("safetensors.torch")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)

# every dtype an nbflow tensor holds, each with torch's
DTYPES = [
    (np.bool_, torch.bool),
    (np.uint8, torch.uint8),
    (np.int8, torch.int8),
    (np.int16, torch.int16),
    (np.int32, torch.int32),
    (np.int64, torch.int64),
    (np.float16, torch.float16),
    (np.float32, torch.float32),
    (np.float64, torch.float64),
    (np.complex64, torch.complex64),  # (the format has no complex128)
]


def _values(dtype, shape):
    if dtype is np.bool_:
        return RNG.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -(2**31)), min(info.max, 2**31 - 1), shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _state():
    sd = {}
    for i, (d, _) in enumerate(DTYPES):
        sd[f"layer{i}.weight"] = nb.tensor(_values(d, (3, 4 + i)))
    sd["scalar"] = nb.tensor(np.float32(2.5))  # 0-d
    sd["empty"] = nb.tensor(np.zeros((0, 5), np.float32))
    sd["transposed"] = nb.tensor(_values(np.float32, (4, 6))).T  # not C-contiguous
    sd["array"] = _values(np.float64, (2, 2, 2))  # a numpy array is taken too
    return sd


def test_nbflow_to_torch(tmp_path):
    sd = _state()
    path = tmp_path / "m.safetensors"
    nb.save_safetensors(sd, path)
    loaded = st_torch.load_file(str(path))
    assert set(loaded) == set(sd)
    torch_dtypes = dict(DTYPES)
    for name, value in sd.items():
        expected = value if isinstance(value, np.ndarray) else value.numpy()
        t = loaded[name]
        assert t.dtype == torch_dtypes[expected.dtype.type], name
        assert tuple(t.shape) == expected.shape, name
        np.testing.assert_array_equal(t.numpy(), expected, err_msg=name)


def test_torch_to_nbflow(tmp_path):
    sd = {
        f"p{i}": torch.from_numpy(_values(d, (2, 3, i + 1))).to(t)
        for i, (d, t) in enumerate(DTYPES)
    }
    sd["scalar"] = torch.tensor(-1.5, dtype=torch.float64)
    path = tmp_path / "torch.safetensors"
    st_torch.save_file(sd, str(path))
    loaded = nb.load(path)  # by the suffix
    assert sorted(loaded) == sorted(sd)
    for name, t in sd.items():
        got = loaded[name]
        assert isinstance(got, nb.Tensor) and not got.requires_grad
        assert got.shape == tuple(t.shape) and got.dtype == t.numpy().dtype, name
        np.testing.assert_array_equal(got.numpy(), t.numpy(), err_msg=name)


def test_model_moves_both_ways(tmp_path):
    """An nbflow MLP's state_dict runs in the same PyTorch MLP with the same outputs, and
    PyTorch's trained-from-elsewhere weights load into the nbflow model."""
    g = nb.Generator(0)
    model = nb.nn.Sequential(
        nb.nn.Linear(5, 8, generator=g), nb.nn.Tanh(), nb.nn.Linear(8, 3, generator=g)
    )
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x = RNG.standard_normal((4, 5)).astype(np.float32)

    path = tmp_path / "mlp.safetensors"
    nb.save(model.state_dict(), path)
    ref.load_state_dict(st_torch.load_file(str(path)))
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(nb.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)

    with torch.no_grad():
        for p in ref.parameters():
            p.mul_(-2.0)
    st_torch.save_file(ref.state_dict(), str(path))
    model.load_state_dict(nb.load(path))
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(nb.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_format_argument_and_metadata(tmp_path):
    sd = {"w": nb.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))}
    path = tmp_path / "weights.bin"  # no suffix: the argument picks the format
    nb.save(sd, path, format="safetensors")
    (n,) = struct.unpack("<Q", path.read_bytes()[:8])  # the format's header
    assert path.read_bytes()[8 : 8 + n].lstrip().startswith(b"{")
    np.testing.assert_array_equal(st_torch.load_file(str(path))["w"].numpy(), sd["w"].numpy())
    assert list(nb.load(path, format="safetensors")) == ["w"]
    with pytest.raises(CheckpointError):  # read as nbflow's own format it is no checkpoint
        nb.load_state(path)

    own = tmp_path / "own.safetensors"
    nb.save(sd, own, format="nbflow")  # nbflow's own format whatever the suffix
    assert nb.load(own, format="nbflow")["w"].shape == (2, 3)
    with pytest.raises(ValueError, match="format"):
        nb.save(sd, path, format="pickle")

    nb.save_safetensors(sd, path, metadata={"step": "100", "framework": "nbflow"})
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"step": "100", "framework": "nbflow"}
    st_torch.save_file({"w": torch.ones(2)}, str(path), metadata={"origin": "torch"})
    tensors, metadata = nb.load_safetensors(path, with_metadata=True)
    assert metadata == {"origin": "torch"} and tensors["w"].shape == (2,)


def test_bfloat16(tmp_path):
    """Hugging Face weights are often bfloat16, which numpy lacks: an error naming it by
    default, an exact widening to float32 on request."""
    w = torch.randn(3, 5).to(torch.bfloat16)
    path = tmp_path / "bf16.safetensors"
    st_torch.save_file({"w": w, "b": torch.ones(2)}, str(path))
    with pytest.raises(CheckpointError, match=r"'w'.*BF16.*bfloat16='float32'"):
        nb.load(path)
    loaded = nb.load_safetensors(path, bfloat16="float32")
    assert loaded["w"].dtype == np.float32
    np.testing.assert_array_equal(loaded["w"].numpy(), w.float().numpy())
    np.testing.assert_array_equal(loaded["b"].numpy(), np.ones(2, np.float32))


def test_bad_files_raise_checkpoint_error(tmp_path):
    good = tmp_path / "good.safetensors"
    nb.save_safetensors({"w": nb.tensor(np.ones((64, 64), np.float32))}, good)
    data = good.read_bytes()
    cases = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": b"\x00" * 4 + b"not a safetensors file at all",
        "huge header length": struct.pack("<Q", 1 << 60) + data[8:],
        "header not json": struct.pack("<Q", 8) + b"{{{{{{{{" + data[16:],
        "nbflow's own format": None,
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.safetensors"
        if content is None:
            nb.save_state({"w": nb.tensor(np.ones(3, np.float32))}, tmp_path / "own.ckpt")
            os.replace(tmp_path / "own.ckpt", path)
        else:
            path.write_bytes(content)
        with pytest.raises(CheckpointError):
            nb.load(path)
    with pytest.raises(CheckpointError, match="budget"):
        nb.load_safetensors(good, max_bytes=100)
    with pytest.raises(CheckpointError, match="not a regular file"):
        nb.load_safetensors(tmp_path)
    with pytest.raises(FileNotFoundError):
        nb.load(tmp_path / "missing.safetensors")
    path = tmp_path / "u16.safetensors"
    st_torch.save_file({"img": torch.zeros(2, 2, dtype=torch.uint16)}, str(path))
    with pytest.raises(CheckpointError, match=r"'img'.*U16"):
        nb.load(path)


def test_values_the_format_cannot_hold(tmp_path):
    """Refused before anything is written: the file there stays as it was."""
    path = tmp_path / "m.safetensors"
    nb.save_safetensors({"w": nb.tensor(np.ones(3, np.float32))}, path)
    before = path.read_bytes()
    bad = [
        {"w": nb.tensor(np.ones(2, np.float32)), "opt": {"step": 3}},  # nested state
        {"w": np.zeros(2, np.uint16)},  # a dtype nbflow lacks
        {"w": np.zeros(2, np.complex128)},  # a dtype the format lacks
        {1: nb.tensor(np.ones(2, np.float32))},  # a key not a string
        [nb.tensor(np.ones(2, np.float32))],  # not a mapping
    ]
    for state in bad:
        with pytest.raises(CheckpointError):
            nb.save(state, path)
    with pytest.raises(CheckpointError, match="metadata"):
        nb.save_safetensors({"w": np.ones(2)}, path, metadata={"step": 3})
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.safetensors"]
    with pytest.raises(TypeError):
        nb.save(nb.Program(), path)


def test_failed_write_loses_nothing(tmp_path, monkeypatch):
    """Atomic as nbflow's own save: a write that fails on the way (here the fsync) leaves the
    previous file whole and no temporary file behind."""
    path = tmp_path / "m.safetensors"
    old = {"w": nb.tensor(np.full(4, 1.0, np.float32))}
    nb.save(old, path)

    def failing_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        nb.save({"w": nb.tensor(np.full(4, 2.0, np.float32))}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["m.safetensors"]
    np.testing.assert_array_equal(st_torch.load_file(str(path))["w"].numpy(), np.ones(4))
