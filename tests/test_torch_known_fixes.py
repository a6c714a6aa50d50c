"""Differences from PyTorch that tests/test_torch_opinfo.py listed as KNOWN and kiln now
answers as PyTorch does: dtypes (integer `addmm`, bool `addr`), edge inputs that crashed
(0-d index ops, empty softmax, zero norms, traced `linspace` bounds...) and argument forms.

Each case runs in graph mode (placeholders and `kn.function`), eagerly and under
`kn.compile`, and is compared with PyTorch (skipped without it); a hand-computed case of each
fix runs without PyTorch (the expected values are worked out in the comments).
"""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

MODES = ["graph", "eager", "compiled"]
F = kn.nn.functional


def run(mode, fn, *arrays):
    """fn(kn, *tensors) as a NumPy array (or a tuple of them), in `mode`."""
    if mode == "graph":
        with kn.Graph().as_default():
            xs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
            f = kn.function(xs, fn(kn, *xs))
        out = f(*arrays)
    else:
        call = (lambda *ts: fn(kn, *ts)) if mode == "eager" else kn.compile(lambda *ts: fn(kn, *ts))
        out = call(*(kn.tensor(a) for a in arrays))
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in out)
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def torch_result(fn, *arrays):
    torch = pytest.importorskip("torch")
    out = fn(torch, *(torch.from_numpy(np.array(a)) for a in arrays))
    if isinstance(out, (tuple, list)):
        return tuple(o.numpy() for o in out)
    return out.numpy()


def assert_same(got, want, rtol=1e-6):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol)
        return
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (got, want)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


R = np.random.default_rng(0)
A23 = np.arange(6, dtype=np.int64).reshape(2, 3) - 2
B32 = np.arange(6, dtype=np.int64).reshape(3, 2) - 1
BOOLS = np.array([True, False, True])

