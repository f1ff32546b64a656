"""ctc_loss (an op: nbflow/ops/ctc.py) and the margin losses of nbflow/nn/functional/loss.py.

CTC is checked against a brute force written here: every alignment of a tiny (T, C) grid,
kept when it collapses to the target, its probability summed. Gradients against float64
finite differences and the brute force's posterior; the margin losses against numpy formulas
from PyTorch's documentation; eager against jit; typed errors. torch, where installed, adds a
comparison (CI has none)."""

import itertools
import warnings

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)


def _log_softmax(x, axis=-1):
    return x - np.logaddexp.reduce(x, axis=axis, keepdims=True)


# ---------------------------------------------------------------- the brute force


def _collapse(path, blank):
    """A path's labelling: repeats merged, then blanks dropped."""
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return tuple(c for c in merged if c != blank)


def brute_nll(lp, labels, blank=0):
    """-log sum over the alignments of lp (steps, C) that collapse to labels."""
    steps, classes = lp.shape
    total = -np.inf
    for path in itertools.product(range(classes), repeat=steps):
        if _collapse(path, blank) == tuple(labels):
            total = np.logaddexp(total, sum(lp[t, c] for t, c in enumerate(path)))
    return -total


def brute_grad(lp, labels, blank=0):
    """d nll / d lp: minus the posterior probability of class c at time t."""
    steps, classes = lp.shape
    nll = brute_nll(lp, labels, blank)
    grad = np.zeros_like(lp)
    for path in itertools.product(range(classes), repeat=steps):
        if _collapse(path, blank) == tuple(labels):
            weight = np.exp(sum(lp[t, c] for t, c in enumerate(path)) + nll)
            for t, c in enumerate(path):
                grad[t, c] -= weight
    return grad


def brute_batch(lp, padded, input_lengths, target_lengths, blank=0):
    return np.array(
        [
            brute_nll(lp[: input_lengths[b], b], padded[b, : target_lengths[b]], blank)
            if input_lengths[b]
            else (0.0 if target_lengths[b] == 0 else np.inf)
            for b in range(lp.shape[1])
        ]
    )


# a batch with a repeated label, an empty target, a shorter input and blank = 0
T, N, C = 5, 4, 3
PADDED = np.array([[1, 2, 0], [1, 1, 0], [0, 0, 0], [2, 1, 2]])
TARGET_LENGTHS = np.array([2, 2, 0, 3])
INPUT_LENGTHS = np.array([5, 4, 3, 5])
CONCAT = np.concatenate([PADDED[b, :n] for b, n in enumerate(TARGET_LENGTHS)])
LOGITS = RNG.standard_normal((T, N, C))
LP = _log_softmax(LOGITS)


def _call(lp, targets=PADDED, il=INPUT_LENGTHS, tl=TARGET_LENGTHS, **kw):
    return F.ctc_loss(nb.tensor(lp), nb.tensor(targets), nb.tensor(il), nb.tensor(tl), **kw)


def _call_t(lp, **kw):
    return F.ctc_loss(lp, nb.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("normalised", [True, False])
def test_ctc_matches_the_brute_force_over_all_alignments(dtype, normalised):
    lp = (LP if normalised else LOGITS * 0.7).astype(dtype)  # (any log-probs, not only normalised)
    got = _call(lp, reduction="none")
    assert got.shape == (N,) and got.dtype == np.dtype(dtype)
    expected = brute_batch(lp.astype(np.float64), PADDED, INPUT_LENGTHS, TARGET_LENGTHS)
    tol = 1e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(got.numpy(), expected, rtol=tol, atol=tol)


def test_ctc_with_another_blank_and_both_target_layouts():
    blank = 2
    padded = np.where(PADDED == 2, 0, PADDED)  # labels in {0, 1}, blank 2
    concat = np.concatenate([padded[b, :n] for b, n in enumerate(TARGET_LENGTHS)])
    expected = brute_batch(LP, padded, INPUT_LENGTHS, TARGET_LENGTHS, blank=blank)
    for targets in (padded, concat):
        got = _call(LP, targets, reduction="none", blank=blank)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-11)
    # the op's numpy reference agrees too
    ref = nb.REGISTRY["ctc_loss"].ref(LP, concat, INPUT_LENGTHS, TARGET_LENGTHS, blank=blank)
    np.testing.assert_allclose(ref, expected, rtol=1e-11)


