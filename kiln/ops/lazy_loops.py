"""Compiled loops built lazily, one per dtype: a loop is compiled on the `after`-th call that
asks for it, so one-off runs never pay numba's compile time. The one cache of the hand-written
kernels' loops (kiln/ops/epilogue.py, relu_grad in kiln/ops/elementwise.py).

These loops save microseconds a call, and starting numba costs about 0.75 s once a process
(its import and target setup, measured here; loading a cached loop after that takes
milliseconds). So a loop waits `after` calls only once something else has started numba (a
planned program's fused loops, kiln's float32 exp and tanh); until then it waits `COLD_AFTER`
calls, about the number whose savings pay for the start. Eager mode alone, whose relu_grad
reaches these loops, then keeps NumPy's kernels (the digits demo's eager epoch paid the start:
0.43-0.85 s against 0.12-0.17 s)."""

from __future__ import annotations

import sys

import numpy as np

COLD_AFTER = 50_000  # calls before a loop may be the one to start numba


class LazyLoops:
    """Per dtype, the calls made so far (an int) or the loop `build(dtype)` gave (None where
    it can't be built: no numba).

    >>> loops = LazyLoops(lambda dtype: f"loop of {dtype}", after=2, cold_after=2)
    >>> np.dtype(np.float32) in loops, loops.get(np.dtype(np.float32))
    (True, None)
    >>> loops.get(np.dtype(np.float32))
    'loop of float32'
    """

    def __init__(self, build, after=3, dtypes=(np.float32, np.float64), cold_after=COLD_AFTER):
        self.build, self.after, self.cold_after = build, after, cold_after
        self.state: dict = {np.dtype(d): 0 for d in dtypes}

    def __contains__(self, dtype) -> bool:
        return dtype in self.state

    def get(self, dtype):
        """The loop for `dtype`, or None (not built yet, or not buildable)."""
        loop = self.state[dtype]
        if type(loop) is int:
            if loop + 1 < (self.after if "numba" in sys.modules else self.cold_after):
                self.state[dtype] = loop + 1
                return None
            loop = self.state[dtype] = self.build(dtype)
        return loop
