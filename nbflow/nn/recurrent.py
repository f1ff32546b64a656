"""PyTorch's RNN, LSTM and GRU: whole sequences, several layers, both directions.

The parameters are PyTorch's, by PyTorch's names (weight_ih_l0, weight_hh_l0, bias_ih_l0,
bias_hh_l0, `_reverse` for the backward direction), so state dicts carry over. Each layer
multiplies the whole input sequence by W_ih in one GEMM, then steps through time with the
cells' gate math (layers.lstm_gates, layers.gru_gates); the Python loop over time unrolls
into the Program under @nbflow.jit (for sequences of varying length in one Program, see
nbflow.nn.dynamic_rnn)."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..core.errors import ArgumentError, DomainError, ShapeError
from ..eager.operators import Operators
from ..eager.tensor import tensor
from . import init
from .layers import gru_gates, lstm_gates
from .module import Module, Parameter
from .utils.rnn import PackedSequence, pad_packed_sequence, repack_like


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
        if int(num_layers) < 1:
            raise DomainError(f"num_layers must be >= 1, got {num_layers}")
        if proj_size and self.states == 1:
            raise DomainError("proj_size is only supported for LSTM, not RNN or GRU (as PyTorch)")
        if not 0 <= int(proj_size) < max(int(hidden_size), 1):
            raise DomainError(f"proj_size must be in [0, hidden_size), got {proj_size}")
        if not 0.0 <= dropout <= 1.0:
            raise DomainError(f"dropout must be in [0, 1], got {dropout}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = int(num_layers), bool(bias), batch_first
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.proj_size = int(proj_size)
        self.generator = generator
        directions = 2 if bidirectional else 1
        rows = self.gates * self.hidden_size
        out = self.proj_size or self.hidden_size  # the size of h: projected by weight_hr
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else out * directions
            for suffix in self._suffixes(layer):
                self._param(f"weight_ih{suffix}", (rows, width), dtype)
                self._param(f"weight_hh{suffix}", (rows, out), dtype)
                for name in (f"bias_ih{suffix}", f"bias_hh{suffix}"):
                    if bias:
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
        if nonlinearity not in ("tanh", "relu"):
            raise DomainError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
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


__all__ = ["GRU", "LSTM", "RNN"]
