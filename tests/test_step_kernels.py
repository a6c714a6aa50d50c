"""The small kernels of a training step (issue 17): the reductions, take_along_axis and its
scatter, and the views of the generated program, on their fast paths, give NumPy's bits."""

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.ops.movement import _scatter_along, _take_along

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("op, fn", [("reduce_sum", np.sum), ("reduce_mean", np.mean),
                                    ("reduce_max", np.max), ("reduce_prod", np.prod)])  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.bool_])
def test_reductions_give_numpys_bits(op, fn, dtype):
    x = (RNG.standard_normal((5, 7, 3)) * 3).astype(dtype)
    impl = REGISTRY[op].impl
    for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2), ()]:
        for keepdims in (False, True):
            got = impl(np, x, axes=axes, keepdims=keepdims)
            want = fn(x, axis=axes, keepdims=keepdims)  # NumPy's own function: the reference
            assert np.asarray(got).dtype == np.asarray(want).dtype
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (axes, keepdims)
            out = np.empty(np.shape(want), np.asarray(want).dtype)
            assert impl(np, x, out=out, axes=axes, keepdims=keepdims) is out
            assert out.tobytes() == np.asarray(want).tobytes()


def test_mean_of_an_empty_axis_is_numpys_nan():
    x = np.zeros((0, 3), np.float32)
    with pytest.warns(RuntimeWarning):
        got = REGISTRY["reduce_mean"].impl(np, x, axes=(0,), keepdims=False)
    assert np.isnan(got).all() and got.shape == (3,)


def _reference_scatter(ct, idx, shape, axis):
    # the general path's formula: zeros, ct added at the index grids (np.add.at)
    out = np.zeros(shape, ct.dtype)
    grids = np.ix_(*(np.arange(n) for n in ct.shape))
    np.add.at(out, tuple(idx if a == axis else g for a, g in enumerate(grids)), ct)
    return out


@pytest.mark.parametrize("shape, k", [((16, 10), 1), ((4, 5, 7), 3), ((6, 4), 4), ((3, 5), 0)])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint8])
def test_along_last_axis_by_flat_offsets(shape, k, index_dtype):
    x = RNG.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::3] = -0.0
    idx = RNG.integers(0, shape[-1], (*shape[:-1], k)).astype(index_dtype)
    axis = len(shape) - 1
    want = np.take_along_axis(x, idx, axis=axis)
    assert _take_along(np, x, idx, axis=axis).tobytes() == want.tobytes()
    out = np.full(want.shape, 7, np.float32)
    assert _take_along(np, x, idx, out=out, axis=axis) is out and out.tobytes() == want.tobytes()
    ct = RNG.standard_normal(idx.shape).astype(np.float32)
    ct.reshape(-1)[:1] = -0.0  # 0 + -0.0 is +0.0: the general path's bits, not an assignment
    into = np.full(shape, 7, np.float32)
    got = _scatter_along(np, ct, idx, out=into, axis=axis, shape=shape)
    assert got is into and got.tobytes() == _reference_scatter(ct, idx, shape, axis).tobytes()


def test_along_axis_out_of_range_still_raises():
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(kn.errors.IndexOutOfRangeError):
        _take_along(np, x, np.array([[0], [3], [1], [2]]), axis=1)
    with pytest.raises(kn.errors.IndexOutOfRangeError):
        _scatter_along(np, np.ones((4, 1), np.float32), np.array([[0], [1], [-1], [2]]),
                       axis=1, shape=(4, 3))  # fmt: skip


