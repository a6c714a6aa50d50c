"""The Tensor methods (and their `kn.X` forms) that kiln added for issue 11, against PyTorch
2.13 eagerly, in graph mode and under `kn.compile`, with gradients (skipped without torch),
plus hand-computed cases that run without it. Random fills are checked by their moments,
within 6 standard errors."""

import math

import numpy as np
import pytest

import kiln as kn

# PyTorch warns that its index_reduce is in beta
pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
V = RNG.standard_normal(6)
B1, B2 = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 5, 3))
SQ = RNG.standard_normal((3, 3))
L3 = np.tril(RNG.standard_normal((3, 3)), -1) + np.diag([1.5, 2.0, 1.2])  # a Cholesky factor
RHS = RNG.standard_normal((3, 2))
W = np.array([0.25])
I1 = np.array([0, 2, 0, 3])  # an index with repeats
SRC = RNG.uniform(0.5, 2.0, (4, 3))  # distinct values: amax/amin have no ties
INTS_A, INTS_B = np.array([12, -18, 7, 0, 5]), np.array([18, 12, 0, 0, -15])

# name -> (fn(t, *arrays) with t the first array as a tensor of torch or kiln, arrays)
CASES = {
    "addbmm": (lambda t, b1, b2: t.addbmm(b1, b2, beta=0.5, alpha=2), (X, B1, B2)),
    "addbmm_": (lambda t, b1, b2: t.clone().addbmm_(b1, b2), (X, B1, B2)),
    "cholesky_solve": (lambda b, f: b.cholesky_solve(f), (RHS, L3)),
    "cholesky_solve-upper": (lambda b, f: b.cholesky_solve(f.mT, upper=True), (RHS, L3)),
    "cholesky_inverse": (lambda f: f.cholesky_inverse(), (L3,)),
    "cholesky_inverse-upper": (lambda f: f.mT.cholesky_inverse(upper=True), (L3,)),
    "gcd": (lambda a, b: a.gcd(b), (INTS_A, INTS_B)),
    "lcm": (lambda a, b: a.lcm(b), (INTS_A, INTS_B)),
    "gcd_": (lambda a, b: a.clone().gcd_(b), (INTS_A, INTS_B)),
    "lcm_": (lambda a, b: a.clone().lcm_(b), (INTS_A, INTS_B)),
    "hardshrink": (lambda t: t.hardshrink(0.6), (X,)),
    "prelu": (lambda t, w: t.prelu(w), (X, W)),
    "diagflat": (lambda t: t.diagflat(1), (X[:2],)),
    "diagonal_scatter": (lambda t, v: t.diagonal_scatter(v[:3]), (X, V)),
    "select_scatter": (lambda t, v: t.select_scatter(v[:3], 0, 1), (X, V)),
    "slice_scatter": (lambda t, s: t.slice_scatter(s[:2], 0, 1, 4, 2), (X, SRC)),
    "fill_diagonal_": (lambda t: t.clone().fill_diagonal_(5.0), (SQ,)),
    "fill_diagonal_-tall": (lambda t: t.clone().fill_diagonal_(-1.0), (np.zeros((7, 3)),)),
    "fill_diagonal_-wrap": (
        lambda t: t.clone().fill_diagonal_(2.0, wrap=True),
        (np.zeros((7, 3)),),
    ),  # fmt: skip
    "fill_diagonal_-3d": (lambda t: t.clone().fill_diagonal_(3.0), (np.zeros((2, 2, 2)),)),
    "ldexp_": (lambda t, e: t.clone().ldexp_(e), (X, np.array([1.0, -2.0, 3.0]))),
    "t_": (lambda t: (t * 1).t_() * 2, (X,)),
    "transpose_": (lambda t: (t * 1).transpose_(0, 1) + 1, (X,)),
    "swapaxes_": (lambda t: (t * 1).swapaxes_(0, 1) + 1, (X,)),
    "swapdims_": (lambda t: (t * 1).swapdims_(1, 0) + 1, (X,)),
    "squeeze_": (lambda t: (t[:1] * 1).squeeze_() + 1, (X,)),
    "squeeze_-dim": (lambda t: (t[:, :1] * 1).squeeze_(1) + 1, (X,)),
    "unsqueeze_": (lambda t: (t * 1).unsqueeze_(1) * 3, (X,)),
    "unsafe_chunk": (lambda t: t.unsafe_chunk(2, 1), (X,)),
    "unsafe_split": (lambda t: t.unsafe_split(3), (X,)),
    "unsafe_split_with_sizes": (lambda t: t.unsafe_split_with_sizes([1, 2], 1), (X,)),
    "as_strided": (lambda t: t.as_strided((2, 2), (1, 2), 1), (V,)),
    "as_strided-overlap": (lambda t: t.as_strided((3, 3), (1, 1)), (V,)),
    "as_strided-of-a-view": (lambda t: t.T.as_strided((2, 2), (3, 1), 1), (X,)),
    "as_strided_scatter": (lambda t, s: t.as_strided_scatter(s[0, :2], (2,), (3,), 1), (V, SRC)),
    "detach_": (lambda t: (t * 2).detach_() + 1, (X,)),
    "resize_": (lambda t: (t * 1).resize_(2, 3) + 1, (X,)),  # the leading 6 elements
    "resize_as_": (lambda t, v: (t * 1).resize_as_(v[:5]) * 2, (X, V)),
}
for _reduce in ("prod", "mean", "amax", "amin"):
    for _self in (True, False):
        CASES[f"index_reduce-{_reduce}-{_self}"] = (
            lambda t, s, reduce=_reduce, include=_self: t.index_reduce(
                0, t.new_tensor(I1).long(), s, reduce, include_self=include
            ),
            (X, SRC),
        )  # fmt: skip
