"""PyTorch's `*_copy` functions (each view op's result as a fresh tensor: `permute_copy`,
`t_copy`, `split_copy`, ...) and the factories kiln lacked: `asarray`, `empty_strided`,
`empty_permuted`, `range`, `frombuffer`, `from_dlpack`/`to_dlpack`, and `typename`. The copies
work on eager Tensors, on Symbols in graph mode and under `kn.compile`, with gradients.

>>> import kiln as kn
>>> x = kn.arange(6.0).reshape(2, 3)
>>> y = kn.t_copy(x)
>>> y[0, 1] = 9.0
>>> x.tolist(), y.tolist()
([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [[0.0, 9.0], [1.0, 4.0], [2.0, 5.0]])
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import dtypes as dt
from ..eager import factories as fa
from ..eager.tensor import Tensor, make
from ..errors import ArgumentError, ArgumentTypeError, UsageError
from ..graph.core import Symbol
from .out import factory_out

__all__ = [
    "alias_copy", "asarray", "detach_copy", "diagonal_copy", "empty_permuted", "empty_strided",
    "expand_copy", "from_dlpack", "frombuffer", "narrow_copy", "permute_copy", "range",
    "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy",
    "t_copy", "to_dlpack", "transpose_copy", "typename", "unbind_copy", "unfold_copy",
    "unsqueeze_copy", "view_copy",
]  # fmt: skip


def _tensor(op: str, input):  # noqa: A002
    if not isinstance(input, (Tensor, Symbol)):
        raise ArgumentTypeError(
            f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return input


def _new(value):
    """A contiguous tensor of `value`'s elements in memory of its own."""
    if isinstance(value, Symbol):
        return value.clone()  # graph values share no memory: a copy node keeps the op's name
    fresh = value.contiguous()
    return fresh.clone() if fresh is value else fresh


def _fresh(op: str, value, out):
    """A view's value as a new contiguous tensor (or tensors), written into `out` if given."""
    if isinstance(value, (tuple, list)):
        parts = [_new(v) for v in value]
        if out is None:
            return parts
        from ..eager.out import write_out

        if not isinstance(out, (tuple, list)) or len(out) != len(parts):
            raise ArgumentTypeError(f"{op}(): out= takes a list of {len(parts)} tensors")
        for o, v in zip(out, parts):  # each resized and dtype-checked as out= is
            write_out(op, o, lambda v=v: v, list(value))
        return None  # (PyTorch's list-valued out= forms return None)
    fresh = _new(value)
    if out is None:
        return fresh
    from ..eager.out import write_out

    return write_out(op, out, lambda: fresh, [value])


def view_copy(input, size=None, *, dtype=None, out=None):  # noqa: A002
    """`input.view(size)` (or `input.view(dtype)`, also as `dtype=`) as a new tensor.

    >>> import kiln as kn
    >>> kn.view_copy(kn.arange(4.0), (2, 2)).tolist(), kn.view_copy(kn.ones(1), dtype=kn.int32)
    ([[0.0, 1.0], [2.0, 3.0]], tensor([1065353216], dtype=kiln.int32))
    """
    if (size is None) == (dtype is None):
        raise ArgumentTypeError("view_copy() takes a size or a dtype (one of them)")
    return _fresh("view_copy", _tensor("view_copy", input).view(size if dtype is None else dtype),
                  out)  # fmt: skip


def permute_copy(input, dims, *, out=None):  # noqa: A002
    """`input.permute(dims)` as a new tensor.

    >>> import kiln as kn
    >>> kn.permute_copy(kn.zeros(2, 3, 4), (2, 0, 1)).shape
    kiln.Size([4, 2, 3])
    """
    return _fresh("permute_copy", _tensor("permute_copy", input).permute(tuple(dims)), out)


def expand_copy(input, size, *, implicit: bool = False, out=None):  # noqa: A002
    """`input.expand(size)` as a new tensor (every element its own memory).

    >>> import kiln as kn
    >>> kn.expand_copy(kn.tensor([1.0, 2.0]), (2, 2)).tolist()
    [[1.0, 2.0], [1.0, 2.0]]
    """
    return _fresh("expand_copy", _tensor("expand_copy", input).expand(*size), out)


