"""relu and clip: values as NumPy's (NaN, ±inf, -0.0) and gradients at ties as PyTorch's, in
graph mode (kn.grad), eager mode (the tape) and through kn.compile, fused or not.

Regression: relu was maximum(x, 0) and clip maximum/minimum, whose vjp shares the cotangent
half and half at ties: relu'(0) was 0.5 (PyTorch: 0), clip's at a bound 0.5 (PyTorch: 1).
"""

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY
from kiln.graph.printer import format_graph

MODES = ["graph", "eager", "compiled"]
NAN, INF = np.nan, np.inf
SPECIALS = [-INF, -2.0, -0.0, 0.0, 0.5, INF, NAN]


def run(mode, fn, *arrays):
    """fn(*arrays) as NumPy, in `mode`."""
    if mode == "graph":
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
            f = kn.function(xs, fn(*xs))
        return np.asarray(f(*arrays))
    f = kn.compile(fn) if mode == "compiled" else fn
    return f(*(kn.tensor(a) for a in arrays)).numpy()


def grads(mode, fn, *arrays):
    """The gradients of sum(fn(*arrays)) with respect to every array, in `mode`."""
    if mode == "graph":
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
            f = kn.function(xs, kn.grad(kn.sum(fn(*xs)), xs))
        return [np.asarray(g) for g in f(*arrays)]
    f = kn.compile(fn) if mode == "compiled" else fn
    ts = [kn.tensor(a, requires_grad=True) for a in arrays]
    kn.sum(f(*ts)).backward()
    return [t.grad.numpy() for t in ts]


def assert_same(got, want):
    """Same dtype, values and NaNs, and the same sign on every zero."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg="signs")


# -- relu ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_values_are_numpys_maximum(mode, dtype):
    x = np.array(SPECIALS, dtype)
    assert_same(run(mode, kn.relu, x), np.maximum(x, 0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_gradient_is_pytorchs_at_zero_and_nan(mode, dtype):
    x = np.array([-INF, -1.0, -0.0, 0.0, 1e-30, 2.0, INF, NAN], dtype)
    (g,) = grads(mode, kn.relu, x)
    # torch 2.13: 1 at NaN (its threshold_backward passes the gradient unless y <= 0)
    assert_same(g, np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64"])
def test_relu_of_ints_and_bools_has_numpys_dtype(dtype):
    x = np.array([0, 1, 3, -2, 5]).astype(dtype)  # uint8: -2 wraps around
    want = np.maximum(x, 0)
    assert_same(kn.relu(x), want)
    for mode in MODES:
        assert_same(run(mode, kn.relu, x), want)


def test_relu_is_one_primitive_on_symbols_tensors_arrays_and_scalars():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = kn.clip(kn.relu(x), None, 2.0)
    assert format_graph(y.graph, sites=False) == (
        "{ lambda x:f32[3] .\n"
        "    t0:f32[3] = relu x\n"
        "    t1:f32[3] = clip t0 -inf:f32[] 2.0:f32[]\n"
        "  in (t1) }\n"
    )
    assert type(kn.relu(np.float32([-1.0, 2.0]))) is np.ndarray
    assert isinstance(kn.relu(kn.tensor([-1.0, 2.0])), kn.Tensor)
    assert_same(kn.relu(kn.tensor([-1.0, 2.0])).numpy(), np.float32([0.0, 2.0]))
    assert kn.relu(-3) == 0 and kn.relu(2.5) == 2.5
    assert "relu" in REGISTRY and "elementwise" in REGISTRY["relu"].tags


# -- clip: values and dtypes -------------------------------------------------------------------

BOUNDS = [
    (-1, 2),  # Python ints
    (-0.5, 1.5),  # Python floats
    (None, 1),
    (0.5, None),
    (np.float32(-1.0), np.float64(1.0)),  # NumPy scalars: strong
    (np.array([-1.0, 0.0, -2.0, 0.0, 3.0, 1.0], np.float64), 2),  # an array bound
    (np.array([-1, 0, -2, 0, 3, 1], np.int8), np.array([[1], [2]], np.int8)),  # broadcasting
    (2, -1),  # min above max: max everywhere
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
def test_clip_values_are_numpys_and_dtype_pytorchs(dtype, bounds):
    lo, hi = bounds
    x = np.array([-3, -1, 0, 1, 2, 5], dtype)
    want = np.clip(x, lo, hi).astype(_clamp_dtype(x, lo, hi))
    assert_numpy_values(kn.clip(x, lo, hi), want)
    for mode in MODES:
        assert_numpy_values(run(mode, lambda v: kn.clip(v, lo, hi), x), want)


def _clamp_dtype(x, *bounds):
    """PyTorch's `clamp` dtype: array bounds promote with x (as NumPy's do here); Python and
    NumPy scalars are weak, a float one making an integer x the default float (float32)."""
    dtype = x.dtype
    for b in bounds:
        if isinstance(b, np.ndarray):
            dtype = np.promote_types(dtype, b.dtype)
        elif isinstance(b, (float, np.floating)) and dtype.kind != "f":
            dtype = np.dtype(np.float32)
    return dtype


def assert_numpy_values(got, want):
    """Dtype and values (NumPy's clip returns x or the bound at a tie, by loop: a zero's sign
    there is not pinned)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_clip_nan_and_inf_are_numpys(mode, dtype):
    x = np.array(SPECIALS, dtype)
    for lo, hi in [(-1.0, 1.0), (None, 0.25), (-INF, INF), (NAN, 1.0), (0.0, NAN)]:
        want = np.clip(x, lo, hi)
        assert_numpy_values(run(mode, lambda v, lo=lo, hi=hi: kn.clip(v, lo, hi), x), want)
    lo, hi = np.array([NAN, -1, -1, 0, 0, 0, 0], dtype), np.array([1, 1, NAN, 1, 1, 1, 1], dtype)
    assert_numpy_values(run(mode, kn.clip, x, lo, hi), np.clip(x, lo, hi))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: kn.clip(x),
        lambda x: kn.clamp(x, None, None),
        lambda x: kn.tensor(x).clamp(),
        lambda x: kn.tensor(x).clip_(),
    ],
)
def test_clip_without_bounds_raises_as_torch(call):
    # torch 2.13: torch.clamp(x), x.clamp(), x.clip_() raise RuntimeError "torch.clamp: At
    # least one of 'min' or 'max' must not be None" (NumPy's clip returned x: kiln did too)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        call(np.float32([-1.0, 2.0]))


