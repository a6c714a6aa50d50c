"""PyTorch's storage objects on eager tensors: `Tensor.untyped_storage()` (a
`kn.UntypedStorage`: the bytes of the memory the tensor views), `Tensor.storage()` (a
`kn.TypedStorage`: the same memory as elements of the tensor's dtype; deprecated in PyTorch,
which warns so) and `Tensor.set_()`, which makes a tensor view a storage or another tensor's
memory.

A tensor's storage is the whole array its memory belongs to, so the views of one tensor share
one storage: the same `data_ptr()`, and writes through a storage's items are seen by every
tensor on that memory. A storage is a window on that memory: it does not grow (`resize_`),
and `set_` to sizes past its end is refused rather than reallocating the memory under the
other tensors."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentTypeError, DTypeMismatchError, UsageError, call_error
from ..runtime.backend import get_backend
from .grad_mode import state
from .storage import _root
from .tensor import Tensor, _address

__all__ = ["TypedStorage", "UntypedStorage", "is_storage"]


def _memory(t: Tensor):
    """The flat array of t's storage (the array that owns t's memory, in t's dtype)."""
    data = t._data
    root = _root(data)
    # the owning array, or t's own data, whose elements fill one block of memory in some
    # order of its dims (a result laid out as a permuted input's, as PyTorch lays it out)
    for owner in (root, data) if root.dtype == data.dtype else (data,):
        dense = owner.transpose(np.argsort([-abs(st) for st in owner.strides], kind="stable"))
        if dense.flags.c_contiguous:
            return dense.reshape(-1)  # (a view: in memory order)
    raise call_error(UsageError, "untyped_storage: the tensor views memory kiln cannot "
                     "address as one storage (a NumPy array of another layout); "
                     "clone() it first", "untyped_storage", t)  # fmt: skip


class UntypedStorage:
    """The bytes of a tensor's memory (PyTorch's `torch.UntypedStorage`): `nbytes()`,
    `size()` and `len()` (bytes), `data_ptr()`, `device`, byte items (`s[i]`, `s[i] = v`,
    slices, `tolist()`), `fill_`, `copy_`, `tolist`. Made by `Tensor.untyped_storage()`.

    >>> import kiln as kn
    >>> x = kn.arange(6.0)
    >>> s = x.untyped_storage()
    >>> s.nbytes(), s.data_ptr() == x[2:].untyped_storage().data_ptr()
    (24, True)
    """

    def __init__(self, memory, device: str = "cpu"):
        self._bytes = memory.view(np.uint8) if memory.dtype != np.uint8 else memory
        self.device = device

    def nbytes(self) -> int:
        return int(self._bytes.size)

    size = nbytes

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return int(_address(self._bytes))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return UntypedStorage(self._bytes[index], self.device)
        return int(self._bytes[index])

    def __setitem__(self, index, value) -> None:
        self._bytes[index] = value

    def tolist(self) -> list:
        return [int(v) for v in self._bytes.tolist()]

    def fill_(self, value) -> UntypedStorage:
        self._bytes[...] = value
        return self

    def copy_(self, other) -> UntypedStorage:
        if other.nbytes() != self.nbytes():
            raise UsageError(f"copy_: storages of {other.nbytes()} and {self.nbytes()} bytes")
        self._bytes[...] = other._bytes
        return self

    def is_shared(self) -> bool:
        from .storage import _shared

        return _shared(self._bytes)

    def untyped(self) -> UntypedStorage:
        return self

    def __repr__(self) -> str:
        items = "\n".join(f" {v}" for v in self.tolist())
        return f"{items}\n[kiln.storage.UntypedStorage(device={self.device}) of size {len(self)}]"


class TypedStorage:
    """A tensor's memory as elements of its dtype (PyTorch's deprecated
    `torch.TypedStorage`): `size()` and `len()` (elements), `nbytes()`, `dtype`,
    `element_size()`, `data_ptr()`, items (`s[i]`, `s[i] = v`), `tolist()`, `untyped()`.
    Made by `Tensor.storage()`, which warns as PyTorch's does.

    >>> import kiln as kn, warnings
    >>> x = kn.arange(4.0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     s = x[1:].storage()
    >>> s[3] = 9.0
    >>> len(s), s.dtype, x
    (4, kiln.float32, tensor([0., 1., 2., 9.]))
    """

    def __init__(self, memory, device: str = "cpu"):
        self._elements = memory
        self.device = device
        self.dtype = dt.public(memory.dtype)

    def size(self) -> int:
        return int(self._elements.size)

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return int(self._elements.nbytes)

    def element_size(self) -> int:
        return int(self._elements.itemsize)

    def data_ptr(self) -> int:
        return int(_address(self._elements))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return TypedStorage(self._elements[index], self.device)
        return self._elements[index].item()

    def __setitem__(self, index, value) -> None:
        self._elements[index] = value

    def tolist(self) -> list:
        return self._elements.tolist()

    def fill_(self, value) -> TypedStorage:
        self._elements[...] = value
        return self

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._elements, self.device)

    def __repr__(self) -> str:
        items = "\n".join(f" {v}" for v in self.tolist())
        return (f"{items}\n[kiln.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {len(self)}]")  # fmt: skip


