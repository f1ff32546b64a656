"""L-BFGS (PyTorch's torch.optim.LBFGS, itself after minFunc): a quasi-Newton method that keeps
the last `history_size` steps and gradient changes and applies the inverse Hessian they imply
by the two-loop recursion, with a fixed step (lr) or a strong Wolfe line search.

The algorithm is PyTorch's line by line, including its line search (`_strong_wolfe`, ported
from torch/optim's lswolfe.lua) and cubic interpolation, its stopping rules and its state (kept
under the first parameter, index 0 of `state`). It is eager only: each iteration branches on
values (the curvature test, the tolerances, the line search), so `step(closure)` runs in
Python and calls the closure several times; `minimize()` (graph mode) is refused. The vector
arithmetic runs on nbflow tensors (on the parameters' device); the scalars (step length,
curvatures, losses) are Python floats, where PyTorch keeps some as 0-d tensors of the
parameters' dtype: float64 parameters give PyTorch's iterates to rounding.
"""

from __future__ import annotations

import math

from .. import ops
from ..core import dtypes as dt
from ..core import no_grad
from ..core.errors import DomainError, UnsupportedError
from ..eager.tensor import Tensor
from .optimizer import Optimizer, _check, _evaluate, _is_real

__all__ = ["LBFGS"]

_STATES = (
    "func_evals",
    "n_iter",
    "d",
    "t",
    "old_dirs",
    "old_stps",
    "ro",
    "H_diag",
    "prev_flat_grad",
    "prev_loss",
    "al",
)
_VECTORS = ("d", "prev_flat_grad")  # flat tensors of all the parameters' elements
_VECTOR_LISTS = ("old_dirs", "old_stps")


def _reals(p) -> int:
    """p's coordinates in the flat vectors: two for each complex element."""
    return 2 * p.numel() if dt.is_complex(p.dtype) else p.numel()


def _float(x) -> float:
    return float(x.item()) if isinstance(x, Tensor) else float(x)


def _dot(a: Tensor, b: Tensor) -> float:
    return ops.dot(a, b).item()


