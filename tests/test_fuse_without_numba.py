"""Small elementwise groups on the CPU without compiled loops (no numba): only groups of
`NUMPY_SMALL_MIN_OPS` nodes or more are fused (kiln/runtime/program.py), as shorter ones run
the same ufuncs plus the fused kernel's bookkeeping; with compiled loops every small group is.
The results are the unfused program's (passes=[]), bit for bit: the same ufuncs."""

import numpy as np
import pytest

import kiln as kn
from kiln.ops import fused
from kiln.runtime import program


def _build():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (16,), name="x")
        short = x * 2.0 + 1.0  # 2 nodes
        y = x
        for _ in range(8):  # 16 nodes: sin, mul
            y = kn.sin(y) * 0.5
        return x, [short * short, y]


@pytest.mark.parametrize("compiled", [False, True])
def test_small_groups_fused_by_length_without_compiled_loops(monkeypatch, compiled):
    monkeypatch.setattr(fused, "has_compiled_loops", lambda: compiled)
    x, outs = _build()
    f = kn.function([x], outs)
    value = np.linspace(-2, 2, 16, dtype=np.float32)
    got = f(value)
    sizes = sorted(len(n.attrs["program"]) for n in f.graph.nodes if n.op.name == "fused")
    if compiled:
        assert len(sizes) == 2  # both groups
    else:
        assert sizes and min(sizes) >= program.NUMPY_SMALL_MIN_OPS  # the long one only
    plain = kn.function([x], outs, passes=[], plan=False)(value)
    for a, b in zip(got, plain):
        np.testing.assert_array_equal(a, b) if not compiled else np.testing.assert_allclose(
            a, b, rtol=1e-6
        )