CASES["index_reduce_"] = (lambda t, s: t.clone().index_reduce_(1, t.new_tensor([2, 0, 2]).long(),
                                                               s, "prod"), (X, SRC))  # fmt: skip

# the differentiable ones: gradients of sum(f(...)**2) with respect to the float inputs
_NO_GRADS = ("gcd", "lcm", "unsafe", "fill_diagonal_-", "detach_", "resize_")
GRADS = [n for n in CASES if not n.startswith(_NO_GRADS)]


def _torch_grad(name, t, k, ts):
    """PyTorch's gradient of input t, where kiln's is the derivative of what its forward reads:
    - the Cholesky factor: PyTorch's formula also fills the triangle its forward does not
      read (kiln's is 0 there; through `cholesky` the two agree, its vjp reads the triangle);
    - as_strided_scatter's input: PyTorch 2.13's fails its own gradcheck (it passes the
      overwritten elements' cotangents and drops the rest): the derivative by hand is the
      cotangent 2 * out where input's elements are kept, 0 where src overwrites them."""
    want = t.grad.numpy()
    if name.startswith("cholesky") and t is ts[-1]:
        return np.tril(want)  # the array is lower triangular (the upper cases use its mT)
    if name == "as_strided_scatter" and t is ts[0]:
        kept = np.ones(6, bool)
        kept[[1, 4]] = False  # the positions (2,) (3,) at offset 1 write
        out = t.detach().numpy().copy()
        out[[1, 4]] = ts[1].detach().numpy()[0, :2]
        return np.where(kept, 2 * out, 0.0)
    return want


def _np(out):
    if isinstance(out, (tuple, list)):
        return [_np(o) for o in out]
    return out.detach().numpy() if hasattr(out, "detach") else np.asarray(out)


def _check(got, want, what):
    if isinstance(want, list):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            _check(g, w, what)
        return
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=what)


def _torch_args(torch, arrays):
    return [torch.tensor(a) for a in arrays]


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_in_every_mode(torch, name):
    fn, arrays = CASES[name]
    want = _np(fn(*_torch_args(torch, arrays)))
    _check(_np(fn(*map(kn.tensor, arrays))), want, "eager")
    _check(_np(kn.compile(fn)(*map(kn.tensor, arrays))), want, "compile")
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        out = fn(*xs)
        outs = list(out) if isinstance(out, tuple) else [out]
        got = kn.function(xs, outs)(*arrays)
    _check(got if isinstance(out, tuple) else got[0], want, "graph")


