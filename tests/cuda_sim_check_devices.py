"""nbflow.testing.check_devices under the CUDA simulator (run by tests/test_cuda_sim.py in a
subprocess with NUMBA_ENABLE_CUDASIM=1): it compares, and it catches a disagreement; user ops
(an elementwise op from a scalar body, a structured op with its own @cuda.jit kernel) run on
both devices, eagerly, with gradients and under @jit."""

import math

import hypothesis.strategies as st
import numpy as np
from numba import cuda, njit

import nbflow as nb
import nbflow.testing as nt
from nbflow.core import Spec


def _softsign_ref(x):
    return (x / (1.0 + np.abs(x.astype(np.float64)))).astype(x.dtype)


@nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=_softsign_ref)
def user_softsign(x):
    return x / (1.0 + math.fabs(x))


@user_softsign.defgrad
def _user_softsign_grad(g, out, x):
    d = 1.0 + nb.abs(x)
    return (g / (d * d),)


@njit(cache=True)
def _cube_rows_cpu(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j] ** 3
        out[i] = acc


@cuda.jit
def _cube_rows_gpu(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j] ** 3
        out[i] = acc


def _cube_rows_cuda(x, out):
    _cube_rows_gpu[(x.shape[0] + 31) // 32, 32](x, out)


def _cube_rows_spec(x: Spec) -> Spec:
    if x.ndim != 2:
        raise nb.ShapeError(f"expects a matrix, got {x.ndim} dims")
    return Spec((x.shape[0],), x.dtype)


user_cube_rows = nb.Op(
    name="user_cube_rows",
    inputs=("x",),
    outputs=("out",),
    spec=_cube_rows_spec,
    kernels={"cpu": _cube_rows_cpu, "cuda": _cube_rows_cuda},
    dtypes=(nb.float32, nb.float64),
    ref=lambda x: (x.astype(np.float64) ** 3).sum(axis=1).astype(x.dtype),
)
user_cube_rows.defgrad(lambda g, out, x: (nb.unsqueeze(g, axis=-1) * 3 * x * x,))


def user_ops(rng):
    x = rng.standard_normal((5, 4))
    for fn in (user_softsign, user_cube_rows, lambda x: user_cube_rows(user_softsign(x))):
        result = nt.check_devices(fn, x)  # float64: outputs and gradients
        assert result == {"status": "compared", "outputs": 1, "gradients": 1}, result
    gx = nb.tensor(x, device="cuda")
    out = user_cube_rows(user_softsign(gx))
    assert out.device != "cpu"
    nt.assert_close(out.numpy(), _cube_rows_ref(_softsign_ref(x)))
    step = nb.jit(lambda x: user_cube_rows(user_softsign(x)) * 2.0)
    nt.assert_close(step(gx).numpy(), 2.0 * _cube_rows_ref(_softsign_ref(x)))
    nt.op_property_test(user_softsign, max_examples=2)("devices")
    matrices = st.tuples(st.tuples(st.integers(0, 4), st.integers(0, 4)))
    nt.op_property_test(user_cube_rows, shapes=matrices, max_examples=2)("devices")


def composed_ops(rng):
    """Functions composed from ops that make a tensor of their own (a mask, an identity, a
    zero state) must make it on the input's device."""
    from nbflow import nn

    x = rng.standard_normal((4, 4))

    def layer(kind):
        def run(t):
            module = getattr(nn, kind)(4, 2, dtype="float64", generator=nb.Generator(0))
            return module.to(t.device)(nb.unsqueeze(t, 1))[0]

        return run

    def attention(t):
        module = nn.MultiheadAttention(4, 2, dtype="float64", generator=nb.Generator(0))
        t = nb.unsqueeze(t, 1)
        return module.to(t.device)(t, t, t, is_causal=True)[0]

    def decoder_layer(t):  # causal self-attention, a padding mask made from t on its device
        module = nn.TransformerDecoderLayer(
            4, 2, 8, dropout=0.0, activation="gelu", dtype="float64", generator=nb.Generator(0)
        )
        t = nb.unsqueeze(t, 1)
        padding = nb.reshape(t[:, 0, 0] > 10.0, 1, 4)
        return module.to(t.device)(t, t * 0.5, tgt_is_causal=True, memory_key_padding_mask=padding)

    def instance_norm(t):  # running statistics updated through a (2, C) stand-in input
        mean, var = nb.zeros(2, dtype=t.dtype, device=t.device), t.new_ones(2)
        return nb.nn.functional.instance_norm(nb.reshape(t, 2, 2, 4), mean, var) * var[0]

    for fn in (
        lambda t: nb.tril(t, -1) + nb.triu(t, 2),
        lambda t: nb.diag(nb.diag(t), 1),
        lambda t: nb.einsum("ii->i", t),
        lambda t: nb.nn.functional.scaled_dot_product_attention(t, t, t, is_causal=True),
        lambda t: nb.topk(t, 2).values + nb.median(t, dim=1).values[:, None],
        lambda t: t * t.new_full((4,), 2.0) + t.new_ones(4, 4),
        lambda t: nb.group_norm(nb.reshape(t, 2, 4, 2), 2),
        lambda t: nb.nn.functional.interpolate(
            nb.reshape(t, 1, 1, 4, 4), scale_factor=1.5, mode="bilinear"
        ),  # fmt: skip
        layer("LSTM"),
        layer("GRU"),
        attention,
        decoder_layer,
        *spatial_ops(),
        lambda t: nb.nn.functional.gaussian_nll_loss(t, t * 0.5, 0.7, reduction="none"),
        instance_norm,
        lambda t: nb.nn.functional.dropout1d(nb.reshape(t, 2, 2, 4), 1.0),
        *tensor_ops(),
    ):
        result = nt.check_devices(fn, x)
        assert result == {"status": "compared", "outputs": 1, "gradients": 1}, result


def tensor_ops():
    """The composites of nbflow/ops/select.py, scans.py and products.py make index ranges,
    identities and fills of their own (and repeat_interleave an index from its counts)."""

    def on(t, values):
        return nb.tensor(values).to(t.device)

    return (
        lambda t: nb.diag_embed(nb.diagonal(t, 1), 1) + nb.matrix_power(t, 0),
        lambda t: (
            nb.scatter_reduce(t, 0, on(t, [[0, 1, 1, 3]]), t[:1] * 2, "amax")
            + nb.scatter(t, 1, on(t, [[2], [0], [1], [3]]), t[:, :1])
        ),
        lambda t: nb.cummax(t, 1).values + nb.cumprod(t, 0) + nb.logcumsumexp(t, 1),
        lambda t: nb.quantile(t, 0.3, dim=1, keepdim=True) + nb.diff(t, 1, 0, prepend=0.5),
        lambda t: nb.repeat_interleave(t, on(t, [1, 0, 2, 1]), dim=0),
    )


def spatial_ops():
    """The spatial composites (nbflow/nn/functional/) make index constants, zeros and a
    broadcast stand-in of their own: on x's (4, 4) as tiny images."""
    F = nb.nn.functional

    def image(t):
        return nb.reshape(t, 1, 2, 2, 4)

    return (
        lambda t: F.conv_transpose2d(image(t), nb.reshape(t[:2], 2, 1, 2, 2), stride=2),
        lambda t: F.fold(F.unfold(image(t), 2, padding=1), (2, 4), 2, padding=1),
        lambda t: F.adaptive_max_pool2d(image(t), (1, 3)),
        lambda t: F.pad(image(t), (1, 2, 1, 0), mode="reflect"),
    )


def _cube_rows_ref(x):
    return (x**3).sum(axis=1)


def mlp(x, w):
    return nb.sum(nb.tanh(nb.matmul(x, w)) * 0.5, axis=1)


def main():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    result = nt.check_devices(mlp, x.astype(np.float32), w.astype(np.float32))
    assert result == {"status": "compared", "outputs": 1, "gradients": 2}, result

    def differs(x):  # the GPU run sees another constant: check_devices must say so
        return x * (2.0 if x.device == "cpu" else 3.0)

    try:
        nt.check_devices(differs, x)
    except AssertionError as e:
        assert "CPU and CUDA disagree" in str(e), e
    else:
        raise AssertionError("check_devices missed a disagreement")
    nt.op_property_test(nb.ops.exp, max_examples=2)("devices")
    user_ops(rng)
    composed_ops(rng)
    print("compared", result)


if __name__ == "__main__":
    main()
