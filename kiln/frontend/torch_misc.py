"""PyTorch's dtype queries (`finfo`, `iinfo`, `promote_types`, `can_cast`), tensor queries
(`is_tensor`, `is_floating_point`, `numel`) and factories (`as_tensor`, `logspace`,
`rand_like`, `randn_like`, `randint_like`, `tril_indices`, `triu_indices`), with its print
options (`set_printoptions`)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from ..eager import factories as fa
from ..eager.printing import get_printoptions, set_printoptions
from ..eager.spacing import logspace_values
from ..eager.tensor import Tensor
from ..errors import ArgumentTypeError, UnsupportedDTypeError, UsageError
from ..graph.core import Symbol
from . import math as m
from . import random
from .core import lift
from .out import factory_out
from .result_layouts import keep_like

__all__ = [
    "as_tensor", "can_cast", "finfo", "get_printoptions", "iinfo", "is_floating_point",
    "is_tensor", "logspace", "numel", "promote_types", "rand_like", "randint_like",
    "randn_like", "result_type", "set_printoptions", "tril_indices", "triu_indices",
]  # fmt: skip


def _dtype_arg(op: str, value) -> np.dtype:
    """A dtype argument: a kiln (NumPy) dtype or a type NumPy names one by (`np.float32`)."""
    if isinstance(value, str) or not dt.is_dtype(value):
        raise ArgumentTypeError(
            f"{op}(): argument 'type' must be kiln.dtype, not {type(value).__name__}"
        )
    return dt.as_dtype(value)


class finfo:
    """The limits of a float dtype (the default float without one), as PyTorch's `finfo`:
    `bits`, `eps`, `max`, `min`, `tiny` (= `smallest_normal`), `resolution` and `dtype` (its
    name), the numbers as Python floats.

    >>> import kiln as kn
    >>> f = kn.finfo(kn.float16)
    >>> f.bits, f.eps, f.max, f.tiny, f.resolution, f.dtype
    (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001, 'float16')
    >>> kn.finfo(kn.complex64).dtype  # a complex dtype's parts
    'float32'
    """

    def __init__(self, type=None):  # noqa: A002 -- PyTorch's argument name
        dtype = dt.DEFAULT_FLOAT if type is None else _dtype_arg("finfo", type)
        if dtype.kind == "c":  # a complex dtype: its parts' float (PyTorch's finfo too)
            dtype = dt.as_dtype(np.float32 if dtype.itemsize == 8 else np.float64)
        if not dt.is_float(dtype) or dt.is_storage_only(dtype):
            raise ArgumentTypeError(
                "kiln.finfo() requires a floating point input type. Use kiln.iinfo to handle "
                f"'{dtype}'"
            )
        info = ml_dtypes.finfo(dtype)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dtype.name

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:
    """The limits of an integer dtype, as PyTorch's `iinfo`: `bits`, `max`, `min` (Python
    ints) and `dtype` (its name).

    >>> import kiln as kn
    >>> i = kn.iinfo(kn.int32)
    >>> i.bits, i.min, i.max, i.dtype
    (32, -2147483648, 2147483647, 'int32')
    """

    def __init__(self, type):  # noqa: A002 -- PyTorch's argument name
        dtype = _dtype_arg("iinfo", type)
        if dtype == dt.bool_:
            raise ArgumentTypeError("kiln.bool is not supported by kiln.iinfo")
        if not dt.is_int(dtype) or dt.is_storage_only(dtype):
            raise ArgumentTypeError(
                f"kiln.iinfo() requires an integer input type. Use kiln.finfo to handle '{dtype}'"
            )
        info = np.iinfo(dtype)
        self.bits, self.min, self.max = int(info.bits), int(info.min), int(info.max)
        self.dtype = dtype.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def promote_types(type1, type2) -> dt.DType:
    """The dtype two dtypes promote to, as PyTorch's `promote_types` (a float beats any
    integer, whatever its width).

    >>> import kiln as kn
    >>> kn.promote_types(kn.int32, kn.float16), kn.promote_types(kn.uint8, kn.int8)
    (kiln.float16, kiln.int16)
    """
    a, b = _dtype_arg("promote_types", type1), _dtype_arg("promote_types", type2)
    return dt.public(dt.result_type(a, b))


def result_type(*operands) -> dt.DType:
    """The dtype an op on `operands` (tensors, arrays, dtypes, Python and NumPy scalars)
    computes in, as PyTorch's `result_type`.

    >>> import kiln as kn
    >>> kn.result_type(kn.ones(2, dtype=kn.int8), 2.5), kn.result_type(kn.int8, kn.uint8)
    (kiln.float32, kiln.int16)
    """
    return dt.public(dt.result_type(*operands))


def can_cast(from_, to) -> bool:
    """Whether PyTorch's promotion allows casting `from_` to `to`: never to a lower category
    (complex to float, float to integer, any to bool); any width within one.

    >>> import kiln as kn
    >>> kn.can_cast(kn.float32, kn.int32), kn.can_cast(kn.int64, kn.int8)
    (False, True)
    """
    return dt.can_cast(_dtype_arg("can_cast", from_), _dtype_arg("can_cast", to))


def is_tensor(obj) -> bool:
    """Whether `obj` is a kiln tensor: an eager Tensor, or a Symbol (a graph value, which
    stands for one in graph mode and under `kn.compile`).

    >>> import kiln as kn
    >>> kn.is_tensor(kn.zeros(2)), kn.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, (Tensor, Symbol))


