"""Norms of float16 and bfloat16 tensors are summed in float32 and rounded once, as
PyTorch's: float16's sum of squares overflows past 65504, so a norm of about 269 was inf.
Expected values: torch 2.13 on the same inputs (268.5 for 300 elements of 15.5 in float16:
sqrt(300) * 15.5 = 268.47, rounded to float16), and the gradient x / norm = 1 / sqrt(300).
"""

import numpy as np
import pytest

import kiln as kn

X = np.full(300, 15.5, np.float16)


@pytest.mark.parametrize(
    "norm",
    [
        lambda t: kn.linalg.vector_norm(t),
        lambda t: t.norm(),
        lambda t: kn.linalg.norm(t),
        lambda t: kn.linalg.matrix_norm(t.reshape(15, 20)),
    ],
)
def test_float16_norm_does_not_overflow(norm):
    t = kn.tensor(X, requires_grad=True)
    n = norm(t)
    assert n.dtype == kn.float16 and float(n) == 268.5
    n.backward()
    np.testing.assert_allclose(t.grad.numpy().astype(np.float64), 1 / np.sqrt(300), rtol=1e-3)


def test_half_norms_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((40, 50)) * 30).astype(np.float32)
    for kdt, tdt in ((kn.float16, torch.float16), (kn.bfloat16, torch.bfloat16)):
        for ord in (2, 3, 1, float("inf"), 0.5):
            expected = torch.linalg.vector_norm(torch.tensor(x).to(tdt), ord, dim=1)
            got = kn.linalg.vector_norm(kn.tensor(x).to(kdt), ord, dim=1)
            assert got.dtype == kdt
            np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
