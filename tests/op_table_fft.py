"""Op-table rows for the Fourier transform primitives (kiln/ops/fft.py), against NumPy's
`fftn`, `ifftn`, `rfftn` and `irfftn` (with the `norm` each primitive's scale stands for), in
every mode tests/test_ops.py runs. `kn.fft`'s functions and their gradients are checked
against PyTorch in tests/test_fft.py."""

from __future__ import annotations

import numpy as np
from op_case import OpCase

from kiln.graph.opdef import REGISTRY
from kiln.ops.core import bind

COMPLEX = ("complex64", "complex128")
FLOATS = ("float32", "float64")

CASES: list[OpCase] = []


def complexes(shape):
    def make(rng, dtype):
        return [(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)]

    return make


def reals(shape):
    return lambda rng, dtype: [rng.standard_normal(shape).astype(dtype)]


def op(name, **attrs):
    return lambda x: bind(REGISTRY[name], x, **attrs)


def same(fn):
    """A NumPy reference in the input's precision (NumPy 2's pocketfft keeps float32)."""
    return lambda x: np.asarray(fn(x))


CASES.extend([
    OpCase("fft_c2c", "forward", op("fft_c2c", axes=(1,), forward=True, scale="none"),
           complexes((2, 5)), same(lambda x: np.fft.fftn(x, axes=(1,))), COMPLEX, 1e-5, 1e-5),
    OpCase("fft_c2c", "inverse-2d", op("fft_c2c", axes=(0, 2), forward=False, scale="sqrt"),
           complexes((3, 2, 4)), same(lambda x: np.fft.ifftn(x, axes=(0, 2), norm="ortho")),
           COMPLEX, 1e-5, 1e-5),
    OpCase("fft_c2c", "size-0", op("fft_c2c", axes=(1,), forward=True, scale="n"),
           complexes((0, 3)), same(lambda x: np.zeros(x.shape, x.dtype)), COMPLEX),
    OpCase("fft_r2c", "odd", op("fft_r2c", axes=(1,), scale="none"), reals((2, 5)),
           same(lambda x: np.fft.rfftn(x, axes=(1,))), FLOATS, 1e-5, 1e-5),
    OpCase("fft_r2c", "2d", op("fft_r2c", axes=(0, 1), scale="n"), reals((3, 4)),
           same(lambda x: np.fft.rfftn(x, axes=(0, 1), norm="forward")), FLOATS, 1e-5, 1e-5),
    OpCase("fft_c2r", "even", op("fft_c2r", axes=(1,), n=6, scale="n"), complexes((2, 4)),
           same(lambda x: np.fft.irfftn(x, s=(6,), axes=(1,))), COMPLEX, 1e-5, 1e-5),
    OpCase("fft_c2r", "odd-2d", op("fft_c2r", axes=(0, 1), n=5, scale="sqrt"),
           complexes((3, 3)),
           same(lambda x: np.fft.irfftn(x, s=(3, 5), axes=(0, 1), norm="ortho")), COMPLEX,
           1e-5, 1e-5),
])  # fmt: skip
