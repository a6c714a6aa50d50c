"""Convolutions over any number of spatial dims, as PyTorch's `conv1d/2d/3d` and
`conv_transpose1d/2d/3d`: stride, padding (ints, pairs, "same", "valid"), dilation, groups,
output_padding, unbatched inputs; and `unfold`/`fold` (im2col, col2im).

1-d and 2-d convolutions without groups and with symmetric padding bind the `conv2d` primitive
(1-d as a 2-d convolution of height 1), their transposes `conv2d_input_grad`. Every other case
is one general composite: the windows of the padded input, one strided slice per kernel tap
(im2col), times the weights in one batched matmul per group; its gradient is autodiff's (each
slice's transpose puts its share back: col2im). The transposed composite runs the same steps
backwards.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..errors import (
    ArgumentTypeError,
    DTypeMismatchError,
    UnsupportedDTypeError,
    UsageError,
    node_error,
)
from ..graph.core import Symbol, user_site
from .autocast import autocast_op
from .core import call, lift
from .math import add
from .nn_functional import _shape_error, pad
from .result_layouts import suggested_layout
from .shape import gather, permute, reshape, squeeze, stack, unsqueeze

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
]  # fold and unfold: kn.nn.functional only (kn.unfold is Tensor.unfold's)


def ntuple(value, n: int, what: str, op: str) -> tuple:
    """`3` -> `(3,) * n`; a sequence of n ints (or of one, repeated) stays a tuple of ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (str, float)) or (
        isinstance(value, (tuple, list)) and any(isinstance(v, (str, float)) for v in value)
    ):  # PyTorch's argument parser takes ints only (TypeError there, 2.0 too)
        raise ArgumentTypeError(f"{op}(): argument '{what}' must be tuple of ints, not {value!r}")
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        values = ()
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise _shape_error(op, f"{what} must be an int or {n} ints, got {value!r}")
    return values


def static_sizes(x, dims, op: str) -> tuple:
    """The sizes of `dims` of `x`, which this composite needs as ints."""
    sizes = tuple(x.shape[d] for d in dims)
    if not all(isinstance(s, int) for s in sizes):
        raise _shape_error(
            op, f"needs the spatial sizes of its input as ints, got {sh.format_shape(x.shape)}", x
        )
    return sizes


def torch_pad(pairs) -> tuple:
    """Per-dim (before, after) pairs, first spatial dim first, as `pad`'s tuple (last dim
    first)."""
    return tuple(w for before_after in reversed(pairs) for w in before_after)


def window_table(count: int, kernel: int, stride: int, dilation: int) -> np.ndarray:
    """(count, kernel) int64: the position in the (padded) input of tap j of window i."""
    return (np.arange(count) * stride)[:, None] + np.arange(kernel) * dilation


def gather_windows(x, tables, *, channels_last: bool = False):
    """The windows of `x` (N, C, L1..Ln) picked by one table (O_d, K_d) per spatial dim:
    (N, C, O1..On, K1..Kn), or (N, O1..On, C, K1..Kn) with `channels_last`."""
    for i, table in enumerate(tables):
        x = gather(x, table, axis=2 + 2 * i)  # the i-th spatial dim sits after i (O, K) pairs
    n = len(tables)
    outs, taps = [2 + 2 * i for i in range(n)], [3 + 2 * i for i in range(n)]
    return permute(x, (0, *outs, 1, *taps) if channels_last else (0, 1, *outs, *taps))


def _one_dtype(op: str, x, w, bias):
    """Refuses input, weight and bias of different dtypes: PyTorch's convolutions do not
    promote (RuntimeError there: "expected scalar type Float but found Double")."""
    values = [x, w] if bias is None else [x, w, *lift(bias, context=(x,))]
    if len({v.dtype for v in values}) > 1:
        described = ", ".join(
            f"{what} {sh.format_shape(v.shape)} {v.dtype}"
            for what, v in zip(("input", "weight", "bias"), values)
        )
        raise node_error(
            DTypeMismatchError, f"{op}: input, weight and bias must have the same dtype, got "
            f"{described}", op=op, name=None, site=user_site(),
            inputs=[v for v in values if isinstance(v, Symbol)],
        )  # fmt: skip


