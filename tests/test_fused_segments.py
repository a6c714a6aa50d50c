"""Large fused programs with unlowered equations run by segments (kiln/ops/fused_segments.py):
compiled loops over the runs of lowered equations, NumPy's kernel for the others. Expected:
the bits of the same ops run one by one (each a whole-array call): NumPy's kernels in exact
mode; outside it (`KILN_EXACT=0`), kiln's own kernels for float32 tanh and exp
(kiln/ops/vecmath.py, which every path runs in that mode) and NumPy's for the rest; for
inputs of the block's shape, of one element, and broadcast along an axis (the path without
segments)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kiln as kn
from kiln.ops import fused_segments, vecmath
from kiln.passes.fuse import fuse_elementwise
from kiln.passes.program import extract

pytest.importorskip("numba")

SHAPE = (600, 512)  # 1.2 MiB of float32: past UNBLOCKED_BYTES, so cut in blocks

# (name, kiln/NumPy function of (value, other input)); tanh, exp and sin are not lowered in
# exact mode: each splits the program in segments
STEPS = [
    ("mul", lambda m, v, a: v * a),
    ("add", lambda m, v, a: v + 0.5),
    ("sub", lambda m, v, a: v - a),
    ("max", lambda m, v, a: m.maximum(v, a)),
    ("square", lambda m, v, a: v * v),
    ("tanh", lambda m, v, a: m.tanh(v)),
    ("exp", lambda m, v, a: m.exp(v * 0.1)),
    ("sin", lambda m, v, a: m.sin(v)),
]


def _run(names, a_shape, exact, monkeypatch):
    monkeypatch.setenv("KILN_EXACT", "1" if exact else "0")
    steps = [dict(STEPS)[n] for n in names]
    rng = np.random.default_rng(len(names))
    x = rng.uniform(-2, 2, SHAPE).astype(np.float32)
    a = rng.uniform(-2, 2, a_shape).astype(np.float32)
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, SHAPE, name="x")
        as_ = kn.placeholder(kn.float32, a_shape, name="a")
        y = xs
        for f in steps:
            y = f(kn, y, as_)
        graph = fuse_elementwise(extract([y], [xs, as_], {}))
    assert [n.op.name for n in graph.nodes].count("fused") == 1
    got = kn.function(graph.inputs, graph.outputs[0])(x, a)
    want = x
    for f in steps:
        want = f(np if exact else _OWN, want, a)
    np.testing.assert_array_equal(got, want)


class _OWN:
    """NumPy's functions, but kiln's own kernels where those run outside exact mode."""

    maximum, sin = np.maximum, np.sin

    @staticmethod
    def tanh(v):
        return vecmath.run("tanh", v)

    @staticmethod
    def exp(v):
        return vecmath.run("exp", v)


@settings(max_examples=25, deadline=None)
@given(
    names=st.lists(st.sampled_from([n for n, _ in STEPS]), min_size=2, max_size=9),
    a_shape=st.sampled_from([SHAPE, (1, 1), (1, SHAPE[1]), (SHAPE[0], 1)]),
    exact=st.booleans(),
)
def test_segmented_programs_give_numpys_bits(names, a_shape, exact):
    with pytest.MonkeyPatch.context() as mp:
        _run(names, a_shape, exact, mp)


def test_the_chain_runs_by_segments(monkeypatch):
    """The benchmark's chain: two runs of loops around tanh (bench/bench_fusion.py, case c)."""
    calls = []
    original = fused_segments._runner

    def spy(*args):
        run = original(*args)
        calls.append(args[1])
        return run

    monkeypatch.setattr(fused_segments, "_runner", spy)
    fused_segments._CACHE.clear()
    _run(["mul", "add", "tanh", "sub", "max", "square"], SHAPE, True, monkeypatch)
    [steps] = calls
    assert [s[0] for s in steps] == ["loop", "numpy", "loop"]
