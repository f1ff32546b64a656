"""Recurrent layers: the cells (RNNCell, LSTMCell, GRUCell), PyTorch's RNN, LSTM and GRU over
whole sequences, and dynamic_rnn.

The parameters are PyTorch's, by PyTorch's names (weight_ih_l0, weight_hh_l0, bias_ih_l0,
bias_hh_l0, `_reverse` for the backward direction), so state dicts carry over. Each layer
multiplies the whole input sequence by W_ih in one GEMM, then steps through time with the
cells' gate math (lstm_gates, gru_gates); the Python loop over time unrolls into the Program
under @nbflow.jit.

dynamic_rnn runs a cell over a batch of variable-length sequences:

    outputs, state = nbflow.nn.dynamic_rnn(lstm_cell, x, lengths)     # x: (time, batch, features)

The batch is padded (time-major by default, `batch_first=True` for (batch, time, features))
with one length per sequence, or packed as PaddlePaddle's LoD does: the sequences one after
another, (total steps, features), with `offsets` [0, end of sequence 0, end of 1, ...].
A sequence stops updating after its last step: its state is carried unchanged (a `where` on
a mask) and its outputs past its length are zero, so the final state is each sequence's own
last state and gradients flow through exactly the steps that sequence took. Runs eagerly as
a Python loop (up to the longest length) and, under a graph trace, as one while op whose
per-step outputs are stacked by the op itself (memory linear in the time)."""

from __future__ import annotations

import math

import numpy as np

from ... import ops
from ...argcheck import choice, integer, within_budget
from ...core import STATE, UNKNOWN
from ...core import dtypes as dt
from ...core.dtypes import as_dtype
from ...core.errors import ArgumentError, DomainError, ShapeError
from ...eager.operators import Operators
from ...eager.tensor import Tensor, tensor
from .. import init
from ..utils.rnn import PackedSequence, pad_packed_sequence, repack_like
from .module import Module, Parameter
from .utils import _empty, flag, ints, reals


