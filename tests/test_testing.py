"""kn.testing: assert_close (tolerances and messages), gradcheck / gradgradcheck, strategies."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kiln as kn
from kiln.frontend.core import unary_function
from kiln.graph.opdef import REGISTRY
from kiln.testing import assert_close, gradcheck, gradgradcheck
from kiln.testing import strategies as kst

# -- assert_close ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, rtol, atol",
    [("float16", 1e-3, 1e-5), ("float32", 1.3e-6, 1e-5), ("float64", 1e-7, 1e-7)],
)
def test_assert_close_default_tolerances_follow_dtype(dtype, rtol, atol):
    expected = np.array([0.0, 1.0, -100.0], dtype)
    inside = (expected.astype(np.float64) + 0.5 * (atol + rtol * np.abs(expected))).astype(dtype)
    outside = expected.astype(np.float64) + 4 * (atol + rtol * np.abs(expected))
    outside = outside.astype(dtype)
    assert_close(inside, expected)
    assert_close(expected, expected)
    with pytest.raises(AssertionError, match=f"rtol={rtol:g}, atol={atol:g}"):
        assert_close(outside, expected)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "bool"])
def test_assert_close_ints_and_bools_are_exact(dtype):
    a = np.array([0, 1, 1], dtype)
    assert_close(a, a.copy())
    b = np.array([0, 1, 0], dtype)
    with pytest.raises(AssertionError, match="rtol=0, atol=0"):
        assert_close(a, b)


def test_assert_close_message_names_worst_element():
    actual = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    expected = np.array([[1.0, 2.1, 3.0], [4.0, 5.0, 9.0]])
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    message = str(info.value)
    assert "arrays are not close (float64, shape (2, 3), rtol=1e-07, atol=1e-07)" in message
    assert "mismatched elements: 2 / 6 (33.3%)" in message
    assert "worst element at index (1, 2): actual 6.0, expected 9.0" in message
    assert "abs error 3, rel error 0.333333" in message
    assert "greatest abs error 3 at (1, 2); greatest rel error 0.333333 at (1, 2)" in message


def test_assert_close_worst_element_is_the_one_most_over_its_tolerance():
    # (0,) has the larger absolute error but a large expected value; (1,) is further off.
    actual = np.array([1001.0, 0.01], np.float32)
    expected = np.array([1000.0, 0.0], np.float32)
    with pytest.raises(AssertionError, match=r"worst element at index \(1,\)"):
        assert_close(actual, expected, rtol=1e-2, atol=1e-3)


def test_assert_close_explicit_tolerances():
    assert_close(np.float64(1.05), np.float64(1.0), rtol=0.1, atol=0.0)
    with pytest.raises(AssertionError):
        assert_close(np.float64(1.05), np.float64(1.0), rtol=0.01, atol=0.0)
    with pytest.raises(ValueError, match="both rtol and atol"):
        assert_close(1.0, 1.0, rtol=0.1)


def test_assert_close_shape_and_dtype_checks():
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(2, 3\), expected \(3, 2\)"):
        assert_close(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(1,\), expected \(\)"):
        assert_close(np.zeros(1), np.zeros(()))  # no broadcasting
    with pytest.raises(AssertionError, match="dtypes differ: actual float32, expected float64"):
        assert_close(np.zeros(2, np.float32), np.zeros(2))
    assert_close(np.zeros(2, np.float32), np.zeros(2), check_dtype=False)
    with pytest.raises(AssertionError, match=r"float32 vs float64.*rtol=1.3e-06, atol=1e-05"):
        assert_close(np.ones(2, np.float32), np.zeros(2), check_dtype=False)


def test_assert_close_python_scalars_and_lists_are_weak():
    assert_close(np.float32(0.1), 0.1)  # 0.1 rounded to float32 first
    assert_close(np.array([1, 2], np.int8), [1, 2])
    assert_close(3, np.int64(3))
    assert_close(2.5, 2.5)


def test_assert_close_nan_and_inf():
    with pytest.raises(AssertionError, match="pass equal_nan=True"):
        assert_close(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert_close(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=True)
    assert_close(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))
    with pytest.raises(AssertionError, match="actual inf, expected -inf"):
        assert_close(np.array([np.inf]), np.array([-np.inf]))
    with pytest.raises(AssertionError, match="actual 1e[+]300, expected inf"):
        assert_close(np.array([1e300]), np.array([np.inf]), rtol=1.0, atol=0.0)
    with pytest.raises(AssertionError, match=r"worst element at index \(1,\): actual nan"):
        assert_close(np.array([1.0, np.nan]), np.array([1.5, 2.0]), rtol=1.0, atol=0.0)


def test_assert_close_zero_d_and_size_zero():
    assert_close(np.zeros((0, 3)), np.zeros((0, 3)))
    with pytest.raises(AssertionError, match=r"worst element at index \(\): actual 3.0"):
        assert_close(np.array(3.0), np.array(3.5))


def test_assert_close_accepts_variables():
    w = kn.Variable(np.array([1.0, 2.0], np.float32), name="w")
    assert_close(w, np.array([1.0, 2.0], np.float32))
    assert_close(w, [1.0, 2.0])
    with pytest.raises(AssertionError, match="actual 2.0, expected 3.0"):
        assert_close(w, [1.0, 3.0])


def test_assert_close_is_exported():
    assert kn.testing.assert_close is assert_close


# -- gradcheck ------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
W = RNG.standard_normal((4, 2))
B = RNG.standard_normal(2)

CORRECT = {
    "exp": (kn.exp, [X]),
    "tanh": (kn.tanh, [X]),
    "matmul": (kn.matmul, [X, W]),
    "mean-of-squares": (lambda x: kn.mean(x * x), [X]),
    "softmax": (lambda x: kn.softmax(x, axis=-1), [X]),
    "log-softmax-axis0": (lambda x: kn.log_softmax(x, axis=0), [X]),
    "mlp-broadcast-bias": (lambda x, w, b: kn.sigmoid(x @ w + b), [X, W, B]),
    "scalar-0d": (lambda x: x * x * x, [np.float64(1.5)]),
    "unused-input": (lambda x, w: kn.exp(x), [X, W]),
    "int-labels": (lambda x, labels: kn.cross_entropy(x, labels), [X, np.array([0, 3, 1])]),
}


@pytest.mark.parametrize("case", CORRECT)
def test_gradcheck_passes_on_correct_gradients(case):
    fn, inputs = CORRECT[case]
    assert gradcheck(fn, inputs) is True


def test_gradcheck_inputs_keep_their_values():
    x = X.copy()
    gradcheck(kn.tanh, [x])
    np.testing.assert_array_equal(x, X)


def test_gradcheck_fails_readably_when_the_gradient_is_stopped():
    with pytest.raises(AssertionError) as info:
        gradcheck(lambda x, w: kn.stop_gradient(x) @ w, [X, W])
    message = str(info.value)
    assert message.startswith("gradcheck failed for input 0 (shape (3, 4)): 12 of 12 elements")
    assert "worst element (" in message and "analytic 0, numeric " in message
    assert "abs error" in message and "rel error 1" in message
    assert "d sum(y * r) / d input 0" in message and "y of shape (3, 2)" in message


def _wrong_tanh_vjp(ct, y, x):
    return (ct * (1 - y),)  # should be 1 - y * y


def test_gradcheck_fails_on_a_wrong_vjp(monkeypatch):
    op = dataclasses.replace(REGISTRY["tanh"], vjp=_wrong_tanh_vjp)
    monkeypatch.setitem(REGISTRY, "tanh", op)
    wrong_tanh = unary_function(op)  # kn.tanh holds the registered op
    x = np.array([[0.5, -1.0], [2.0, 0.0]])
    with pytest.raises(AssertionError) as info:
        gradcheck(lambda a: kn.sum(wrong_tanh(a)), [x])
    message = str(info.value)
    assert "gradcheck failed for input 0 (shape (2, 2)): 3 of 4 elements differ" in message
    # the worst element is the one where 1 - y and 1 - y**2 differ most: x = -1
    expected = 1 - np.tanh(-1.0)
    assert f"worst element (0, 1): analytic {expected:g}, numeric {1 - np.tanh(-1.0) ** 2:g}" in (
        message
    )
    assert "analytic: d y / d input 0 for y = fn(*inputs)" in message


def test_gradcheck_reports_the_failing_input_index():
    with pytest.raises(AssertionError, match="for input 1 "):
        gradcheck(lambda x, w: x @ kn.stop_gradient(w) + kn.sum(w), [X, W])


def test_gradcheck_tolerances_are_used():
    # analytic 1, numeric 1.0001: an abs error of 1e-4
    fn = lambda x: kn.stop_gradient(x) * 1e-4 + x
    gradcheck(fn, [np.array([1.0, 2.0])], atol=1e-3, rtol=0.0)
    with pytest.raises(AssertionError):
        gradcheck(fn, [np.array([1.0, 2.0])], atol=1e-5, rtol=0.0)


def test_gradcheck_rejects_bad_fn_and_inputs():
    with pytest.raises(TypeError, match="one Symbol"):
        gradcheck(lambda x: [x, x], [X])
    with pytest.raises(TypeError, match="float Symbol"):
        gradcheck(lambda x: kn.greater(x, 0.0), [X])
    with pytest.raises(ValueError, match="at least one float input"):
        gradcheck(lambda i: kn.cast(i, kn.float64), [np.array([1, 2])])


def test_gradcheck_leaves_the_default_graph_alone():
    before = len(kn.get_default_graph().nodes)
    gradcheck(kn.exp, [X])
    assert len(kn.get_default_graph().nodes) == before


# -- gradgradcheck --------------------------------------------------------------------------

SECOND_ORDER = {
    "exp": (kn.exp, [X]),
    "tanh": (kn.tanh, [X]),
    "matmul": (kn.matmul, [X, W]),
    "cube-times-sin": (lambda x: x * x * x * kn.sin(x), [X]),
    "log-of-square": (lambda x: kn.log(x * x + 1.0), [X]),
}


@pytest.mark.parametrize("case", SECOND_ORDER)
def test_gradgradcheck_passes_on_correct_second_derivatives(case):
    fn, inputs = SECOND_ORDER[case]
    assert gradgradcheck(fn, inputs) is True


# Regression: broadcast_to had no vjp and autodiff dropped cotangents through it, so second
# derivatives through reductions were wrong.
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: kn.sum(x * x) * kn.sum(x * x),
        lambda x: kn.softmax(x, axis=-1),
        lambda x: kn.logsumexp(x, axis=1),
    ],
    ids=["square-of-sum", "softmax", "logsumexp"],
)
def test_gradgradcheck_through_reductions(fn):
    assert gradgradcheck(fn, [X])


def _first_order_only_tanh_vjp(ct, y, x):
    return (ct * (1 - kn.stop_gradient(y) ** 2),)  # right value, no second derivative


def test_gradgradcheck_fails_when_only_the_first_order_is_right(monkeypatch):
    op = dataclasses.replace(REGISTRY["tanh"], vjp=_first_order_only_tanh_vjp)
    monkeypatch.setitem(REGISTRY, "tanh", op)
    first_order_tanh = unary_function(op)
    x = np.array([0.5, -1.0, 2.0])
    assert gradcheck(first_order_tanh, [x])
    with pytest.raises(AssertionError) as info:
        gradgradcheck(first_order_tanh, [x])
    assert str(info.value).startswith(
        "gradcheck failed for gradient of the gradient, input 0 (shape (3,))"
    )


# -- strategies -----------------------------------------------------------------------------


@given(kst.shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_strategies_shapes_respect_bounds(shape):
    assert 1 <= len(shape) <= 3 and all(2 <= d <= 4 for d in shape)


@given(st.data())
def test_strategies_broadcastable_shapes_broadcast(data):
    shape = data.draw(kst.shapes())
    other = data.draw(kst.broadcastable_shapes(shape))
    assert np.broadcast_shapes(shape, other) is not None
    x = kn.placeholder(kn.float32, shape, name="x")
    y = kn.placeholder(kn.float32, other, name="y")
    assert (x + y).shape == np.broadcast_shapes(shape, other)


@given(kst.arrays(kst.dtypes("float"), kst.shapes(max_dims=2)))
def test_strategies_arrays_are_finite_by_default(a):
    assert a.dtype in (np.float16, np.float32, np.float64)
    assert np.isfinite(a).all()


@given(kst.arrays("int8", (3,), elements=st.integers(-2, 2)))
def test_strategies_arrays_take_elements(a):
    assert a.dtype == np.int8 and a.shape == (3,) and (np.abs(a) <= 2).all()


@given(kst.dtypes(("int", "uint", "bool")))
def test_strategies_dtypes_by_kind(dtype):
    assert dtype.kind in "iub"


def test_strategies_reject_unknown_kind():
    with pytest.raises(ValueError, match="unknown dtype kind"):
        kst.dtypes("quaternion")


def test_kiln_imports_without_hypothesis():
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import kiln as kn, numpy as np\n"
        "kn.testing.assert_close(np.ones(2), np.ones(2))\n"
        "assert kn.testing.gradcheck(kn.exp, [np.ones(2)])\n"
        "try:\n"
        "    kn.testing.strategies.shapes()\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ImportError: kiln.testing.strategies needs hypothesis" in out.stdout