def _floats(op: str, *values):
    """The operands cast to their common float dtype (as the `conv2d` primitive promotes);
    others refused as PyTorch's kernels that have none for them (NotImplementedError)."""
    for v in values:
        if not dt.is_float(v.dtype):
            names = ", ".join(f"{u.dtype}" for u in values)
            symbols = [u for u in values if isinstance(u, Symbol)]
            raise node_error(
                UnsupportedDTypeError, f"{op}: expected floating-point inputs, got {names}", op=op,
                name=None, site=user_site(), inputs=symbols,
            )  # fmt: skip
    common = dt.promote(*(v.dtype for v in values))
    return [v if v.dtype == common else call("cast", v, dtype=common) for v in values]


def _batched(x, n_spatial: int, op: str):
    """(x with a batch dim, whether one was added): PyTorch's unbatched (C, L...) inputs."""
    if x.ndim == n_spatial + 1:
        return unsqueeze(x, 0), True
    if x.ndim != n_spatial + 2:
        raise _shape_error(
            op, f"expected a {n_spatial + 1}-d (unbatched) or {n_spatial + 2}-d (batched) input, "
            f"got input of size {sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    return x, False


def _add_bias(y, bias, out_channels, op: str, w, x):
    if bias is None:
        return y
    (bias,) = lift(bias, context=(y,))
    if bias.ndim != 1 or (isinstance(out_channels, int) and bias.shape[0] != out_channels):
        raise _shape_error(
            op, f"given weight of size {sh.format_shape(w.shape)}, expected bias to be 1-d with "
            f"{out_channels} elements, but got bias of size {sh.format_shape(bias.shape)}",
            w, bias,
        )  # fmt: skip
    if bias.dtype != y.dtype:
        _one_dtype(op, x, w, bias)
    return add(y, reshape(bias, (1, bias.shape[0]) + (1,) * (y.ndim - 2)))


# The functional forms refuse bad arguments with RuntimeError (torch 2.13's kernels check them);
# the nn.Conv* constructors (kiln/nn/conv.py) with ValueError, as PyTorch's.
def _same_padding(kernel, dilation, stride, op):
    if any(s != 1 for s in stride):
        raise UsageError(f"{op}: padding='same' is not supported for strided convolutions")
    pairs = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pairs.append((total // 2, total - total // 2))  # PyTorch puts the odd one after
    return tuple(pairs)


def _padding_pairs(padding, n, kernel, dilation, stride, op):
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            return _same_padding(kernel, dilation, stride, op)
        raise UsageError(f"{op}: invalid padding string {padding!r}, should be 'same' or 'valid'")
    pads = ntuple(padding, n, "padding", op)
    if any(p < 0 for p in pads):
        raise _shape_error(op, f"negative padding {pads} is not supported")
    return tuple((p, p) for p in pads)


def _check_channels(x, w, groups, op):
    c, o, cg = x.shape[1], w.shape[0], w.shape[1]
    if groups < 1:
        raise UsageError(f"{op}: non-positive groups {groups} is not supported")
    if isinstance(o, int) and o < groups:
        raise _shape_error(
            op, f"given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {sh.format_shape(w.shape)} instead", w,
        )  # fmt: skip
    if isinstance(o, int) and o % groups:
        raise _shape_error(
            op, f"given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size {sh.format_shape(w.shape)} instead", x, w,
        )  # fmt: skip
    if isinstance(c, int) and isinstance(cg, int) and c != cg * groups:
        raise _shape_error(
            op, f"given groups={groups}, weight of size {sh.format_shape(w.shape)}, expected "
            f"input{sh.format_shape(x.shape)} to have {cg * groups} channels, but got {c} "
            "channels instead", x, w,
        )  # fmt: skip


def strided_windows(x, kernel, stride, dilation, outs):
    """The windows of `x` (N, C, L1..Ln) as (N, C, K, O1..On), K = K1 * .. * Kn taps in
    row-major order: one strided slice of x per tap, stacked.

    NOTE: slices, not a gather: their gradients are strided assignments (one per tap), where
    a gather's scatter-add (`np.add.at`) costs several times the whole forward pass.
    """
    taps = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        spec = (("slice", None, None, None),) * 2 + tuple(
            ("slice", o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offsets, dilation, stride, outs)
        )
        taps.append(call("index", x, spec=spec))
    return stack(taps, 2)


def _conv_windows(x, w, pairs, stride, dilation, groups, op):
    """The general composite: windows (im2col) times the weights, per group."""
    if any(b or a for b, a in pairs):
        x = pad(x, torch_pad(pairs))
    sizes = static_sizes(x, range(2, x.ndim), op)
    kernel = static_sizes(w, range(2, w.ndim), op)
    outs = []
    for size, k, s, d in zip(sizes, kernel, stride, dilation):
        if d * (k - 1) + 1 > size:
            raise _shape_error(
                op, f"calculated padded input size per channel {sizes}; the (dilated) kernel "
                f"size is {kernel}. Kernel size can't be greater than actual input size", x, w,
            )  # fmt: skip
        outs.append((size - d * (k - 1) - 1) // s + 1)
    cols = strided_windows(x, kernel, stride, dilation, outs)  # (N, C, K, O1..On)
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    taps, positions = math.prod(kernel), math.prod(outs)
    per_group = (c // groups) * taps
    cols = reshape(cols, (n, groups, per_group, positions))  # (N, G, C/G * K, P)
    weights = reshape(w, (groups, o // groups, per_group))
    y = call("matmul", weights, cols)  # (N, G, O/G, P)
    return reshape(y, (n, o, *outs))


def _in_float64(conv, x, w, bias):
    """An integer convolution (PyTorch's CPU kernels take int64, and the plain, not
    transposed, ones every integer dtype): in float64, exact while every sum of products
    stays below 2**53, rounded back through int64, so a narrower dtype wraps around as
    PyTorch's does."""
    wide = [call("cast", v, dtype=dt.float64) for v in lift(x, w)]
    if bias is not None:
        (bias,) = lift(bias, context=(x,))
        bias = call("cast", bias, dtype=dt.float64)
    y = call("cast", call("round", conv(*wide, bias)), dtype=dt.int64)
    return y if x.dtype == dt.int64 else call("cast", y, dtype=x.dtype)


def _complex_conv(conv, op: str, x, w, bias):
    """A convolution of complex `x` and `w` (one dtype, as PyTorch requires): four real
    convolutions of their real and imaginary parts, (xr*wr - xi*wi) + i(xr*wi + xi*wr), then
    the complex bias; gradients are autodiff's through real, imag and complex."""
    _one_dtype(op, x, w, bias)
    values = [x, w] if bias is None else [x, w, *lift(bias, context=(x,))]
    (xr, xi), (wr, wi) = ((call("real", v), call("imag", v)) for v in (x, w))
    re = call("sub", conv(xr, wr, None), conv(xi, wi, None))
    im = call("add", conv(xr, wi, None), conv(xi, wr, None))
    y = call("complex", re, im)
    return y if bias is None else add(y, reshape(values[2], (-1,) + (1,) * (y.ndim - 2)))


def _integer_conv(x, w, transposed: bool) -> bool:
    """Whether PyTorch's CPU kernels convolve these integers (`conv1d/2d/3d` every integer
    dtype, the transposed convolutions int64 only)."""
    if x.dtype != w.dtype or not dt.is_int(x.dtype):
        return False
    return x.dtype == dt.int64 or not transposed


def _conv(op, n_sp, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    x, w = lift(input, weight)
    _one_dtype(op, x, w, None)  # the bias's after its shape (`_add_bias`)
    if _integer_conv(x, w, transposed=False):
        return _in_float64(lambda a, b, c: _conv(op, n_sp, a, b, c, stride, padding, dilation,
                                                 groups), x, w, bias)  # fmt: skip
    if x.dtype.kind == "c" or w.dtype.kind == "c":
        return _complex_conv(lambda a, b, c: _conv(op, n_sp, a, b, c, stride, padding, dilation,
                                                   groups), op, x, w, bias)  # fmt: skip
    x, added = _batched(x, n_sp, op)
    x, w = _floats(op, x, w)
    if w.ndim != n_sp + 2:
        raise _shape_error(
            op, f"expected a {n_sp + 2}-d weight, got weight of size {sh.format_shape(w.shape)}", w
        )
    _check_channels(x, w, groups, op)
    stride = ntuple(stride, n_sp, "stride", op)
    dilation = ntuple(dilation, n_sp, "dilation", op)
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation):
        raise _shape_error(op, f"non-positive stride {stride} or dilation {dilation}", x, w)
    kernel = tuple(w.shape[2:])
    pairs = _padding_pairs(padding, n_sp, kernel, dilation, stride, op)
    symmetric = all(b == a for b, a in pairs)
    if n_sp == 2 and groups == 1 and symmetric:
        pads = tuple(b for b, _ in pairs)
        y = call("conv2d", x, w, stride=stride, padding=pads, dilation=dilation)
    elif n_sp == 1 and groups == 1 and symmetric:
        y = call(
            "conv2d", unsqueeze(x, 2), unsqueeze(w, 2), stride=(1, *stride),
            padding=(0, pairs[0][0]), dilation=(1, *dilation),
        )  # fmt: skip
        y = squeeze(y, 2)
    else:
        y = _conv_windows(x, w, pairs, stride, dilation, groups, op)
    y = _add_bias(y, bias, w.shape[0], op, w, x)
    saved = {"_saved_input": x, "_saved_weight": w, "_saved_stride": stride,
             "_saved_padding": tuple(b for b, _ in pairs) if symmetric else (0,) * n_sp,
             "_saved_dilation": dilation, "_saved_groups": groups, "_saved_transposed": False,
             "_saved_output_padding": (0,) * n_sp,
             "_saved_bias_sym_sizes_opt": (0,) if bias is None else tuple(lift(bias)[0].shape),
             }  # fmt: skip
    y = name_history(y, "ConvolutionBackward0", x, weight, bias, saved=saved)
    y = suggested_layout(y, x, w)  # channels-last where the input or the weight is
    return squeeze(y, 0) if added else y


@autocast_op("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-d cross-correlation of `input` (N, C, L) or (C, L) with `weight` (O, C/groups, K),
    plus an optional `bias` (O,); `padding` an int, a 1-tuple, "valid" or "same".

    >>> import kiln as kn
    >>> x = kn.arange(5.0).reshape(1, 1, 5)
    >>> kn.nn.functional.conv1d(x, kn.ones(1, 1, 2), padding="same")
    tensor([[[1., 3., 5., 7., 4.]]])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@autocast_op("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-d cross-correlation of `input` (N, C, H, W) or (C, H, W) with `weight`
    (O, C/groups, KH, KW), plus an optional `bias` (O,); `stride`, `padding` and `dilation`
    are ints or pairs, `padding` also "valid" or "same".

    >>> import kiln as kn, numpy as np
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> kn.conv2d(x, np.ones((1, 1, 2, 2), np.float32), stride=2)
    array([[[[10., 18.],
             [42., 50.]]]], dtype=float32)
    >>> kn.conv2d(np.ones((1, 2, 3, 3), np.float32), np.ones((2, 1, 1, 1), np.float32),
    ...           groups=2).shape
    (1, 2, 3, 3)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@autocast_op("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-d cross-correlation of `input` (N, C, D, H, W) or (C, D, H, W) with `weight`
    (O, C/groups, KD, KH, KW), plus an optional `bias` (O,).

    >>> import kiln as kn
    >>> list(kn.nn.functional.conv3d(kn.ones(1, 1, 3, 3, 3), kn.ones(1, 1, 2, 2, 2)).shape)
    [1, 1, 2, 2, 2]
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, n_sp, input, weight, bias, stride, padding, output_padding, groups,  # noqa: A002
                    dilation):  # fmt: skip
    x, w = lift(input, weight)
    _one_dtype(op, x, w, None)  # the bias's after its shape (`_add_bias`)
    if _integer_conv(x, w, transposed=True):
        return _in_float64(lambda a, b, c: _conv_transpose(op, n_sp, a, b, c, stride, padding,
                           output_padding, groups, dilation), x, w, bias)  # fmt: skip
    if x.dtype.kind == "c" or w.dtype.kind == "c":
        return _complex_conv(lambda a, b, c: _conv_transpose(op, n_sp, a, b, c, stride, padding,
                             output_padding, groups, dilation), op, x, w, bias)  # fmt: skip
    x, added = _batched(x, n_sp, op)
    x, w = _floats(op, x, w)
    if w.ndim != n_sp + 2:
        raise _shape_error(
            op, f"expected a {n_sp + 2}-d weight, got weight of size {sh.format_shape(w.shape)}", w
        )
    stride, dilation, pads, extra = (
        ntuple(v, n_sp, what, op)
        for v, what in ((stride, "stride"), (dilation, "dilation"), (padding, "padding"),
                        (output_padding, "output_padding"))
    )  # fmt: skip
    if any(p < 0 for p in pads) or any(s <= 0 for s in stride) or any(d <= 0 for d in dilation):
        raise _shape_error(op, f"invalid stride {stride}, padding {pads} or dilation {dilation}")
    if any(e < 0 or (e >= s and e >= d) for e, s, d in zip(extra, stride, dilation)):
        raise UsageError(
            f"{op}: output padding must be smaller than either stride or dilation, but got "
            f"output_padding={extra}, stride={stride}, dilation={dilation}"
        )
    c_in, c_out = x.shape[1], w.shape[1] * groups
    if groups < 1 or (isinstance(w.shape[0], int) and w.shape[0] % groups):
        raise _shape_error(op, f"weight of size {sh.format_shape(w.shape)}, groups={groups}", w)
    if isinstance(c_in, int) and isinstance(w.shape[0], int) and c_in != w.shape[0]:
        raise _shape_error(
            op, f"given transposed=1, weight of size {sh.format_shape(w.shape)}, expected "
            f"input{sh.format_shape(x.shape)} to have {w.shape[0]} channels, but got {c_in} "
            "channels instead", x, w,
        )  # fmt: skip
    sizes = static_sizes(x, range(2, x.ndim), op)
    kernel = static_sizes(w, range(2, w.ndim), op)
    # The full transpose (no padding) of every input pixel, then `padding` cropped from both
    # sides and `output_padding` more kept (or zeros added) after.
    full = tuple(
        (h - 1) * s + d * (k - 1) + 1 for h, s, d, k in zip(sizes, stride, dilation, kernel)
    )
    if groups == 1 and n_sp <= 2:
        y = _transpose_primitive(x, w, full, stride, dilation)
    else:
        y = _transpose_windows(x, w, full, sizes, kernel, stride, dilation, groups)
    y = pad(y, torch_pad([(-p, e - p) for p, e in zip(pads, extra)]))
    y = suggested_layout(_add_bias(y, bias, c_out, op, w, x), x, w)
    return squeeze(y, 0) if added else y


def _transpose_primitive(x, w, full, stride, dilation):
    """The full transposed convolution by the `conv2d_input_grad` primitive (1-d as 2-d)."""
    one_d = x.ndim == 3
    if one_d:
        x, w = unsqueeze(x, 2), unsqueeze(w, 2)
        full, stride, dilation = (1, *full), (1, *stride), (1, *dilation)
    y = call("conv2d_input_grad", x, w, x_shape=(x.shape[0], w.shape[1], *full),
             stride=stride, padding=(0, 0), dilation=dilation)  # fmt: skip
    return squeeze(y, 2) if one_d else y


def _transpose_windows(x, w, full, sizes, kernel, stride, dilation, groups):
    """The general full transposed convolution: each input pixel's share of every tap
    (weights times input, one matmul per group), then each tap's shares added onto the
    output at its strided positions (the transpose of `strided_windows`: col2im)."""
    n, c_in, c_out = x.shape[0], x.shape[1], w.shape[1] * groups
    taps, positions = math.prod(kernel), math.prod(sizes)
    per_group = c_in // groups
    xs = reshape(x, (n, groups, per_group, positions))
    ws = permute(reshape(w, (groups, per_group, c_out // groups * taps)), (0, 2, 1))
    cols = reshape(call("matmul", ws, xs), (n, c_out, taps, *sizes))  # (N, C_out, K, I...)
    total = None
    for k, offsets in enumerate(itertools.product(*(range(kk) for kk in kernel))):
        spec = (("slice", None, None, None),) * 2 + tuple(
            ("slice", o * d, o * d + s * (i - 1) + 1, s)
            for o, d, s, i in zip(offsets, dilation, stride, sizes)
        )
        tap = call("index", cols, spec=(("slice", None, None, None),) * 2 + (("int", k),))
        part = call("index_scatter", tap, spec=spec, shape=(n, c_out, *full))
        total = part if total is None else add(total, part)
    return total


@autocast_op("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):  # fmt: skip
    """The transpose (adjoint) of `conv1d`: `input` (N, C_in, L) or (C_in, L), `weight`
    (C_in, C_out/groups, K); output length `(L - 1) * stride - 2 * padding +
    dilation * (K - 1) + output_padding + 1`.

    >>> import kiln as kn
    >>> kn.nn.functional.conv_transpose1d(kn.ones(1, 1, 3), kn.ones(1, 1, 2), stride=2)
    tensor([[[1., 1., 1., 1., 1., 1.]]])
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)  # fmt: skip


@autocast_op("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):  # fmt: skip
    """The transpose (adjoint) of `conv2d`: `input` (N, C_in, H, W) or (C_in, H, W), `weight`
    (C_in, C_out/groups, KH, KW); each output side is `(H - 1) * stride - 2 * padding +
    dilation * (K - 1) + output_padding + 1`.

    >>> import kiln as kn
    >>> kn.nn.functional.conv_transpose2d(kn.ones(1, 1, 2, 2), kn.ones(1, 1, 2, 2))
    tensor([[[[1., 2., 1.],
              [2., 4., 2.],
              [1., 2., 1.]]]])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)  # fmt: skip


@autocast_op("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):  # fmt: skip
    """The transpose (adjoint) of `conv3d`: `input` (N, C_in, D, H, W) or (C_in, D, H, W),
    `weight` (C_in, C_out/groups, KD, KH, KW).

    >>> import kiln as kn
    >>> y = kn.nn.functional.conv_transpose3d(kn.ones(1, 1, 2, 2, 2), kn.ones(1, 1, 2, 2, 2))
    >>> list(y.shape), y[0, 0, 1, 1, 1].item()
    ([1, 1, 3, 3, 3], 8.0)
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)  # fmt: skip


# -- unfold and fold: im2col and col2im -------------------------------------------------------


def _fold_params(op, kernel_size, dilation, padding, stride):
    return tuple(ntuple(v, 2, what, op) for v, what in ((kernel_size, "kernel_size"),
                 (dilation, "dilation"), (padding, "padding"), (stride, "stride")))  # fmt: skip


def _fold_tables(sizes, kernel, dilation, padding, stride, op, x):
    outs = []
    for n, k, d, p, s in zip(sizes, kernel, dilation, padding, stride):
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise _shape_error(op, f"input sizes {sizes} padded by {padding} are smaller than "
                               f"the dilated kernel {kernel}", x)  # fmt: skip
        outs.append(span // s + 1)
    return outs, [window_table(o, k, s, d) for o, k, s, d in zip(outs, kernel, stride, dilation)]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """The sliding windows of `input` (N, C, H, W) or (C, H, W) as columns (im2col):
    (N, C * KH * KW, L) with L the number of windows, PyTorch's `unfold`.

    >>> import kiln as kn
    >>> kn.nn.functional.unfold(kn.arange(6.0).reshape(1, 1, 2, 3), (2, 2))
    tensor([[[0., 1.],
             [1., 2.],
             [3., 4.],
             [4., 5.]]])
    """
    (x,) = lift(input)
    x, added = _batched(x, 2, "unfold")
    kernel, dilation, padding, stride = _fold_params("unfold", kernel_size, dilation, padding,
                                                     stride)  # fmt: skip
    sizes = static_sizes(x, (2, 3), "unfold")
    outs, tables = _fold_tables(sizes, kernel, dilation, padding, stride, "unfold", x)
    if any(padding):
        x = pad(x, torch_pad([(p, p) for p in padding]))
    cols = permute(gather_windows(x, tables), (0, 1, 4, 5, 2, 3))  # (N, C, KH, KW, OH, OW)
    y = reshape(cols, (x.shape[0], x.shape[1] * math.prod(kernel), math.prod(outs)))
    return squeeze(y, 0) if added else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """The adjoint of `unfold` (col2im): columns (N, C * KH * KW, L) or (C * KH * KW, L) summed
    back into an (N, C, H, W) image of `output_size`, overlaps adding up.

    >>> import kiln as kn
    >>> kn.nn.functional.fold(kn.ones(1, 4, 2), (2, 3), (2, 2))
    tensor([[[[1., 2., 1.],
              [1., 2., 1.]]]])
    """
    (x,) = lift(input)
    added = x.ndim == 2
    if added:
        x = unsqueeze(x, 0)
    kernel, dilation, padding, stride = _fold_params("fold", kernel_size, dilation, padding,
                                                     stride)  # fmt: skip
    sizes = ntuple(output_size, 2, "output_size", "fold")
    outs, (t1, t2) = _fold_tables(sizes, kernel, dilation, padding, stride, "fold", x)
    k = math.prod(kernel)
    n, ck, length = x.shape
    if not (isinstance(ck, int) and ck % k == 0 and length == math.prod(outs)):
        raise _shape_error(
            "fold", f"expected an input of size [N, C * {k}, {math.prod(outs)}] for kernel "
            f"{kernel} and output {sizes}, got {sh.format_shape(x.shape)}", x,
        )  # fmt: skip
    c = ck // k
    cols = permute(reshape(x, (n, c, *kernel, *outs)), (0, 1, 4, 2, 5, 3))  # (N,C,OH,KH,OW,KW)
    hp, wp = (s + 2 * p for s, p in zip(sizes, padding))
    plane = call("scatter_add", cols, _table(t2, x), axis=4, shape=(n, c, outs[0], kernel[0], wp),
                 wrap_negative=False)  # fmt: skip
    plane = call("scatter_add", plane, _table(t1, x), axis=2, shape=(n, c, hp, wp),
                 wrap_negative=False)  # fmt: skip
    if any(padding):
        plane = pad(plane, torch_pad([(-p, -p) for p in padding]))
    return squeeze(plane, 0) if added else plane


def _table(table, context):
    (value,) = lift(table, context=(context,))
    return value
