"""Runs PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations.op_db)
against nbflow: each entry is mapped to the nbflow function or method a user would call, its
sample inputs are converted to nbflow tensors, and the forward values, dtypes and shapes and the
float64 and complex128 gradients are compared with PyTorch's. tests/test_opinfo.py asserts the
outcome per entry against explicit tables; tools/opinfo_report.py prints the coverage
figures."""

from __future__ import annotations

import types

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import nbflow as nb
from nbflow import errors

DTYPES = (torch.float64, torch.float32, torch.int64, torch.complex128)
SAMPLES_PER_DTYPE = 3  # the first samples of each dtype: small shapes, CI on 2 cores
GRAD_DTYPES = (torch.float64, torch.complex128)  # (PyTorch's convention for complex inputs)

# forward tolerances per dtype (rtol, atol); gradients are compared in float64 only
TOLERANCES = {torch.float64: (1e-6, 1e-8), torch.float32: (1e-4, 1e-5), torch.int64: (0, 0)}
# a complex output (of an integer input too) as its parts' float dtype
TOLERANCES.update(
    {torch.complex128: TOLERANCES[torch.float64], torch.complex64: TOLERANCES[torch.float32]}
)
GRAD_TOLERANCE = (1e-5, 1e-7)

# outcome kinds of a sample; "pass" and "n/a" (PyTorch itself raises) are not failures
KINDS = (
    "bad_args",  # TypeError from Python's call: an argument or keyword nbflow's signature lacks
    "refused",  # nbflow raises one of its typed errors (nbflow.errors) for an input PyTorch takes
    "internal_error",  # any other exception (IndexError, ValueError, numba's errors, ...)
    "wrong_shape",
    "wrong_dtype",
    "wrong_value",
    "no_grad",  # nbflow's output does not require grad where PyTorch's does
    "grad_error",  # backward raises
    "wrong_grad",
)


