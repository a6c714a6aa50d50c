"""kn.compile against the same code run eagerly (and torch.compile(backend="eager") where
torch is installed): patterns a torch.compile user writes, each of which gave a silent
difference before its fix. Expected values: the eager kiln run of the same code, and torch
2.13 (eager and torch.compile with the eager backend), as each test says."""

import numpy as np
import pytest

import kiln as kn


def _np(t):
    return t.detach().numpy()


def test_a_static_float_argument_equal_to_an_earlier_int_traces_again():
    # `x * 2` of an int64 tensor is int64, `x * 2.0` float32 (eager kiln and torch); 2 == 2.0
    # and their hashes agree, so the call with 2.0 reused the int trace and gave int64
    f = kn.compile(lambda x, k: x * k)
    xi = kn.tensor([1, 2, 3])
    for k in (2, 2.0, True, 2):
        want = xi * k
        got = f(xi, k)
        assert got.dtype == want.dtype, k
        np.testing.assert_array_equal(_np(got), _np(want))
    # -0.0 == 0.0 too, but 1 / x differs in sign (eager: -inf)
    g = kn.compile(lambda x, z: x / z)
    x = kn.ones(2)
    np.testing.assert_array_equal(_np(g(x, 0.0)), [np.inf, np.inf])
    np.testing.assert_array_equal(_np(g(x, -0.0)), [-np.inf, -np.inf])
    torch = pytest.importorskip("torch")
    tf = torch.compile(lambda x, k: x * k, backend="eager")
    assert tf(torch.tensor([1, 2, 3]), 2).dtype == torch.int64
    assert tf(torch.tensor([1, 2, 3]), 2.0).dtype == torch.float32
