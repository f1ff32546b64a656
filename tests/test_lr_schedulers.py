"""The learning-rate schedules added for PyTorch users: their lr sequence over 50 steps against
closed forms written here and against PyTorch (1e-12), momentum cycling, state round trips and
bad arguments."""

import math

import pytest

import nbflow as nb
from nbflow import optim
from nbflow.optim import lr_scheduler as sched

STEPS = 50
LR = 0.1


def _sgd(lr=LR, momentum=0.9):
    return optim.SGD([nb.tensor([1.0], requires_grad=True)], lr=lr, momentum=momentum)


def _sequence(opt, scheduler, steps=STEPS, momentum=None):
    """lr (and momentum) before each of `steps` steps."""
    lrs, moms = [], []
    for _ in range(steps):
        lrs.append(opt.lr)
        if momentum:
            moms.append(opt.hyper[momentum])
        scheduler.step()
    return (lrs, moms) if momentum else lrs


class _Together:
    """Schedules on one optimizer, each stepped at every epoch (no ChainedScheduler)."""

    def __init__(self, *schedulers):
        self.schedulers = schedulers

    def step(self):
        for s in self.schedulers:
            s.step()


# each case: (nbflow's and PyTorch's constructor from an optimizer, closed form of epoch or None)
CASES = {
    "stepped together": (
        lambda o, m: _Together(
            m.LinearLR(o, start_factor=0.2, total_iters=5), m.ExponentialLR(o, gamma=0.9)
        ),
        lambda t: LR * (0.2 + 0.8 * min(t, 5) / 5) * 0.9**t,
    ),
    "cosine and step stepped together": (
        lambda o, m: _Together(
            m.CosineAnnealingLR(o, T_max=10, eta_min=0.001), m.StepLR(o, step_size=7, gamma=0.5)
        ),
        None,
    ),
    "linear": (
        lambda o, m: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=7),
        lambda t: LR * (0.25 + 0.65 * min(t, 7) / 7),
    ),
    "constant": (
        lambda o, m: m.ConstantLR(o, factor=0.5, total_iters=4),
        lambda t: LR * (0.5 if t < 4 else 1.0),
    ),
    "polynomial": (
        lambda o, m: m.PolynomialLR(o, total_iters=30, power=2.0),
        lambda t: LR * (1 - min(t, 30) / 30) ** 2,
    ),
    "multiplicative": (
        lambda o, m: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.95 if e % 2 else 0.99),
        lambda t: LR * math.prod(0.95 if e % 2 else 0.99 for e in range(1, t + 1)),
    ),
    "warm restarts": (
        lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
        None,
    ),
    "warm restarts T_mult 1": (
        lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=7),
        lambda t: LR * (1 + math.cos(math.pi * (t % 7) / 7)) / 2,
    ),
    "one cycle cos": (
        lambda o, m: m.OneCycleLR(o, max_lr=1.0, total_steps=STEPS),
        None,
    ),
    "one cycle linear three phase": (
        lambda o, m: m.OneCycleLR(
            o, max_lr=0.5, epochs=5, steps_per_epoch=10, anneal_strategy="linear", three_phase=True
        ),
        None,
    ),
    "one cycle no momentum": (
        lambda o, m: m.OneCycleLR(
            o, max_lr=0.3, total_steps=60, pct_start=0.5, cycle_momentum=False
        ),
        None,
    ),
    "cyclic triangular": (
        lambda o, m: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
        lambda t: 0.01 + 0.09 * (1 - abs(t / 4 - 2 * math.floor(1 + t / 8) + 1)),
    ),
    "cyclic triangular2": (
        lambda o, m: m.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5, mode="triangular2"),
        None,
    ),
    "cyclic exp_range": (
        lambda o, m: m.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.97),
        None,
    ),
    "sequential": (
        lambda o, m: m.SequentialLR(
            o,
            [m.LinearLR(o, start_factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9)],
            milestones=[5],
        ),
        lambda t: LR * (0.1 + 0.9 * t / 5) if t < 5 else LR * 0.9 ** (t - 5),
    ),
    "sequential three": (
        lambda o, m: m.SequentialLR(
            o,
            [
                m.ConstantLR(o, factor=0.5, total_iters=3),
                m.StepLR(o, step_size=4, gamma=0.5),
                m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
            ],
            milestones=[6, 20],
        ),
        None,
    ),
    "chained": (
        lambda o, m: m.ChainedScheduler(
            [m.ConstantLR(o, factor=0.1, total_iters=3), m.ExponentialLR(o, gamma=0.9)]
        ),
        lambda t: LR * (0.1 if t < 3 else 1.0) * 0.9**t,
    ),
    "chained cosine with eta_min": (
        lambda o, m: m.ChainedScheduler(
            [m.CosineAnnealingLR(o, T_max=6, eta_min=0.01), m.ExponentialLR(o, gamma=0.95)]
        ),
        None,
    ),
    "chained three": (
        lambda o, m: m.ChainedScheduler(
            [
                m.LinearLR(o, start_factor=0.2, total_iters=10),
                m.StepLR(o, step_size=7, gamma=0.5),
                m.PolynomialLR(o, total_iters=40, power=0.5),
            ]
        ),
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(name for name, (_, f) in CASES.items() if f))
def test_lr_sequence_matches_the_closed_form(case):
    make, closed = CASES[case]
    opt = _sgd()
    lrs = _sequence(opt, make(opt, sched))
    for t, lr in enumerate(lrs):
        assert lr == pytest.approx(closed(t), rel=1e-12, abs=1e-15), t


