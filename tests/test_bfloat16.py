"""bfloat16 (`kn.bfloat16`, through ml_dtypes): casts, arithmetic rounded once per op from
float32 math, matmul and reductions accumulated in float32, promotion, printing, dumps and
safetensors files, in eager mode, graph mode and under kn.compile. Expected values: hand
computations of bfloat16 rounding (8 significant bits, round to nearest even), float32 math
rounded once, and PyTorch itself where it is installed."""

import os

import numpy as np
import pytest

import kiln as kn

BF16 = kn.bfloat16
RNG = np.random.default_rng(0)
V = RNG.standard_normal(256).astype(np.float32)


def bf16(values) -> np.ndarray:
    """float32 values rounded to bfloat16 (ml_dtypes' cast: round to nearest even)."""
    return np.asarray(values, np.float32).astype(BF16)


def three_modes(fn, *arrays):
    """fn on bfloat16 Tensors eagerly, on placeholders in a graph, and under kn.compile: the
    three results as float32 arrays."""
    eager = fn(*[kn.tensor(a) for a in arrays])
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        graph = kn.function(xs, fn(*xs))(*arrays)
    compiled = kn.compile(fn)(*[kn.tensor(a) for a in arrays])
    assert eager.dtype == graph.dtype == compiled.dtype
    return [np.asarray(r.numpy() if isinstance(r, kn.Tensor) else r).astype(np.float32)
            for r in (eager, graph, compiled)]  # fmt: skip


def test_bfloat16_dtype_names_and_printing():
    assert kn.dtypes.as_dtype("bfloat16") == kn.dtypes.as_dtype("bf16") == BF16
    assert kn.dtypes.is_float(BF16) and kn.dtypes.short_name(BF16) == "bf16"
    with kn.Graph().as_default():
        assert kn.placeholder(BF16, (3,), name="p").type_str() == "bf16[3]"
    # PyTorch prints tensor([1.5000, 2.2500], dtype=torch.bfloat16)
    assert (
        repr(kn.tensor([1.5, 2.25], dtype=BF16)) == "tensor([1.5000, 2.2500], dtype=kiln.bfloat16)"
    )
    assert kn.tensor([1.5]).bfloat16().dtype == BF16


def test_cast_rounds_to_nearest_even():
    """1 + 2^-8 lies halfway between 1 and 1 + 2^-7 (bfloat16 keeps 7 fraction bits): even
    wins, 1.0; 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: 1 + 2^-6."""
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], np.float64)
    want = [1.0, 1 + 2**-6, -1.0]
    np.testing.assert_array_equal(kn.tensor(x).to(BF16).to(kn.float64).numpy(), want)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (3,), name="p")
        got = kn.function([p], kn.cast(kn.cast(p, BF16), kn.float64))(x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "name, fn, reference",
    [
        ("mul", lambda a, b: a * b, lambda a, b: a * b),
        ("add", lambda a, b: a + b, lambda a, b: a + b),
        ("div", lambda a, b: a / b, lambda a, b: a / b),
        ("exp", lambda a, b: kn.exp(a), lambda a, b: np.exp(a)),
        ("tanh", lambda a, b: kn.tanh(a), lambda a, b: np.tanh(a)),
        ("sigmoid", lambda a, b: kn.sigmoid(a), lambda a, b: 1 / (1 + np.exp(-a))),
        ("softplus", lambda a, b: kn.nn.functional.softplus(a), lambda a, b: np.logaddexp(0, a)),
    ],
)
def test_elementwise_is_float32_math_rounded_once(name, fn, reference):
    a, b = bf16(V), bf16(V[::-1] + 3.0)
    want = bf16(reference(a.astype(np.float32), b.astype(np.float32))).astype(np.float32)
    for got in three_modes(fn, a, b):
        np.testing.assert_array_equal(got, want)


