"""kiln's TransformerEncoder against PyTorch's where PyTorch's inference path changes values:
with `use_nested_tensor` (batch first, post-norm, even heads, biases, ReLU/GELU), in eval mode
with no gradient wanted, PyTorch packs the unpadded tokens of a left-aligned
`src_key_padding_mask` and gives zeros at the padded positions (then `norm`). Expected values
come from torch 2.x run on the same weights and inputs."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

E = 8


def _pair(nhead=2, norm=False, **layer_kw):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(E, nhead, 16, dropout=0.0, batch_first=True,
                                          **layer_kw)  # fmt: skip
    kl = kn.nn.TransformerEncoderLayer(E, nhead, 16, dropout=0.0, batch_first=True, **layer_kw)
    tnorm = torch.nn.LayerNorm(E) if norm else None
    knorm = kn.nn.LayerNorm(E) if norm else None
    te = torch.nn.TransformerEncoder(tl, 2, norm=tnorm, enable_nested_tensor=True)
    ke = kn.nn.TransformerEncoder(kl, 2, norm=knorm, enable_nested_tensor=True)
    if norm:
        with torch.no_grad():
            te.norm.bias.uniform_()
    ke.load_state_dict({n: v.detach().numpy() for n, v in te.state_dict().items()})
    te.eval()
    ke.eval()
    return te, ke


def _data(right_aligned=True):
    rng = np.random.default_rng(0)
    src = rng.standard_normal((3, 5, E)).astype(np.float32)
    pad = np.zeros((3, 5), bool)
    pad[0, 3:] = True
    pad[1, 4] = True
    if not right_aligned:
        pad[2, 1] = True  # a hole in the middle: PyTorch keeps its slow path then
    return src, pad


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("norm", [False, True])
def test_encoder_eval_no_grad_zeros_padding_like_torch(norm):
    te, ke = _pair(norm=norm)
    src, pad = _data()
    with torch.no_grad():
        want = te(torch.tensor(src), src_key_padding_mask=torch.tensor(pad)).numpy()
    with kn.no_grad():
        got = ke(kn.tensor(src), src_key_padding_mask=kn.tensor(pad)).numpy()
    if not norm:
        assert (want[pad] == 0).all()  # torch: zeros at the padding
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # a float mask (-inf at the padding) means the same
    fpad = np.where(pad, -np.inf, 0.0).astype(np.float32)
    with kn.no_grad():
        got_f = ke(kn.tensor(src), src_key_padding_mask=kn.tensor(fpad)).numpy()
    np.testing.assert_allclose(got_f, want, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "case", ["grad", "train", "holes", "odd_heads", "norm_first", "frozen", "mask_too"]
)
def test_encoder_padding_kept_where_torch_keeps_it(case):
    kw = {"nhead": 1} if case == "odd_heads" else {}
    if case == "norm_first":
        kw["norm_first"] = True
    te, ke = _pair(**kw)
    src, pad = _data(right_aligned=case != "holes")
    if case == "train":
        te.train()
        ke.train()
    if case == "frozen":  # nothing requires grad: torch packs even with grad mode on
        te.requires_grad_(False)
        ke.requires_grad_(False)
    mask = np.zeros((5, 5), np.float32) if case == "mask_too" else None
    ctx_t = torch.enable_grad() if case in ("grad", "frozen") else torch.no_grad()
    ctx_k = kn.enable_grad() if case in ("grad", "frozen") else kn.no_grad()
    with ctx_t:
        want = te(torch.tensor(src), mask=None if mask is None else torch.tensor(mask),
                  src_key_padding_mask=torch.tensor(pad)).detach().numpy()  # fmt: skip
    with ctx_k:
        got = ke(kn.tensor(src), mask=None if mask is None else kn.tensor(mask),
                 src_key_padding_mask=kn.tensor(pad)).detach().numpy()  # fmt: skip
    assert ((want[pad] == 0).all()) == (case == "frozen")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_encoder_padding_compiled_matches_eager():
    _, ke = _pair()
    src, pad = _data()

    def run(s, p):
        with kn.no_grad():
            return ke(s, src_key_padding_mask=p)

    eager = run(kn.tensor(src), kn.tensor(pad)).numpy()
    compiled = kn.compile(run)(kn.tensor(src), kn.tensor(pad)).detach().numpy()
    assert (eager[pad] == 0).all()
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("average", [True, False])
def test_mha_returns_dropped_out_weights_in_training_like_torch(average):
    # torch returns the attention weights after dropout (zeros, the rest scaled by 1/(1-p));
    # kiln returned them before. Statistics of one large draw, compared with torch's.
    x = np.random.default_rng(0).standard_normal((20, 4, 8)).astype(np.float32)
    stats = []
    for lib in (torch, kn):
        m = lib.nn.MultiheadAttention(8, 2, dropout=0.5)
        _, w = m(lib.tensor(x), lib.tensor(x), lib.tensor(x), average_attn_weights=average)
        w = w.detach().numpy()
        stats.append(((w == 0).mean(), w.sum(-1).mean()))
        m.eval()
        _, w = m(lib.tensor(x), lib.tensor(x), lib.tensor(x), average_attn_weights=average)
        np.testing.assert_allclose(w.detach().numpy().sum(-1), 1.0, rtol=1e-5)
    (tz, ts), (kz, ks) = stats
    if not average:  # 6400 weights: half dropped
        assert abs(tz - 0.5) < 0.05 and abs(kz - 0.5) < 0.05
    assert abs(ts - 1.0) < 0.1 and abs(ks - 1.0) < 0.1 and (kz > 0) == (tz > 0)
