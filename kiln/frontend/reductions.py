"""Reductions (`sum`, `mean`, `prod`, `amax`/`amin`, `max`/`min`, `argmax`/`argmin`,
`logsumexp`, `all`/`any`): PyTorch's names, arguments and result dtypes; importable from
kiln/frontend/math.py too."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import return_types
from ..eager.autograd import name_history
from ..errors import ArgumentTypeError, DTypeMismatchError, IndexOutOfBoundsError, call_error
from ..graph.core import Symbol
from ..ops.multi import elements
from ..ops.state import GRAD_FORMULAS
from . import core
from .autocast import autocast_op
from .core import call, lift
from .math import (
    add,
    cast,
    equal,
    exp,
    greater,
    isfinite,
    log,
    logical_not,
    maximum,
    minimum,
    mul,
    not_equal,
    sub,
    where,
)
from .out import takes_out

# -- reductions --------------------------------------------------------------------------------
# PyTorch's signatures: `dim` (None: all dims; an int or a tuple) and `keepdim`, with NumPy's
# `axis` and `keepdims` accepted as aliases. A 0-d tensor takes dim 0 or -1.


def _dim(dim, axis, keepdim, keepdims, fn: str):
    """(dim, keepdim) from PyTorch's arguments or their NumPy aliases."""
    if axis is not None:
        if dim is not None:
            raise ArgumentTypeError(
                f"{fn}() got multiple values for argument 'dim' (dim= and axis=)"
            )
        dim = axis
    return dim, bool(keepdim if keepdims is None else keepdims)


