"""Python operators and PyTorch's methods on Symbol and the eager Tensor (installed when kiln
is imported), so the same code runs eagerly, in graph mode and under `kn.compile`."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..array_types import Size, device, strided
from ..eager.autograd import name_history
from ..errors import ArgumentTypeError, GraphError, ShapeMismatchError, call_error
from ..graph.core import Symbol
from . import functionalize, indexing, layouts
from . import linalg as la
from . import linalg_factor as lf
from . import linalg_more as lmore
from . import math as m
from . import nn_functional as nf
from . import shape as s
from . import special as sp
from . import torch_data as td
from . import torch_extra_linalg as xl
from . import torch_extra_math as xm
from . import torch_extra_shape as xs
from . import torch_index as ti
from . import torch_math as tm
from . import torch_misc_ops as tmo
from . import torch_more as tmore
from . import torch_namespace as tn
from . import torch_numeric as tnum
from . import torch_shape as ts
from . import torch_stats as tst
from . import torch_variance as tv
from .symbol_methods import install_symbol_methods
from .torch_legacy import LEGACY_METHODS


def _swap(fn):
    return lambda self, other: fn(other, self)


def _commuted(fn):
    """`other + self` as `self + other` (the same values): PyTorch records the tensor first."""
    return lambda self, other: fn(self, other)


def _rdiv(self, other):
    """`other / self`: PyTorch's `reciprocal(self) * other` (two roundings: its values, and its
    graph, MulBackward0 of ReciprocalBackward0)."""
    return m.mul(xm.reciprocal(self), other)


def _rsub(self, other):
    """`other - self`; of a number, PyTorch's node is `RsubBackward1` of `self` alone."""
    return name_history(m.sub(other, self), "RsubBackward1", self)


# operands PyTorch's comparison operators do not take (they return NotImplemented): so
# `t == [1, 2]` is Python's False and `t != "a"` its True, `t < (1,)` a TypeError
_NOT_COMPARED = (list, tuple, str, bytes, dict, set, frozenset, range, type(None))


def _compared(fn):
    def op(self, other):
        if isinstance(other, _NOT_COMPARED):
            return NotImplemented
        return fn(self, other)

    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


OPERATORS = {
    "__add__": m.add, "__radd__": _commuted(m.add), "__sub__": m.sub, "__rsub__": _rsub,
    "__mul__": m.mul, "__rmul__": _commuted(m.mul), "__truediv__": m.div,
    "__rtruediv__": _rdiv, "__div__": m.div, "__rdiv__": _rdiv,  # PyTorch's too
    "__floordiv__": m.floordiv,
    "__rfloordiv__": _swap(m.floordiv), "__mod__": m.mod, "__rmod__": _swap(m.mod),
    "__pow__": m.pow, "__rpow__": _swap(m.pow), "__matmul__": m.matmul,
    "__rmatmul__": _swap(m.matmul), "__neg__": m.neg, "__pos__": lambda x: x,
    "__abs__": m.abs, "__lt__": _compared(m.less), "__le__": _compared(m.less_equal),
    "__gt__": _compared(m.greater), "__ge__": _compared(m.greater_equal),
    "__eq__": _compared(m.equal), "__ne__": _compared(m.not_equal),
    "__and__": m.bitwise_and, "__rand__": _swap(m.bitwise_and), "__or__": m.bitwise_or,
    "__ror__": _swap(m.bitwise_or), "__xor__": m.bitwise_xor, "__rxor__": _swap(m.bitwise_xor),
    "__invert__": m.bitwise_not, "__lshift__": m.bitwise_left_shift,
    "__rlshift__": _swap(m.bitwise_left_shift), "__rshift__": m.bitwise_right_shift,
    "__rrshift__": _swap(m.bitwise_right_shift), "__getitem__": s.getitem,
    "__delitem__": lambda self, index: _no_delitem(),
}  # fmt: skip

