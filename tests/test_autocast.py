"""kn.autocast: PyTorch's CPU op lists (dtypes of every listed op), values against
torch.autocast on CPU, the same casts under kn.compile, the weight cache, and errors."""

import warnings

import numpy as np
import pytest

import kiln as kn
from kiln.frontend.autocast import _state

LOW, F32, SAME = "low", "float32", "same"


def _data(ns):
    """The cases' inputs, as Tensors of `ns` (kiln or torch), from one seeded NumPy draw."""
    rng = np.random.default_rng(0)

    def t(*shape):
        return ns.tensor(rng.standard_normal(shape).astype(np.float32))

    return {
        "x": t(4, 8), "w": t(3, 8), "b": t(3), "sq": t(3, 3) + 3 * ns.eye(3),
        "a3": t(2, 4, 5), "b3": t(2, 5, 3), "c3": t(2, 4, 3), "img": t(2, 3, 6, 6),
        "k2": t(4, 3, 3, 3), "seq": t(2, 3, 7), "k1": t(4, 3, 2), "vol": t(1, 2, 4, 4, 4),
        "q": t(2, 5, 8), "prob": ns.tensor(rng.uniform(0.1, 0.9, (4, 8)).astype(np.float32)),
        "labels": ns.tensor(np.array([0, 2, 1, 7])), "alpha": ns.tensor(np.float32([0.25])),
    }  # fmt: skip


# (name, fn(ns, F, d, low) -> result, expected result dtype under CPU autocast). Expected
# dtypes are PyTorch's CPU lists (aten/src/ATen/autocast_mode.cpp, torch 2.13): LOW for the
# lower_precision_fp list, F32 for the fp32 list, SAME (the input's dtype) for ops on no list.
# `low` casts an input to the autocast dtype first (to show what fp32 ops do with it).
CASES = [
    ("matmul", lambda ns, F, d, low: d["x"] @ d["w"].T, LOW),
    ("mm", lambda ns, F, d, low: ns.mm(d["x"], d["w"].T), LOW),
    ("bmm", lambda ns, F, d, low: ns.bmm(d["a3"], d["b3"]), LOW),
    ("addmm", lambda ns, F, d, low: ns.addmm(d["b"], d["x"], d["w"].T), LOW),
    ("baddbmm", lambda ns, F, d, low: ns.baddbmm(d["c3"], d["a3"], d["b3"]), LOW),
    ("linear", lambda ns, F, d, low: F.linear(d["x"], d["w"], d["b"]), LOW),
    ("conv1d", lambda ns, F, d, low: F.conv1d(d["seq"], d["k1"]), LOW),
    ("conv2d", lambda ns, F, d, low: F.conv2d(d["img"], d["k2"], padding=1), LOW),
    (
        "conv_transpose2d",
        lambda ns, F, d, low: F.conv_transpose2d(d["img"], d["k2"].transpose(0, 1)),
        LOW,
    ),  # noqa: E501
    ("prelu", lambda ns, F, d, low: F.prelu(d["x"], d["alpha"]), LOW),
    ("sdpa", lambda ns, F, d, low: F.scaled_dot_product_attention(d["q"], d["q"], d["q"]), LOW),
    ("einsum", lambda ns, F, d, low: ns.einsum("ij,kj->ik", d["x"], d["w"]), LOW),
    ("mse_loss", lambda ns, F, d, low: F.mse_loss(low(d["x"]), low(d["x"] * 0.5)), F32),
    ("l1_loss", lambda ns, F, d, low: F.l1_loss(low(d["x"]), d["x"] * 0.5), F32),
    ("smooth_l1_loss", lambda ns, F, d, low: F.smooth_l1_loss(low(d["x"]), low(d["x"] * 2)), F32),
    ("huber_loss", lambda ns, F, d, low: F.huber_loss(low(d["x"]), low(d["x"] * 2)), F32),
    ("cross_entropy", lambda ns, F, d, low: F.cross_entropy(low(d["x"]), d["labels"]), F32),
    ("nll_loss", lambda ns, F, d, low: F.nll_loss(low(d["x"]), d["labels"]), F32),
    (
        "binary_cross_entropy",
        lambda ns, F, d, low: F.binary_cross_entropy(low(d["prob"]), low(d["prob"])),
        F32,
    ),  # noqa: E501
    (
        "bce_with_logits",
        lambda ns, F, d, low: F.binary_cross_entropy_with_logits(low(d["x"]), d["prob"]),
        F32,
    ),  # noqa: E501
    (
        "kl_div",
        lambda ns, F, d, low: F.kl_div(low(d["x"]), low(d["prob"]), reduction="batchmean"),
        F32,
    ),  # noqa: E501
    ("prod", lambda ns, F, d, low: low(d["prob"]).prod(), F32),
    ("inv", lambda ns, F, d, low: ns.linalg.inv(low(d["sq"])), F32),
    ("avg_pool3d", lambda ns, F, d, low: F.avg_pool3d(low(d["vol"]), 2), F32),
    ("max_pool3d", lambda ns, F, d, low: F.max_pool3d(low(d["vol"]), 2), F32),
    ("adaptive_avg_pool3d", lambda ns, F, d, low: F.adaptive_avg_pool3d(low(d["vol"]), 1), F32),
    ("softmax", lambda ns, F, d, low: F.softmax(low(d["x"]), dim=-1), SAME),
    ("log_softmax", lambda ns, F, d, low: F.log_softmax(low(d["x"]), dim=-1), SAME),
    ("sum", lambda ns, F, d, low: low(d["x"]).sum(), SAME),
    ("layer_norm", lambda ns, F, d, low: F.layer_norm(low(d["x"]), (8,)), SAME),
    ("relu", lambda ns, F, d, low: F.relu(low(d["x"])), SAME),
    (
        "batch_norm",
        lambda ns, F, d, low: F.batch_norm(
            low(d["img"]), None, None, d["b"], d["b"], training=True
        ),
        SAME,
    ),  # noqa: E501
    ("group_norm", lambda ns, F, d, low: F.group_norm(low(d["img"]), 3, d["b"], d["b"]), SAME),
    ("float32_add", lambda ns, F, d, low: d["x"] + 1.0, SAME),
    ("mixed_add", lambda ns, F, d, low: low(d["x"]) + d["x"], F32),
    ("mixed_cat", lambda ns, F, d, low: ns.cat([low(d["x"]), d["x"]]), F32),
    ("mixed_stack", lambda ns, F, d, low: ns.stack([low(d["x"]), d["x"]]), F32),
    ("float64_matmul", lambda ns, F, d, low: d["x"].double() @ d["w"].double().T, "float64"),
]
IDS = [c[0] for c in CASES]
LOW_DTYPES = {"bfloat16": kn.bfloat16, "float16": kn.float16}


