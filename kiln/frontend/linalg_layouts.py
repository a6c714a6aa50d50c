"""PyTorch's form of the results of its LAPACK-backed linalg functions (`inv`, `solve`,
`cholesky`, `qr`, `eigh`, `eig`, `svd`, `lu_factor`, `lu_solve`, `solve_triangular`, ...):
each a tensor of its own (not a view of kiln's one packed result of a factorization: storage
offset 0, no `_base`), laid out column-major in its last two dims as LAPACK writes it
(a (b, m, n) result has strides (m*n, 1, m)), its `grad_fn` named as PyTorch's
(`LinalgQrBackward0`). An eager Tensor's data is laid out anew; a graph value's layout is set
(`keep_layout`), a view copied first, as `contiguous` does.
"""

from __future__ import annotations

import numpy as np

from ..eager.nodes import name_history
from ..eager.tensor import Tensor
from ..graph.core import Symbol
from ..ops.core import REGISTRY, bind
from .layouts import _probe, keep_layout, storage_root


def column_major(x, name: str | None = None, *inputs, matrices: bool = True):
    """x, a result of a LAPACK-backed linalg function of `inputs`, as PyTorch returns it: a
    tensor of its own, column-major in its last two dims (with `matrices`; else, as for
    eigenvalues, singular values, P, L and U of `lu`, its layout as it is, C order), its
    `grad_fn` named `name` (None: as it is).

    >>> import kiln as kn
    >>> column_major(kn.ones(2, 3, 4) * 2).stride()
    (12, 1, 3)
    """
    if isinstance(x, Symbol):
        out = x
        if storage_root(x) is not x:  # a view of a packed result: a copy of its own
            out = bind(REGISTRY["cast"], x, dtype=x.dtype)
        if matrices and x.ndim >= 2:
            swapped = (*x.shape[:-2], x.shape[-1], x.shape[-2])
            keep_layout(out, np.swapaxes(_probe(swapped), -1, -2))
        return out
    if type(x) is not Tensor:
        return x
    data, meta = x._data, x._meta  # (meta None: a tensor without history, not a view)
    view = meta is not None and meta.base is not None
    if type(data) is not np.ndarray:  # (another device's): a copy where it is a view
        x = bind(REGISTRY["cast"], x, dtype=x.dtype) if view else x
    elif matrices and data.ndim >= 2:
        swapped = np.swapaxes(data, -1, -2)
        if view or not swapped.flags.c_contiguous:
            x._data = np.swapaxes(np.ascontiguousarray(swapped), -1, -2)
    elif view:
        x._data = data.copy()
    if view:  # a view of kiln's packed result, which nothing else holds: now its own memory
        meta.base = meta.base_fn = None  # (its history, the view's of the packed result)
    if name is not None and x._meta is not None and x._meta.grad_fn is not None:
        name_history(x, name, *inputs)
    return x


def column_major_all(results, name: str, *inputs) -> list:
    """`column_major` of each of a function's `results`, named `name` (1-D results and
    others of one dim more than the inputs' batch, eigenvalues and singular values: `fresh`)."""
    batch = inputs[0].ndim - 2
    return [column_major(r, name, *inputs, matrices=r.ndim > batch + 1) for r in results]


def fresh(x, name: str | None = None, *inputs):
    """x as a tensor of its own (not a view of kiln's packed result), its layout as it is,
    its `grad_fn` named `name`: `column_major` with `matrices=False`.

    >>> import kiln as kn
    >>> fresh(kn.ones(2, 3)[1]).storage_offset()
    0
    """
    return column_major(x, name, *inputs, matrices=False)
