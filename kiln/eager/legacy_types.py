"""PyTorch's legacy tensor constructors: `Tensor(...)` and the typed classes `kn.FloatTensor`,
`kn.LongTensor`, ... (and `kn.cuda.FloatTensor`, ...), as older PyTorch programs call them:
`kn.FloatTensor(std.size()).normal_()`, `x.type(kn.LongTensor)`, `isinstance(x, kn.FloatTensor)`.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from ..array_types import Size
from ..errors import ArgumentTypeError

__all__ = ["Variable", "legacy_new", "typed_classes"]

_TYPED = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64",
    "Bool": "bool",
}  # fmt: skip


def legacy_new(data, dtype, device, requires_grad, name, typed=False):
    """The tensor `name(*data)` makes, as PyTorch's legacy constructor: sizes (ints or one
    `Size`) give a tensor of that shape (zeros here; PyTorch leaves it uninitialized), one
    tensor gives an alias of it (a typed constructor refuses another dtype), one sequence
    (list, tuple, array) is copied in as `dtype`; nothing gives an empty tensor.

    >>> import kiln as kn
    >>> x = kn.ones(2, 3)
    >>> kn.FloatTensor(x.size()).shape, kn.Tensor(x).data_ptr() == x.data_ptr()
    (kiln.Size([2, 3]), True)
    """
    from .factories import tensor, zeros
    from .tensor import Tensor

    if len(data) == 1 and isinstance(data[0], Size):  # `Size([])`: a 0-d tensor
        return zeros(tuple(data[0]), dtype=dtype, device=device, requires_grad=requires_grad)
    if all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in data):
        sizes = data or (0,)
        return zeros(*sizes, dtype=dtype, device=device, requires_grad=requires_grad)
    if len(data) != 1:
        raise ArgumentTypeError(
            f"{name}(): expected sizes (ints) or one data argument, got "
            f"{', '.join(type(d).__name__ for d in data)}"
        )
    data = data[0]
    if isinstance(data, Tensor):
        if typed and data._data.dtype != dt.as_dtype(dtype):
            raise ArgumentTypeError(
                f"{name}(): expected a tensor of dtype {dt._PUBLIC[dt.as_dtype(dtype)]}, "
                f"got {data.dtype}"
            )
        return data.view(data.shape)  # an alias: it shares the memory (and the graph)
    if isinstance(data, (bool, int, float, complex, np.generic)):
        raise ArgumentTypeError(f"{name}(): data must be a sequence (got {type(data).__name__})")
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


class _TensorType(type):
    """The metaclass of the typed classes: calling one builds a Tensor of its dtype (and
    device); `isinstance` asks a Tensor's dtype and device."""

    def __call__(cls, *data, device=None):
        return legacy_new(data, cls.dtype, device or cls._device, False, cls.__name__, True)

    def __instancecheck__(cls, obj):
        from .tensor import Tensor

        return (
            isinstance(obj, Tensor)
            and obj._data.dtype == dt.as_dtype(cls.dtype)
            and obj.is_cuda == cls.is_cuda
        )

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def typed_classes(cuda: bool) -> dict:
    """The typed classes by name (`FloatTensor`, ...), of the cpu or of cuda.

    >>> import kiln as kn
    >>> kn.LongTensor([1.5, 2.0]), isinstance(kn.zeros(1), kn.FloatTensor)
    (tensor([1, 2]), True)
    """
    module = "kiln.cuda" if cuda else "kiln"
    return {
        f"{kind}Tensor": _TensorType(
            f"{kind}Tensor",
            (),
            {
                "__module__": module,
                "__doc__": f"PyTorch's legacy `{kind}Tensor`: `{kind}Tensor(data)` or "
                f"`{kind}Tensor(*sizes)` makes a {dtype} tensor{' on cuda' if cuda else ''}.",
                "dtype": dt._PUBLIC[dt.as_dtype(dtype)],
                "is_cuda": cuda,
                "_device": "cuda" if cuda else "cpu",
            },
        )
        for kind, dtype in _TYPED.items()
    }


class _VariableType(type):
    def __call__(cls, data, requires_grad: bool = False, volatile: bool = False):
        from .tensor import Tensor

        if not isinstance(data, Tensor):
            raise ArgumentTypeError(
                f"Variable data has to be a tensor, but got {type(data).__name__}"
            )
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        alias = data.detach()  # a new leaf on the same memory
        return alias.requires_grad_(True) if requires_grad else alias

    def __instancecheck__(cls, obj):
        from .tensor import Tensor

        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """PyTorch's legacy `torch.autograd.Variable` (`kn.autograd.Variable`): `Variable(t,
    requires_grad=True)` is a leaf on `t`'s memory (`t.detach()`, requiring grad if asked);
    every Tensor is an instance. (kiln's own `kn.Variable` is a graph-mode variable.)

    >>> import kiln as kn
    >>> w = kn.autograd.Variable(kn.ones(2), requires_grad=True)
    >>> w.requires_grad, w.is_leaf, isinstance(w, kn.autograd.Variable)
    (True, True, True)
    """
