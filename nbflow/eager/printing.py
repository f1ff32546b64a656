"""How tensors print: PyTorch's set_printoptions, applied to nbflow's reprs only (numpy's own
print options are left as they are; nbflow's defaults are numpy's, until set)."""

from __future__ import annotations

import numpy as np

from ..core.errors import ArgumentError

__all__ = ["get_printoptions", "set_printoptions"]
FLOAT32 = np.dtype(np.float32)  # the dtype a repr does not name

# PyTorch's profiles: (precision, threshold, edgeitems, linewidth)
PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, np.inf, 3, 80),
}
_OPTIONS: dict = {}  # array2string's keyword arguments the user set


def _count(value, name: str, low: int = 0):
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= low:
        raise ArgumentError(f"set_printoptions: {name} must be a number >= {low}, got {value!r}")
    return value


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
):
    """PyTorch's set_printoptions: digits after the point, the element count past which a
    tensor prints summarised, the items kept at each edge then, the line width, a profile
    ("default", "short", "full") setting the four at once, and sci_mode (True: always
    scientific, False: never, None: as numpy chooses). Options not given stay as they were."""
    if profile is not None:
        if profile not in PROFILES:
            raise ArgumentError(f"set_printoptions: profile must be one of {list(PROFILES)}")
        digits, count, edge, width = PROFILES[profile]
        precision = digits if precision is None else precision
        threshold = count if threshold is None else threshold
        edgeitems = edge if edgeitems is None else edgeitems
        linewidth = width if linewidth is None else linewidth
    for key, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("max_line_width", linewidth),
    ):
        if value is not None:
            _OPTIONS[key] = _count(value, "linewidth" if key == "max_line_width" else key)
    if sci_mode is not None:
        if not isinstance(sci_mode, bool):
            raise ArgumentError(f"set_printoptions: sci_mode must be a bool, got {sci_mode!r}")
        _OPTIONS["sci_mode"] = sci_mode
    elif profile is not None:
        _OPTIONS.pop("sci_mode", None)


def get_printoptions() -> dict:
    """The options set (set_printoptions' names); those not set print as numpy prints."""
    names = {"max_line_width": "linewidth"}
    return {names.get(k, k): v for k, v in _OPTIONS.items()}


def array_text(a: np.ndarray) -> str:
    """The body of a tensor's repr, `tensor(` being its prefix."""
    options = dict(_OPTIONS)
    sci = options.pop("sci_mode", None)
    if "threshold" in options and options["threshold"] == np.inf:
        options["threshold"] = a.size + 1  # (array2string takes an int)
    if sci is False:  # (PyTorch's fixed notation: every digit of the precision printed)
        options.update(suppress_small=True, floatmode="fixed")
    elif sci is True and a.dtype.kind == "f":
        digits = options.get("precision", 8)
        options["formatter"] = {
            "float_kind": lambda v: np.format_float_scientific(v, digits, unique=False)
        }
    return np.array2string(a, separator=", ", prefix="tensor(", **options)


def tensor_repr(t, array: np.ndarray, device: str | None = None) -> str:
    """PyTorch's repr of a tensor: its values, then the device (when not the CPU), the dtype
    (when not float32), and its grad_fn or requires_grad."""
    extra = "" if device is None else f", device='{device}'"
    if t.dtype != FLOAT32:
        extra += f", dtype={t.dtype}"
    if t._node is not None:
        extra += f", grad_fn={t._node.op.name}"
    elif t.requires_grad:
        extra += ", requires_grad=True"
    return f"tensor({array_text(array)}{extra})"