def t_copy(input, *, out=None):  # noqa: A002
    """`input.t()` as a new tensor.

    >>> import kiln as kn
    >>> kn.t_copy(kn.tensor([[1.0, 2.0]])).tolist()
    [[1.0], [2.0]]
    """
    return _fresh("t_copy", _tensor("t_copy", input).t(), out)


def transpose_copy(input, dim0: int, dim1: int, *, out=None):  # noqa: A002
    """`input.transpose(dim0, dim1)` as a new tensor.

    >>> import kiln as kn
    >>> kn.transpose_copy(kn.zeros(2, 3, 4), 0, 2).shape
    kiln.Size([4, 3, 2])
    """
    return _fresh("transpose_copy", _tensor("transpose_copy", input).transpose(dim0, dim1), out)


def squeeze_copy(input, dim=None, *, out=None):  # noqa: A002
    """`input.squeeze(dim)` (every size-1 dim when `dim` is None) as a new tensor.

    >>> import kiln as kn
    >>> kn.squeeze_copy(kn.zeros(1, 2, 1)).shape, kn.squeeze_copy(kn.zeros(1, 2, 1), 0).shape
    (kiln.Size([2]), kiln.Size([2, 1]))
    """
    x = _tensor("squeeze_copy", input)
    return _fresh("squeeze_copy", x.squeeze() if dim is None else x.squeeze(dim), out)


def unsqueeze_copy(input, dim: int, *, out=None):  # noqa: A002
    """`input.unsqueeze(dim)` as a new tensor.

    >>> import kiln as kn
    >>> kn.unsqueeze_copy(kn.zeros(2), -1).shape
    kiln.Size([2, 1])
    """
    return _fresh("unsqueeze_copy", _tensor("unsqueeze_copy", input).unsqueeze(dim), out)


def select_copy(input, dim: int, index: int, *, out=None):  # noqa: A002
    """`input.select(dim, index)` as a new tensor.

    >>> import kiln as kn
    >>> kn.select_copy(kn.arange(6.0).reshape(2, 3), 1, -1).tolist()
    [2.0, 5.0]
    """
    return _fresh("select_copy", _tensor("select_copy", input).select(dim, index), out)


def slice_copy(input, dim: int = 0, start=None, end=None, step: int = 1, *, out=None):  # noqa: A002
    """`input[..., start:end:step, ...]` on `dim` as a new tensor.

    >>> import kiln as kn
    >>> kn.slice_copy(kn.arange(6.0), 0, 1, None, 2).tolist()
    [1.0, 3.0, 5.0]
    """
    x = _tensor("slice_copy", input)
    if step <= 0:
        raise UsageError(f"slice_copy: slice step must be positive, got {step}")
    d = dim % x.ndim if x.ndim else 0
    key = (slice(None),) * d + (slice(start, end, step),)
    return _fresh("slice_copy", x[key], out)


def diagonal_copy(input, offset: int = 0, dim1: int = 0, dim2: int = 1, *, out=None):  # noqa: A002
    """`input.diagonal(offset, dim1, dim2)` as a new tensor.

    >>> import kiln as kn
    >>> kn.diagonal_copy(kn.arange(9.0).reshape(3, 3), 1).tolist()
    [1.0, 5.0]
    """
    x = _tensor("diagonal_copy", input)
    return _fresh("diagonal_copy", x.diagonal(offset, dim1, dim2), out)


def detach_copy(input, *, out=None):  # noqa: A002
    """`input.detach()` as a new tensor (no gradient flows back).

    >>> import kiln as kn
    >>> kn.detach_copy(kn.ones(2, requires_grad=True)).requires_grad
    False
    """
    return _fresh("detach_copy", _tensor("detach_copy", input).detach(), out)


