"""PyTorch's layouts of results that eager kiln's NumPy kernels lay out otherwise, and of
results whose layout is not TensorIterator's (kiln/frontend/layouts.py holds that rule and the
layout walk of graph values): C order for reductions, matmul, softmax, layer_norm, tril and
masked_fill, `empty_like`'s for casts, clones, flips, sort and the `*_like` factories, cat's,
and advanced indexing's. Each takes an eager Tensor (its NumPy data laid out anew) or, where
graph mode has the same question, a graph value (its layout set: `keep_layout`).
"""

from __future__ import annotations

import numpy as np

from ..graph.core import Symbol
from ..ops.core import REGISTRY, bind
from . import core
from .layouts import (
    _channels_last_probe,
    _dense,
    _layout,
    _probe,
    _suggests_channels_last,
    format_layout,
    in_format,
    iterator_layout,
    keep_layout,
    strided_probe,
    suggests_format,
)

# -- eager results: the same rules on NumPy arrays -----------------------------------------
# Eager kiln's result is a NumPy array whose strides are what `stride()` reports, and NumPy
# lays out some results otherwise than PyTorch: an elementwise op of operands in conflicting
# orders (NumPy keeps C order there, PyTorch the first operand's), casts and copies of a
# broadcast view, reductions (NumPy keeps the input's order; PyTorch allocates C order),
# `*_like` factories (NumPy C order; PyTorch `empty_like`'s). These functions give eager
# results PyTorch's layout with the probes above; they run where an input is not C-ordered.


