"""dynamic_rnn: a recurrent cell over a batch of variable-length sequences.

    outputs, state = nbflow.nn.dynamic_rnn(lstm_cell, x, lengths)     # x: (time, batch, features)

The batch is padded (time-major by default, `batch_first=True` for (batch, time, features))
with one length per sequence, or packed as PaddlePaddle's LoD does: the sequences one after
another, (total steps, features), with `offsets` [0, end of sequence 0, end of 1, ...].
A sequence stops updating after its last step: its state is carried unchanged (a `where` on
a mask) and its outputs past its length are zero, so the final state is each sequence's own
last state and gradients flow through exactly the steps that sequence took. Runs eagerly as
a Python loop (up to the longest length) and, under a graph trace, as one while op whose
per-step outputs are stacked by the op itself (memory linear in the time).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..core import STATE
from ..core import dtypes as dt
from ..core.errors import ShapeError
from ..eager.tensor import EagerTrace, Tensor, tensor
from .layers import GRUCell, LSTMCell, RNNCell

__all__ = ["dynamic_rnn", "pack_offsets"]


def dynamic_rnn(cell, inputs, lengths=None, initial_state=None, *, offsets=None, batch_first=False):
    """Run `cell` over each sequence for its own length.

    cell: an RNNCell, GRUCell or LSTMCell, or any function (x_t, state) -> (out_t, new_state)
    where state is a tensor or a tuple of tensors, each (batch, ...).
    inputs: padded (time, batch, features) (batch_first: (batch, time, features)) with
    `lengths` (batch,) ints <= time; or packed (total steps, features) with `offsets`.
    initial_state: default zeros for the nn cells; required for a function.
    Returns (outputs, final_state): outputs (time, batch, out features) (batch_first: batch
    first), zero past each length; final_state has the cell's state structure."""
    if offsets is not None:
        if lengths is not None:
            raise ValueError("dynamic_rnn: give lengths or offsets, not both")
        inputs, lengths = pack_offsets(inputs, offsets)
    elif lengths is None:
        raise ValueError("dynamic_rnn needs lengths (or offsets)")
    if batch_first:
        inputs = ops.transpose(inputs, 0, 1)
    if inputs.ndim < 2:
        raise ShapeError(f"dynamic_rnn: inputs must be (time, batch, ...), got {inputs.shape}")
    lengths = _lengths(lengths, inputs)
    step, state, single = _adapt(cell, inputs, initial_state)
    if isinstance(STATE.trace, EagerTrace):
        outputs, state = _eager(step, inputs, lengths, state)
    else:
        outputs, state = _graph(step, inputs, lengths, state)
    if batch_first:
        outputs = ops.transpose(outputs, 0, 1)
    return outputs, (state[0] if single else tuple(state))


def pack_offsets(packed, offsets):
    """Packed sequences (total steps, features) with offsets [0, e0, e1, ...] (LoD level 1)
    as a padded time-major batch (longest length, batch, features) and lengths. The offsets
    are data of the call (a list, array or eager tensor), the packed values may be graph
    vars."""
    offs = np.asarray(offsets.numpy() if isinstance(offsets, Tensor) else offsets, np.int64)
    if offs.ndim != 1 or len(offs) < 2 or offs[0] != 0 or np.any(np.diff(offs) < 0):
        raise ShapeError(f"offsets must start at 0 and never decrease, got {offs.tolist()}")
    if packed.shape[0] >= 0 and offs[-1] != packed.shape[0]:  # (-1: known at run time)
        raise ShapeError(f"offsets end at {offs[-1]}, the packed data has {packed.shape[0]} steps")
    lengths = np.diff(offs)
    steps = int(lengths.max()) if len(lengths) else 0
    # row b of step t is packed row offs[b] + t; past a sequence's end, any row (masked)
    rows = np.minimum(offs[:-1][None, :] + np.arange(steps)[:, None], max(offs[-1] - 1, 0))
    device = getattr(packed, "device", None)  # (a graph value has none: placed when run)
    padded = ops.index_select(packed, 0, tensor(rows.astype(np.int64), device=device))
    return padded, tensor(lengths, device=device)  # the steps' masks compare with them


def _lengths(lengths, inputs):
    # on the inputs' device: the steps' masks (lengths > t) select among their values
    device = getattr(inputs, "device", None)
    if not isinstance(lengths, Tensor) and not hasattr(lengths, "block"):  # a list, array
        lengths = tensor(np.asarray(lengths, np.int64), device=device)
    elif isinstance(lengths, Tensor) and lengths.device != device:  # (PyTorch's are host data)
        lengths = lengths.to(device)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise ShapeError(
            f"dynamic_rnn: lengths must be 1-d ints, got {lengths.dtype}{lengths.shape}"
        )
    batch, steps = inputs.shape[1], inputs.shape[0]
    if -1 not in (batch, lengths.shape[0]) and lengths.shape[0] != batch:
        raise ShapeError(f"dynamic_rnn: {lengths.shape[0]} lengths for a batch of {batch}")
    if isinstance(lengths, Tensor) and np.any((lengths.numpy() < 0) | (lengths.numpy() > steps)):
        raise ShapeError(f"dynamic_rnn: lengths must be in [0, {steps}], got {lengths.tolist()}")
    if not isinstance(lengths, Tensor) and steps >= 0:  # a graph value: checked when run
        lengths = ops.checked_range(lengths, low=0, high=steps, what="dynamic_rnn: lengths")
    elif not isinstance(lengths, Tensor):  # against the time dim the run is given
        first = inputs[(slice(None),) + (0,) * (inputs.ndim - 1)]  # (time,)
        time = ops.sum(ops.ones_like(first).astype(dt.int64))
        outside = ops.sum(((lengths < 0) | (lengths > time)).astype(dt.int64))
        what = "dynamic_rnn: the count of lengths outside [0, the time dim of the inputs]"
        check = ops.checked_range(outside, low=0, high=0, what=what)
        lengths = ops.depend_(lengths.clone(), check)  # (reading them runs the check)
    return lengths