def _abs_max(x: Tensor) -> float:
    return ops.max(ops.abs(x)).item()


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped
    to `bounds` (default: between x1 and x2); their midpoint when the cubic has no minimum."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step t along d satisfying the strong Wolfe conditions (sufficient decrease c1,
    curvature c2): bracket an interval holding one, then zoom into it by cubic
    interpolation. Returns (f, g, t, function evaluations) at the step taken."""
    d_norm = _abs_max(d)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # extrapolate, between just past t and ten times t
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

    if ls_iter == max_ls:  # no bracket within the evaluations allowed
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point in it satisfies the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # a trial too close to an end of the bracket (twice, or outside it): move it to 0.1
        # of the bracket's length from the nearest end
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # no sufficient decrease, or not below the low end: the new high end
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # the Wolfe conditions hold
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # the old high end becomes the new low end
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS (PyTorch's defaults: lr=1, max_iter=20, max_eval=max_iter * 5 // 4,
    tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None or
    'strong_wolfe'). One parameter group only. `step(closure)` runs up to max_iter iterations,
    the closure (which must zero the gradients, compute the loss, call backward and return
    the loss) once per fixed step or several times per line search, and returns the closure's
    first loss."""

    state_names = _STATES

    def __init__(
        self,
        params,
        lr=1,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        if not _is_real(lr) or not float(lr) >= 0.0:
            raise DomainError(f"Invalid learning rate: {lr!r}")
        _check(max_iter=max_iter, tolerance_grad=tolerance_grad)
        _check(tolerance_change=tolerance_change, history_size=history_size)
        if max_eval is not None:
            _check(max_eval=max_eval)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        hyper = {
            "lr": float(lr),
            "max_iter": int(max_iter),
            "max_eval": int(max_eval),
            "tolerance_grad": float(tolerance_grad),
            "tolerance_change": float(tolerance_change),
            "history_size": int(history_size),
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, hyper)
        if len(self.param_groups) != 1:
            raise DomainError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, group: dict):
        if self.param_groups:
            raise DomainError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(group)

    # A complex parameter's elements count as pairs of reals in the flat vectors (view_as_real),
    # as in PyTorch: its real and imaginary parts are coordinates of their own.

    def _numel(self) -> int:
        return sum(_reals(p) for p in self._params)

    def _gather_flat_grad(self) -> Tensor:
        views = []
        for p in self._params:
            if p.grad is None:
                zeros = ops.zeros((_reals(p),), dtype=dt.to_real(p.dtype), device=p.device)
                views.append(zeros)
            else:
                g = ops.view_as_real(p.grad) if dt.is_complex(p.dtype) else p.grad
                views.append(ops.reshape(g, (-1,)))
        return ops.concat(views) if len(views) > 1 else ops.clone(views[0])

    def _add_grad(self, step_size: float, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            n = _reals(p)
            part = update[offset : offset + n]
            if dt.is_complex(p.dtype):
                part = ops.view_as_complex(ops.reshape(part, (*p.shape, 2)))
            ops.add_(p, ops.reshape(part, p.shape) * step_size)
            offset += n

    def _clone_param(self) -> list:
        return [ops.clone(p) for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self._params, params_data):
            ops.copy_(p, data)

    def _directional_evaluate(self, closure, x, t, d):
        """(loss, flat gradient) at x + t d; the parameters are x again afterwards."""
        self._add_grad(t, d)
        loss = _float(_evaluate(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def minimize(self, loss, *args, **kwargs):
        raise UnsupportedError(
            "LBFGS is eager only: each step branches on values and calls its closure several "
            "times (line search); call backward() inside a closure and step(closure)"
        )

    def step(self, closure):
        """Run up to max_iter L-BFGS iterations; returns the loss before the first."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # LBFGS's state is global, kept under the first parameter (PyTorch's layout)
        state = self.state.setdefault(0, {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = _evaluate(closure)
        loss = _float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _abs_max(flat_grad) <= tolerance_grad:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:  # positive curvature: remember the pair (limited memory)
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)  # the initial inverse Hessian's scale
                d = self._two_loop(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size)

            prev_flat_grad = ops.clone(flat_grad)
            prev_loss = loss

            # the step length: the first iteration's guess is scaled by the gradient
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / ops.sum(ops.abs(flat_grad)).item()) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # the directional derivative is too small
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":  # (PyTorch's check, made here too)
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = _abs_max(flat_grad) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:  # (not after the last: no use in a stochastic setting)
                    loss = _float(_evaluate(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = _abs_max(flat_grad) <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _abs_max(d * t) <= tolerance_change:  # no progress in the parameters
                break
            if abs(loss - prev_loss) < tolerance_change:  # nor in the loss
                break

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=H_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss,
        )
        return orig_loss

    @staticmethod
    def _two_loop(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size) -> Tensor:
        """-H g for the inverse Hessian H the remembered pairs imply (the two-loop recursion)."""
        al = state.setdefault("al", [None] * history_size)
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = _dot(old_stps[i], q) * ro[i]
            q = q - old_dirs[i] * al[i]
        r = q * H_diag
        for i in range(len(old_dirs)):
            be_i = _dot(old_dirs[i], r) * ro[i]
            r = r + old_stps[i] * (al[i] - be_i)
        return r

    # -------------------------------------------------------------- state

    def state_dict(self) -> dict:
        """PyTorch's layout: the global state under parameter 0 (copies of its tensors), one
        parameter group."""
        state = {i: {k: _copied(v) for k, v in s.items()} for i, s in self.state.items()}
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        return {
            "state": state,
            "param_groups": [{**group, "params": list(range(len(self._params)))}],
        }

    def _restored(self, i: int, p: Tensor, name: str, value):
        where = f"LBFGS.load_state_dict: state '{name}'"
        if i != 0 or name not in _STATES:
            raise DomainError(f"{where} of parameter {i} is not a state of LBFGS")
        n = self._numel()
        if name in _VECTORS or name in _VECTOR_LISTS:
            vectors = value if name in _VECTOR_LISTS else [value]
            if not isinstance(vectors, list) or not all(
                isinstance(v, Tensor) and tuple(v.shape) == (n,) for v in vectors
            ):
                raise DomainError(f"{where}: expected flat tensors of {n} elements")
        return _copied(value)


def _copied(value):
    """A copy of a state entry: tensors cloned, lists copied, numbers as they are."""
    if isinstance(value, Tensor):
        return ops.clone(value)
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value
