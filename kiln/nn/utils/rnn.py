"""Packed and padded sequences, as PyTorch's `torch.nn.utils.rnn`: `pad_sequence`,
`pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`, `unpack_sequence`,
`unpad_sequence` and `PackedSequence`, which `kn.nn.RNN`, `LSTM` and `GRU` take as input.

A PackedSequence holds the steps of a batch of sequences of different lengths, longest
first: `data` is every sequence's step 0, then every step 1 of the sequences that long, and
so on; `batch_sizes[t]` counts the sequences with a step t. The lengths must be concrete
(a list, or an eager Tensor), as PyTorch wants them on the CPU; packing and unpacking are
gathers, so gradients flow through them.

>>> import kiln as kn
>>> from kiln.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
>>> x = kn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]])  # batch first, lengths 3 and 2
>>> packed = pack_padded_sequence(x, [3, 2], batch_first=True)
>>> packed.data.tolist(), packed.batch_sizes.tolist()
([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
>>> padded.tolist(), lengths.tolist()
([[1.0, 2.0, 3.0], [4.0, 5.0, -1.0]], [3, 2])
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import frontend as F
from ...eager import Tensor
from ...eager.factories import tensor as _tensor
from ...errors import ArgumentError, ArgumentTypeError, ShapeError, UsageError
from ...graph.core import Symbol
from ...ops.core import scalar

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class _PackedFields(NamedTuple):
    data: object
    batch_sizes: object = None
    sorted_indices: object = None
    unsorted_indices: object = None


class PackedSequence(_PackedFields):
    """`(data, batch_sizes, sorted_indices, unsorted_indices)`: the packed steps, the number
    of sequences at each step (int64), and the permutation that sorted the batch by
    decreasing length and its inverse (None when the batch came sorted). Given only
    `sorted_indices`, the inverse is computed, as PyTorch does; `PackedSequence((data,
    batch_sizes))` is `PackedSequence(data, batch_sizes)`.

    >>> import kiln as kn
    >>> p = PackedSequence(kn.ones(3, 1), kn.tensor([2, 1]), kn.tensor([1, 0]))
    >>> p.unsorted_indices.tolist()
    [1, 0]
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None and isinstance(data, (list, tuple)) and len(data) == 2:
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """`data.to(...)` (dtype or device); the indices follow a device change."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device

        def move(t):
            return None if t is None else t.to(device)

        return self._replace(data=data, sorted_indices=move(self.sorted_indices),
                             unsorted_indices=move(self.unsorted_indices))  # fmt: skip

    def _cast(self, name: str) -> PackedSequence:
        return self._replace(data=getattr(self.data, name)())

    def float(self) -> PackedSequence:  # noqa: A003 -- PyTorch's name
        return self._cast("float")

    def double(self) -> PackedSequence:
        return self._cast("double")

    def half(self) -> PackedSequence:
        return self._cast("half")

    def long(self) -> PackedSequence:
        return self._cast("long")

    def int(self) -> PackedSequence:  # noqa: A003 -- PyTorch's name
        return self._cast("int")

    def short(self) -> PackedSequence:
        return self._cast("short")

    def char(self) -> PackedSequence:
        return self._cast("char")

    def byte(self) -> PackedSequence:
        return self._cast("byte")

    def cpu(self, *args, **kwargs) -> PackedSequence:
        """The sequence on the CPU (`to("cpu")`)."""
        return self.to("cpu")

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to("cuda")

    def pin_memory(self) -> PackedSequence:
        """The sequence with `data` in pinned memory (kiln's CPU memory: itself)."""
        pin = getattr(self.data, "pin_memory", None)
        return self._replace(data=pin()) if callable(pin) else self

    @property
    def is_cuda(self) -> bool:
        return bool(getattr(self.data, "is_cuda", False))

    def is_pinned(self) -> bool:
        """Whether `data` is in pinned memory (never, in kiln)."""
        pinned = getattr(self.data, "is_pinned", None)
        return bool(pinned()) if callable(pinned) else False


def invert_permutation(permutation):
    """The inverse of the permutation `permutation` (an int64 Tensor), None for None.

    >>> import kiln as kn
    >>> invert_permutation(kn.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    if permutation is None:
        return None
    order = _concrete(permutation, "invert_permutation: permutation")
    return _as_index(np.argsort(order, kind="stable"))


def _concrete(values, what: str) -> np.ndarray:
    """The int64 values of `values` (a list, an array or an eager Tensor)."""
    if isinstance(values, Symbol):
        raise UsageError(
            f"{what} must be concrete (a list or an eager Tensor, on the CPU in PyTorch), "
            "not a graph value: pass the lengths as a Python list under kn.compile"
        )
    if isinstance(values, Tensor):
        values = values.tolist()
    return np.asarray(values, np.int64)


def _positions(batch_sizes: np.ndarray):
    """(t, b) of every packed row, in packed order."""
    t = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    b = np.concatenate([np.arange(n) for n in batch_sizes]) if len(batch_sizes) else t
    return t, b


def _sorted_lengths(batch_sizes: np.ndarray) -> np.ndarray:
    n = int(batch_sizes[0]) if len(batch_sizes) else 0
    return (batch_sizes[None, :] > np.arange(n)[:, None]).sum(1).astype(np.int64)


def padded_steps(data, batch_sizes: np.ndarray, total_length: int, padding_value=0.0):
    """(total_length, N, *) with the packed rows of `data` at their (t, b) places (batch in
    sorted order) and `padding_value` elsewhere: one gather, so it differentiates."""
    n = int(batch_sizes[0])
    rows = int(batch_sizes.sum())
    index = np.full((total_length, n), rows, np.int64)  # row `rows`: the padding
    t, b = _positions(batch_sizes)
    index[t, b] = np.arange(rows)
    pad = F.broadcast_to(scalar(padding_value, data), (1, *tuple(data.shape[1:])))
    return F.cat([data, pad], 0)[index]


def pack_steps(x, batch_sizes: np.ndarray):
    """The packed rows of `x` (T, N, *), batch in sorted order: the inverse of
    `padded_steps`."""
    t, b = _positions(batch_sizes)
    return x[t, b]


def _as_index(values) -> Tensor:
    return _tensor(np.asarray(values, np.int64))


def pack_padded_sequence(input, lengths, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:  # fmt: skip
    """Packs `input` (T, B, *), or (B, T, *) with `batch_first`, whose sequence i has
    `lengths[i]` steps. With `enforce_sorted` (the default) the lengths must decrease;
    otherwise the batch is sorted here and `sorted_indices` records how.

    >>> import kiln as kn
    >>> p = pack_padded_sequence(kn.ones(3, 2, 1), [2, 3], enforce_sorted=False)
    >>> p.batch_sizes.tolist(), p.sorted_indices.tolist(), p.unsorted_indices.tolist()
    ([2, 2, 1], [1, 0], [1, 0])
    """
    if any(n == 0 for n in input.shape):
        raise UsageError(f"pack_padded_sequence: Cannot pack empty tensors (input of shape "
                         f"{tuple(input.shape)}).")  # fmt: skip
    lengths = _concrete(lengths, "pack_padded_sequence: lengths")
    batch_dim = 0 if batch_first else 1
    if lengths.ndim != 1 or len(lengths) != input.shape[batch_dim]:
        raise ShapeError(
            f"pack_padded_sequence: expected one length per sequence ({input.shape[batch_dim]}"
            f"), got lengths of shape {tuple(lengths.shape)}"
        )
    if (lengths <= 0).any():
        raise UsageError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if lengths.max() > input.shape[1 - batch_dim]:
        raise UsageError(
            f"pack_padded_sequence: a length {int(lengths.max())} exceeds the "
            f"{input.shape[1 - batch_dim]} steps of the input"
        )
    if enforce_sorted:
        if (np.diff(lengths) > 0).any():
            raise UsageError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        order = None
    else:
        order = np.argsort(-lengths, kind="stable")
        input = input[:, order] if batch_dim == 1 else input[order]  # noqa: A001
        lengths = lengths[order]
    if batch_first:
        input = F.transpose(input, 0, 1)  # noqa: A001
    batch_sizes = (lengths[None, :] > np.arange(int(lengths[0]))[:, None]).sum(1)
    data = pack_steps(input, batch_sizes)
    batch_sizes = _as_index(batch_sizes)
    if order is None:
        return PackedSequence(data, batch_sizes, None, None)
    return PackedSequence(data, batch_sizes, _as_index(order), _as_index(np.argsort(order)))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):  # fmt: skip
    """`(padded, lengths)`: the inverse of `pack_padded_sequence`, the batch in its original
    order, `padding_value` after each sequence's end, `total_length` steps when given."""
    if not isinstance(sequence, PackedSequence):
        raise ArgumentTypeError(
            f"pad_packed_sequence: expected a PackedSequence, got {type(sequence).__name__}"
        )
    batch_sizes = _concrete(sequence.batch_sizes, "pad_packed_sequence: batch_sizes")
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    padded = padded_steps(sequence.data, batch_sizes, steps, padding_value)
    lengths = _sorted_lengths(batch_sizes)
    if sequence.unsorted_indices is not None:
        order = _concrete(sequence.unsorted_indices, "pad_packed_sequence: unsorted_indices")
        padded = padded[:, order]
        lengths = lengths[order]
    if batch_first:
        padded = F.transpose(padded, 0, 1)
    return padded, _as_index(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right"):  # fmt: skip
    """Stacks sequences of shapes (L_i, *) into (L_max, B, *), or (B, L_max, *) with
    `batch_first`, each padded with `padding_value` on its `padding_side`.

    >>> import kiln as kn
    >>> pad_sequence([kn.tensor([1, 2]), kn.tensor([3])], batch_first=True).tolist()
    [[1, 2], [3, 0]]
    """
    if padding_side not in ("left", "right"):
        raise UsageError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    try:
        sequences = list(sequences)
    except TypeError:
        raise UsageError("pad_sequence: Expected iterable for input sequences, but got arg of "
                         f"type: {type(sequences)}") from None  # fmt: skip
    if not sequences:
        raise UsageError("pad_sequence: received an empty list of sequences")
    if any(s.ndim == 0 for s in sequences):
        raise ShapeError("pad_sequence: expected sequences of at least 1 dim (L_i, *), got a "
                         "0-d tensor")  # fmt: skip
    longest = max(int(s.shape[0]) for s in sequences)
    dtype = sequences[0].dtype  # as PyTorch: the others are copied into the first's dtype
    rows = []
    for s in sequences:
        if s.dtype != dtype:
            s = F.cast(s, dtype)
        short = longest - int(s.shape[0])
        if short:
            pad = F.broadcast_to(scalar(padding_value, s), (short, *tuple(s.shape[1:])))
            s = F.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return F.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences (L_i, *): `pack_padded_sequence(pad_sequence(...))`.

    >>> import kiln as kn
    >>> pack_sequence([kn.tensor([1, 2, 3]), kn.tensor([4, 5])]).data.tolist()
    [1, 4, 2, 5, 3]
    """
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in the batch's original order.

    >>> import kiln as kn
    >>> seqs = [kn.tensor([1, 2]), kn.tensor([3, 4, 5])]
    >>> [s.tolist() for s in unpack_sequence(pack_sequence(seqs, enforce_sorted=False))]
    [[1, 2], [3, 4, 5]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [padded[i, :n] for i, n in enumerate(lengths.tolist())]


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The sequences of a padded batch, each cut to its length.

    >>> import kiln as kn
    >>> [s.tolist() for s in unpad_sequence(kn.tensor([[1, 2], [3, 0]]), [2, 1], True)]
    [[1, 2], [3]]
    """
    if not batch_first:
        padded_sequences = F.transpose(padded_sequences, 0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_concrete(lengths, "lengths"))]
