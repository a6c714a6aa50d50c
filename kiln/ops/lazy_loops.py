"""Compiled loops built lazily, one per dtype: a loop is compiled on the `after`-th call that
asks for it, so one-off runs never pay numba's compile time. The one cache of the hand-written
kernels' loops (kiln/ops/epilogue.py, relu_grad in kiln/ops/elementwise.py)."""

from __future__ import annotations

import numpy as np


class LazyLoops:
    """Per dtype, the calls made so far (an int) or the loop `build(dtype)` gave (None where
    it can't be built: no numba).

    >>> loops = LazyLoops(lambda dtype: f"loop of {dtype}", after=2)
    >>> np.dtype(np.float32) in loops, loops.get(np.dtype(np.float32))
    (True, None)
    >>> loops.get(np.dtype(np.float32))
    'loop of float32'
    """

    def __init__(self, build, after: int = 3, dtypes=(np.float32, np.float64)):
        self.build, self.after = build, after
        self.state: dict = {np.dtype(d): 0 for d in dtypes}

    def __contains__(self, dtype) -> bool:
        return dtype in self.state

    def get(self, dtype):
        """The loop for `dtype`, or None (not built yet, or not buildable)."""
        loop = self.state[dtype]
        if type(loop) is int:
            if loop + 1 < self.after:
                self.state[dtype] = loop + 1
                return None
            loop = self.state[dtype] = self.build(dtype)
        return loop
