"""Op-table rows for the epilogue kernels, with NumPy/SciPy references that share no code with
them. `bias_relu(y, b)` (kiln/ops/epilogue.py) is `maximum(y + b, 0)`, `add_colsum(x, g, alpha=)`
`x + alpha * g.sum(axis=0)`. Softmax cross-entropy's
kernels (kiln/ops/losses.py): `log_softmax_take(x, idx)` is SciPy's log_softmax
read at idx, and its gradient in x is the cotangent scattered to idx less the softmax times
each row's total cotangent (d log_softmax(x)_k / dx_j = [j == k] - softmax(x)_j)."""

from __future__ import annotations

import numpy as np
import scipy.special
from op_case import OpCase

from kiln.ops.core import apply


def _make(x_shape, axis, k, with_ct, scale=1.0):
    """x (normal, times `scale`), integer indices along `axis` (k per row), and first a
    cotangent of the indices' shape when `with_ct`."""
    idx_shape = tuple(k if a == axis else d for a, d in enumerate(x_shape))

    def make(rng, dtype):
        x = (rng.standard_normal(x_shape) * scale).astype(dtype)
        idx = rng.integers(0, x_shape[axis], idx_shape)
        arrays = [x, idx]
        return [rng.standard_normal(idx_shape).astype(dtype), *arrays] if with_ct else arrays

    return make


def _ref_take(x, idx, *, axis):
    return np.take_along_axis(scipy.special.log_softmax(x, axis=axis), idx, axis=axis)


def _ref_grad(ct, x, idx, *, axis):
    onehot = np.zeros_like(x)
    np.put_along_axis(onehot, idx, 0, axis=axis)
    for j in range(idx.shape[axis]):  # repeated indices add up
        pick = np.take(idx, [j], axis=axis)
        np.put_along_axis(onehot, pick, np.take_along_axis(onehot, pick, axis=axis)
                          + np.take(ct, [j], axis=axis), axis=axis)  # fmt: skip
    total = ct.sum(axis=axis, keepdims=True)
    return onehot - scipy.special.softmax(x, axis=axis) * total


def _row(op, label, x_shape, axis=1, k=1, scale=1.0):
    grad = op.endswith("_grad")
    ref = _ref_grad if grad else _ref_take
    return OpCase(
        op, label, lambda *xs: apply(op, *xs, axis=axis), _make(x_shape, axis, k, grad, scale),
        lambda *xs: ref(*xs, axis=axis), rtol=1e-5, atol=1e-6,
    )  # fmt: skip


def _ref_bias_relu(y, b):
    return np.maximum(y + b, 0)


def _make_bias(shape, special=False):
    """y of `shape` and a bias of its last dim; `special` puts NaN, infinities, -0.0 and sums
    that cancel to zero among y's values."""

    def make(rng, dtype):
        y = rng.standard_normal(shape).astype(dtype)
        b = rng.standard_normal(shape[-1:]).astype(dtype)
        if special:
            flat = y.reshape(-1)
            flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -b[5 % shape[-1]]]
        return [y, b]

    return make


BIAS_RELU_CASES = [
    OpCase("bias_relu", label, lambda y, b: apply("bias_relu", y, b), _make_bias(shape, special),
           _ref_bias_relu, rtol=0, atol=0)
    for label, shape, special in (
        ("basic", (4, 5), False), ("3d", (2, 3, 4), False), ("special", (3, 8), True),
        ("one-row", (1, 7), False), ("empty", (0, 3), False),
    )
]  # fmt: skip


def _ref_relu_grad_bias(ct, y):
    grad = np.where(y > 0, ct, np.zeros_like(ct))
    return np.concatenate([grad, grad.sum(axis=0, keepdims=True)])


def _make_grad(shape, special=False):
    """ct and y of `shape`; `special` puts zeros in y (relu's edge) and NaN, -0.0 in ct."""

    def make(rng, dtype):
        ct, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
        if special:
            y.reshape(-1)[::3] = 0
            ct.reshape(-1)[1::4] = -0.0
            ct.reshape(-1)[2] = np.nan
        return [ct, y]

    return make


RELU_GRAD_BIAS_CASES = [
    OpCase("relu_grad_bias", label, lambda ct, y: apply("relu_grad_bias", ct, y),
           _make_grad(shape, special), _ref_relu_grad_bias, rtol=1e-6, atol=1e-6)
    for label, shape, special in (
        ("basic", (5, 4), False), ("wide", (6, 70), False), ("special", (4, 9), True),
        ("one-row", (1, 8), False), ("empty", (0, 8), False),
    )
]  # fmt: skip

# rows(x, start=, stop=): x[start:stop] (NumPy's slice)
ROWS_CASES = [
    OpCase("rows", label, lambda x, a=a, b=b: apply("rows", x, start=a, stop=b),
           lambda rng, dtype, shape=shape: [rng.standard_normal(shape).astype(dtype)],
           lambda x, a=a, b=b: x[a:b], rtol=0, atol=0)
    for label, shape, a, b in (
        ("leading", (5, 3), 0, 4), ("last", (5, 3), 4, 5), ("3d", (4, 2, 3), 1, 3),
        ("empty", (3, 2), 2, 2),
    )
]  # fmt: skip

# add_colsum(x, g, alpha=): x + alpha * (g's column sums), by NumPy's sum
ADD_COLSUM_CASES = [
    OpCase("add_colsum", label, lambda x, g, a=alpha: apply("add_colsum", x, g, alpha=a),
           lambda rng, dtype, shape=shape: [rng.standard_normal(shape[1:]).astype(dtype),
                                            rng.standard_normal(shape).astype(dtype)],
           lambda x, g, a=alpha: x + a * g.sum(axis=0), rtol=1e-5, atol=1e-6)
    for label, shape, alpha in (
        ("sgd", (5, 4), -0.01), ("wide", (6, 70), 0.5), ("unscaled", (3, 9), 1.0),
        ("one-row", (1, 8), -1.0), ("empty", (0, 8), -0.5),
    )
]  # fmt: skip

CASES = (
    BIAS_RELU_CASES
    + RELU_GRAD_BIAS_CASES
    + ROWS_CASES
    + ADD_COLSUM_CASES
    + [
        row
        for op in ("log_softmax_take", "log_softmax_take_grad")
        for row in (
            _row(op, "basic", (6, 5)),
            _row(op, "large-logits", (4, 7), scale=300.0),  # exp(x) overflows unshifted
            _row(op, "axis0", (5, 3), axis=0),
            _row(op, "3d-middle-axis", (2, 4, 3), axis=1),
            _row(op, "several-per-row", (3, 6), k=4),  # repeats among them: their cotangents add
            _row(op, "one-class", (4, 1)),
            _row(op, "empty-batch", (0, 5)),
        )
    ]
)
