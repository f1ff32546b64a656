"""nbflow.compile (PyTorch's torch.compile as nbflow.jit): a compiled module trains as the
eager one does, keeps PyTorch's state_dict keys and forwards attributes; the function and
decorator forms; the options it accepts and those it refuses."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow.graph.jit import JitFunction


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 8)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(8, 3)
        self.note = "kept on the original"

    def forward(self, x):
        return self.out(self.drop(nb.relu(self.fc(x))))


def _train(model, steps=3):
    nb.manual_seed(0)
    rng = np.random.default_rng(1)
    opt = nb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        x = nb.tensor(rng.standard_normal((4, 5)).astype(np.float32))
        y = nb.tensor(rng.integers(0, 3, 4))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_a_compiled_module_trains_as_the_eager_one():
    nb.manual_seed(3)
    eager = Net().eval()  # (dropout off: the two runs draw their masks differently)
    twin = Net().eval()
    twin.load_state_dict(eager.state_dict())
    compiled = nb.compile(twin)
    assert isinstance(compiled, nb.compiled.OptimizedModule) and compiled._orig_mod is twin
    np.testing.assert_allclose(_train(compiled), _train(eager), rtol=1e-5)
    for (name, p), q in zip(eager.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(compiled._jitted.cache) == 1  # one trace for the one input signature


def test_train_and_eval_reach_the_original_and_its_dropout():
    model = Net()
    compiled = nb.compile(model)
    x = nb.ones((64, 5))
    compiled.eval()
    assert not model.training and not model.drop.training
    np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6)
    compiled.train()
    assert model.drop.training
    hidden = nb.compile(lambda t: model.drop(t))(nb.ones((64, 5)))
    assert 0 < float((hidden.numpy() == 0).mean()) < 1  # the jitted dropout drops in training


def test_state_dict_keys_and_forwarded_attributes():
    model = Net()
    compiled = nb.compile(model)
    keys = list(compiled.state_dict())
    assert keys == [f"_orig_mod.{k}" for k in model.state_dict()]
    assert compiled.fc is model.fc and compiled.note == "kept on the original"
    with pytest.raises(AttributeError):
        assert compiled.missing_attribute
    other = Net()
    other.load_state_dict(
        {k.removeprefix("_orig_mod."): v for k, v in compiled.state_dict().items()}
    )
    np.testing.assert_array_equal(other.fc.weight.numpy(), model.fc.weight.numpy())


def test_functions_and_the_decorator_form():
    f = nb.compile(lambda a: (a * 2).sin())
    x = nb.tensor([0.5, 1.0], requires_grad=True)
    y = f(x)
    np.testing.assert_allclose(y.numpy(), np.sin([1.0, 2.0]), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([1.0, 2.0]), rtol=1e-6)

    @nb.compile(mode="reduce-overhead", fullgraph=True)
    def g(a):
        return a + 1

    assert isinstance(g, JitFunction)
    np.testing.assert_array_equal(g(nb.ones(2)).numpy(), [2.0, 2.0])


def test_disabled_and_eager_backend_give_the_model_back():
    model = Net()
    assert nb.compile(model, disable=True) is model
    assert nb.compile(model, backend="eager") is model


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"backend": "tvm"}, nb.ArgumentError, "backend must be one of"),
        ({"backend": lambda gm, inputs: gm}, nb.UnsupportedError, "callable backend"),
        ({"mode": "fastest"}, nb.ArgumentError, "mode must be one of"),
        ({"dynamic": True}, nb.UnsupportedError, "once per input shape"),
    ],
)
def test_refused_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        nb.compile(Net(), **kwargs)


def test_a_non_callable_is_refused():
    with pytest.raises(nb.ArgumentError, match="needs a function or a Module"):
        nb.compile(3)
