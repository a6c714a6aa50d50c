"""PyTorch's own MultiheadAttention tests (test/nn/test_multihead_attention.py) as an oracle:
each behaviour they check written as a scenario run on torch and on kiln, eagerly and under
`kn.compile`, comparing outputs, attention weights, gradients, dtypes, shapes and exception
types (pt_oracle.py's comparison).

Module scenarios build `nn.MultiheadAttention` outside the compiled function and give every
entry of its state_dict the same NumPy values in both libraries (`_load`), so that no draw
differs; functional scenarios call `F.multi_head_attention_forward` on NumPy weights.
Expected values: torch 2.13 (the oracle).
"""

import math
import warnings
import zlib

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios, assert_same, outcome

import kiln as kn

f32 = np.float32
E, H = 8, 2


def _rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(f32)


Q = _rand(1, 3, 2, E)  # (L, N, E)
K = _rand(2, 4, 2, E)  # (S, N, E)
V = _rand(3, 4, 2, E)
K5 = _rand(4, 4, 2, 5)  # kdim 5
V6 = _rand(5, 4, 2, 6)  # vdim 6
KPM = np.array([[False, False, True, False], [False, True, True, False]])  # (N, S)
AM = np.array([[False, True, False, False], [False, False, False, True],
               [True, False, False, False]])  # (L, S)  # fmt: skip
FAM = np.where(AM, -2.5, 0.5).astype(f32)
CAUSAL = np.triu(np.ones((3, 3), bool), 1)


def _load(lib, m):
    """Gives each state_dict entry of `m` values drawn from its name (the same in both)."""
    state = {k: lib.tensor(_rand(zlib.crc32(k.encode()), *v.shape) / 4) for k, v in
             m.state_dict().items()}  # fmt: skip
    m.load_state_dict(state)
    return m


MODULES = {}  # name -> (make(lib) -> module, run(lib, module, *inputs), inputs)


def module_case(name, make, *inputs):
    def register(fn):
        assert name not in MODULES, name
        MODULES[name] = (make, fn, inputs)
        return fn

    return register


def _mha(**kw):
    def make(lib):
        return _load(lib, lib.nn.MultiheadAttention(E, H, **kw))

    return make


def _grads(lib, outs, *wrt):
    out = outs[0]
    w = lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape) / 11 - 1
    return lib.autograd.grad((out * w).sum(), wrt, allow_unused=True)


@module_case("mha_seq_first", _mha(), Leaf.of(Q), Leaf.of(K), Leaf.of(V))
def _(lib, m, q, k, v):
    outs = m(q, k, v)
    return outs, _grads(lib, outs, q, k, v, m.in_proj_weight, m.out_proj.bias)


@module_case("mha_self_attention", _mha(), Leaf.of(Q))
def _(lib, m, q):
    outs = m(q, q, q)
    return outs, _grads(lib, outs, q, m.in_proj_bias)


@module_case("mha_batch_first", _mha(batch_first=True), Leaf.of(Q.transpose(1, 0, 2)),
             K.transpose(1, 0, 2), V.transpose(1, 0, 2))  # fmt: skip
def _(lib, m, q, k, v):
    outs = m(q, k, v)
    return outs, _grads(lib, outs, q)


@module_case("mha_kdim_vdim", _mha(kdim=5, vdim=6), Leaf.of(Q), Leaf.of(K5), Leaf.of(V6))
def _(lib, m, q, k, v):
    outs = m(q, k, v)
    names = sorted(n for n, _ in m.named_parameters())
    return outs, names, _grads(lib, outs, q, k, v, m.k_proj_weight, m.v_proj_weight)


@module_case("mha_key_padding_mask_bool", _mha(), Q, K, V, KPM)
def _(lib, m, q, k, v, kpm):
    return m(q, k, v, key_padding_mask=kpm)


@module_case("mha_key_padding_mask_float", _mha(), Q, K, V, np.where(KPM, -1e4, 0.3).astype(f32))
def _(lib, m, q, k, v, kpm):
    return m(q, k, v, key_padding_mask=kpm)