def test_ctc_reductions_follow_pytorch():
    per_sample = brute_batch(LP, PADDED, INPUT_LENGTHS, TARGET_LENGTHS)
    np.testing.assert_allclose(_call(LP, reduction="sum").numpy(), per_sample.sum(), rtol=1e-11)
    mean = np.mean(per_sample / np.maximum(TARGET_LENGTHS, 1))  # per label, then the batch
    np.testing.assert_allclose(_call(LP).numpy(), mean, rtol=1e-11)
    assert _call(LP).shape == ()
    with pytest.raises(nb.AttrError, match="reduction"):
        _call(LP, reduction="average")


def test_ctc_lengths_as_int_sequences_and_the_unbatched_layout():
    lp = nb.tensor(LP)
    seq = F.ctc_loss(lp, nb.tensor(CONCAT), list(INPUT_LENGTHS), tuple(TARGET_LENGTHS))
    np.testing.assert_allclose(seq.numpy(), _call(LP).numpy(), rtol=1e-12)
    b = 3
    expected = brute_nll(LP[:, b], PADDED[b])
    one = F.ctc_loss(nb.tensor(LP[:, b]), nb.tensor(PADDED[b]), T, 3, reduction="none")
    assert one.shape == ()
    np.testing.assert_allclose(one.numpy(), expected, rtol=1e-11)
    lengths = (nb.tensor(np.int64(T)), nb.tensor(np.int64(3)))
    mean = F.ctc_loss(nb.tensor(LP[:, b]), nb.tensor(PADDED[b]), *lengths)
    np.testing.assert_allclose(mean.numpy(), expected / 3, rtol=1e-11)


def test_ctc_gradient_is_the_posterior_and_matches_finite_differences():
    lp = nb.tensor(LOGITS * 0.7, requires_grad=True)  # unnormalised: the derivative of the loss
    losses = F.ctc_loss(lp, nb.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS, reduction="none")
    cot = RNG.standard_normal(N)
    (g,) = nb.grad(losses, [lp], nb.tensor(cot))
    expected = np.zeros((T, N, C))
    for b in range(N):
        steps = INPUT_LENGTHS[b]
        labels = PADDED[b, : TARGET_LENGTHS[b]]
        expected[:steps, b] = cot[b] * brute_grad(LOGITS[:steps, b] * 0.7, labels)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-9, atol=1e-12)
    assert not g.numpy()[4:, 1].any()  # past a sample's input length: no gradient
    for reduction in ("none", "sum", "mean"):
        nt.gradcheck(
            lambda a, r=reduction: F.ctc_loss(
                a, nb.tensor(CONCAT), INPUT_LENGTHS, TARGET_LENGTHS, reduction=r
            ),
            [nb.tensor(LP, requires_grad=True)],
        )


def test_a_second_derivative_through_ctc_is_refused_not_dropped():
    rng = np.random.default_rng(4)
    lp = nb.tensor(rng.standard_normal((5, 1, 3)), requires_grad=True)
    loss = F.ctc_loss(nb.log_softmax(lp, axis=2), nb.tensor([[1, 2]]), [5], [2])
    (g,) = nb.grad(loss, [lp], create_graph=True)  # the first derivative is fine
    assert g.requires_grad  # (log_softmax's part of it has a derivative; ctc's has none)
    with pytest.raises(nb.GradientError, match="no second derivative"):
        nb.grad((g * g).sum(), [lp])


def test_ctc_float32_gradient_is_close_to_float64():
    def grad(dtype):
        lp = nb.tensor(LP.astype(dtype), requires_grad=True)
        _call_t(lp).backward()
        return lp.grad.numpy()

    np.testing.assert_allclose(grad("float32"), grad("float64"), rtol=1e-4, atol=1e-6)


def test_zero_infinity_zeroes_impossible_alignments_and_their_gradients():
    # sample 0: 3 labels in 2 frames; sample 1: [1, 1] needs a blank between, 3 frames
    targets = np.array([[1, 2, 1], [1, 1, 0]])
    il, tl = np.array([2, 2]), np.array([3, 2])
    lp = LP[:, :2]
    for zero_infinity in (False, True):
        x = nb.tensor(lp, requires_grad=True)
        losses = F.ctc_loss(
            x, nb.tensor(targets), il, tl, reduction="none", zero_infinity=zero_infinity
        )
        expected = 0.0 if zero_infinity else np.inf
        np.testing.assert_array_equal(losses.numpy(), [expected, expected])
        nb.sum(losses).backward()
        g = x.grad.numpy()
        if zero_infinity:
            assert not g.any()
        else:  # no alignment: 0 / 0 over the input's frames, as PyTorch gives
            assert np.isnan(g[:2]).all() and not g[2:].any()
    # a possible sample beside them keeps its loss and gradient under 'mean'
    mixed = F.ctc_loss(nb.tensor(LP[:, :2]), nb.tensor(targets), [2, 5], [3, 2], zero_infinity=True)
    np.testing.assert_allclose(mixed.numpy(), brute_nll(LP[:, 1], [1, 1]) / 2 / 2, rtol=1e-11)