def _tensor_arg(op: str, input):  # noqa: A002
    if not isinstance(input, (Tensor, Symbol)):
        raise ArgumentTypeError(
            f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return input


def is_floating_point(input) -> bool:  # noqa: A002
    """Whether the tensor's dtype is a float (bfloat16 included).

    >>> import kiln as kn
    >>> kn.is_floating_point(kn.tensor([1])), kn.is_floating_point(kn.tensor([1.0]))
    (False, True)
    """
    return dt.is_float(_tensor_arg("is_floating_point", input).dtype)


def numel(input) -> int:  # noqa: A002
    """The number of elements of the tensor.

    >>> import kiln as kn
    >>> kn.numel(kn.zeros(2, 3))
    6
    """
    return _tensor_arg("numel", input).numel()


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor, sharing its memory where it can, as PyTorch's `as_tensor`: a tensor
    of that dtype and device is itself (another dtype or device: converted, as `to`), a NumPy
    array of a kiln dtype on the cpu shares its memory (as `from_numpy`); other data (lists,
    scalars) is copied, as `kn.tensor` does.

    >>> import kiln as kn, numpy as np
    >>> a = np.zeros(2, np.float64)
    >>> t = kn.as_tensor(a)
    >>> a[0] = 5.0
    >>> t, kn.as_tensor([1, 2], dtype=kn.float32)
    (tensor([5., 0.], dtype=kiln.float64), tensor([1., 2.]))
    """
    if isinstance(data, (Tensor, Symbol)):
        return data.to(dtype=dtype) if device is None else data.to(device, dtype)
    shared = isinstance(data, np.ndarray) and (dtype is None or dt.as_dtype(dtype) == data.dtype)
    if shared and device in (None, "cpu"):
        return fa.share_array(data)
    return fa.tensor(data, dtype=dtype, device="cpu" if device is None else device)


@factory_out
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device="cpu",
             requires_grad: bool = False):  # fmt: skip
    """`steps` values `base ** v` for `v` evenly spaced from `start` to `end`, both included
    (the default float; an integer `dtype` truncates).

    >>> import kiln as kn
    >>> kn.logspace(0, 2, 3), kn.logspace(0, 3, 4, base=2, dtype=kn.int64)
    (tensor([  1.,  10., 100.]), tensor([1, 2, 4, 8]))
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise ArgumentTypeError(f"logspace(): argument 'steps' must be int, not "
                                f"{type(steps).__name__}")  # fmt: skip
    if steps < 0:
        raise UsageError(f"logspace: number of steps must be non-negative, got {steps}")
    complex_ends = not isinstance(start, Symbol) and not isinstance(end, Symbol) and (
        np.iscomplexobj(start) or np.iscomplexobj(end))  # fmt: skip
    if dtype is None:  # (complex ends: the default complex dtype, as linspace's)
        dtype = dt.default_complex() if complex_ends else dt.DEFAULT_FLOAT
    dtype = dt.as_dtype(dtype)
    if complex_ends and dtype.kind != "c":
        raise UsageError(f"logspace(): inferred dtype {dt.default_complex()} can't be safely "
                         f"cast to passed dtype {dtype}")  # fmt: skip
    if dtype == dt.bool_:
        raise UnsupportedDTypeError("logspace: not implemented for bool (as PyTorch's)")
    if isinstance(start, Symbol) or isinstance(end, Symbol):
        values = m.pow(float(base), traced_linspace(start, end, int(steps)))
        if dt.is_int(dtype):
            values = m.trunc(values)
        return m.cast(values, dtype)
    if int(steps) > 0 and dtype.kind != "c":  # PyTorch's kernel's values
        values = logspace_values(start, end, int(steps), float(base), dtype)
        return fa._finish(values, device, requires_grad)
    wide, number = (np.complex128, complex) if dtype.kind == "c" else (np.float64, float)
    exponents = np.linspace(number(start), number(end), int(steps), dtype=wide)
    values = np.power(number(base), exponents)
    return fa._finish(values.astype(dtype), device, requires_grad)


def traced_linspace(start, end, steps: int, dtype=np.float64):
    """`steps` values evenly spaced from `start` to `end` (both included; NumPy's rule, as
    the eager `linspace` computes: float64, the last value `end` itself), built as graph ops
    where `start` or `end` is a traced 0-d value (`kn.linspace` under `kn.compile`).

    >>> import kiln as kn
    >>> kn.compile(lambda a: kn.linspace(a, 1.0, 3))(kn.tensor(0.0))
    tensor([0.0000, 0.5000, 1.0000])
    """
    a, b = (m.cast(v, np.float64) for v in lift(start, end))
    i = np.arange(steps, dtype=np.float64)
    if steps < 2:
        return m.cast(m.add(m.mul(i, m.sub(b, a)), a), dtype)
    y = m.add(m.mul(i, m.div(m.sub(b, a), float(steps - 1))), a)
    return m.cast(m.where(i == steps - 1, b, y), dtype)


def _random_like(input, dtype, requires_grad, draw, graph_draw, memory_format=None):  # noqa: A002
    (x,) = (input,) if isinstance(input, (Tensor, Symbol)) else lift(input)
    dtype = x.dtype if dtype is None else dt.as_dtype(dtype)
    if isinstance(x, Symbol):
        with x.graph.as_default():
            out = graph_draw(x.shape, dtype)
        if getattr(memory_format, "name", "preserve_format") != "preserve_format":
            return out
        return keep_like(out, x)  # laid out as x (PyTorch's preserve_format)
    out = draw(tuple(x.shape), dtype)
    if isinstance(out, Symbol):  # a traced draw (`kn.compile`) in the shape of a tensor
        if getattr(memory_format, "name", "preserve_format") == "preserve_format" and x.ndim > 1:
            from .result_layouts import array_layout, keep_layout, like_layout

            out = keep_layout(out, like_layout(array_layout(x._data)))  # laid out as x
        return out.requires_grad_(True) if requires_grad else out
    out = fa.like_memory(x, out, memory_format, fill=True)
    return out.requires_grad_(requires_grad)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,  # noqa: A002
              requires_grad: bool = False, memory_format=None):  # fmt: skip
    """Samples of U[0, 1) of `input`'s shape and dtype (unless `dtype` is given); of a
    Symbol, a random node (fresh values on every run).

    >>> import kiln as kn
    >>> t = kn.rand_like(kn.zeros(2, 3, dtype=kn.float64))
    >>> t.shape, t.dtype, bool(((t >= 0) & (t < 1)).all())
    (kiln.Size([2, 3]), kiln.float64, True)
    """

    def draw(shape, d):
        where = getattr(input, "device", "cpu") if device is None else device
        return fa.rand(shape, generator=generator, dtype=d, device=where)

    return _random_like(
        input, dtype, requires_grad, draw, lambda s, d: random.uniform(s, dtype=d), memory_format
    )


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,  # noqa: A002
               requires_grad: bool = False, memory_format=None):  # fmt: skip
    """Samples of N(0, 1) of `input`'s shape and dtype (unless `dtype` is given); of a
    Symbol, a random node.

    >>> import kiln as kn
    >>> kn.randn_like(kn.zeros(2, 3)).shape
    kiln.Size([2, 3])
    """

    def draw(shape, d):
        where = getattr(input, "device", "cpu") if device is None else device
        return fa.randn(shape, generator=generator, dtype=d, device=where)

    return _random_like(
        input, dtype, requires_grad, draw, lambda s, d: random.normal(s, dtype=d), memory_format
    )


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,  # noqa: A002
                 device=None, requires_grad: bool = False, memory_format=None):  # fmt: skip
    """Integers drawn uniformly from [low, high) in `input`'s shape and dtype (unless `dtype`
    is given): `randint_like(x, high)` or `randint_like(x, low, high)`.

    >>> import kiln as kn
    >>> t = kn.randint_like(kn.zeros(4, dtype=kn.int32), 3, 6)
    >>> t.dtype, bool(((t >= 3) & (t < 6)).all())
    (kiln.int32, True)
    """
    if high is None:
        low, high = 0, low

    def draw(shape, d):
        where = getattr(input, "device", "cpu") if device is None else device
        return fa.randint(low, high, shape, generator=generator, dtype=d, device=where)

    def graph_draw(shape, d):
        return random.randint(low, high, shape, dtype=d)

    return _random_like(input, dtype, requires_grad, draw, graph_draw, memory_format)