@module_case("mha_attn_mask_bool", _mha(), Leaf.of(Q), K, V, AM)
def _(lib, m, q, k, v, am):
    outs = m(q, k, v, attn_mask=am)
    return outs, _grads(lib, outs, q)


@module_case("mha_attn_mask_float", _mha(), Q, K, V, FAM)
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_attn_mask_3d", _mha(), Q, K, V, np.stack([AM, ~AM, AM, AM]))
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_both_masks", _mha(), Q, K, V, KPM, AM)
def _(lib, m, q, k, v, kpm, am):
    return m(q, k, v, key_padding_mask=kpm, attn_mask=am)


@module_case("mha_bool_kpm_float_attn_mask", _mha(), Q, K, V, KPM, FAM)
def _(lib, m, q, k, v, kpm, am):
    return m(q, k, v, key_padding_mask=kpm, attn_mask=am)


@module_case("mha_fully_masked_row_is_nan", _mha(), Q, K, V, np.ones((3, 4), bool))
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_need_weights_false", _mha(), Q, K, V, KPM)
def _(lib, m, q, k, v, kpm):
    out, w = m(q, k, v, key_padding_mask=kpm, need_weights=False)
    return out, w is None


@module_case("mha_per_head_weights", _mha(), Q, K, V, AM)
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am, average_attn_weights=False)


@module_case("mha_add_bias_kv", _mha(add_bias_kv=True), Leaf.of(Q), K, V, KPM, AM)
def _(lib, m, q, k, v, kpm, am):
    outs = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
    return outs, _grads(lib, outs, q, m.bias_k, m.bias_v)


@module_case("mha_add_zero_attn", _mha(add_zero_attn=True), Leaf.of(Q), K, V, KPM, AM)
def _(lib, m, q, k, v, kpm, am):
    outs = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
    return outs, _grads(lib, outs, q)


@module_case("mha_bias_kv_and_zero_attn", _mha(add_bias_kv=True, add_zero_attn=True), Q, K, V)
def _(lib, m, q, k, v):
    return m(q, k, v, average_attn_weights=False)


@module_case("mha_no_bias", _mha(bias=False), Q, K, V)
def _(lib, m, q, k, v):
    return m(q, k, v), m.in_proj_bias is None, m.out_proj.bias is None


@module_case("mha_is_causal_with_mask", _mha(), Q, CAUSAL)
def _(lib, m, q, am):
    return m(q, q, q, attn_mask=am, is_causal=True, need_weights=False)[0]


@module_case("mha_is_causal_without_mask", _mha(), Q)
def _(lib, m, q):
    return m(q, q, q, is_causal=True)


@module_case("mha_unbatched", _mha(), Leaf.of(Q[:, 0]), K[:, 0], V[:, 0], KPM[0], AM)
def _(lib, m, q, k, v, kpm, am):
    outs = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
    return outs, _grads(lib, outs, q)


@module_case("mha_unbatched_per_head", _mha(batch_first=True), Q[:, 0], K[:, 0], V[:, 0])
def _(lib, m, q, k, v):
    return m(q, k, v, average_attn_weights=False)


def _eval_dropout(lib):
    return _load(lib, lib.nn.MultiheadAttention(E, H, dropout=0.5)).eval()


@module_case("mha_dropout_in_eval", _eval_dropout, Q, K, V)
def _(lib, m, q, k, v):
    return m(q, k, v), m.dropout, m.training


@module_case("mha_float64", lambda lib: _load(lib, lib.nn.MultiheadAttention(
    E, H, dtype=lib.float64)), Q.astype(np.float64))  # fmt: skip
def _(lib, m, q):
    return m(q, q, q)


@module_case("mha_query_dim_mismatch", _mha(), Q[..., :6])
def _(lib, m, q):
    return m(q, q, q)


@module_case("mha_4d_query_refused", _mha(), Q[None])
def _(lib, m, q):
    return m(q, q, q)


@module_case("mha_key_value_length_mismatch", _mha(), Q, K, V[:3])
def _(lib, m, q, k, v):
    return m(q, k, v)


@module_case("mha_attn_mask_wrong_2d_shape", _mha(), Q, K, V, AM[:, :3])
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_attn_mask_wrong_3d_shape", _mha(), Q, K, V, np.stack([AM, AM]))
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_int_attn_mask_refused", _mha(), Q, K, V, AM.astype(np.int64))
def _(lib, m, q, k, v, am):
    return m(q, k, v, attn_mask=am)


