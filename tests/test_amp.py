"""nbflow.autocast and nbflow.amp.GradScaler (nbflow/eager/amp.py): which ops run in float16,
values against numpy's float16 rounding, gradients against float32 ones, traced programs,
and the scaler's steps, skips and scale schedule (PyTorch's documented algorithm)."""

from __future__ import annotations

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def test_lower_precision_and_float32_ops():
    x, w = nb.tensor(rand(5, 4)), nb.tensor(rand(3, 4, seed=1))
    with nb.autocast("cpu"):
        assert nb.is_autocast_enabled() and nb.get_autocast_dtype("cpu") == nb.float16
        assert (x @ w.T).dtype == nb.float16
        assert nb.linear(x, w).dtype == nb.float16
        image = nb.tensor(rand(1, 2, 5, 5))
        assert nb.conv2d(image, nb.tensor(rand(3, 2, 3, 3))).dtype == nb.float16
        h = x @ w.T
        assert nb.softmax(h, axis=1).dtype == nb.float32  # float16 in, float32 out
        assert nb.sum(h).dtype == nb.float32
        assert nb.cross_entropy(h, nb.tensor([0, 1, 2, 0, 1])).dtype == nb.float32
        assert (h + x[:, :3]).dtype == nb.float32  # other ops promote as always
        assert nb.relu(h).dtype == nb.float16
        d = nb.tensor(rand(2, 2, dtype=np.float64))
        assert (d @ d).dtype == nb.float64  # float64 is never cast
        i = nb.tensor(np.arange(4).reshape(2, 2))
        assert (i @ i).dtype == nb.int64
        with nb.autocast(enabled=False):
            assert not nb.is_autocast_enabled() and (x @ w.T).dtype == nb.float32
        assert (x @ w.T).dtype == nb.float16
    assert not nb.is_autocast_enabled() and (x @ w.T).dtype == nb.float32


def test_values_are_float16_rounding_of_float16_inputs():
    a, b = rand(6, 5), rand(5, 7, seed=1)
    with nb.autocast():
        got = (nb.tensor(a) @ nb.tensor(b)).numpy()
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    want = (a16.astype(np.float64) @ b16.astype(np.float64)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3)


def _mlp(seed=0):
    g = nb.Generator(seed)
    return nn.Sequential(nn.Linear(6, 16, generator=g), nn.Tanh(), nn.Linear(16, 3, generator=g))


def test_gradients_reach_float32_parameters_close_to_float32_ones():
    x, y = nb.tensor(rand(32, 6)), nb.tensor(np.arange(32) % 3)
    reference, model = _mlp(), _mlp()
    nb.cross_entropy(reference(x), y).backward()
    with nb.autocast():
        loss = nb.cross_entropy(model(x), y)
        loss.backward()  # inside the region: the gradient rules keep their forward dtypes
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad.dtype == nb.float32, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-2, atol=2e-3)


def test_decorator_and_traced_functions_keep_their_own_programs():
    model = _mlp()
    x = nb.tensor(rand(4, 6))

    @nb.autocast()
    def half_forward(x):
        return model(x)

    assert half_forward(x).dtype == nb.float16
    traced = nb.jit(lambda x: model(x))
    with nb.autocast():
        inside = traced(x)
    outside = traced(x)  # not the trace made inside autocast
    assert inside.dtype == nb.float16 and outside.dtype == nb.float32
    np.testing.assert_allclose(inside.numpy(), outside.numpy(), rtol=1e-2, atol=1e-2)


def test_a_parameter_cast_once_is_recast_after_an_in_place_update():
    model = nn.Linear(3, 2, generator=nb.Generator(0))
    x = nb.tensor(rand(4, 3))
    with nb.autocast():
        model(x)  # casts the weight and bias (cached for the region)
        with nb.no_grad():
            model.weight.mul_(2.0)
            model.bias.zero_()
        second = model(x).numpy()  # a stale cached cast would still read the old values
    want = (x.numpy() @ model.weight.numpy().T).astype(np.float16)
    np.testing.assert_allclose(second, want, rtol=2e-3, atol=2e-3)


def test_autocast_with_the_nan_check_either_way_round():
    x = nb.tensor(rand(3, 3))
    with nb.check_nan_inf(), nb.autocast():
        assert (x @ x).dtype == nb.float16
    with nb.autocast(), nb.check_nan_inf():
        assert (x @ x).dtype == nb.float16
        with pytest.raises(nb.NumericalError):
            x @ nb.tensor(np.full((3, 3), 1e5, np.float32))  # beyond float16: inf
    assert (x @ x).dtype == nb.float32 and type(nb.core.STATE.trace).__name__ == "EagerTrace"


