"""Differential testing of planned programs: hypothesis draws programs with feeds, Variables
and updates (an update may read another updated Variable, fetches may be views of Variables,
transposes and reshape round trips of in-place candidates), runs each twice planned (default
passes), with the GPU's fuse-everything pass options and tiny fusion blocks (so the blocked
CPU kernel runs on small shapes), unplanned, and eagerly, and compares every fetched value and
Variable with NumPy running the same program: bit-for-bit where every op is exact.

`KILN_DIFF_EXAMPLES` sets how many programs (default 2000, CI's count).
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kiln as kn
import kiln.ops.fused as fused_kernels
from kiln.passes import fuse_elementwise, simplify

N = 4
EXAMPLES = int(os.environ.get("KILN_DIFF_EXAMPLES", "2000"))
FUSE_ALL = [("simplify", simplify), ("fuse_elementwise", fuse_elementwise)]

# name -> (arity, exact, kiln function, NumPy reference); every value is f64[N, N].
OPS = {
    "add": (2, True, lambda a, b: a + b, lambda a, b: a + b),
    "sub": (2, True, lambda a, b: a - b, lambda a, b: a - b),
    "mul": (2, True, lambda a, b: a * b, lambda a, b: a * b),
    "scale": (1, True, lambda a: a * 0.5 + 1.0, lambda a: a * 0.5 + 1.0),
    "relu": (1, True, kn.relu, lambda a: np.maximum(a, 0.0)),
    "T": (1, True, lambda a: a.T, lambda a: a.T),
    "reshape": (
        1, True, lambda a: kn.reshape(kn.reshape(a, (-1,)), a.shape),
        lambda a: a.reshape(-1).reshape(a.shape),
    ),
    "tanh": (1, False, kn.tanh, np.tanh),
    "sin": (1, False, kn.sin, np.sin),
    "matmul": (
        2, False, lambda a, b: (a @ b) * (1.0 / a.shape[0]),
        lambda a, b: (a @ b) * (1.0 / a.shape[0]),
    ),
    "rowsum": (
        1, False, lambda a: a + kn.sum(a, axis=1, keepdims=True),
        lambda a: a + a.sum(axis=1, keepdims=True),
    ),
}  # fmt: skip
NAMES = sorted(OPS)


@st.composite
def programs(draw):
    """(n_vars, steps, fetches, updates): values 0-1 are feeds, 2.. Variables, then steps."""
    n_vars = draw(st.integers(1, 3))
    pool = 2 + n_vars
    steps = []
    for _ in range(draw(st.integers(4, 14))):
        name = draw(st.sampled_from(NAMES))
        args = tuple(draw(st.integers(0, pool - 1)) for _ in range(OPS[name][0]))
        steps.append((name, args))
        pool += 1
    fetches = draw(st.lists(st.integers(0, pool - 1), min_size=0, max_size=3))
    targets = draw(st.lists(st.integers(0, n_vars - 1), min_size=1, max_size=3, unique=True))
    updates = [(v, draw(st.integers(2, pool - 1))) for v in targets]
    return n_vars, steps, fetches, updates


def _evaluate(program, feeds, variables, fns):
    _, steps, fetches, updates = program
    values = [*feeds, *variables]
    for name, args in steps:
        values.append(fns(name)(*(values[a] for a in args)))
    return [values[k] for k in fetches], [(v, values[k]) for v, k in updates]


def _reference(program, feeds, init):
    """Two runs in NumPy: fetched values of each run, Variables after each."""
    variables = [v.copy() for v in init]
    runs = []
    for _ in range(2):
        outs, ups = _evaluate(program, feeds, variables, lambda n: OPS[n][3])
        outs = [np.array(o) for o in outs]
        new = [np.array(u) for _, u in ups]  # all read before any is written
        for (v, _), value in zip(ups, new):
            variables[v] = value
        runs.append((outs, [v.copy() for v in variables]))
    return runs


def _graph_runs(program, feeds, init, **options):
    with kn.Graph().as_default():
        xs = [kn.placeholder(kn.float64, x.shape, name=f"x{k}") for k, x in enumerate(feeds)]
        vs = [kn.Variable(v.copy(), name=f"v{k}") for k, v in enumerate(init)]
        outs, ups = _evaluate(program, xs, vs, lambda n: OPS[n][2])
        f = kn.function(xs, outs, updates={vs[v]: s for v, s in ups}, **options)
        runs = []
        for _ in range(2):
            got = f(*feeds)
            runs.append(([np.array(o) for o in got], [v.numpy().copy() for v in vs]))
    return runs


def _eager_runs(program, feeds, init):
    xs = [kn.tensor(x) for x in feeds]
    vs = [kn.tensor(v.copy()) for v in init]
    runs = []
    for _ in range(2):
        outs, ups = _evaluate(program, xs, vs, lambda n: OPS[n][2])
        outs = [np.array(o.numpy()) for o in outs]
        new = [np.array(u.numpy()) for _, u in ups]
        for (v, _), value in zip(ups, new):
            vs[v] = kn.tensor(value)
        runs.append((outs, [v.numpy().copy() for v in vs]))
    return runs


def _compare(mode, got, want, exact):
    for run, ((g_outs, g_vars), (w_outs, w_vars)) in enumerate(zip(got, want)):
        pairs = [(f"fetch {k}", g, w) for k, (g, w) in enumerate(zip(g_outs, w_outs))]
        pairs += [(f"variable v{k}", g, w) for k, (g, w) in enumerate(zip(g_vars, w_vars))]
        for what, g, w in pairs:
            if exact:
                np.testing.assert_array_equal(g, w, err_msg=f"{mode}, run {run}, {what}")
            else:
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12,
                                           err_msg=f"{mode}, run {run}, {what}")  # fmt: skip


@pytest.fixture
def tiny_fusion_blocks(monkeypatch):
    """Fused kernels cut even 4x4 outputs into blocks, as they cut large ones."""
    monkeypatch.setattr(fused_kernels, "UNBLOCKED_BYTES", 0)
    monkeypatch.setattr(fused_kernels, "BLOCK_BYTES", 2 * 8 * N)  # two rows a block
    monkeypatch.setattr(fused_kernels, "SMALL_BYTES", 0)


def _check(program, seed, n, modes):
    """Runs `program` on f64[n, n] values drawn from `seed` in each mode against NumPy."""
    rng = np.random.default_rng(seed)
    feeds = [rng.standard_normal((n, n)) for _ in range(2)]
    init = [rng.standard_normal((n, n)) for _ in range(program[0])]
    exact = all(OPS[name][1] for name, _ in program[1])
    want = _reference(program, feeds, init)
    runs = {
        "planned": lambda: _graph_runs(program, feeds, init),
        "fuse-all": lambda: _graph_runs(program, feeds, init, passes=FUSE_ALL),
        "unplanned": lambda: _graph_runs(program, feeds, init, plan=False),
        "eager": lambda: _eager_runs(program, feeds, init),
    }
    for mode in modes:
        _compare(mode, runs[mode](), want, exact)


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
@given(program=programs(), seed=st.integers(0, 2**16))
def test_planned_unplanned_eager_agree_with_numpy(tiny_fusion_blocks, program, seed):
    _check(program, seed, N, ("planned", "fuse-all", "unplanned", "eager"))


# f64[384, 384] is 1.1 MiB: above the CPU's fusion threshold, so the default pipeline fuses
# groups of 4+ ops into cache-blocked kernels with their real block sizes.
LARGE = 384


@settings(max_examples=max(EXAMPLES // 100, 5), deadline=None,
          suppress_health_check=list(HealthCheck), database=None)  # fmt: skip
@given(program=programs(), seed=st.integers(0, 2**16))
def test_large_programs_above_fusion_thresholds_agree_with_numpy(program, seed):
    _check(program, seed, LARGE, ("planned", "fuse-all"))