# id -> (fn(lib, *tensors), arrays); lib is torch or kiln
CASES = {
    # integer products with float beta/alpha: the coefficients truncate, the dtype stays
    "addmm-int64": (
        lambda t, c, a, b: t.addmm(c, a, b, beta=1.7, alpha=2.9),
        (np.full((2, 2), 5, np.int64), A23, B32),
    ),
    "addmm-int64-small": (
        lambda t, c, a, b: t.addmm(c, a, b, beta=0.2, alpha=0.6),
        (np.full((2, 2), 5, np.int64), A23, B32),
    ),
    "addmv-int64": (
        lambda t, c, a, v: t.addmv(c, a, v, beta=2, alpha=3.5),
        (np.ones(2, np.int64), A23, np.array([1, 2, 3], np.int64)),
    ),
    "baddbmm-int64": (
        lambda t, c, a, b: t.baddbmm(c, a, b, beta=1.5, alpha=2.5),
        (np.ones((1, 2, 2), np.int64), A23[None], B32[None]),
    ),
    "addr-bool": (
        lambda t, c, a, b: t.addr(c, a, b, beta=3, alpha=2),
        (np.eye(2, 3, dtype=bool), BOOLS[:2], BOOLS),
    ),
    "addr-bool-beta0": (
        lambda t, c, a, b: t.addr(c, a, b, beta=0),
        (np.eye(2, 3, dtype=bool), BOOLS[:2], BOOLS),
    ),
    "sum_to_size-bool-0d": (lambda t, x: x.sum_to_size(()), (np.array(True),)),
    "sum_to_size-bool": (lambda t, x: x.sum_to_size(1, 3), (np.eye(2, 3, dtype=bool),)),
    # 0-d inputs of the index ops: a vector of one element
    "index_add-0d": (
        lambda t, x, i, s: t.index_add(x, 0, i, s, alpha=2),
        (np.array(1.5, np.float32), np.array([0]), np.array(2.0, np.float32)),
    ),
    "index_copy-0d": (
        lambda t, x, i, s: t.index_copy(x, 0, i, s),
        (np.array(1.5, np.float32), np.array([0]), np.array(2.0, np.float32)),
    ),
    "index_fill-0d": (
        lambda t, x, i: t.index_fill(x, 0, i, -1),
        (np.array(4, np.int64), np.array([0])),
    ),
    # p-norms of p = 0 (the count of nonzeros) and p = -inf (the least magnitude)
    "normalize-p0": (
        lambda t, x: t.nn.functional.normalize(x, p=0.0, dim=-1),
        (np.array([[1.0, 0.0, -2.0], [0.0, 0.0, 0.0]], np.float32),),
    ),
    "normalize-p-inf": (
        lambda t, x: t.nn.functional.normalize(x, p=-np.inf, dim=-1),
        (np.array([[1.0, 3.0, -2.0], [0.0, 0.5, 0.0]], np.float32),),
    ),
    # empty inputs of the softmaxes: an empty result
    "softmax-empty": (lambda t, x: t.softmax(x, -1), (np.zeros((5, 0, 0), np.float32),)),
    "log_softmax-empty": (lambda t, x: t.log_softmax(x, 1), (np.zeros((2, 0), np.float32),)),
    "softmin-empty": (
        lambda t, x: t.nn.functional.softmin(x, 0, dtype=t.float64),
        (np.zeros((0, 3), np.float32),),
    ),
    # 0-d (one sample of one class) inputs of the margin losses
    "multi_margin_loss-0d": (
        lambda t, x, y: t.nn.functional.multi_margin_loss(x, y),
        (np.array(-3.5, np.float32), np.array(0)),
    ),
    "multilabel_margin_loss-0d": (
        lambda t, x, y: t.nn.functional.multilabel_margin_loss(x, y),
        (np.array(5.0, np.float32), np.array(0)),
    ),
    # traced bounds of linspace and logspace (graph ops under kn.compile)
    "linspace-tensor": (
        lambda t, a, b: t.linspace(a, b, 7),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "linspace-tensor-int": (
        lambda t, a, b: t.linspace(a, b, 5, dtype=t.int64),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "linspace-tensor-one": (
        lambda t, a, b: t.linspace(a, b, 1),
        (np.array(-2.0, np.float32), np.array(3.0, np.float32)),
    ),
    "logspace-tensor": (
        lambda t, a, b: t.logspace(a, b, 4, base=2.0),
        (np.array(-1.0, np.float32), np.array(2.0, np.float32)),
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_known_fix_matches_pytorch(case, mode):
    fn, arrays = CASES[case]
    want = torch_result(fn, *arrays)
    assert_same(run(mode, fn, *arrays), want, rtol=1e-5)


# -- hand-computed cases (no PyTorch needed) --------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_addmm_of_int64_truncates_beta_and_alpha(mode):
    # beta 1.7 -> 1, alpha 2.9 -> 2 (PyTorch's integer coefficients); by hand:
    # A23 = [[-2,-1,0],[1,2,3]], B32 = [[-1,0],[1,2],[3,4]]
    # A23 @ B32 = [[2-1+0, 0-2+0], [-1+2+9, 0+4+12]] = [[1,-2],[10,16]]
    got = run(mode, CASES["addmm-int64"][0], *CASES["addmm-int64"][1])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, 5 + 2 * np.array([[1, -2], [10, 16]]))


@pytest.mark.parametrize("mode", MODES)
def test_addr_of_bools_stays_bool(mode):
    # beta and alpha are True: input OR outer(a, b)
    got = run(mode, CASES["addr-bool"][0], *CASES["addr-bool"][1])
    want = np.eye(2, 3, dtype=bool) | np.outer(BOOLS[:2], BOOLS)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_zero_d_index_add_is_one_element_vector(mode):
    got = run(mode, CASES["index_add-0d"][0], *CASES["index_add-0d"][1])
    assert got.shape == () and got == np.float32(1.5 + 2 * 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_of_empty_is_empty(mode):
    got = run(mode, lambda t, x: t.softmax(x, 0), np.zeros((0, 2), np.float32))
    assert got.shape == (0, 2) and got.dtype == np.float32


@pytest.mark.parametrize("mode", MODES)
def test_normalize_p0_divides_by_the_nonzero_count(mode):
    # row [1, 0, -2] has 2 nonzeros; the zero row stays zero (norm 0 clipped to eps)
    got = run(mode, CASES["normalize-p0"][0], *CASES["normalize-p0"][1])
    np.testing.assert_allclose(got, [[0.5, 0.0, -1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("mode", MODES)
def test_linspace_of_traced_bounds(mode):
    got = run(mode, CASES["linspace-tensor"][0], *CASES["linspace-tensor"][1])
    np.testing.assert_allclose(got, np.linspace(-2.0, 3.0, 7), rtol=1e-6)
    got = run(mode, CASES["logspace-tensor"][0], *CASES["logspace-tensor"][1])
    np.testing.assert_allclose(got, [0.5, 1.0, 2.0, 4.0], rtol=1e-6)
