"""kiln's array semantics against PyTorch itself (skipped without torch): the idioms of
tests/test_torch_semantics.py, the promotion table, printing and grad_fn names, each
written once for both libraries (`lib` is `kn` or `torch`)."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")


def both(fn, *arrays):
    """fn on kiln tensors and on torch tensors, results as lists of NumPy arrays."""

    def as_list(out):
        return list(out) if isinstance(out, tuple) else [out]

    k = [v.detach().numpy() for v in as_list(fn(kn, *[kn.tensor(a) for a in arrays]))]
    t = [v.detach().numpy() for v in as_list(fn(torch, *[torch.from_numpy(a) for a in arrays]))]
    return k, t


X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
INTS = np.array([[12, -3, 7], [0, 5, -8]], np.int32)

CASES = {
    "transpose": (lambda lib, x: (x.transpose(0, 1), x.T, x.mT, x.t(), x.permute(1, 0)), [X]),
    "var-std": (
        lambda lib, x: (
            x.var(),
            x.std(1),
            x.var(0, unbiased=False),
            x.std(dim=1, correction=0, keepdim=True),
        ),
        [X],
    ),  # fmt: skip
    "max-dim": (lambda lib, x: (*x.max(1), *lib.min(x, dim=0, keepdim=True), x.max()), [X]),
    "bitwise": (lambda lib, a: (a & 6, a | 1, a ^ (a * 3), ~a, a << 2, a >> 1), [INTS]),
    "bool-bitwise": (lambda lib, a: (~(a > 0), (a > 0) & (a < 7), (a > 0) ^ True), [INTS]),
    "reductions": (
        lambda lib, x: (
            x.sum(dim=1, keepdim=True),
            x.mean(0),
            x.prod(1),
            x.amax(dim=(0, 1)),
            x.argmax(dim=0),
            x.logsumexp(1),
            x.sum(1, dtype=lib.float64),
            (x > 0).all(1),
            (x > 0).any(dim=0, keepdim=True),
        ),
        [X],
    ),  # fmt: skip
    "int-sums": (lambda lib, a: (a.sum(), (a > 0).sum(1), a.prod(0)), [INTS]),
    "promotion": (
        lambda lib, a: (
            a / (a * 2 + 1),
            a + 0.5,
            a * 2,
            a // 3,
            a.exp(),
            a.to(lib.int8) + 1,
            a.to(lib.float16) * a,
        ),
        [INTS],
    ),  # fmt: skip
    "squeeze": (
        lambda lib, x: (
            x.unsqueeze(0).squeeze(0),
            x.squeeze(1),
            x.reshape(3, 1, 4).squeeze((0, 1)),
            x.sum().sum(0),
            x.sum().sum(-1, keepdim=True),
            x.flatten(start_dim=0),
        ),
        [X],
    ),  # fmt: skip
    "contiguous-view": (lambda lib, x: x.T.contiguous().view(12), [X]),
    "softmax": (lambda lib, x: (lib.softmax(x, dim=1), lib.log_softmax(x, dim=0)), [X]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_idioms_match_torch(name):
    fn, arrays = CASES[name]
    with np.errstate(all="ignore"):
        got, want = both(fn, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


def _torch_dtype(name):
    return getattr(torch, name)


@pytest.mark.parametrize("left", NAMES)
def test_result_type_matches_torch(left):
    for right in NAMES:
        for ndim in (0, 1):
            a = np.ones(2, left)
            b = np.ones((2,) * ndim, right)
            want = torch.result_type(torch.from_numpy(a), torch.from_numpy(b))
            assert str(kn.result_type(a, b)) == str(want).replace("torch.", "kiln."), (left, right)
        for scalar in (True, 3, 2.5):
            want = torch.result_type(torch.ones(2, dtype=_torch_dtype(left)), scalar)
            got = kn.result_type(np.ones(2, left), scalar)
            assert str(got) == str(want).replace("torch.", "kiln."), (left, scalar)


def test_repr_and_grad_fn_names_match_torch():
    def build(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        m = lib.ones(2, 2, requires_grad=True)
        return [w, w * 2, w + 1, w / 2, w**2, w.exp(), w.sum(), m.sum(0), w.mean(), m @ m,
                w @ w, w.relu(), w.tanh(), w.sigmoid(), m.view(4), m.t(), -w,
                lib.tensor([1, 2], dtype=lib.int32), lib.zeros(0, 3), lib.tensor([1.5, -2.25]),
                lib.tensor([[1.0, 20.0], [3.0, 4.0]])]  # fmt: skip

    got = [repr(t).replace("kiln.", "torch.") for t in build(kn)]
    want = [repr(t) for t in build(torch)]
    assert got == want


def test_cuda_memory_functions_match_torch_without_a_gpu():
    if kn.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("a GPU is present")
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "empty_cache"):
        assert getattr(kn.cuda, name)() == getattr(torch.cuda, name)(), name
