"""PyTorch's variance and standard deviation (`var`, `std`, `var_mean`, `std_mean`: `dim`,
`correction`/`unbiased`, `keepdim`, with PyTorch's backward formulas) and `msort`, written with
kiln's ops so that each works eagerly (with autograd), in graph mode and under `kn.compile`."""

from __future__ import annotations

import math as _math
import warnings

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..errors import ArgumentTypeError
from ..ops.state import GRAD_FORMULAS
from . import core
from . import math as m
from . import torch_math as tm
from .core import lift
from .half_formulas import batched_axes
from .out import takes_out
from .reductions import require_floating

__all__ = ["msort", "std", "std_mean", "var", "var_mean"]


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,  # noqa: A002
             axis=None, keepdims=None):  # fmt: skip
    """`(var, mean)` over `dim` (`axis`/`keepdims` alias `dim`/`keepdim`), with `var`'s
    correction (1 by default).

    >>> import kiln as kn
    >>> kn.var_mean(kn.tensor([1.0, 2.0, 3.0]))
    (tensor(1.), tensor(2.))
    """
    if isinstance(dim, bool):  # PyTorch's var_mean(x, unbiased)
        dim, unbiased = None, dim
    dim, keepdim = m._dim(dim, axis, keepdim, keepdims, "var_mean")
    (input,) = lift(input)  # noqa: A001
    require_floating("var_mean", input, "var_mean only support floating point and complex dtypes")
    v = var(input, dim, unbiased, keepdim, correction=correction)
    return v, m.mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,  # noqa: A002
             axis=None, keepdims=None):  # fmt: skip
    """`(std, mean)` over `dim` (`axis`/`keepdims` alias `dim`/`keepdim`), with `std`'s
    correction (1 by default).

    >>> import kiln as kn
    >>> kn.std_mean(kn.tensor([1.0, 2.0, 3.0]))
    (tensor(1.), tensor(2.))
    """
    if isinstance(dim, bool):  # PyTorch's std_mean(x, unbiased)
        dim, unbiased = None, dim
    dim, keepdim = m._dim(dim, axis, keepdim, keepdims, "std_mean")
    (input,) = lift(input)  # noqa: A001
    require_floating("std_mean", input, "std_mean only support floating point and complex dtypes")
    v = std(input, dim, unbiased, keepdim, correction=correction)
    return v, m.mean(input, dim, keepdim)


@takes_out
def msort(input):  # noqa: A002
    """`input` sorted along dim 0 (the values of `sort(input, 0)`).

    >>> import kiln as kn
    >>> kn.msort(kn.tensor([[3, 1], [2, 4]]))
    tensor([[2, 1],
            [3, 4]])
    """
    return tm.sort(input, 0).values


def _count(x, axes):
    """How many elements each reduction over `axes` takes: an int, or a 0-d value of x's
    dtype computed when the graph runs (a symbolic dim)."""
    n = sh.dim_product(x.shape[a] for a in axes)
    if isinstance(n, int):
        return n
    ones = core.call("broadcast_to", core.constant(np.ones((), x.dtype), graph=x.graph),
                     shape=tuple(x.shape[a] for a in axes))  # fmt: skip
    return core.call("reduce_sum", ones, axes=tuple(range(len(axes))), keepdims=False)


@takes_out
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,  # noqa: A002
        keepdims=None, ddof=None):  # fmt: skip
    """Variance over `dim` with PyTorch's Bessel correction: `sum((x - mean)^2) / (n -
    correction)`, `correction=1` by default (`unbiased=False` or `correction=0`: divide by
    n; NumPy's `ddof` is accepted as `correction`). Two passes, for accuracy.

    >>> import kiln as kn, numpy as np
    >>> kn.var(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    array(1.6666667, dtype=float32)
    >>> kn.var(np.array([1.0, 2.0, 3.0, 4.0], np.float32), correction=0)
    array(1.25, dtype=float32)
    """
    given = (dim, correction, unbiased, ddof)
    x, axes, keepdim, correction = _var_args(
        "var", input, dim, unbiased, keepdim, correction, axis, keepdims, ddof
    )
    if _half_var(x, axes, correction):  # PyTorch's: in float32 rounded once (`_var_grad`)
        value = m.cast(_var(m.cast(x, np.float32), axes, keepdim, correction), x.dtype)
        return core.with_grad(value, x, ("var", axes, keepdim, float(correction), x.ndim), x)
    saved = _var_saved(x, keepdim, *given)
    out = _var(x, axes, keepdim, correction)
    if _real_var(x, axes, correction):  # PyTorch's backward, without the mean's path
        out = core.with_grad(out, x, ("var", axes, keepdim, float(correction), x.ndim), x)
    return name_history(out, "VarBackward0", x, saved=saved)


_HALF = (np.dtype(np.float16), dt.bfloat16)


