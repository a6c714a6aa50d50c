"""Half precision in kn.nn against PyTorch: norms summed in float16 overflowed (F.normalize
gave 0, cosine_similarity NaN, clip_grad_norm_ an inf norm that zeroed the gradients, where
torch accumulates in float32), clamp of bfloat16 returned float32 (so F.normalize and
cosine_similarity of bfloat16 did), and rms_norm of bfloat16 failed on NumPy's finfo.
Expected values are torch's on the same inputs (CPU)."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = (np.random.default_rng(0).standard_normal((4, 2048)) * 3 + 5).astype(np.float32)
DTYPES = [(torch.float16, kn.float16), (torch.bfloat16, kn.bfloat16)]

CASES = {
    "normalize": lambda F, x: F.normalize(x, dim=-1),
    "normalize_p3": lambda F, x: F.normalize(x, p=3, dim=-1),
    "cosine_similarity": lambda F, x: F.cosine_similarity(x, x * 0.5 + 1),
    "pairwise_distance": lambda F, x: F.pairwise_distance(x, x * 0.1),
    "rms_norm": lambda F, x: F.rms_norm(x, (2048,)),
}


@pytest.mark.parametrize("dtypes", DTYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_half_norms_like_torch(dtypes, case):
    tdt, kdt = dtypes
    want = CASES[case](torch.nn.functional, torch.tensor(X).to(tdt))
    got = CASES[case](kn.nn.functional, kn.tensor(X).to(kdt))
    assert got.dtype == kdt and str(want.dtype).endswith(str(kdt).split(".")[-1])
    w, g = want.float().numpy(), got.float().numpy()
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2 * np.abs(w).max())


@pytest.mark.parametrize("dtypes", DTYPES, ids=["float16", "bfloat16"])
def test_half_clip_grad_norm_like_torch(dtypes):
    tdt, kdt = dtypes
    out = []
    for lib, dt in ((torch, tdt), (kn, kdt)):
        p = lib.nn.Parameter(lib.zeros(2048, dtype=dt))
        p.grad = lib.tensor(X[0]).to(dt)  # norm about 260: its square overflows float16
        total = lib.nn.utils.clip_grad_norm_([p], 1.0)
        out.append((total.float().item(), p.grad.float().norm().item(), str(total.dtype)[-7:]))
    assert out[0][2] == out[1][2]
    np.testing.assert_allclose(out[1][:2], out[0][:2], rtol=1e-2)


def test_clamp_keeps_bfloat16_like_torch():
    values = [0.1, 2.0, -3.0, float("nan")]
    t = torch.tensor(values, dtype=torch.bfloat16, requires_grad=True)
    k = kn.tensor(values, dtype=kn.bfloat16, requires_grad=True)
    yt, yk = torch.clamp(t, min=1e-12), kn.clamp(k, min=1e-12)
    assert yk.dtype == kn.bfloat16
    np.testing.assert_array_equal(yk.float().detach().numpy(), yt.float().detach().numpy())
    yt.sum().backward()
    yk.sum().backward()
    np.testing.assert_array_equal(k.grad.float().numpy(), t.grad.float().numpy())
    assert kn.clamp(kn.ones(2, dtype=kn.bfloat16), 0.5, 1.5).dtype == kn.bfloat16
    # a float32 bound promotes, as torch's
    assert kn.clamp(kn.ones(2, dtype=kn.bfloat16), kn.zeros(2), kn.ones(2)).dtype == kn.float32
    compiled = kn.compile(lambda a: kn.clamp(a, 0.5, 1.5))(kn.tensor([0.1, 2.0], dtype=kn.bfloat16))
    assert compiled.dtype == kn.bfloat16 and compiled.float().tolist() == [0.5, 1.5]