def entry_key(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


ENTRIES = {entry_key(op): op for op in op_db}


def _method(name):
    return lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def _attr(name):
    return lambda x: getattr(x, name)


# Entries whose OpInfo name is not the nbflow path a user would call (PyTorch's own op is a
# lambda, an aten name or a private function); every other entry is looked up by name: a
# dotted path under `nbflow`, else a Tensor method called on the input.
MAPPING = {
    "T": _attr("T"),
    "H": _attr("H"),
    "mT": _attr("mT"),
    "mH": _attr("mH"),
    "__getitem__": lambda x, idx: x[idx],
    # PyTorch's OpInfo op is a lambda over a Tensor method: the same method here
    **{
        name: _method(name)
        for name in (
            "bool",
            "contiguous",
            "double",
            "expand",
            "expand_as",
            "float",
            "half",
            "int",
            "item",
            "long",
            "new_empty",
            "new_full",
            "new_ones",
            "new_zeros",
            "repeat",
            "reshape_as",
            "sum_to_size",
            "to",
            "unfold",
            "view",
            "view_as",
        )
    },
    # PyTorch's OpInfo op is a lambda with its arguments reordered
    "where": lambda x, condition, other, **kw: nb.where(condition, x, other, **kw),
    "einsum": lambda tensors, equation: nb.einsum(equation, *tensors),
    "nn.functional.embedding": lambda w, idx, **kw: nb.nn.functional.embedding(idx, w, **kw),
    "nn.functional.embedding_bag": lambda w, idx, **kw: nb.nn.functional.embedding_bag(
        idx, w, **kw
    ),
    **{
        f"polygamma.polygamma_n_{n}": (lambda x, n, **kw: nb.polygamma(n, x, **kw))
        for n in range(5)
    },
    "special.polygamma.special_polygamma_n_0": lambda x, n, **kw: nb.special.polygamma(n, x, **kw),
    "linalg.lstsq.grad_oriented": lambda a, b, driver: nb.linalg.lstsq(a, b, driver=driver)[:2],
    "linalg.pinv.singular": lambda a, b: nb.linalg.pinv(a @ b.mT),
    "normal.number_mean": lambda std, mean, *args, **kw: nb.normal(mean, std, *args, **kw),
    "normal.in_place": lambda x, *args, **kw: x.clone().normal_(*args, **kw),
    "uniform": lambda x, *args, **kw: x.clone().uniform_(*args, **kw),
    # PyTorch's OpInfo op is the in-place random method on the input (or, for fill, the
    # out-of-place spelling of fill_): the method on a copy
    **{
        name: (lambda method: lambda x, *args, **kw: getattr(x.clone(), method)(*args, **kw))(
            f"{name}_"
        )
        for name in ("cauchy", "exponential", "geometric", "log_normal", "fill")
    },
    "__rdiv__": _method("__rtruediv__"),  # (Python 2's name for the reflected division)
    "zero_": lambda x: x.clone().zero_(),
    "resize_": lambda x, shape: x.clone().resize_(shape),
    "resize_as_": lambda x, other: x.clone().resize_as_(other),
    # PyTorch's OpInfo op is a lambda over the product of its two arguments
    **{
        name: (lambda fn: lambda a, b, **kw: fn(a @ b.mT, **kw))(getattr(nb, name))
        for name in ("svd_lowrank", "pca_lowrank")
    },
    # torch.fft: nbflow.fft holds the same names
    **{f"fft.{name}": getattr(nb.fft, name) for name in nb.fft.__all__ if name != "stft"},
    # aten entry points whose nbflow spelling is indexing
    "slice": lambda x, dim=0, start=None, end=None, step=1: x[
        (slice(None),) * (dim % x.ndim) + (slice(start, end, step),)
    ],
}

# Entries with no nbflow counterpart, by family (issue 39, item 3: the missing families).
UNMAPPED_FAMILIES = {
    "sparse.": "sparse tensors: nbflow has dense tensors only",
    "jiterator_": "CUDA jiterator: no CPU meaning",
    "__r": "__r*__ methods: looked up as methods (below)",
    "_": "PyTorch-private aten entry points",
    "torch.": "PyTorch-private aten entry points",
}

# Random ops (and ops whose values are undefined: empty*): values are not compared, shapes and
# dtypes are.
VALUES_NOT_COMPARED = {
    "bernoulli",
    "normal",
    "normal.number_mean",
    "normal.in_place",
    "uniform",
    "cauchy",
    "exponential",
    "geometric",
    "log_normal",
    "multinomial",
    "rand_like",
    "randn_like",
    "randint_like",
    "randint",
    "randn",
    "empty",
    "empty_like",
    "empty_strided",
    "empty_permuted",
    "new_empty",
    "new_empty_strided",
    "nn.functional.dropout",
    "nn.functional.dropout2d",
    "nn.functional.dropout3d",
    "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.feature_alpha_dropout.without_train",
    "nn.functional.rrelu",
    "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d",
}


# Outputs defined up to a sign or phase (eigenvectors, singular vectors): compared after the
# entry's own output_process_fn_grad, which PyTorch's gradient tests use for the same reason.
COMPARE_PROCESSED = {"linalg.eigh", "linalg.svd", "svd", "linalg.qr", "qr"}
# svd_lowrank's and pca_lowrank's samples have q = the matrix's rank: the random draw then
# spans the range exactly and (U V^T, S) is determined, up to rounding
COMPARE_PROCESSED |= {"svd_lowrank", "pca_lowrank"}


def values_compared(key, sample):
    if key in VALUES_NOT_COMPARED:
        return False
    # scaled_dot_product_attention's samples with dropout_p > 0 are random, and so are
    # multi_head_attention_forward's in training (its dropout_p positional, argument 11)
    if key == "nn.functional.multi_head_attention_forward":
        return not (sample.args[9] and sample.kwargs.get("training", True))
    return not sample.kwargs.get("dropout_p", 0)


def unmapped_reason(key):
    for prefix, reason in UNMAPPED_FAMILIES.items():
        if key.startswith(prefix):
            return reason
    return None


def resolve(key):
    """The nbflow callable for an entry, or None."""
    if key in MAPPING:
        return MAPPING[key]
    if key.startswith("__r") and hasattr(nb.Tensor, key):
        return _method(key)
    if unmapped_reason(key) is not None:
        return None
    op = ENTRIES[key]
    obj = nb
    for part in op.name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is not None and callable(obj) and not isinstance(obj, types.ModuleType):
        return obj
    if "." not in op.name and hasattr(nb.Tensor, op.name):
        return _method(op.name)
    return None


# ------------------------------------------------------------------ conversion


def _nb_dtype(dt):
    name = str(dt).removeprefix("torch.")
    return (
        getattr(nb, name)
        if name
        in ("float64", "float32", "float16", "int64", "int32", "bool", "complex64", "complex128")
        else dt
    )


def to_nb(obj, grad_leaves=None):
    """torch -> nbflow, recursively (tensors, dtypes, sizes, lists, tuples, dicts). Tensors that
    require grad become nbflow leaves that require grad, recorded in grad_leaves."""
    if isinstance(obj, torch.Tensor):
        arr = obj.detach().cpu().resolve_conj().numpy().copy()
        rg = grad_leaves is not None and obj.requires_grad and obj.is_floating_point()
        t = nb.tensor(arr, requires_grad=rg) if rg else nb.tensor(arr)
        if rg:
            grad_leaves.append(t)
        return t
    if isinstance(obj, torch.dtype):
        return _nb_dtype(obj)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.device):
        return str(obj)
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and "torch" in (
        getattr(obj, "__module__", None) or ""
    ):
        # a PyTorch function passed as an argument (distance_function=...): nbflow's namesake
        mod = obj.__module__.removeprefix("torch").removeprefix("._C").strip(".")
        target = nb
        for part in [p for p in mod.split(".") if p and p != "_nn"] + [obj.__name__]:
            target = getattr(target, part, None)
        if target is None:
            target = getattr(nb.nn.functional, obj.__name__, None) or getattr(
                nb, obj.__name__, None
            )
        return target if target is not None else obj
    if isinstance(obj, torch.nn.PairwiseDistance):  # a distance_function= module
        return nb.nn.PairwiseDistance(p=obj.norm, eps=obj.eps, keepdim=obj.keepdim)
    if isinstance(obj, list):
        return [to_nb(o, grad_leaves) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_nb(o, grad_leaves) for o in obj)
    if isinstance(obj, dict):
        return {k: to_nb(v, grad_leaves) for k, v in obj.items()}
    return obj


