"""`kn.quasirandom.SobolEngine`: PyTorch's `torch.quasirandom.SobolEngine`, low-discrepancy
points in [0, 1)^d for quasi-Monte Carlo. Unscrambled points are the standard Sobol sequence
(Joe and Kuo's direction numbers, PyTorch's too: the same points); scrambled ones are scrambled
by SciPy's `qmc.Sobol` from kiln's seed, so they differ from PyTorch's draws.

>>> import kiln as kn
>>> kn.quasirandom.SobolEngine(2).draw(4)
tensor([[0.0000, 0.0000],
        [0.5000, 0.5000],
        [0.7500, 0.2500],
        [0.2500, 0.7500]])
"""

from __future__ import annotations

import warnings

__all__ = ["SobolEngine"]


class SobolEngine:
    """A Sobol sequence of `dimension` (1 to 21201) dims, drawn in order (`draw`,
    `draw_base2`), skipped (`fast_forward`) or restarted (`reset`), as PyTorch's.

    >>> import kiln as kn
    >>> engine = kn.quasirandom.SobolEngine(3)
    >>> engine.draw_base2(1), engine.num_generated
    (tensor([[0.0000, 0.0000, 0.0000],
            [0.5000, 0.5000, 0.5000]]), 2)
    """

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")  # fmt: skip
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self.reset()

    def _sampler(self):
        from scipy.stats import qmc

        seed = self.seed
        if self.scramble and seed is None:
            from .ops.random import next_seed

            seed = next_seed()
        return qmc.Sobol(self.dimension, scramble=self.scramble, seed=seed)

    def reset(self):
        """Back to the first point."""
        self._engine = self._sampler()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skips the next `n` points."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def draw(self, n=1, out=None, dtype=None):
        """The next `n` points, an (n, dimension) tensor of `dtype` (the default float)."""
        from . import dtypes as dt
        from .eager.factories import tensor

        with warnings.catch_warnings():  # (SciPy's note on n not a power of 2)
            warnings.simplefilter("ignore")
            points = self._engine.random(n)
        self.num_generated += n
        dtype = dt.public(dt.get_default_dtype()) if dtype is None else dtype
        result = tensor(points, dtype=dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next `2**m` points; the total drawn must stay a power of 2."""
        n = 2**m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(f"The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total}. If "
                             f"you still want to do this, please use 'SobolEngine.draw()' "
                             f"instead.")  # fmt: skip
        return self.draw(n, out=out, dtype=dtype)

    def __repr__(self):
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(fields)})"
