"""unique/bincount/histc/nonzero_static/masked_scatter/put and mode/nanmedian/quantile:
gradients against PyTorch's (skipped without torch), the eager-only error in graph mode, and
values computed by hand. The values themselves are checked against torch in every mode by
tests/torch_sweep_cases.py ("data" family)."""

import numpy as np
import pytest

import kiln as kn


def test_data_dependent_ops_run_in_graph_mode():
    # their lengths are dims the run binds (tests/test_data_dependent.py has the rest);
    # by hand for ids [3, 1, 3, 0]: distinct 0, 1, 3; counts of 0..3: 1, 1, 0, 2; nonzero at
    # 0, 1, 2; runs 3, 1, 3, 0
    with kn.Graph().as_default():
        x = kn.placeholder(kn.int64, (4,), name="ids")
        fns = (kn.unique, kn.bincount, kn.argwhere, kn.unique_consecutive)
        got = kn.function([x], [fn(x) for fn in fns])(np.array([3, 1, 3, 0]))
    assert [g.tolist() for g in got] == [[0, 1, 3], [1, 1, 0, 2], [[0], [1], [2]], [3, 1, 3, 0]]


def test_static_forms_compile_by_hand():
    # hand-computed: nonzero of [[0, 3], [1, 0]] is (0, 1), (1, 0); histc in 2 bins over
    # [0, 4]: 0, 1, 0 in [0, 2), 3 in [2, 4]; then 2 (a left edge) and 4 (max) in the second
    f = kn.compile(lambda x: (kn.nonzero_static(x, size=3), kn.histc(x.float(), 2, 0, 4)))
    nz, hist = f(kn.tensor([[0, 3], [1, 0]]))
    assert nz.tolist() == [[0, 1], [1, 0], [-1, -1]]
    assert hist.tolist() == [3.0, 1.0]
    _, hist = f(kn.tensor([[0, 2], [4, 1]]))
    assert hist.tolist() == [2.0, 2.0]


def test_unique_and_bincount_by_hand():
    values, inverse, counts = kn.unique(kn.tensor([3, 1, 3]), return_inverse=True,
                                        return_counts=True)  # fmt: skip
    assert (values.tolist(), inverse.tolist(), counts.tolist()) == ([1, 3], [1, 0, 1], [1, 2])
    assert kn.bincount(kn.tensor([2, 0, 2]), minlength=4).tolist() == [1, 0, 2, 0]
    with pytest.raises(RuntimeError, match="non-negative"):
        kn.bincount(kn.tensor([-1]))


def test_quantile_by_formula():
    # linear: rank q * (n - 1) = 0.3 * 3 = 0.9 between sorted[0] = 1 and sorted[1] = 2
    assert np.isclose(kn.quantile(kn.tensor([4.0, 2.0, 1.0, 3.0]), 0.3).item(), 1.9)
    assert kn.quantile(kn.tensor([4.0, 2.0, 1.0, 3.0]), 0.3, interpolation="higher").item() == 2


@pytest.mark.parametrize(
    "name, fn",
    [
        ("quantile", lambda L, x: L.quantile(x, L.tensor([0.2, 0.9], dtype=x.dtype), dim=1)),
        ("nanquantile", lambda L, x: L.nanquantile(x, 0.4, dim=0, interpolation="midpoint")),
        ("mode", lambda L, x: L.mode(x.round(), 1).values),
        ("nanmedian", lambda L, x: L.nanmedian(x, 0).values),
        ("masked_scatter", lambda L, x: x.masked_scatter(x > 0, x[0].repeat(3) * 2)),
        ("put", lambda L, x: x.put(L.tensor([1, 1, 5]), x[1, :3], accumulate=True)),
    ],
)
def test_gradients_as_pytorch(name, fn):
    torch = pytest.importorskip("torch")
    a = np.array([[0.3, 1.7, -2.2, 1.7], [2.0, -0.4, 0.9, 0.9], [1.1, 2.0, 2.0, -3.0]])
    weights = np.linspace(-1, 2, 3 * 4)
    grads = []
    for L, make in ((torch, torch.tensor), (kn, kn.tensor)):
        x = make(a.copy(), requires_grad=True)
        out = fn(L, x)
        (out * make(weights[: out.numel()].reshape(tuple(out.shape)))).sum().backward()
        grads.append(np.asarray(x.grad.detach().numpy() if L is torch else x.grad.numpy()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)


def test_compiled_quantile_gradient_matches_eager():
    x = kn.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, 4.0]], requires_grad=True)
    kn.quantile(x, 0.25, dim=1).sum().backward()
    eager = x.grad.numpy().copy()
    x.grad = None
    kn.compile(lambda t: kn.quantile(t, 0.25, dim=1).sum())(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), eager)
