"""Where a graph value's elements lie in the memory PyTorch's tensor of the same history
would have (its layout, as a strided probe over one byte: a view's in its base's memory, a
fresh elementwise result's, clone's or cast's from its inputs' as torch's TensorIterator
lays it out, another fresh value's in C order), and the `as_strided` views of
graph values: what `stride()`, `storage_offset()`, `is_contiguous()`, `view()` and
`as_strided` read in graph mode and under `kn.compile`, and what the in-place methods
(kiln/frontend/functionalize.py) follow to write a view's change back into its base.
Results laid out by other rules than TensorIterator's, and eager results (NumPy arrays) laid
out anew as PyTorch's: kiln/frontend/result_layouts.py.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import GraphError, node_error
from ..graph.core import Symbol, user_site
from . import core

# views of another element type: the parts of complex values, or complex values of pairs
_PARTS_VIEWS = frozenset({"real", "imag", "view_as_real", "view_as_complex"})

# view ops whose result is a tensor of its own memory for the layout walks (`_layout`,
# `_storage`): pieces of a split and bitcasts (followed by `exact` only), a collective's
# result, a custom_grad (a custom Function's result, or an overwritten value) and a with_grad
# (an op's result with PyTorch's backward formula: its value is no one else's)
_OWN_MEMORY = ("get", "split", "bitcast", "all_reduce_wait", "custom_grad", "with_grad")


# graph -> {id(view): (the view, its base, the flat positions in the base of its elements)}:
# the results of `as_strided` of a graph value, which gathers its elements (a `gather` node,
# not a view op) but shares them with its base in PyTorch
_STRIDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(view): its layout probe}: where those views' elements lie in their base's
# storage (`_layout` of a view of them, `stride()`, another `as_strided`)
_STRIDED_LAYOUT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(node): (node, its output's layout probe)}: fresh values whose layout is set, not
# taken from their inputs: `contiguous()` copies (C order), and the new value of an in-place
# change (the memory, so the layout, of the value it changes: `keep_layout`)
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(node): node}: reshapes that are `unsqueeze(x, x.ndim)`, whose new last dim has
# stride 1 in PyTorch (a reshape's is NumPy's: the dim before's), `mark_appended`
_APPENDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# graph -> {id(node): (node, its output's layout probe)}: the layouts of fresh elementwise
# results computed so far (`_fresh_layout`; each follows its inputs' once, in graph order)
_ITERATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_strided_view(view: Symbol, base: Symbol, positions: np.ndarray, layout=None) -> Symbol:
    """Marks `view` (gathered from `base` at the flat `positions`, as_strided's) as a view of
    base: a change through it is written back into base, and base's changes are seen by it.
    `layout`: its layout probe in base's storage (`_layout`). Returns view."""
    _STRIDED.setdefault(view.node.graph, {})[id(view)] = (view, base, np.asarray(positions))
    if layout is not None:
        _STRIDED_LAYOUT.setdefault(view.node.graph, {})[id(view)] = layout
    return view


def restrided(x: Symbol, view: Symbol) -> None:
    """After an in-place change of x's shape or strides (`t_`, `as_strided_`) made x stand
    for `view` (a view of its old value): x is an as_strided view where `view` is one, and no
    longer the one x was (its old value is, `rebind`), even where the shape stayed."""
    graph = x.node.graph
    entry = _STRIDED.get(graph, {}).pop(id(view), None)
    _STRIDED.get(graph, {}).pop(id(x), None)
    layout = _STRIDED_LAYOUT.get(graph, {}).pop(id(view), None)
    _STRIDED_LAYOUT.get(graph, {}).pop(id(x), None)
    if entry is not None:
        record_strided_view(x, entry[1], entry[2], layout)


def _strided(x: Symbol):
    """(base, positions) where x is an as_strided view recorded by `record_strided_view` (and
    still is: an in-place change of its shape, `unsqueeze_`, makes x a view of it instead)."""
    entry = _STRIDED.get(x.node.graph, {}).get(id(x))
    if entry is None or entry[0] is not x or entry[2].shape != tuple(x.shape):
        return None
    return entry[1:]


def _is_split_piece(x: Symbol) -> bool:
    """Whether x is one piece of a `split` (a `get` of its tuple): a view of split's input."""
    node = x.node
    return node.op.name == "get" and node.inputs[0].node.op.name == "split"


def _storage(x: Symbol):
    """(the value whose memory x shares, x's elements in it as a strided probe): `_layout`'s
    walk through the views, split pieces included; a value of its own is its own root."""
    strided = _strided_layout(x)
    if strided is not None:  # an as_strided view: its elements in its base's storage
        return _strided(x)[0], strided
    node = x.node
    name = node.op.name
    if name == "get" and node.inputs[0].node.op.name == "split":
        split = node.inputs[0].node
        root, base = _storage(split.inputs[0])
        axis, sizes = split.attrs["axis"], split.attrs["sizes"]
        start = sum(sizes[: node.attrs["index"]])
        piece = [slice(None)] * base.ndim
        piece[axis] = slice(start, start + sizes[node.attrs["index"]])
        return root, base[tuple(piece)]
    fresh = "view" not in node.op.tags or name in _OWN_MEMORY
    # NOTE: a view of another element type (the parts of complex values) counts as a value of
    # its own here: its positions are not comparable with its base's (a missed overlap error,
    # never a false one)
    if fresh or name == "index" and len(node.inputs) > 1:
        return x, _fresh_layout(x, read=False)
    if name in _PARTS_VIEWS:
        return x, _probe(x.shape)
    root, base = _storage(node.inputs[0])
    if name in ("stop_gradient", "after"):
        return root, base
    if name == "transpose":
        return root, base.transpose(node.attrs["perm"])
    if name == "index":
        from ..ops.movement import index_tuple

        return root, base[(*index_tuple(node.attrs["spec"]), Ellipsis)]
    if name == "broadcast_to":
        return root, np.broadcast_to(base, _probe(x.shape).shape)
    if name == "unfold":
        return root, _unfolded(base, **node.attrs)
    view = base.view()
    try:
        view.shape = _probe(x.shape).shape
    except AttributeError:
        return x, _probe(x.shape)  # PyTorch's reshape copies here
    return root, view


def _probe(shape) -> np.ndarray:
    """A C-ordered array of `shape` (symbolic dims taken as 3) whose strides count elements,
    over one byte: its views give PyTorch's strides without reading memory."""
    dims = tuple(d if isinstance(d, int) else 3 for d in shape)
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * max(dims[k + 1], 1)
    return np.lib.stride_tricks.as_strided(_PROBE_BYTE, dims, strides, writeable=False)


_PROBE_BYTE = np.zeros(1, np.uint8)  # every probe starts here: an offset from it is PyTorch's


def _exact_view(x: Symbol, read: bool = True):
    """The layout of a view that `_layout` takes as fresh but `exact` follows: a piece of
    `split` (a slice of its base), a `bitcast` to a dtype of the same size; raises for
    a bitcast that changes the element size."""
    node = x.node
    if node.op.name == "bitcast":
        if np.dtype(node.attrs["dtype"]).itemsize != np.dtype(node.attrs["source"]).itemsize:
            raise GraphError(f"the layout of '{x.name}', a view of another element size "
                             f"({node.attrs['source']} as {node.attrs['dtype']}), is not "
                             "tracked: clone() it first")  # fmt: skip
        return _layout(node.inputs[0], True, read)
    split = node.inputs[0].node
    base = _layout(split.inputs[0], True, read)
    axis, sizes = split.attrs["axis"], split.attrs["sizes"]
    start = sum(sizes[: node.attrs["index"]])
    piece = [slice(None)] * base.ndim
    piece[axis] = slice(start, start + sizes[node.attrs["index"]])
    return base[tuple(piece)]


def _layout(x: Symbol, exact: bool = False, read: bool = True):
    """x's elements as PyTorch lays them out: a strided probe (`_probe`), following the views
    that share their base's memory (transpose, basic indexing, reshape, broadcast, as_strided)
    and, to a fresh elementwise result, clone or cast, the layouts of its inputs
    (`_fresh_layout`); None where PyTorch would have copied (a reshape of a non-contiguous
    view). `exact`: the copy's own layout there instead, and the pieces of `split` and
    same-size `bitcast`s followed too (what `stride()` reports). `read`: a placeholder reached
    through views counts as one whose layout the trace read (`layout_read`)."""
    strided = _strided_layout(x)
    if strided is not None:
        return strided
    node = x.node
    name = node.op.name
    if exact and (name == "bitcast" or name == "get" and node.inputs[0].node.op.name == "split"):
        return _exact_view(x, read)
    if name == "gather" and _is_select(x):  # x[i] by a 0-d integer Symbol: a view there
        base = _layout(node.inputs[0], exact, read)
        at = (slice(None),) * node.attrs["axis"] + (0, Ellipsis)  # (a 0-d view, not a scalar)
        return None if base is None else base[at]
    fresh = "view" not in node.op.tags or name in _OWN_MEMORY
    if fresh or name == "index" and len(node.inputs) > 1:  # (advanced indexing: a fresh tensor)
        return _fresh_layout(x, read)
    base = _layout(node.inputs[0], exact, read)
    if base is None or name in ("stop_gradient", "after"):
        return base
    if name in _PARTS_VIEWS:
        return _parts_layout(base, name)
    if name == "transpose":
        return base.transpose(node.attrs["perm"])
    if name == "index":
        return _indexed(base, node.attrs["spec"])
    if name == "broadcast_to":
        return np.broadcast_to(base, _probe(x.shape).shape)
    if name == "unfold":
        return _unfolded(base, **node.attrs)
    if name == "rows":  # (a program's slice of leading rows)
        return base[node.attrs["start"] : node.attrs["stop"]]
    view = base.view()
    try:
        view.shape = _probe(x.shape).shape  # reshape: a view where NumPy's (and PyTorch's) is
    except (AttributeError, ValueError):  # (ValueError: a view of other size not walked here)
        return _probe(x.shape) if exact else None
    appended = _APPENDED.get(node.graph, {}).get(id(node))
    if appended is node:  # (`unsqueeze` at the end: PyTorch's new dim has stride 1)
        return np.lib.stride_tricks.as_strided(view, view.shape, (*view.strides[:-1], 1),
                                               writeable=False)  # fmt: skip
    return view


def _indexed(base, spec):
    """The probe `base` indexed by the basic index `spec`, new dims given PyTorch's strides."""
    from ..ops.movement import index_tuple, newaxis_strides

    view = base[(*index_tuple(spec), Ellipsis)]
    if 0 in view.strides:
        steps = newaxis_strides(base.shape, base.strides, 1, spec, view.strides)
        view = np.lib.stride_tricks.as_strided(view, view.shape, steps, writeable=False)
    return view


def _is_select(x: Symbol) -> bool:
    from .functionalize import is_select  # NOTE: lazy: functionalize builds on layouts

    return is_select(x)


def _fresh_layout(x: Symbol, read: bool = True):
    """The layout of x, a value of its own (not a view): its set one (`keep_layout`), else
    for an elementwise op the one PyTorch's TensorIterator gives it from its inputs' layouts
    (`iterator_layout`), for a cast (`clone()`, `.float()`) of a dense value that value's
    strides (PyTorch's `empty_like`), else C order.
    `read`: as `_layout`'s, for a placeholder."""
    node = x.node
    kept = _KEPT.get(node.graph, {}).get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    if node.op.name == "placeholder":
        if read:  # kn.compile checks such an argument's layout each call
            layout_read(x.graph).setdefault(id(node), False)
        return _probe(x.shape)
    if node.op.name == "concat" and len(x.shape) in (4, 5):  # PyTorch's cat keeps channels-last
        if all(_suggests_channels_last(_layout(i, True, False)) for i in node.inputs):
            return _channels_last_probe(x.shape)
    if not _follows_inputs(node):
        return _probe(x.shape)
    done = _ITERATED.setdefault(node.graph, {})
    entry = done.get(id(node))
    if entry is None or entry[0] is not node:
        for n in _pending(node, done):  # each after the elementwise results it reads
            operands = [_unflipped(_layout(i, True, False)) for i in n.inputs]
            if n.op.name == "cast" and _dense(operands[0]):  # PyTorch's clone() and .to():
                layout = strided_probe(operands[0].shape, operands[0].strides, 0)  # its strides
            else:
                layout = iterator_layout(n.out.shape, operands)
            done[id(n)] = (n, layout)
        entry = done[id(node)]
    return entry[1]


def _follows_inputs(node) -> bool:
    """Whether the value `node` makes is laid out as its inputs are (an elementwise op)."""
    tags = node.op.tags
    kept = _KEPT.get(node.graph, {}).get(id(node))
    if kept is not None and kept[0] is node:
        return False
    return "elementwise" in tags and "view" not in tags and bool(node.inputs) and (
        node.op.name not in _OWN_MEMORY)  # fmt: skip


def _elementwise_under(s: Symbol):
    """The elementwise node whose layout `_layout(s, True)` reads through s's views (None
    where it reads none): the views walked without recursion."""
    while _strided_layout(s) is None:
        node = s.node
        name = node.op.name
        if name == "bitcast" or name == "get" and node.inputs[0].node.op.name == "split":
            s = node.inputs[0] if name == "bitcast" else node.inputs[0].node.inputs[0]
            continue
        fresh = "view" not in node.op.tags or name in _OWN_MEMORY
        if fresh or name == "index" and len(node.inputs) > 1:
            return node if _follows_inputs(node) else None
        s = node.inputs[0]
    return None


def _pending(node, done: dict) -> list:
    """`node` and the elementwise nodes whose layouts it reads that are not in `done` yet,
    each after those it reads (a walk without recursion: a chain of thousands of ops)."""
    order, stack, seen = [], [(node, False)], set()
    while stack:
        n, expanded = stack.pop()
        if expanded:
            order.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        for i in n.inputs:
            m = _elementwise_under(i)
            if m is not None and id(m) not in seen:
                entry = done.get(id(m))
                if entry is None or entry[0] is not m:
                    stack.append((m, False))
    return order


def iterator_layout(shape, operands):
    """The layout (a probe) PyTorch's TensorIterator gives the result of `shape` of an
    elementwise op whose inputs are laid out as the probes `operands`: C order where every
    input is C-ordered; where all have the result's shape and one dense layout, that one;
    else the dims sorted by the inputs' strides, the first input whose strides differ
    deciding (a broadcast dim skipped) and the smaller dim first among equal strides.

    >>> import numpy as np
    >>> t = _probe((3, 2)).T
    >>> iterator_layout((2, 3), [t]).strides, iterator_layout((2, 3), [t, _probe(())]).strides
    ((1, 2), (1, 2))
    >>> iterator_layout((2, 3), [_probe((2, 3)), t]).strides  # the first input's order
    (3, 1)
    >>> iterator_layout((2, 3), [_probe((2, 1)), t]).strides  # a broadcast dim: the next's
    (1, 2)
    """
    out = _probe(shape)
    dims = out.shape
    if not operands:
        return out
    if all(o.shape == operands[0].shape for o in operands):  # (torch's fast setup)
        if all(o.flags.c_contiguous for o in operands):
            return out
        if len(dims) == 4 and all(_channels_last(o) for o in operands):
            return _channels_last_probe(dims)
        last = operands[-1].strides
        if all(_dense(o) and o.strides == last for o in operands):
            return strided_probe(dims, last, 0)
    steps = []
    for o in operands:  # each input's strides along the result's dims (0: broadcast)
        lead = len(dims) - o.ndim
        own = zip(o.shape, o.strides)
        steps.append([0] * lead + [0 if n == 1 and dims[lead + k] != 1 else st
                                   for k, (n, st) in enumerate(own)])  # fmt: skip

    def should_swap(d0: int, d1: int) -> int:
        for st in steps:
            if st[d0] == 0 or st[d1] == 0:
                continue
            if st[d0] != st[d1]:
                return 1 if st[d0] > st[d1] else -1
            if dims[d0] > dims[d1]:
                return 1
        return 0

    perm = list(range(len(dims)))[::-1]  # fastest first; an insertion sort, as torch's
    for i in range(1, len(dims)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            order = should_swap(perm[d0], perm[d1])
            if order > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif order < 0:
                break
    strides, step = [0] * len(dims), 1
    for d in perm:
        strides[d], step = step, step * dims[d]
    return strided_probe(dims, strides, 0)


def _channels_last(p) -> bool:
    """PyTorch's `is_contiguous(memory_format=torch.channels_last)` of a 4-D probe (of
    `channels_last_3d` of a 5-D one)."""
    expected = 1
    for d in (1, *range(p.ndim - 1, 1, -1), 0):
        if p.shape[d] != 1:
            if p.strides[d] != expected:
                return False
            expected *= p.shape[d]
    return True


def _channels_last_probe(shape):
    """The probe of a channels-last tensor of `shape`: (N, C, H, W) laid out as PyTorch's
    `channels_last`, (N, C, D, H, W) as its `channels_last_3d` (C fastest, then W, H, D, N).

    >>> _channels_last_probe((2, 3, 4, 5)).strides, _channels_last_probe((1, 2, 1, 3, 4)).strides
    ((60, 1, 15, 3), (24, 1, 24, 8, 2))
    """
    dims = [d if isinstance(d, int) else 3 for d in shape]
    strides, step = [0] * len(dims), 1
    for d in (1, *range(len(dims) - 1, 1, -1), 0):
        strides[d], step = step, step * dims[d]
    return strided_probe(dims, strides, 0)


def _unflipped(p):
    """The probe p with its negative strides (NumPy's view of a flip, which PyTorch copies)
    counted as their sizes: the order of p's memory, as a fresh copy of it is laid out."""
    if all(k >= 0 for k in p.strides):
        return p
    return strided_probe(p.shape, tuple(abs(k) for k in p.strides), 0)


def _suggests_channels_last(p) -> bool:
    """PyTorch's `suggest_memory_format()` of a probe is `channels_last` (4-D strides ordered
    C, W, H, N) or `channels_last_3d` (5-D, ordered C, W, H, D, N), ambiguous cases taken as
    C order: what its `cat`, convolutions, pools and interpolations keep."""
    if p.ndim not in (4, 5) or p.strides[1] == 0:
        return False
    low = 0
    for d in (1, *range(p.ndim - 1, 1, -1), 0):
        if p.shape[d] == 0 or p.strides[d] < low or d == 0 and low == p.strides[1]:
            return False
        low = p.strides[d] * (p.shape[d] if p.shape[d] > 1 else 1)
    return True


def _dense(p) -> bool:
    """PyTorch's `is_non_overlapping_and_dense` of a probe."""
    if p.ndim == 1:
        return p.shape[0] < 2 or p.strides[0] == 1
    required = 1
    for d in sorted(range(p.ndim), key=lambda d: (p.shape[d] < 2, p.strides[d])):
        if p.shape[d] < 2:
            return True
        if p.strides[d] != required:
            return False
        required *= p.shape[d]
    return True


def mark_appended(x: Symbol) -> Symbol:
    """Marks x, a reshape adding a last dim of size 1 (`unsqueeze(y, y.ndim)`), as PyTorch's
    unsqueeze lays it out: that dim's stride is 1. Returns x."""
    if x.node.op.name == "reshape":
        _APPENDED.setdefault(x.node.graph, {})[id(x.node)] = x.node
    return x


def keep_layout(x: Symbol, layout) -> Symbol:
    """Sets the layout of x, a value of its own, to the probe `layout` (a `contiguous()`
    copy's C order, or the layout of the value an in-place change gives x's memory).
    Returns x."""
    _KEPT.setdefault(x.node.graph, {})[id(x.node)] = (x.node, layout)
    return x


def whole_in_order(x: Symbol) -> bool:
    """Whether the view x holds every element of the value whose memory it shares, in C
    order from its start (a reshape, detach or unsqueeze of a whole value): laid out as a
    fresh tensor of its own would be."""
    if not all(isinstance(d, int) for d in x.shape):
        return False
    root, layout = _storage(x)
    start = layout.__array_interface__["data"][0] - _PROBE_BYTE.__array_interface__["data"][0]
    size = int(np.prod([d if isinstance(d, int) else -1 for d in root.shape]))
    return start == 0 and layout.size == size and bool(layout.flags.c_contiguous)


def layout_known(x: Symbol) -> bool:
    """Whether kiln follows x's elements to PyTorch's layout (`_layout`); not, for example,
    through a reshape kiln made where PyTorch's op is a view (`diagonal` of an `expand`)."""
    return _layout(x) is not None


def layout_read(graph) -> dict:
    """{id of a placeholder of `graph` whose memory layout a traced function read: whether
    its storage offset too}. A placeholder answers `stride()`, `is_contiguous()`,
    `storage_offset()` and `as_strided` as a contiguous tensor of its own, so `kn.compile`
    refuses a call that passes a non-contiguous argument there, or one that does not start
    its storage where the offset was read."""
    found = getattr(graph, "_layout_read", None)
    if found is None:
        found = graph._layout_read = {}
    return found


def _mark_offset_read(x: Symbol) -> None:
    """Records that x's storage offset was read: on the placeholder x views, if any (the
    views `_layout` follows)."""
    while True:
        strided = _strided(x)
        if strided is not None:
            x = strided[0]
            continue
        node = x.node
        name = node.op.name
        if name == "placeholder":
            layout_read(x.graph)[id(node)] = True
            return
        fresh = "view" not in node.op.tags or name in _OWN_MEMORY
        if fresh or name == "index" and len(node.inputs) > 1:
            return
        x = node.inputs[0]


def _parts_layout(base, name: str):
    """PyTorch's layout of `real`, `imag` or `view_as_real` of complex values laid out as the
    probe `base` (counted in their parts: strides and offset doubled), or of `view_as_complex`
    of pairs laid out as `base` (halved)."""
    start = base.__array_interface__["data"][0] - _PROBE_BYTE.__array_interface__["data"][0]
    if name == "view_as_complex":
        shape, strides, start = base.shape[:-1], [k // 2 for k in base.strides[:-1]], start // 2
    else:
        shape, strides = base.shape, [2 * k for k in base.strides]
        start = 2 * start + (name == "imag")
        if name == "view_as_real":
            shape, strides = (*shape, 2), [*strides, 1]
    return strided_probe(shape, strides, start)


def strided_probe(shape, strides, start: int):
    """The probe of a view with sizes `shape` and strides `strides` (in elements) whose first
    element lies `start` elements into its storage."""
    as_strided = np.lib.stride_tricks.as_strided
    origin = as_strided(_PROBE_BYTE, (start + 1,), (1,), writeable=False)[start:]
    return as_strided(origin, tuple(shape), tuple(strides), writeable=False)


def storage_root(x: Symbol) -> Symbol:
    """The value whose storage x's elements lie in (x itself unless x is a view that shares
    its base's memory, as PyTorch's would): what `as_strided` gathers from."""
    return _storage(x)[0]


def detached_from(x: Symbol, root: Symbol) -> bool:
    """Whether the views from `root` (x's `storage_root`) to x pass a `detach()`: what x
    reads of root then has no gradient path."""
    while x is not root:
        strided = _strided(x)
        if strided is not None:
            x = strided[0]
            continue
        node = x.node
        if node.op.name == "stop_gradient":
            return True
        if _is_split_piece(x):
            x = node.inputs[0].node.inputs[0]
        elif node.inputs:
            x = node.inputs[0]
        else:
            return False
    return False


def strided_view(x: Symbol):
    """(base, size, stride, storage offset) where x is an as_strided view of base (a value
    whose storage it reads), else None."""
    layout = _strided_layout(x)
    if layout is None:
        return None
    offset = layout.__array_interface__["data"][0] - _PROBE_BYTE.__array_interface__["data"][0]
    return _strided(x)[0], layout.shape, layout.strides, offset


def _strided_layout(x: Symbol):
    """The layout probe of an as_strided view (`record_strided_view`), else None."""
    layout = _STRIDED_LAYOUT.get(x.node.graph, {}).get(id(x))
    return layout if layout is not None and _strided(x) is not None else None


def _unfolded(base, *, dim: int, size: int, step: int):
    """The probe `base`'s windows, as the unfold op lays them out (a view)."""
    strides = list(base.strides)
    strides[dim] *= step
    shape = (*base.shape[:dim], (base.shape[dim] - size) // step + 1, *base.shape[dim + 1 :], size)
    return np.lib.stride_tricks.as_strided(base, shape, (*strides, base.strides[dim]),
                                           writeable=False)  # fmt: skip


def storage_layout(x: Symbol, op: str, absolute: bool = False) -> tuple:
    """(the storage positions of x's elements, an int64 array of x's shape; x's storage
    offset), as PyTorch's tensor of the same history has them (`_layout`): what `stride()`,
    `storage_offset()` and `as_strided` read (`absolute`: the offset itself is used). Raises
    for a symbolic shape."""
    if not all(isinstance(d, int) for d in x.shape):
        raise node_error(GraphError, f"the layout of '{x.name}' with shape {tuple(x.shape)} is "
                         "known only when the graph runs (its dims are symbolic)", op=op,
                         site=user_site(), inputs=[x])  # fmt: skip
    layout = _layout(x, True)
    if absolute:
        _mark_offset_read(x)
    offset = layout.__array_interface__["data"][0] - _PROBE_BYTE.__array_interface__["data"][0]
    return strided_positions(layout.shape, layout.strides, offset), offset


def strided_positions(size, stride, offset: int) -> np.ndarray:
    """The storage positions (int64, of shape `size`) of the elements of a view with sizes
    `size`, strides `stride` (in elements) and storage offset `offset`.

    >>> strided_positions((2, 2), (1, 2), 1).tolist()
    [[1, 3], [2, 4]]
    """
    positions = np.full(tuple(size), offset, np.int64)
    for k, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        positions = positions + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    return positions


def stride(x: Symbol, dim: int | None = None):
    """`x.stride()` on a Symbol: PyTorch's strides (in elements) of the tensor of the same
    history (a transpose swaps them, a slice steps, an `expand`ed dim has 0), or along `dim`.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     a = kn.placeholder(kn.float32, (2, 3), name="a")
    ...     a.stride(), a.T.stride(), a[:, ::2].stride(1), a[1].storage_offset()
    ((3, 1), (1, 3), 2, 3)
    """
    storage_layout(x, "stride")  # the checks
    steps = tuple(int(k) for k in _layout(x, True).strides)
    if dim is None:
        return steps
    from ..shapes import normalize_axis

    return steps[normalize_axis(dim, len(steps))]


def storage_offset(x: Symbol) -> int:
    """`x.storage_offset()` on a Symbol: where x's first element lies in the storage of the
    tensor it views (0 for a value of its own), as PyTorch's of the same history. Refused
    for a view through `x[i]` by an index the program computes (its offset is known only
    when the graph runs)."""
    refuse_computed_offset(x, "storage_offset")
    return storage_layout(x, "storage_offset", absolute=True)[1]


def refuse_computed_offset(x: Symbol, op: str) -> None:
    """Raises GraphError where x is a view through `x[i]` by an index the program computes (a
    0-d integer Symbol): where it lies in its storage, and so what `op` (`storage_offset`,
    `as_strided`) reads, is known only when the graph runs."""
    s = x
    while s is not None:
        if _is_select(s):
            raise node_error(GraphError, f"the storage offset of '{x.name}', a view at an index "
                             "the program computes (x[i] by a 0-d integer tensor), is known "
                             "only when the graph runs", op=op, site=user_site(),
                             inputs=[x])  # fmt: skip
        node = s.node
        views = "view" in node.op.tags and node.op.name not in _OWN_MEMORY and node.inputs
        s = node.inputs[0] if views else None


# memory formats laid out channels-last -> the rank they take
_CHANNELS_LAST = {"channels_last": 4, "channels_last_3d": 5}


def format_layout(shape, memory_format, op: str):
    """The probe of a tensor of `shape` laid out in `memory_format` (`kn.channels_last`,
    `kn.channels_last_3d`; another: C order); a ShapeError, as PyTorch's RuntimeError, for a
    rank the format does not take.

    >>> import kiln as kn
    >>> format_layout((2, 3, 4, 5), kn.channels_last, "contiguous").strides
    (60, 1, 15, 3)
    """
    name = getattr(memory_format, "name", None)
    rank = _CHANNELS_LAST.get(name)
    if rank is None:
        return _probe(shape)
    if len(shape) != rank:
        from ..errors import ShapeError

        raise ShapeError(f"{op}: required rank {rank} tensor to use {name} format, got shape "
                         f"{list(shape)}")  # fmt: skip
    return _channels_last_probe(shape)


def in_format(p, memory_format) -> bool:
    """PyTorch's `is_contiguous(memory_format)` of a tensor laid out as the probe p."""
    rank = _CHANNELS_LAST.get(getattr(memory_format, "name", None))
    if rank is None:
        return bool(p.flags.c_contiguous)
    return p.ndim == rank and _channels_last(p)


def suggests_format(p, memory_format) -> bool:
    """Whether PyTorch's `suggest_memory_format()` of a tensor laid out as the probe p is
    `memory_format` (what `to(memory_format=...)` keeps without a copy)."""
    rank = _CHANNELS_LAST.get(getattr(memory_format, "name", None))
    if rank is None:
        return not _suggests_channels_last(p)
    return p.ndim == rank and _suggests_channels_last(p)


def is_contiguous(x: Symbol, memory_format=None) -> bool:
    """`x.is_contiguous()` on a Symbol: whether PyTorch's tensor of the same history is laid
    out in C order (a transpose or a strided slice of a base is not, nor an elementwise
    result of a transpose; another fresh value is), or in `memory_format`
    (`kn.channels_last`).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     a = kn.placeholder(kn.float32, (2, 3), name="a")
    ...     is_contiguous(a), is_contiguous(a.T), is_contiguous(a[1]), is_contiguous(a[:, 1])
    (True, False, True, False)
    """
    layout = _layout(x)
    if getattr(memory_format, "name", None) in _CHANNELS_LAST:
        return in_format(_probe(x.shape) if layout is None else layout, memory_format)
    return layout is None or bool(layout.flags.c_contiguous)


def contiguous(x: Symbol, memory_format=None) -> Symbol:
    """`x.contiguous()` on a Symbol: x itself where it is contiguous (in `memory_format`:
    `kn.channels_last`), a change through either then changing both, as PyTorch's shared
    memory does; else a copy of its own laid out so."""
    layout = format_layout(x.shape, memory_format, "contiguous")
    if is_contiguous(x, memory_format):
        return x
    return keep_layout(core.call("cast", x, dtype=x.dtype), layout)  # a copy laid out so


def clone(x: Symbol, memory_format=None) -> Symbol:
    """`x.clone()` on a Symbol: a value of its own, so changing it in place changes neither x
    nor the caller's tensor of a compiled function's argument; laid out as x where x is
    dense (PyTorch's `preserve_format`), in C order with `memory_format=contiguous_format`,
    channels-last with `channels_last` (`channels_last_3d`)."""
    name = getattr(memory_format, "name", None)
    layout = format_layout(x.shape, memory_format, "clone")
    out = core.call("cast", x, dtype=x.dtype)
    if name == "contiguous_format" or name in _CHANNELS_LAST:  # (kn.contiguous_format)
        keep_layout(out, layout)
    return out
