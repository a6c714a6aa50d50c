"""Making tensors: `tensor`, `from_numpy`, `zeros`, `ones`, `full`, `arange`, `linspace`,
`eye`, `randn`, `rand` and the `*_like` forms (PyTorch's signatures; kiln's default float is
float32). Random tensors draw from a `kn.Generator`: by default the one `kn.manual_seed` seeds."""

from __future__ import annotations

import functools
import math
import operator
import warnings

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    AutogradError,
    GraphError,
    UnsupportedDTypeError,
    UsageError,
)
from ..generator import Generator, default_generator
from ..graph.core import Symbol
from ..ops.random import in_trace
from ..runtime.backend import get_backend
from . import sparse
from . import sparse_compressed as compressed
from .devices import canonical_device
from .out import factory_out
from .spacing import arange_values, linspace_values
from .storage import mark_not_resizable
from .tensor import Tensor, make
from .trace_notes import note_made

__all__ = [
    "arange",
    "empty",
    "empty_like",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "rand",
    "randint",
    "randn",
    "tensor",
    "zeros",
    "zeros_like",
]


def _finish(array, device, requires_grad: bool) -> Tensor:
    if device == "cpu" and type(device) is str and not requires_grad:
        t = make(array)  # the common case, without the checks below
    else:
        device = canonical_device(device)
        if device != "cpu":
            array = get_backend(device).to_device(array)
        t = make(array, device).requires_grad_(requires_grad)
    if in_trace():
        note_made(t)  # a traced value may be written into it (kiln/eager/trace_notes.py)
    return t


def _shape(size) -> tuple:
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        if getattr(size[0], "ndim", None) != 0:  # (a 0-d integer tensor is one size)
            size = tuple(size[0])
    for d in size:
        if type(d) is not int or d < 0:
            size = tuple(_dim(d) for d in size)
            if any(d < 0 for d in size):
                raise UsageError(f"Trying to create tensor with negative dimension "
                                 f"{min(size)}: {list(size)}")  # fmt: skip
            return size
    return size


def _dim(d) -> int:
    """A size's dim: an int, NumPy integer or 0-d integer tensor (not a float, as PyTorch)."""
    try:
        return operator.index(d)
    except TypeError:
        raise ArgumentTypeError(
            f"size must be a tuple of ints, but got {type(d).__name__}"
        ) from None


def _sizes(sizes: tuple, size) -> tuple:
    """The shape given as varargs (`zeros(2, 3)`, `zeros((2, 3))`) or as `size=`."""
    if size is None:
        if not sizes:  # (PyTorch's TypeError; `zeros(())` is the 0-d tensor)
            raise ArgumentTypeError('missing 1 required positional argument: "size" (ints, a '
                                    "tuple, or size=)")  # fmt: skip
        return sizes
    if sizes:
        raise ArgumentTypeError("got the size both as arguments and as size=")
    return (size,)


def _float(dtype) -> np.dtype:
    return dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)


