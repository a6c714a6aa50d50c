"""`check_numerics=True` reaches region bodies: a NaN or Inf made inside a scan, while_loop or
cond body raises NumericsError naming the body's node, its site and the iteration (or branch),
and the failed run changes no Variable. Without the option, bodies are not checked."""

import numpy as np
import pytest

import kiln as kn


def _scan_program(check):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        v = kn.Variable(np.zeros(3, np.float32), name="v")

        def body(c, xi):
            y = kn.log(c + xi)  # NaN where c + xi < 0: the second step
            return y, y

        c, _ = kn.scan(body, kn.zeros((3,)) + 1.0, kn.stack([x, x - 5.0, x]))
        return v, kn.function([x], c, updates={v: v + 1.0}, check_numerics=check)


def test_scan_body_nan_names_the_body_node_and_the_step_and_changes_nothing():
    v, f = _scan_program(check=True)
    with pytest.raises(kn.NumericsError) as info:
        f(np.ones(3, np.float32))
    text = str(info.value)
    assert "op log" in text and "test_region_numerics.py:" in text, text
    assert "(in the scan's body, iteration 1)" in text, text
    np.testing.assert_array_equal(v.value, np.zeros(3, np.float32))  # no update committed


def test_unchecked_program_does_not_check_bodies():
    v, f = _scan_program(check=False)
    assert np.isnan(f(np.ones(3, np.float32))).all()
    np.testing.assert_array_equal(v.value, np.ones(3, np.float32))


def test_while_loop_body_inf_names_the_iteration():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (), name="x")

        def cond(c):
            return c[0] < 4.0

        def body(c):
            i, value = c
            return i + 1.0, value / (3.0 - i)  # 1/0 at the fourth iteration (i = 3)

        out = kn.while_loop(cond, body, (kn.zeros(()), x))
        f = kn.function([x], out[1], check_numerics=True)
    with pytest.raises(kn.NumericsError, match=r"op div.*iteration 3\)"):
        f(np.float32(1.0))


def test_cond_branch_nan_names_the_branch():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = kn.cond(x.sum() > 0, lambda a: kn.sqrt(-a), lambda a: a * 2.0, x)
        f = kn.function([x], y, check_numerics=True)
    np.testing.assert_array_equal(f(np.array([-1.0, -2.0], np.float32)), [-2.0, -4.0])
    with pytest.raises(kn.NumericsError, match=r"op sqrt.*in the cond's true branch"):
        f(np.array([1.0, 2.0], np.float32))
