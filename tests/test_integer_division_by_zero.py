"""Integer `//`, `%`, `fmod` and `div(rounding_mode=...)` by zero raise on the CPU, as in
PyTorch 2.13 (`RuntimeError: ZeroDivisionError`), where NumPy's kernels warn and give 0;
eagerly, in graph mode (naming the node) and under `kn.compile`. A step that fails so changes
no Variable. Float division by zero gives inf or NaN, as in PyTorch."""

import numpy as np
import pytest

import kiln as kn

A, B = [5, -7, 3], [2, 0, 1]
CALLS = {
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "fmod": lambda a, b: kn.fmod(a, b),
    "trunc": lambda a, b: kn.div(a, b, rounding_mode="trunc"),
    "floor": lambda a, b: kn.div(a, b, rounding_mode="floor"),
    "scalar": lambda a, b: a // 0,
    "remainder": lambda a, b: kn.remainder(a, b),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", [kn.int64, kn.int32, kn.uint8])
def test_eager_integer_division_by_zero_raises(name, dtype):
    a, b = kn.tensor(A if dtype != kn.uint8 else [5, 7, 3], dtype=dtype), kn.tensor(B, dtype=dtype)
    with pytest.raises(kn.IntegerDivisionByZeroError, match="integer division by zero") as e:
        CALLS[name](a, b)
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, ZeroDivisionError)
    assert "test_integer_division_by_zero.py" in str(e.value)  # the caller's line


@pytest.mark.parametrize("name", sorted(CALLS))
def test_nonzero_divisors_and_floats_are_unchanged(name):
    a, b = kn.tensor(A), kn.tensor([2, 3, -1])
    # Python's // and %, C's fmod (truncated), on A and [2, 3, -1]
    want = {"floordiv": [2, -3, -3], "mod": [1, 2, 0], "fmod": [1, -1, 0], "trunc": [2, -2, -3],
            "floor": [2, -3, -3], "remainder": [1, 2, 0]}  # fmt: skip
    if name != "scalar":
        assert CALLS[name](a, b).tolist() == want[name]
    x = kn.tensor([1.0, -1.0, 0.0])
    got = CALLS[name](x, kn.zeros(3)).numpy()
    assert np.isnan(got).any() or np.isinf(got).any()  # float: no error, as PyTorch


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = torch.tensor(A), torch.tensor(B)
    calls = [lambda: a // b, lambda: a % b, lambda: torch.fmod(a, b), lambda: a // 0,
             lambda: torch.remainder(a, b), lambda: torch.div(a, b, rounding_mode="trunc"),
             lambda: torch.div(a, b, rounding_mode="floor")]  # fmt: skip
    for call in calls:  # what kiln's errors stand for
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call()
    assert torch.isinf(torch.tensor([1.0]) // 0).all()


def test_graph_mode_names_the_node_and_a_failed_step_changes_nothing():
    with kn.Graph().as_default():
        w = kn.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="w")
        x = kn.placeholder(kn.int64, (3,), name="x")
        y = kn.placeholder(kn.int64, (3,), name="y")
        q = x // y
        f = kn.function([x, y], q, updates={w: w + kn.cast(q, kn.float32)})
        with pytest.raises(kn.IntegerDivisionByZeroError, match="node 'floordiv'"):
            f(np.array(A), np.array(B))
        np.testing.assert_array_equal(w.numpy(), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(f(np.array(A), np.array([2, 3, -1])), [2, -3, -3])
        np.testing.assert_array_equal(w.numpy(), [3.0, -1.0, 0.0])


def test_compiled_function_raises_too():
    f = kn.compile(lambda a, b: a % b + 1)
    assert f(kn.tensor(A), kn.tensor([2, 3, -1])).tolist() == [2, 3, 1]
    with pytest.raises(kn.IntegerDivisionByZeroError):
        f(kn.tensor(A), kn.tensor(B))