def alias_copy(input, *, out=None):  # noqa: A002
    """A new tensor with `input`'s values (the copy of PyTorch's `alias`).

    >>> import kiln as kn
    >>> x = kn.ones(2)
    >>> y = kn.alias_copy(x)
    >>> y is x, y.tolist()
    (False, [1.0, 1.0])
    """
    return _fresh("alias_copy", _tensor("alias_copy", input), out)


def unbind_copy(input, dim: int = 0, *, out=None):  # noqa: A002
    """`input.unbind(dim)` as new tensors (a tuple).

    >>> import kiln as kn
    >>> [t.tolist() for t in kn.unbind_copy(kn.arange(4.0).reshape(2, 2), 1)]
    [[0.0, 2.0], [1.0, 3.0]]
    """
    parts = _fresh("unbind_copy", _tensor("unbind_copy", input).unbind(dim), out)
    return None if parts is None else tuple(parts)


def split_copy(input, split_size, dim: int = 0, *, out=None):  # noqa: A002
    """`input.split(split_size, dim)` as new tensors (a list, as PyTorch's `Tensor[]`).

    >>> import kiln as kn
    >>> [t.tolist() for t in kn.split_copy(kn.arange(5.0), 2)]
    [[0.0, 1.0], [2.0, 3.0], [4.0]]
    """
    return _fresh("split_copy", _tensor("split_copy", input).split(split_size, dim), out)


def split_with_sizes_copy(input, split_sizes, dim: int = 0, *, out=None):  # noqa: A002
    """`input.split_with_sizes(split_sizes, dim)` as new tensors (a list).

    >>> import kiln as kn
    >>> [t.tolist() for t in kn.split_with_sizes_copy(kn.arange(5.0), [1, 4])]
    [[0.0], [1.0, 2.0, 3.0, 4.0]]
    """
    x = _tensor("split_with_sizes_copy", input)
    return _fresh("split_with_sizes_copy", x.split_with_sizes(list(split_sizes), dim), out)


