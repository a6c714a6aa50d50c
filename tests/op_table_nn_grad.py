"""Op-table rows for the gradient primitives of conv2d and pooling (kiln/ops/nn_grad.py),
with NumPy references that share no code with the kernels."""

from __future__ import annotations

import numpy as np
from op_table_nn import OpCase, ref_windows

from kiln.ops.core import apply

# -- references ---------------------------------------------------------------------------------


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _attrs(stride=1, padding=0, dilation=None):
    attrs = {"stride": _pair(stride), "padding": _pair(padding)}
    return attrs if dilation is None else {**attrs, "dilation": _pair(dilation)}


def ref_scatter(vals, x_shape, kernel, stride=1, padding=0, dilation=1):
    """Adds window values `vals` (N, C, OH, OW, KH, KW) onto their input pixels (N, C, H, W)."""
    (kh, kw), (sy, sx), (py, px), (dy, dx) = map(_pair, (kernel, stride, padding, dilation))
    n, c, h, w = x_shape
    plane = np.zeros((n, c, h + 2 * py, w + 2 * px), vals.dtype)
    oh, ow = vals.shape[2:4]
    rows = np.arange(oh)[:, None] * sy + np.arange(kh)[None, :] * dy  # (OH, KH)
    cols = np.arange(ow)[:, None] * sx + np.arange(kw)[None, :] * dx  # (OW, KW)
    index = (slice(None), slice(None), rows[:, None, :, None], cols[None, :, None, :])
    np.add.at(plane, index, vals)
    return plane[:, :, py : py + h, px : px + w]


def ref_conv2d_input_grad(gy, w, x_shape, stride, padding, dilation):
    vals = np.einsum("nohw,ocij->nchwij", gy, w)
    return ref_scatter(vals, x_shape, w.shape[2:], stride, padding, dilation)


def ref_conv2d_weight_grad(x, gy, w_shape, stride, padding, dilation):
    win = ref_windows(x, w_shape[2:], stride, padding, dilation)
    return np.einsum("nchwij,nohw->ocij", win, gy)


def ref_argmax(x, kernel, stride, padding):
    """(N, C, OH, OW): the row-major offset of the first maximum of each window."""
    win = ref_windows(x, kernel, stride, padding, fill=-np.inf)
    flat = win.reshape(*win.shape[:4], win.shape[4] * win.shape[5])
    return np.argmax(flat == flat.max(axis=-1, keepdims=True), axis=-1)


def ref_max_pool2d_grad(x, gy, kernel_size, stride, padding):
    k = ref_argmax(x, kernel_size, stride, padding)
    kh, kw = kernel_size
    hot = np.arange(kh * kw) == k[..., None]
    vals = (hot * gy[..., None]).reshape(*gy.shape, kh, kw).astype(np.result_type(x, gy))
    return ref_scatter(vals, x.shape, kernel_size, stride, padding)


def ref_max_pool2d_gather(x, g, kernel_size, stride, padding):
    k = ref_argmax(x, kernel_size, stride, padding)
    win = ref_windows(g, kernel_size, stride, padding, fill=0.0)
    flat = win.reshape(*win.shape[:4], win.shape[4] * win.shape[5])
    return np.take_along_axis(flat, k[..., None], axis=-1)[..., 0]


def ref_avg_pool2d_grad(gy, x_shape, kernel_size, stride, padding):
    kh, kw = kernel_size
    vals = np.broadcast_to(gy[..., None, None] / (kh * kw), (*gy.shape, kh, kw))
    return ref_scatter(vals, x_shape, kernel_size, stride, padding)


# -- op-table rows for the gradient primitives (to join tests/op_table_nn.py) -------------------