def test_bad_autocast_arguments():
    with pytest.raises(nb.DTypeError, match="bfloat16"):
        nb.autocast("cpu", dtype="bfloat16")
    with pytest.raises(nb.DTypeError, match="float16"):
        nb.autocast("cpu", dtype=nb.float32)
    with pytest.raises(ValueError, match="device_type"):
        nb.autocast("tpu")


# ---------------------------------------------------------------- GradScaler


def _train(steps, scaler=None, lr=0.1):
    model = _mlp(seed=1)
    optimizer = nb.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(steps):
        x, y = nb.tensor(rand(8, 6, seed=step)), nb.tensor(np.arange(8) % 3)
        optimizer.zero_grad()
        loss = nb.cross_entropy(model(x), y)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    return model


def test_scaling_by_powers_of_two_leaves_training_bit_identical():
    plain, scaled = _train(5), _train(5, nb.amp.GradScaler())
    for p, q in zip(plain.parameters(), scaled.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_scaler_rescues_gradients_that_float16_flushes_to_zero():
    x = nb.tensor(rand(4, 4))

    def grad_of_first_layer(scaler):
        model = nn.Sequential(nn.Linear(4, 4, generator=nb.Generator(0)), nn.Linear(4, 1))
        optimizer = nb.optim.SGD(model.parameters(), lr=0.0)
        with nb.autocast():
            loss = 1e-9 * model(x).sum()
        (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.unscale_(optimizer)
        return model[0].weight.grad.numpy(), model

    unscaled, _ = grad_of_first_layer(None)
    assert not unscaled.any()  # 1e-9 is below float16's smallest subnormal
    rescued, model = grad_of_first_layer(nb.amp.GradScaler())
    w2 = model[1].weight.numpy().astype(np.float64)
    want = 1e-9 * np.broadcast_to(w2.T, (4, 4)) * x.numpy().sum(0)  # d/dW1 of sum(W2 W1 x)
    # (the smallest entries, scaled, are float16 subnormals: a few bits of precision)
    np.testing.assert_allclose(rescued, want, rtol=5e-3, atol=2e-3 * np.abs(want).max())


def test_a_step_with_inf_is_skipped_and_the_scale_backs_off_then_grows():
    scaler = nb.amp.GradScaler(init_scale=1024.0, growth_interval=2)
    p = nb.tensor([1.0, 2.0], requires_grad=True)
    optimizer = nb.optim.SGD([p], lr=1.0)
    scales = []
    for bad in (True, False, False, False):
        optimizer.zero_grad()
        loss = (p * nb.tensor([np.inf if bad else 1.0, 1.0])).sum()
        before = p.numpy().copy()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        if bad:
            np.testing.assert_array_equal(p.numpy(), before)  # skipped
        else:
            np.testing.assert_array_equal(p.numpy(), before - 1.0)  # the unscaled gradient
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [512.0, 512.0, 1024.0, 1024.0]


def test_unscale_then_clip_then_step():
    scaler = nb.amp.GradScaler(init_scale=8.0)
    p = nb.tensor([3.0, 4.0], requires_grad=True)
    optimizer = nb.optim.SGD([p], lr=1.0)
    scaler.scale((p * p).sum() / 2).backward()  # gradient p, scaled by 8
    np.testing.assert_array_equal(p.grad.numpy(), [24.0, 32.0])
    scaler.unscale_(optimizer)
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 4.0])
    nb.nn.utils.clip_grad_norm_([p], max_norm=1.0)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)  # not unscaled a second time
    np.testing.assert_allclose(p.numpy(), [3.0 - 0.6, 4.0 - 0.8], rtol=1e-6)
    scaler.update()


def test_scaler_errors_state_and_disabled():
    scaler = nb.amp.GradScaler(init_scale=4.0, growth_interval=7)
    with pytest.raises(RuntimeError, match="No inf checks"):
        scaler.update()
    half = nb.tensor(np.ones(2, np.float16), requires_grad=True)
    (half * 2).sum().backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        scaler.unscale_(nb.optim.SGD([half], lr=1.0))
    state = scaler.state_dict()
    other = nb.amp.GradScaler()
    other.load_state_dict(state)
    assert other.get_scale() == 4.0 and other.get_growth_interval() == 7
    off = nb.amp.GradScaler(enabled=False)
    loss = nb.tensor(2.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth factor"):
        nb.amp.GradScaler(growth_factor=1.0)