class _RNNCellBase(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=None, generator=None):
        super().__init__()
        sizes = ints(self, input_size=input_size, hidden_size=hidden_size)
        (self.input_size, self.hidden_size), self.bias = sizes, bias
        rows = self.gates * self.hidden_size
        self.weight_ih = _empty(rows, self.input_size, dtype=dtype)
        self.weight_hh = _empty(rows, self.hidden_size, dtype=dtype)
        if flag(self, "bias", bias):
            self.bias_ih = _empty(rows, dtype=dtype)
            self.bias_hh = _empty(rows, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        """PyTorch's: every weight and bias uniform(+-1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound, generator)

    def _affine(self, x, weight, bias):
        y = ops.matmul(x, ops.matrix_transpose(weight))
        return y if bias is None else y + bias

    def _ih(self, x):
        return self._affine(x, self.weight_ih, self.bias_ih)

    def _hh(self, h):
        """The hidden-to-hidden term; with no state (h None, meaning zeros) just the bias."""
        if h is None:
            return self.bias_hh
        return self._affine(h, self.weight_hh, self.bias_hh)

    def _check(self, x, *states):
        """Whether x is unbatched; each state given must be a tensor of shape (batch,
        hidden_size), or (hidden_size,) for an unbatched x (PyTorch raises where
        broadcasting would hide the mistake)."""
        name = type(self).__name__
        if x.ndim not in (1, 2):
            raise ShapeError(
                f"{name}: input must be (batch, {self.input_size}) or "
                f"({self.input_size},), got shape {tuple(x.shape)}"
            )
        want = (x.shape[0], self.hidden_size) if x.ndim == 2 else (self.hidden_size,)
        for h in states:
            if h is None:
                continue
            if not isinstance(h, Operators):
                raise ArgumentError(f"{name}: a state must be a tensor, got {type(h).__name__}")
            if len(h.shape) != len(want) or not all(
                a == b or UNKNOWN in (a, b) for a, b in zip(h.shape, want)
            ):
                raise ShapeError(
                    f"{name}: state of shape {tuple(h.shape)} for input of shape "
                    f"{tuple(x.shape)}; expected {want}"
                )
        return x.ndim == 1

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s if self.bias else s + ", bias=False"


def lstm_gates(pre, c, hidden_size):
    """(h', c') of an LSTM step from its gate pre-activations (x W_ih + b_ih + h W_hh +
    b_hh, gates stacked as input, forget, cell, output); c None means zeros."""
    i, f, g, o = ops.split(pre, hidden_size, axis=-1)
    i, f, g, o = ops.sigmoid(i), ops.sigmoid(f), ops.tanh(g), ops.sigmoid(o)
    c_new = i * g if c is None else f * c + i * g
    return o * ops.tanh(c_new), c_new


def gru_gates(xg, hg, h, hidden_size):
    """h' of a GRU step from x W_ih + b_ih (xg) and h W_hh + b_hh (hg; gates stacked as
    reset, update, new): hg None means neither state nor hidden bias, h None a zeros state."""
    xr, xz, xn = ops.split(xg, hidden_size, axis=-1)
    if hg is None:
        r, z = ops.sigmoid(xr), ops.sigmoid(xz)
        n = ops.tanh(xn)
    else:
        hr, hz, hn = ops.split(hg, hidden_size, axis=-1)
        r, z = ops.sigmoid(xr + hr), ops.sigmoid(xz + hz)
        n = ops.tanh(xn + r * hn)
    return (1 - z) * n if h is None else (1 - z) * n + z * h


def _batched(t, unbatched):
    return None if t is None else (ops.unsqueeze(t, 0) if unbatched else t)


def _unbatched(t, unbatched):
    return ops.squeeze(t, 0) if unbatched else t


class RNNCell(_RNNCellBase):
    """h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh), act tanh or relu; h None means zeros."""

    gates = 1

    def __init__(
        self,
        input_size,
        hidden_size,
        bias=True,
        nonlinearity="tanh",
        dtype=None,
        generator=None,
    ):
        nonlinearity = choice(nonlinearity, ("tanh", "relu"), "RNNCell: nonlinearity")
        super().__init__(input_size, hidden_size, bias, dtype, generator)
        self.nonlinearity = nonlinearity

    def forward(self, x, h=None):
        unbatched = self._check(x, h)
        x, h = _batched(x, unbatched), _batched(h, unbatched)
        pre = self._ih(x)
        hh = self._hh(h)
        if hh is not None:
            pre = pre + hh
        out = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return _unbatched(out, unbatched)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity!r}"


class LSTMCell(_RNNCellBase):
    """PyTorch's LSTM cell; gates stacked as (input, forget, cell, output):
    i, f, o = sigmoid(.), g = tanh(.), c' = f * c + i * g, h' = o * tanh(c').
    forward(x, (h, c)) -> (h', c'); state None means zeros."""

    gates = 4

    def forward(self, x, state=None):
        if state is not None and not (isinstance(state, (tuple, list)) and len(state) == 2):
            got = type(state).__name__ + (f" of {len(state)}" if isinstance(state, tuple) else "")
            raise ArgumentError(f"LSTMCell: the state must be a tuple (h, c), got a {got}")
        h, c = (None, None) if state is None else state
        unbatched = self._check(x, h, c)
        x, h, c = (_batched(t, unbatched) for t in (x, h, c))
        pre = self._ih(x)
        hh = self._hh(h)
        if hh is not None:
            pre = pre + hh
        h_new, c_new = lstm_gates(pre, c, self.hidden_size)
        return _unbatched(h_new, unbatched), _unbatched(c_new, unbatched)


class GRUCell(_RNNCellBase):
    """PyTorch's GRU cell; gates stacked as (reset, update, new):
    r = sigmoid(x W_ir + b_ir + h W_hr + b_hr), z likewise,
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) * n + z * h."""

    gates = 3

    def forward(self, x, h=None):
        unbatched = self._check(x, h)
        x, h = _batched(x, unbatched), _batched(h, unbatched)
        return _unbatched(gru_gates(self._ih(x), self._hh(h), h, self.hidden_size), unbatched)


class _RNNBase(Module):
    gates = 1  # gate blocks stacked in the weights
    states = 1  # the LSTM carries two: (h, c)

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        sizes = ints(self, input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        self.input_size, self.hidden_size, self.num_layers = sizes
        [self.proj_size] = ints(self, proj_size=proj_size)
        [self.dropout] = reals(self, dropout=dropout)
        if self.num_layers < 1:
            raise DomainError(f"num_layers must be >= 1, got {num_layers}")
        if proj_size and self.states == 1:
            raise DomainError("proj_size is only supported for LSTM, not RNN or GRU (as PyTorch)")
        if not 0 <= self.proj_size < max(self.hidden_size, 1):
            raise DomainError(f"proj_size must be in [0, hidden_size), got {proj_size}")
        if not 0.0 <= self.dropout <= 1.0:
            raise DomainError(f"dropout must be in [0, 1], got {dropout}")
        self.bias = flag(self, "bias", bias)
        self.bidirectional = flag(self, "bidirectional", bidirectional)
        self.batch_first = batch_first
        self.generator = generator
        directions = 2 if bidirectional else 1
        rows = self.gates * self.hidden_size
        out = self.proj_size or self.hidden_size  # the size of h: projected by weight_hr
        # every layer's parameters, counted before any is made (num_layers 2**63 looped on)
        widths = self.input_size + (self.num_layers - 1) * out * directions
        per_layer = rows * (out + 2 * self.bias) + self.proj_size * self.hidden_size
        count = directions * (rows * widths + self.num_layers * per_layer)
        within_budget(type(self).__name__, (count,), np.float32 if dtype is None else dtype)
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else out * directions
            for suffix in self._suffixes(layer):
                self._param(f"weight_ih{suffix}", (rows, width), dtype)
                self._param(f"weight_hh{suffix}", (rows, out), dtype)
                for name in (f"bias_ih{suffix}", f"bias_hh{suffix}"):
                    if self.bias:
                        self._param(name, (rows,), dtype)
                    else:
                        self.register_parameter(name, None)
                if self.proj_size:
                    self._param(f"weight_hr{suffix}", (self.proj_size, self.hidden_size), dtype)
        self.reset_parameters(generator)

    def _param(self, name, shape, dtype):
        setattr(self, name, Parameter(ops.zeros(shape, dtype=dtype)))

    def _suffixes(self, layer):
        return [f"_l{layer}"] + ([f"_l{layer}_reverse"] if self.bidirectional else [])

    def reset_parameters(self, generator=None) -> None:
        """PyTorch's: every weight and bias uniform(+-1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound, generator)

    def forward(self, input, hx=None):
        """input (T, B, input_size) ((B, T, ...) with batch_first; (T, input_size) unbatched)
        -> (output (T, B, directions * hidden_size), final state (layers * directions, B,
        hidden_size); for the LSTM a pair (h, c)). A PackedSequence input gives a PackedSequence
        output and each sequence's state at its own last step (_packed)."""
        if isinstance(input, PackedSequence):
            return self._packed(input, hx)
        return self._run(input, hx, None)

    def _packed(self, packed, hx):
        """Run the padded batch (original order) with a mask that freezes each sequence's
        state past its length: the forward direction's final state is the state at the
        last real step, and the reverse direction starts from h0 at that step."""
        padded, lengths = pad_packed_sequence(packed)
        alive = np.arange(padded.shape[0])[:, None] < lengths.numpy()[None, :]
        # (T, B, 1): step t of sequence b is real; on the data's device, as it selects in it
        mask = tensor(alive[:, :, None], device=getattr(padded, "device", None))
        if self.batch_first:  # (a packed input has no batch axis to put first)
            padded = ops.transpose(padded, 0, 1)
        out, final = self._run(padded, hx, mask)
        if self.batch_first:
            out = ops.transpose(out, 0, 1)
        return repack_like(out, packed), final

    def _run(self, input, hx, mask):
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ShapeError(
                f"{type(self).__name__}: input must be (seq, batch, {self.input_size}) "
                f"(batch first: (batch, seq, ...)) or (seq, {self.input_size}), got "
                f"{tuple(input.shape)}"
            )
        unbatched = input.ndim == 2
        x = ops.unsqueeze(input, 1) if unbatched else input
        if self.batch_first and not unbatched:
            x = ops.transpose(x, 0, 1)
        states = self._initial(hx, x, unbatched)
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = ops.dropout(x, self.dropout, True, self.generator)
            outs = []
            for d, suffix in enumerate(self._suffixes(layer)):
                k = layer * len(self._suffixes(layer)) + d
                state = [s[k] for s in states]
                out, final = self._direction(x, state, suffix, reverse=d == 1, mask=mask)
                outs.append(out)
                finals.append(final)
            x = outs[0] if len(outs) == 1 else ops.concat(outs, axis=2)
        if self.batch_first and not unbatched:
            x = ops.transpose(x, 0, 1)
        final = [ops.stack([f[i] for f in finals]) for i in range(len(states))]
        if unbatched:
            x, final = ops.squeeze(x, 1), [ops.squeeze(f, 1) for f in final]
        return x, (final[0] if len(final) == 1 else tuple(final))

    def _initial(self, hx, x, unbatched):
        """The initial states, each (layers * directions, B, size): h's size is proj_size when
        the LSTM projects, c's hidden_size."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][: self.states]
        name = type(self).__name__
        if self.states == 1:
            parts = [hx]
        elif hx is None:
            parts = [None] * self.states
        elif isinstance(hx, (tuple, list)) and len(hx) == self.states:
            parts = list(hx)
        else:
            got = type(hx).__name__ + (f" of {len(hx)}" if isinstance(hx, tuple) else "")
            raise ArgumentError(f"{name}: the state must be a tuple (h_0, c_0), got a {got}")
        states = []
        for h, size in zip(parts, sizes):
            shape = (count, x.shape[1], size)
            if h is not None and not isinstance(h, Operators):  # (a Tensor or a graph Var)
                raise ArgumentError(f"{name}: a state must be a tensor, got {type(h).__name__}")
            if h is None:
                device = getattr(x, "device", None)  # (graph values: placed by the executor)
                states.append(ops.zeros(shape, dtype=x.dtype, device=device))
                continue
            h = ops.unsqueeze(h, 1) if unbatched else h
            if tuple(h.shape) != shape:
                raise ShapeError(f"{type(self).__name__}: state of shape {h.shape}, not {shape}")
            states.append(h)
        return states

    def _direction(self, x, state, suffix, reverse, mask=None):
        """(outputs (T, B, H), final state) of one layer in one direction; where mask[t] is
        False the state is carried unchanged (packed sequences past their length)."""
        w_ih, w_hh = getattr(self, f"weight_ih{suffix}"), getattr(self, f"weight_hh{suffix}")
        b_ih, b_hh = getattr(self, f"bias_ih{suffix}"), getattr(self, f"bias_hh{suffix}")
        w_hr = getattr(self, f"weight_hr{suffix}", None)  # the LSTM's projection, if any
        xw = self._input_term(x, w_ih, b_ih)
        steps, batch = x.shape[0], x.shape[1]
        # cut into steps by one split, whose gradient is one concat: indexing each step
        # would give each step's gradient as a zero-filled (T * B, gates * H) tensor to sum
        xw = ops.split(ops.reshape(xw, steps * batch, xw.shape[-1]), [batch] * steps, axis=0)
        outs = [None] * steps
        for t in reversed(range(steps)) if reverse else range(steps):
            new = self._step(xw[t], state, w_hh, b_hh, w_hr)
            state = new if mask is None else [ops.where(mask[t], n, s) for n, s in zip(new, state)]
            outs[t] = state[0]
        return ops.stack(outs), state

    @staticmethod
    def _input_term(x, w_ih, b_ih):
        """x W_ih^T + b_ih of every step in one GEMM: (T * B, width) @ (width, gates * H)."""
        steps, batch = x.shape[0], x.shape[1]
        xw = ops.linear(ops.reshape(x, steps * batch, x.shape[2]), w_ih, b_ih)
        return ops.reshape(xw, steps, batch, xw.shape[-1])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False),
                              ("proj_size", 0)):  # fmt: skip
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class RNN(_RNNBase):
    """h' = act(x W_ih + b_ih + h W_hh + b_hh), act tanh (or relu: nonlinearity='relu')."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        nonlinearity = choice(nonlinearity, ("tanh", "relu"), "RNN: nonlinearity")
        super().__init__(*args, **kwargs)
        self.nonlinearity = nonlinearity

    def _step(self, xw, state, w_hh, b_hh, w_hr):
        pre = xw + ops.linear(state[0], w_hh, b_hh)
        return [ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)]


