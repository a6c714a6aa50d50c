"""PyTorch's own reduction and sort/select tests (test_reductions.py, test_sort_and_select.py)
as an oracle: their hand-written edge cases, each written here as a scenario of its own, a
function of the module (`torch` or `kiln`), run on both and compared: values, dtypes, shapes,
index choices and exception types. Most run under `kn.compile` too. tests/test_torch_opinfo.py
already runs the OpInfo samples of these ops; these are the edges those samples miss: dim=None,
(), negative and repeated dims, keepdim, 0-d and zero-size inputs, identity values and the
errors of empty max/argmax, dtype= and the accumulation dtypes, NaN and inf, ties, the
variance's correction, and the sort/search family's options.

Expected values: torch 2.13 (the oracle). An index among equal values that PyTorch leaves
unspecified (topk, kthvalue: their CPU selection algorithm's) is compared by the value it
picks: those scenarios return `input.gather(dim, indices)` instead of the indices. Float
results agree within rtol 1e-5 (a few dozen values summed in another order).
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

nan, inf = float("nan"), float("inf")
f32 = np.float32

A = np.arange(12, dtype=f32).reshape(3, 4) - 5
I8 = np.array([[100, 100, -3], [7, 8, 9]], np.int8)
U8 = np.array([[200, 100, 3], [0, 8, 9]], np.uint8)
BOOL = np.array([[True, False, True], [True, True, True]])
EMPTY = np.zeros((0, 3), f32)
SCALAR = np.array(2.5, f32)
NANS = np.array([[1, nan, 3, nan], [4, 5, 6, 0], [nan, nan, nan, nan]], f32)
TIES = np.array([[3, 1, 3, 1], [2, 2, 2, 2], [0, 1, 0, 1]], f32)
INFS = np.array([[-inf, -inf], [inf, 1], [inf, inf], [-inf, 2], [inf, -inf]], f32)

CASES = {}


def case(name, *inputs, compiled=True):
    """Registers the scenario below it under `name`, run on `inputs` (NumPy arrays, passed
    as tensors of the module); `compiled`: also run under kn.compile."""

    def register(fn):
        assert name not in CASES, name
        CASES[name] = (fn, inputs, compiled)
        return fn

    return register


# -- comparing -----------------------------------------------------------------------------


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def assert_same(k, t, where="result"):
    """kiln's result `k` is torch's `t`: structure, shapes, dtypes and values (NaN where
    torch has NaN), Python numbers of the same type."""
    if isinstance(t, (tuple, list)):
        assert isinstance(k, (tuple, list)) and len(k) == len(t), (where, k, t)
        for i, (a, b) in enumerate(zip(k, t)):
            assert_same(a, b, f"{where}[{i}]")
        return
    if hasattr(t, "shape"):
        assert isinstance(k, kn.Tensor), (where, type(k))
        assert tuple(k.shape) == tuple(t.shape), (where, tuple(k.shape), tuple(t.shape))
        assert _dtype_name(k.dtype) == _dtype_name(t.dtype), (where, k.dtype, t.dtype)
        kv, tv = to_numpy(k), to_numpy(t)
        if tv.dtype.kind in "fc":
            np.testing.assert_allclose(kv, tv, rtol=1e-5, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(kv, tv, err_msg=where)
        return
    if hasattr(t, "is_floating_point") or type(t).__name__ == "dtype":
        assert _dtype_name(k) == _dtype_name(t), (where, k, t)
        return
    assert type(k) is type(t), (where, k, t)
    assert k == t or (k != k and t != t), (where, k, t)


def outcome(lib, fn, inputs, wrap=None):
    """(result, None) or (None, the exception) of `fn` on `lib`'s tensors of `inputs`."""
    try:
        args = [lib.tensor(x) for x in inputs]
        return (wrap(lambda *a: fn(lib, *a)) if wrap else lambda *a: fn(lib, *a))(*args), None
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return None, error


# -- dims: None, int, negative, tuple, (), keepdim ------------------------------------------


@case("all_any_empty_dims_reduce_nothing", A)
def _(lib, x):
    # an empty dim list reduces no dim in all/any: each element's truth (sum reduces all)
    return (lib.all(x, ()), lib.any(x, (), keepdim=True), x.all(dim=[]), lib.sum(x, ()))


@case("all_any_empty_dims_uint8", U8)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, dim=()), lib.all(x, (0,)), lib.any(x, (0, 1))


@case("all_any_empty_dims_0d", SCALAR)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, (), keepdim=True)


# -- the test ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(torch, name, mode):
    fn, inputs, compiled = CASES[name]
    if mode == "compiled" and not compiled:
        pytest.skip("an eager-only scenario (data-dependent shapes or a refusal)")
    want, torch_error = outcome(torch, fn, inputs)
    if mode == "compiled" and torch_error is not None:
        pytest.skip("torch refuses it: the eager run compares the exception")
    got, kiln_error = outcome(kn, fn, inputs, kn.compile if mode == "compiled" else None)
    if torch_error is not None:
        assert isinstance(kiln_error, type(torch_error)), (
            f"torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
            f"{type(kiln_error).__name__ if kiln_error else got}"
        )
        return
    if kiln_error is not None:
        raise kiln_error
    assert_same(got, want)
