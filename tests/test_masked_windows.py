"""`kn.masked` (torch.masked's reductions and normalizations with mask=) and
`kn.signal.windows` (torch.signal.windows) against PyTorch 2.13, the oracle: eagerly, in graph
mode (placeholders and kn.function) and under kn.compile, with gradients through the kept
elements. (The OpInfo sweep, tests/test_torch_opinfo.py, also runs PyTorch's own samples.)"""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = np.array(
    [[1.5, -2.0, 3.0, 0.5], [4.0, 4.0, -1.0, 2.5], [0.25, 7.0, -3.5, 1.0]], np.float32
)  # fmt: skip
# row 1 is masked out entirely (PyTorch's values there: the identity, NaN, -inf...)
MASK = np.array([[True, False, True, True], [False] * 4, [True, True, False, True]])

# name -> (positional arguments after the input, keyword arguments)
CASES = {
    "sum": ((1,), {}), "sum_all": ((), {}), "prod": ((1,), {"keepdim": True}),
    "cumsum": ((1,), {}), "cumprod": ((0,), {}), "amax": ((1,), {}), "amin": ((0,), {}),
    "argmax": ((1,), {}), "argmin": ((1,), {"keepdim": True}), "mean": ((1,), {}),
    "median": ((1,), {}), "logsumexp": ((1,), {}), "norm": ((2.0, 1), {}),
    "norm_inf": ((float("-inf"), 1), {}), "var": ((1,), {}), "std": ((0,), {"correction": 0}),
    "softmax": ((1,), {}), "log_softmax": ((1,), {}), "softmin": ((1,), {}),
    "normalize": ((2.0, 1), {}),
}  # fmt: skip


def _fn(module, case):
    return getattr(module, case.split("_all")[0].split("_inf")[0])


def _torch(case, mask=MASK):
    args, kwargs = CASES[case]
    m = None if mask is None else torch.from_numpy(mask)
    return _fn(torch.masked, case)(torch.from_numpy(X), *args, mask=m, **kwargs).numpy()


def _check(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("masked", [True, False])
def test_eager_graph_and_compiled_as_pytorch(case, masked):
    args, kwargs = CASES[case]
    mask = MASK if masked else None
    want = _torch(case, mask)
    fn = _fn(kn.masked, case)

    def call(x, m):
        return fn(x, *args, mask=m, **kwargs)

    km = None if mask is None else kn.tensor(mask)
    _check(call(kn.tensor(X), km).numpy(), want)
    _check(kn.compile(call)(kn.tensor(X), km).numpy(), want)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, X.shape, name="x")
        m = None if mask is None else kn.placeholder(kn.bool, MASK.shape, name="m")
        f = kn.function([x] if m is None else [x, m], call(x, m))
    _check(f(X) if mask is None else f(X, mask), want)


@pytest.mark.parametrize("case", ["sum", "mean", "amax", "softmax", "var", "normalize", "prod"])
def test_gradients_reach_only_the_kept_elements_as_pytorch(case):
    args, kwargs = CASES[case]
    tx = torch.from_numpy(X).requires_grad_()
    # the fully masked row's NaN results (mean, var) would give NaN gradients: rows 0 and 2
    rows = [0, 2]
    t = torch.masked.__dict__[case](tx, *args, mask=torch.from_numpy(MASK), **kwargs)
    t[rows].sum().backward() if t.shape[0] == 3 else t.sum().backward()
    kx = kn.tensor(X, requires_grad=True)
    k = getattr(kn.masked, case)(kx, *args, mask=kn.tensor(MASK), **kwargs)
    k[rows].sum().backward() if k.shape[0] == 3 else k.sum().backward()
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_dtypes_and_broadcast_masks_as_pytorch():
    ints = np.array([[3, -1, 4], [1, -5, 9]], np.int32)
    row_mask = np.array([True, False, True])  # broadcast over the rows
    for name in ("sum", "prod", "amax", "amin", "argmax"):
        want = getattr(torch.masked, name)(
            torch.from_numpy(ints), 1, mask=torch.from_numpy(row_mask)
        ).numpy()
        got = getattr(kn.masked, name)(kn.tensor(ints), 1, mask=kn.tensor(row_mask)).numpy()
        _check(got, want)
    for name in ("var", "std"):  # integer inputs: float32
        want = getattr(torch.masked, name)(torch.from_numpy(ints), 1).numpy()
        _check(getattr(kn.masked, name)(kn.tensor(ints), 1).numpy(), want)
    with pytest.raises(ValueError):  # torch: mean of integers needs dtype=
        kn.masked.mean(kn.tensor(ints))
    with pytest.raises(IndexError):  # a mask of more dims than the input
        kn.masked.sum(kn.tensor([1.0]), mask=kn.tensor([[True]]))


def test_logaddexp_with_two_masks_as_pytorch():
    a, b = X[0], X[2]
    ma, mb = MASK[0], np.array([False, True, False, False])
    want = torch.masked.logaddexp(
        torch.from_numpy(a), torch.from_numpy(b), input_mask=torch.from_numpy(ma),
        other_mask=torch.from_numpy(mb),
    ).numpy()  # fmt: skip
    got = kn.masked.logaddexp(
        kn.tensor(a), kn.tensor(b), input_mask=kn.tensor(ma), other_mask=kn.tensor(mb)
    )
    _check(got.numpy(), want)


WINDOWS = {
    "bartlett": {}, "blackman": {}, "cosine": {}, "exponential": {"tau": 2.5},
    "gaussian": {"std": 1.7}, "general_cosine": {"a": [0.46, 0.23, 0.31]},
    "general_hamming": {"alpha": 0.6}, "hamming": {}, "hann": {}, "kaiser": {"beta": 5.0},
    "nuttall": {},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_as_pytorch(name):
    for M in (0, 1, 2, 5, 8):
        for sym in (True, False):
            for dtype in ("float32", "float64"):
                want = getattr(torch.signal.windows, name)(
                    M, sym=sym, dtype=getattr(torch, dtype), **WINDOWS[name]
                )
                got = getattr(kn.signal.windows, name)(
                    M, sym=sym, dtype=getattr(kn, dtype), **WINDOWS[name]
                )
                _check(got.numpy(), want.numpy())
    assert getattr(kn.signal.windows, name)(4, **WINDOWS[name]).dtype == kn.float32
    w = getattr(kn.signal.windows, name)(4, requires_grad=True, **WINDOWS[name])
    assert (
        w.requires_grad
        == getattr(torch.signal.windows, name)(4, requires_grad=True, **WINDOWS[name]).requires_grad
    )
    with pytest.raises(ValueError):  # torch: float32 or float64 only, and M >= 0
        getattr(kn.signal.windows, name)(4, dtype=kn.int64, **WINDOWS[name])
    with pytest.raises(ValueError):
        getattr(kn.signal.windows, name)(-1, **WINDOWS[name])


def test_windows_import_as_pytorchs():
    import kiln.signal.windows as w

    assert w.hann is kn.signal.windows.hann
    _check(
        kn.signal.windows.exponential(3, center=0.0, sym=False).numpy(),
        torch.signal.windows.exponential(3, center=0.0, sym=False).numpy(),
    )