def test_python_float_scalars_as_pytorch():
    """`t * s` and `t / s` use s unrounded (0.1 in float32); `t + s` rounds s to bfloat16
    first (0.1 -> 0.10009765625); `s / t` is reciprocal(t) * s, two roundings."""
    t = bf16(V)
    f = t.astype(np.float32)
    s32, s16 = np.float32(0.1), np.float32(bf16(0.1))
    cases = {
        "t * s": (lambda x: x * 0.1, bf16(f * s32)),
        "s * t": (lambda x: 0.1 * x, bf16(f * s32)),
        "t / s": (lambda x: x / 0.1, bf16(f / s32)),
        "t + s": (lambda x: x + 0.1, bf16(f + s16)),
        "s / t": (lambda x: 0.1 / x, bf16(bf16(1 / f).astype(np.float32) * s32)),
    }
    for name, (fn, want) in cases.items():
        for got in three_modes(fn, t):
            np.testing.assert_array_equal(got, want.astype(np.float32), err_msg=name)


def test_reductions_and_matmul_accumulate_in_float32():
    """1000 values of 0.1 (0.10009765625 in bfloat16) sum to 100.09765625 in float32, which
    rounds to 100; summed in bfloat16 they would stop growing at 32."""
    ones = np.full(1000, 0.1, np.float32).astype(BF16)
    for got in three_modes(lambda x: kn.sum(x), ones):
        assert got == 100.0
    for got in three_modes(lambda x: kn.mean(x), ones):
        assert got == np.float32(bf16(0.10009765625))
    a, b = bf16(V[:64].reshape(8, 8)), bf16(V[64:128].reshape(8, 8))
    want = bf16(a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32)
    for got in three_modes(lambda x, y: x @ y, a, b):
        np.testing.assert_array_equal(got, want)


def test_promotion():
    """torch.result_type: bfloat16 with float16 is float32, with integers bfloat16, with a
    Python float bfloat16 (all pairs: tests/test_promotion_table.py)."""
    t = kn.tensor([1.0, 2.0], dtype=BF16)
    assert (t + kn.tensor([1.0, 2.0], dtype=kn.float16)).dtype == kn.float32
    assert (t + kn.tensor([1, 2])).dtype == BF16
    assert (t * 2.5).dtype == BF16
    assert (t + kn.tensor([1.0, 2.0])).dtype == kn.float32


def test_gradient_in_bfloat16():
    """d/dx sum(x * x * 0.5) = x, in bfloat16: x * x rounds, then * 0.5 is exact."""
    x = kn.tensor(bf16(V[:8]), requires_grad=True)
    kn.sum(x * x * 0.5).backward()
    assert x.grad.dtype == BF16
    want = bf16(bf16(x.detach().numpy().astype(np.float32)).astype(np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), want)
    with kn.Graph().as_default():
        p = kn.placeholder(BF16, (8,), name="p")
        (g,) = kn.grad(kn.sum(p * p * 0.5), [p])
        np.testing.assert_array_equal(kn.function([p], g)(bf16(V[:8])), want)


def test_safetensors_round_trip(tmp_path):
    path = os.path.join(tmp_path, "w.safetensors")
    w = bf16(V[:6].reshape(2, 3))
    kn.save({"w": w, "t": kn.tensor(w)}, path)
    loaded = kn.load(path)
    assert loaded["w"].dtype == BF16 and loaded["t"].dtype == BF16
    np.testing.assert_array_equal(loaded["w"], w)
    with open(path, "rb") as f:
        assert b'"dtype":"BF16"' in f.read()


def test_json_dump_round_trip():
    with kn.Graph().as_default():
        p = kn.placeholder(BF16, (3,), name="p")
        f = kn.function([p], p * kn.constant(bf16([1.5, 2.0, 3.0])) + 1.0)
    loaded = kn.load_graph(kn.dump(f, "json"))
    x = bf16([1.0, -2.0, 0.5])
    got = kn.function(loaded.inputs, loaded.outputs)(x)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float32)[0], f(x).astype(np.float32))


# -- against PyTorch itself --------------------------------------------------------------------