def _axes(dim, ndim: int) -> tuple:
    """Canonical reduced axes for `dim`: None and () are every dim; on a 0-d value dims 0 and
    -1 name the value itself (no axis to reduce)."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(ndim))
    if ndim == 0:
        dim = list((dim,) if isinstance(dim, (int, np.integer)) else dim)
        for d in dim:
            if d not in (0, -1):
                raise IndexOutOfBoundsError(
                    f"Dimension out of range (expected to be in range of [-1, 0], but got {d})"
                )
        dim = [int(d) for d in dim]  # (a dim named twice raises there)
    return sh.normalize_axes(dim, ndim)


def _reduce(op_name, x, dim, keepdim):
    return call(op_name, x, axes=_axes(dim, x.ndim), keepdims=keepdim)


def _accumulating(x, dtype):
    """`x` cast for a sum or product: to `dtype` when given, else integers and bools to int64
    (PyTorch's accumulation: the sum of int32 or bool values is int64)."""
    (x,) = lift(x)
    if dtype is not None:
        target = dt.as_dtype(dtype)
    elif x.dtype.kind == "b" or (x.dtype.kind in "iu" and x.dtype.itemsize < 8):
        target = dt.int64
    else:
        return x
    return x if x.dtype == target else cast(x, target)


def _as_asked(result, dtype):
    """A sum's or product's result in the `dtype` asked for (the kernel accumulates small
    integers as int64, as NumPy does; PyTorch returns the dtype given)."""
    if dtype is None or result.dtype == dt.as_dtype(dtype):
        return result
    return cast(result, dt.as_dtype(dtype))


def require_floating(name: str, x, message: str, error=DTypeMismatchError) -> None:
    """Refuses x unless its dtype is a floating or complex one, with PyTorch's `message`
    (`{dtype}`: PyTorch's name of x's dtype) as `error` (a RuntimeError, or
    UnsupportedDTypeError for PyTorch's NotImplementedError): mean, var, softmax... of
    integers and bools, which PyTorch refuses."""
    if not (dt.is_float(x.dtype) or x.dtype.kind == "c"):
        raise call_error(error, message.format(dtype=dt.scalar_name(x.dtype)), name, x)


def _floating(x, dtype=None):
    """`x` for a mean or variance: cast to `dtype` when given, integers and bools to the
    default float (PyTorch refuses them; kiln computes them as PyTorch's float functions do)."""
    (x,) = lift(x)
    target = dt.to_float(x.dtype) if dtype is None else dt.as_dtype(dtype)
    return x if x.dtype == target else cast(x, target)


@takes_out
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001
    """Sum over `dim` (None: all; an int or a tuple), as PyTorch's `sum`: integers and bools
    sum to int64 unless `dtype` is given.

    >>> import kiln as kn, numpy as np
    >>> kn.sum(np.ones((2, 3), np.float32), dim=-1)
    array([3., 3.], dtype=float32)
    >>> kn.sum(np.array([True, True, False])).dtype
    dtype('int64')
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "sum")
    return _as_asked(_reduce("reduce_sum", _accumulating(input, dtype), dim, keepdim), dtype)


@takes_out
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over `dim`, as PyTorch's `mean` (integers and bools are refused, as PyTorch's:
    pass `dtype=`).

    >>> import kiln as kn, numpy as np
    >>> kn.mean(np.arange(6.0).reshape(2, 3), 0)
    array([1.5, 2.5, 3.5])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "mean")
    asked = None if dtype is None else dt.as_dtype(dtype)
    if asked is not None and not (dt.is_float(asked) or asked.kind == "c"):
        (input,) = lift(input)  # noqa: A001
        message = (
            f"mean(): could not infer output dtype. Optional dtype must be either a "
            f"floating point or complex dtype. Got: {dt.scalar_name(asked)}"
        )
        raise call_error(DTypeMismatchError, message, "mean", input)
    if dtype is None:
        (input,) = lift(input)  # noqa: A001
        require_floating(
            "mean",
            input,
            "mean(): could not infer output dtype. Input dtype must be either "
            "a floating point or complex dtype. Got: {dtype}",
        )
    return _reduce("reduce_mean", _floating(input, dtype), dim, keepdim)


@takes_out
@autocast_op("fp32")
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Product over `dim`, as PyTorch's `prod` (integers and bools multiply as int64).

    >>> import kiln as kn, numpy as np
    >>> kn.prod(np.array([[1, 5], [7, 2]]), 0)
    array([ 7, 10])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "prod")
    return _as_asked(_reduce("reduce_prod", _accumulating(input, dtype), dim, keepdim), dtype)


@takes_out
def amax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The maximum over `dim` (None or (): all dims), as PyTorch's `amax`: values only.

    >>> import kiln as kn, numpy as np
    >>> kn.amax(np.array([[1, 5], [7, 2]]), 1)
    array([5, 7])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "amax")
    (input,) = lift(input)
    return _reduce("reduce_max", input, dim, keepdim)


@takes_out
def amin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The minimum over `dim` (None or (): all dims), as PyTorch's `amin`: values only.

    >>> import kiln as kn, numpy as np
    >>> kn.amin(np.array([[1, 5], [7, 2]]), 1)
    array([1, 2])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "amin")
    (input,) = lift(input)
    return _reduce("reduce_min", input, dim, keepdim)


def _extremum(which, x, dim, keepdim, axis, keepdims):
    """PyTorch's `max`/`min`: of everything (a 0-d value), along one dim (values and
    indices), or elementwise against a tensor (`maximum`/`minimum`)."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        if isinstance(dim, (float, tuple, list)):
            raise ArgumentTypeError(f"{which}(): dim must be an int or a tensor, got {dim!r}")
        return (maximum if which == "max" else minimum)(x, dim)
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, which)
    (x,) = lift(x)
    if dim is None:  # ties share the gradient, NaNs with a NaN result: PyTorch's max()
        return call(f"reduce_{which}", x, axes=_axes(None, x.ndim), keepdims=False, nan_ties=True)
    if isinstance(x, Symbol) and x.ndim:  # one node computes both (kiln/ops/multi.py)
        attrs = {"axis": sh.normalize_axis(int(dim), x.ndim), "keepdims": bool(keepdim)}
        t = call(f"{which}_dim", x, **attrs)
        return getattr(return_types, which)(*elements(t, f"{which}_dim", x, **attrs))
    indices = (argmax if which == "max" else argmin)(x, int(dim), True)
    if x.ndim == 0:  # one element: nothing ties
        values = _reduce(f"reduce_{which}", x, int(dim), keepdim)
        return getattr(return_types, which)(values, indices)
    # NOTE: the values are read at the returned indices, so the gradient goes to that one
    # element even where several tie (PyTorch's), not split as reduce_max's gradient is.
    axis = sh.normalize_axis(int(dim), x.ndim)
    values = call("take_along_axis", x, indices, axis=axis)
    if not keepdim:
        kept = tuple(d for i, d in enumerate(values.shape) if i != axis)
        values = call("reshape", values, shape=kept)
        indices = call("reshape", indices, shape=kept)
    saved = {"_saved_dim": int(dim), "_saved_keepdim": bool(keepdim), "_saved_indices": indices,
             "_saved_self_sym_sizes": tuple(x.shape)}  # fmt: skip
    values = name_history(values, f"{which.capitalize()}Backward0", x, saved=saved)
    return getattr(return_types, which)(values, indices)


@takes_out
def max(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):  # noqa: A001
    """PyTorch's `max`: `max(x)` is the largest element (0-d); `max(x, dim)` is the named
    tuple `(values, indices)` along `dim`; `max(x, other)` (or `other=`) is `maximum`.

    >>> import kiln as kn, numpy as np
    >>> values, indices = kn.max(np.array([[1, 5], [7, 2]]), 1)
    >>> values, indices
    (array([5, 7]), array([1, 0]))
    """
    return _extremum("max", input, dim if other is None else other, keepdim, axis, keepdims)


