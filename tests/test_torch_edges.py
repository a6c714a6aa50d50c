"""Silent differences from PyTorch 2.13 that an oracle sweep of edge inputs found (ties, NaN,
negative indices, mixed dtypes, integer bounds), each compared with PyTorch (skipped without
it) in graph mode, eagerly and under `kn.compile` where the call takes tensors, and eagerly
where it makes a tensor from Python numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_torch_known_fixes import MODES, assert_same, run, torch_result

import kiln as kn

X34 = np.arange(12, dtype=np.float32).reshape(3, 4)

# id -> (fn(lib, *tensors), arrays); lib is torch or kiln
CASES = {
    # a negative index counts from the end (kiln ignored it)
    "index_fill-negative": (lambda t, x, i: t.index_fill(x, 1, i, -2.0), (X34, np.array([-1, 0]))),
    "index_fill-negative-0d-index": (lambda t, x, i: x.index_fill(0, i, 7.0), (X34, np.array(-3))),
    # the missing bound is the result dtype's extreme, not x's (True, 127 clamped before)
    "clamp-bool-int-min": (lambda t, x: t.clamp(x, min=3), (np.array([True, False]),)),
    "clamp-bool-float-min": (
        lambda t, x, b: t.clamp(x, min=b),
        (np.array([True, False]), np.array([2.5, 0.5], np.float32)),
    ),
    "clamp-int8-uint8-min": (
        lambda t, x, b: t.clamp(x, min=b),
        (np.array([1, -2], np.int8), np.array([255, 0], np.uint8)),
    ),
    "clamp-int8-uint8-max": (
        lambda t, x, b: x.clamp(max=b),
        (np.array([1, -2], np.int8), np.array([255, 0], np.uint8)),
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_edges_as_torch(name, mode):
    fn, arrays = CASES[name]
    assert_same(run(mode, fn, *arrays), torch_result(fn, *arrays))


def test_index_fill_out_of_range_raises():
    """Beyond either end is an IndexError, as PyTorch's (kiln filled nothing)."""
    for bad in ([3], [-4]):
        with pytest.raises(IndexError):
            kn.zeros(3).index_fill(0, kn.tensor(bad), 1.0)