TORCH_CASES = {
    "add": lambda m, x: x + x.flip(0),
    "mul_scalar": lambda m, x: x * 0.37,
    "div_scalar": lambda m, x: x / 0.37,
    "rdiv_scalar": lambda m, x: 0.37 / x,
    "sub_scalar": lambda m, x: x - 0.37,
    "exp": lambda m, x: m.exp(x),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "softmax": lambda m, x: m.softmax(x.reshape(4, 64), 1),
    "logsumexp": lambda m, x: m.logsumexp(x.reshape(4, 64), 1),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x.reshape(4, 64), (64,)),
    "sum": lambda m, x: x.sum().reshape(1),
    "matmul": lambda m, x: x.reshape(16, 16) @ x.reshape(16, 16).flip(0),
    "int_promotion": lambda m, x: x + m.arange(256),
    "conv2d": lambda m, x: m.nn.functional.conv2d(
        x.reshape(1, 4, 8, 8), x[:72].reshape(2, 4, 3, 3)
    ),
    "avg_pool2d": lambda m, x: m.nn.functional.avg_pool2d(x.reshape(1, 4, 8, 8), 2),
}


def test_conv2d_gradients_match_torch():
    """conv2d's input and weight gradients accumulate in float32 and round once, as PyTorch's."""
    torch = pytest.importorskip("torch")
    x, w = V.reshape(1, 4, 8, 8), V[:72].reshape(2, 4, 3, 3)
    xt, wt = (torch.tensor(a).bfloat16().requires_grad_() for a in (x, w))
    xk, wk = (kn.tensor(a).to(BF16).requires_grad_() for a in (x, w))
    torch.nn.functional.conv2d(xt, wt).sum().backward()
    kn.sum(kn.nn.functional.conv2d(xk, wk)).backward()
    for mine, theirs in ((xk.grad, xt.grad), (wk.grad, wt.grad)):
        assert mine.dtype == BF16
        np.testing.assert_array_equal(mine.to(kn.float32).numpy(), theirs.float().numpy())


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    fn = TORCH_CASES[name]
    want = fn(torch, torch.tensor(V).bfloat16())
    assert want.dtype == torch.bfloat16
    got = fn(kn, kn.tensor(V).to(BF16))
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.to(kn.float32).numpy(), want.float().numpy())


def test_torch_reads_and_writes_our_files(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    path = os.path.join(tmp_path, "x.safetensors")
    kn.save({"w": bf16(V[:4])}, path)
    assert st.load_file(path)["w"].dtype == torch.bfloat16
    np.testing.assert_array_equal(
        st.load_file(path)["w"].float().numpy(), bf16(V[:4]).astype(np.float32)
    )
    st.save_file({"w": torch.tensor(V[:4]).bfloat16()}, path)
    np.testing.assert_array_equal(kn.load(path)["w"], bf16(V[:4]))


@pytest.mark.parametrize("compiled", [False, True])
def test_sorting_bfloat16_puts_nan_last_as_pytorch(compiled):
    # NumPy's sort of ml_dtypes' bfloat16 left NaN, and the values after it, in place:
    # sort/argsort/nanmedian/unique gave other values than PyTorch 2.13 (the oracle here)
    torch = pytest.importorskip("torch")
    v = [1.5, float("nan"), 2.25, 3.0, float("nan"), 0.5, 2.25]
    ops = {
        "sort": lambda L, x: tuple(L.sort(x)),
        "descending": lambda L, x: tuple(L.sort(x, descending=True, stable=True)),
        "argsort": lambda L, x: L.argsort(x, stable=True),
        "nanmedian": lambda L, x: tuple(L.nanmedian(x, 0)),
        "topk": lambda L, x: tuple(L.topk(x, 3, largest=False)),
    }
    if not compiled:  # unique's length is data-dependent: eager only
        ops["unique"] = lambda L, x: L.unique(x, return_inverse=True, return_counts=True)
    for name, op in ops.items():
        want = op(torch, torch.tensor(v, dtype=torch.bfloat16))
        fn = kn.compile(lambda x, op=op: op(kn, x)) if compiled else lambda x, op=op: op(kn, x)
        got = fn(kn.tensor(v).to(BF16))
        for g, w in zip(got, want):
            w = w.float().numpy() if w.dtype == torch.bfloat16 else w.numpy()
            np.testing.assert_array_equal(g.numpy().astype(w.dtype), w, err_msg=name)