def test_views_are_array_methods_in_the_generated_program():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n", 6), name="x")
        w = kn.Variable(RNG.standard_normal((4, 6)).astype(np.float32), name="w")
        y = kn.reshape(x @ w.T, (-1,))
        f = kn.function([x], y)
    a = RNG.standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_array_equal(f(a), (a @ w.numpy().T).reshape(-1))
    assert ".transpose(a" in f.source and ".reshape(a" in f.source
    b = RNG.standard_normal((5, 6)).astype(np.float32)  # another batch size: the attrs rebound
    np.testing.assert_array_equal(f(b), (b @ w.numpy().T).reshape(-1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [300, (1 << 16) + 77])  # one zero block, and two
def test_relu_against_zero_blocks_gives_numpys_bits(dtype, size):
    x = RNG.standard_normal(size).astype(dtype)
    x[:6] = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf]
    want = np.maximum(x, dtype(0))  # NumPy's maximum against a scalar: the reference
    relu = REGISTRY["relu"].impl
    assert relu(np, x).tobytes() == want.tobytes()
    out = np.empty_like(x)
    assert relu(np, x, out=out) is out and out.tobytes() == want.tobytes()
    assert relu(np, x, out=x) is x and x.tobytes() == want.tobytes()  # in place
    strided = np.repeat(want, 2)[::2]  # not C-ordered: NumPy's path
    assert relu(np, strided).tobytes() == want.tobytes()


def test_small_fused_group_runs_straight_line(monkeypatch):
    # a softmax-like group on f32[128, 10] (5 KiB, transcendental: no numba loop) is fused
    # for being small; it runs as straight-line calls, not through the blocked path
    import kiln.ops.fused as fused
    from kiln.runtime import program

    def blocked(*args):
        raise AssertionError("the blocked path ran")

    monkeypatch.setattr(fused, "_run_blocked", blocked)
    monkeypatch.setattr(program, "NUMPY_SMALL_MIN_OPS", 2)  # fused without numba too
    with kn.Graph().as_default():
        z = kn.placeholder(kn.float32, (128, 10), name="z")
        s = kn.placeholder(kn.float32, (128, 1), name="s")
        y = kn.exp(z - s) / (kn.exp(z) + 1.0)
        f = kn.function([z, s], y)
    a = RNG.standard_normal((128, 10)).astype(np.float32)
    b = RNG.standard_normal((128, 1)).astype(np.float32)
    assert "fused" in [n.op.name for n in f.program.graph.nodes]
    np.testing.assert_allclose(f(a, b), np.exp(a - b) / (np.exp(a) + 1), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.filterwarnings("ignore:invalid value")  # inf * 0 in NumPy's reference
def test_relu_grad_compiled_loop_gives_numpys_bits(dtype, monkeypatch):
    pytest.importorskip("numba")  # started: the loop need not wait COLD_AFTER calls
    import kiln.ops.elementwise as elementwise

    loops = elementwise._RELU_GRAD_LOOPS
    monkeypatch.setattr(loops, "after", 1)  # built on the first large call
    monkeypatch.setattr(loops, "state", dict.fromkeys(loops.state, 0))
    n = elementwise._RELU_GRAD_LOOP_SIZE + 13
    ct = RNG.standard_normal(n).astype(dtype)
    y = np.maximum(RNG.standard_normal(n), 0).astype(dtype)
    ct[:8] = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, -1, 1]
    y[:12] = [0, 1, 0, 1, 0, 0, 0, np.nan, -0.0, np.nan, -1, np.inf]
    # the reference: torch 2.13's threshold_backward, a select (0 where y <= 0, even for a NaN
    # or inf cotangent; the cotangent where y is NaN)
    want = np.where(y <= 0, dtype(0), ct)
    relu_grad = REGISTRY["relu_grad"].impl
    assert relu_grad(np, ct, y).tobytes() == want.tobytes()
    out = np.empty((n,), dtype)
    assert relu_grad(np, ct, y, out=out) is out and out.tobytes() == want.tobytes()
    inplace = ct.copy()
    assert relu_grad(np, inplace, y, out=inplace) is inplace
    assert inplace.tobytes() == want.tobytes()
    shifted = np.concatenate([ct, ct[:1]])  # out overlapping ct by all but one element
    got = relu_grad(np, shifted[:-1], y, out=shifted[1:])
    assert got.tobytes() == want.tobytes()
    assert relu_grad(np, ct[::-1], y[::-1]).tobytes() == want[::-1].tobytes()  # strided
    assert type(loops.state[np.dtype(dtype)]) is tuple  # the loops were built and ran
