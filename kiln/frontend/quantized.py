"""Quantized tensors, as PyTorch's: `quantize_per_tensor` and `quantize_per_channel` (affine
schemes) to `kn.quint8`, `kn.qint8` or `kn.qint32`, `dequantize`, `int_repr`, the
quantization parameters, and printing. A `QuantizedTensor` holds its integers (`_data`) and
its scale and zero point; other ops on it raise `LayoutError`, naming the op.

The rounding is PyTorch's on the CPU, bit for bit: the value times the float32 reciprocal of
the scale, plus the zero point, rounded half to even; per tensor to 8 bits that sum is one
fused multiply-add (PyTorch's vectorized kernel), elsewhere a float32 product then a float32
sum (tests/test_quantized.py compares every path with PyTorch, halfway cases included).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager.sparse import LAYOUTS
from ..eager.tensor import Tensor, make
from ..errors import (
    ArgumentTypeError,
    AutogradError,
    DTypeMismatchError,
    LayoutError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import user_site

__all__ = [
    "dequantize", "int_repr", "per_channel_affine", "per_tensor_affine", "q_per_channel_axis",
    "q_per_channel_scales", "q_per_channel_zero_points", "q_scale", "q_zero_point", "qint8",
    "qint32", "qscheme", "quantize_per_channel", "quantize_per_tensor", "quint8",
]  # fmt: skip


class QuantizedDType:
    """A quantized dtype (`kn.quint8`, `kn.qint8`, `kn.qint32`): integers of `storage` that
    stand for `scale * (q - zero_point)`.

    >>> import kiln as kn
    >>> kn.quint8, kn.quint8.itemsize, kn.qint32.is_floating_point
    (kiln.quint8, 1, False)
    """

    def __init__(self, name: str, storage):
        self.name, self.storage = name, np.dtype(storage)
        self.itemsize = self.storage.itemsize
        self.is_floating_point = self.is_complex = False
        info = np.iinfo(self.storage)
        self.min, self.max = int(info.min), int(info.max)

    @property
    def is_signed(self):
        raise UsageError("isSignedType not supported for quantized types")

    def __getattr__(self, name):
        # a NumPy dtype attribute (kind, char...): an op that reads the dtype before it binds
        if name.startswith("__"):
            raise AttributeError(name)
        raise node_error(
            LayoutError,
            f"quantized tensors ({self!r}) have no kernels beyond dequantize(), int_repr() and "
            f"their quantization parameters: dequantize() first (an op asked for the dtype's "
            f"{name})",
            op=name, site=user_site(), called=True,
        )  # fmt: skip

    def __repr__(self):
        return f"kiln.{self.name}"


quint8 = QuantizedDType("quint8", np.uint8)
qint8 = QuantizedDType("qint8", np.int8)
qint32 = QuantizedDType("qint32", np.int32)


class qscheme:  # noqa: N801 — PyTorch's name
    """How a quantized tensor maps its integers to values (PyTorch's `torch.qscheme`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"kiln.{self.name}"


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")


class QuantizedTensor(Tensor):
    """A quantized tensor: `kn.quantize_per_tensor(x, scale, zero_point, kn.quint8)`.

    >>> import kiln as kn
    >>> q = kn.quantize_per_tensor(kn.tensor([0.0, 0.25, 1.0]), 0.1, 10, kn.quint8)
    >>> q.int_repr(), q.dequantize()
    (tensor([10, 12, 20], dtype=kiln.uint8), tensor([0.0000, 0.2000, 1.0000]))
    """

    # scale and zero point: a float and an int per tensor; float64 and int64 arrays with
    # `_axis` per channel
    __slots__ = ("_qdtype", "_scale", "_zero_point", "_axis")

    def __init__(self, *args, **kwargs):
        raise UsageError(
            "QuantizedTensor is made by kiln.quantize_per_tensor or kiln.quantize_per_channel"
        )

    dtype = property(lambda self: self._qdtype)
    is_quantized = property(lambda self: True)

    def qscheme(self) -> qscheme:
        return per_tensor_affine if self._axis is None else per_channel_affine

    def q_scale(self) -> float:
        self._require(per_tensor_affine, "q_scale")
        return self._scale

    def q_zero_point(self) -> int:
        self._require(per_tensor_affine, "q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self) -> Tensor:
        self._require(per_channel_affine, "q_per_channel_scales")
        return make(self._scale.copy())

    def q_per_channel_zero_points(self) -> Tensor:
        self._require(per_channel_affine, "q_per_channel_zero_points")
        return make(self._zero_point.copy())

    def q_per_channel_axis(self) -> int:
        self._require(per_channel_affine, "q_per_channel_axis")
        return self._axis

    def _require(self, scheme, name: str) -> None:
        if self.qscheme() is not scheme:
            raise UsageError(
                f"{name} needs a tensor quantized {scheme.name}, this one is {self.qscheme().name}"
            )

    def int_repr(self) -> Tensor:
        """The integers, as a tensor of their storage dtype (uint8, int8, int32)."""
        return make(self._data.copy())

    def dequantize(self) -> Tensor:
        """The float32 values `(q - zero_point) * scale` (computed as PyTorch does)."""
        q = self._data.astype(np.int64)
        if self._axis is None:
            values = (q - self._zero_point).astype(np.float32) * np.float32(self._scale)
        else:
            shape = [1] * q.ndim
            shape[self._axis] = -1
            zero, scale = self._zero_point.reshape(shape), self._scale.reshape(shape)
            values = ((q - zero) * scale).astype(np.float32)
        return make(np.asarray(values, np.float32))

    def clone(self, memory_format=None) -> QuantizedTensor:
        return _make(self._data.copy(), self._qdtype, self._scale, self._zero_point, self._axis)

    def detach(self) -> QuantizedTensor:
        return _make(self._data, self._qdtype, self._scale, self._zero_point, self._axis)

    def __deepcopy__(self, memo):
        copied = self.clone()
        memo[id(self)] = copied
        return copied

    def requires_grad_(self, requires_grad: bool = True) -> QuantizedTensor:
        if requires_grad:
            raise node_error(AutogradError, "only Tensors of floating point dtype can require "
                             "gradients", op="requires_grad_", site=user_site(),
                             called=True)  # fmt: skip
        return self

    def numpy(self):
        raise call_error(DTypeMismatchError, f"Got unsupported ScalarType "
                         f"{_torch_scalar_type(self._qdtype)}: call int_repr() or dequantize() "
                         "first", "numpy")  # fmt: skip

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def tolist(self):
        raise _layout_error("tolist", self)

    def item(self):
        return self.dequantize().item()

    def __getitem__(self, index):
        raise _layout_error("indexing", self)

    def __setitem__(self, index, value):
        raise _layout_error("index assignment", self)

    def __repr__(self):
        body = repr(self.dequantize())[len("tensor(") : -1].split(", size=")[0]
        suffixes = [f"size={tuple(self._data.shape)}", f"dtype=kiln.{self._qdtype.name}",
                    f"quantization_scheme=kiln.{self.qscheme().name}"]  # fmt: skip
        if self._axis is None:
            suffixes += [f"scale={self._scale}", f"zero_point={self._zero_point}"]
        else:
            suffixes += [f"scale={make(self._scale)!r}", f"zero_point={make(self._zero_point)!r}",
                         f"axis={self._axis}"]  # fmt: skip
        from ..eager import printing

        return printing.with_suffixes("tensor(", body, suffixes)


def _torch_scalar_type(qdtype) -> str:
    return {"quint8": "QUInt8", "qint8": "QInt8", "qint32": "QInt32"}[qdtype.name]


def _layout_error(name: str, *args) -> LayoutError:
    kinds = ", ".join(f"{a._qdtype!r}{list(a.shape)}" for a in args
                      if isinstance(a, QuantizedTensor))  # fmt: skip
    return node_error(
        LayoutError,
        f"{name} does not support quantized tensors ({kinds}): dequantize() first",
        op=name,
        site=user_site(),
        called=True,
    )


def _dispatch(op, args, attrs):
    """`bind` with a quantized argument: kiln has no quantized kernels."""
    raise _layout_error(op.name, *args)


LAYOUTS[QuantizedTensor] = _dispatch
_new = object.__new__


def _make(data, qdtype, scale, zero_point, axis) -> QuantizedTensor:
    q = _new(QuantizedTensor)
    q._data, q._meta = data, None
    q._qdtype, q._scale, q._zero_point, q._axis = qdtype, scale, zero_point, axis
    return q


def _float_input(name: str, input) -> np.ndarray:  # noqa: A002
    if not isinstance(input, Tensor):
        input = make(np.asarray(input, np.float32))  # noqa: A001
    if isinstance(input, QuantizedTensor) or input.dtype != dt.float32:
        names = {"float64": "Double", "float16": "Half", "int32": "Int", "int64": "Long",
                 "bfloat16": "BFloat16", "uint8": "Byte", "int8": "Char"}  # fmt: skip
        got = names.get(input.dtype.name, input.dtype.name)
        raise call_error(DTypeMismatchError, f"Quantize only works on Float Tensor, got {got}",
                         name)  # fmt: skip
    return input.detach()._host()


def _qdtype(name: str, dtype) -> QuantizedDType:
    if not isinstance(dtype, QuantizedDType):
        raise call_error(DTypeMismatchError, f"{name}: dtype must be kiln.quint8, kiln.qint8 or "
                         f"kiln.qint32, got {dtype}", name)  # fmt: skip
    return dtype


def _number(value, kind):
    return kind(value.item() if isinstance(value, Tensor) else value)


def quantize_per_tensor(input, scale, zero_point, dtype):  # noqa: A002
    """`clamp(round(input / scale) + zero_point)` in `dtype`'s integers, as PyTorch's (a list
    of tensors with tensors of scales and zero points gives a list).

    >>> import kiln as kn
    >>> kn.quantize_per_tensor(kn.tensor([-1.0, 0.25, 100.0]), 0.1, 10, kn.quint8).int_repr()
    tensor([  0,  12, 255], dtype=kiln.uint8)
    """
    if isinstance(input, (list, tuple)):
        scales = np.asarray(scale.detach()._host() if isinstance(scale, Tensor) else scale)
        zeros = np.asarray(zero_point.detach()._host() if isinstance(zero_point, Tensor)
                           else zero_point)  # fmt: skip
        return [quantize_per_tensor(x, float(s), int(z), dtype)
                for x, s, z in zip(input, scales.reshape(-1), zeros.reshape(-1))]  # fmt: skip
    qdtype = _qdtype("quantize_per_tensor", dtype)
    x = _float_input("quantize_per_tensor", input)
    scale, zero_point = _number(scale, float), _number(zero_point, int)
    _check_zero_point("quantize_tensor_per_tensor_affine", zero_point, qdtype)
    inv = np.float32(1.0) / np.float32(scale)
    if qdtype is qint32:
        shifted = np.float32(zero_point) + x * inv
    else:  # one rounding of x * inv + zero_point (a fused multiply-add)
        shifted = (x.astype(np.float64) * np.float64(inv) + zero_point).astype(np.float32)
    return _make(_rounded(shifted, qdtype), qdtype, scale, zero_point, None)


def _rounded(shifted: np.ndarray, qdtype) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        q = np.clip(np.rint(shifted.astype(np.float64)), qdtype.min, qdtype.max)
    return np.asarray(q, qdtype.storage)


def _check_zero_point(name: str, zero_point, qdtype) -> None:
    for z in np.atleast_1d(zero_point):
        if z > qdtype.max:
            raise UsageError(f"{name} zero_point {int(z)} is above upper bound.")
        if z < qdtype.min:
            raise UsageError(f"{name} zero_point {int(z)} is below lower bound.")


def quantize_per_channel(input, scales, zero_points, axis: int, dtype):  # noqa: A002
    """Quantizes each slice along `axis` with its own scale and zero point (PyTorch's
    per-channel affine scheme).

    >>> import kiln as kn
    >>> x = kn.tensor([[0.5, 1.0], [0.5, 1.0]])
    >>> q = kn.quantize_per_channel(x, kn.tensor([0.1, 0.5]), kn.tensor([0, 2]), 0, kn.quint8)
    >>> q.int_repr()
    tensor([[ 5, 10],
            [ 3,  4]], dtype=kiln.uint8)
    """
    qdtype = _qdtype("quantize_per_channel", dtype)
    x = _float_input("quantize_per_channel", input)
    if not 0 <= axis < x.ndim:
        raise UsageError("Channel axis out of range in per channel affine "
                         f"quantization. Got: {axis}Expected: [0, {x.ndim})")  # fmt: skip
    scale = np.asarray(scales.detach()._host() if isinstance(scales, Tensor) else scales,
                       np.float64).reshape(-1)  # fmt: skip
    zero = np.asarray(zero_points.detach()._host() if isinstance(zero_points, Tensor)
                      else zero_points, np.int64).reshape(-1)  # fmt: skip
    for what, values in (("scales", scale), ("zero_points", zero)):
        if values.size != x.shape[axis]:
            raise UsageError(
                f"length of {what} must equal to channel, expected "
                f"{x.shape[axis]} got, {values.size}"
            )
    _check_zero_point("quantize_tensor_per_channel_affine", zero, qdtype)
    shape = [1] * x.ndim
    shape[axis] = -1
    inv = (np.float32(1.0) / scale.astype(np.float32)).reshape(shape)
    shifted = zero.reshape(shape).astype(np.float32) + x * inv
    return _make(_rounded(shifted, qdtype), qdtype, scale, zero, axis)


def dequantize(input=None, *, tensors=None):  # noqa: A002 — PyTorch's names
    """The float32 values of a quantized tensor; a float tensor is its own. A list of them
    (or `tensors=`) gives a tuple, as PyTorch's `dequantize(tensors)` overload.

    >>> import kiln as kn
    >>> kn.dequantize(kn.quantize_per_tensor(kn.tensor([0.26]), 0.1, 0, kn.qint8))
    tensor([0.3000])
    >>> len(kn.dequantize(tensors=[kn.ones(1), kn.ones(2)]))
    2
    """
    if (input is None) == (tensors is None):
        raise ArgumentTypeError("dequantize() takes a tensor (input=) or a list of them "
                                "(tensors=)")  # fmt: skip
    if tensors is not None or isinstance(input, (list, tuple)):
        return tuple(dequantize(t) for t in (input if tensors is None else tensors))
    return input.dequantize() if isinstance(input, QuantizedTensor) else input


_METHODS = ("int_repr", "q_scale", "q_zero_point", "qscheme", "q_per_channel_scales",
            "q_per_channel_zero_points", "q_per_channel_axis")  # fmt: skip


def _function(name: str):
    def fn(input):  # noqa: A002 — PyTorch's name
        return getattr(input, name)()

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`input.{name}()` of a quantized tensor (PyTorch's `torch.{name}`)."
    return fn


def _strided(name: str):
    def method(self, *args, **kwargs):
        raise node_error(
            LayoutError,
            f"{name} needs a quantized tensor (kn.quantize_per_tensor), got a strided one of "
            f"{self.dtype!r}",
            op=name, site=user_site(), called=True,
        )  # fmt: skip

    method.__name__ = method.__qualname__ = name
    return method


int_repr, q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points = map(
    _function, ("int_repr", "q_scale", "q_zero_point", "q_per_channel_scales",
                "q_per_channel_zero_points"))  # fmt: skip
q_per_channel_axis = _function("q_per_channel_axis")


def install() -> None:
    """`dequantize()` on every tensor (a float one is its own, as PyTorch's; Symbols too);
    the quantized methods on strided tensors raise, naming the op, as PyTorch's."""
    from ..graph.core import Symbol

    Tensor.dequantize = Symbol.dequantize = lambda self: self
    for name in _METHODS:
        setattr(Tensor, name, _strided(name))