@takes_out
def min(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):  # noqa: A001
    """PyTorch's `min`: the smallest element, `(values, indices)` along `dim`, or `minimum`.

    >>> import kiln as kn, numpy as np
    >>> kn.min(np.array([[1, 5], [7, 2]]), 1).values
    array([1, 2])
    """
    return _extremum("min", input, dim if other is None else other, keepdim, axis, keepdims)


def _arg(op_name, x, dim, keepdim):
    (x,) = lift(x)
    if dim is None:
        return call(op_name, x, axis=None, keepdims=keepdim)
    if x.ndim == 0:
        _axes(dim, 0)
        return call(op_name, x, axis=None, keepdims=False)
    return call(op_name, x, axis=sh.normalize_axis(dim, x.ndim), keepdims=keepdim)


@takes_out
def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the maximum along `dim` (None: of the flattened tensor), as int64.

    >>> import kiln as kn, numpy as np
    >>> kn.argmax(np.array([[1, 5], [7, 2]]), dim=1)
    array([1, 0])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "argmax")
    return _arg("argmax", input, dim, keepdim)


@takes_out
def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the minimum along `dim` (None: of the flattened tensor), as int64.

    >>> import kiln as kn, numpy as np
    >>> kn.argmin(np.array([[1, 5], [7, 2]]), dim=1)
    array([0, 1])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "argmin")
    return _arg("argmin", input, dim, keepdim)


@takes_out
@autocast_op(None, cuda="fp32")
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """`log(sum(exp(x)))` over `dim`, shifted by the maximum so it cannot overflow. float16
    and bfloat16 step by step in their dtype (each op rounding, the sum accumulated in
    float32), their gradient `ct * exp(x - result)` so too: PyTorch's.

    >>> import kiln as kn, numpy as np
    >>> kn.logsumexp(np.array([1000.0, 1000.0], np.float32))
    array(1000.6932, dtype=float32)
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "logsumexp")
    input = _floating(input)
    axes = _axes(dim, input.ndim)
    if 0 in [input.shape[a] for a in axes]:  # nothing to shift by: log(0) = -inf
        m = 0.0
    else:  # complex: shifted by the largest real part (a complex value has no order)
        real = call("real", input) if input.dtype.kind == "c" else input
        m = _reduce("reduce_max", real, axes, True)
        m = call("stop_gradient", where(isfinite(m), m, 0))
    r = add(log(_reduce("reduce_sum", exp(sub(input, m)), axes, True)), m)
    if input.dtype in (np.dtype(np.float16), dt.bfloat16):
        r = core.with_grad(r, input, ("logsumexp",), input, r)
    if keepdim:
        return r
    return call("reshape", r, shape=tuple(d for i, d in enumerate(r.shape) if i not in axes))


def _logsumexp_grad(ct, x, r):
    return mul(ct, exp(sub(x, r)))  # r and ct keep the reduced dims: they broadcast


GRAD_FORMULAS["logsumexp"] = _logsumexp_grad


@takes_out
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """Whether every element (along `dim`) is nonzero, as bools (True for none; uint8 for a
    uint8 input, as PyTorch's).

    >>> import kiln as kn, numpy as np
    >>> kn.all(np.array([[1, 0], [2, 3]]), dim=1), kn.all(np.zeros((0,)))
    (array([False,  True]), array(True))
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "all")
    (input,) = lift(input)
    if _no_dims(dim):
        return _truth(cast(input, dt.bool_), input.dtype)
    zeros = cast(logical_not(input), dt.int64)
    return _truth(equal(_reduce("reduce_sum", zeros, dim, keepdim), 0), input.dtype)


@takes_out
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """Whether some element (along `dim`) is nonzero, as bools (False for none; uint8 for a
    uint8 input, as PyTorch's).

    >>> import kiln as kn, numpy as np
    >>> kn.any(np.array([[1, 0], [0, 0]]), dim=1)
    array([ True, False])
    """
    dim, keepdim = _dim(dim, axis, keepdim, keepdims, "any")
    (input,) = lift(input)
    if _no_dims(dim):
        return _truth(cast(input, dt.bool_), input.dtype)
    nonzero = cast(not_equal(input, False if input.dtype.kind == "b" else 0), dt.int64)
    return _truth(greater(_reduce("reduce_sum", nonzero, dim, keepdim), 0), input.dtype)


def _no_dims(dim) -> bool:
    """An empty dim list: PyTorch's all/any reduce no dim then (each element's truth), where
    its sum, amax... reduce every dim."""
    return isinstance(dim, (tuple, list)) and not dim


def _truth(result, dtype):
    """`all`'s and `any`'s answer: uint8 for uint8 inputs (PyTorch's legacy), bools else."""
    return cast(result, dt.uint8) if dtype == dt.uint8 else result