def is_storage(obj) -> bool:
    """Whether obj is a storage object (`kn.UntypedStorage` or `kn.TypedStorage`), as
    PyTorch's `is_storage`.

    >>> import kiln as kn
    >>> x = kn.zeros(2)
    >>> kn.is_storage(x.untyped_storage()), kn.is_storage(x)
    (True, False)
    """
    return isinstance(obj, (UntypedStorage, TypedStorage))


def untyped_storage(self) -> UntypedStorage:
    """The bytes of the memory this tensor views (shared by its views), as PyTorch's
    `untyped_storage()`.

    >>> import kiln as kn
    >>> kn.zeros(2, 3)[1].untyped_storage().nbytes()
    24
    """
    return UntypedStorage(_memory(self), self._device)


def storage(self) -> TypedStorage:
    """The memory this tensor views as elements of its dtype (PyTorch's deprecated
    `storage()`, which warns so: `untyped_storage()` is the current form).

    >>> import kiln as kn, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kn.arange(3)[1:].storage().tolist()
    [0, 1, 2]
    """
    warnings.warn(
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will "
        "be the only storage class. To access UntypedStorage directly, use "
        "tensor.untyped_storage() instead of tensor.storage()",
        UserWarning,
        stacklevel=2,
    )
    return TypedStorage(_memory(self), self._device)


def set_(self, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Makes this tensor view other memory, as PyTorch's `set_`: `set_()` empties it,
    `set_(tensor)` shares tensor's memory, sizes and strides, `set_(storage, offset, size,
    stride)` views a storage (contiguous strides unless given; offset in elements).

    >>> import kiln as kn
    >>> x = kn.arange(6.0)
    >>> y = kn.zeros(1).set_(x.untyped_storage(), 2, (2, 2))
    >>> y[0, 0] = 100.0
    >>> y, x[2]
    (tensor([[100.,   3.],
            [  4.,   5.]]), tensor(100.))
    """
    if self._requires_grad and state.grad:
        raise call_error(UsageError, "set_: a leaf Variable that requires grad is being used in "
                         "an in-place operation.", "set_", self)  # fmt: skip
    if source is None:
        self._data = self._data.reshape(-1)[:0]
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise call_error(DTypeMismatchError, f"set_: could not set a tensor of dtype "
                             f"{self.dtype} to one of dtype {source.dtype}", "set_", self,
                             source)  # fmt: skip
        self._data = source._data[...]
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        memory = source._bytes if isinstance(source, UntypedStorage) else source._elements
        dtype = dt.as_dtype(self.dtype)
        if isinstance(source, TypedStorage) and memory.dtype != dtype:
            raise call_error(DTypeMismatchError, f"set_: a storage of dtype {source.dtype} for "
                             f"a tensor of dtype {self.dtype}", "set_", self)  # fmt: skip
        flat = memory.view(np.uint8).view(dtype) if memory.dtype != dtype else memory
        size = tuple(int(d) for d in (size if size is not None else (flat.size,)))
        if stride is None:
            stride = tuple(int(np.prod(size[i + 1 :])) for i in range(len(size)))
        extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        if storage_offset < 0 or storage_offset + extent > flat.size:
            raise call_error(UsageError, f"set_: sizes {list(size)}, strides {list(stride)} and "
                             f"storage offset {storage_offset} need {storage_offset + extent} "
                             f"elements; the storage has {flat.size} (kiln does not grow a "
                             "storage other tensors view)", "set_", self)  # fmt: skip
        item = dtype.itemsize
        steps = [s * item for s in stride]
        xp = np if self._device == "cpu" else get_backend(self._device).activate()
        self._data = xp.lib.stride_tricks.as_strided(flat[storage_offset:], size, steps)
    else:
        raise ArgumentTypeError(f"set_(): argument 'source' must be a Tensor or a storage, not "
                                f"{type(source).__name__}")  # fmt: skip
    from ..frontend.inplace import _bump

    _bump(self, "set_")
    return self


def install(cls) -> None:
    """The storage methods of `Tensor`."""
    cls.untyped_storage, cls.storage, cls.set_ = untyped_storage, storage, set_


def set_data(self, value) -> None:
    """`t.data = value` (Tensor.data's setter)."""
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
    if self._requires_grad and not (dt.is_float(value.dtype) or dt.is_complex(value.dtype)):
        raise call_error(DTypeMismatchError, "data set to a tensor that requires gradients must be "
                         "floating point or complex dtype", "data", self, value)  # fmt: skip
    self._data = value._data
    self._device = value._device
