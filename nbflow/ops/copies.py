"""PyTorch's copying variants of the view functions (torch.expand_copy, torch.t_copy, ...):
the view's result as a new tensor that shares no memory with the input, so writing into one
never changes the other. Each is the view (a Tensor method, the same in eager and graph mode)
followed by a clone, which gradients flow through; functions returning several views
(unbind_copy, split_with_sizes_copy) copy each one."""

from ..argcheck import shown
from ..core.errors import ArgumentError
from ..core.op import is_value
from .elementwise import clone

# the views whose copies PyTorch provides, by the Tensor method that computes the view
VIEW_METHODS = (
    "diagonal",
    "expand",
    "narrow",
    "permute",
    "split_with_sizes",
    "squeeze",
    "t",
    "transpose",
    "unbind",
    "unfold",
    "unsqueeze",
    "view",
)


def _copying(name, view):
    def copy(input, *args, **kwargs):
        if not is_value(input):  # (a numpy array's own view/squeeze/... would answer)
            raise ArgumentError(
                f"{name}_copy: argument 'input' must be a tensor, got {shown(input)}"
            )
        out = view(input, *args, **kwargs)
        return tuple(clone(o) for o in out) if isinstance(out, (tuple, list)) else clone(out)

    copy.__name__ = copy.__qualname__ = f"{name}_copy"
    copy.__doc__ = f"PyTorch's torch.{name}_copy: input.{name}(...), copied (see the module)."
    return copy


def _method(name):
    return lambda input, *args, **kwargs: getattr(input, name)(*args, **kwargs)


COPIES = {f"{name}_copy": _copying(name, _method(name)) for name in VIEW_METHODS}
COPIES["alias_copy"] = _copying("alias", lambda input: input)  # the alias is the input itself

globals().update(COPIES)

__all__ = sorted(COPIES)
