"""The API argument fuzzer of tools/fuzz_campaign.py (--campaign api): nbflow's public functions
and ops (nbflow, nbflow.linalg, nbflow.nn.functional, nbflow.special), the Tensor's methods, the
nn layers (built, then called), the optimizers (built, then stepped) and the learning-rate
schedulers (built on an SGD, then stepped) called with random
arguments: tensors of random dtypes, shapes and strides, often of one shape so that a call gets
past the shape checks, and hostile values (None, strings, huge and negative ints, NaN, nested
lists, a Module, a Generator, a lambda, ...) in random places.

Outcomes of one call (`classify`):
- ok: a result;
- typed: an nbflow error (nbflow.errors) whose message says something, with no numba jargon;
- binding: Python's argument binding, or an op's, refused the call (a missing or unexpected
  argument, too many);
- unclear: an nbflow error with an empty message or numba's typing report in it;
- plain: a builtin exception class raised by a `raise` statement in nbflow's own code
  (nbflow.errors has the typed class to use, which also subclasses the builtin);
- untyped: anything else: numba's TypingError, a TypeError, ValueError, IndexError,
  AttributeError, KeyError, ZeroDivisionError ... from inside numpy, numba or Python;
- hang (a call over HANG_SECONDS) and crash (the worker died) are counted by the campaign.
"""

from __future__ import annotations

import inspect
import linecache
import os
import random
import traceback
import warnings

import numpy as np

DTYPES = ["float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool"]
# what saves, loads, seeds, compiles, changes process-wide state or runs collectives is not for
# random calls (the other campaigns test those)
UNSAFE = (
    "save", "load", "seed", "budget", "cache", "set_", "guard", "jit", "compile", "trace",
    "num_threads", "rng_state", "distributed", "from_dlpack", "vmap", "grad_enabled",
    "set_default", "printoptions", "backward", "while_loop", "cond", "dlpack", "register",
    "share_memory", "pin_memory", "cuda", "apply", "inference_mode", "no_grad", "enable_grad",
    "check_nan_inf", "empty_cache", "checkpoint", "data_ptr", "__",
)  # fmt: skip
# ops that draw random numbers or need sub-blocks: random calls of them prove nothing new
SKIPPED_OPS = {"uniform", "normal", "randint", "dropout_mask", "standard_gamma", "poisson"}
SKIPPED_OPS |= {"binomial", "depend_"}
NUMBA_JARGON = ("nopython", "No implementation of function", "numba.core", "Failed in ")
BINDING = (
    "positional argument", "keyword argument", "keyword-only", "required positional",
    "multiple values for argument", "takes no arguments", "() takes inputs (",
)  # fmt: skip


class _Fresh:
    """Hostile values, made anew for each call (a function may change what it is given)."""

    @staticmethod
    def values(nb):
        return [
            lambda: None, lambda: True, lambda: False, lambda: 0, lambda: 1, lambda: -1,
            lambda: 2, lambda: 3, lambda: -7, lambda: 2**31, lambda: 2**63, lambda: -(2**63),
            lambda: 10**30, lambda: 0.5, lambda: -2.5, lambda: float("nan"),
            lambda: float("inf"), lambda: -float("inf"), lambda: 1e308, lambda: 1 + 2j,
            lambda: "x", lambda: "", lambda: "mean", lambda: "sum", lambda: "float32",
            lambda: "int64", lambda: "cpu", lambda: b"\x00", lambda: [0, 1], lambda: [1.5],
            lambda: (2, 3), lambda: (), lambda: [[1, 2], [3]], lambda: {}, lambda: {"a": 1},
            lambda: object(), lambda: np.int64(2), lambda: np.float32(0.5),
            lambda: np.array(3), lambda: slice(0, 2), lambda: Ellipsis,
            lambda: nb.nn.Linear(2, 2), lambda: (lambda x: x), lambda: nb.Generator(),
            lambda: [nb.ones(2), nb.ones(2)], lambda: "nan", lambda: nb.ones(2).numpy(),
            lambda: (0, -1), lambda: [2**40], lambda: np.float64("nan"),
        ]  # fmt: skip


