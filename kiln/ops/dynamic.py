"""Ops whose result's length depends on the data: `nonzero` (the coordinates of the nonzero
elements) and `arange_of` (0, 1, … up to a 0-d integer value the graph computes). Every
other data-dependent function (`masked_select`, `x[mask]`, `unique`, `bincount`,
`repeat_interleave` with tensor counts, `tensor_split` at tensor split points, `one_hot` with
num_classes=-1) is built from these two and ops of static shapes.

Each carries the "data_shape" tag and the attr `count`: the fresh symbolic dim of its
result's length, which no feed binds; the program binds it when the op runs
(kiln/runtime/dynamic.py). Neither has a gradient (their results are integers).
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from .core import defop

INT64 = np.dtype(np.int64)


def data_atoms(graph) -> frozenset:
    """The atoms of the dims that a run of the graph binds (`run_bound`)."""
    return frozenset(run_bound(graph))


def run_bound(graph) -> dict:
    """{atom: the node whose result first has it} for the dims the graph's runs bind: the
    `count` of each "data_shape" node, and the new dims of the results of nodes that read a
    value holding such a dim (`y[1:]` of a `y` of a count's length: its own length)."""
    size, found = _BOUND.get(graph, (-1, None))
    if size == len(graph.nodes):
        return found
    found, static = {}, set()
    for n in graph.nodes:  # NOTE: found again where nodes were added since
        shape = tuple(n.out.shape)
        if "data_shape" in n.op.tags:
            found.setdefault(n.attrs["count"].atoms[0], n)
        elif found and any(holds(tuple(i.shape), found.keys()) for i in n.inputs):
            for a in _atoms(shape):
                if a not in static:
                    found.setdefault(a, n)
        else:
            static.update(_atoms(shape))
    _BOUND[graph] = (len(graph.nodes), found)
    return found


_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def with_binders(nodes, seen, fed) -> list:
    """The results of the nodes that bind the run-bound dims (`run_bound`) that the attrs of
    the nodes in `seen` (ids) hold, where those are not in `seen` (nor fed)."""
    if not nodes or not any("data_shape" in n.op.tags for n in nodes):
        return []
    bound = run_bound(nodes[0].out.graph)
    return [
        bound[a].out
        for n in nodes
        if id(n) in seen
        for v in n.attrs.values()
        for a in _atoms(v)
        if a in bound and id(bound[a]) not in seen and id(bound[a].out) not in fed
    ]


def _atoms(value):
    if isinstance(value, sh.Dim):
        yield from value.atoms
    elif isinstance(value, tuple):
        for v in value:
            yield from _atoms(v)


def holds(value, atoms) -> bool:
    """Whether `value` (a dim, or a tuple of them, nested) holds one of `atoms`."""
    if isinstance(value, sh.Dim):
        return any(a in atoms for a in value.atoms)
    return isinstance(value, tuple) and any(holds(v, atoms) for v in value)


def _count_dim(count):
    if not isinstance(count, sh.Dim) or not count.is_atom:
        raise ShapeError(f"the attr count must be one symbolic dim, got {count!r}")
    sh.mark_run_bound(count)  # it broadcasts as PyTorch's sizes do (kiln/shapes.py)


def _nonzero_shape(x, *, count):
    _count_dim(count)
    return (count, len(x))


def _nonzero(xp, x, out=None, *, count):
    found = xp.argwhere(x).astype(np.int64, copy=False)
    if x.ndim == 0:  # PyTorch: a 0-d input gives (n, 0)
        found = found.reshape(found.shape[0], 0)
    if out is None:
        return xp.ascontiguousarray(found)
    out[...] = found
    return out


nonzero = defop(
    "nonzero", _nonzero_shape, lambda x, **_: INT64, _nonzero, tags=("data_shape", "complex_linear")
)  # fmt: skip


def _arange_of_shape(n, *, count):
    _count_dim(count)
    if n:
        raise ShapeError(f"arange_of takes a 0-d length, got shape {sh.format_shape(n)}")
    return (count,)


def _arange_of_dtype(n, **_):
    if n.kind not in "iu":
        raise DTypeError(f"arange_of takes an integer length, got {n}")
    return INT64


def _arange_of(xp, n, out=None, *, count):
    length = int(n)
    if length < 0:
        raise ShapeError(f"arange_of: a length of {length} (it must be >= 0)")
    if out is None:
        return xp.arange(length, dtype=np.int64)
    out[...] = xp.arange(length, dtype=np.int64)
    return out


arange_of = defop(
    "arange_of", _arange_of_shape, _arange_of_dtype, _arange_of, tags=("data_shape",),
    may_fail=True,
)  # fmt: skip
