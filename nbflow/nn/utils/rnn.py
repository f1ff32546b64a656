"""PyTorch's torch.nn.utils.rnn: padded and packed batches of variable-length sequences.

A PackedSequence holds the steps of every sequence interleaved by time: first step 0 of each
sequence (longest first), then step 1 of those still running, and so on; batch_sizes[t] is
how many sequences have a step t. The lengths are data of the call, not of the graph: the
index arithmetic runs in numpy on the host and becomes index_select constants, so the
values (which may be graph vars under @nbflow.jit) keep their gradients, while a traced
Program is specific to the lengths it was traced with (pass them as Python ints, which jit
keys on).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import ops
from ...core.errors import DomainError, ShapeError, UnsupportedError
from ...eager.tensor import Tensor, tensor


class PackedSequence(NamedTuple):
    """data (total steps, *), batch_sizes (longest length,) int64, and the permutation that
    sorted the batch by decreasing length (None when it was already sorted)."""

    data: object
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the original (unsorted) batch order."""
        sizes = self.batch_sizes.numpy()
        ordered = (sizes[None, :] > np.arange(int(sizes[0]) if len(sizes) else 0)[:, None]).sum(1)
        if self.unsorted_indices is None:
            return ordered.astype(np.int64)
        return ordered[self.unsorted_indices.numpy()].astype(np.int64)


def _host_lengths(lengths) -> np.ndarray:
    """Lengths as a 1-d int64 numpy array; a graph var cannot be, so it raises."""
    if hasattr(lengths, "block"):  # a graph Var
        raise UnsupportedError(
            "packing needs the lengths on the host: under @nbflow.jit pass them as Python "
            "ints (a tuple or list), which the trace keys on"
        )
    array = np.asarray(lengths.numpy() if isinstance(lengths, Tensor) else lengths)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ShapeError(f"lengths must be a 1-d sequence of ints, got {array.tolist()}")
    return array.astype(np.int64)


def _device(x):
    """Where tensors made to combine with x go: x's device (a graph value has none: the
    executor places them)."""
    return getattr(x, "device", None)


def _check_lengths(lengths: np.ndarray, steps: int, batch: int) -> None:
    if len(lengths) != batch:
        raise ShapeError(
            f"Expected `len(lengths)` to be equal to batch_size {batch}, but got {len(lengths)}"
        )
    if len(lengths) and lengths.min() <= 0:
        raise ShapeError(
            "Length of all samples has to be greater than 0, but found an element in "
            f"'lengths' that is <= 0 (lengths {lengths.tolist()})"
        )
    if len(lengths) and lengths.max() > steps:
        raise ShapeError(f"lengths {lengths.tolist()} exceed the sequence length {steps}")


def _batch_sizes(sorted_lengths: np.ndarray) -> np.ndarray:
    steps = int(sorted_lengths[0]) if len(sorted_lengths) else 0
    return (sorted_lengths[None, :] > np.arange(steps)[:, None]).sum(1).astype(np.int64)


def _packed_rows(batch_sizes: np.ndarray, batch: int) -> np.ndarray:
    """For each packed row, its row in the time-major padded batch flattened (t * B + b)."""
    return np.concatenate(
        [t * batch + np.arange(n) for t, n in enumerate(batch_sizes)] or [np.zeros(0)]
    ).astype(np.int64)


def _pack(padded, batch_sizes: np.ndarray, sorted_indices, unsorted_indices) -> PackedSequence:
    """Pack a time-major padded batch whose batch axis is already in sorted order."""
    steps, batch = padded.shape[0], padded.shape[1]
    flat = ops.reshape(padded, (steps * batch, *padded.shape[2:]))
    rows = tensor(_packed_rows(batch_sizes, batch), device=_device(padded))
    # batch_sizes stay on the CPU (host data, as in PyTorch)
    return PackedSequence(
        ops.index_select(flat, 0, rows), tensor(batch_sizes), sorted_indices, unsorted_indices
    )


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) batch_first) of sequences of `lengths`.
    With enforce_sorted the lengths must not increase (ONNX-exportable in PyTorch); without,
    the batch is sorted here and the permutation kept in the PackedSequence."""
    x = ops.transpose(input, 0, 1) if batch_first else input
    lengths = _host_lengths(lengths)
    _check_lengths(lengths, x.shape[0], x.shape[1])
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise ShapeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        order = unsorted = None
    else:
        perm = np.argsort(-lengths, kind="stable")
        device = _device(x)  # (PyTorch keeps the permutations on the data's device)
        order, unsorted = tensor(perm, device=device), tensor(np.argsort(perm), device=device)
        x, lengths = ops.index_select(x, 1, order), lengths[perm]
    return _pack(x, _batch_sizes(lengths), order, unsorted)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths int64 (B,)), in the
    original batch order; T is the longest length, or total_length if given (>= it)."""
    sizes = sequence.batch_sizes.numpy().astype(np.int64)
    steps, batch = len(sizes), int(sizes[0]) if len(sizes) else 0
    if total_length is not None:
        if total_length < steps:
            raise ShapeError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = int(total_length)
    data = sequence.data
    # each padded (t, b) reads its packed row, or the padding row appended at the end
    where = np.full(steps * batch, len(_packed_rows(sizes, batch)), np.int64)
    where[_packed_rows(sizes, batch)] = np.arange(int(sizes.sum()))
    fill = ops.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=_device(data))
    rows = ops.index_select(ops.concat([data, fill]), 0, tensor(where, device=_device(data)))
    padded = ops.reshape(rows, (steps, batch, *data.shape[1:]))
    if sequence.unsorted_indices is not None:
        padded = ops.index_select(padded, 1, sequence.unsorted_indices)
    if batch_first:
        padded = ops.transpose(padded, 0, 1)
    return padded, tensor(sequence.lengths())  # (on the CPU, as in PyTorch)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences (L_i, *) into (T, B, *) ((B, T, *) batch_first), T the longest,
    filling with padding_value on the right (or the left: padding_side='left')."""
    if padding_side not in ("left", "right"):
        raise DomainError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    sequences = list(sequences)
    if not sequences:
        raise ShapeError("pad_sequence: received an empty list of sequences")
    steps = max(s.shape[0] for s in sequences)
    padded = [_pad_one(s, steps, padding_value, padding_side) for s in sequences]
    return ops.stack(padded, axis=0 if batch_first else 1)


def _pad_one(seq, steps: int, value, side: str):
    if seq.shape[0] == steps:
        return seq
    shape = (steps - seq.shape[0], *seq.shape[1:])
    fill = ops.full(shape, value, dtype=seq.dtype, device=_device(seq))
    return ops.concat([seq, fill] if side == "right" else [fill, seq])


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *) (decreasing lengths unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences `padded_sequences[:, b][:lengths[b]]` (batch_first: `[b]`)."""
    x = padded_sequences if batch_first else ops.transpose(padded_sequences, 0, 1)
    return [x[b][: int(n)] for b, n in enumerate(_host_lengths(lengths))]


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def repack_like(padded, like: PackedSequence) -> PackedSequence:
    """Pack a time-major padded batch in the original order with `like`'s lengths and
    permutation (the recurrent layers' outputs keep their input's packing)."""
    if like.sorted_indices is not None:
        padded = ops.index_select(padded, 1, like.sorted_indices)
    sizes = like.batch_sizes.numpy().astype(np.int64)
    return _pack(padded[: len(sizes)], sizes, like.sorted_indices, like.unsorted_indices)


__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]