@pytest.mark.parametrize("name", GRADS)
def test_gradients_match_torch(torch, name):
    fn, arrays = CASES[name]
    ts = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    (fn(*ts) ** 2).sum().backward()
    ks = [kn.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    (fn(*ks) ** 2).sum().backward()
    want = [_torch_grad(name, t, k, ts) for t, k in zip(ts, ks) if t.requires_grad]
    got = [k.grad.numpy() for k in ks if k.requires_grad]
    with kn.Graph().as_default():  # graph mode: kn.grad
        xs = [kn.placeholder(a.dtype, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        floats = [x for x in xs if x.dtype.kind == "f"]
        grads = kn.grad(kn.sum(fn(*xs) ** 2), floats)
        in_graph = kn.function(xs, list(grads))(*arrays)
    assert len(got) == len(want) == len(in_graph)
    for g, h, w in zip(got, in_graph, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(h, w, rtol=1e-8, atol=1e-10)


def test_cholesky_gradients_through_cholesky_are_pytorchs(torch):
    # where the factor comes from `cholesky` (whose vjp reads the factor's triangle), the
    # gradients reaching the matrix are PyTorch's, entries above the triangle included
    r = RNG.standard_normal((3, 3))
    a_np = r @ r.T + 3 * np.eye(3)
    grads = []
    for L in (torch, kn):
        a, b = L.tensor(a_np, requires_grad=True), L.tensor(RHS, requires_grad=True)
        f = L.linalg.cholesky(a)
        ((f.cholesky_inverse() ** 2).sum() + (b.cholesky_solve(f) ** 2).sum()).backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for theirs, ours in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_function_forms_match_torch(torch):
    t = lambda a: torch.tensor(a)  # noqa: E731
    pairs = [
        (lambda L, c: L.addbmm(c(X), c(B1), c(B2), alpha=0.5), "addbmm"),
        (lambda L, c: L.cholesky_solve(c(RHS), c(L3)), "cholesky_solve"),
        (lambda L, c: L.cholesky_inverse(c(L3)), "cholesky_inverse"),
        (lambda L, c: L.gcd(c(INTS_A), c(INTS_B)), "gcd"),
        (lambda L, c: L.lcm(c(INTS_A), c(INTS_B)), "lcm"),
        (lambda L, c: L.index_reduce(c(X), 0, c(I1), c(SRC), "amax"), "index_reduce"),
        (lambda L, c: L.as_strided(c(V), (2, 2), (2, 1)), "as_strided"),
        (lambda L, c: L.as_strided_scatter(c(V), c(SRC[0]), (3,), (2,)), "as_strided_scatter"),
        (lambda L, c: L.unsafe_split(c(V), 4), "unsafe_split"),
        (lambda L, c: L.unsafe_chunk(c(V), 4), "unsafe_chunk"),
        (lambda L, c: L.unsafe_split_with_sizes(c(V), [2, 4]), "unsafe_split_with_sizes"),
        (lambda L, c: L.gcd_(c(INTS_A), c(INTS_B)), "gcd_"),
        (lambda L, c: L.lcm_(c(INTS_A), c(INTS_B)), "lcm_"),
        (lambda L, c: L.ldexp_(c(V), c(V.round())), "ldexp_"),
        (lambda L, c: L.detach_(c(V)), "detach_"),
        (lambda L, c: L.resize_as_(c(V), c(X)).shape, "resize_as_"),
    ]
    for fn, name in pairs:
        with np.errstate(all="ignore"):
            want = fn(torch, t)
        got = fn(kn, kn.tensor)
        if name == "resize_as_":
            assert tuple(got) == tuple(want), name
            continue
        _check(_np(got), _np(want), name)


def test_random_fills_refuse_as_pytorch(torch):
    calls = [
        lambda x: x.exponential_(0),
        lambda x: x.cauchy_(0, 0),
        lambda x: x.log_normal_(1, 0),
        lambda x: x.geometric_(1),
        lambda x: x.random_(5, 5),
        lambda x: x.long().exponential_(),
        lambda x: x.long().cauchy_(),
        lambda x: x.char().random_(0, 1000),
    ]
    for call in calls:
        with pytest.raises(RuntimeError):
            call(torch.zeros(3))
        with pytest.raises(RuntimeError):
            call(kn.zeros(3))
    for L in (torch, kn):  # no integer kernel
        with pytest.raises(NotImplementedError):
            L.zeros(3).long().log_normal_()


# -- layouts: strides and offsets of Symbols, as PyTorch's of the same history ----------------

LAYOUTS = {
    "plain": lambda t: t,
    "T": lambda t: t.T,
    "slice": lambda t: t[1:, ::2],
    "row": lambda t: t[2],
    "column": lambda t: t[:, 1],
    "expand": lambda t: t[:1].expand(3, 4, 3),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "permute-reshape": lambda t: t.T.reshape(12),  # a copy: fresh and contiguous
    "split-piece": lambda t: t.split(2, 1)[1],
    "view-of-T": lambda t: t.T[1:],
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_symbol_strides_and_offsets_are_pytorchs(torch, name):
    fn = LAYOUTS[name]
    t = fn(torch.tensor(X))
    want = (t.stride(), t.storage_offset(), t.dim_order(), t.is_contiguous())
    k = fn(kn.tensor(X))
    assert (k.stride(), k.storage_offset(), k.dim_order(), k.is_contiguous()) == want
    with kn.Graph().as_default():
        s = fn(kn.placeholder(kn.float64, X.shape))
        assert (s.stride(), s.storage_offset(), s.dim_order()) == want[:3]
    seen = []
    kn.compile(lambda a: seen.append((fn(a).stride(), fn(a).storage_offset())) or a * 1)(
        kn.tensor(X)
    )
    assert seen == [want[:2]]


def test_dim_order_ambiguity_as_pytorchs(torch):
    for L in (torch, kn):
        t = L.zeros(4, 3)
        assert t.T.dim_order(ambiguity_check=True) == (1, 0)
        with pytest.raises(RuntimeError, match="unique dim order"):
            t.unsqueeze(1).expand(4, 2, 3).dim_order(ambiguity_check=True)


def test_symbol_layouts_kiln_does_not_track_raise():
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, ("n", 3))
        with pytest.raises(kn.GraphError, match="symbolic"):
            a.stride()
        b = kn.placeholder(kn.float32, (2, 4))
        with pytest.raises(kn.GraphError, match="element size"):
            b.view(kn.float16).stride()
        with pytest.raises(RuntimeError, match="not elements of the tensor"):
            b[1].as_strided((2,), (1,), 7)  # position 8: past b's storage (torch raises too)
        # storage before the row is b's: the view reads it, as torch's does
        assert b[1].as_strided((2,), (1,), 0).node.inputs[0].node.inputs[0] is b  # take(b)


# -- flags and memory facts ------------------------------------------------------------------


def test_flags_and_memory_facts(torch):
    t, k = torch.ones(2, 3), kn.ones(2, 3)
    with kn.Graph().as_default():
        s = kn.placeholder(kn.float32, (2, 3))
    flags = "is_sparse is_sparse_csr is_quantized is_meta is_nested is_mkldnn is_xla is_xpu "
    flags += "is_mps is_ipu is_vulkan is_maia is_mtia"
    for name in flags.split():
        assert getattr(t, name) is getattr(k, name) is getattr(s, name) is False, name
    assert t.is_pinned() is k.is_pinned() is s.is_pinned() is False
    assert t.is_shared() is k.is_shared() is s.is_shared() is False
    assert k.layout is s.layout is kn.strided and repr(k.layout) == "kiln.strided"
    assert k.share_memory_() is k
    assert k.data_ptr() == k.numpy().__array_interface__["data"][0]
    assert k[1].data_ptr() - k.data_ptr() == 3 * 4 == t[1].data_ptr() - t.data_ptr()
    if not kn.cuda.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            torch.ones(2).pin_memory()
        with pytest.raises(RuntimeError, match="accelerator"):
            kn.ones(2).pin_memory()


def test_autograd_facts(torch):
    for L in (torch, kn):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        assert (x.output_nr, y.output_nr, x.retains_grad, y.retains_grad) == (0, 0, False, False)
        y.retain_grad()
        assert y.retains_grad
        with pytest.raises(RuntimeError, match="leaf Variable"):
            x.t_()
        with pytest.raises(RuntimeError, match="views in-place"):
            y[0].detach_()
        assert x.detach_() is x and not x.requires_grad


def test_strided_factories(torch):
    want = torch.empty_strided((2, 3), (1, 2))
    got = kn.empty_strided((2, 3), (1, 2))
    assert got.stride() == want.stride() and got.shape == want.shape
    got = kn.ones(2, dtype=kn.int32).new_empty_strided((3, 2), (1, 3))
    assert got.stride() == (1, 3) and got.dtype == kn.int32


def test_as_strided_is_a_view_of_the_memory():
    # by hand: the (2, 2) window at offset 1 with strides (1, 2) of arange(6) is [[1, 3], [2, 4]]
    x = kn.arange(6.0)
    v = x.as_strided((2, 2), (1, 2), 1)
    assert v.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    v[0, 1] = 30.0  # writes through to x's element 3
    assert x.tolist() == [0.0, 1.0, 2.0, 30.0, 4.0, 5.0]
    assert x[2:].as_strided((2,), (1,)).tolist() == [2.0, 30.0]  # from x[2:]'s own offset
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.as_strided((3,), (3,))


def test_hand_computed_values():
    # gcd/lcm: gcd(12, 18) = 6, lcm(4, 6) = 12, non-negative, gcd(0, 0) = 0
    assert kn.gcd(kn.tensor([12, -18, 0]), kn.tensor([18, 12, 0])).tolist() == [6, 6, 0]
    assert kn.lcm(kn.tensor([4, -6, 0]), kn.tensor([6, 4, 3])).tolist() == [12, 12, 0]
    with pytest.raises(NotImplementedError):
        kn.gcd(kn.tensor([1.0]), kn.tensor([2.0]))
    # addbmm: 3 batches of ones(2, 4) @ ones(4, 2) sum to 12, plus beta * 1
    assert kn.addbmm(kn.ones(2, 2), kn.ones(3, 2, 4), kn.ones(3, 4, 2), beta=0.5).tolist() == [
        [12.5, 12.5], [12.5, 12.5]]  # fmt: skip
    # L = [[2, 0], [1, 1]]: A = L Lᵀ = [[4, 2], [2, 2]], A [1, 1]ᵀ = [6, 4]ᵀ, A⁻¹ by hand
    f = kn.tensor([[2.0, 0.0], [1.0, 1.0]])
    assert kn.cholesky_solve(kn.tensor([[6.0], [4.0]]), f).tolist() == [[1.0], [1.0]]
    assert kn.cholesky_inverse(f).tolist() == [[0.5, -0.5], [-0.5, 1.0]]
    # index_reduce: rows 0 and 0 and 2 of the source multiply into x's rows
    x = kn.ones(3, 2)
    got = x.index_reduce(0, kn.tensor([0, 0, 2]), kn.tensor([[2.0, 1.0], [3.0, 5.0], [4.0, 4.0]]),
                         "prod")  # fmt: skip
    assert got.tolist() == [[6.0, 5.0], [1.0, 1.0], [4.0, 4.0]]
    # NumPy's fill_diagonal (PyTorch's too): wrap restarts the diagonal after a blank row
    t = kn.zeros(5, 2).fill_diagonal_(1.0, wrap=True)
    assert t.tolist() == [[1, 0], [0, 1], [0, 0], [1, 0], [0, 1]]
    # in-place views keep the memory: t_ of a 2x3 gives strides (1, 3)
    y = kn.arange(6.0).reshape(2, 3) * 1
    assert y.t_().shape == (3, 2) and y.stride() == (1, 3)
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (2, 3))
        assert a.stride() == (3, 1) and a.T.stride() == (1, 3) and a[1, 1:].storage_offset() == 4
        b = a * 1
        b.unsqueeze_(0)
        assert b.shape == (1, 2, 3)
        with pytest.raises(kn.GraphError):
            a.t_()  # a feed: its object names the graph's input


def test_apply_and_map():
    t = kn.tensor([1.0, 2.0, 3.0])
    assert t.apply_(lambda v: v * v) is t and t.tolist() == [1.0, 4.0, 9.0]
    assert t.map_(kn.tensor([1.0]), lambda a, b: a - b).tolist() == [0.0, 3.0, 8.0]


# -- random fills: moments, generators, fresh draws ------------------------------------------

N = 20000

# name -> (call, statistic of the draws, its expected value, its standard deviation per draw)
RANDOM = {
    "exponential_": (lambda x: x.exponential_(2.0), lambda d: d, 0.5, 0.5),
    "log_normal_": (lambda x: x.log_normal_(0.5, 0.4), np.log, 0.5, 0.4),
    "geometric_": (lambda x: x.geometric_(0.3), lambda d: d, 1 / 0.3, math.sqrt(0.7) / 0.3),
    # Cauchy has no moments: the fraction below median + sigma is 3/4
    "cauchy_": (lambda x: x.cauchy_(1.0, 2.0), lambda d: d < 3.0, 0.75, math.sqrt(0.1875)),
    "random_": (lambda x: x.random_(3, 10), lambda d: d, 6.0, 2.0),
    "random_-to": (lambda x: x.random_(4), lambda d: d, 1.5, math.sqrt(15 / 12)),
}


def _moment_ok(draws, stat, mean, sd):
    values = np.asarray(stat(np.asarray(draws, np.float64)), np.float64)
    assert abs(values.mean() - mean) < 6 * sd / math.sqrt(values.size), (values.mean(), mean)


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_fills_by_moments_in_every_mode(name):
    call, stat, mean, sd = RANDOM[name]
    kn.manual_seed(1)
    eager = call(kn.zeros(N, dtype=kn.float64))
    _moment_ok(eager.numpy(), stat, mean, sd)
    f = kn.compile(lambda x: call(x.clone()))
    a, b = f(kn.zeros(N, dtype=kn.float64)), f(kn.zeros(N, dtype=kn.float64))
    assert not np.array_equal(a.numpy(), b.numpy())  # fresh draws per call
    _moment_ok(a.numpy(), stat, mean, sd)
    with kn.Graph().as_default():
        z = kn.placeholder(kn.float64, (N,))
        y = z * 1
        call(y)
        g = kn.function([z], y)
    first, second = g(np.zeros(N)), g(np.zeros(N))
    assert not np.array_equal(first, second)
    _moment_ok(second, stat, mean, sd)
    if name.startswith("random_"):
        low = 3 if name == "random_" else 0
        assert set(np.unique(first)) == set(range(low, low + int(2 * mean - 2 * low + 1)))


def test_random_fills_follow_the_generator():
    for name in ("exponential_", "cauchy_", "log_normal_", "geometric_", "random_"):
        call = RANDOM[name][0]
        g = kn.Generator().manual_seed(7)
        a = getattr(kn.zeros(5, dtype=kn.float64), name)(
            *{"geometric_": (0.3,)}.get(name, ()), generator=g
        )
        b = getattr(kn.zeros(5, dtype=kn.float64), name)(
            *{"geometric_": (0.3,)}.get(name, ()), generator=kn.Generator().manual_seed(7)
        )
        assert np.array_equal(a.numpy(), b.numpy()), name
        kn.manual_seed(3)
        c = call(kn.zeros(5, dtype=kn.float64))
        kn.manual_seed(3)
        assert np.array_equal(c.numpy(), call(kn.zeros(5, dtype=kn.float64)).numpy())


def test_random_default_ranges():
    # PyTorch's random_(): floats in [0, 2**mantissa digits], integers up to the dtype's max
    x = kn.zeros(4000).random_()
    assert x.numpy().max() <= 2**24 and (x.numpy() == np.round(x.numpy())).all()
    assert x.numpy().max() > 2**22
    u = kn.zeros(4000, dtype=kn.uint8).random_()
    assert u.numpy().max() >= 250 and u.dtype == kn.uint8
    i = kn.zeros(100, dtype=kn.int64).random_()
    assert i.numpy().min() >= 0 and i.numpy().max() > 2**60
    with pytest.raises(RuntimeError, match="out of bounds"):
        kn.zeros(3, dtype=kn.int8).random_(0, 1000)