class LSTM(_RNNBase):
    """PyTorch's LSTM; forward(input, (h0, c0)) -> (output, (h_n, c_n)). With proj_size > 0
    each step's h is projected by weight_hr (proj_size, hidden_size), as PyTorch's: h,
    h_n and the output have proj_size features, c keeps hidden_size."""

    gates, states = 4, 2

    def _direction(self, x, state, suffix, reverse, mask=None):
        """One layer in one direction as one op (ops/recurrent.py: lstm_sequence), unless a
        mask, a projection or a GPU input asks for the steps op by op."""
        w_hh = getattr(self, f"weight_hh{suffix}")
        plain = mask is None and self.proj_size == 0 and x.shape[0] > 0
        if not plain or getattr(x, "is_cuda", False):
            return _RNNBase._direction(self, x, state, suffix, reverse, mask)  # (RNNBase too)
        xw = self._input_term(
            x, getattr(self, f"weight_ih{suffix}"), getattr(self, f"bias_ih{suffix}")
        )
        b_hh = getattr(self, f"bias_hh{suffix}")
        if b_hh is None:
            b_hh = ops.zeros(w_hh.shape[0], dtype=w_hh.dtype)
        hs, cs, _ = ops.lstm_sequence(xw, w_hh, b_hh, *state, reverse=reverse)
        last = 0 if reverse else -1
        return hs, [hs[last], cs[last]]

    def _step(self, xw, state, w_hh, b_hh, w_hr):
        h, c = state
        h, c = lstm_gates(xw + ops.linear(h, w_hh, b_hh), c, self.hidden_size)
        return [h if w_hr is None else ops.linear(h, w_hr), c]


