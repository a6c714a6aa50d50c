"""Values and gradients at NaN, inf and ties that differed from PyTorch's without an error:
median/nanmedian, normalize, cosine_similarity and cdist. Expected values are torch 2.13's,
written out (`test_the_expected_values_are_torchs` reruns them)."""

import numpy as np
import pytest

import kiln as kn

NAN, INF = np.nan, np.inf
ROWS = np.array([[3.0, NAN, 2.0, NAN, 1.0], [3.0, 1.0, 2.0, 5.0, 4.0]], np.float32)


def _medians(m, wrap=lambda f: f):
    """(median along dim 1: values, indices; along dim 0 kept; median() of everything)."""
    along = wrap(lambda x: m.median(x, 1))(m.tensor(ROWS))
    kept = wrap(lambda x: m.median(x.t(), 0, keepdim=True))(m.tensor(ROWS))
    whole = wrap(lambda x: m.median(x))(m.tensor(ROWS))
    return (along.values.tolist(), along.indices.tolist(), kept.values.tolist(),
            kept.indices.tolist(), whole.item())  # fmt: skip


MEDIANS = ([NAN, 3.0], [1, 0], [[NAN, 3.0]], [[1, 0]], NAN)


def _same(got, want):
    np.testing.assert_equal(got, want)  # NaN equals NaN here


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_median_of_a_slice_with_nan_is_nan(compiled):
    _same(_medians(kn, kn.compile if compiled else (lambda f: f)), MEDIANS)


# median() and nanmedian() of everything share the gradient among the elements equal to the
# value (the NaNs where it is NaN); weights 1 on the output
GRAD_CASES = {
    "median-ties": (lambda m, x: m.median(x), [1.0, 2.0, 2.0, 3.0], [0.0, 0.5, 0.5, 0.0]),
    "median-nan": (lambda m, x: m.median(x), [1.0, NAN, 2.0, NAN], [0.0, 0.5, 0.0, 0.5]),
    "nanmedian-ties": (lambda m, x: m.nanmedian(x), [1.0, 2.0, 2.0, 3.0, NAN],
                       [0.0, 0.5, 0.5, 0.0, 0.0]),
    "nanmedian-zeros": (lambda m, x: m.nanmedian(x), [0.0, -0.0, 5.0], [0.5, 0.5, 0.0]),
    "normalize-nan": (lambda m, x: m.nn.functional.normalize(x, dim=0).sum(),
                      [NAN, 1.0, 2.0], [NAN, NAN, NAN]),
    "cosine-zero-nan": (lambda m, x: m.nn.functional.cosine_similarity(
        x.reshape(1, -1) * 0, x.reshape(1, -1)).sum(), [NAN, 1.0, 2.0], [NAN, NAN, NAN]),
    "cdist-nan": (lambda m, x: m.cdist(x.reshape(-1, 1), x.reshape(-1, 1)).sum(),
                  [NAN, 1.0, INF], [NAN, NAN, NAN]),
}  # fmt: skip


def _grad(m, name, wrap=lambda f: f):
    fn, x, _ = GRAD_CASES[name]
    t = m.tensor(np.array(x, np.float32), requires_grad=True)
    wrap(lambda t: fn(m, t))(t).backward()
    return t.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_are_torchs(name, compiled):
    got = _grad(kn, name, kn.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(got, GRAD_CASES[name][2], rtol=1e-6, atol=0)


def test_values_with_nan_are_nan():
    x = kn.tensor(np.array([[NAN, 1.0, 2.0]], np.float32))
    assert np.isnan(kn.nn.functional.normalize(x).numpy()).all()  # was 1e12, 2e12
    d = kn.cdist(x.reshape(-1, 1), x.reshape(-1, 1)).numpy()
    assert np.isnan(d[0]).all() and np.isnan(d[:, 0]).all() and d[1, 2] == 1.0


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    _same(_medians(torch), MEDIANS)
    for name, (_, _, want) in GRAD_CASES.items():
        np.testing.assert_allclose(_grad(torch, name), want, rtol=1e-6, atol=0, err_msg=name)