@pytest.mark.parametrize("case", sorted(CASES))
def test_lr_sequence_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    make, _ = CASES[case]
    opt = _sgd()
    ours = _sequence(opt, make(opt, sched))
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=LR, momentum=0.9)
    theirs_scheduler = make(topt, torch.optim.lr_scheduler)
    theirs = []
    for _ in range(STEPS):
        theirs.append(topt.param_groups[0]["lr"])
        topt.step()
        theirs_scheduler.step()
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def _written_midway(opt, scheduler):
    """The lr sequence with the lr written by hand before the fourth step (an nbflow or a
    PyTorch optimizer and schedule)."""
    lrs = []
    for t in range(8):
        if t == 3:
            opt.param_groups[0]["lr"] = 0.05
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return lrs


def test_a_written_lr_is_carried_on_by_a_chainable_schedule_and_replaced_by_others():
    opt = _sgd()
    chained = _written_midway(opt, sched.ExponentialLR(opt, gamma=0.9))
    assert chained == pytest.approx([LR, LR * 0.9, LR * 0.81] + [0.05 * 0.9**k for k in range(5)])
    opt = _sgd()
    closed = _written_midway(opt, sched.LambdaLR(opt, lambda e: 0.9**e))  # PyTorch's too
    assert closed[4:] == pytest.approx([LR * 0.9**t for t in range(4, 8)])


def test_a_written_lr_is_followed_as_pytorch_follows_it():
    torch = pytest.importorskip("torch")
    for make in (
        lambda o, m: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
        lambda o, m: m.MultiStepLR(o, milestones=[2, 5], gamma=0.3),
        lambda o, m: m.OneCycleLR(o, max_lr=1.0, total_steps=20),
    ):
        opt = _sgd()
        topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=LR, momentum=0.9)
        expected = _written_midway(topt, make(topt, torch.optim.lr_scheduler))
        ours = _written_midway(opt, make(opt, sched))
        assert ours == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("kind", ["one cycle", "cyclic"])
@pytest.mark.parametrize("adam", [False, True])
def test_momentum_cycles_like_pytorch(kind, adam):
    torch = pytest.importorskip("torch")

    def make(o, m):
        if kind == "one cycle":
            return m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS, three_phase=True)
        return m.CyclicLR(o, 0.01, 0.1, step_size_up=6, mode="triangular2")

    opt = optim.Adam([nb.tensor([1.0], requires_grad=True)]) if adam else _sgd()
    name = "beta1" if adam else "momentum"
    lrs, moms = _sequence(opt, make(opt, sched), momentum=name)
    p = [torch.zeros(1, requires_grad=True)]
    topt = torch.optim.Adam(p) if adam else torch.optim.SGD(p, lr=LR, momentum=0.9)
    ts = make(topt, torch.optim.lr_scheduler)
    tlrs, tmoms = [], []
    for _ in range(STEPS):
        group = topt.param_groups[0]
        tlrs.append(group["lr"])
        tmoms.append(group["betas"][0] if adam else group["momentum"])
        topt.step()
        ts.step()
    assert lrs == pytest.approx(tlrs, rel=1e-12, abs=1e-15)
    assert moms == pytest.approx(tmoms, rel=1e-12, abs=1e-15)


def test_one_cycle_closed_form_and_end():
    opt = _sgd()
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3, cycle_momentum=False)
    assert opt.lr == pytest.approx(1.0 / 25)
    for _ in range(2):
        s.step()
    assert opt.lr == pytest.approx(1.0)  # the peak at pct_start * total - 1
    for _ in range(7):
        s.step()
    assert opt.lr == pytest.approx(1.0 / 25 / 1e4)  # the minimum at the last step
    s.step()  # step total_steps is allowed, one more is not (as in PyTorch)
    with pytest.raises(ValueError, match="total steps"):
        s.step()