METHODS = {
    "sum": m.sum, "mean": m.mean, "max": m.max, "min": m.min, "prod": m.prod,
    "argmax": m.argmax, "argmin": m.argmin, "var": tv.var, "std": tv.std,
    "logsumexp": m.logsumexp, "amax": m.amax, "amin": m.amin, "all": m.all, "any": m.any,
    "exp": m.exp, "log": m.log, "sqrt": m.sqrt, "rsqrt": m.rsqrt, "abs": m.abs, "neg": m.neg,
    "log1p": m.log1p, "expm1": m.expm1, "square": m.square, "sin": m.sin, "cos": m.cos,
    "tanh": m.tanh, "sigmoid": m.sigmoid, "relu": m.relu, "sign": m.sign, "floor": m.floor,
    "ceil": m.ceil, "trunc": m.trunc, "clip": m.clip, "clamp": m.clip, "round": m.round,
    "add": m.add, "sub": m.sub, "mul": m.mul, "div": m.div, "pow": m.pow,
    "maximum": m.maximum, "minimum": m.minimum, "eq": m.equal, "ne": m.not_equal,
    "lt": m.less, "le": m.less_equal, "gt": m.greater, "ge": m.greater_equal,
    "isnan": m.isnan, "isfinite": m.isfinite, "logical_and": m.logical_and,
    "logical_or": m.logical_or, "logical_not": m.logical_not, "logical_xor": m.logical_xor,
    "bitwise_and": m.bitwise_and, "bitwise_or": m.bitwise_or, "bitwise_xor": m.bitwise_xor,
    "bitwise_not": m.bitwise_not, "bitwise_left_shift": m.bitwise_left_shift,
    "bitwise_right_shift": m.bitwise_right_shift,
    "astype": m.cast, "matmul": m.matmul, "dot": m.dot, "reshape": None,
    "transpose": s.transpose, "swapaxes": s.swapaxes, "swapdims": s.transpose,
    "permute": s.permute, "t": s.t, "flatten": s.flatten, "squeeze": s.squeeze,
    "unsqueeze": s.unsqueeze, "broadcast_to": s.broadcast_to, "take": s.gather,
}  # fmt: skip

# PyTorch's methods of kiln/frontend/torch_*.py (their `div` takes rounding_mode, `take` is
# PyTorch's, of the flattened tensor unless an axis is given).
METHODS |= {
    "cumsum": tm.cumsum, "cumprod": tm.cumprod, "cummax": tm.cummax, "cummin": tm.cummin,
    "logcumsumexp": tm.logcumsumexp, "sort": tm.sort, "argsort": tm.argsort, "topk": tm.topk,
    "mm": tm.mm, "bmm": tm.bmm, "addmm": tm.addmm, "baddbmm": tm.baddbmm,
    "addcmul": tm.addcmul, "addcdiv": tm.addcdiv, "allclose": tm.allclose, "isclose": tm.isclose,
    "equal": tm.equal, "div": tm.div, "divide": tm.div, "fmod": tm.fmod,
    "remainder": m.mod, "copysign": tm.copysign, "lerp": tm.lerp, "logaddexp": tm.logaddexp,
    "exp2": tm.exp2, "log2": tm.log2, "log10": tm.log10, "tan": tm.tan, "asin": tm.asin,
    "acos": tm.acos, "atan": tm.atan, "atan2": tm.atan2, "sinh": tm.sinh, "cosh": tm.cosh,
    "asinh": tm.asinh, "acosh": tm.acosh, "atanh": tm.atanh, "flip": ts.flip, "roll": ts.roll,
    "tril": ts.tril, "triu": ts.triu, "diagonal": ts.diagonal, "diag": ts.diag,
    "repeat": ts.repeat, "repeat_interleave": ts.repeat_interleave, "expand": ts.expand,
    "expand_as": ts.expand_as, "unflatten": ts.unflatten, "chunk": ts.chunk,
    "split": ts.split_method,
    "unfold": ts.unfold, "gather": ti.gather, "take": ti.take, "index_select": ti.index_select,
    "scatter": ti.scatter, "scatter_add": ti.scatter_add, "scatter_reduce": ti.scatter_reduce,
    "masked_fill": ti.masked_fill, "masked_select": ti.masked_select, "nonzero": ti.nonzero,
    "where": ti.where_method, "index_put": indexing.index_put, "det": la.det, "inverse": la.inv,
    "slogdet": la.slogdet, "logdet": la.logdet, "cholesky": la.cholesky_method,
    "svd": lf.svd_old, "qr": lf.qr_old, "pinverse": lf.pinverse, "matrix_exp": lf.matrix_exp,
    "triangular_solve": lf.triangular_solve, "lu_solve": lf.lu_solve_old, "lu": lf.lu_old,
    "orgqr": lf.orgqr, "geqrf": lmore.geqrf, "ormqr": lmore.ormqr,
    "lgamma": sp.lgamma, "digamma": sp.digamma, "erfinv": sp.erfinv, "i0": sp.i0,
    "polygamma": sp.polygamma_method, "igamma": sp.igamma, "igammac": sp.igammac,
    "mvlgamma": sp.mvlgamma,
    "softmax": nf.softmax, "log_softmax": nf.log_softmax,
}  # fmt: skip


