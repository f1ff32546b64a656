"""Registry-driven checks over every op (PyTorch's OpInfo idea): each differentiable op has a
sample here and passes a float64 finite-difference gradient check, and no op, fed any dtype,
fails with anything but a typed nbflow error (never a numba typing error)."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY
from nbflow.ops import BUILTIN

RNG = np.random.default_rng(0)


def x(*shape, low=0.5, high=2.0):
    """A float64 leaf requiring grad, with values away from kinks and poles."""
    return nb.tensor(RNG.uniform(low, high, shape), dtype="float64", requires_grad=True)


def idx(*values):
    return nb.tensor(np.array(values, np.int64))


def inplace(op):
    """An in-place op differentiated through a fresh intermediate (leaves can't be written)."""
    return lambda a, *rest, **kw: op(a * 1, *rest, **kw)


def _z(a, b):
    """A complex tensor of two real leaves, for the complex ops' gradient checks."""
    return nb.complex(a, b) * nb.complex(b, a)  # (a product: no part is a leaf's copy)


_C = nb.ops.complex_parts

# op name -> (function of the inputs, inputs, attrs)
SAMPLES = {
    "complex": (lambda a, b: nb.view_as_real(_z(a, b)), lambda: [x(2, 3), x(3)], {}),
    "real_part": (lambda a, b: _C.real_part(_z(a, b)), lambda: [x(2, 3), x(2, 3)], {}),
    "imag_part": (lambda a, b: _C.imag_part(_z(a, b)), lambda: [x(2, 3), x(2, 3)], {}),
    "complex_angle": (lambda a, b: _C.complex_angle(_z(a, b)), lambda: [x(2, 3), x(2, 3)], {}),
    "complex_sgn": (
        lambda a, b: nb.view_as_real(nb.ops.complex_math.complex_sgn(_z(a, b))),
        lambda: [x(2, 3), x(2, 3)],
        {},
    ),
    "conj_physical": (
        lambda a, b: nb.view_as_real(nb.ops.complex_math.conj_physical(_z(a, b))),
        lambda: [x(2, 3), x(2, 3)],
        {},
    ),
    "fft_c2c": (
        lambda a, b: nb.view_as_real(nb.ops.fourier.fft_c2c(_z(a, b), dims=(0, 1), scale=0.5)),
        lambda: [x(3, 4), x(3, 4)],
        {},
    ),
    "sum_to_like": (nb.sum_to_like, lambda: [x(2, 3), x(1, 3)], {}),
    "broadcast_to_like": (nb.broadcast_to_like, lambda: [x(1, 3), x(2, 3)], {}),
    "expand_reduced": (
        nb.ops.reduce.expand_reduced,
        lambda: [x(2), x(2, 3)],
        {"axis": (1,), "keepdims": False},
    ),
    "fill_": (inplace(nb.fill_), lambda: [x(3)], {"value": 2.0}),
    "copy_": (inplace(nb.copy_), lambda: [x(2, 3), x(3)], {}),
    "add_": (inplace(nb.add_), lambda: [x(2, 3), x(3)], {}),
    # (one process: the reduction over a world of one rank; tests/test_distributed.py has two)
    "allreduce": (nb.ops.collective.allreduce, lambda: [x(2, 3)], {"reduce_op": "avg"}),
    "allreduce_": (inplace(nb.ops.collective.allreduce_), lambda: [x(2, 3)], {}),
    "sub_": (inplace(nb.sub_), lambda: [x(2, 3), x(3)], {}),
    "mul_": (inplace(nb.mul_), lambda: [x(2, 3), x(3)], {}),
    "div_": (inplace(nb.div_), lambda: [x(2, 3), x(3)], {}),
    "clip_": (inplace(nb.clip_), lambda: [x(4, low=-2, high=2)], {"min": -1.0, "max": 1.0}),
    "reshape": (lambda a: nb.reshape(a, 3, 2), lambda: [x(2, 3)], {}),
    "reshape_like": (nb.reshape_like, lambda: [x(2, 3), x(6)], {}),
    "transpose": (lambda a: nb.transpose(a, 0, 2), lambda: [x(2, 3, 4)], {}),
    "permute": (lambda a: nb.permute(a, 2, 0, 1), lambda: [x(2, 3, 4)], {}),
    "broadcast_to": (lambda a: nb.broadcast_to(a, 2, 3, 4), lambda: [x(3, 1)], {}),
    "squeeze": (nb.squeeze, lambda: [x(2, 1, 3)], {"axis": 1}),
    "unsqueeze": (nb.unsqueeze, lambda: [x(2, 3)], {"axis": -1}),
    "flatten": (nb.flatten, lambda: [x(2, 3, 4)], {"start_axis": 1}),
    "concat": (lambda a, b: nb.concat([a, b], axis=1), lambda: [x(2, 3), x(2, 1)], {}),
    "stack": (lambda a, b: nb.stack([a, b], axis=1), lambda: [x(2, 3), x(2, 3)], {}),
    "split": (lambda a: nb.split(a, (1, 2), axis=1), lambda: [x(2, 3)], {}),
    "split_like": (
        lambda a, b, c: nb.ops.shape.split_like(a, b, c, axis=0),
        lambda: [x(3, 2), x(1, 2), x(2, 2)],
        {},
    ),
    "pad": (lambda a: nb.pad(a, ((1, 0), (0, 2)), value=0.5), lambda: [x(2, 3)], {}),
    "flip": (nb.flip, lambda: [x(2, 3)], {"axis": 1}),
    "tile": (lambda a: nb.tile(a, (2, 1)), lambda: [x(2, 3)], {}),
    "repeat": (lambda a: nb.repeat(a, 2, axis=0), lambda: [x(2, 3)], {}),
    "slice": (lambda a: a[1:, ::-1], lambda: [x(3, 4)], {}),
    "index": (lambda a: a[idx(2, 0, 2), 1:], lambda: [x(3, 4)], {}),
    "index_put": (
        lambda a, v: nb.index_put(a, (idx(0, 2),), v, accumulate=True),
        lambda: [x(3, 2), x(2, 2)],
        {},
    ),
    "index_put_": (
        lambda a, v: nb.index_put_(a * 1, (idx(0, 2),), v),
        lambda: [x(3, 2), x(2, 2)],
        {},
    ),
    "take_along_axis": (
        lambda a: nb.take_along_axis(a, nb.tensor([[0, 2], [1, 1]]), axis=1),
        lambda: [x(2, 3)],
        {},
    ),
    "index_select": (lambda a: nb.index_select(a, 1, idx(2, 0, 2)), lambda: [x(2, 3)], {}),
    "scatter_add": (
        lambda a, s: nb.scatter_add(a, 1, nb.tensor([[0, 0], [2, 1]]), s),
        lambda: [x(2, 3), x(2, 2)],
        {},
    ),
    "sum": (nb.sum, lambda: [x(2, 3, 2)], {"axis": (0, 2)}),
    "mean": (nb.mean, lambda: [x(2, 3)], {"axis": 1, "keepdims": True}),
    "prod": (nb.prod, lambda: [x(2, 3)], {"axis": 1}),
    "max": (nb.max, lambda: [x(2, 3)], {"axis": 0}),
    "min": (nb.min, lambda: [x(2, 3)], {}),
    "var": (nb.var, lambda: [x(3, 4)], {"axis": 1}),
    "std": (nb.std, lambda: [x(3, 4)], {}),
    "logsumexp": (nb.logsumexp, lambda: [x(3, 4)], {"axis": -1}),
    "cumsum": (nb.cumsum, lambda: [x(3, 4, 2)], {"axis": 1}),
    "square": (nb.square, lambda: [x(2, 3, low=-2.0)], {}),
    "reciprocal": (nb.reciprocal, lambda: [x(2, 3)], {}),
    "tan": (nb.tan, lambda: [x(2, 3, low=-1.0, high=1.0)], {}),
    "asin": (nb.asin, lambda: [x(2, 3, low=-0.8, high=0.8)], {}),
    "acos": (nb.acos, lambda: [x(2, 3, low=-0.8, high=0.8)], {}),
    "atan": (nb.atan, lambda: [x(2, 3, low=-2.0)], {}),
    "atan2": (nb.atan2, lambda: [x(2, 3, low=-2.0), x(3)], {}),
    "log2": (nb.log2, lambda: [x(2, 3)], {}),
    "log10": (nb.log10, lambda: [x(2, 3)], {}),
    "sort": (nb.sort_op, lambda: [x(3, 4)], {"axis": 0, "descending": True}),
    "matrix_transpose": (nb.matrix_transpose, lambda: [x(2, 3, 4)], {}),
    "matmul": (nb.matmul, lambda: [x(2, 3, 4), x(4, 2)], {}),
    "linear": (nb.linear, lambda: [x(2, 3, 4), x(5, 4), x(5)], {}),
    "addmm": (nb.addmm, lambda: [x(3), x(2, 4), x(4, 3)], {"beta": 0.5, "alpha": -2.0}),
    "addmm_": (inplace(nb.addmm_), lambda: [x(2, 3), x(2, 4), x(4, 3)], {"beta": 2.0}),
    "softmax": (nb.softmax, lambda: [x(2, 5)], {"axis": 1}),
    "log_softmax": (nb.log_softmax, lambda: [x(2, 5)], {"axis": -1}),
    "softmax_grad": (  # softmax's (along axis 0) plus log_softmax's (along the last axis)
        lambda g, a: (
            nb.softmax_grad(g, nb.softmax(a, axis=0), axis=0)
            + nb.softmax_grad(g, nb.log_softmax(a, axis=-1), axis=-1, log=True)
        ),
        lambda: [x(3, 2, low=-1), x(3, 2)],
        {},
    ),
    "cross_entropy": (lambda z: nb.cross_entropy(z, idx(1, 0, 3)), lambda: [x(3, 4)], {}),
    "cross_entropy_grad": (
        lambda g, z: nb.cross_entropy_grad(g, z, idx(1, -100, 3), label_smoothing=0.1),
        lambda: [x(), x(3, 4)],
        {},
    ),
    "mse_loss": (nb.mse_loss, lambda: [x(2, 3), x(2, 3)], {}),
    "add_n": (nb.add_n, lambda: [x(2, 3), x(3), x(2, 3)], {}),
    "conv2d": (nb.conv2d, lambda: [x(1, 2, 5, 5), x(3, 2, 3, 3), x(3)], {"padding": 1}),
    "conv2d_input_grad": (
        lambda g, w, **kw: nb.conv2d_input_grad(g, w, nb.zeros(1, 4, 5, 5, dtype="float64"), **kw),
        lambda: [x(1, 6, 3, 5), x(6, 2, 3, 3)],
        {"stride": (2, 1), "padding": 1, "groups": 2},
    ),
    "conv2d_weight_grad": (
        lambda a, g, **kw: nb.conv2d_weight_grad(a, g, nb.zeros(6, 2, 3, 3, dtype="float64"), **kw),
        lambda: [x(1, 4, 5, 5), x(1, 6, 3, 5)],
        {"stride": (2, 1), "padding": 1, "groups": 2},
    ),
    "conv3d": (nb.conv3d, lambda: [x(1, 2, 3, 4, 3), x(2, 2, 2, 3, 2), x(2)], {"padding": 1}),
    "conv3d_input_grad": (
        lambda g, w, **kw: nb.conv3d_input_grad(
            g, w, nb.zeros(1, 4, 3, 4, 3, dtype="float64"), **kw
        ),
        lambda: [x(1, 2, 2, 2, 4), x(2, 2, 2, 3, 2)],
        {"stride": (2, 1, 1), "padding": (1, 0, 1), "groups": 2},
    ),
    "conv3d_weight_grad": (
        lambda a, g, **kw: nb.conv3d_weight_grad(
            a, g, nb.zeros(2, 2, 2, 3, 2, dtype="float64"), **kw
        ),
        lambda: [x(1, 4, 3, 4, 3), x(1, 2, 2, 2, 4)],
        {"stride": (2, 1, 1), "padding": (1, 0, 1), "groups": 2},
    ),
    "max_pool2d": (nb.max_pool2d, lambda: [x(1, 2, 5, 5)], {"kernel_size": 2, "stride": 1}),
    "max_pool2d_backward": (
        lambda g: nb.max_pool2d_backward(
            g,
            nb.max_pool2d(
                nb.tensor(np.arange(50.0)[::-1].reshape(1, 2, 5, 5)), 2, return_indices=True
            )[1],
            nb.zeros(1, 2, 5, 5, dtype="float64"),
        ),
        lambda: [x(1, 2, 2, 2)],
        {},
    ),
    "avg_pool2d": (
        nb.avg_pool2d,
        lambda: [x(1, 2, 5, 5)],
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    ),
    "avg_pool2d_backward": (
        lambda g: nb.avg_pool2d_backward(
            g, nb.zeros(1, 2, 5, 5, dtype="float64"), kernel_size=3, stride=2, padding=1
        ),
        lambda: [x(1, 2, 3, 3)],
        {},
    ),
    "adaptive_avg_pool2d": (
        nb.adaptive_avg_pool2d,
        lambda: [x(1, 2, 5, 5)],
        {"output_size": (2, 3)},
    ),
    "adaptive_avg_pool2d_backward": (
        lambda g: nb.adaptive_avg_pool2d_backward(
            g, nb.zeros(1, 2, 5, 5, dtype="float64"), output_size=(2, 3)
        ),
        lambda: [x(1, 2, 2, 3)],
        {},
    ),
    "embedding": (
        lambda w: nb.embedding(nb.tensor([[0, 2], [4, 2]]), w, padding_idx=1),  # no row 1
        lambda: [x(5, 3)],
        {},
    ),
    "embedding_backward": (
        lambda g: nb.embedding_backward(
            g, nb.tensor([[0, 2], [4, 2]]), nb.zeros(5, 3, dtype="float64"), padding_idx=2
        ),
        lambda: [x(2, 2, 3)],
        {},
    ),
    "layer_norm_affine": (
        lambda a, w, b: nb.layer_norm(a, (3,), w, b),
        lambda: [x(2, 3), x(3), x(3)],
        {},
    ),
    "layer_norm": (  # (a weight alone: layer_norm_op, then the product)
        lambda a, w: nb.layer_norm(a, (3,), w),
        lambda: [x(2, 3), x(3)],
        {},
    ),
    "layer_norm_affine_grad": (
        lambda g, a, w: nb.layer_norm_affine_grad(g, a, w, normalized_shape=(2, 3)),
        lambda: [x(4, 2, 3, low=-1), x(4, 2, 3), x(2, 3, low=-1)],
        {},
    ),
    "layer_norm_grad": (
        lambda g, y, a: nb.layer_norm_grad(g, y, a, normalized_shape=(3,)),
        lambda: [x(2, 3, low=-1), x(2, 3, low=-1), x(2, 3)],
        {},
    ),
    "batch_norm_train": (
        lambda a: nb.batch_norm(
            a, nb.zeros(2, dtype="float64"), nb.ones(2, dtype="float64"), training=True
        ),
        lambda: [x(3, 2, 2)],
        {},
    ),
    "batch_norm_train_affine": (
        lambda a, w, b: nb.batch_norm(
            a, nb.zeros(2, dtype="float64"), nb.ones(2, dtype="float64"), w, b, training=True
        ),
        lambda: [x(3, 2, 2), x(2), x(2)],
        {},
    ),
    "batch_norm_train_affine_grad": (
        lambda g, a, w: nb.batch_norm_train_affine_grad(g, a, w, eps=1e-5),
        lambda: [x(3, 2, 2, low=-1), x(3, 2, 2), x(2, low=-1)],
        {},
    ),
    "batch_norm_train_grad": (
        lambda g, y, a: nb.batch_norm_train_grad(g, y, a, eps=1e-5),
        lambda: [x(3, 2, 2, low=-1), x(3, 2, 2, low=-1), x(3, 2, 2)],
        {},
    ),
    "batch_norm_eval": (  # (running_var from x(): kept away from 0)
        lambda a, m, v, w, b: nb.batch_norm_eval(a, m, v, w, b, eps=1e-5),
        lambda: [x(3, 2, 2, low=-1), x(2, low=-1), x(2), x(2, low=-1), x(2, low=-1)],
        {},
    ),
    "channel_affine": (nb.channel_affine, lambda: [x(3, 2, 2), x(2), x(2)], {}),
    "channel_affine_grad": (
        lambda g, y, w: nb.channel_affine_grad(g, y, w),
        lambda: [x(3, 2, 2, low=-1), x(3, 2, 2), x(2)],
        {},
    ),
    "self_attention": (
        lambda qkv: nb.self_attention(qkv, heads=2, scale=0.7),
        lambda: [x(2, 3, 12, low=-1, high=1)],
        {},
    ),
    "self_attention_grad": (
        lambda g, qkv: nb.self_attention_grad(g, qkv, heads=2, scale=0.7),
        lambda: [x(2, 3, 4, low=-1, high=1), x(2, 3, 12, low=-1, high=1)],
        {},
    ),
    "lstm_sequence": (
        lambda *a: nb.lstm_sequence(*a, reverse=True),
        lambda: [x(3, 2, 8, low=-1, high=1), x(8, 2, low=-1, high=1), x(8), x(2, 2), x(2, 2)],
        {},
    ),
    "binary_cross_entropy_with_logits": (
        lambda a, y, w, pw: nb.binary_cross_entropy_with_logits(a, y, w, pos_weight=pw),
        lambda: [x(2, 3, low=-2, high=2), x(2, 3, low=0.1, high=0.9), x(2, 3), x(3)],
        {},
    ),
    "nll_loss": (
        lambda a, w: nb.nll_loss(a, nb.tensor([[0, 3], [-100, 1]]), w),
        lambda: [x(2, 4, 2), x(4)],
        {},
    ),
    "l1_loss": (nb.l1_loss, lambda: [x(2, 3), x(2, 3, low=3, high=4)], {}),
    # zeta's and the incomplete gammas' first argument has no gradient (as in PyTorch)
    "zeta": (lambda q: nb.special.zeta(nb.tensor([2.5, 3.0, 4.5]), q), lambda: [x(2, 3)], {}),
    "gammainc": (lambda v: nb.special.gammainc(nb.tensor([0.5, 1.5, 3.0]), v), lambda: [x(3)], {}),
    "gammaincc": (lambda v: nb.special.gammaincc(nb.tensor([0.5, 2.0]), v), lambda: [x(2)], {}),
    "ctc_loss": (
        lambda a: nb.ctc_loss(a, idx(1, 2, 2), idx(4, 3), idx(2, 1)),
        lambda: [x(4, 2, 3, low=-2.0, high=0.0)],
        {},
    ),
    # the decompositions, on well-conditioned inputs (SPD or symmetric where they must be);
    # qr and svd through gauge-invariant functions (their signs are LAPACK's choice)
    "inv": (lambda a: nb.linalg.inv(_well(a)), lambda: [x(2, 3, 3)], {}),
    "solve": (lambda a, b: nb.linalg.solve(_well(a), b), lambda: [x(2, 3, 3), x(3, 2)], {}),
    "det": (lambda a: nb.linalg.det(_well(a)), lambda: [x(2, 3, 3)], {}),
    "slogdet": (lambda a: nb.linalg.slogdet(_well(a)).logabsdet, lambda: [x(2, 3, 3)], {}),
    "cholesky": (lambda a: nb.linalg.cholesky(_spd(a)), lambda: [x(2, 3, 3)], {}),
    "eigh": (lambda a: nb.linalg.eigh(a + a.mT), lambda: [x(2, 3, 3, low=-1, high=1)], {}),
    "eig": (  # (|v|: a loss that does not depend on the eigenvectors' phases)
        lambda a: (nb.real(nb.linalg.eigvals(a)), abs(nb.linalg.eig(a).eigenvectors)),
        lambda: [x(2, 3, 3, low=-1, high=1)],
        {},
    ),
    "qr": (lambda a: nb.linalg.qr(a).Q * nb.linalg.qr(a).R[..., :1, :1], lambda: [x(4, 3)], {}),
    "svd": (
        lambda a: tuple(abs(t) for t in nb.linalg.svd(a, full_matrices=False)),
        lambda: [x(4, 3, low=-1, high=1)],
        {},
    ),
    "lu_factor_ex": (lambda a: nb.linalg.lu_factor_ex(_well(a)).LU, lambda: [x(2, 3, 3)], {}),
    "lu_solve": (
        lambda a, b: nb.linalg.lu_solve(*nb.linalg.lu_factor(_well(a)), b, adjoint=True),
        lambda: [x(2, 3, 3), x(3, 2)],
        {},
    ),
    "cholesky_ex": (lambda a: nb.linalg.cholesky_ex(_spd(a)).L, lambda: [x(2, 3, 3)], {}),
    "matrix_exp": (nb.linalg.matrix_exp, lambda: [x(2, 3, 3, low=-1, high=1)], {}),
}


def _well(a):
    """a plus 3 I: well-conditioned for entries in [0.5, 2]."""
    return a + nb.eye(a.shape[-1], dtype=a.dtype) * 3


def _spd(a):
    return a @ a.mT + nb.eye(a.shape[-1], dtype=a.dtype)


ELEMENTWISE_DOMAIN = {
    "clip": (-2, 2),
    "relu": (-2, 2),
    "relu_grad": (-2, 2),
    "abs": (-2, 2),
    "leaky_relu": (-2, 2),
    "acosh": (1.1, 3),
    "atanh": (-0.9, 0.9),
    "logit": (0.1, 0.9),
    "binary_cross_entropy_pointwise": (0.1, 0.9),
    "erfinv": (-0.9, 0.9),
    "ndtri": (0.1, 0.9),
    "copysign": (-2, 2),
    "nan_to_num": (-2, 2),
}


def _derived(op) -> bool:
    """Whether op has a gradient rule to check (not one saying its derivative is missing)."""
    return op.differentiable and not op.no_derivative


for _op in (REGISTRY[n] for n in sorted(BUILTIN)):
    if hasattr(_op, "scalar_body") and _derived(_op) and _op.name not in SAMPLES:
        low, high = ELEMENTWISE_DOMAIN.get(_op.name, (0.5, 2.0))
        n = len(_op.inputs)
        if _op.name == "where":
            SAMPLES["where"] = (
                lambda a, b: nb.where(nb.tensor([True, False, True]), a, b),
                lambda: [x(3), x(2, 3)],
                {},
            )
        elif _op.name == "nan_to_num":
            SAMPLES["nan_to_num"] = (_op, lambda: [x(2, 3)], {"posinf": 9.0, "neginf": -9.0})
        elif _op.name == "cast":
            SAMPLES["cast"] = (nb.cast, lambda: [x(3)], {"dtype": "float32"})
        else:
            SAMPLES[_op.name] = (
                _op,
                lambda n=n, low=low, high=high: (
                    [x(2, 3, low=low, high=high)] + [x(3, low=low, high=high) for _ in range(n - 1)]
                ),
                {"min": -1.0, "max": 1.0} if _op.name == "clip" else {},
            )


# Draws differentiated by implicit reparameterization: finite differences of a draw follow the
# sampler's path, not the fixed CDF level the gradient holds, so tests/test_random_params.py
# checks standard_gamma's gradient against scipy's gammainc instead.
IMPLICIT_REPARAMETERIZED = ("standard_gamma",)


def test_every_differentiable_op_has_a_sample():
    missing = sorted(
        n
        for n in BUILTIN
        if _derived(REGISTRY[n]) and n not in SAMPLES and n not in IMPLICIT_REPARAMETERIZED
    )
    assert not missing, f"add a gradient-check sample for: {missing}"


UNDERIVED = sorted(n for n in BUILTIN if REGISTRY[n].no_derivative)


@pytest.mark.parametrize("name", [n for n in UNDERIVED if hasattr(REGISTRY[n], "scalar_body")])
def test_an_op_without_a_derivative_refuses_to_be_differentiated(name):
    """Its output carries the gradient it lacks: a backward through it raises, in eager and
    graph mode, rather than leave its term out of a sum (PyTorch's "not implemented")."""
    op = REGISTRY[name]
    args = [nb.tensor(np.full(3, 0.5), requires_grad=True) for _ in op.inputs]
    total = nb.sum(op(*args) + args[0])  # (the other term alone would give a gradient)
    with pytest.raises(nb.errors.GradientError, match="no derivative"):
        total.backward()
    with pytest.raises(nb.errors.GradientError, match="no derivative"):
        nb.jit(lambda *a: nb.sum(op(*a) + a[0]))(*args).backward()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_gradcheck_every_differentiable_op(name):
    fn, inputs, attrs = SAMPLES[name]
    # cast goes through float32: a linear op, so a large step keeps rounding noise small
    eps = 1e-2 if name == "cast" else 1e-6
    nt.gradcheck(lambda *a: fn(*a, **attrs), inputs(), eps=eps, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("dtype", dt.ALL, ids=lambda d: dt.SHORT[d])
def test_any_dtype_gives_a_result_or_a_typed_error(name, dtype):
    fn, inputs, attrs = SAMPLES[name]
    with nb.no_grad():
        args = [nb.tensor(a.numpy().astype(dtype)) for a in inputs()]
        try:
            out = fn(*args, **attrs)
        except nb.NbflowError:
            return  # a typed error naming the op and dtype is the right answer
    outs = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(o, nb.Tensor) for o in outs)