def test_cycle_momentum_needs_momentum():
    opt = optim.Adagrad([nb.tensor([1.0], requires_grad=True)])
    with pytest.raises(ValueError, match="momentum"):
        sched.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    with pytest.raises(ValueError, match="momentum"):
        sched.CyclicLR(opt, 0.01, 0.1)
    sched.CyclicLR(opt, 0.01, 0.1, cycle_momentum=False)
    assert opt.lr == 0.01


def test_warm_restarts_step_with_an_epoch():
    opt = _sgd()
    s = sched.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2)
    s.step(2.0)
    assert opt.lr == pytest.approx(LR * (1 + math.cos(math.pi * 2 / 4)) / 2)
    s.step(4 + 8 + 3.5)  # the third period (16 long), 3.5 into it
    assert opt.lr == pytest.approx(LR * (1 + math.cos(math.pi * 3.5 / 16)) / 2)
    with pytest.raises(ValueError):
        s.step(-1)


def test_warm_restarts_go_on_from_a_fractional_epoch_as_pytorch():
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.zeros(1))
    theirs_opt = torch.optim.SGD([p], lr=LR)
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs_opt, 2, 2, 0.1 * LR)
    opt = _sgd()
    ours = sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.1 * LR)
    for epoch in [0.5, None, None, None, 3.25, None, None, 7, None]:
        for s in (theirs, ours):
            s.step() if epoch is None else s.step(epoch)
        assert opt.lr == pytest.approx(theirs_opt.param_groups[0]["lr"], rel=1e-12)
    resumed = sched.CosineAnnealingWarmRestarts(_sgd(), T_0=2, T_mult=2, eta_min=0.1 * LR)
    resumed.load_state_dict(ours.state_dict())
    assert resumed.get_last_lr() == ours.get_last_lr()
    older = {k: v for k, v in ours.state_dict().items() if k != "fraction"}
    resumed.load_state_dict(older)  # a state saved before the fraction was kept
    assert resumed.fraction == 0.0


@pytest.mark.parametrize("case", ["polynomial", "cyclic triangular2", "sequential", "chained"])
def test_state_dict_resumes_the_sequence(case):
    make, _ = CASES[case]
    opt = _sgd()
    whole = _sequence(opt, make(opt, sched), steps=20)
    opt = _sgd()
    s = make(opt, sched)
    _sequence(opt, s, steps=9)
    saved = s.state_dict()
    opt2 = _sgd()
    s2 = make(opt2, sched)
    s2.load_state_dict(saved)
    assert _sequence(opt2, s2, steps=11) == pytest.approx(whole[9:], rel=1e-15)


@pytest.mark.parametrize(
    "make",
    [
        lambda o: sched.LinearLR(o, start_factor=0.0),
        lambda o: sched.ConstantLR(o, factor=2.0),
        lambda o: sched.PolynomialLR(o, total_iters=0),
        lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda o: sched.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
        lambda o: sched.OneCycleLR(o, max_lr=1.0),
        lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5),
        lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="step"),
        lambda o: sched.CyclicLR(o, 0.01, 0.1, mode="square"),
        lambda o: sched.SequentialLR(o, [sched.ConstantLR(o)], milestones=[3]),
        lambda o: sched.SequentialLR(o, [sched.ConstantLR(_sgd())], milestones=[]),
        lambda o: sched.ChainedScheduler([sched.ConstantLR(o), sched.ConstantLR(_sgd())]),
    ],
)
def test_bad_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make(_sgd())


def test_multiplicative_needs_a_callable():
    with pytest.raises(TypeError):
        sched.MultiplicativeLR(_sgd(), lr_lambda=0.9)


def test_multiplicative_calls_its_factor_once_per_step_and_resumes():
    calls = []

    def factor(epoch):
        calls.append(epoch)
        return 0.9

    opt = optim.SGD([nb.tensor([1.0], requires_grad=True)], lr=1.0)
    s = sched.MultiplicativeLR(opt, factor)
    for _ in range(50):
        s.step()
    assert calls == list(range(1, 51))  # (the product was recomputed from 1 at every step)
    assert math.isclose(s.get_last_lr()[0], 0.9**50)
    again = sched.MultiplicativeLR(
        optim.SGD([nb.tensor([1.0], requires_grad=True)], lr=1.0), factor
    )
    again.load_state_dict(s.state_dict())
    assert math.isclose(again.get_last_lr()[0], 0.9**50)


def test_chained_scheduler_keeps_a_frozen_group_at_zero():
    groups = [{"params": [nb.tensor([1.0], requires_grad=True)], "lr": 0.1}]
    groups.append({"params": [nb.tensor([2.0], requires_grad=True)], "lr": 0.0})
    opt = optim.SGD(groups)
    chained = sched.ChainedScheduler([sched.ExponentialLR(opt, 0.9), sched.StepLR(opt, 2)])
    chained.step()
    lrs = chained.get_last_lr()
    assert math.isclose(lrs[0], 0.09) and lrs[1] == 0.0