def array_layout(a) -> np.ndarray:
    """The probe of a NumPy array `a`'s layout (its strides in elements; a negative one, of
    NumPy's view of a flip, which PyTorch copies, counts as its size: `_unflipped`)."""
    size = a.itemsize
    return strided_probe(a.shape, tuple(abs(s) // size for s in a.strides), 0)


def like_layout(p) -> np.ndarray:
    """PyTorch's layout of `empty_like(t)` (`preserve_format`, also clone's and sort's) for t
    laid out as the probe `p`: t's own strides where t is dense, else its dims ordered by
    its strides as TensorIterator orders one input's (`infer_dense_strides`).

    >>> like_layout(_probe((3, 4))[:, ::2].T).strides, like_layout(_probe((3, 4)).T).strides
    ((1, 2), (1, 4))
    """
    if _dense(p):
        return strided_probe(p.shape, p.strides, 0)
    return iterator_layout(p.shape, [p])


def laid_out(values: np.ndarray, layout, flat=None) -> np.ndarray:
    """A new array holding `values` laid out as the dense probe `layout`. `flat`: the 1-D
    array to use as its memory instead, read in memory order (`values` is None then: a
    random draw fills memory in order, as PyTorch's)."""
    dtype = values.dtype if flat is None else flat.dtype
    if flat is None:
        flat = np.empty(layout.size, dtype)
    strides = tuple(k * dtype.itemsize for k in layout.strides)
    out = np.ndarray(layout.shape, dtype, buffer=flat, strides=strides)
    if values is not None:
        out[...] = values
    return out


def eager_layout(kind: str, out: np.ndarray, inputs, axes=()) -> np.ndarray:
    """`out`, an eager op's NumPy result from the arrays `inputs`, laid out as PyTorch lays
    out that op's result (a copy where NumPy's layout is not PyTorch's): `kind` "c" (C order:
    reductions, matmul, softmax, layer_norm, tril), "like" (the first input's `like_layout`:
    casts, clone, flip, sort), "cat" (C order, channels-last where every input is so),
    "suggested" (channels-last where an input of out's rank is so, else C: `suggested_layout`),
    "index" (advanced indexing of inputs[0] by the rest at `axes`: `index_layout`) or
    "iterator" (an elementwise op of several inputs: TensorIterator's, `iterator_layout`).
    Only called where an input is not C-ordered (else each is C order). The strides found
    are remembered per shapes and strides (a walk costs tens of µs)."""
    if out.ndim < 2 or out.size < 2:
        return out
    key = (kind, out.shape, out.strides, out.itemsize, axes,
           *[(a.shape, a.strides, a.itemsize) for a in inputs])  # fmt: skip
    strides = _EAGER_STRIDES.get(key, _UNKNOWN)
    if strides is _UNKNOWN:
        probes = [array_layout(a) for a in inputs]
        if kind == "c" or kind == "cat" and not all(_suggests_channels_last(p) for p in probes):
            layout = _probe(out.shape)
        elif kind == "cat":  # PyTorch's cat keeps a channels-last layout all inputs share
            layout = _channels_last_probe(out.shape)
        elif kind in ("suggested", "suggested_2d"):
            layout = _suggested(out.shape, probes, kind == "suggested_2d")
        elif kind == "like":
            layout = like_layout(probes[0])
        elif kind == "index":
            layout = index_layout(out.shape, probes[0], probes[1:], axes)
        else:
            layout = iterator_layout(out.shape, probes)
        strides = tuple(k * out.itemsize for k in layout.strides)
        if strides == out.strides:
            strides = None  # NumPy's layout is PyTorch's
        if len(_EAGER_STRIDES) >= 4096:
            _EAGER_STRIDES.clear()
        _EAGER_STRIDES[key] = strides
    if strides is None:
        return out
    copy = np.ndarray(out.shape, out.dtype, buffer=np.empty(out.size, out.dtype), strides=strides)
    copy[...] = out
    return copy


_EAGER_STRIDES: dict = {}  # `eager_layout`'s key -> the strides (bytes) to copy to, or None
_UNKNOWN = object()


def index_layout(shape, x, idxs, axes) -> np.ndarray:
    """The layout PyTorch's `index` (advanced indexing) gives its result of `shape`: x laid
    out as the probe `x`, indexed at the dims `axes` by arrays laid out as the probes `idxs`.
    As PyTorch's: x's indexed dims moved first where they are not adjacent, replaced by the
    indices' broadcast shape with stride 0, and that and the indices (broadcast, reshaped to
    their place) laid out by TensorIterator (`iterator_layout`).

    >>> x = _probe((2, 3, 4)).transpose(2, 1, 0)  # (4, 3, 2), strides (1, 4, 12)
    >>> index_layout((2, 3, 2), x, [_probe((2,))], (0,)).strides
    (6, 1, 3)
    """
    axes = tuple(axes)
    if axes != tuple(range(axes[0], axes[0] + len(axes))):  # not adjacent: indexed dims first
        x = x.transpose([*axes, *[d for d in range(x.ndim) if d not in axes]])
        axes = tuple(range(len(axes)))
    taken = np.broadcast_shapes(*[i.shape for i in idxs])
    first, last = axes[0], axes[-1] + 1
    src = strided_probe((*x.shape[:first], *taken, *x.shape[last:]),
                        (*x.strides[:first], *[0] * len(taken), *x.strides[last:]), 0)  # fmt: skip
    operands = [src]
    ones, zeros = (1,) * first, (0,) * first
    for i in idxs:  # each as PyTorch's reshape_indexer places it
        i = np.broadcast_to(i, taken)
        places = (*ones, *taken, *[1] * (x.ndim - last))
        operands.append(strided_probe(places, (*zeros, *i.strides, *[0] * (x.ndim - last)), 0))
    return iterator_layout(shape, operands)


def indexed(out, x, idxs, axes):
    """out, `x[...]` by the index arrays `idxs` at x's dims `axes` (advanced indexing, a
    value of its own), laid out as PyTorch's `index` lays it out (`index_layout`): an eager
    Tensor's data where x is not C-ordered, a graph value's layout. Returns out.

    >>> import kiln as kn
    >>> kn.ones(2, 3, 4).transpose(0, 2)[[0, 1]].stride()
    (6, 1, 3)
    """
    if isinstance(out, Symbol):
        if all(isinstance(d, int) for v in (out, x, *idxs) for d in v.shape):
            probes = [_layout(i, True, False) for i in idxs]
            keep_layout(out, index_layout(out.shape, _layout(x, True, False), probes, axes))
        return out
    data, source = getattr(out, "_data", None), getattr(x, "_data", None)
    if type(data) is np.ndarray and type(source) is np.ndarray and not source.flags.c_contiguous:
        arrays = [np.asarray(getattr(i, "_data", i)) for i in idxs]
        out._data = eager_layout("index", data, (source, *arrays), tuple(axes))
    return out


def c_ordered(x):
    """x, a fresh result (not a view) that PyTorch's kernel allocates in C order whatever
    its input's layout (softmax, log_softmax, layer_norm, whose kiln forms end in an
    elementwise op that would follow the input's): an eager Tensor's data made C-ordered,
    a graph value's layout set to C order (`keep_layout`). Returns x.

    >>> import kiln as kn
    >>> c_ordered(kn.ones(3, 2).t() * 2).stride()
    (3, 1)
    """
    if isinstance(x, Symbol):
        return keep_layout(x, _probe(x.shape))
    data = getattr(x, "_data", None)
    if type(data) is np.ndarray and not data.flags.c_contiguous:
        x._data = eager_layout("c", data, ())
    return x


def keep_like(x: Symbol, source: Symbol) -> Symbol:
    """Sets the layout of the graph value x (a value of its own of source's shape) to
    PyTorch's `empty_like(source)` (`like_layout`: a `*_like` factory's, sort's). Returns x."""
    layout = _layout(source, True, False)
    return keep_layout(x, like_layout(layout)) if layout.shape == tuple(x.shape) else x


def preserved(out, source):
    """out, a fresh result of source's shape that PyTorch's kernel allocates as
    `empty_like(source)` (`preserve_format`: index_put's clone), laid out so: an eager
    Tensor's data laid out anew, a graph value's layout set. Returns out.

    >>> import kiln as kn
    >>> x = kn.zeros(3, 2).t()
    >>> preserved(x * 1, x).stride(), preserved(kn.zeros(2, 3), x).stride()
    ((1, 2), (1, 2))
    """
    if isinstance(out, Symbol):
        return keep_like(out, source) if isinstance(source, Symbol) else out
    data, like = getattr(out, "_data", None), getattr(source, "_data", None)
    if type(data) is np.ndarray and type(like) is np.ndarray and not like.flags.c_contiguous:
        if data.shape == like.shape:
            out._data = eager_layout("like", data, [like])
    return out


def iterated(out, *inputs):
    """out, an elementwise result of `inputs` (of out's shape or broadcast to it) that kiln
    computes through other intermediates, laid out as PyTorch's TensorIterator lays out that
    op's result from the inputs (lerp from `end` when the weight is >= 0.5). Returns out.

    >>> import kiln as kn
    >>> x = kn.zeros(3, 2).t()
    >>> iterated(kn.ones(2, 3) - x, x, kn.ones(2, 3)).stride()
    (1, 2)
    """
    if isinstance(out, Symbol):
        sources = [i for i in inputs if isinstance(i, Symbol)]
        shapes = [out.shape, *[i.shape for i in sources]]
        if sources and all(isinstance(d, int) for s in shapes for d in s):
            probes = [_layout(i, True, False) for i in sources]
            if all(p is not None for p in probes) and "view" not in out.node.op.tags:
                keep_layout(out, iterator_layout(out.shape, probes))
        return out
    data = getattr(out, "_data", None)
    datas = [getattr(i, "_data", None) for i in inputs]
    datas = [d for d in datas if type(d) is np.ndarray]
    if type(data) is np.ndarray and any(not d.flags.c_contiguous for d in datas):
        out._data = eager_layout("iterator", data, datas)
    return out


def _suggested(shape, probes, as_2d: bool = False):
    """The layout of a result of `shape` that PyTorch's kernel allocates in the memory format
    its inputs (the probes) suggest: channels-last where one of out's rank suggests it.
    `as_2d`: a 3-D (N, C, L) result and inputs taken as (N, C, 1, L) (PyTorch's 1-D pools
    are its 2-D ones of `unsqueeze(-2)`), channels-last then C fastest."""
    if as_2d and len(shape) == 3:
        n, c, size = shape
        probes = [strided_probe((p.shape[0], p.shape[1], 1, p.shape[2]),
                                (p.strides[0], p.strides[1], p.shape[2] * p.strides[2],
                                 p.strides[2]), 0) for p in probes if p.ndim == 3]  # fmt: skip
        if any(_suggests_channels_last(p) for p in probes):
            return strided_probe(shape, (c * size, 1, c), 0)
        return _probe(shape)
    if any(p.ndim == len(shape) and _suggests_channels_last(p) for p in probes):
        return _channels_last_probe(shape)
    return _probe(shape)


def suggested_layout(out, *inputs, as_2d: bool = False):
    """out, a fresh result (or a tuple of them: values and indices) of an op whose PyTorch
    kernel allocates it in the memory format its input suggests (`suggest_memory_format`):
    convolutions (input or weight), 2-D and 3-D max pools, 2-D avg and adaptive pools,
    interpolate, constant pad. A 4-D (5-D) out is laid out channels-last (`channels_last_3d`)
    where one of `inputs` of its rank is, else in C order: an eager Tensor's data laid out
    anew, a graph value's layout set (a view copied first). `as_2d`: a 3-D out of a 1-D pool
    laid out as PyTorch's 2-D pool of the input's `unsqueeze(-2)` lays it out. Returns out.

    >>> import kiln as kn
    >>> x = kn.ones(1, 4, 4, 2).permute(0, 3, 1, 2)  # channels-last (N, C, H, W)
    >>> kn.nn.functional.max_pool2d(x, 2).stride()
    (8, 1, 4, 2)
    """
    if isinstance(out, tuple):
        parts = [suggested_layout(o, *inputs, as_2d=as_2d) for o in out]
        return tuple(parts) if type(out) is tuple else type(out)(*parts)
    if isinstance(out, Symbol):
        shapes = [out.shape, *[i.shape for i in inputs if isinstance(i, Symbol)]]
        if all(isinstance(d, int) for s in shapes for d in s):
            probes = [_layout(i, True, False) for i in inputs if isinstance(i, Symbol)]
            layout = _suggested(out.shape, probes, as_2d)
            if "view" in out.node.op.tags:  # (a transpose of a matmul: a value of its own)
                if _layout(out, True, False).strides == layout.strides:
                    return out
                out = core.call("cast", out, dtype=out.dtype)
            keep_layout(out, layout)
        return out
    data = getattr(out, "_data", None)
    if type(data) is not np.ndarray:
        return out
    datas, plain = [], _exact_c(data)
    for i in inputs:
        d = getattr(i, "_data", None)
        if type(d) is np.ndarray:
            datas.append(d)
            # (C-ordered with no size-1 dim but N's: it suggests no channels-last)
            plain = plain and d.flags.c_contiguous and 1 not in d.shape[1:]
    if not plain:  # (else out is laid out as PyTorch's already: the common case)
        out._data = eager_layout("suggested_2d" if as_2d else "suggested", data, datas)
    return out


def _exact_c(a: np.ndarray) -> bool:
    """Whether the array `a` has PyTorch's contiguous strides (those of its size-1 dims too,
    which NumPy's `c_contiguous` does not read)."""
    if not a.flags.c_contiguous or 0 in a.shape:
        return False
    if 1 not in a.shape:
        return True
    step = a.itemsize
    for n, k in zip(reversed(a.shape), reversed(a.strides)):
        if k != step:
            return False
        step *= n
    return True


def in_memory_format(x, memory_format, op: str, copy: bool = False, suggested: bool = False):
    """The eager Tensor x in `memory_format` (`kn.channels_last`, `kn.channels_last_3d`,
    `kn.contiguous_format`): x itself where it is contiguous in that format (where its layout
    suggests that format, with `suggested`: `to()`'s rule) unless `copy`, else a copy that
    gradients flow through (`CloneBackward0`) laid out so: PyTorch's `contiguous`, `clone`
    and `to` with a memory format. A ShapeError for a rank the format does not take.

    >>> import kiln as kn
    >>> x = kn.ones(2, 3, 4, 5)
    >>> y = in_memory_format(x, kn.channels_last, "contiguous")
    >>> y.stride(), in_memory_format(y, kn.channels_last, "contiguous") is y
    ((60, 1, 15, 3), True)
    """
    data = x._data
    probe = array_layout(data) if type(data) is np.ndarray else _probe(data.shape)
    if not copy and (suggests_format(probe, memory_format) if suggested
                     else in_format(probe, memory_format)):  # fmt: skip
        return x
    layout = format_layout(tuple(data.shape), memory_format, op)
    out = bind(REGISTRY["cast"], x, dtype=x.dtype)
    if out.grad_fn is not None:
        out.grad_fn.label = "CloneBackward0"  # PyTorch's name for a copy
    if type(out._data) is np.ndarray:
        strides = tuple(k * data.itemsize for k in layout.strides)
        if out._data.strides != strides:
            out._data = laid_out(out._data, layout)
    return out
