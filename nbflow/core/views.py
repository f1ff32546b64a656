"""Views under autograd, for the eager tape and for graphs alike.

A view shares its base's memory, so an in-place write through one changes what the other
holds. Autograd has to follow that, as PyTorch does:

- a write through a view gives the **base** a new history: the base with the view's region
  replaced by the view's new value (`write_back`: `index_put_` for a slice, `copy_` of the
  inverse view for a transpose, permute, flip, squeeze, unsqueeze or reshape);
- a view taken **before** its base got a new history (an in-place op on the base, or a write
  through another view) is re-taken from the base when an op reads it (`refresh`), so its
  gradient reaches the write.

Each view value carries a `ViewOf`: the view op, the value it was taken of, the op's attrs,
its output index, the root base, and the base's history node when the view's own history was
made; a base whose node has changed since makes the view stale.
"""

from __future__ import annotations

from .errors import GradientError, UnsupportedError
from .op import REGISTRY, Node, bind

# a reshape copies when the layout needs it: eager mode checks the memory it got, a program
# learns it only when it runs, so in graph mode a reshape is an uncertain view
RESHAPES = ("reshape", "flatten", "reshape_like")
# the view ops a write through which can be written back into the parent
BIJECTIVE = ("matrix_transpose", "transpose", "permute", "flip", "squeeze", "unsqueeze")
WRITABLE = ("slice", *BIJECTIVE, *RESHAPES)


class ViewOf:
    """How a view value was taken (see the module docstring)."""

    __slots__ = ("op", "parent", "attrs", "index", "certain", "base", "base_node")

    def __init__(self, op, parent, attrs, index, certain=True):
        self.op, self.parent, self.attrs, self.index = op, parent, attrs, index
        self.certain = certain and (parent._view is None or parent._view.certain)
        self.base = parent if parent._view is None else parent._view.base
        self.base_node = self.base._node


def is_stale(v) -> bool:
    """Whether v is a view whose base has a new history (with gradients) since v's was made."""
    info = v._view
    return info is not None and info.base._node is not info.base_node and info.base.requires_grad


def refresh_if_stale(v):
    """Re-take v from its base if it is a stale view (the check every reader of a value makes
    before its history is used)."""
    if v._view is not None and is_stale(v):
        refresh(v)


def refresh(v):
    """Re-take the stale view v from its base's current history: the same memory, with a
    history that reaches the base's in-place writes (the op is recorded or appended now)."""
    info = v._view
    if not info.certain:  # (graph mode) its history may be either: gradients through it raise
        poison(v, UNCERTAIN_READ)
        info.base_node = info.base._node
        return
    refresh_if_stale(info.parent)
    out = bind(info.op, info.parent, **info.attrs)
    if isinstance(out, tuple):
        out = out[info.index]
    if out.shape != v.shape:
        raise GradientError(
            f"a {info.op.name} view taken before its base changed shape in place (squeeze_, "
            "resize_, ...) is read with gradients; take the view again after the change"
        )
    v._adopt_history(out)
    info.base_node = info.base._node


def check_write(op, target):
    """Refuse, before anything is written, an in-place write through the view `target` that
    autograd cannot follow: into a leaf that requires grad, or through a view op it cannot
    write back."""
    info = target._view
    base = info.base
    if base.requires_grad and base._node is None:
        raise GradientError(
            f"{op.name}: a view of a leaf tensor that requires grad is used in an in-place op; "
            "wrap it in nbflow.no_grad() or use the out-of-place op"
        )
    while info is not None:
        if info.op.name not in WRITABLE:
            raise UnsupportedError(
                f"{op.name}: an in-place write through a {info.op.name} view is not recorded "
                "for autograd; write into a clone() or use the out-of-place op"
            )
        info = info.parent._view