def _adapt(cell, inputs, initial_state):
    """(step(x_t, state list) -> (out_t, state list), the initial state list, single?)."""
    if isinstance(cell, LSTMCell):

        def step(x, state):
            h, c = cell(x, tuple(state))
            return h, [h, c]

        zeros = _zeros(inputs, cell.hidden_size)
        init = (zeros, zeros) if initial_state is None else initial_state
    elif isinstance(cell, (RNNCell, GRUCell)):

        def step(x, state):
            h = cell(x, state[0])
            return h, [h]

        init = _zeros(inputs, cell.hidden_size) if initial_state is None else initial_state
    else:
        if initial_state is None:
            raise ValueError("dynamic_rnn: a function cell needs an initial_state")

        def step(x, state):
            out, new = cell(x, state[0] if single else tuple(state))
            return out, (list(new) if isinstance(new, (tuple, list)) else [new])

        init = initial_state
    single = not isinstance(init, (tuple, list))
    return step, ([init] if single else list(init)), single


def _zeros(inputs, size: int):
    """Zeros (batch, size) in the inputs' dtype (the batch may be known only at run time)."""
    column = ops.sum(ops.zeros_like(inputs[:1, :, :1]), axis=0)  # (batch, 1), for no steps too
    return column + ops.zeros(size, dtype=inputs.dtype, device=getattr(inputs, "device", None))


def _masked_step(step, x, t, lengths, state):
    out, new = step(x, state)
    if len(new) != len(state):
        raise ShapeError(f"dynamic_rnn: the cell returned {len(new)} states for {len(state)}")
    alive = lengths > t  # (batch,) sequences still running at step t
    masks = {}  # by rank: the mask shaped (batch, 1, ...) to broadcast against a value

    def mask(like):
        if like.ndim not in masks:
            masks[like.ndim] = ops.reshape(alive, (-1,) + (1,) * (like.ndim - 1))
        return masks[like.ndim]

    state = [ops.where(mask(s), n, s) for n, s in zip(new, state)]
    return ops.where(mask(out), out, 0), state


def _eager(step, inputs, lengths, state):
    # up to the longest sequence; step 0 always runs (masked), as in graph mode: its output
    # gives the output shape even when every sequence is empty
    steps, time = max(int(lengths.numpy().max()) if lengths.shape[0] else 0, 1), inputs.shape[0]
    outs = []
    for t in range(steps):
        # (no time steps at all: a zero row gives the output shape, and no row is kept)
        x = inputs[t] if time else ops.sum(ops.zeros_like(inputs[:1]), axis=0)
        out, state = _masked_step(step, x, t, lengths, state)
        outs.append(out)
    outputs = ops.stack(*outs)[:time]
    if steps < time:  # padding past the longest sequence
        pad = [(0, time - steps)] + [(0, 0)] * (outputs.ndim - 1)
        outputs = ops.pad(outputs, pad)
    return outputs, state


def _graph(step, inputs, lengths, state):
    """One while op over the steps up to the longest length; each step's output is a stacked
    output of the loop (no buffer carried through it), padded with zero rows to the time."""
    from ..graph.control import graph_while  # graph mode only: the eager half stays apart

    time = ops.sum(inputs, axis=tuple(range(1, inputs.ndim)))  # (time,): only its shape is read
    steps = inputs.shape[0]
    if steps >= 0:
        limit = ops.max(lengths)
    else:  # the time is known only at run time: run every step (the mask keeps it right)
        limit = ops.cast(ops.sum(ops.ones_like(time)), "int64")
    k = len(state)

    def running(t, *state):
        return t < limit

    def body(t, *state):
        out, new = _masked_step(step, ops.index_select(inputs, 0, t), t, lengths, list(state))
        return [t + 1, *new, out]

    bound = steps if steps >= 0 else None
    final = graph_while(running, body, [0, *state], bound, stacked=1)
    outputs = final[k + 1]
    if steps >= 0:  # zero rows past the longest sequence, up to the time
        zeros = ops.zeros_like(ops.sum(outputs, axis=0, keepdims=True))  # (1, batch, ...)
        column = ops.reshape(
            ops.zeros_like(time, dtype=outputs.dtype), (-1,) + (1,) * (outputs.ndim - 1)
        )
        padded = ops.concat(outputs, column + zeros)
        outputs = ops.index_select(padded, 0, ops.arange(steps))  # rows 0..time-1, time known
    return outputs, final[1 : k + 1]