class ApiFuzzer:
    """Targets (name -> how to call it with a random generator) and the random values."""

    def __init__(self):
        import nbflow as nb
        from nbflow.core import REQUIRED, Op

        self.nb, self.Op, self.REQUIRED = nb, Op, REQUIRED
        self.hostile = _Fresh.values(nb)
        self.targets: dict[str, object] = {}
        modules = [("nb", nb), ("linalg", nb.linalg), ("F", nb.nn.functional)]
        modules.append(("special", nb.special))
        for prefix, module in modules:
            for name in sorted(getattr(module, "__all__", None) or dir(module)):
                f = getattr(module, name, None)
                if name.startswith("_") or any(u in name for u in UNSAFE):
                    continue
                if isinstance(f, Op) and f.name in SKIPPED_OPS:
                    continue
                if isinstance(f, Op) or inspect.isfunction(f):
                    self.targets[f"{prefix}.{name}"] = ("function", f)
        for name in sorted(dir(nb.Tensor)):
            if name.startswith("_") or any(u in name for u in UNSAFE):
                continue
            if callable(getattr(nb.Tensor, name, None)) and not isinstance(
                inspect.getattr_static(nb.Tensor, name), (property, type)
            ):
                self.targets[f"Tensor.{name}"] = ("method", name)
        for name in sorted(dir(nb.nn)):
            cls = getattr(nb.nn, name)
            bad = ("Module", "Parallel", "Sync", "Uninitialized", "Lazy", "Buffer", "Error")
            if (
                isinstance(cls, type)
                and issubclass(cls, nb.nn.Module)
                and not any(b in name for b in bad)
            ):
                self.targets[f"nn.{name}"] = ("layer", cls)
        for name in sorted(dir(nb.optim)):
            cls = getattr(nb.optim, name)
            optimizer = isinstance(cls, type) and issubclass(cls, nb.optim.Optimizer)
            if optimizer and cls is not nb.optim.Optimizer and "Zero" not in name:
                self.targets[f"optim.{name}"] = ("optimizer", cls)
        schedulers = nb.optim.lr_scheduler
        for name in schedulers.__all__:
            if name != "LRScheduler":
                self.targets[f"lr_scheduler.{name}"] = ("scheduler", getattr(schedulers, name))
        self.names = sorted(self.targets)

    # ------------------------------------------------------------ values

    def array(self, rng: random.Random, shape=None) -> np.ndarray:
        dtype = rng.choice(DTYPES) if rng.random() < 0.6 else "float32"
        if shape is None:
            shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 4)))
        gen = np.random.default_rng(rng.randrange(2**32))
        a = gen.standard_normal(shape) * 3
        if rng.random() < 0.05:
            a.flat[: max(1, a.size // 3)] = rng.choice([np.nan, np.inf, -np.inf, 1e30])
        a = a.astype(dtype)
        if a.ndim >= 2 and rng.random() < 0.2:
            a = a.swapaxes(0, 1)
        elif a.ndim and rng.random() < 0.1:
            a = a[::-1]
        return a

    def tensor(self, rng: random.Random, shape=None):
        a = self.array(rng, shape)
        grad = a.dtype.kind == "f" and rng.random() < 0.4
        return self.nb.tensor(a, dtype=a.dtype, requires_grad=grad)

    def value(self, rng: random.Random, shape):
        r = rng.random()
        if r < 0.35:
            return self.tensor(rng, shape)
        if r < 0.5:
            return self.tensor(rng)
        if r < 0.55:
            return self.array(rng, shape)
        if r < 0.75:
            return rng.choice([0, 1, 2, 3, -1, 4])  # the ints a valid call has
        return rng.choice(self.hostile)()

    def shape(self, rng: random.Random):
        return tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 4)))

    # ------------------------------------------------------------ calls

    def arguments(self, rng: random.Random, fn, shape, first_tensor=True):
        """Random (args, kwargs) for fn: its parameters without a default always, those with
        one now and then (by name half of the time), a *args of 0-3 values."""
        if isinstance(fn, self.Op):
            n = rng.randint(1, 3) if fn.variadic else len(fn.inputs)
            args = [self.value(rng, shape) for _ in range(n)]
            kwargs = {}
            for name, spec in fn.attrs.items():
                if spec.default is self.REQUIRED or rng.random() < 0.3:
                    kwargs[name] = self.value(rng, shape)
            if first_tensor and args and rng.random() < 0.7:
                args[0] = self.tensor(rng, shape)
            return args, kwargs
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        args, kwargs = [], {}
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                args += [self.value(rng, shape) for _ in range(rng.randint(0, 3))]
            elif p.kind == p.VAR_KEYWORD:
                continue
            elif p.default is p.empty:
                if p.kind == p.KEYWORD_ONLY:
                    kwargs[p.name] = self.value(rng, shape)
                else:
                    args.append(self.value(rng, shape))
            elif rng.random() < 0.3:
                if p.kind != p.POSITIONAL_ONLY and (p.kind == p.KEYWORD_ONLY or rng.random() < 0.5):
                    kwargs[p.name] = self.value(rng, shape)
                elif not kwargs and p.kind != p.KEYWORD_ONLY:
                    args.append(self.value(rng, shape))
        if first_tensor and args and rng.random() < 0.7:
            args[0] = self.tensor(rng, shape)
        return args, kwargs

    def call(self, name: str, rng: random.Random):
        """Call the target `name` once with random arguments; returns its result."""
        kind, target = self.targets[name]
        shape = self.shape(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "function":
                args, kwargs = self.arguments(rng, target, shape)
                out = target(*args, **kwargs)
            elif kind == "method":
                receiver = self.tensor(rng, shape)
                method = getattr(receiver, target)
                args, kwargs = self.arguments(rng, method, shape, first_tensor=False)
                out = method(*args, **kwargs)
            elif kind == "layer":
                args, kwargs = self.arguments(rng, target.__init__, shape, first_tensor=False)
                args = [a for a in args if a is not None][1:]  # self
                small = [rng.randint(1, 4) for _ in range(len(args))]
                args = [s if rng.random() < 0.6 else a for s, a in zip(small, args)]
                layer = target(*args, **kwargs)
                inputs, _ = self.arguments(rng, layer.forward, shape)
                out = layer(*inputs)
            elif kind == "scheduler":
                out = self.schedule(rng, target, shape)
            else:
                params = [self.tensor(rng, shape) for _ in range(rng.randint(1, 2))]
                params = [p.detach().float().requires_grad_() for p in params]
                _, kwargs = self.arguments(rng, target.__init__, shape, first_tensor=False)
                kwargs.pop("params", None)
                opt = target(params, **kwargs)
                for p in params:
                    p.grad = self.tensor(rng, p.shape) if rng.random() < 0.3 else p * 0.5
                opt.step()
                out = params
            self.backward(out)
        return out

    def schedule(self, rng: random.Random, target, shape):
        """A scheduler of class `target` with random arguments on an SGD (whose lr is often
        a hostile value too), stepped a few times; the lrs it set."""
        param = self.nb.zeros(2, requires_grad=True)
        lr = 0.1 if rng.random() < 0.8 else rng.choice(self.hostile)()
        opt = self.nb.optim.SGD([param], lr=lr)
        args, kwargs = self.arguments(rng, target.__init__, shape, first_tensor=False)
        args = [opt] + args[2:] if rng.random() < 0.9 else args[1:]  # (self, then optimizer)
        if target.__name__ == "ChainedScheduler":
            args = args[1:]  # (its first argument is the list of schedulers)
        small = [rng.randint(1, 4) for _ in args]
        args = [
            a if i == 0 or rng.random() < 0.5 else s for i, (s, a) in enumerate(zip(small, args))
        ]
        scheduler = target(*args, **kwargs)
        for _ in range(rng.randint(1, 3)):
            if target.__name__ == "ReduceLROnPlateau":
                scheduler.step(self.value(rng, ()))
            else:
                scheduler.step()
        return [group["lr"] for group in opt.param_groups]

    def backward(self, out):
        """backward() through a float result that requires grad: gradients get fuzzed too."""
        nb = self.nb
        for o in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(o, nb.Tensor) and o.requires_grad and o.dtype.kind == "f":
                nb.sum(o.float() * 1.0).backward()


def classify(e: BaseException) -> str:
    """typed, binding, unclear, plain or untyped (the module's docstring)."""
    from nbflow.errors import NbflowError

    text = str(e)
    if isinstance(e, NbflowError):
        clear = text.strip() and not any(j in text for j in NUMBA_JARGON)
        return "typed" if clear else "unclear"
    if isinstance(e, TypeError) and any(words in text for words in BINDING):
        return "binding"  # Python's, or an op's own (`exp() got 3 positional arguments`)
    frames = traceback.extract_tb(e.__traceback__)
    if frames and _in_nbflow(frames[-1].filename) and _is_raise(frames[-1]):
        return "plain"
    return "untyped"


NBFLOW_DIR = None


def _in_nbflow(filename: str) -> bool:
    global NBFLOW_DIR
    if NBFLOW_DIR is None:
        import nbflow

        NBFLOW_DIR = os.path.dirname(os.path.abspath(nbflow.__file__))
    return os.path.abspath(filename).startswith(NBFLOW_DIR + os.sep)


def _is_raise(frame) -> bool:
    line = frame.line or linecache.getline(frame.filename, frame.lineno)
    return line.strip().startswith("raise ")


def where(e: BaseException) -> str:
    """file:line of the innermost frame, relative to the repository."""
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.relpath(f.filename, root) if f.filename.startswith(root) else f.filename
    return f"{path}:{f.lineno}"


def message(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 300 else text[:297] + "..."