def tensor(
    data, dtype=None, device="cpu", requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A tensor holding a copy of `data` (nested lists, scalars, arrays or a tensor); Python
    floats become float32, ints int64, as in PyTorch.

    >>> import kiln as kn
    >>> t = kn.tensor([[1.0, 2.0]], requires_grad=True)
    >>> t.shape, t.dtype, t.device, t.requires_grad, t.is_leaf
    (kiln.Size([1, 2]), kiln.float32, device(type='cpu'), True, True)
    """
    if isinstance(data, Tensor):
        data = data.detach()._host()
    try:
        array = np.array(dt.as_array(data, dtype), copy=True)
    except (OverflowError, dt.DTypeError) as e:
        array = _with_python_ints(data, dtype, e)
    except GraphError:  # a traced value has no array: `kn.tensor([loss, 1.0])` in a trace
        if not (in_trace() and _holds_symbol(data)):
            raise
        return _traced_tensor(data, dtype, requires_grad)
    except ValueError as e:  # (NaN into an integer dtype: PyTorch's RuntimeError)
        if dtype is not None and dt.as_dtype(dtype).kind in "iu" and "NaN" in str(e):
            raise UsageError(f"value cannot be converted to type {dt.as_dtype(dtype)} without "
                             f"overflow (NaN)") from None  # fmt: skip
        raise
    if pin_memory:  # Tensor.pin_memory's rules (no accelerator: PyTorch's error)
        return _finish(array, device, requires_grad).pin_memory()
    return _finish(array, device, requires_grad)


def _holds_symbol(data) -> bool:
    if isinstance(data, Symbol):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_symbol(d) for d in data)


def _traced_tensor(data, dtype, requires_grad: bool):
    """`tensor(data)` of data holding traced values (Symbols) in a kn.compile trace: their
    values, detached, stacked as the nesting says, with the dtype and shape eager `tensor`
    gives data holding tensors of their shapes and dtypes (the values are copies, as
    PyTorch's `torch.tensor(t)` copies)."""
    import kiln  # NOTE: lazy: the frontend (kn.stack) builds on eager

    def stand_in(d):
        if isinstance(d, Symbol):
            return make(np.zeros(tuple(d.shape), d.dtype))
        return [stand_in(i) for i in d] if isinstance(d, (list, tuple)) else d

    probe = tensor(stand_in(data), dtype)
    if requires_grad:
        raise UsageError("tensor(): data holding traced values (in a kn.compile trace) "
                         "cannot make a leaf that requires grad; compute with the values "
                         "instead")  # fmt: skip

    def build(d):
        if isinstance(d, Symbol):
            return d.detach().to(probe.dtype)
        if isinstance(d, (list, tuple)):
            return kiln.stack([build(i) for i in d])
        return tensor(d, probe.dtype)

    return build(data).reshape(tuple(probe.shape))


def _with_python_ints(data, dtype, error: Exception) -> np.ndarray:
    """`data` holding Python ints NumPy would not take, as PyTorch's `tensor` takes them:
    beyond int64, ValueError for an integer (or int64 by default) tensor, a float for a
    floating one; within it, `dt.python_int` (RuntimeError outside an integer dtype, bar an
    unsigned one's negatives, which wrap). Data without such ints raises `error` again; data
    holding None, or floats beyond an integer dtype, PyTorch's RuntimeError."""

    def leaves(item):
        if isinstance(item, (list, tuple)):
            for i in item:
                yield from leaves(i)
        else:
            yield item

    if any(v is None for v in leaves(data)):
        raise UsageError("Could not infer dtype of NoneType")
    target = None if dtype is None else dt.as_dtype(dtype)
    if target is not None and target.kind in "iu" and any(type(v) is float for v in leaves(data)):
        raise UsageError(f"value cannot be converted to type {target} without overflow: a float "
                         f"out of its range")  # fmt: skip
    ints = [v for v in leaves(data) if type(v) is int]
    if not ints:
        raise error
    others = any(type(v) is not int for v in leaves(data))
    target = dt.as_dtype(dtype) if dtype is not None else (None if others else dt.int64)
    floating = target is None or target.kind not in "iub"

    def convert(item):
        if isinstance(item, (list, tuple)):
            return [convert(i) for i in item]
        if type(item) is not int:
            return item
        return float(item) if floating else dt.int64_item(item, target, "tensor")

    return np.array(dt.as_array(convert(data), dtype), copy=True)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing `array`'s memory (no copy): changes to either show in both.

    >>> import kiln as kn, numpy as np
    >>> a = np.zeros(2, np.float32)
    >>> t = kn.from_numpy(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0.])
    """
    t = share_array(ndarray)
    if not ndarray.flags.writeable:
        warnings.warn(
            "The given NumPy array is not writable, and kiln does not support non-writable "
            "tensors: writing to the tensor is undefined (copy the array to protect its data)",
            UserWarning,
            stacklevel=2,
        )
    return t


def share_array(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor over `ndarray`'s memory (`from_numpy`, `as_tensor`, `asarray`), refusing
    what PyTorch's tensors cannot view: negative strides, a non-native byte order (ValueError).

    >>> import numpy as np
    >>> share_array(np.arange(3)).tolist()
    [0, 1, 2]
    """
    if not isinstance(ndarray, np.ndarray):
        raise ArgumentTypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.dtype.isnative:
        raise ArgumentError(
            f"given numpy array has byte order different from the native byte order "
            f"({ndarray.dtype.str}): convert it first "
            "(array.astype(array.dtype.newbyteorder('=')))"
        )
    dt.as_dtype(ndarray.dtype)
    if any(st < 0 for st in ndarray.strides):
        raise ArgumentError(
            f"at least one stride of the given numpy array is negative ({ndarray.strides}), and "
            "tensors with negative strides are not supported: copy it first (array.copy())"
        )
    mark_not_resizable(ndarray)  # its memory is the array's, as PyTorch's from_numpy storage
    return make(ndarray)


@factory_out
def zeros(*sizes, size=None, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    """Zeros of shape `size` (ints, or one tuple).

    >>> import kiln as kn
    >>> kn.zeros(2, 3).shape, kn.zeros((2,), dtype=kn.int32).dtype
    (kiln.Size([2, 3]), kiln.int32)
    """
    return _finish(np.zeros(_shape(_sizes(sizes, size)), _float(dtype)), device, requires_grad)


@factory_out
def ones(*sizes, size=None, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    """Ones of shape `size`.

    >>> import kiln as kn
    >>> kn.ones(2)
    tensor([1., 1.])
    """
    array = np.empty(_shape(_sizes(sizes, size)), _float(dtype))
    array.fill(1)  # NOTE: as np.ones, which is this in Python plus a cast check (2x the time)
    return _finish(array, device, requires_grad)


@factory_out
def full(size, fill_value, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    """`fill_value` everywhere; the dtype follows the value (bool, int64, float32) if not given.

    >>> import kiln as kn
    >>> kn.full((2,), 7)
    tensor([7, 7])
    """
    if isinstance(fill_value, (Tensor, np.generic)) and fill_value.ndim == 0:
        fill_value = fill_value.item()  # a number, as PyTorch takes it (its kind sets the dtype)
    if dtype is not None:
        dtype = dt.as_dtype(dtype)
    else:
        kind = type(fill_value)  # (the default float read now: set_default_dtype changes it)
        dtype = dt.DEFAULT_FLOAT if kind is float else _SCALAR_DTYPES.get(kind)
        dtype = dtype or dt.as_array(fill_value).dtype
    if type(fill_value) is int:
        fill_value = dt.python_int(fill_value, dtype, "full")
    elif type(fill_value) in (float, complex):
        fill_value = dt.python_float(fill_value, dtype, "full")
    return _finish(np.full(_shape((size,)), fill_value, dtype), device, requires_grad)


# the dtype `dt.as_array` gives a Python int or bool (PyTorch's: int64, bool; a float has
# the default float dtype)
_SCALAR_DTYPES = {int: dt.int64, bool: np.dtype(bool)}


@factory_out
def arange(start=None, end=None, step=1, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """`start, start + step, …` below `end` (`arange(n)` counts from 0); ints give int64.

    An integer dtype counts from `start` by `step`, each truncated to an integer, as
    PyTorch's: int64 takes its length from the truncated bounds, the other integer dtypes from
    the exact ones.

    >>> import kiln as kn
    >>> kn.arange(3), kn.arange(0, 1, 0.5)
    (tensor([0, 1, 2]), tensor([0.0000, 0.5000]))
    >>> kn.arange(-2.5, 2.5, 1.5, dtype=kn.int64)
    tensor([-2, -1,  0,  1])
    """
    if end is None:
        if start is None:
            raise ArgumentTypeError("arange() missing required argument 'end'")
        start, end = 0, start
    start, end, step = _real(0 if start is None else start), _real(end), _real(step)
    if step == 0:
        raise UsageError("arange: step must be nonzero")
    if type(start) is not int or type(end) is not int:  # (ints: finite, and sizes fit)
        if not (math.isfinite(start) and math.isfinite(end)):
            raise UsageError(f"arange: unsupported range: {start} -> {end}")
        if abs((end - start) / step) >= 2**63:
            raise UsageError(
                f"arange: invalid size, possible overflow? ({start} -> {end} by {step})"
            )
    if (end - start) * step < 0:
        raise UsageError(f"arange: upper bound and lower bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")  # fmt: skip
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dt.int64 if ints else dt.DEFAULT_FLOAT
    else:
        dtype = dt.as_dtype(dtype)
        if dt.is_complex(dtype) or dtype == dt.bool_:
            raise UnsupportedDTypeError(f"arange: not implemented for {dtype} (as PyTorch's)")
    if dtype.kind in "iu":
        return _finish(_int_range(start, end, step, dtype), device, requires_grad)
    values = arange_values(start, end, step, dtype)  # (kiln/eager/spacing.py)
    if values is None:
        values = np.arange(start, end, step, dtype=dtype)
    return _finish(values, device, requires_grad)


def _int_range(start, end, step, dtype) -> np.ndarray:
    """PyTorch's integer `arange`: int64 counts of the truncated bounds (floor division of
    their span), other dtypes the exact span's ceiling; values from the truncated start and
    step in int64, wrapped to `dtype`.

    >>> _int_range(0, 5, 1.9, np.dtype("int64")), _int_range(0, 5, 1.9, np.dtype("int32"))
    (array([0, 1, 2, 3, 4]), array([0, 1, 2], dtype=int32))
    """
    first, last, stride = int(start), int(end), int(step)
    if dtype == dt.int64:
        if stride == 0:
            raise ArgumentError(f"arange: step must be nonzero (step={step} truncates to 0)")
        sign = 1 if stride > 0 else -1
        count = (last - first + stride - sign) // stride
    else:
        count = int(np.ceil((end - start) / step))
    values = first + np.arange(max(count, 0), dtype=np.int64) * stride
    return values.astype(dtype)


def _real(value):
    """A complex bound or step of `arange` as a float, as PyTorch takes it: refused with an
    imaginary part.

    >>> _real(2 + 0j), _real(3)
    (2.0, 3)
    """
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        value = value.item()  # (a 0-d tensor, an int one counting as an int; others fail)
    if not isinstance(value, complex):
        return value
    if value.imag != 0:
        raise UsageError(f"arange: value cannot be converted to type double without overflow "
                         f"({value} has an imaginary part)")  # fmt: skip
    return value.real


@factory_out
def linspace(start, end, steps: int, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included (complex values, of
    the default complex dtype, between complex ends).

    >>> import kiln as kn
    >>> kn.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    >>> kn.linspace(0, 1 + 2j, 3)
    tensor([0.0000+0.j, 0.5000+1.j, 1.0000+2.j])
    """
    if steps < 0:
        raise UsageError(f"linspace: number of steps must be non-negative, got {steps}")
    if dtype is not None and dt.as_dtype(dtype) == dt.bool_:
        raise UnsupportedDTypeError("linspace: not implemented for bool (as PyTorch's)")
    if isinstance(start, Symbol) or isinstance(end, Symbol):  # traced (`kn.compile`)
        from ..frontend.torch_misc import traced_linspace  # NOTE: the frontend builds on eager

        return traced_linspace(start, end, int(steps), _float(dtype))
    inferred = dt.default_complex() if np.iscomplexobj(start) or np.iscomplexobj(end) else None
    if inferred is not None and dtype is not None and dt.as_dtype(dtype).kind != "c":
        raise UsageError(
            f"linspace(): inferred dtype {inferred} can't be safely cast to passed dtype "
            f"{dt.as_dtype(dtype)}"
        )
    dtype = _float(dtype if dtype is not None else inferred)
    array = None
    if dtype.kind != "c" and int(steps) > 0:  # PyTorch's kernel's values (kiln/eager/spacing.py)
        array = linspace_values(_real(start), _real(end), int(steps), dtype)
    if array is None:
        wide = np.complex128 if dtype.kind == "c" else np.float64
        array = np.linspace(start, end, int(steps), dtype=wide).astype(dtype)
    return _finish(array, device, requires_grad)


@factory_out
def eye(n: int, m: int | None = None, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """The `n` x `m` identity matrix.

    >>> import kiln as kn
    >>> kn.eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise UsageError(f"eye: {name} must be greater or equal to 0, got {size}")
    return _finish(np.eye(n, m, dtype=_float(dtype)), device, requires_grad)


def _generator(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise ArgumentTypeError(f"generator must be a kn.Generator, got {type(generator).__name__}")
    return generator


def _random_float(dtype):
    dtype = _float(dtype)
    if not dt.is_float(dtype):  # (PyTorch's kernels are not implemented for the others)
        raise UnsupportedDTypeError(f"random values need a float dtype, got {dtype}")
    return dtype


def _bound(name: str, value) -> int:
    """A `randint` bound: an int (a NumPy integer, a 0-d integer tensor), not a float or bool."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ArgumentTypeError(f"randint(): argument '{name}' must be int, not "
                                f"{type(value).__name__}")  # fmt: skip
    return operator.index(value)


@functools.cache
def _value_range(dtype) -> tuple:
    """The least and greatest values of a real dtype (a float's finite ones, within int64's)."""
    if dtype.kind in "iub":
        return (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    big = float(ml_dtypes.finfo(dtype).max)
    return max(-big, -(2**63)), min(big, 2**63 - 1)


def check_range(low: int, high: int, dtype) -> None:
    """PyTorch's check of `randint`'s (and `random_`'s) `[low, high)` against the range of
    `dtype` (a float's finite values within int64's; RuntimeError).

    >>> check_range(0, 257, np.dtype("uint8"))
    Traceback (most recent call last):
    kiln.errors.UsageError: to - 1 is out of bounds for uint8 ...
    """
    if dtype.kind == "c":
        return
    info = _value_range(dtype)
    if not info[0] <= low <= info[1]:
        raise UsageError(f"from is out of bounds for {dtype}")
    if not info[0] <= high - 1 <= info[1]:
        raise UsageError(f"to - 1 is out of bounds for {dtype}")


def _integer_grad(dtype, requires_grad: bool, op: str) -> None:
    """The eager refusal of `requires_grad=True` on an integer dtype, for a traced draw."""
    if requires_grad and not dt.is_differentiable(dtype):
        raise AutogradError(f"{op}: only Tensors of floating point and complex dtype can "
                            "require gradients")  # fmt: skip


def _traced(kind, shape, dtype, generator, **params):
    """A random factory called in a `kn.compile` trace: a random node, fresh on every call."""
    from ..frontend.random import traced_factory  # NOTE: the frontend builds on eager

    if generator is not None:
        _generator(generator)  # the type check
    return traced_factory(kind, shape, dtype, generator, **params)


@factory_out(pin_memory=True)
def randn(*sizes, size=None, generator=None, dtype=None, device="cpu",
          requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Samples of N(0, 1), drawn from `generator` (default: the stream `kn.manual_seed`
    seeds); the same after the same seed.

    >>> import kiln as kn
    >>> kn.manual_seed(0); a = kn.randn(3)
    >>> kn.manual_seed(0); b = kn.randn(3)
    >>> g = kn.Generator().manual_seed(0)
    >>> bool((a == b).all()), bool((kn.randn(3, generator=g) == a).all())
    (True, True)
    """
    if dtype is not None and dt.as_dtype(dtype).kind == "c":  # PyTorch's: each part N(0, 1/2)
        parts = randn(*_shape(_sizes(sizes, size)), 2, generator=generator,
                      dtype=dt.to_real(dt.as_dtype(dtype)), device=device)  # fmt: skip
        return _pairs_as_complex(parts * 0.5**0.5, requires_grad)
    dtype = dt.DEFAULT_FLOAT if dtype is None else _random_float(dtype)  # (set_default_dtype's)
    if in_trace():
        return _traced("normal", _shape(_sizes(sizes, size)), dtype, generator)
    g = default_generator if generator is None else _generator(generator)
    return _finish(g._normal(_shape(_sizes(sizes, size)), dtype), device, requires_grad)


@factory_out(pin_memory=True)
def rand(*sizes, size=None, generator=None, dtype=None, device="cpu",
          requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Samples of U[0, 1), drawn from `generator` (default: the `kn.manual_seed` stream).

    >>> import kiln as kn
    >>> bool(((kn.rand(100) >= 0) & (kn.rand(100) < 1)).all())
    True
    """
    if dtype is not None and dt.as_dtype(dtype).kind == "c":  # PyTorch's: each part U[0, 1)
        parts = rand(*_shape(_sizes(sizes, size)), 2, generator=generator,
                     dtype=dt.to_real(dt.as_dtype(dtype)), device=device)  # fmt: skip
        return _pairs_as_complex(parts, requires_grad)
    dtype = dt.DEFAULT_FLOAT if dtype is None else _random_float(dtype)  # (set_default_dtype's)
    if in_trace():
        return _traced("uniform", _shape(_sizes(sizes, size)), dtype, generator)
    g = default_generator if generator is None else _generator(generator)
    return _finish(g._uniform(_shape(_sizes(sizes, size)), dtype), device, requires_grad)


def _pairs_as_complex(parts, requires_grad: bool):
    """Random (real, imaginary) pairs in a last dim of 2 as complex values."""
    from ..frontend.complex_numbers import view_as_complex  # NOTE: the frontend builds on eager

    z = view_as_complex(parts)
    return z.requires_grad_() if requires_grad else z


@factory_out
def randint(*args, size=None, low=None, high=None, generator=None, dtype=None, device="cpu",
            requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Integers drawn uniformly from [low, high): `randint(high, size)` or
    `randint(low, high, size)` (int64 unless `dtype` is given), from `generator` (default:
    the `kn.manual_seed` stream).

    >>> import kiln as kn
    >>> kn.manual_seed(0); a = kn.randint(3, 10, (2, 4))
    >>> tuple(a.shape), a.dtype, bool(((a >= 3) & (a < 10)).all())
    ((2, 4), kiln.int64, True)
    """
    if size is None:
        *bounds, size = args
    else:
        bounds = list(args)
    bounds = ([] if low is None else [low]) + bounds + ([] if high is None else [high])
    if len(bounds) not in (1, 2):
        raise ArgumentTypeError("randint() takes (high, size) or (low, high, size)")
    low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
    low, high = _bound("low", low), _bound("high", high)
    if isinstance(size, (int, float, np.number)):
        raise ArgumentTypeError(f"randint(): argument 'size' must be tuple of ints, not "
                                f"{type(size).__name__}")  # fmt: skip
    if high <= low:
        raise UsageError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    dtype = dt.int64 if dtype is None else dt.as_dtype(dtype)
    if dtype.kind == "c":
        raise UsageError(
            f"randint: check_random_bounds handles only integral, floating-point and boolean "
            f"types, not {dtype}"
        )
    check_range(low, high, dtype)
    if in_trace():
        _integer_grad(dtype, requires_grad, "randint")
        return _traced("randint", _shape((size,)), dtype, generator, low=low, high=high)
    values = _generator(generator)._integers(low, high, _shape((size,)))
    return _finish(values if dtype == np.int64 else values.astype(dtype), device, requires_grad)


@factory_out(pin_memory=True, memory_format=True)
def empty(*sizes, size=None, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` whose values are whatever the memory held (PyTorch's `empty`).

    >>> import kiln as kn
    >>> tuple(kn.empty(2, 3).shape), kn.empty((2,), dtype=kn.int32).dtype
    ((2, 3), kiln.int32)
    """
    return _finish(np.empty(_shape(_sizes(sizes, size)), _float(dtype)), device, requires_grad)


def _like_layout(t, layout):
    """`t`, or for `layout=kn.strided` of a sparse `t` its dense form (the `*_like` factories
    keep t's layout unless told); kiln's factories make no other layout from a dense one."""
    if layout is None or layout == getattr(t, "layout", layout):
        return t
    from ..array_types import strided

    if layout is strided and getattr(t, "is_sparse", False):
        return t.to_dense()
    raise ArgumentError(f"kiln's *_like factories make strided tensors (or t's own layout), "
                        f"got layout={layout} for a {t.layout} tensor")  # fmt: skip


def like_memory(t, out: Tensor, memory_format=None, fill: bool = False) -> Tensor:
    """`out`, a `*_like` factory's result for the tensor `t`, laid out as PyTorch's
    `memory_format=preserve_format` (the default) lays it: t's strides where t is dense,
    else t's dims ordered by its strides (`like_layout`); C order for a C-ordered t or
    `contiguous_format`; channels-last for `channels_last` (`channels_last_3d`). `fill`:
    out's values are a random draw, which then fills the memory in order (as PyTorch's
    `empty_like(t).uniform_()`) instead of keeping places.

    >>> import kiln as kn
    >>> kn.zeros_like(kn.ones(3, 4).t()).stride()
    (1, 4)
    >>> kn.zeros_like(kn.ones(1, 2, 3, 4), memory_format=kn.channels_last).stride()
    (24, 1, 8, 2)
    """
    if memory_format is not None and memory_format.name.startswith("channels_last"):
        from ..frontend.result_layouts import format_layout, laid_out  # NOTE: lazy

        layout = format_layout(tuple(out.shape), memory_format, "empty_like")
        data = out._data
        if type(data) is np.ndarray:
            out._data = laid_out(None, layout, data.reshape(-1)) if fill else laid_out(data, layout)
        return out
    source = getattr(t, "_data", None)
    if (source is None or source.flags.c_contiguous or type(out._data) is not np.ndarray
            or getattr(memory_format, "name", "preserve_format") != "preserve_format"
            or source.ndim < 2):  # fmt: skip
        return out
    from ..frontend.result_layouts import array_layout, laid_out, like_layout  # NOTE: lazy

    layout = like_layout(array_layout(source))
    data = out._data
    out._data = laid_out(None, layout, data.reshape(-1)) if fill else laid_out(data, layout)
    return out


def _like(t, dtype, device):  # (every _like keeps t's layout: `like_memory`)
    if type(t) in sparse.LAYOUTS:  # a sparse or quantized tensor: no fill of its layout
        sparse.LAYOUTS[type(t)](_FILL, (t,), {})
    return (t.shape, t.dtype if dtype is None else dt.as_dtype(dtype),
            t.device if device is None else device)  # fmt: skip


class _FILL:  # what a layout's refusal names: PyTorch's kernel there (`fill_`)
    name = "fill_"


def _graph_like(t, fill, dtype, memory_format=None):
    """`fill` in the shape of the Symbol t (graph mode, `kn.compile`): a constant broadcast to
    t's shape, which may have symbolic dims."""
    from ..frontend.core import constant
    from ..frontend.functionalize import clone
    from ..frontend.shape import broadcast_to

    dtype = t.dtype if dtype is None else dt.as_dtype(dtype)
    value = constant(dt.number_array(fill, dtype, "full_like", t), graph=t.graph)
    # a tensor of its own, as PyTorch's: writable in place (`out = zeros_like(x);
    # out.index_add_(...)`), which a broadcast view of one constant is not
    if not t.shape:
        return clone(value)
    out = clone(broadcast_to(value, t.shape))
    if getattr(memory_format, "name", "preserve_format") != "preserve_format":
        return clone(out, memory_format) if memory_format.name != "contiguous_format" else out
    from ..frontend.result_layouts import keep_like

    return keep_like(out, t)  # laid out as t (PyTorch's preserve_format)


def zeros_like(
    input,  # noqa: A002
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
    layout=None,
) -> Tensor:
    """Zeros of `t`'s shape, dtype and device (unless given); of a Symbol, a graph value.

    >>> import kiln as kn
    >>> kn.zeros_like(kn.ones(2, dtype=kn.int32))
    tensor([0, 0], dtype=kiln.int32)
    """
    if layout is not None:
        input = _like_layout(input, layout)  # noqa: A001
    if isinstance(input, Symbol):
        return _graph_like(input, 0, dtype, memory_format)
    if input.is_sparse:  # no entries, as PyTorch's
        return sparse.zeros_like(input, dtype, requires_grad)
    if type(input) is compressed.SparseCompressedTensor:
        return compressed.like(input, None, dtype, requires_grad)
    shape, dtype, device = _like(input, dtype, device)
    return like_memory(
        input, zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad), memory_format
    )


def ones_like(
    input,  # noqa: A002
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
    layout=None,
) -> Tensor:
    """Ones of `t`'s shape, dtype and device (unless given); of a Symbol, a graph value."""
    if layout is not None:
        input = _like_layout(input, layout)  # noqa: A001
    if isinstance(input, Symbol):
        return _graph_like(input, 1, dtype, memory_format)
    if type(input) is compressed.SparseCompressedTensor:  # its pattern, as PyTorch's
        return compressed.like(input, 1, dtype, requires_grad)
    shape, dtype, device = _like(input, dtype, device)
    return like_memory(
        input, ones(shape, dtype=dtype, device=device, requires_grad=requires_grad), memory_format
    )


def empty_like(
    input,  # noqa: A002
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
    layout=None,
) -> Tensor:
    """An uninitialized tensor of `t`'s shape, dtype and device (unless given); of a Symbol,
    zeros."""
    if layout is not None:
        input = _like_layout(input, layout)  # noqa: A001
    if isinstance(input, Symbol):
        return _graph_like(input, 0, dtype, memory_format)
    if input.is_sparse:
        return sparse.zeros_like(input, dtype, requires_grad)
    if type(input) is compressed.SparseCompressedTensor:  # its pattern, as PyTorch's
        return compressed.like(input, 0, dtype, requires_grad)
    shape, dtype, device = _like(input, dtype, device)
    return like_memory(
        input, empty(shape, dtype=dtype, device=device, requires_grad=requires_grad), memory_format
    )


def full_like(
    input,  # noqa: A002
    fill_value,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
    layout=None,
) -> Tensor:
    """`fill_value` in `t`'s shape, dtype and device (unless given); of a Symbol, a graph
    value."""
    if layout is not None:
        input = _like_layout(input, layout)  # noqa: A001
    if isinstance(input, Symbol):
        return _graph_like(input, fill_value, dtype, memory_format)
    if type(input) is compressed.SparseCompressedTensor:  # its pattern, as PyTorch's
        return compressed.like(input, fill_value, dtype, requires_grad)
    shape, dtype, device = _like(input, dtype, device)
    return like_memory(
        input,
        full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad),
        memory_format,
    )