def _var_saved(x, keepdim, dim, correction, unbiased, ddof) -> dict:
    """The `_saved_*` of PyTorch's VarBackward0 and StdBackward0: dim and correction as given."""
    given = [c for c in (correction, ddof, None if unbiased is None else int(unbiased))
             if c is not None and not isinstance(dim, bool)]  # fmt: skip
    dims = None if dim is None or isinstance(dim, bool) else (
        tuple(dim) if isinstance(dim, (tuple, list)) else (dim,))  # fmt: skip
    return {"_saved_self": x, "_saved_dim": dims, "_saved_keepdim": bool(keepdim),
            "_saved_correction": given[0] if given else None}  # fmt: skip


def _var_args(name, input, dim, unbiased, keepdim, correction, axis, keepdims, ddof):  # noqa: A002
    """var's and std's arguments: the float input, the axes, keepdim and the correction."""
    if isinstance(dim, bool):  # PyTorch's var(x, unbiased)
        dim, unbiased = None, dim
    dim, keepdim = m._dim(dim, axis, keepdim, keepdims, name)
    given = [c for c in (correction, ddof, None if unbiased is None else int(unbiased))
             if c is not None]  # fmt: skip
    if len(given) > 1:
        raise ArgumentTypeError(f"{name}(): give one of correction=, unbiased= and ddof=")
    (x,) = lift(input)
    require_floating(name, x, "std and var only support floating point and complex dtypes")
    x = m._floating(x)
    axes, correction = m._axes(dim, x.ndim), given[0] if given else 1
    n = sh.dim_product(x.shape[a] for a in axes)
    if isinstance(n, int) and n - correction <= 0:  # (the result is inf or nan: PyTorch warns)
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=4,
        )
    return x, axes, keepdim, correction


def _real_var(x, axes, correction) -> bool:
    """Whether var/std of a float `x` take PyTorch's backward formula (n static, above the
    correction): the composite's mean path, -mean(g), is NaN for an infinite cotangent."""
    n = sh.dim_product(x.shape[a] for a in axes)
    return x.dtype.kind == "f" and isinstance(n, int) and n > correction


def _std_value(x, axes, keepdim, correction):  # half precision: in float32, rounded once
    wide = m.cast(x, np.float32) if x.dtype in _HALF else x
    return m.cast(_sqrt0(_var(wide, axes, keepdim, correction)), x.dtype)


def _std_x_grad(ct, x, axes, keepdim, correction, ndim):
    # `_std_grad` of the std taken again from x, not of the result (`y.mul_(2)` changes it)
    y = _std_value(x, batched_axes(x, axes, ndim), keepdim, correction)
    return GRAD_FORMULAS["std"](ct, x, y, axes, keepdim, correction, ndim)


GRAD_FORMULAS["std_x"] = _std_x_grad


def _half_var(x, axes, correction) -> bool:
    """Whether var/std of `x` take PyTorch's half-precision path (a static count above the
    correction; else kiln's own, whose inf and nan cases hold in any dtype)."""
    n = sh.dim_product(x.shape[a] for a in axes)
    return x.dtype in _HALF and isinstance(n, int) and n > correction


def _var(x, axes, keepdim, correction):
    centered = m.sub(x, m._reduce("reduce_mean", x, axes, True))
    if centered.dtype.kind == "c":  # |x - mean|^2: the variance of complex values is real
        squared = core.call("real", m.mul(centered, core.call("conj", centered)))
    else:
        squared = m.square(centered)
    if correction == 0:
        return m._reduce("reduce_mean", squared, axes, keepdim)
    total = m._reduce("reduce_sum", squared, axes, keepdim)
    n = _count(x, axes)
    if isinstance(n, int):  # n <= correction: inf where the sum is positive, else nan
        return m.mul(total, 1 / (n - correction) if n > correction else _math.inf)
    return m.div(total, m.sub(n, correction))


@takes_out
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,  # noqa: A002
        keepdims=None, ddof=None):  # fmt: skip
    """Standard deviation over `dim`: `sqrt(var(x))`, with var's arguments and PyTorch's
    default `correction=1`.

    >>> import kiln as kn, numpy as np
    >>> kn.std(np.array([1.0, 3.0], np.float32))
    array(1.4142135, dtype=float32)
    """
    given = (dim, correction, unbiased, ddof)
    x, axes, keepdim, correction = _var_args(
        "std", input, dim, unbiased, keepdim, correction, axis, keepdims, ddof
    )
    if _half_var(x, axes, correction):  # PyTorch's: in float32 rounded once (`_std_grad`)
        value = _std_value(x, axes, keepdim, correction)
        return core.with_grad(value, x, ("std_x", axes, keepdim, float(correction), x.ndim), x)
    saved = _var_saved(x, keepdim, *given)
    out = _sqrt0(_var(x, axes, keepdim, correction))
    if _real_var(x, axes, correction):  # PyTorch's backward, of the std taken again from x
        out = core.with_grad(out, x, ("std_x", axes, keepdim, float(correction), x.ndim), x)
    return name_history(out, "StdBackward0", x, saved=saved)


def _sqrt0(v):
    # NOTE: PyTorch's std backward is 0 where the std is 0 (a constant row), where sqrt's
    # derivative is inf. Both branches stay finite: sqrt reads 1 there, and the outer where
    # sends that element's gradient to the constant 0.
    zero = m.equal(v, 0)
    return m.where(zero, 0, m.sqrt(m.where(zero, 1, v)))
