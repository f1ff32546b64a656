"""Bad input gets typed errors naming the op, the arguments and their shapes or dtypes."""

import numpy as np
import pytest

import nbflow as nb


def test_shape_mismatch_names_op_arguments_and_shapes():
    with pytest.raises(nb.ShapeError) as e:
        nb.add(nb.zeros(2, 3), nb.zeros(4))
    msg = str(e.value)
    assert "add(" in msg and "x: f32[2,3]" in msg and "y: f32[4]" in msg
    assert isinstance(e.value, ValueError)


def test_unsupported_dtype_names_op_device_and_dtype():
    b = nb.tensor([True, False])
    with pytest.raises(nb.KernelNotFoundError) as e:
        nb.sub(b, b)
    assert e.value.key == ("sub", "cpu", "bool")
    assert "sub" in str(e.value) and "cpu" in str(e.value) and "bool" in str(e.value)
    assert isinstance(e.value, TypeError) and isinstance(e.value, NotImplementedError)


def test_inplace_cannot_promote_the_target():
    x = nb.tensor([1, 2], dtype="int32")
    with pytest.raises(nb.DTypeError, match="add_"):
        x.add_(0.5)
    assert x.numpy().tolist() == [1, 2]  # nothing was written


def test_inplace_cannot_broadcast_the_target():
    x = nb.zeros(3)
    with pytest.raises(nb.ShapeError):
        x.add_(nb.zeros(2, 3))


def test_inplace_copy_cannot_broadcast_the_target():
    x = nb.ones(1, 1)
    with pytest.raises(nb.ShapeError, match=r"copy_.*\(3, 1\) does not broadcast"):
        x.copy_(nb.zeros(3, 1))
    with pytest.raises(nb.ShapeError, match="does not broadcast"):  # (addcdiv_ is copy_ of it)
        nb.addcdiv_(x, nb.ones(3, 1), nb.ones(1))
    assert x.numpy().tolist() == [[1.0]]


@pytest.mark.parametrize(
    "call, function, argument, kind",
    [
        (lambda: nb.diagonal("sum"), "diagonal", "x", "str"),
        (lambda: nb.mm(0.5, nb.ones(2, 2)), "mm", "a", "float"),
        (lambda: nb.rot90(None), "rot90", "x", "NoneType"),
        (lambda: nb.norm((1, 2)), "norm", "x", "tuple"),
        (lambda: nb.nn.functional.dropout2d(3), "dropout2d", "input", "int"),
        (
            lambda: nb.nn.functional.local_response_norm([1.0], 2),
            "local_response_norm",
            "input",
            "list",
        ),
        (lambda: nb.linalg.matrix_norm([[1.0]]), "matrix_norm", "A", "list"),
    ],
)
def test_a_non_tensor_for_a_tensor_argument_names_the_function_and_argument(
    call, function, argument, kind
):
    with pytest.raises(nb.ArgumentError, match=f"{function}: argument '{argument}' must be a "):
        call()
    with pytest.raises(TypeError, match=f"got {kind}"):  # (ArgumentError is a TypeError)
        call()


F = nb.nn.functional
X3, X4 = nb.ones(2, 3, 4), nb.ones(1, 2, 4, 4)
NOT_TENSORS = [nb.Generator(), nb.nn.Linear(2, 2), "abc"]  # nbflow objects too (issue 42)


@pytest.mark.parametrize(
    "call, function, argument",
    [
        (lambda b: nb.nn.LSTM(4, 3)(b), "LSTM.forward", "input"),
        (lambda b: nb.nn.BatchNorm1d(3)(b), "BatchNorm1d.forward", "x"),
        (lambda b: nb.topk(b, 2), "topk", "x"),
        (lambda b: nb.narrow(b, 0, 0, 1), "narrow", "x"),
        (lambda b: nb.bmm(X3, b), "bmm", "b"),
        (lambda b: F.conv1d(b, nb.ones(2, 3, 1)), "conv1d", "x"),
        (lambda b: F.conv2d(X4, b), "conv2d", "weight"),
        (lambda b: F.avg_pool2d(b, 2), "avg_pool2d", "x"),
        (lambda b: F.binary_cross_entropy(nb.full((3,), 0.5), b), "binary_cross_entropy", "target"),
        (lambda b: F.interpolate(b, scale_factor=2), "interpolate", "input"),
        (lambda b: F.pad(b, (1, 1)), "pad", "input"),
    ],
)
def test_a_generator_module_or_string_for_a_tensor_raises_argument_error(call, function, argument):
    for bad in NOT_TENSORS:
        with pytest.raises(nb.ArgumentError) as e:  # was AttributeError: ... 'ndim'
            call(bad)
        assert f"{function}: argument '{argument}' must be a tensor, got" in str(e.value)
        assert type(bad).__name__ in str(e.value)


