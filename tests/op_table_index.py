"""Op-table rows for advanced indexing (kiln/ops/index.py's `advanced_index` and `index_put`,
kiln/frontend/indexing.py): several integer arrays, masks, and item assignment out of place.

References: NumPy's indexing where PyTorch's rule is the same (arrays, slices, None, masks);
where PyTorch differs (an int beside the arrays drops its dim first, so it never separates
them), the reference applies the int first, as PyTorch does: `x[0, :, i]` is `x[0][:, i]`.
Item assignment: `out = x.copy(); out[index] = v` (NumPy), `np.add.at` when accumulating.
"""

from __future__ import annotations

import numpy as np
from op_case import OpCase

import kiln as kn
from kiln.frontend.indexing import put

CASES: list[OpCase] = []
FLOATS = ("float32", "float64")


def inputs(x_shape, *indices, values=None, layout="c"):
    """`make_args`: a random x (transposed when `layout` is "T"), fixed int64 indices, and a
    random values array of shape `values` (when given)."""

    def make(rng, dtype):
        def draw(shape):
            if np.dtype(dtype) == np.bool_:
                return rng.random(shape) < 0.5
            return np.asarray(rng.integers(-9, 10, shape) / 2, dtype)

        x = draw(x_shape[::-1]).T if layout == "T" else draw(x_shape)
        out = [x, *(np.asarray(i, np.int64) for i in indices)]
        return out if values is None else [*out, draw(values)]

    return make


def getitem_row(label, x_shape, index, indices, ref=None, layout="c", dtypes=FLOATS):
    """x[index(*indices)], the index arrays fed as inputs (Symbols in graph mode)."""

    def fn(x, *idx):
        return kn.getitem(x, index(*idx))

    def reference(x, *idx):
        return (ref or (lambda x, *i: x[index(*i)]))(x, *idx)

    op = "advanced_index" if len(indices) > 1 else "gather"
    return OpCase(op, label, fn, inputs(x_shape, *indices, layout=layout), reference, dtypes)


I3 = [0, 2, -1]
J3 = [1, -4, 0]
S = slice(None)
CASES += [
    getitem_row(
        "two-arrays",
        (3, 4, 5),
        lambda i, j: (i, j),
        [I3, J3],
        dtypes=("float32", "float64", "int64", "bool"),
    ),
    getitem_row("adjacent-after-slice", (2, 3, 4), lambda i, j: (S, i, j), [[0, 2], [3, 1]]),
    # separated by a slice: the broadcast shape (2,) goes first, (2, 3) in all
    getitem_row("separated", (2, 3, 4), lambda i, j: (i, S, j), [[1, 0], [3, -1]]),
    getitem_row("separated-by-none", (2, 3, 4), lambda i, j: (i, None, j), [[1, 0], [2, -1]]),
    getitem_row("broadcast", (2, 3, 4), lambda i, j: (S, i, j), [[[0], [2]], [1, 3, 0]]),
    getitem_row(
        "three-arrays-ellipsis",
        (2, 3, 4, 5),
        lambda i, j, k: (i, ..., j, k),
        [[1, 0], [2, 1], [[4], [0]]],
    ),
    # PyTorch: the int drops its dim first and does not separate the arrays ((2, 2) here;
    # NumPy counts it among them and puts (2,) first: (2, 3))
    getitem_row(
        "int-between",
        (2, 3, 4, 5),
        lambda i, j: (S, i, 1, j),
        [[0, 2], [4, 1]],
        ref=lambda x, i, j: x[:, :, 1][:, i, j],
    ),
    getitem_row(
        "int-first",
        (2, 3, 4, 5),
        lambda i, j: (1, S, i, j),
        [[1, 0], [3, 3]],
        ref=lambda x, i, j: x[1][:, i, j],
    ),
    getitem_row("empty", (3, 4), lambda i, j: (i, j), [np.zeros(0, int), np.zeros(0, int)]),
    getitem_row("transposed", (3, 4), lambda i, j: (i, j), [[2, 0], [1, 3]], layout="T"),
    getitem_row(
        "one-array-with-int", (2, 3, 4), lambda i: (1, S, i), [[3, 0]], ref=lambda x, i: x[1][:, i]
    ),
]