class GRU(_RNNBase):
    """PyTorch's GRU; forward(input, h0) -> (output, h_n)."""

    gates = 3

    def _step(self, xw, state, w_hh, b_hh, w_hr):
        (h,) = state
        return [gru_gates(xw, ops.linear(h, w_hh, b_hh), h, self.hidden_size)]


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
            raise DomainError("dynamic_rnn: give lengths or offsets, not both")
        inputs, lengths = pack_offsets(inputs, offsets)
    elif lengths is None:
        raise DomainError("dynamic_rnn needs lengths (or offsets)")
    if batch_first:
        inputs = ops.transpose(inputs, 0, 1)
    if inputs.ndim < 2:
        raise ShapeError(f"dynamic_rnn: inputs must be (time, batch, ...), got {inputs.shape}")
    lengths = _lengths(lengths, inputs)
    step, state, single = _adapt(cell, inputs, initial_state)
    outputs, state = _scan(step, inputs, lengths, state)
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
            raise DomainError("dynamic_rnn: a function cell needs an initial_state")

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


def _scan(step, inputs, lengths, state):
    """The steps as one loop, the trace's while_loop with each step's output stacked (JAX's
    scan), up to the longest length, then zero rows up to the time. Step 0 always runs
    (masked), so its output gives the outputs' shape even when every sequence is empty."""
    time = inputs.shape[0]  # (-1: known only at run time)
    if time == 0:  # no row for step 0 to read: a zero row
        inputs = ops.sum(ops.zeros_like(inputs), axis=0, keepdims=True)
    rows = ops.sum(inputs, axis=tuple(range(1, inputs.ndim)))  # (time,): only its shape is read
    if time >= 0:
        one = ops.ones(1, dtype=lengths.dtype, device=getattr(inputs, "device", None))
        limit = ops.max(ops.concat(lengths, one))
    else:  # every step (the mask keeps it right)
        limit = ops.cast(ops.sum(ops.ones_like(rows)), "int64")
    k = len(state)

    def running(t, *state):
        return t < limit

    def body(t, *state):
        out, new = _masked_step(step, ops.index_select(inputs, 0, t), t, lengths, list(state))
        return [t + 1, *new, out]

    bound = max(time, 1) if time >= 0 else None
    final = STATE.trace.while_loop(running, body, [0, *state], bound, stacked=1)
    outputs = final[k + 1]
    if time >= 0:  # zero rows past the longest sequence, rows 0..time-1
        zeros = ops.zeros_like(ops.sum(outputs, axis=0, keepdims=True))  # (1, batch, ...)
        column = ops.reshape(
            ops.zeros_like(rows, dtype=outputs.dtype), (-1,) + (1,) * (outputs.ndim - 1)
        )
        padded = ops.concat(outputs, column + zeros)
        outputs = ops.index_select(padded, 0, ops.arange(time))
    return outputs, final[1 : k + 1]