def unfold_copy(input, dimension: int, size: int, step: int, *, out=None):  # noqa: A002
    """`input.unfold(dimension, size, step)` as a new tensor.

    >>> import kiln as kn
    >>> kn.unfold_copy(kn.arange(5.0), 0, 2, 2).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    x = _tensor("unfold_copy", input)
    return _fresh("unfold_copy", x.unfold(dimension, size, step), out)


def narrow_copy(input, dim: int, start: int, length: int, *, out=None):  # noqa: A002
    """`input.narrow(dim, start, length)` as a new tensor.

    >>> import kiln as kn
    >>> kn.narrow_copy(kn.arange(5.0), 0, 1, 3).tolist()
    [1.0, 2.0, 3.0]
    """
    x = _tensor("narrow_copy", input)
    return _fresh("narrow_copy", x.narrow(dim, start, length), out)


# -- factories -------------------------------------------------------------------------------


def _size(op: str, size) -> tuple:
    size = tuple(size)
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in size):
        raise ArgumentTypeError(f"{op}: sizes must be ints, got {size}")
    if any(s < 0 for s in size):  # (RuntimeError, as PyTorch's)
        raise UsageError(f"{op}: Trying to create tensor with negative dimension: {list(size)}")
    return tuple(int(s) for s in size)


def empty_strided(size, stride, *, dtype=None, layout=None, device="cpu",
                  requires_grad: bool = False, pin_memory: bool = False):  # fmt: skip
    """An uninitialized tensor of `size` whose elements lie `stride` elements apart (PyTorch's
    strides, in elements): `t.stride()` is `stride`.

    >>> import kiln as kn
    >>> kn.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    size = _size("empty_strided", size)
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(size) or any(d < 0 for d in stride):  # (RuntimeError, as PyTorch's)
        raise UsageError(f"empty_strided: sizes {list(size)} and strides {list(stride)}: as "
                         "many of each, none negative")  # fmt: skip
    dtype = dt.as_dtype(dtype) if dtype is not None else dt.DEFAULT_FLOAT
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    buffer = np.empty(extent, dtype)
    data = np.lib.stride_tricks.as_strided(
        buffer, size, tuple(s * buffer.itemsize for s in stride), writeable=True
    )
    if str(device) != "cpu":
        return fa.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)
    t = make(data)  # (kiln's own memory: resizable, unlike from_numpy's)
    return t.requires_grad_(True) if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device="cpu",
                   requires_grad: bool = False, pin_memory: bool = False):  # fmt: skip
    """An uninitialized tensor of `size` laid out in memory in the dim order
    `physical_layout` (outermost first): `empty_permuted((2, 3, 4), (0, 2, 1))` is
    channels-last-like, its dim 1 the innermost.

    >>> import kiln as kn
    >>> kn.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    (12, 1, 3)
    """
    size = _size("empty_permuted", size)
    order = tuple(int(d) for d in physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise ArgumentError(f"empty_permuted: physical_layout {order} is not a permutation of "
                            f"the {len(size)} dims")  # fmt: skip
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


@factory_out
def range(start=0, end=None, step=1, *, dtype=None, device="cpu",  # noqa: A001
          requires_grad: bool = False):  # fmt: skip
    """Deprecated in PyTorch (use `arange`): `start, start + step, ...` up to `end`
    *included*, in the default float dtype unless `dtype` is given, with a UserWarning.

    >>> import kiln as kn, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kn.range(1, 4), kn.range(0, 1, 0.5, dtype=kn.float64)
    (tensor([1., 2., 3., 4.]), tensor([0.0000, 0.5000, 1.0000], dtype=kiln.float64))
    """
    warnings.warn(
        "kn.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use "
        "kn.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=3,
    )  # fmt: skip  (3: past factory_out's frame)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise UsageError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise UsageError(f"range: upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")  # fmt: skip
    n = int(np.floor((float(end) - float(start)) / float(step))) + 1
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    values = (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(dtype)
    result = fa.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)
    return result


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool | None = None):
    """`obj` as a tensor, as PyTorch's `asarray`: a tensor, a NumPy array or anything with
    the buffer or DLPack protocol shares its memory when dtype and device allow (`copy=None`),
    always copies with `copy=True`, and refuses a needed copy with `copy=False`; sequences and
    scalars are copied (their dtype inferred, floats in the default dtype). A buffer's bytes
    are read as `dtype` (default: the default float). `requires_grad` given and different
    from the result's: True marks it (obj itself, when shared), False detaches it.

    >>> import kiln as kn, numpy as np
    >>> a = np.zeros(2, np.float32)
    >>> t = kn.asarray(a)
    >>> a[0] = 7.0
    >>> t.tolist(), kn.asarray([1, 2]).dtype, kn.asarray(a, copy=True) is t
    ([7.0, 0.0], kiln.int64, False)
    """
    want = None if dtype is None else dt.as_dtype(dtype)
    if isinstance(obj, Symbol):
        return obj if want is None else obj.to(dtype=want)
    if isinstance(obj, Tensor):
        same = (want is None or want == obj.dtype) and device in (None, str(obj.device))
        if same and not copy:
            result = obj
        elif copy is False:
            raise ArgumentError("asarray: copy=False, but a copy is needed for the dtype or "
                                "device asked for")  # fmt: skip
        else:
            result = obj.to(device=device or obj.device, dtype=want, copy=True)
    else:
        result = _asarray_data(obj, want, device, copy)
    if requires_grad is None or bool(requires_grad) == result.requires_grad:
        return result  # (an alias keeps obj's autograd history, as PyTorch's)
    # given, and different: False detaches, True marks the result itself (obj, if aliased)
    return result.requires_grad_(True) if requires_grad else result.detach()