def _make(*shapes, kind="normal", transpose_first=False):
    """Inputs of `shapes`; kind "small" draws few distinct ints (ties in max windows)."""

    def make(rng, dtype):
        if kind == "small":
            arrays = [rng.integers(-2, 3, s).astype(dtype) for s in shapes]
        else:
            arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        if transpose_first:  # a non-contiguous input: H and W swapped in memory
            arrays[0] = np.ascontiguousarray(arrays[0].transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
        return arrays

    return make


def _row(op, label, shapes, reference, tol=1e-5, **kwargs):
    attrs = {k: v for k, v in kwargs.items() if k not in ("kind", "transpose_first")}
    make = {k: v for k, v in kwargs.items() if k in ("kind", "transpose_first")}
    return OpCase(
        op,
        label,
        lambda *xs: apply(op, *xs, **attrs),
        _make(*shapes, **make),
        lambda *xs: reference(*xs, **attrs),
        rtol=tol,
        atol=tol,
    )


def _conv_rows(label, x_shape, w_shape, y_shape, **kwargs):
    attrs = {**_attrs(dilation=1), **kwargs}
    return [
        _row("conv2d_input_grad", label, (y_shape, w_shape), ref_conv2d_input_grad,
             x_shape=x_shape, **attrs),
        _row("conv2d_weight_grad", label, (x_shape, y_shape), ref_conv2d_weight_grad,
             w_shape=w_shape, **attrs),
    ]  # fmt: skip


_ALL_POOL = ("max_pool2d_grad", "max_pool2d_gather", "avg_pool2d_grad")


def _pool_rows(label, x_shape, y_shape, kernel_size, ops=_ALL_POOL, **kwargs):
    attrs = {**_attrs(), "kernel_size": _pair(kernel_size), **kwargs}
    table = {  # op: (input shapes, reference, attrs of its own)
        "max_pool2d_grad": ((x_shape, y_shape), ref_max_pool2d_grad, {}),
        "max_pool2d_gather": ((x_shape, x_shape), ref_max_pool2d_gather, {}),
        "avg_pool2d_grad": ((y_shape,), ref_avg_pool2d_grad, {"x_shape": x_shape}),
    }
    return [_row(op, label, table[op][0], table[op][1], **table[op][2], **attrs) for op in ops]


GRAD_CASES = [
    *_conv_rows("basic", (2, 3, 5, 5), (4, 3, 3, 3), (2, 4, 3, 3)),
    *_conv_rows(
        "all_attrs", (2, 3, 9, 8), (5, 3, 3, 2), (2, 5, 4, 9),
        stride=(2, 1), padding=(1, 2), dilation=(2, 3),
    ),
    # stride 3 leaves the last row and column of the input outside every window
    *_conv_rows("uncovered", (1, 2, 6, 7), (3, 2, 2, 2), (1, 3, 2, 2), stride=(3, 3)),
    *_conv_rows("noncontig", (2, 3, 5, 6), (4, 3, 2, 3), (2, 4, 6, 6), padding=(1, 1),
                transpose_first=True),
    *_conv_rows("size0", (0, 3, 5, 5), (2, 3, 3, 3), (0, 2, 3, 3)),
    *_pool_rows("overlap_pad", (2, 3, 5, 5), (2, 3, 3, 3), 3, stride=(2, 2), padding=(1, 1)),
    *_pool_rows("non_square", (1, 2, 7, 5), (1, 2, 6, 3), (2, 3)),
    *_pool_rows("ties", (2, 3, 6, 5), (2, 3, 6, 3), (3, 2), _ALL_POOL[:2], stride=(1, 2),
                padding=(1, 1), kind="small"),
    *_pool_rows("size0", (0, 3, 4, 4), (0, 3, 2, 2), 2, stride=(2, 2)),
]  # fmt: skip


# relu_grad(ct, y): relu's backward from its output, ct * (y > 0) (PyTorch's threshold
# backward at 0: nothing passes where y is 0; "small" draws ints in [-2, 2], so ties at 0).
def _ref_relu_grad(ct, y):
    return np.where(y > 0, ct, np.zeros_like(ct))


RELU_GRAD_CASES = [
    _row("relu_grad", "basic", ((3, 5), (3, 5)), _ref_relu_grad, tol=0),
    _row("relu_grad", "zeros", ((2, 0, 3), (2, 0, 3)), _ref_relu_grad, tol=0),
    _row("relu_grad", "ties", ((4, 3), (4, 3)), _ref_relu_grad, tol=0, kind="small"),
    _row("relu_grad", "broadcast", ((2, 3), (3,)), _ref_relu_grad, tol=0),
]

# after(x, token): x itself, read once token exists (kn.checkpoint's recomputation barrier).
AFTER_CASES = [
    _row("after", "basic", ((3, 5), (2,)), lambda x, token: x, tol=0),
    _row("after", "scalar-token", ((4,), ()), lambda x, token: x, tol=0),
]

CASES = [*GRAD_CASES, *RELU_GRAD_CASES, *AFTER_CASES]