@module_case("mha_unbatched_kpm_wrong_shape", _mha(), Q[:, 0], K[:, 0], V[:, 0], KPM)
def _(lib, m, q, k, v, kpm):
    return m(q, k, v, key_padding_mask=kpm)


@module_case("mha_batched_query_unbatched_key", _mha(), Q, K[:, 0], V[:, 0])
def _(lib, m, q, k, v):
    return m(q, k, v)


@module_case("mha_kpm_wrong_shape", _mha(), Q, K, V, KPM.T)
def _(lib, m, q, k, v, kpm):
    return m(q, k, v, key_padding_mask=kpm)


@module_case("mha_mismatched_mask_kinds_warn", _mha(), Q, K, V, np.where(KPM, -1e4, 0.0)
             .astype(f32), AM)  # fmt: skip
def _(lib, m, q, k, v, kpm, am):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
    return out, [str(w.message) for w in caught]


MODULE_EAGER_ONLY = {
    "mha_reset_parameters": "nn.init's in-place initializers take eager tensors: kn.compile "
    "gives them a module's traced Variables",
    "mha_mismatched_mask_kinds_warn": "kn.compile records a traced function's warnings and "
    "gives them at each call, outside the function: a catch_warnings inside it sees none",
}


@module_case("mha_merge_masks", _mha(batch_first=True), Q.transpose(1, 0, 2)[:, :3],
             FAM[:, :3], np.where(KPM[:, :3], -1e4, 0.0).astype(f32))  # fmt: skip
def _(lib, m, q, am, kpm):
    return (m.merge_masks(am, kpm, q), m.merge_masks(None, kpm, q),
            m.merge_masks(am.expand(4, 3, 3), None, q), m.merge_masks(None, None, q))  # fmt: skip


@module_case("mha_reset_parameters", _mha(add_bias_kv=True, kdim=3), Q)
def _(lib, m, q):
    lib.manual_seed(0)
    m._reset_parameters()
    bound = math.sqrt(6 / (E + E))
    return (m.in_proj_bias, m.out_proj.bias, m.q_proj_weight.abs().max() <= bound,
            m.k_proj_weight.abs().max() <= math.sqrt(6 / (E + 3)), m.bias_k.shape)  # fmt: skip


def _check_module(torch, name, mode):
    if mode == "compiled" and name in MODULE_EAGER_ONLY:
        pytest.skip(MODULE_EAGER_ONLY[name])
    make, fn, inputs = MODULES[name]
    want, torch_error = outcome(torch, lambda lib, *a: fn(lib, make(lib), *a), inputs)
    m = make(kn)
    wrap = kn.compile if mode == "compiled" else None
    got, kiln_error = outcome(kn, lambda lib, *a: fn(lib, m, *a), inputs, wrap)
    if torch_error is not None:
        assert isinstance(kiln_error, type(torch_error)), (
            f"torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
            f"{type(kiln_error).__name__ if kiln_error else got}"
        )
        return
    if kiln_error is not None:
        raise kiln_error
    assert_same(got, want)


MODULE_XFAIL = {}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=MODULE_XFAIL[n]))
        if n in MODULE_XFAIL
        else n
        for n in sorted(MODULES)
    ],
)
def test_module_matches_torch(torch, name, mode):
    _check_module(torch, name, mode)


# -- F.multi_head_attention_forward ---------------------------------------------------------

SCENARIOS = Scenarios()
case = SCENARIOS.case
IN_W, IN_B = _rand(10, 3 * E, E) / 3, _rand(11, 3 * E)
OUT_W, OUT_B = _rand(12, E, E) / 3, _rand(13, E)


def _fwd(lib, q, k, v, in_w=IN_W, in_b=IN_B, **kw):
    args = dict(bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0)
    args.update(kw)
    return lib.nn.functional.multi_head_attention_forward(
        q, k, v, E, H, in_w, in_b, out_proj_weight=lib.tensor(OUT_W),
        out_proj_bias=lib.tensor(OUT_B), **args)  # fmt: skip


