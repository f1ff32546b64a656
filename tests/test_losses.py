"""binary_cross_entropy_with_logits, nll_loss, l1_loss.

Forward against independent numpy references per float dtype and reduction (shape and dtype
equal the op's spec first), float64 gradient checks for every input, typed errors, and
PyTorch parity when torch is installed."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec

FLOATS = dt.FLOATS
REDUCTIONS = ("mean", "sum", "none")
RNG = np.random.default_rng(0)
TOL = {dt.float16: (2e-2, 2e-2), dt.float32: (1e-5, 1e-5), dt.float64: (1e-10, 1e-12)}


def _ids(dtypes):
    return [dt.SHORT[d] for d in dtypes]


def check_spec(op, arrays, attrs, out):
    specs = [
        Spec((), dt.float32, weak=True) if isinstance(a, float) else Spec(a.shape, a.dtype)
        for a in arrays
    ]
    spec = op.infer(specs, op.check_attrs(attrs))[0]
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)


def reduce_(loss, reduction, divisor=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (loss.size if divisor is None else divisor)


def leaf(*shape, low=-2.0, high=2.0):
    return nb.tensor(RNG.uniform(low, high, shape), requires_grad=True)


# ---------------------------------------------------------------- BCE with logits


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_bce_with_logits_forward(dtype, reduction):
    x = RNG.uniform(-30, 30, (3, 4)).astype(dtype)  # large logits stay finite
    y = RNG.uniform(0, 1, (3, 4)).astype(dtype)
    pw = RNG.uniform(0.5, 2, 4).astype(dtype)
    out = nb.binary_cross_entropy_with_logits(
        nb.tensor(x), nb.tensor(y), reduction=reduction, pos_weight=nb.tensor(pw)
    )
    check_spec(
        nb.binary_cross_entropy_with_logits_op, [x, y, 1.0, pw], {"reduction": reduction}, out
    )
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    # log sigmoid(x) = -log(1 + exp(-x)), written stably for the reference
    log_sig = np.minimum(x64, 0) - np.log1p(np.exp(-np.abs(x64)))
    log_not = np.minimum(-x64, 0) - np.log1p(np.exp(-np.abs(x64)))
    loss = -(pw.astype(np.float64) * y64 * log_sig + (1 - y64) * log_not)
    rtol, atol = TOL[dtype]
    nt.assert_close(out, np.asarray(reduce_(loss, reduction), dtype), rtol, atol)


def test_bce_with_logits_gradients_for_every_input():
    args = [leaf(2, 3), leaf(2, 3, low=0, high=1), leaf(2, 3, low=0.5), leaf(3, low=0.5)]
    for reduction in REDUCTIONS:
        nt.gradcheck(
            lambda x, y, w, pw, r=reduction: nb.binary_cross_entropy_with_logits(
                x, y, w, r, pos_weight=pw
            ),
            args,
        )
    nt.gradgradcheck(lambda x: nb.binary_cross_entropy_with_logits(x, args[1].detach()), args[:1])


def test_bce_with_logits_errors():
    with pytest.raises(nb.ShapeError, match=r"target of shape \(3,\) must have the input's shape"):
        nb.binary_cross_entropy_with_logits(nb.zeros(2, 3), nb.zeros(3))
    with pytest.raises(nb.ShapeError, match="broadcast"):
        nb.binary_cross_entropy_with_logits(nb.zeros(2, 3), nb.zeros(2, 3), nb.zeros(2))
    with pytest.raises(nb.DTypeError):
        nb.binary_cross_entropy_with_logits(nb.tensor([1, 2]), nb.tensor([0, 1]))


# ---------------------------------------------------------------- nll_loss


def nll_numpy(logp, target, weight, ignore_index, reduction):
    cls = 1 if logp.ndim >= 2 else 0
    x = np.moveaxis(logp, cls, -1).reshape(-1, logp.shape[cls])
    t = target.reshape(-1)
    loss, total = np.zeros(t.size), 0.0
    for i, k in enumerate(t):
        if k != ignore_index:
            loss[i] = -weight[k] * x[i, k]
            total += weight[k]
    return reduce_(loss.reshape(target.shape), reduction, divisor=total)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3)])
def test_nll_loss_forward(shape, dtype, reduction):
    logp = np.log(RNG.uniform(0.05, 1, shape)).astype(dtype)
    tshape = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    target = RNG.integers(0, 5, tshape)
    target = np.where(RNG.uniform(size=tshape) < 0.25, -100, target)
    weight = RNG.uniform(0.5, 2, 5).astype(dtype)
    out = nb.nll_loss(nb.tensor(logp), nb.tensor(target), nb.tensor(weight), reduction=reduction)
    check_spec(nb.nll_loss_op, [logp, target, weight], {"reduction": reduction}, out)
    expected = nll_numpy(
        logp.astype(np.float64), target, weight.astype(np.float64), -100, reduction
    )
    rtol, atol = TOL[dtype]
    nt.assert_close(out, np.asarray(expected, dtype), rtol, atol)
    plain = nb.nll_loss(nb.tensor(logp), nb.tensor(target), reduction=reduction)
    expected = nll_numpy(logp.astype(np.float64), target, np.ones(5), -100, reduction)
    nt.assert_close(plain, np.asarray(expected, dtype), rtol, atol)


def test_nll_loss_gradients_and_log_softmax_composition():
    target = nb.tensor([[0, 3], [-100, 1], [2, 2]])
    x, w = leaf(3, 4, 2), leaf(4, low=0.5)
    for reduction in REDUCTIONS:
        nt.gradcheck(lambda x, w, r=reduction: nb.nll_loss(x, target, w, reduction=r), [x, w])
    logits = leaf(3, 4, 2)
    nt.assert_close(
        nb.nll_loss(nb.log_softmax(logits, axis=1), target), nb.cross_entropy(logits, target)
    )


def test_nll_loss_errors_and_all_ignored():
    with pytest.raises(nb.OutOfRangeError, match=r"nll_loss: target 4 at position \(1,\)"):
        nb.nll_loss(nb.zeros(2, 4), nb.tensor([0, 4]))
    with pytest.raises(nb.ShapeError, match=r"target of shape \(3,\) does not fit input"):
        nb.nll_loss(nb.zeros(2, 4), nb.tensor([0, 1, 2]))
    with pytest.raises(nb.ShapeError, match=r"weight of shape \(3,\) should be \(4,\)"):
        nb.nll_loss(nb.zeros(2, 4), nb.tensor([0, 1]), nb.ones(3))
    with pytest.raises(nb.DTypeError, match="class indices"):
        nb.nll_loss(nb.zeros(2, 4), nb.zeros(2))
    assert np.isnan(nb.nll_loss(nb.zeros(2, 4), nb.tensor([-100, -100])).item())


# ---------------------------------------------------------------- l1_loss


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_l1_loss_forward(dtype, reduction):
    x = RNG.uniform(-2, 2, (3, 4)).astype(dtype)
    y = RNG.uniform(-2, 2, (3, 4)).astype(dtype)
    out = nb.l1_loss(nb.tensor(x), nb.tensor(y), reduction=reduction)
    check_spec(nb.l1_loss, [x, y], {"reduction": reduction}, out)
    expected = reduce_(np.abs(x.astype(np.float64) - y.astype(np.float64)), reduction)
    rtol, atol = TOL[dtype]
    nt.assert_close(out, np.asarray(expected, dtype), rtol, atol)


def test_l1_loss_gradients_and_broadcast_warning():
    x, y = leaf(2, 3), leaf(2, 3)
    for reduction in REDUCTIONS:
        nt.gradcheck(lambda x, y, r=reduction: nb.l1_loss(x, y, reduction=r), [x, y])
    with pytest.warns(UserWarning, match="l1_loss: target shape"):
        nb.l1_loss(x, leaf(3))
    with pytest.raises(nb.DTypeError):
        nb.l1_loss(nb.tensor([1]), nb.tensor([2]))


# ---------------------------------------------------------------- PyTorch parity


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_match_pytorch(reduction):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, y = RNG.standard_normal((3, 4)) * 3, RNG.uniform(0, 1, (3, 4))
    w, pw = RNG.uniform(0.5, 2, (3, 4)), RNG.uniform(0.5, 2, 4)
    xn, xt = nb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = nb.binary_cross_entropy_with_logits(
        xn, nb.tensor(y), nb.tensor(w), reduction, pos_weight=nb.tensor(pw)
    )
    tout = F.binary_cross_entropy_with_logits(
        xt, torch.tensor(y), torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw)
    )
    nt.assert_close(out, tout.detach().numpy())
    seed = RNG.standard_normal(out.shape)
    out.backward(nb.tensor(seed))
    tout.backward(torch.tensor(seed))
    nt.assert_close(xn.grad, xt.grad.numpy())

    logp, target = np.log(RNG.uniform(0.1, 1, (3, 4, 2))), np.array([[0, 3], [-100, 1], [2, 2]])
    cw = RNG.uniform(0.5, 2, 4)
    ln, lt = nb.tensor(logp, requires_grad=True), torch.tensor(logp, requires_grad=True)
    out = nb.nll_loss(ln, nb.tensor(target), nb.tensor(cw), reduction=reduction)
    tout = F.nll_loss(lt, torch.tensor(target), torch.tensor(cw), reduction=reduction)
    nt.assert_close(out, tout.detach().numpy())
    seed = RNG.standard_normal(out.shape)
    out.backward(nb.tensor(seed))
    tout.backward(torch.tensor(seed))
    nt.assert_close(ln.grad, lt.grad.numpy())

    a, b = RNG.standard_normal((2, 5)), RNG.standard_normal((2, 5))
    nt.assert_close(
        nb.l1_loss(nb.tensor(a), nb.tensor(b), reduction=reduction),
        F.l1_loss(torch.tensor(a), torch.tensor(b), reduction=reduction).numpy(),
    )