# A NumPy mask is static: it becomes the arrays of its true elements when the graph is built.
MASK = np.array([[True, False, True, False], [False, False, True, True], [True] * 4])
CASES += [
    OpCase("advanced_index", "static-mask-2d", lambda x: kn.getitem(x, MASK),
           inputs((3, 4, 2)), lambda x: x[MASK], ("float32", "int32")),
    OpCase("gather", "static-mask-1d", lambda x: kn.getitem(x, (S, MASK[1])),
           inputs((2, 4)), lambda x: x[:, MASK[1]]),
]  # fmt: skip


def put_row(label, x_shape, index, indices, values, accumulate=False, dtypes=FLOATS,
            layout="c"):  # fmt: skip
    """index_put: `x` with values written (added) at x[index(*indices)], out of place."""

    def fn(x, *rest):
        *idx, v = rest
        return put(x, index(*idx), v, accumulate)

    def reference(x, *rest):
        *idx, v = rest
        out = x.copy()
        if accumulate:
            np.add.at(out, index(*idx), v)
        else:
            out[index(*idx)] = v
        return out

    make = inputs(x_shape, *indices, values=values, layout=layout)
    return OpCase("index_put", label, fn, make, reference, dtypes)


CASES += [
    put_row("two-arrays", (3, 4), lambda i, j: (i, j), [[0, 2, -1], [1, 3, 0]], (3,),
            dtypes=("float32", "float64", "int64")),
    put_row("accumulate-repeats", (3, 4), lambda i, j: (i, j), [[0, 0, 2, 0], [1, 1, 3, 1]],
            (4,), True),
    put_row("broadcast-value", (2, 3, 4), lambda i: (S, S, i), [[3, 0]], (3, 1)),
    put_row("separated", (2, 3, 4), lambda i, j: (i, S, j), [[1, 0], [3, 2]], (2, 3)),
    put_row("basic-slices", (3, 4), lambda: (slice(1, None), slice(None, None, 2)), [], (2, 2)),
    put_row("basic-int-accumulate", (3, 4), lambda: (1,), [], (), True),
    put_row("leading-ones", (3, 4), lambda i: (i,), [[2]], (1, 1, 4)),
    put_row("transposed", (3, 4), lambda i, j: (i, j), [[0, 1], [3, 2]], (2,), layout="T"),
    put_row("empty", (3, 4), lambda i: (i,), [np.zeros(0, int)], (0, 4)),
]  # fmt: skip


def _added(x, i, v):
    out = x.copy()
    np.add.at(out, i, v)
    return out


CASES += [
    OpCase("index_put", "index_put", lambda x, i, v: kn.index_put(x, (i,), v, accumulate=True),
           inputs((4, 2), [3, 0, 3], values=(3, 2)), _added),
]  # fmt: skip


# A mask the graph computes: `nonzero` gives its coordinates, as many as the run finds (a dim
# it binds); `arange_of` a range as long as a value the graph computes. NumPy's references.
def _counts(rng, dtype):
    return [np.asarray(rng.integers(0, 5, 7), dtype)]


def _put_zero(x):
    out = x.copy()
    out[x > 0] = 0
    return out


CASES += [
    OpCase("nonzero", "graph-mask", lambda x: kn.getitem(x, x > 0), inputs((3, 4)),
           lambda x: x[x > 0]),
    OpCase("nonzero", "graph-mask-rows", lambda x: kn.getitem(x, (S, x[0] > 0)),
           inputs((3, 4)), lambda x: x[:, x[0] > 0]),
    OpCase("nonzero", "nonzero-2d", lambda x: kn.nonzero(x), inputs((3, 4)),
           lambda x: np.argwhere(x), ("float32", "int64", "bool")),
    OpCase("nonzero", "masked-put", lambda x: kn.index_put(x, (x > 0,), 0.0),
           inputs((3, 4)), _put_zero),
    OpCase("arange_of", "bincount", lambda x: kn.bincount(x), _counts,
           lambda x: np.bincount(x).astype(np.int64), ("int64", "int32")),
    OpCase("arange_of", "repeat_interleave", lambda x: kn.repeat_interleave(x),
           _counts, lambda x: np.repeat(np.arange(7), x), ("int64",)),
]  # fmt: skip
