"""`default_collate` and `default_convert`: samples into batches, as PyTorch's (Tensors are
stacked, NumPy arrays and numbers become Tensors, containers are collated field by field)."""

from __future__ import annotations

import collections.abc as abc

import numpy as np

from ...eager import Tensor, tensor
from ...errors import ArgumentTypeError, ShapeMismatchError, call_error
from ...frontend import stack

__all__ = ["default_collate", "default_convert"]

_FOUND = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _is_numpy(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, (np.str_, np.bytes_))


def _same_type(elem, values):
    """`type(elem)` rebuilt from `values` where it takes them, else a plain dict or list."""
    try:
        return type(elem)(values)
    except TypeError:
        return dict(values) if isinstance(elem, abc.Mapping) else list(values)


def default_collate(batch):
    """Stacks a list of samples into a batch: Tensors and NumPy arrays into one Tensor
    (a new first dim), Python floats into float64 and ints into int64 Tensors, strings as
    given (a list, or a tuple for a field of tuples); dicts key by key, tuples and lists
    position by position (tuples give lists).

    >>> import kiln as kn
    >>> from kiln.utils.data import default_collate
    >>> default_collate([(kn.tensor([1.0]), 0), (kn.tensor([2.0]), 1)])
    [tensor([[1.],
            [2.]]), tensor([0, 1])]
    >>> default_collate([{"x": 0.5, "name": "a"}, {"x": 1.5, "name": "b"}])
    {'x': tensor([0.5000, 1.5000], dtype=kiln.float64), 'name': ['a', 'b']}
    """
    if not isinstance(batch, abc.Sequence) or not batch:
        raise ArgumentTypeError(_FOUND.format(type(batch).__name__))
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if _is_numpy(elem):
        if np.asarray(elem).dtype.char in "SaUO":
            raise ArgumentTypeError(_FOUND.format(np.asarray(elem).dtype))
        return tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):  # bools too: a bool Tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch  # as PyTorch's: as given (a field of tuples gives a tuple)
    if isinstance(elem, abc.Mapping):
        return _same_type(elem, [(k, default_collate([d[k] for d in batch])) for k in elem])
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            sizes = sorted({len(b) for b in batch})
            raise call_error(ShapeMismatchError, "each element in list of batch should be of "
                             f"equal size (sizes {sizes})", "default_collate")  # fmt: skip
        columns = [default_collate(s) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _same_type(elem, columns)
    raise ArgumentTypeError(_FOUND.format(type(elem).__name__))


def default_convert(data):
    """What the DataLoader does to samples without batching (`batch_size=None`): NumPy
    arrays and scalars become Tensors, containers are converted element by element.

    >>> import numpy as np
    >>> from kiln.utils.data import default_convert
    >>> default_convert({"x": np.zeros(2), "n": 3})
    {'x': tensor([0., 0.], dtype=kiln.float64), 'n': 3}
    """
    if _is_numpy(data):
        array = np.asarray(data)
        return data if array.dtype.char in "SaUO" else tensor(array)
    if isinstance(data, abc.Mapping):
        return _same_type(data, [(k, default_convert(v)) for k, v in data.items()])
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_type(data, [default_convert(d) for d in data])
    return data