def test_a_missing_attribute_of_a_module_argument_is_still_an_attribute_error():
    class Reads(nb.nn.Module):
        def forward(self, x):
            return x.no_such_attribute  # a tensor's missing attribute: a bug, shown as it is

    with pytest.raises(AttributeError, match="no_such_attribute"):
        Reads()(nb.ones(2))


def test_an_axis_given_as_a_tensor_or_a_string():
    x = nb.ones(2, 3)
    for axis in (nb.tensor(1), np.int64(1)):  # a 0-d integer tensor is its value, as in PyTorch
        assert nb.sum(x, axis=axis).shape == (2,)
        assert nb.sum(x, dim=axis).shape == (2,)
        assert nb.mean(x, axis=axis).shape == (2,)
    for axis in ("", "ab", nb.tensor(1.0), nb.tensor([0, 1])):  # '' reduced nothing
        with pytest.raises(nb.AttrError, match="attribute 'axis' must be ints"):
            nb.sum(x, axis=axis)
    with pytest.raises(nb.AttrError):
        nb.amax(x, axis="")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nb.nn.Embedding(10, 1.5), "Embedding: embedding_dim must be an int, got float"),
        (lambda: nb.nn.Embedding(10.0, 2), "Embedding: num_embeddings must be an int"),
        (lambda: nb.nn.EmbeddingBag(10, 2.5), "EmbeddingBag: embedding_dim must be an int"),
        (lambda: nb.nn.Linear(2.5, 3), "Linear: in_features must be an int"),
        (lambda: nb.tril(nb.ones(3, 3), 1.5), "tril: diagonal must be an int, got float 1.5"),
        (lambda: nb.triu(nb.ones(3, 3), 2.0), "triu: diagonal must be an int, got float 2.0"),
        (lambda: nb.diag(nb.ones(3), 0.5), "diag: diagonal must be an int"),
        (lambda: nb.roll(nb.arange(5), -3.5), "roll: a shift must be an int, got float -3.5"),
        (lambda: nb.roll(nb.ones(2, 3), (1, 0.5), (0, 1)), "roll: a shift must be an int"),
    ],
)
def test_float_sizes_and_offsets_are_refused_not_truncated(call, message):
    with pytest.raises(nb.AttrError, match=message):
        call()


def test_int_sizes_and_offsets_of_every_integer_kind_work():
    assert nb.nn.Embedding(np.int64(10), nb.tensor(3)).weight.shape == (10, 3)
    assert nb.tril(nb.ones(3, 3), np.int32(-1)).numpy().sum() == 3
    assert nb.roll(nb.arange(5), nb.tensor(-3)).numpy().tolist() == [3, 4, 0, 1, 2]


def test_errors_raised_by_composites_name_the_users_line():
    with pytest.raises(nb.ShapeError, match=r"unbind needs.*defined at test_errors.py:\d+"):
        nb.unbind(nb.tensor(1.0))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: nb.sum(nb.ones(2, 3), axis=0.5), nb.AttrError, "axis"),
        (lambda: nb.diag_embed(nb.ones(3), 0, nb.tensor(0.5)), nb.AttrError, "must be an int"),
        (lambda: nb.einsum(nb.ones(2), nb.ones(2)), nb.AttrError, "equation must be a str"),
        (lambda: nb.linalg.matrix_norm(nb.ones(2, 2), dim=(1,)), nb.ShapeError, "two dims"),
        (
            lambda: nb.nn.functional.scaled_dot_product_attention(nb.ones(()), nb.ones(3), 1),
            nb.ShapeError,
            r"\(\.\.\., L, E\)",
        ),
    ],
)
def test_bad_arguments_of_composites_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: nb.allclose(nb.ones(0), nb.ones(2)), nb.ShapeError, "do not broadcast"),
        (lambda: nb.allclose(nb.ones(2), "x"), nb.DTypeError, "needs numbers"),
        (lambda: nb.allclose(nb.ones(2), 1.0, "x"), nb.AttrError, "rtol must be a real number"),
        (lambda: nb.nn.functional.rms_norm(nb.tensor([1, 2]), 2), nb.DTypeError, "floating"),
        (lambda: nb.ones(3)[nb.tensor(True)], nb.UnsupportedError, "0-d boolean index"),
        (lambda: nb.nn.MultiheadAttention(2, 0.5), ValueError, "must be greater than 0"),
        (lambda: nb.nn.GroupNorm(0, 4), ValueError, "positive ints"),
        (lambda: nb.nn.Upsample(0)(nb.ones(1, 1, 2, 2)), ValueError, "output size"),
        (lambda: nb.nn.Upsample(scale_factor=0)(nb.ones(1, 1, 2, 2)), ValueError, "scale_factor"),
        (lambda: nb.nn.ModuleList()(nb.ones(2)), nb.UnsupportedError, "container"),
    ],
)
def test_more_bad_arguments_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bad_attributes():
    with pytest.raises(nb.AttrError, match="negative_slope"):
        nb.leaky_relu(nb.zeros(2), negative_slope="big")
    with pytest.raises(nb.AttrError, match="unknown"):
        nb.exp(nb.zeros(2), axis=1)
    with pytest.raises(nb.ShapeError):
        nb.zeros(-1, 2)