@case("functional_basic", Leaf.of(Q), K, V, Leaf.of(IN_W), IN_B)
def _(lib, q, k, v, w, b):
    outs = _fwd(lib, q, k, v, w, b, training=False)
    return outs, _grads(lib, outs, q, w)


@case("functional_separate_proj", Q, K5, V6, _rand(20, E, E), _rand(21, E, 5), _rand(22, E, 6))
def _(lib, q, k, v, wq, wk, wv):
    return _fwd(lib, q, k, v, None, lib.tensor(IN_B), use_separate_proj_weight=True,
                q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv)  # fmt: skip


@case("functional_separate_proj_missing", Q, K, V)
def _(lib, q, k, v):
    return _fwd(lib, q, k, v, None, lib.tensor(IN_B), use_separate_proj_weight=True)


@case("functional_static_kv", Q, K, V, _rand(30, 4, 4, E // H), _rand(31, 4, 4, E // H))
def _(lib, q, k, v, sk, sv):
    # static_k/static_v: (N * H, S, E / H) used as the projected keys and values
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), static_k=sk, static_v=sv)


@case("functional_bias_kv", Q, K, V, _rand(32, 1, 1, E), _rand(33, 1, 1, E), KPM)
def _(lib, q, k, v, bk, bv, kpm):
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), bias_k=bk, bias_v=bv,
                key_padding_mask=kpm, average_attn_weights=False)  # fmt: skip


@case("functional_is_causal_needs_mask", Q)
def _(lib, q):
    return _fwd(lib, q, q, q, lib.tensor(IN_W), lib.tensor(IN_B), is_causal=True)


@case("functional_dropout_not_training", Q, K, V)
def _(lib, q, k, v):
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), dropout_p=0.9, training=False)


@case("functional_dropout_one_training", Q, K, V)
def _(lib, q, k, v):
    # every weight dropped: the output is the output projection's bias
    out, w = _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), dropout_p=1.0)
    return out, w.shape


@case("functional_embed_dim_check", Q)
def _(lib, q):
    return lib.nn.functional.multi_head_attention_forward(
        q, q, q, 6, H, lib.tensor(IN_W), lib.tensor(IN_B), None, None, False, 0.0,
        lib.tensor(OUT_W), lib.tensor(OUT_B))  # fmt: skip


@case("functional_kpm_and_attn_mask_float", Q, K, V, np.where(KPM, -1.5, 0.0).astype(f32), FAM)
def _(lib, q, k, v, kpm, am):
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), key_padding_mask=kpm,
                attn_mask=am)  # fmt: skip


@case("functional_static_k_wrong_batch", Q, K, V, _rand(34, 3, 4, E // H))
def _(lib, q, k, v, sk):
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), static_k=sk)


@case("functional_static_v_wrong_head_dim", Q, K, V, _rand(35, 4, 4, 3))
def _(lib, q, k, v, sv):
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), static_v=sv)


@case("functional_kpm_of_static_length", Q, K, V, _rand(36, 4, 5, E // H),
      _rand(37, 4, 5, E // H), np.zeros((2, 5), bool))  # fmt: skip
def _(lib, q, k, v, sk, sv, kpm):
    kpm[1, 4] = True
    return _fwd(lib, q, k, v, lib.tensor(IN_W), lib.tensor(IN_B), static_k=sk, static_v=sv,
                key_padding_mask=kpm)  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_functional_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


def test_embed_dim_not_divisible_by_heads(torch):
    for lib in (torch, kn):
        with pytest.raises(AssertionError):
            lib.nn.MultiheadAttention(7, 2)


def _attributes(lib):
    return [(m.embed_dim, m.num_heads, m.head_dim, m.kdim, m.vdim, m._qkv_same_embed_dim,
             m.batch_first, m.dropout, type(m.out_proj).__name__, sorted(m.state_dict()))
            for m in (lib.nn.MultiheadAttention(8, 2, kdim=5, add_bias_kv=True),
                      lib.nn.MultiheadAttention(8, 4, batch_first=True, dropout=0.2))]  # fmt: skip


def test_mha_module_attributes(torch):
    assert _attributes(kn) == _attributes(torch)