def _flatten(out):
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(_flatten(o))
        return res
    return [out]


def _torch_leaves(obj, acc):
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad and obj.is_floating_point():
            acc.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _torch_leaves(o, acc)
    elif isinstance(obj, dict):
        for o in obj.values():
            _torch_leaves(o, acc)
    return acc


class Mismatch(Exception):
    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def _classify_exception(e):
    if isinstance(e, Mismatch):
        return e.kind
    if isinstance(e, errors.NbflowError):
        return "refused"
    if type(e) is TypeError and ("argument" in str(e) or "positional" in str(e)):
        return "bad_args"
    return "internal_error"


def _dtype_name(x):
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    return str(np.dtype(x.dtype))


def _compare_forward(key, got, want, dtype, sample):
    got_l, want_l = _flatten(got), _flatten(want)
    if len(got_l) != len(want_l):
        raise Mismatch("wrong_shape", f"{len(got_l)} outputs, PyTorch {len(want_l)}")
    for i, (g, w) in enumerate(zip(got_l, want_l)):
        rtol, atol = TOLERANCES.get(getattr(w, "dtype", dtype), TOLERANCES[dtype])
        if isinstance(w, torch.Tensor):
            if not isinstance(g, nb.Tensor):
                if isinstance(g, np.ndarray):
                    raise Mismatch("wrong_dtype", f"output {i}: a numpy array, not a Tensor")
                raise Mismatch("wrong_dtype", f"output {i}: {type(g).__name__}, not a Tensor")
            if tuple(g.shape) != tuple(w.shape):
                raise Mismatch("wrong_shape", f"output {i}: {tuple(g.shape)} != {tuple(w.shape)}")
            if _dtype_name(g) != _dtype_name(w):
                raise Mismatch("wrong_dtype", f"output {i}: {_dtype_name(g)} != {_dtype_name(w)}")
            if not values_compared(key, sample):
                continue
            gv, wv = g.detach().numpy(), w.detach().resolve_conj().numpy()  # (ihfft: a conj view)
            _close(gv, wv, rtol, atol, "wrong_value", f"output {i}")
        elif isinstance(w, (bool, int, float)) or w is None:
            if isinstance(g, nb.Tensor) and g.ndim == 0:
                g = g.item()
            if w is None or isinstance(w, bool):
                if g != w:
                    raise Mismatch("wrong_value", f"output {i}: {g!r} != {w!r}")
            elif values_compared(key, sample):
                _close(
                    np.asarray(g, dtype=float),
                    np.asarray(w, dtype=float),
                    rtol,
                    atol,
                    "wrong_value",
                    f"output {i}",
                )
        elif isinstance(w, torch.Size) and tuple(g) != tuple(w):
            raise Mismatch("wrong_value", f"output {i}: {g!r} != {tuple(w)!r}")


def _close(g, w, rtol, atol, kind, where):
    g = np.asarray(g)
    w = np.asarray(w)
    if g.dtype == bool or w.dtype == bool or g.dtype.kind in "iu" and w.dtype.kind in "iu":
        if not np.array_equal(g, w):
            bad = np.flatnonzero(g.ravel() != w.ravel())[:3]
            raise Mismatch(
                kind,
                f"{where}: at flat {bad.tolist()}: "
                f"{g.ravel()[bad].tolist()} != {w.ravel()[bad].tolist()}",
            )
        return
    wide = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
    g = g.astype(wide)
    w = w.astype(wide)
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        bad = np.flatnonzero(~ok.ravel())[:3]
        raise Mismatch(
            kind,
            f"{where}: at flat {bad.tolist()}: "
            f"{g.ravel()[bad].tolist()} != {w.ravel()[bad].tolist()}",
        )