def _run(ns, fn, low_name):
    low_dtype = getattr(ns, low_name)
    d = _data(ns)
    with ns.autocast("cpu", dtype=low_dtype):
        return fn(ns, ns.nn.functional, d, lambda t: t.to(low_dtype))


def _name(dtype) -> str:
    return str(dtype).replace("torch.", "").replace("kiln.", "")


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,fn,expected", CASES, ids=IDS)
def test_autocast_dtype_of_listed_op(name, fn, expected, low):
    out = _run(kn, fn, low)
    want = {LOW: low, F32: "float32", SAME: low}.get(expected, expected)
    if name == "float32_add":
        want = "float32"  # an op on no list keeps its float32 inputs' dtype
    assert _name(out.dtype) == want


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,fn,expected", CASES, ids=IDS)
def test_autocast_matches_torch(name, fn, expected, low):
    torch = pytest.importorskip("torch")
    ours, theirs = _run(kn, fn, low), _run(torch, fn, low)
    assert _name(ours.dtype) == _name(theirs.dtype)
    a = ours.float().detach().numpy()
    b = theirs.float().detach().numpy()
    # One rounding to the low dtype apart at most: 2**-8 (bfloat16), 2**-11 (float16) relative.
    rtol = {"bfloat16": 2**-7, "float16": 2**-10}[low]
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


def test_autocast_lstm_runs_in_the_low_dtype():
    # PyTorch's CPU list has the LSTM layer (mkldnn_rnn_layer): input, states and weights cast
    torch = pytest.importorskip("torch")
    lstm = kn.nn.LSTM(4, 8, batch_first=True)
    theirs = torch.nn.LSTM(4, 8, batch_first=True)
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in lstm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    outs = []
    for ns, layer in ((kn, lstm), (torch, theirs)):
        with ns.autocast("cpu", dtype=ns.bfloat16):
            out, (h, c) = layer(ns.tensor(x))
        assert [_name(v.dtype) for v in (out, h, c)] == ["bfloat16"] * 3
        out.float().sum().backward()
        assert _name(layer.weight_ih_l0.grad.dtype) == "float32"
        outs.append(out.float().detach().numpy())
    # a few bfloat16 roundings apart (PyTorch fuses the cell's gate arithmetic)
    np.testing.assert_allclose(outs[0], outs[1], atol=2**-7)