def check_writes(op, inputs):
    """Refuse, before anything is written, a recorded in-place write into op's targets among
    `inputs` that autograd cannot follow (eager mode, on any device): into a leaf that requires
    grad, through a view it cannot write back (check_write), or into a detach()ed alias."""
    for j in op.inplace.values():
        t = inputs[j]
        if t.requires_grad and t._node is None:
            raise GradientError(
                f"{op.name}: a leaf tensor that requires grad is used in an in-place op; "
                "wrap it in nbflow.no_grad() or use the out-of-place op"
            )
        if t._view is not None:
            check_write(op, t)
        elif t._base is not None:
            raise UnsupportedError(
                f"{op.name}: an in-place write into a detach()ed tensor is not recorded "
                "for autograd; clone() it first"
            )


def write_back(v):
    """(op, [parent, source], attrs): the in-place op on v's parent that gives the parent
    the region of v as v now holds it (for a slice, index_put_ of v; else copy_ of v taken
    back to the parent's shape). Only for a view whose chain is certain (ViewOf.certain)."""
    info = v._view
    parent, name = info.parent, info.op.name
    if name == "slice":
        return REGISTRY["index_put_"], [parent, v], {"key": info.attrs["key"], "accumulate": False}
    if name in ("matrix_transpose", "transpose", "flip"):
        source = bind(info.op, v, **info.attrs)  # each its own inverse
    elif name == "permute":
        axes = [a % v.ndim for a in info.attrs["axes"]]
        source = bind(info.op, v, axes=tuple(sorted(range(len(axes)), key=axes.__getitem__)))
    else:  # squeeze, unsqueeze and the reshapes: the parent's shape again
        source = bind(REGISTRY["reshape_like"], v, parent)
    return REGISTRY["copy_"], [parent, source], {}


def is_write_back(op, inputs, attrs) -> bool:
    """Whether op(inputs, attrs) has the form write_back() gives (a loaded program's
    `write_back` mark is checked against it: a real write marked so would lose its version)."""
    if op.name not in ("index_put_", "copy_") or len(inputs) != 2:
        return False
    parent, info = inputs[0], inputs[1]._view
    if op.name == "index_put_":  # index_put_(parent, parent[key]) with the slice's key
        return (
            info is not None
            and info.parent is parent
            and info.op.name == "slice"
            and info.attrs["key"] == attrs["key"]
            and not attrs["accumulate"]
        )
    # copy_(parent, view taken back to the parent's shape), the view a parent's view
    if info is None or info.op.name not in (*BIJECTIVE, "reshape_like"):
        return False
    inner = info.parent._view
    return inner is not None and inner.parent is parent and inner.op.name in BIJECTIVE


def written_view(op, inputs):
    """For the write-back op(inputs) (is_write_back), the view the write went through: the
    first of the chain of write-backs that ends here."""
    v = inputs[1] if op.name == "index_put_" else inputs[1]._view.parent
    while v._node is not None and v._node.write_back:  # a write-back into v: go down a view
        v = written_view(v._node.op, v._node.inputs)
    return v


def restamp(v):
    """After a write through v: v and the views between it and the base are current."""
    info = v._view
    while info is not None:
        info.base_node = info.base._node
        info = info.parent._view


UNCERTAIN_READ = (
    "a reshape in a program read after its input was written in place: the program cannot "
    "tell whether the reshape copied (then it holds the old values) or is a view (the new "
    "ones), so no gradient goes through it; take the reshape after the write, or clone() first"
)
UNCERTAIN_WRITE = (
    "an in-place write through a reshape in a program: the reshape copies where the layout "
    "needs it, which a program learns only when it runs, so no gradient goes through the "
    "value written; write into the reshape's input instead, or use the out-of-place op"
)


class _NoGradient:
    """The op of a history autograd cannot follow: its gradient rule raises, so backward
    fails only where a gradient would go through it (duck-typed, like a jit call's op)."""

    inplace: dict = {}
    view = False

    def __init__(self, message: str):
        self.name, self.message = "no_gradient", message

    def grad(self, g, out):
        raise UnsupportedError(self.message)


def poison(v, message: str):
    """Give the graph value v a history whose gradient raises `message`."""
    node = Node(_NoGradient(message), [], {}, [v], ([], [v._version[0]]), [])
    v._node, v._index = node, 0
