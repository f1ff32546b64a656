"""Arguments refused with nbflow's error classes (issue 38, 4), where numpy's error, a plain
ValueError, or a silent truncation came before."""

import os

import pytest

import nbflow as nb
from nbflow.errors import CheckpointError


@pytest.mark.parametrize("seed", ["a", 1.5, True, 2**64])
def test_manual_seed_refuses_what_is_not_a_seed(seed):
    with pytest.raises(nb.NbflowError, match="seed"):
        nb.manual_seed(seed)


def test_a_negative_seed_is_remapped_as_pytorch_does():
    first = nb.manual_seed(-1) and nb.rand(3).numpy()
    assert (nb.manual_seed(-1) and nb.rand(3).numpy()).tolist() == first.tolist()
    assert nb.initial_seed() == -1


@pytest.mark.parametrize("method", ["tanh_", "sqrt_", "sigmoid_", "exp_"])
def test_a_float_in_place_op_on_an_integer_tensor_is_refused(method):
    x = nb.tensor([1, 2, 3])
    with pytest.raises(nb.DTypeError, match=f"{method}.*int64"):
        getattr(x, method)()
    assert x.tolist() == [1, 2, 3]  # untouched
    assert nb.tensor([-1, 2]).abs_().tolist() == [1, 2]  # an int result stays allowed
    assert nb.tensor([1.0, 2.0]).eq_(1.0).tolist() == [1.0, 0.0]  # bool into float too


@pytest.mark.parametrize(
    "make",
    [
        lambda: nb.nn.Dropout(1.5),
        lambda: nb.data.DataLoader([1, 2, 3], batch_size=0),
        lambda: nb.data.TensorDataset(),
        lambda: nb.optim.SGD([nb.ones(2, requires_grad=True)], lr=-1.0),
    ],
)
def test_module_loader_and_optimizer_checks_raise_nbflow_errors(make):
    with pytest.raises(nb.NbflowError) as info:
        make()
    assert isinstance(info.value, (ValueError, TypeError))  # and the builtin, as before


def test_an_integer_that_does_not_fit_the_dtype_is_refused():
    with pytest.raises(nb.DTypeError, match="int32"):
        nb.tensor([2**40], dtype="int32")


@pytest.mark.parametrize("folder", ["missing/deeper", None])
def test_save_into_a_missing_or_unwritable_folder_names_the_users_path(tmp_path, folder):
    if folder is None:  # a folder that exists but takes no new files
        target = tmp_path / "locked"
        target.mkdir()
        target.chmod(0o500)
        if os.access(target, os.W_OK):  # (root writes anyway: use a file as the folder)
            target = tmp_path / "a_file"
            target.write_text("")
        path = str(target / "model.nbf")
    else:
        path = str(tmp_path / folder / "model.nbf")
    with pytest.raises(CheckpointError, match="cannot save to .*model.nbf"):
        nb.save({"w": nb.ones(2)}, path)
