"""The memory layout of elementwise results, clones and casts, against PyTorch 2.13 itself
(skipped without torch): torch's TensorIterator gives a fresh elementwise result the stride
order of its inputs (`x.t() * 2` is column-major: strides (1, n), not contiguous, `view(-1)`
refused, `as_strided` reads it in that order), `clone()` keeps a dense layout and `.float()`
too, `contiguous()` is C order. Eager kiln, `kn.compile` and graph mode must answer what
torch answers for `stride()`, `is_contiguous()`, `view(-1)` and `as_strided` of such a
value; kn.compile took every fresh value as C-ordered, so `as_strided` of `x.t() * 2`
silently gathered other elements than eager kiln and torch (kiln/frontend/layouts.py).
Every expected value here is torch's, computed in the test on the same inputs."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _c(shape, start=0.0):
    return (start + np.arange(float(np.prod(shape)))).reshape(shape).astype(np.float32)


# name -> (program of (module, a, b), a's shape, b's shape)
CASES = {
    "t * 2": (lambda m, a, b: a.t() * 2, (3, 4), ()),
    "-t": (lambda m, a, b: -a.t(), (3, 4), ()),
    "t.exp()": (lambda m, a, b: a.t().exp(), (3, 4), ()),
    "t + t": (lambda m, a, b: a.t() + b.t(), (3, 4), (3, 4)),
    "t + row": (lambda m, a, b: a.t() + b, (3, 4), (3,)),
    "t + column": (lambda m, a, b: a.t() + b, (3, 4), (4, 1)),
    "column + t": (lambda m, a, b: b + a.t(), (3, 4), (4, 1)),
    "t * 2 * 3": (lambda m, a, b: a.t() * 2 * 3, (3, 4), ()),
    "t[::2] * 2": (lambda m, a, b: a.t()[::2] * 2, (3, 4), ()),
    "permute * 2": (lambda m, a, b: a.permute(0, 2, 3, 1) * 2, (2, 3, 4, 5), ()),
    "permute.sigmoid()": (lambda m, a, b: a.permute(0, 2, 3, 1).sigmoid(), (2, 3, 4, 5), ()),
    "permute + permute": (
        lambda m, a, b: a.permute(0, 2, 3, 1) + b.permute(0, 2, 3, 1),
        (2, 3, 4, 5),
        (2, 3, 4, 5),
    ),
    "permute + bias": (lambda m, a, b: a.permute(0, 2, 3, 1) + b, (2, 3, 4, 5), (3,)),
    "permute + other permute": (
        lambda m, a, b: a.permute(0, 2, 3, 1) + b.permute(3, 1, 2, 0),
        (2, 3, 4, 5),
        (3, 4, 5, 2),
    ),
    # mixed layouts: torch's first operand with distinct strides decides
    "t + contiguous": (lambda m, a, b: a.t() + b, (3, 4), (4, 3)),
    "contiguous + t": (lambda m, a, b: b + a.t(), (3, 4), (4, 3)),
    "permute + contiguous": (lambda m, a, b: a.permute(0, 2, 3, 1) + b, (2, 3, 4, 5), (2, 4, 5, 3)),
    "where(t, t, contiguous)": (lambda m, a, b: m.where(a.t() > 3, a.t(), b), (3, 4), (4, 3)),
    "t.clone()": (lambda m, a, b: a.t().clone(), (3, 4), ()),
    "(t * 2).clone()": (lambda m, a, b: (a.t() * 2).clone(), (3, 4), ()),
    "t[::2].clone()": (lambda m, a, b: a.t()[::2].clone(), (3, 4), ()),
    "slice.clone()": (lambda m, a, b: a[:, ::2].clone(), (3, 4), ()),
    "t.contiguous()": (lambda m, a, b: a.t().contiguous(), (3, 4), ()),
    "(t * 2).contiguous()": (lambda m, a, b: (a.t() * 2).contiguous(), (3, 4), ()),
    "t.clone(contiguous_format)": (
        lambda m, a, b: a.t().clone(memory_format=m.contiguous_format),
        (3, 4),
        (),
    ),
    "t.double().float()": (lambda m, a, b: a.t().double().float(), (3, 4), ()),
    "(t * 2).t()": (lambda m, a, b: (a.t() * 2).t(), (3, 4), ()),
    "(t * 2)[1]": (lambda m, a, b: (a.t() * 2)[1], (3, 4), ()),
    "(t * 2)[:, 1]": (lambda m, a, b: (a.t() * 2)[:, 1], (3, 4), ()),
    "(t * 2).reshape(-1)": (lambda m, a, b: (a.t() * 2).reshape(-1), (3, 4), ()),
    "(permute * 2).flatten(1)": (
        lambda m, a, b: (a.permute(0, 2, 3, 1) * 2).flatten(1),
        (2, 3, 4, 5),
        (),
    ),
}

# where eager kiln (NumPy's kernels lay out its results) differs from torch: none now (eager
# lays out results of a non-C-ordered input as torch does: kiln/frontend/layouts.py's
# `eager_layout`; tests/test_eager_layouts_torch.py sweeps more ops)
EAGER_DIFFERS: set = set()


def _inputs(name):
    _, sa, sb = CASES[name]
    return _c(sa), _c(sb, 100.0)


def _observe(y, found: dict):
    """What a user reads of y's layout (into `found`); returns y's storage read flat in
    order by `as_strided`."""
    found["stride"] = tuple(y.stride())
    found["contiguous"] = bool(y.is_contiguous())
    try:
        y.view(-1)
        found["view"] = "ok"
    except RuntimeError as e:  # torch's error type (kiln's ShapeMismatchError is one)
        found["view"] = "view size is not compatible" in str(e)
    return y.as_strided((y.numel(),), (1,))


def _torch(name):
    a, b = _inputs(name)
    found = {}
    flat = _observe(CASES[name][0](torch, torch.tensor(a), torch.tensor(b)), found)
    return found, flat.numpy()


def _eager(name):
    a, b = _inputs(name)
    found = {}
    flat = _observe(CASES[name][0](kn, kn.tensor(a), kn.tensor(b)), found)
    return found, flat.numpy()


def _compiled(name):
    a, b = _inputs(name)
    found = {}
    f = kn.compile(lambda x, y: _observe(CASES[name][0](kn, x, y), found))
    flat = f(kn.tensor(a), kn.tensor(b))
    return found, flat.numpy()


def _graph(name):
    a, b = _inputs(name)
    found = {}
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, a.shape, name="a")
        y = kn.placeholder(kn.float32, b.shape, name="b")
        flat = _observe(CASES[name][0](kn, x, y), found)
        (value,) = kn.function([x, y], [flat])(a, b)
    return found, np.asarray(value)


def _check(got, want):
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_and_graph_mode_match_torch(name):
    want = _torch(name)
    _check(_compiled(name), want)
    _check(_graph(name), want)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="NumPy's layout"))
        if n in EAGER_DIFFERS
        else n
        for n in sorted(CASES)
    ],  # fmt: skip
)
def test_eager_matches_torch(name):
    _check(_eager(name), _torch(name))


def _write_through_strided(m, a):
    y = a.t() * 2  # (3, 4), strides (1, 3): storage positions 1, 2 hold y[1, 0], y[2, 0]
    y.as_strided((2,), (1,), 1).mul_(-1)
    y.as_strided((2, 2), (3, 1), 4)[1, 0] = 100.0  # position 7: y[1, 2]
    return y


def _inplace_keeps_layout(m, a):
    y = a.t() * 2
    y[0] = 5.0  # an in-place change keeps y's memory: still column-major
    z = a * 1
    z.copy_(a.t().t() + 0)  # (z is C-ordered; the copy does not change that)
    return y, z, y.stride(), z.stride()


def test_writes_through_as_strided_of_a_transposed_result_match_torch():
    a = _c((4, 3))
    want = _write_through_strided(torch, torch.tensor(a)).numpy()
    assert want[1, 0] == -2.0 and want[1, 2] == 100.0  # (torch 2.13: the storage's order)
    np.testing.assert_array_equal(_write_through_strided(kn, kn.tensor(a)).numpy(), want)
    f = kn.compile(lambda x: _write_through_strided(kn, x))
    np.testing.assert_array_equal(f(kn.tensor(a)).numpy(), want)


def test_in_place_changes_keep_the_layout():
    a = _c((3, 3))
    want = _inplace_keeps_layout(torch, torch.tensor(a))
    assert want[2:] == ((1, 3), (3, 1))
    for got in (_inplace_keeps_layout(kn, kn.tensor(a)),
                kn.compile(lambda x: _inplace_keeps_layout(kn, x))(kn.tensor(a))):  # fmt: skip
        assert got[2:] == want[2:]
        np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_view_of_a_transposed_result_is_refused_under_compile_as_in_torch():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.ones(2, 3).t().mul(2).view(-1)
    f = kn.compile(lambda x: (x.t() * 2).view(-1))
    with pytest.raises(kn.errors.ShapeMismatchError, match="view size is not compatible"):
        f(kn.ones(2, 3))
    g = kn.compile(lambda x: (x.t() * 2).contiguous().view(-1))
    np.testing.assert_array_equal(g(kn.ones(2, 3)).numpy(), np.full(6, 2.0))


def _operand(rng, shape):
    """(memory shape, a view of it broadcastable to `shape`): dims dropped or of size 1,
    permuted, stepped."""
    lead = int(rng.integers(0, len(shape) + 1)) if rng.random() < 0.3 else 0
    own = [1 if rng.random() < 0.25 else n for n in shape[lead:]]
    perm = rng.permutation(len(own)).tolist()
    steps = [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in own]
    inverse = tuple(int(k) for k in np.argsort(perm))
    index = tuple(slice(None, None, k) for k in steps)
    return [own[p] * steps[p] for p in perm], lambda t: t.permute(inverse)[index]


def _program(kind):
    return {
        "add": lambda m, *xs: sum(xs[1:], xs[0]),
        "where": lambda m, *xs: m.where(xs[0] > 2, xs[1], xs[-1]),
        "clone": lambda m, *xs: xs[0].clone(),
        "double": lambda m, *xs: xs[0].double(),
        "mul 2": lambda m, *xs: xs[0] * 2,
    }[kind]


def test_random_layouts_match_torch():
    # 200 random programs: graph mode's strides of the result are torch's, whatever the
    # inputs' permutations, steps, broadcasts and size-1 dims (torch's ties among them)
    rng = np.random.default_rng(0)
    for _ in range(200):
        shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 5)))]
        kind = str(rng.choice(["add", "where", "clone", "double", "mul 2"]))
        count = {"add": int(rng.integers(2, 4)), "where": 3}.get(kind, 1)
        operands = [_operand(rng, shape) for _ in range(count)]
        tensors = [view(torch.zeros(memory)) for memory, view in operands]
        want = _program(kind)(torch, *tensors).stride()
        with kn.Graph().as_default():
            xs = [view(kn.placeholder(kn.float32, tuple(memory))) for memory, view in operands]
            got = _program(kind)(kn, *xs).stride()
        assert got == want, (kind, shape, [t.stride() for t in tensors])


def test_a_long_chain_of_elementwise_ops_keeps_the_layout():
    # 3,000 ops after a transpose: the layout walk must not recurse once per op (Python's
    # limit is 1,000 frames); torch's result keeps the transpose's column-major order
    with kn.Graph().as_default():
        h = kn.placeholder(kn.float32, (3, 4)).t()
        for _ in range(1500):
            h = (h * 0.5).tanh()
        assert h.stride() == torch.zeros(3, 4).t().tanh().stride() == (1, 4)
        assert not h.is_contiguous()