def test_ctc_empty_inputs():
    # input length 0: loss 0 for an empty target, inf otherwise (PyTorch's rule)
    losses = _call(LP, il=np.array([0, 0, 3, 5]), tl=np.array([0, 1, 0, 3]), reduction="none")
    np.testing.assert_array_equal(losses.numpy()[:2], [0.0, np.inf])
    with pytest.raises(nb.ShapeError, match="must not be empty"):  # (as PyTorch)
        _call(
            np.zeros((T, 0, C)),
            np.zeros((0, 2), np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
        )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_eager_and_jit_agree(dtype):
    def loss(lp):
        return F.ctc_loss(
            lp, nb.tensor(PADDED), nb.tensor(INPUT_LENGTHS), nb.tensor(TARGET_LENGTHS)
        )

    def concat(lp):
        return nb.sum(
            F.ctc_loss(
                lp,
                nb.tensor(CONCAT),
                INPUT_LENGTHS,
                TARGET_LENGTHS,
                reduction="none",
                zero_infinity=True,
            )
            * 2
        )

    for fn in (loss, concat):
        counts = nt.check_modes(fn, LP.astype(dtype))
        assert counts == {"outputs": 1, "gradients": 1}
    traced = nb.jit(lambda lp: F.ctc_loss(lp, nb.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS))
    np.testing.assert_allclose(traced(nb.tensor(LP)).numpy(), _call(LP).numpy(), rtol=1e-12)


def test_ctc_module():
    loss = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    got = loss(nb.tensor(LP), nb.tensor(PADDED), INPUT_LENGTHS, TARGET_LENGTHS)
    np.testing.assert_allclose(got.numpy(), _call(LP, reduction="sum").numpy(), rtol=1e-12)
    assert "reduction='sum'" in repr(loss)
    with pytest.raises(ValueError):
        nn.CTCLoss(reduction="bad")


BAD_INPUTS = [
    ("input length past T", {"il": np.array([6, 4, 3, 5])}, nb.OutOfRangeError, "at most T = 5"),
    ("negative input length", {"il": np.array([5, -1, 3, 5])}, nb.OutOfRangeError, ">= 0"),
    ("negative target length", {"tl": np.array([2, -1, 0, 3])}, nb.OutOfRangeError, ">= 0"),
    ("target length past S", {"tl": np.array([4, 2, 0, 3])}, nb.OutOfRangeError, "S = 3"),
    ("lengths of another batch", {"il": np.array([5, 4, 3])}, nb.ShapeError, "batch_size"),
    ("targets of another batch", {"targets": PADDED[:3]}, nb.ShapeError, "N = 4"),
    ("concat sum mismatch", {"targets": CONCAT[:-1]}, nb.ShapeError, "sum to 7"),
    (
        "label out of range",
        {"targets": np.where(PADDED == 2, 3, PADDED)},
        nb.OutOfRangeError,
        "outside",
    ),
    ("float targets", {"targets": PADDED.astype(np.float64)}, nb.DTypeError, "int32 or int64"),
    ("float lengths", {"tl": TARGET_LENGTHS * 1.0}, nb.DTypeError, "int32 or int64"),
]


@pytest.mark.parametrize("what, change, error, match", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_ctc_bad_input_is_a_typed_error_in_both_modes(what, change, error, match):
    args = {"targets": PADDED, "il": INPUT_LENGTHS, "tl": TARGET_LENGTHS, **change}
    targets, il, tl = (nb.tensor(args[k]) for k in ("targets", "il", "tl"))
    with pytest.raises(error, match=match):
        F.ctc_loss(nb.tensor(LP), targets, il, tl)
    with pytest.raises(error, match=match):
        nb.jit(lambda lp: F.ctc_loss(lp, targets, il, tl))(nb.tensor(LP))


def test_ctc_bad_blank_and_layout():
    for blank in (3, -1):
        with pytest.raises(nb.OutOfRangeError, match="blank"):
            _call(LP, blank=blank)
    with pytest.raises(nb.ShapeError, match="N = 1"):
        _call(LP[0])  # a 2-D log_probs is unbatched (T, C): one sample
    with pytest.raises(nb.ShapeError, match=r"\(T, N, C\)"):
        _call(LP[0, 0])
    with pytest.raises(nb.DTypeError, match="float"):
        _call(np.zeros((T, N, C), np.int64))


def test_ctc_cuda_launchers_check_values_before_any_gpu_work():
    # the kernels run in the CUDA simulator (tests/cuda_sim_cases.py) and compile to PTX
    # (tests/cuda_ptx_matrix.py); the value checks are the CPU's, on host copies
    bad = np.where(PADDED == 2, 3, PADDED)
    attrs = {"blank": 0, "zero_infinity": False}
    for name, front in (("ctc_loss", ()), ("ctc_loss_grad", (np.ones(N),))):
        launch = nb.REGISTRY[name].kernels["cuda"]
        assert not hasattr(launch, "cuda_unsupported")
        with pytest.raises(nb.OutOfRangeError, match="outside"):
            launch(*front, LP, bad, INPUT_LENGTHS, TARGET_LENGTHS, None, **attrs)


def test_ctc_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    args = (torch.tensor(PADDED), torch.tensor(INPUT_LENGTHS), torch.tensor(TARGET_LENGTHS))
    for reduction in ("none", "sum", "mean"):
        for blank in (0, 2):
            expected = tf.ctc_loss(torch.tensor(LP), *args, blank=blank, reduction=reduction)
            got = _call(LP, reduction=reduction, blank=blank)
            np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10)
    # through log_softmax (how CTC is used) the gradients of the logits agree ...
    logits = torch.tensor(LOGITS, requires_grad=True)
    tf.ctc_loss(logits.log_softmax(2), *args).backward()
    x = nb.tensor(LOGITS, requires_grad=True)
    _call_t(nb.log_softmax(x, axis=2)).backward()
    np.testing.assert_allclose(x.grad.numpy(), logits.grad.numpy(), rtol=1e-9, atol=1e-12)
    # ... while, with respect to log_probs, PyTorch adds exp(log_probs) over each input's frames
    lp_t = torch.tensor(LP, requires_grad=True)
    tf.ctc_loss(lp_t, *args).backward()
    lp = nb.tensor(LP, requires_grad=True)
    _call_t(lp).backward()
    frames = (np.arange(T)[:, None] < INPUT_LENGTHS)[..., None]
    scale = 1 / np.maximum(TARGET_LENGTHS, 1)[None, :, None] / N
    torch_minus_ours = lp_t.grad.numpy() - lp.grad.numpy()
    np.testing.assert_allclose(torch_minus_ours, np.exp(LP) * frames * scale, atol=1e-12)


# ---------------------------------------------------------------- margin losses

X = RNG.standard_normal((4, 5))
Y = np.array([1, 0, 4, 1])
W = RNG.uniform(0.5, 2.0, 5)


def multi_margin_ref(x, y, p=1, margin=1.0, w=None):
    """PyTorch's MultiMarginLoss: sum over i != y of w[y] max(0, margin - x[y] + x[i])^p / C
    (its kernel weighs the powered hinge; the documentation writes w[y] inside the max)."""
    out = []
    for row, t in zip(np.atleast_2d(x), np.atleast_1d(y)):
        hinge = np.maximum(0, margin - row[t] + row) ** p
        hinge[t] = 0
        out.append((1.0 if w is None else w[t]) * hinge.sum() / row.size)
    return np.array(out)


@pytest.mark.parametrize("p, margin, weighted", [(1, 1.0, False), (2, 0.5, True), (1, 2.0, True)])
def test_multi_margin_loss_matches_numpy(p, margin, weighted):
    w = W if weighted else None
    expected = multi_margin_ref(X, Y, p, margin, w)
    weight = nb.tensor(w) if weighted else None
    for reduction, reduce in (("none", lambda a: a), ("sum", np.sum), ("mean", np.mean)):
        got = F.multi_margin_loss(
            nb.tensor(X), nb.tensor(Y), p, margin, weight, reduction=reduction
        )
        np.testing.assert_allclose(got.numpy(), reduce(expected), rtol=1e-12)
    one = F.multi_margin_loss(nb.tensor(X[2]), nb.tensor(Y[2]), p, margin, weight, reduction="none")
    assert one.shape == ()
    np.testing.assert_allclose(one.numpy(), expected[2], rtol=1e-12)
    module = nn.MultiMarginLoss(p=p, margin=margin, weight=weight, reduction="sum")
    np.testing.assert_allclose(module(nb.tensor(X), nb.tensor(Y)).numpy(), expected.sum())
    nt.gradcheck(
        lambda a, v: F.multi_margin_loss(a, nb.tensor(Y), p, margin, v),
        [nb.tensor(X, requires_grad=True), nb.tensor(W, requires_grad=True)],
    )
    nt.check_modes(lambda a: F.multi_margin_loss(a, nb.tensor(Y), p, margin, weight), X)


def test_multi_margin_loss_errors():
    x, y = nb.tensor(X), nb.tensor(Y)
    with pytest.raises(nb.DomainError, match="p == 1 and p == 2"):
        F.multi_margin_loss(x, y, p=3)
    with pytest.raises(ValueError, match="p == 1"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(nb.OutOfRangeError, match="label 5"):
        F.multi_margin_loss(x, nb.tensor([1, 5, 0, 0]))
    with pytest.raises(nb.OutOfRangeError, match="label -1"):  # (no wrap-around)
        nb.jit(lambda a: F.multi_margin_loss(a, nb.tensor([1, -1, 0, 0])))(x)
    with pytest.raises(nb.ShapeError, match="target"):
        F.multi_margin_loss(x, nb.tensor([1, 2, 0]))
    with pytest.raises(nb.ShapeError, match="weight"):
        F.multi_margin_loss(x, y, weight=nb.ones(3, dtype="float64"))
    with pytest.raises(nb.ShapeError, match="weight"):
        F.multi_margin_loss(x, y, weight=nb.ones(5, 1, dtype="float64"))


LABELS = np.array([[3, 0, -1, 1, 1], [1, 1, 4, -1, -1], [-1, 2, 2, 2, 2], [0, 1, 2, 3, 4]])


def multilabel_margin_ref(x, y):
    """PyTorch's MultiLabelMarginLoss: sum over the targets j (up to the first -1) and the
    classes i that are not targets of max(0, 1 - (x[j] - x[i])) / C."""
    out = []
    for row, labels in zip(np.atleast_2d(x), np.atleast_2d(y)):
        targets = list(itertools.takewhile(lambda c: c != -1, labels))
        others = [i for i in range(row.size) if i not in targets]
        out.append(sum(max(0, 1 - (row[j] - row[i])) for j in targets for i in others) / row.size)
    return np.array(out)


def test_multilabel_margin_loss_matches_numpy():
    expected = multilabel_margin_ref(X, LABELS)
    assert expected[0] > 0 and expected[2] == 0 and expected[3] == 0  # none, all targets
    for reduction, reduce in (("none", lambda a: a), ("sum", np.sum), ("mean", np.mean)):
        got = F.multilabel_margin_loss(nb.tensor(X), nb.tensor(LABELS), reduction=reduction)
        np.testing.assert_allclose(got.numpy(), reduce(expected), rtol=1e-12)
    one = F.multilabel_margin_loss(nb.tensor(X[1]), nb.tensor(LABELS[1]), reduction="none")
    assert one.shape == ()
    np.testing.assert_allclose(one.numpy(), expected[1], rtol=1e-12)
    module = nn.MultiLabelMarginLoss()
    np.testing.assert_allclose(module(nb.tensor(X), nb.tensor(LABELS)).numpy(), expected.mean())
    nt.gradcheck(
        lambda a: F.multilabel_margin_loss(a, nb.tensor(LABELS)), [nb.tensor(X, requires_grad=True)]
    )
    nt.check_modes(lambda a: F.multilabel_margin_loss(a, nb.tensor(LABELS)), X)


def test_multilabel_margin_loss_errors():
    x = nb.tensor(X)
    bad = LABELS.copy()
    bad[0, 4] = 5  # after the -1 still checked, as PyTorch does
    with pytest.raises(nb.OutOfRangeError, match="label 5"):
        F.multilabel_margin_loss(x, nb.tensor(bad))
    bad[0, 4] = -2
    with pytest.raises(nb.OutOfRangeError, match="label -2"):
        nb.jit(lambda a: F.multilabel_margin_loss(a, nb.tensor(bad)))(x)
    with pytest.raises(nb.ShapeError, match="input's shape"):
        F.multilabel_margin_loss(x, nb.tensor(LABELS[:, :3]))
    with pytest.raises(nb.ShapeError, match=r"\(N, C\)"):
        F.multilabel_margin_loss(nb.tensor(X[None]), nb.tensor(LABELS[None]))


A, P, NEG = (RNG.standard_normal((4, 3)) for _ in range(3))
P[:2], NEG[:2] = A[:2] * 1.05, -A[:2]  # near positives, far negatives: no loss for two


def _distance(a, b):
    return np.linalg.norm(a - b + 1e-6, axis=-1)  # PyTorch's pairwise_distance


def triplet_ref(a, p, n, margin=1.0, swap=False, distance=_distance):
    d_neg = distance(a, n)
    if swap:
        d_neg = np.minimum(d_neg, distance(p, n))
    return np.maximum(0, margin + distance(a, p) - d_neg)


def _cosine_distance(a, b):
    return 1 - F.cosine_similarity(a, b, dim=-1)


def _cosine_distance_ref(a, b):
    cos = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1), 1e-8)
    return 1 - cos / np.maximum(np.linalg.norm(b, axis=-1), 1e-8)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss_matches_numpy(swap, custom):
    fn = _cosine_distance if custom else None
    expected = triplet_ref(A, P, NEG, 0.7, swap, _cosine_distance_ref if custom else _distance)
    assert 0 < np.count_nonzero(expected) < expected.size  # both sides of the hinge
    inputs = [nb.tensor(v) for v in (A, P, NEG)]
    for reduction, reduce in (("none", lambda a: a), ("sum", np.sum), ("mean", np.mean)):
        got = F.triplet_margin_with_distance_loss(
            *inputs, distance_function=fn, margin=0.7, swap=swap, reduction=reduction
        )
        np.testing.assert_allclose(got.numpy(), reduce(expected), rtol=1e-12)
    module = nn.TripletMarginWithDistanceLoss(distance_function=fn, margin=0.7, swap=swap)
    np.testing.assert_allclose(module(*inputs).numpy(), expected.mean(), rtol=1e-12)

    def loss(a, p, n):
        return F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=fn, margin=0.7, swap=swap
        )

    nt.gradcheck(loss, [nb.tensor(v, requires_grad=True) for v in (A, P, NEG)])
    nt.check_modes(loss, A, P, NEG)