# -- clip: gradients -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_gradient_is_pytorchs_at_the_bounds(mode, dtype):
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, -INF, INF, NAN], dtype)
    cases = {
        (-1.0, 1.0): [0, 1, 1, 1, 0, 0, 0, 0],
        (-1.0, None): [0, 1, 1, 1, 1, 0, 1, 0],
        (None, 1.0): [1, 1, 1, 1, 0, 1, 0, 0],
        (1.0, -1.0): [0, 0, 0, 0, 0, 0, 0, 0],  # min above max: y is max throughout
    }
    for (lo, hi), want in cases.items():
        (g,) = grads(mode, lambda v, lo=lo, hi=hi: kn.clip(v, lo, hi), x)
        assert_same(g, np.array(want, dtype))


@pytest.mark.parametrize("mode", MODES)
def test_clip_tensor_bounds_get_their_gradients(mode):
    # below, at min, inside, at max, above, min > max twice, all equal, NaN
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 0.5, -3.0, 1.0, NAN])
    lo = np.array([-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0])
    hi = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    assert_same(run(mode, kn.clip, x, lo, hi), np.array([-1, -1, 0, 1, 1, 0, 0, 1, NAN]))
    gx, glo, ghi = grads(mode, kn.clip, x, lo, hi)
    assert_same(gx, np.array([0, 1, 1, 1, 0, 0, 0, 1, 0.0]))
    assert_same(glo, np.array([1, 0, 0, 0, 0, 0, 0, 0, 0.0]))
    assert_same(ghi, np.array([0, 0, 0, 0, 1, 1, 1, 0, 0.0]))


@pytest.mark.parametrize("mode", MODES)
def test_clip_broadcast_bounds_sum_their_gradients(mode):
    x = np.array([[-2.0, 0.0, 3.0], [-1.0, 0.5, 4.0]])
    lo, hi = np.array(-1.0), np.array([1.0, 1.0, 3.0])
    gx, glo, ghi = grads(mode, kn.clip, x, lo, hi)
    assert_same(gx, np.array([[0, 1, 1], [1, 1, 0.0]]))
    assert_same(glo, np.array(1.0))
    assert_same(ghi, np.array([0, 0, 1.0]))


def test_clip_of_a_float32_tensor_with_a_float64_bound_gives_float32_gradients():
    x = kn.tensor(np.float32([-2.0, 0.0, 2.0]), requires_grad=True)
    lo = kn.tensor(np.float64([-1.0, -1.0, -1.0]), requires_grad=True)
    # (a tensor max beside the tensor min: PyTorch's clamp refuses a tensor and a number)
    y = kn.clip(x, lo, kn.tensor(np.float64([1.0, 1.0, 1.0])))
    assert y.dtype == np.float64
    kn.sum(y).backward()
    assert_same(x.grad.numpy(), np.float32([0, 1, 0]))
    assert_same(lo.grad.numpy(), np.float64([1, 0, 0]))


# -- fused -----------------------------------------------------------------------------------

PROGRAM = (
    ("mul", (("in", 0), ("in", 1)), ()),
    ("relu", (("eq", 0),), ()),
    ("clip", (("eq", 1), ("in", 1), ("in", 2)), ()),
)


def fused_ref(a, b, c):
    return np.clip(np.maximum(a * b, 0), b, c)


@pytest.mark.parametrize("n", [8, 16, 300000])  # whole arrays (or numba when hot), blocked
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_fused_relu_and_clip_give_numpys_values(n, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, n).astype(dtype)
    b = rng.integers(-1, 2, n).astype(dtype)
    if dtype != "int32":
        a[: len(SPECIALS)] = np.array(SPECIALS, dtype)[:n]
        b[3:5] = NAN
    c = np.asarray(2, dtype)
    with np.errstate(invalid="ignore"):
        want = fused_ref(a, b, c)
    for _ in range(3):  # the second call may take the numba loop
        with np.errstate(invalid="ignore"):  # inf * 0
            got = REGISTRY["fused"].impl(np, a, b, c, program=PROGRAM, outputs=(2,))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_numba_loop_of_relu_and_clip_gives_numpys_values():
    pytest.importorskip("numba")
    from kiln.ops import fused as fused_ops

    x = np.array([*SPECIALS, -1.0, 1.5, 2.0, 3.0], np.float32)
    lo = np.array([-1, -1, -1, NAN, -1, -1, -1, 2.0, 1.5, 3.0, 3.0], np.float32)
    hi = np.array([1, 1, 1, 1, 1, NAN, 1, 1.0, 1.5, 2.0, 3.0], np.float32)
    want = fused_ref(x, lo, hi)
    for _ in range(3):
        got = REGISTRY["fused"].impl(np, x, lo, hi, program=PROGRAM, outputs=(2,))
        np.testing.assert_array_equal(got, want)
    signature = fused_ops.compiled(PROGRAM, (2,)).signature((x.dtype, lo.dtype, hi.dtype))
    assert signature.loop, "relu and clip are lowered to the numba loop"