def _call(fn, sample, grad_leaves=None):
    x = to_nb(sample.input, grad_leaves)
    args = to_nb(tuple(sample.args), grad_leaves)
    kwargs = to_nb(dict(sample.kwargs), grad_leaves)
    return fn(x, *args, **kwargs)


def _grad_check(key, op, fn, sample):
    leaves_t = _torch_leaves((sample.input, sample.args, sample.kwargs), [])
    if not leaves_t:
        return
    process = sample.output_process_fn_grad
    out_t = process(op(sample.input, *sample.args, **sample.kwargs))
    outs_t = [o for o in _flatten(out_t) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outs_t:
        return
    gen = torch.Generator().manual_seed(0)
    cots = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs_t]
    want = torch.autograd.grad(outs_t, leaves_t, cots, allow_unused=True)
    leaves_n = []
    try:
        out_n = process(_call(fn, sample, leaves_n))
    except Exception as e:  # the forward passed without grad leaves; this is the grad path
        raise Mismatch("grad_error", f"{type(e).__name__}: {e}") from e
    flat_t = _flatten(out_t)
    flat_n = _flatten(out_n)
    loss = None
    ci = 0
    for ot, on in zip(flat_t, flat_n):
        if not (isinstance(ot, torch.Tensor) and ot.requires_grad):
            continue
        if not isinstance(on, nb.Tensor) or not on.requires_grad:
            raise Mismatch("no_grad", f"an output of {key} does not require grad")
        # PyTorch's cotangent c of a complex output is that of the real loss Re(sum(conj(c) out))
        term = nb.real((on * nb.conj(nb.tensor(cots[ci].numpy()))).sum())
        ci += 1
        loss = term if loss is None else loss + term
    try:
        loss.backward()
    except Exception as e:
        raise Mismatch("grad_error", f"{type(e).__name__}: {e}") from e
    if not values_compared(key, sample):
        return
    rtol, atol = GRAD_TOLERANCE
    for i, (lt, ln) in enumerate(zip(leaves_t, leaves_n)):
        w = want[i]
        g = ln.grad
        w = np.zeros(lt.shape) if w is None else w.resolve_conj().numpy(force=True)  # (ZeroTensor)
        g = np.zeros(lt.shape) if g is None else g.numpy()
        if g.shape != w.shape:
            raise Mismatch("wrong_grad", f"grad {i}: shape {g.shape} != {w.shape}")
        _close(g, w, rtol, atol, "wrong_grad", f"grad {i}")


def _differentiated(op, dtype) -> bool:
    """Whether the samples of this dtype have their gradients compared."""
    return (
        dtype in GRAD_DTYPES
        and op.supports_autograd
        and dtype in op.supported_backward_dtypes("cpu")
    )


def samples(op, dtype):
    rg = _differentiated(op, dtype)
    torch.manual_seed(0)
    out = []
    try:
        it = op.sample_inputs("cpu", dtype, requires_grad=rg)
        for s in it:
            out.append(s)
            if len(out) >= SAMPLES_PER_DTYPE:
                break
    except Exception:  # PyTorch's own generator fails for this dtype: no samples
        pass
    return out


def run_sample(key, op, fn, sample, dtype):
    """Outcome of one sample: ("pass" | "n/a" | a KINDS entry, detail)."""
    try:
        want = op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:
        return "n/a", f"PyTorch raises {type(e).__name__}"
    try:
        with np.errstate(all="ignore"):
            got = _call(fn, sample)
            if key in COMPARE_PROCESSED:
                got, want = sample.output_process_fn_grad(got), sample.output_process_fn_grad(want)
            _compare_forward(key, got, want, dtype, sample)
            if _differentiated(op, dtype):
                _grad_check(key, op, fn, sample)
    except Exception as e:
        kind = _classify_exception(e)
        return kind, f"{type(e).__name__}: {str(e)[:300]}"
    return "pass", ""


def run_entry(key):
    """[(dtype name, sample index, outcome, detail)] for every sample of an entry."""
    op = ENTRIES[key]
    fn = resolve(key)
    results = []
    for dtype in DTYPES:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        for i, s in enumerate(samples(op, dtype)):
            kind, detail = run_sample(key, op, fn, s, dtype)
            results.append((str(dtype).removeprefix("torch."), i, kind, detail))
    return results
