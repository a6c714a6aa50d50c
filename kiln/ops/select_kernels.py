"""NumPy kernels of selects and maxima that run NumPy's SIMD loops where the obvious call
branches per element: `maximum(x, 0)` against a block of zeros (`relu_blocks`), a select by
bits (`select_bits`), and the thread's scratch masks they use (relu and its gradient in
kiln/ops/elementwise.py, max_pool2d's gradient in kiln/ops/nn_grad.py)."""

from __future__ import annotations

import math
import threading

import numpy as np

__all__ = ["BITS_SELECT_SIZE", "mask_scratch", "relu_blocks", "select_bits", "ZERO_BLOCKS"]


# Zeros of float32 and float64, created on first use and only ever read: NumPy's maximum of
# two arrays runs its SIMD loop, while against a scalar 0 it takes about 3x as long (float32
# [128, 512]: 8 us against 25). Same values, NaN and signed zeros included.
ZERO_BLOCKS: dict = {np.dtype(np.float32): None, np.dtype(np.float64): None}
_ZERO_BLOCK_SIZE = 1 << 16  # elements: 256 KiB of float32


def relu_blocks(x, out):
    """maximum(x, 0) of C-ordered arrays, a block of `_ZERO_BLOCK_SIZE` elements at a time
    against a block of zeros (`out` may be `x`).

    >>> x = np.array([-1.5, -0.0, np.nan, 2.0] * 100, np.float32)
    >>> bool(relu_blocks(x, np.empty_like(x)).tobytes() == np.maximum(x, 0).tobytes())
    True
    """
    zeros = ZERO_BLOCKS[x.dtype]
    if zeros is None:
        zeros = ZERO_BLOCKS[x.dtype] = np.zeros(_ZERO_BLOCK_SIZE, x.dtype)
    flat, into, n = x.reshape(-1), out.reshape(-1), x.size
    if n <= _ZERO_BLOCK_SIZE:
        np.maximum(flat, zeros[:n], out=into)
        return out
    for start in range(0, n, _ZERO_BLOCK_SIZE):
        stop = min(start + _ZERO_BLOCK_SIZE, n)
        np.maximum(flat[start:stop], zeros[: stop - start], out=into[start:stop])
    return out


_MASKS = threading.local()


def mask_scratch(shape, dtype=np.bool_):
    """An array of `shape` (bool, or another `dtype`) in this thread's scratch, grown as
    needed and reused by every later call: a steady-state step allocates no mask."""
    size = math.prod(shape)
    name = f"buffer_{np.dtype(dtype).char}"
    buf = getattr(_MASKS, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1), dtype)
        setattr(_MASKS, name, buf)
    return buf[:size].reshape(shape)


def select_bits(values, mask, out, keep: bool = True):
    """`values` where `mask` holds (`keep`; else where it does not), +0.0 elsewhere, written
    into `out` (NumPy float arrays of one shape and dtype; `out` may be `values`): the bits
    of `values` and-ed with all ones or zeros. The same select as `copyto(out, 0,
    where=...)` or `where(mask, values, 0)`, NaNs and signed zeros included, in three SIMD
    passes, where those branch on each element (f32[64, 32, 28, 28], half the mask set:
    0.97 ms against 11.6).

    >>> v = np.array([1.5, np.nan, -0.0, 2.0], np.float32)
    >>> select_bits(v, np.array([True, False, True, False]), np.empty(4, np.float32))
    array([ 1.5,  0. , -0. ,  0. ], dtype=float32)
    """
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    bits = mask_scratch(mask.shape, unsigned)
    if keep:  # 0 - 1 wraps to all ones
        np.subtract(0, mask, out=bits, dtype=unsigned, casting="unsafe")
    else:
        np.subtract(mask, 1, out=bits, dtype=unsigned, casting="unsafe")
    np.bitwise_and(values.view(unsigned), bits, out=out.view(unsigned))
    return out


BITS_SELECT_SIZE = 1 << 10  # elements: below, copyto's masked store is as fast