@pytest.mark.parametrize("name", ["LambdaLR", "MultiplicativeLR"])
def test_lambda_schedules_take_one_function_per_group(name):
    w, b = (nb.tensor([1.0], requires_grad=True) for _ in range(2))
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    fns = [lambda e: 0.9**e, lambda e: 1.0 / (1 + e)]
    scheduler = getattr(sched, name)(opt, lr_lambda=fns)
    got = []
    for _ in range(6):
        got.append([g["lr"] for g in opt.param_groups])
        scheduler.step()
    for e, (lr_w, lr_b) in enumerate(got):
        if name == "LambdaLR":
            want = [0.1 * fns[0](e), 0.5 * fns[1](e)]
        else:  # the product of the factors of epochs 1..e
            want = [base * math.prod(f(k) for k in range(1, e + 1)) for base, f in
                    zip((0.1, 0.5), fns)]  # fmt: skip
        assert [lr_w, lr_b] == pytest.approx(want, rel=1e-12)
    state = scheduler.state_dict()
    assert "lr_lambdas" not in state  # (code, as PyTorch leaves it out)
    with pytest.raises(ValueError, match="expected 2 values for lr_lambda"):
        getattr(sched, name)(opt, lr_lambda=fns[:1])
    with pytest.raises(TypeError, match="callable"):
        getattr(sched, name)(opt, lr_lambda=[fns[0], 0.5])


PER_GROUP = {
    "one cycle": lambda o, m, v: m.OneCycleLR(
        o, max_lr=v["max_lr"], total_steps=30, base_momentum=v["base"], max_momentum=v["max"]
    ),
    "cyclic": lambda o, m, v: m.CyclicLR(
        o, v["base_lr"], v["max_lr"], step_size_up=4, base_momentum=v["base"], max_momentum=v["max"]
    ),
}
VALUES = {"max_lr": [0.5, 0.1], "base_lr": [0.01, 0.002], "base": [0.8, 0.7], "max": [0.9, 0.95]}


def _two_groups(lib):
    if lib == "nbflow":
        w, b = (nb.tensor([1.0], requires_grad=True) for _ in range(2))
        return optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    torch = pytest.importorskip("torch")
    w, b = (torch.nn.Parameter(torch.ones(1)) for _ in range(2))
    return torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)


def _trace(opt, scheduler, steps=25):
    out = []
    for _ in range(steps):
        out.append([(g["lr"], g["momentum"]) for g in opt.param_groups])
        if hasattr(opt, "_groups"):  # (PyTorch warns when its scheduler steps first)
            scheduler.step()
        else:
            opt.step()
            scheduler.step()
    return out


@pytest.mark.parametrize("name", sorted(PER_GROUP))
def test_cyclic_schedules_take_values_per_group(name):
    opt = _two_groups("nbflow")
    got = _trace(opt, PER_GROUP[name](opt, sched, VALUES))
    for g in range(2):  # each group follows the one-group schedule of its own values
        single = _sgd(momentum=0.9)
        values = {k: v[g] for k, v in VALUES.items()}
        alone = _trace(single, PER_GROUP[name](single, sched, values))
        flat, want = [x for row in got for x in row[g]], [x for row in alone for x in row[0]]
        assert flat == pytest.approx(want, rel=1e-12)
    opt = _two_groups("nbflow")
    scheduler = PER_GROUP[name](opt, sched, VALUES)
    per_group = {"max_lr", "initial", "min_lr", "base_momentum", "max_momentum"}
    old = {k: v[0] if k in per_group else v for k, v in scheduler.state_dict().items()}
    scheduler.load_state_dict(old)  # a state saved when the values were one number
    assert scheduler.max_lr == [VALUES["max_lr"][0]] * 2
    with pytest.raises(ValueError, match="expected 2 values for max_lr"):
        PER_GROUP[name](_two_groups("nbflow"), sched, {**VALUES, "max_lr": [0.5]})


@pytest.mark.parametrize("name", sorted(PER_GROUP))
def test_cyclic_schedules_per_group_match_pytorch(name):
    torch = pytest.importorskip("torch")
    topt = _two_groups("torch")
    want = _trace(topt, PER_GROUP[name](topt, torch.optim.lr_scheduler, VALUES))
    opt = _two_groups("nbflow")
    got = _trace(opt, PER_GROUP[name](opt, sched, VALUES))
    assert [x for row in got for g in row for x in g] == pytest.approx(
        [x for row in want for g in row for x in g], rel=1e-12, abs=1e-15
    )