class _Covers(type):
    """The metaclass of PyTorch's exported RNN bases: isinstance / issubclass hold for nbflow's
    own base class (`_covers`) and its subclasses (nn.LSTM is an nn.RNNBase), which cannot
    inherit from the exported class (it inherits from theirs)."""

    def __instancecheck__(cls, obj) -> bool:
        return cls.__subclasscheck__(type(obj))

    def __subclasscheck__(cls, sub) -> bool:
        covers = cls.__dict__.get("_covers")
        return type.__subclasscheck__(cls, sub) or (covers is not None and issubclass(sub, covers))


_RNN_MODES = {"RNN_TANH": (RNN, "tanh"), "RNN_RELU": (RNN, "relu"), "LSTM": (LSTM, None)}
_RNN_MODES["GRU"] = (GRU, None)


class RNNBase(_RNNBase, metaclass=_Covers):
    """PyTorch's RNNBase: the base of nn.RNN, nn.LSTM and nn.GRU (isinstance holds for them),
    and itself a recurrent layer of `mode` 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'."""

    _covers = _RNNBase

    def __init__(
        self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
        dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, generator=None,
    ):  # fmt: skip
        if not isinstance(mode, str) or mode not in _RNN_MODES:
            raise DomainError(f"Unrecognized RNN mode: {mode}")
        kind, nonlinearity = _RNN_MODES[mode]
        # (read by _RNNBase.__init__, before Module.__init__ allows attribute assignment)
        self.__dict__.update(gates=kind.gates, states=kind.states, _kind=kind)
        options = (num_layers, bias, batch_first, dropout, bidirectional, proj_size)
        super().__init__(input_size, hidden_size, *options, as_dtype(dtype), generator)
        self.mode = mode
        if nonlinearity is not None:
            self.nonlinearity = nonlinearity
        if device is not None:
            self.to(device)

    def _step(self, *args):
        return self._kind._step(self, *args)

    def _direction(self, *args, **kwargs):  # (nn.LSTM's: one lstm_sequence op)
        return self._kind._direction(self, *args, **kwargs)


class RNNCellBase(_RNNCellBase, metaclass=_Covers):
    """PyTorch's RNNCellBase: the base of nn.RNNCell, nn.LSTMCell and nn.GRUCell (isinstance
    holds for them); num_chunks gate blocks of hidden_size rows in its weights."""

    _covers = _RNNCellBase

    def __init__(
        self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None, generator=None
    ):
        # (read by _RNNCellBase.__init__)
        self.__dict__["gates"] = integer(num_chunks, "RNNCellBase: num_chunks")
        super().__init__(input_size, hidden_size, bias, as_dtype(dtype), generator)
        if device is not None:
            self.to(device)


__all__ = [
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "dynamic_rnn",
    "pack_offsets",
]
