"""`grid_sample` and `affine_grid` (PyTorch's spatial transformer functions) for 4-D and 5-D
inputs, written with kiln's ops (gathers of the corner values and their weights), so the
gradients reach both the input and the grid, eagerly, in graph mode and under `kn.compile`."""

from __future__ import annotations

import warnings

import numpy as np

from .. import frontend as F
from ..errors import ArgumentError, UsageError

__all__ = ["affine_grid", "grid_sample"]


def _align(align_corners, name):
    if align_corners is None:
        warnings.warn(
            f"Default {name} behavior has changed to align_corners=False since 1.3.0. Please "
            "specify align_corners=True if the old behavior is desired.",
            UserWarning,
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def _unnormalize(coord, size: int, align_corners: bool):
    """[-1, 1] to pixel coordinates: -1 and 1 are the corner pixels' centres when aligned,
    else their outer edges."""
    if align_corners:
        return F.mul(F.add(coord, 1.0), (size - 1) / 2)
    return F.div(F.sub(F.mul(F.add(coord, 1.0), size), 1.0), 2)


def _reflect(coord, twice_low: int, twice_high: int):
    """coord reflected into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return F.mul(coord, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = F.abs(F.sub(coord, low))
    extra = F.fmod(c, span)
    flips = F.floor(F.div(c, span))
    even = F.eq(F.fmod(flips, 2.0), 0.0)
    return F.where(even, F.add(extra, low), F.add(F.sub(span, extra), low))


def _clip(c, size: int):
    """c clipped to [0, size - 1], its gradient 0 on the bounds too (PyTorch's
    clip_coordinates_set_grad)."""
    inside = F.logical_and(F.greater(c, 0), F.less(c, size - 1))
    return F.where(inside, c, F.stop_gradient(F.clip(c, 0, size - 1)))


def _source(coord, size: int, padding_mode: str, align_corners: bool):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        return _clip(c, size)
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _clip(_reflect(c, *twice), size)
    return c


def _tap(coord, size: int, padding_mode: str, align_corners: bool):
    """An integer tap position of bicubic sampling with the padding applied to it (PyTorch
    pads each of the 16 taps, not the sampling point)."""
    if padding_mode == "border":
        return F.clip(coord, 0, size - 1)
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return F.clip(_reflect(coord, *twice), 0, size - 1)
    return coord


def _cubic_weights(t):
    """The 4 weights of cubic convolution (a = -0.75) at fractional offset t."""
    a = -0.75

    def near(x):  # |x| <= 1
        return F.add(F.mul(F.mul(F.sub(F.mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # 1 < |x| < 2
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)

    return far(F.add(t, 1.0)), near(t), near(F.sub(1.0, t)), far(F.sub(2.0, t))


def _bicubic(flat, g, h: int, w: int, padding_mode: str, align: bool):
    n = flat.shape[0]
    gx = _unnormalize(F.select(g, 3, 0), w, align)
    gy = _unnormalize(F.select(g, 3, 1), h, align)
    x0, y0 = F.floor(gx), F.floor(gy)
    wxs, wys = _cubic_weights(F.sub(gx, x0)), _cubic_weights(F.sub(gy, y0))
    out = None
    for j, wy in enumerate(wys):
        cy = _tap(F.add(y0, float(j - 1)), h, padding_mode, align)
        for i, wx in enumerate(wxs):
            cx = _tap(F.add(x0, float(i - 1)), w, padding_mode, align)
            term = F.mul(_corner(flat, cx, cy, h, w), F.reshape(F.mul(wx, wy), (n, 1, -1)))
            out = term if out is None else F.add(out, term)
    return out


def _tied(out, g):
    """`out` (N, C, P) of nearest sampling, joined to the grid `g` with a zero gradient: as
    PyTorch's, the grid of a nearest sample gets zeros (not no gradient at all)."""
    n = out.shape[0]
    return F.where(np.False_, F.reshape(F.sum(g, -1), (n, 1, -1)), out)


def _corner(flat, ix, iy, h: int, w: int):
    """Values of `flat` (N, C, H*W) at integer pixels (ix, iy) of shape (N, Ho, Wo), and
    whether each lies inside (outside ones read as 0: the "zeros" padding)."""
    n, c, _ = flat.shape
    inside = F.logical_and(
        F.logical_and(F.greater_equal(ix, 0), F.less_equal(ix, w - 1)),
        F.logical_and(F.greater_equal(iy, 0), F.less_equal(iy, h - 1)),
    )
    index = F.add(F.mul(F.clip(iy, 0, h - 1), w), F.clip(ix, 0, w - 1))
    index = F.cast(F.reshape(index, (n, 1, -1)), np.int64)
    values = F.gather(flat, 2, F.broadcast_to(index, (n, c, index.shape[2])))
    return F.where(F.reshape(inside, (n, 1, -1)), values, 0.0)


def _corner3(flat, ix, iy, iz, d: int, h: int, w: int):
    """As `_corner`, at integer voxels (ix, iy, iz) of a (N, C, D*H*W) volume."""
    n, c, _ = flat.shape
    inside = None
    for coord, size in ((ix, w), (iy, h), (iz, d)):
        ok = F.logical_and(F.greater_equal(coord, 0), F.less_equal(coord, size - 1))
        inside = ok if inside is None else F.logical_and(inside, ok)
    index = F.add(F.mul(F.add(F.mul(F.clip(iz, 0, d - 1), h), F.clip(iy, 0, h - 1)), w),
                  F.clip(ix, 0, w - 1))  # fmt: skip
    index = F.cast(F.reshape(index, (n, 1, -1)), np.int64)
    values = F.gather(flat, 2, F.broadcast_to(index, (n, c, index.shape[2])))
    return F.where(F.reshape(inside, (n, 1, -1)), values, 0.0)


def _grid_sample_3d(x, g, mode: str, padding_mode: str, align: bool):
    """Volumetric sampling: (N, C, D, H, W) input, (N, Do, Ho, Wo, 3) grid of (x, y, z)."""
    if mode == "bicubic":
        raise ArgumentError("grid_sample(): bicubic interpolation only supports 4D input")
    if g.ndim != 5 or g.shape[-1] != 3 or g.shape[0] != x.shape[0]:
        raise UsageError(
            f"grid_sample(): expected grid of shape [N, D, H, W, 3] with N = {x.shape[0]}, "
            f"got {list(g.shape)}"
        )
    n, c, d, h, w = x.shape
    out = tuple(g.shape[1:4])
    flat = F.reshape(x, (n, c, d * h * w))
    gx = _source(F.select(g, 4, 0), w, padding_mode, align)
    gy = _source(F.select(g, 4, 1), h, padding_mode, align)
    gz = _source(F.select(g, 4, 2), d, padding_mode, align)
    if mode == "nearest":
        y = _tied(_corner3(flat, F.round(gx), F.round(gy), F.round(gz), d, h, w), g)
        return F.reshape(y, (n, c, *out))
    lows = [F.floor(t) for t in (gx, gy, gz)]
    fracs = [F.sub(t, lo) for t, lo in zip((gx, gy, gz), lows)]
    total = None
    for corner in range(8):
        coords, weight = [], None
        for axis in range(3):
            up = (corner >> axis) & 1
            coords.append(F.add(lows[axis], 1.0) if up else lows[axis])
            wa = fracs[axis] if up else F.sub(1.0, fracs[axis])
            weight = wa if weight is None else F.mul(weight, wa)
        term = F.mul(_corner3(flat, *coords, d, h, w), F.reshape(weight, (n, 1, -1)))
        total = term if total is None else F.add(total, term)
    return F.reshape(total, (n, c, *out))


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners=None):  # fmt: skip
    """Samples (N, C, H, W) `input` at the (N, Ho, Wo, 2) `grid` of (x, y) points in [-1, 1]:
    bilinear, nearest (ties to even) or bicubic (a = -0.75, each of its 16 taps padded),
    outside points as zeros, the border, or reflected.

    >>> import kiln as kn
    >>> x = kn.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    >>> kn.nn.functional.grid_sample(x, kn.zeros(1, 1, 1, 2), align_corners=True)
    tensor([[[[1.5000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ArgumentError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ArgumentError(
            f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
            f"'border', or 'reflection', but got: '{padding_mode}'"
        )
    align = _align(align_corners, "grid_sample")
    x, g = F.core.lift(input, grid)
    if x.ndim == 5:
        return _grid_sample_3d(x, g, mode, padding_mode, align)
    if x.ndim != 4:
        raise ArgumentError(
            f"grid_sample(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(x.shape)}"
        )
    if g.ndim != 4 or g.shape[-1] != 2 or g.shape[0] != x.shape[0]:
        raise UsageError(
            f"grid_sample(): expected grid of shape [N, H, W, 2] with N = "
            f"{x.shape[0]}, got {list(g.shape)}"
        )
    n, c, h, w = x.shape
    out_h, out_w = g.shape[1], g.shape[2]
    flat = F.reshape(x, (n, c, h * w))
    if mode == "bicubic":
        return F.reshape(_bicubic(flat, g, h, w, padding_mode, align), (n, c, out_h, out_w))
    gx = _source(F.select(g, 3, 0), w, padding_mode, align)
    gy = _source(F.select(g, 3, 1), h, padding_mode, align)
    if mode == "nearest":
        out = _tied(_corner(flat, F.round(gx), F.round(gy), h, w), g)
        return F.reshape(out, (n, c, out_h, out_w))
    x0, y0 = F.floor(gx), F.floor(gy)
    x1, y1 = F.add(x0, 1.0), F.add(y0, 1.0)
    wx1, wy1 = F.sub(gx, x0), F.sub(gy, y0)
    wx0, wy0 = F.sub(1.0, wx1), F.sub(1.0, wy1)
    out = None
    for cx, cy, wgt in ((x0, y0, F.mul(wx0, wy0)), (x1, y0, F.mul(wx1, wy0)),
                        (x0, y1, F.mul(wx0, wy1)), (x1, y1, F.mul(wx1, wy1))):  # fmt: skip
        term = F.mul(_corner(flat, cx, cy, h, w), F.reshape(wgt, (n, 1, -1)))
        out = term if out is None else F.add(out, term)
    return F.reshape(out, (n, c, out_h, out_w))


def _base(size: int, align_corners: bool) -> np.ndarray:
    if size == 1:
        return np.zeros(1)
    points = np.linspace(-1.0, 1.0, size)
    return points if align_corners else points * (size - 1) / size


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) sampling grid of the affine maps `theta` (N, 2, 3) for an output of
    `size` (N, C, H, W), for `grid_sample`.

    >>> import kiln as kn
    >>> theta = kn.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> kn.nn.functional.affine_grid(theta, (1, 1, 1, 2), align_corners=True)
    tensor([[[[-1.,  0.],
              [ 1.,  0.]]]])
    """
    align = _align(align_corners, "affine_grid")
    (t,) = F.core.lift(theta)
    if len(size) == 5:
        return _affine_grid_3d(t, size, align)
    if len(size) != 4:
        raise ArgumentError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {list(size)}."
        )
    n, _, h, w = size
    if tuple(t.shape) != (n, 2, 3):
        raise ArgumentError(
            f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
            f"{list(size)}. Got {list(t.shape)}."
        )
    xs, ys = np.meshgrid(_base(w, align), _base(h, align))
    base = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(1, h * w, 3)
    base = base.astype(np.dtype(t.dtype))
    grid = F.matmul(base, F.transpose(t, 1, 2))  # (N, H*W, 2)
    return F.reshape(grid, (n, h, w, 2))


def _affine_grid_3d(t, size, align: bool):
    """The (N, D, H, W, 3) grid of the 3-D affine maps `t` (N, 3, 4)."""
    n, _, d, h, w = size
    if tuple(t.shape) != (n, 3, 4):
        raise ArgumentError(
            f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
            f"{list(size)}. Got {list(t.shape)}."
        )
    zs, ys, xs = np.meshgrid(_base(d, align), _base(h, align), _base(w, align), indexing="ij")
    base = np.stack([xs, ys, zs, np.ones_like(xs)], -1).reshape(1, d * h * w, 4)
    base = base.astype(np.dtype(t.dtype))
    grid = F.matmul(base, F.transpose(t, 1, 2))  # (N, D*H*W, 3)
    return F.reshape(grid, (n, d, h, w, 3))