def _indices(op, row, col, offset, dtype, device, upper: bool):
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise UsageError(f"{op}: {name} must be non-negative, got {v}")
    dtype = dt.as_dtype(dtype)
    if dtype not in (np.int32, np.int64):  # (torch 2.13's kernels: int32 and int64 alone)
        name = dt.scalar_name(dtype)
        raise UnsupportedDTypeError(f"\"{op}\" not implemented for '{name}'")
    # the row-major order of the kept positions of a row x col matrix
    mask = (
        np.triu(np.ones((row, col), bool), offset)
        if upper
        else np.tril(np.ones((row, col), bool), offset)
    )
    return fa._finish(np.stack(np.nonzero(mask)).astype(dtype), device, False)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=dt.int64, device="cpu",
                 layout=None):  # fmt: skip
    """The (2, N) row and column indices of the lower triangle of a `row` x `col` matrix
    (diagonal `offset` included: 1 above the main one, -1 below), in row-major order.

    >>> import kiln as kn
    >>> kn.tril_indices(3, 3)
    tensor([[0, 1, 1, 2, 2, 2],
            [0, 0, 1, 0, 1, 2]])
    """
    return _indices("tril_indices", row, col, offset, dtype, device, upper=False)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=dt.int64, device="cpu",
                 layout=None):  # fmt: skip
    """The (2, N) row and column indices of the upper triangle of a `row` x `col` matrix
    (diagonal `offset` included), in row-major order.

    >>> import kiln as kn
    >>> kn.triu_indices(2, 3, 1)
    tensor([[0, 0, 1],
            [1, 2, 2]])
    """
    return _indices("triu_indices", row, col, offset, dtype, device, upper=True)