def _asarray_data(obj, want, device, copy):
    shared = None
    if isinstance(obj, np.ndarray):
        shared = obj
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        shared = np.from_dlpack(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        shared = np.frombuffer(obj, dtype=want or dt.DEFAULT_FLOAT)  # (PyTorch's default)
    if shared is not None and shared.dtype.kind in "biuf":
        matches = (want is None or want == shared.dtype) and device in (None, "cpu")
        if matches and not copy:
            return fa.share_array(shared)
        if copy is False:
            raise ArgumentError("asarray: copy=False, but a copy is needed for the dtype or "
                                "device asked for")  # fmt: skip
        return fa.tensor(np.array(shared), dtype=want, device=device or "cpu")
    if copy is False:
        raise ArgumentError(f"asarray: copy=False, but a {type(obj).__name__} cannot be shared")
    return fa.tensor(obj, dtype=want, device=device or "cpu")


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False):  # fmt: skip
    """A 1-D tensor over the memory of an object with the buffer protocol (a bytearray, an
    array.array, a memoryview): `count` elements of `dtype` from byte `offset` (-1: all the
    rest); writes through the tensor show in the buffer.

    >>> import kiln as kn
    >>> buf = bytearray(8)
    >>> t = kn.frombuffer(buf, dtype=kn.int16, count=2, offset=2)
    >>> t[0] = 1
    >>> list(buf[:4]), t.tolist()
    ([0, 0, 1, 0], [1, 0])
    """
    dtype = dt.as_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:  # (ValueError, as PyTorch's)
        raise ArgumentError(
            "frombuffer: object does not implement Python buffer protocol "
            f"({type(buffer).__name__})"
        ) from None
    if view.nbytes == 0:
        raise ArgumentError("frombuffer: both buffer length (0) and count (-1) must not be 0")
    if not 0 <= offset < view.nbytes:
        raise ArgumentError(f"frombuffer: offset ({offset} bytes) must be non-negative and "
                            f"below the buffer length ({view.nbytes} bytes)")  # fmt: skip
    if count == 0 or (count > 0 and offset + count * dtype.itemsize > view.nbytes):
        raise ArgumentError(f"frombuffer: requested buffer length ({count} * {dtype.itemsize} "
                            f"bytes) after offset ({offset} bytes) must not be greater than "
                            f"actual buffer length ({view.nbytes} bytes)")  # fmt: skip
    data = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    if not data.flags.writeable:
        warnings.warn("frombuffer: the buffer is not writable; writing through the tensor is "
                      "not supported", UserWarning, stacklevel=2)  # fmt: skip
    t = fa.share_array(data)
    return t.requires_grad_(True) if requires_grad else t


class _Capsule:
    """A DLPack capsule handed over as an object with the `__dlpack__` protocol."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise UsageError("from_dlpack: a DLPack capsule can be consumed only once")
        return capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of `ext_tensor`: an object with the DLPack protocol (a
    NumPy array, a PyTorch CPU tensor, ...) or a capsule from `to_dlpack`.

    >>> import kiln as kn, numpy as np
    >>> a = np.arange(3.0)
    >>> t = kn.from_dlpack(a)
    >>> a[0] = 5.0
    >>> t.tolist()
    [5.0, 1.0, 2.0]
    """
    source = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    return fa.share_array(np.from_dlpack(source))


def to_dlpack(tensor):
    """A DLPack capsule of the (cpu) tensor's memory, for another library's `from_dlpack`.

    >>> import kiln as kn
    >>> t = kn.arange(3.0)
    >>> kn.from_dlpack(kn.to_dlpack(t)).tolist()
    [0.0, 1.0, 2.0]
    """
    t = _tensor("to_dlpack", tensor)
    if isinstance(t, Symbol):
        raise ArgumentTypeError("to_dlpack: a graph value has no memory to share; run it first")
    if str(t.device) != "cpu":
        raise ArgumentError(f"to_dlpack: kiln shares cpu memory only, got a tensor on "
                            f"{t.device}")  # fmt: skip
    return t.detach().numpy().__dlpack__()


def typename(obj) -> str:
    """The type name of `obj`: `kiln.FloatTensor` (and so on) for a tensor, else its
    module-qualified class name, as PyTorch's `typename`.

    >>> import kiln as kn
    >>> kn.typename(kn.zeros(1)), kn.typename(kn.nn.Linear(1, 1)), kn.typename(1.0)
    ('kiln.FloatTensor', 'kiln.nn.layers.Linear', 'float')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("", "builtins") else f"{module}.{name}"