def _sample(name):
    """`kn.bernoulli`/`kn.multinomial` as Symbol methods (their graph forms)."""

    def method(self, *args, **kwargs):
        from .. import eager

        return getattr(eager, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _trace(self):
    """The sum of a matrix's diagonal (PyTorch refuses other shapes)."""
    if self.ndim != 2:
        raise call_error(ShapeMismatchError, f"trace: expected a matrix, but got tensor with dim "
                         f"{self.ndim}", "trace", self)  # fmt: skip
    m.refuse_bool("trace", self)  # (PyTorch's has no bool kernel)
    return name_history(m.sum(ts.diagonal(self)), "TraceBackward0", self)


def _tile_method(self, *args, dims=None):
    """`x.tile(2, 1)` or `x.tile((2, 1))`, as PyTorch's method takes its dims."""
    return s.tile(self, s.varargs("tile", args, dims, "dims"))


METHODS |= {"bernoulli": _sample("bernoulli"), "multinomial": _sample("multinomial")}
METHODS |= {name: getattr(xm, name) for name in xm.__all__}
METHODS |= {name: getattr(tv, name) for name in tv.__all__}
METHODS |= {name: getattr(xl, name) for name in xl.__all__}
METHODS |= {name: getattr(xs, name) for name in xs.__all__}
METHODS |= {name: getattr(td, name) for name in td.__all__}
METHODS |= {name: getattr(tst, name) for name in tst.__all__}
METHODS |= {"frexp": tmo.frexp, "nextafter": tmo.nextafter, "renorm": tmo.renorm}
METHODS |= {
    "erf": m.erf, "isinf": xm.isinf, "multiply": m.mul, "subtract": m.sub,
    "true_divide": m.div, "floor_divide": m.floordiv, "greater": m.greater,
    "greater_equal": m.greater_equal, "less": m.less, "less_equal": m.less_equal,
    "not_equal": m.not_equal, "tile": _tile_method, "trace": _trace,
}  # fmt: skip


def _functional(name):
    """`kn.nn.functional.<name>` as a method (nn.functional builds on the frontend)."""

    def method(self, *args, **kwargs):
        from ..nn import functional as F

        return getattr(F, name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


METHODS |= {name: getattr(tmore, name) for name in tmore.__all__}
METHODS |= {
    "diagflat": tn.diagflat, "diagonal_scatter": tn.diagonal_scatter,
    "select_scatter": tn.select_scatter, "slice_scatter": tn.slice_scatter,
    "hardshrink": _functional("hardshrink"), "prelu": _functional("prelu"),
    "dim_order": tmore.dim_order,
    # removed from PyTorch: its methods raise as its functions do (kiln/frontend/torch_numeric.py)
    "eig": tnum.eig, "symeig": tnum.symeig, "solve": tnum.solve, "lstsq": tnum.lstsq,
}  # fmt: skip


def _reshape_method(self, *args, shape=None):
    return s.reshape(self, s.varargs("reshape", args, shape, "shape"))


# -- Symbol's own: what eager Tensors have from their value (kiln/eager), made from the type ----


def _to(self, *args, **kwargs):
    """`to(dtype)`, `to(device)`, `to(other)`, `to(device, dtype)`: a cast where the dtype
    changes; a graph value has no device until it runs (the Function's device), so a device
    changes nothing."""
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("device", None), kwargs.pop("copy", None), kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise ArgumentTypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    out = _to_dtype(self, args, dtype)
    if getattr(memory_format, "name", "preserve_format") == "preserve_format":
        return out
    # (PyTorch's: itself where its layout suggests that format, else a copy laid out so)
    if layouts.suggests_format(layouts._layout(out, True), memory_format):
        return out
    return layouts.clone(out, memory_format)


def _to_dtype(self, args, dtype):
    for a in args:
        if isinstance(a, bool):
            continue  # non_blocking, copy
        if (
            isinstance(a, Symbol)
            or not isinstance(a, (np.dtype, str, type))
            and hasattr(a, "dtype")
        ):
            dtype = a.dtype
        elif not _names_device(a):
            dtype = a
    if dtype is None or dt.as_dtype(dtype) == self.dtype:
        return self
    return m.cast(self, dtype)


def _names_device(value) -> bool:
    if isinstance(value, str):
        try:
            dt.as_dtype(value)
        except TypeError:
            return True
        return False
    return isinstance(value, int) and not isinstance(value, bool)


def _numel(self) -> int:
    n = Size.numel(self.shape) if all(isinstance(d, int) for d in self.shape) else None
    if n is None:
        raise GraphError(f"numel() of Symbol '{self.name}' with shape {self.shape}: its size "
                         "is known only when the graph runs")  # fmt: skip
    return n


def _device(self) -> device:
    """The device the graph is built for (kn.compile's), else "cpu"."""
    return device(getattr(self.graph, "device", None) or "cpu")


def _cast_to(dtype):
    return lambda self, memory_format=None: m.cast(self, dtype) if self.dtype != dtype else self


def _view(self, *shape, size=None, dtype=None):
    """`view(shape)`, or `view(dtype)`: the same bytes read as dtype (one `bitcast`); PyTorch's
    keywords `size=` and `dtype=` too."""
    if dtype is not None or size is not None:
        shape = (dtype,) if dtype is not None else (size,)
    if len(shape) == 1 and dt.is_dtype(shape[0]):
        dtype = dt.as_dtype(shape[0])
        return m.core.call("bitcast", self, dtype=dtype, source=self.dtype)
    out = _reshape_method(self, *shape)
    static = all(isinstance(d, int) for d in (*self.shape, *getattr(out, "shape", ())))
    if (isinstance(out, Symbol) and static and _numel(self) != 1 and functionalize.copies(out)
            and functionalize.layout_known(self)):  # fmt: skip
        # as eagerly (PyTorch's view): a reshape that would copy is refused (where kiln knows
        # self's layout: not where it made self by a reshape PyTorch would not need, `diagonal`)
        raise call_error(
            ShapeMismatchError,
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead "
            f"(a view of shape {list(out.shape)} was asked for)",
            "view",
            self,
        )
    return out


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """`type()`: the type's name (`'kiln.FloatTensor'`); `type(dtype)`: a cast."""
    if dtype is None:
        return dt.type_name(self.dtype)
    return _to(self, dt.dtype_of_type(dtype))


def _no_delitem():
    raise ArgumentTypeError("Tensor does not support deleting items")  # (PyTorch's)


def _no_setitem(self, index, value):
    raise ArgumentTypeError(
        f"Symbol '{self.name}' is a value of the graph and cannot change: instead of "
        "`x[index] = v`, write `x = kn.index_put(x, indices, v)` (or `x.index_put(...)`), "
        "which gives a new value; item assignment works on eager tensors"
    )


SYMBOL_METHODS = {
    "view": None, "contiguous": functionalize.contiguous,
    "detach": lambda self: m.core.call("stop_gradient", self), "to": _to,
    "float": _cast_to(dt.float32), "double": _cast_to(dt.float64), "half": _cast_to(dt.float16),
    "bfloat16": _cast_to(dt.bfloat16),
    "long": _cast_to(dt.int64), "int": _cast_to(dt.int32), "bool": _cast_to(dt.bool_),
    "type_as": lambda self, other: _to(self, other.dtype), "dim": lambda self: len(self.shape),
    "numel": _numel, "is_contiguous": functionalize.is_contiguous,
    "__setitem__": _no_setitem, "type": _type,
    # a clone is a value of its own (changing it in place leaves x as it is); the device of a
    # graph value is the Function's
    "clone": functionalize.clone, "cpu": lambda self, memory_format=None: self,
    "stride": functionalize.stride, "storage_offset": functionalize.storage_offset,
    # a fresh graph value is laid out in C order whatever strides are asked for
    "new_empty_strided": lambda self, size, stride, **kwargs: self.new_empty(size, **kwargs),
    "cuda": lambda self, device=None, non_blocking=False, memory_format=None: self,
}  # fmt: skip


def _symbol_data(self):
    """PyTorch's `.data` of a graph value: the value without gradient (`detach()`); of a
    module's parameter inside a kn.compile trace (`self.weight.data`), the parameter's `.data`
    there, whose in-place changes the compiled program makes on every call."""
    from ..nn.parameter import module_data_of  # NOTE: lazy: kiln.nn builds on the frontend

    found = module_data_of(self)
    return m.core.call("stop_gradient", self) if found is None else found


def _set_symbol_data(self, value) -> None:
    """`self.weight.data = value` inside a kn.compile trace: the parameter's new value."""
    from ..nn.parameter import module_data_of  # NOTE: lazy: kiln.nn builds on the frontend

    found = module_data_of(self)
    if found is None:
        raise call_error(
            GraphError,
            f"cannot assign .data of '{self.name}': only a module's parameter or buffer inside "
            "a kn.compile trace takes a new value so; compute a new value instead",
            "data", self,
        )  # fmt: skip
    found.owner.data = value


def install(cls=Symbol) -> None:
    """Puts the operators and methods on `cls` (Symbol now, eager Tensor later)."""
    for name, fn in OPERATORS.items():
        setattr(cls, name, fn)
    for name, fn in METHODS.items():
        setattr(cls, name, getattr(fn, "without_out", fn))  # methods take no out=
    for name, fn in (xs.TYPE_METHODS | xs.REAL_METHODS).items():
        setattr(cls, name, fn)
    for name, fn in LEGACY_METHODS.items():
        setattr(cls, name, fn)
    for name, fn in xs.TYPE_PROPERTIES.items():
        setattr(cls, name, property(fn))
    for name in tmore.FALSE_FLAGS:
        setattr(cls, name, property(lambda self: False))
    cls.layout = property(lambda self: strided)
    cls.is_pinned = lambda self: False
    if "is_shared" not in cls.__dict__:  # a Symbol's; an eager Tensor's: kiln/eager/storage.py
        cls.is_shared = lambda self: False
    cls.reshape = _reshape_method
    cls.T = property(s.reverse_dims)
    cls.mT = cls.mH = property(s.matrix_transpose)  # mH: the conjugate of real values is themselves
    cls.H = property(s.t)
    cls.__hash__ = object.__hash__  # == is elementwise; Symbols hash by identity
    cls.__array_ufunc__ = None  # NumPy defers to the reflected operator
    if cls is Symbol:
        for name, fn in SYMBOL_METHODS.items():
            setattr(cls, name, fn)
        install_symbol_methods(cls)
        cls.view = _view
        cls.data = property(_symbol_data, _set_symbol_data)
        cls.device = property(_device)
        cls.is_cuda = property(lambda self: self.device.type == "cuda")
        cls.is_inference = lambda self: False