def test_autocast_gradients_flow_back_in_float32():
    # As PyTorch: a float32 leaf used in bfloat16 gets a float32 gradient (cast's vjp).
    torch = pytest.importorskip("torch")
    grads = []
    for ns in (kn, torch):
        d = _data(ns)
        w = d["w"].clone().requires_grad_(True)
        with ns.autocast("cpu", dtype=ns.bfloat16):
            loss = ns.nn.functional.mse_loss(ns.nn.functional.linear(d["x"], w), d["x"][:, :3])
        loss.backward()
        assert _name(w.grad.dtype) == "float32"
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=2**-7, atol=2**-7)


def test_autocast_compile_applies_the_same_casts():
    model = kn.nn.Sequential(kn.nn.Linear(8, 16), kn.nn.ReLU(), kn.nn.Linear(16, 3))
    x = kn.randn(5, 8)

    def fn(x):
        return model(x)

    compiled = kn.compile(fn)
    with kn.autocast("cpu", dtype=kn.bfloat16):
        eager, traced = fn(x), compiled(x)
    assert eager.dtype == traced.dtype == kn.bfloat16
    np.testing.assert_array_equal(eager.detach().float().numpy(), traced.detach().float().numpy())
    casts = [n for n in compiled.last.graph.nodes if n.op.name == "cast"]
    # x and both layers' weights and biases to bfloat16 (linear then adds its bias to the
    # float32 product and rounds once, as PyTorch's addmm)
    to_low = {n.inputs[0].name for n in casts if n.out.dtype == kn.bfloat16}
    assert {"x", "0/weight", "0/bias", "2/weight", "2/bias"} <= to_low
    plain = compiled(x)  # outside autocast: traced again, in float32
    assert plain.dtype == kn.float32
    assert not [n for n in compiled.last.graph.nodes if n.op.name == "cast"]


def test_autocast_inside_a_compiled_function():
    lin = kn.nn.Linear(4, 3)

    @kn.compile
    def loss_fn(x):
        with kn.autocast("cpu", dtype=kn.bfloat16):
            y = lin(x)
            return y, kn.nn.functional.mse_loss(y, kn.zeros(2, 3))

    x = kn.randn(2, 4)
    y, loss = loss_fn(x)
    assert (y.dtype, loss.dtype) == (kn.bfloat16, kn.float32)
    loss.backward()
    assert lin.weight.grad.dtype == kn.float32
    with kn.autocast("cpu", dtype=kn.bfloat16):
        want = kn.nn.functional.mse_loss(lin(x), kn.zeros(2, 3))
    np.testing.assert_array_equal(loss.detach().numpy(), want.detach().numpy())


def test_autocast_decorator_enabled_false_and_nesting():
    @kn.autocast("cpu")
    def product(a, b):
        return a @ b

    a = kn.ones(2, 2)
    assert product(a, a).dtype == kn.bfloat16  # the CPU default dtype
    assert not kn.is_autocast_enabled("cpu")
    with kn.autocast("cpu", dtype=kn.float16):
        assert kn.get_autocast_dtype("cpu") == kn.float16
        with kn.autocast("cpu", enabled=False):
            assert (a @ a).dtype == kn.float32
        assert (a @ a).dtype == kn.float16
    assert kn.get_autocast_dtype("cpu") == kn.bfloat16


def test_autocast_weight_cache_lives_for_the_outermost_block():
    w = kn.ones(3, 3, requires_grad=True)
    x = kn.ones(2, 3)
    with kn.autocast("cpu"):
        y1 = kn.nn.functional.linear(x, w)
        with kn.autocast("cpu"):
            y2 = kn.nn.functional.linear(x, w)
        assert len(_state.cache) == 1  # w cast once, reused by the second call
        (y1.float().sum() + y2.float().sum()).backward()
    assert not _state.cache
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 3), 4.0, np.float32))
    with kn.autocast("cpu", cache_enabled=False):
        kn.nn.functional.linear(x, w)
        assert not _state.cache


def test_autocast_bad_arguments():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        kn.autocast("tpu")
    with pytest.raises(ValueError, match="of type `str`"):
        kn.autocast(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with kn.autocast("cpu", dtype=kn.float64):
            assert not kn.is_autocast_enabled("cpu")
            assert (kn.ones(2, 2) @ kn.ones(2, 2)).dtype == kn.float32
    assert "Disabling autocast" in str(caught[0].message)


def test_autocast_aliases():
    assert kn.amp.autocast is kn.autocast
    ctx = kn.cuda.amp.autocast(enabled=False)
    assert (ctx.device, ctx.fast_dtype) == ("cuda", kn.float16)