def test_unsupported_input_types():
    with pytest.raises(nb.DTypeError):
        nb.tensor(["a", "b"])
    with pytest.raises(nb.DTypeError):
        nb.from_numpy(__import__("numpy").zeros(2, "clongdouble"))  # complex64/128 are held
    with pytest.raises(nb.DTypeError):
        nb.tensor([1.0], dtype="clongdouble")


def test_wrong_number_of_inputs():
    with pytest.raises(TypeError, match="takes inputs"):
        nb.add(nb.zeros(2))


def test_values_that_do_not_fit_the_dtype():
    with pytest.raises(nb.DTypeError, match="add: .*out of range for int32"):
        nb.tensor([1, 2], dtype="int32") + 2**40
    with pytest.raises(nb.DTypeError, match="inf cannot be stored in int64"):
        nb.full((2,), float("inf"), dtype="int64")
    with pytest.raises(nb.DTypeError):
        nb.clip(nb.tensor([1, 2]), min=float("inf"))
    with pytest.raises(nb.AttrError, match="finite"):
        nb.arange(0, float("inf"))


def test_ragged_data_and_integer_negative_powers():
    with pytest.raises(nb.ShapeError, match="cannot make a tensor") as e:
        nb.tensor([[1, 2], [3]])
    assert f"(defined at test_errors.py:{e.tb.tb_lineno})" in str(e.value)  # the call's line
    with pytest.raises(nb.DTypeError, match="datetime64") as e:
        nb.tensor(__import__("numpy").array(["2026-01-01"], dtype="datetime64[D]"))
    assert f"(defined at test_errors.py:{e.tb.tb_lineno})" in str(e.value)
    with pytest.raises(nb.DomainError, match="negative integer powers"):
        nb.pow(nb.tensor([2, 3]), nb.tensor([1, -1]))
    assert nb.pow(nb.tensor([2, 3]), 2).numpy().tolist() == [4, 9]
    x, y = nb.tensor([2, 3]), nb.tensor([1, 2])
    assert (x**y).numpy().tolist() == [2, 9]  # the operator's plan is cached now
    for _ in range(2):
        with pytest.raises(nb.DomainError, match="negative integer powers") as e:
            x ** nb.tensor([1, -1])  # the operator's shortcut, once the plan is cached
        assert f"(defined at test_errors.py:{e.tb.tb_lineno})" in str(e.value)


def test_remembered_attr_checks_keep_types_apart_and_hand_out_copies():
    op = nb.ops.REGISTRY["sum"]
    first = op.check_attrs({"axis": 0, "keepdims": True})
    assert first == {"axis": (0,), "keepdims": True}
    first["keepdims"] = False  # a caller changing its dict changes no other caller's
    assert op.check_attrs({"axis": 0, "keepdims": True})["keepdims"] is True
    with pytest.raises(nb.AttrError, match="keepdims"):
        op.check_attrs({"axis": 0, "keepdims": 1})  # 1 == True, but not a bool
    with pytest.raises(nb.AttrError, match="keepdims"):
        nb.sum(nb.tensor([[1.0, 2.0]]), axis=0, keepdims=1)
    assert op.check_attrs({"axis": [0, 1]})["axis"] == (0, 1)  # a list: checked, not kept


def test_kernel_compile_error_gives_numbas_reason_without_terminal_colours():
    # numba colours its reports when colorama is installed; the reason is the first line that
    # is not numba's "Failed in ..." header, with the escape codes taken out
    from numba.core.errors import TypingError

    report = (
        "\x1b[1m\x1b[1mFailed in nopython mode pipeline (step: nopython frontend)\n"
        "\x1b[1mUnknown attribute 'no_such_attribute' of type float32\n\x1b[0m"
        "\x1b[1mDuring: typing of get attribute at <string> (3)\x1b[0m"
    )
    err = nb.errors.KernelCompileError("op", "cpu", ["float32"], "float32", TypingError(report))
    assert str(err).endswith(": Unknown attribute 'no_such_attribute' of type float32")
    assert "\x1b" not in str(err) and err.key == ("op", "cpu", ("float32",))
    assert isinstance(err.numba_error, TypingError)
