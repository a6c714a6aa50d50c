"""PyTorch's layouts of the results of its Fourier transforms (`kn.fft`): its kernels move
the batch dims (those not transformed) outermost, ordered by the input's strides (largest
first), and the transformed dims innermost in the order they are transformed, and write a
C-ordered result of that order (so `fft(x, dim=0)` of a C-ordered (3, 8) x has strides
(1, 3), and a transposed or channels-last input's batch dims keep their order). A transform
over several dims runs them sorted by the input's strides (largest first; a real one keeps
its last dim last; the inverse real one runs the others first, then its last). An eager
Tensor's data is laid out anew; a graph value's layout is set (`keep_layout`)."""

from __future__ import annotations

import numpy as np

from ..graph.core import Symbol


def _partition(dims, transformed):
    """`dims` with the batch dims first, in the order the C++ standard library's
    `std::partition` (swapping from both ends) leaves them; and where the batch ones end."""
    a, first, last = list(dims), 0, len(dims)
    while True:
        while first != last and a[first] not in transformed:
            first += 1
        if first == last:
            return a, first
        last -= 1
        while first != last and a[last] in transformed:
            last -= 1
        if first == last:
            return a, first
        a[first], a[last] = a[last], a[first]
        first += 1


def _by_stride(dims, strides) -> list:
    """`dims` sorted by `strides`, largest first (a stable sort: PyTorch's insertion sort of
    so few dims)."""
    return sorted(dims, key=lambda d: -strides[d])


def exec_strides(strides, out_shape, signal) -> tuple:
    """The strides (elements) of PyTorch's result of shape `out_shape` of one transform over
    the dims `signal` (in that order) of an input of `strides`."""
    order, end = _partition(range(len(out_shape)), set(signal))
    order = _by_stride(order[:end], strides) + list(signal)
    out, size = [0] * len(out_shape), 1
    for d in reversed(order):
        out[d] = size
        size *= out_shape[d]
    return tuple(out)


def result_strides(kind: str, strides, in_shape, out_shape, axes) -> tuple:
    """The strides of PyTorch's result of the transform `kind` ("c2c", "r2c", "c2r", or
    "ihfft": ihfftn's real transform of the last dim and complex ones of the others) over
    `axes` of an input of `strides` and `in_shape`."""
    axes = list(axes)
    if kind == "c2c":
        return exec_strides(strides, out_shape, _by_stride(axes, strides))
    if kind == "r2c":
        return exec_strides(strides, out_shape, _by_stride(axes[:-1], strides) + axes[-1:])
    if kind == "ihfft":  # the real transform of the last dim, then the complex ones
        strides = exec_strides(strides, out_shape, axes[-1:])
        return exec_strides(strides, out_shape, _by_stride(axes[:-1], strides))
    if len(axes) > 1:  # the complex transforms first (a result of their own), then the last
        strides = exec_strides(strides, in_shape, _by_stride(axes[:-1], strides))
    return exec_strides(strides, out_shape, axes[-1:])


def laid_out_as_torch(out, x, kind: str, axes):
    """out, the result of the transform `kind` over `axes` of x, laid out as PyTorch's
    (`result_strides`): an eager Tensor's data laid out anew (where NumPy's differs), a graph
    value's layout set. Returns out.

    >>> import kiln as kn
    >>> kn.fft.fft(kn.ones(3, 8), dim=0).stride()
    (1, 3)
    """
    data = getattr(out, "_data", None)
    if type(data) is np.ndarray:
        source = getattr(x, "_data", None)
        if type(source) is not np.ndarray:
            return out
        n = data.ndim
        if (
            axes[-1] == n - 1
            and source.flags.c_contiguous
            and 1 not in source.shape
            and (len(axes) == 1 or tuple(axes) == tuple(range(n - len(axes), n)))
        ):
            return out  # (the common case: C order, as NumPy's)
    elif isinstance(out, Symbol):
        from .layouts import _layout, keep_layout, strided_probe  # NOTE: lazy (the layout walk)

        shapes = (*x.shape, *out.shape)
        if all(isinstance(d, int) for d in shapes):
            layout = _layout(x, True, False)
            if layout is not None:
                strides = result_strides(kind, layout.strides, x.shape, out.shape, axes)
                keep_layout(out, strided_probe(out.shape, strides, 0))
        return out
    else:
        return out
    key = (kind, source.shape, source.strides, source.itemsize, data.shape, data.itemsize,
           tuple(axes))  # fmt: skip
    want = _EAGER.get(key)
    if want is None:
        strides = [abs(s) // source.itemsize for s in source.strides]
        want = result_strides(kind, strides, source.shape, data.shape, axes)
        if len(_EAGER) >= 4096:
            _EAGER.clear()
        _EAGER[key] = want
    steps = tuple(k * data.itemsize for k in want)
    if steps != data.strides:  # (a dense layout: the memory of data.size elements)
        copy = np.ndarray(data.shape, data.dtype, np.empty(data.size, data.dtype), 0, steps)
        copy[...] = data
        out._data = copy
    return out


_EAGER: dict = {}  # an eager transform's (kind, shapes, strides, axes) -> its result's strides