def test_triplet_margin_with_distance_loss_errors():
    a, p, n = (nb.tensor(v) for v in (A, P, NEG))
    with pytest.raises(nb.DomainError, match="greater than 0"):
        F.triplet_margin_with_distance_loss(a, p, n, margin=0)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(nb.ShapeError, match="same number of dims"):
        F.triplet_margin_with_distance_loss(a, p, n[0])
    with pytest.raises(TypeError):
        F.triplet_margin_with_distance_loss(a, p, n, None)  # keyword-only, as PyTorch
    with pytest.raises(nb.AttrError, match="reduction"):
        F.triplet_margin_with_distance_loss(a, p, n, reduction="avg")


def test_nll_loss_2d_is_the_deprecated_nll_loss():
    x = nb.log_softmax(nb.tensor(RNG.standard_normal((2, 3, 2, 2))), axis=1)
    t = nb.tensor(RNG.integers(0, 3, (2, 2, 2)))
    with pytest.warns(FutureWarning, match="NLLLoss"):
        loss = nn.NLLLoss2d(ignore_index=1, reduction="sum")
    np.testing.assert_array_equal(loss(x, t).numpy(), nn.NLLLoss(None, 1, "sum")(x, t).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert nn.NLLLoss2d(size_average=False).reduction == "sum"
        assert nn.NLLLoss2d(reduce=False).reduction == "none"


def test_the_other_margin_losses_have_modules():
    for name in ("CosineEmbeddingLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss"):
        assert issubclass(getattr(nn, name), nn.Module)


def test_margin_losses_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    t = torch.tensor
    for p, margin in ((1, 1.0), (2, 0.5)):
        expected = tf.multi_margin_loss(t(X), t(Y), p, margin, t(W), reduction="none")
        got = F.multi_margin_loss(
            nb.tensor(X), nb.tensor(Y), p, margin, nb.tensor(W), reduction="none"
        )
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    expected = tf.multilabel_margin_loss(t(X), t(LABELS), reduction="none")
    got = F.multilabel_margin_loss(nb.tensor(X), nb.tensor(LABELS), reduction="none")
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    for swap in (False, True):
        expected = tf.triplet_margin_with_distance_loss(t(A), t(P), t(NEG), swap=swap)
        got = F.triplet_margin_with_distance_loss(*(nb.tensor(v) for v in (A, P, NEG)), swap=swap)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
