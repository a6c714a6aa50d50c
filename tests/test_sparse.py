"""Sparse COO tensors against PyTorch: construction, conversion, coalescing, printing,
arithmetic, reductions, products, gradients (values, layouts, nnz) and the errors."""

import re

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Sparse:UserWarning")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # uncoalesced: (0, 2) twice
V = [3.0, 4.0, 5.0, 6.0]
D = np.arange(6.0, dtype=np.float32).reshape(2, 3) - 2.0
M = np.arange(6.0, dtype=np.float32).reshape(3, 2) - 1.5


def pair(indices=IDX, values=V, size=(2, 3), **kw):
    """The same sparse tensor in kiln and in PyTorch."""
    k = kn.sparse_coo_tensor(indices, values, size, **kw)
    t = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size, **kw)
    return k, t


def same(k, t, flag=True):
    """Equal values, dtype, layout, shape, nnz, coalesced flag (unless not `flag`: PyTorch's
    flag on a sparse gradient depends on the op that made it) and stored entries."""
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert k.is_sparse == t.is_sparse
    if t.is_sparse:
        assert k.layout is kn.sparse_coo
        assert k._nnz() == t._nnz()
        assert k.is_coalesced() == t.is_coalesced() or not flag
        assert (k.sparse_dim(), k.dense_dim()) == (t.sparse_dim(), t.dense_dim())
        np.testing.assert_array_equal(k._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(k._values().numpy(), t._values().detach().numpy(), 1e-5, 1e-6)
    else:
        assert k.layout is kn.strided
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), 1e-5, 1e-6)


def kiln_repr(text: str) -> str:
    return text.replace("torch.", "kiln.")


def test_sparse_construct_and_properties():
    k, t = pair()
    same(k, t)
    same(k.to_dense(), t.to_dense())
    same(k.coalesce(), t.coalesce())
    assert k.coalesce().is_coalesced() and not k.is_coalesced()
    assert kn.ones(2).layout is kn.strided and not kn.ones(2).is_sparse
    # size inferred from the indices, as PyTorch's
    same(kn.sparse_coo_tensor(IDX, V), torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(V)))
    # dtype=, requires_grad=
    k = kn.sparse_coo_tensor(IDX, V, (2, 3), dtype=kn.float64, requires_grad=True)
    t = torch.sparse_coo_tensor(IDX, V, (2, 3), dtype=torch.float64, requires_grad=True)
    same(k.detach(), t.detach())
    assert k.requires_grad and k.is_leaf


def test_sparse_hybrid_and_to_sparse():
    values = [[1.0, 2.0], [3.0, 4.0]]
    k, t = pair([[0, 2]], values, (3, 2))
    same(k, t)
    same(k.to_dense(), t.to_dense())
    x = np.array([[0, 1.5, 0], [2, 0, 0], [0, 0, 0]], np.float32)
    for sparse_dim in (None, 1, 2):
        args = () if sparse_dim is None else (sparse_dim,)
        same(kn.tensor(x).to_sparse(*args), torch.tensor(x).to_sparse(*args))
    same(kn.zeros(2, 3).to_sparse(), torch.zeros(2, 3).to_sparse())
    same(kn.tensor([[0, 1], [2, 0]]).to_sparse(), torch.tensor([[0, 1], [2, 0]]).to_sparse())


def test_sparse_repr_matches_pytorch():
    cases = [
        pair(),
        pair([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2)),
        (kn.zeros(2, 3).to_sparse(), torch.zeros(2, 3).to_sparse()),
        (kn.tensor([[0.0, 1]], dtype=kn.float64).to_sparse(),
         torch.tensor([[0.0, 1]], dtype=torch.float64).to_sparse()),
        (kn.tensor([[0, 1]], dtype=kn.int32).to_sparse(),
         torch.tensor([[0, 1]], dtype=torch.int32).to_sparse()),
        pair(requires_grad=True),
    ]  # fmt: skip
    for k, t in cases:
        assert repr(k) == kiln_repr(repr(t))
    k, t = pair(requires_grad=True)
    assert repr(k.coalesce()) == kiln_repr(repr(t.coalesce()))


def test_sparse_indices_values():
    k, t = pair()
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError, match="uncoalesced"):
            getattr(t, name)()
        with pytest.raises(RuntimeError, match="please call .coalesce"):
            getattr(k, name)()
    np.testing.assert_array_equal(k.coalesce().indices().numpy(), t.coalesce().indices())
    np.testing.assert_array_equal(k.coalesce().values().numpy(), t.coalesce().values())
    np.testing.assert_array_equal(k._indices().numpy(), t._indices())


@pytest.mark.parametrize("name", ["neg", "abs", "sin", "tanh", "sqrt", "relu", "square",
                                  "floor", "expm1", "log1p"])  # fmt: skip
def test_sparse_zero_keeping_unary(name):
    k, t = pair()
    same(getattr(kn, name)(k), getattr(torch, name)(t))


def test_sparse_arithmetic():
    k, t = pair()
    same(k * 2, t * 2)
    same(2.5 * k, 2.5 * t)
    same(-k, -t)
    same(k / 4, t / 4)
    same(k * kn.tensor(D), t * torch.tensor(D))
    same(kn.tensor(D) * k, torch.tensor(D) * t)
    same(kn.tensor(D) + k, torch.tensor(D) + t)
    same(k.coalesce() * k.coalesce(), t.coalesce() * t.coalesce())
    # uncoalesced operands: PyTorch keeps one operand's pattern; the values agree
    same((k * k).to_dense(), (t * t).to_dense())
    same(k.double(), t.double())
    same(k.clone(), t.clone())
    same(k.t(), t.t())
    # addition: PyTorch's merge, coalesced and not
    k2, t2 = pair([[1, 0], [1, 2]], [1.0, 2.0])
    for a, b in [(k, k2), (k.coalesce(), k2), (k.coalesce(), k2.coalesce()), (k2, k2), (k, k)]:
        ta = t.coalesce() if a.is_coalesced() and a is not k2 else (t2 if a is k2 else t)
        tb = t2.coalesce() if b.is_coalesced() and b is not k else (t if b is k else t2)
        same(a + b, ta + tb)
    same(k - k2, t - t2)


def test_sparse_sum_and_products():
    k, t = pair()
    same(kn.sparse.sum(k), torch.sparse.sum(t))
    for dim in (0, 1, (0, 1), -1):
        same(kn.sparse.sum(k, dim), torch.sparse.sum(t, dim))
    same(k.sum(), t.sum())
    same(k.sum(0), t.sum(0))
    h, th = pair([[0, 2, 0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], (3, 2))
    for dim in (0, 1, (0, 1)):
        same(kn.sparse.sum(h, dim), torch.sparse.sum(th, dim))
    same(kn.sparse.mm(k, kn.tensor(M)), torch.sparse.mm(t, torch.tensor(M)))
    same(kn.mm(k, kn.tensor(M)), torch.mm(t, torch.tensor(M)))
    same(k @ kn.tensor(M), t @ torch.tensor(M))
    same(kn.matmul(k, kn.tensor(M[:, 0])), torch.matmul(t, torch.tensor(M[:, 0])))
    same(kn.sparse.mm(k, k.t()), torch.sparse.mm(t, t.t()))


def grads(k_fn, t_fn, **kw):
    """The gradients (sparse leaf and strided operand) of one computation, both libraries."""
    k, t = pair(requires_grad=True, **kw)
    kd = kn.tensor(M, requires_grad=True)
    td = torch.tensor(M, requires_grad=True)
    k_fn(k, kd).backward()
    t_fn(t, td).backward()
    return (k.grad, t.grad), (kd.grad, td.grad)


@pytest.mark.parametrize("case", ["to_dense", "mul_dense", "sparse_mm", "sum", "sum_dim",
                                  "coalesce_values", "scale", "add"])  # fmt: skip
def test_sparse_gradients(case):
    w = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    fns = {
        "to_dense": lambda lib, s, d: (s.to_dense() * lib.tensor(w)).sum(),
        "mul_dense": lambda lib, s, d: (s * lib.tensor(w)).to_dense().sum(),
        "sparse_mm": lambda lib, s, d: (lib.sparse.mm(s, d) * lib.tensor(w[:, :2])).sum(),
        "sum": lambda lib, s, d: lib.sparse.sum(s) * 3,
        "sum_dim": lambda lib, s, d: (lib.sparse.sum(s, 1).to_dense() * lib.tensor(w[:, 0])).sum(),
        "coalesce_values": lambda lib, s, d: (s.coalesce().values() ** 2).sum(),
        "scale": lambda lib, s, d: (-(s * 2.0)).to_dense().sum(),
        "add": lambda lib, s, d: ((s + s.coalesce()).to_dense() * lib.tensor(w)).sum(),
    }
    fn = fns[case]
    (kg, tg), (kdg, tdg) = grads(lambda s, d: fn(kn, s, d), lambda s, d: fn(torch, s, d))
    same(kg, tg, flag=False)
    if tdg is None:
        assert kdg is None
    else:
        same(kdg, tdg)


def test_sparse_coo_tensor_of_values_that_require_grad():
    """Gradients reach the values a sparse tensor was made of: one per stored entry."""
    results = []
    for lib in (kn, torch):
        v = lib.tensor(V, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(IDX), v, (2, 3))
        (s.to_dense() * lib.tensor(D)).sum().backward()
        results.append((s.grad_fn.name(), s.is_leaf, v.grad.numpy().tolist()))
    assert results[0] == results[1]


def test_sparse_mm_gives_a_strided_grad_as_pytorch():
    """mm/matmul/@ give a sparse leaf a strided gradient, sparse.mm a sparse one; mixed, they
    sum to a strided one."""
    w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    runs = [
        lambda lib, s, d: (lib.mm(s, d) * lib.tensor(w)).sum(),
        lambda lib, s, d: (s @ d).sum() + lib.sparse.mm(s, d).sum(),
        lambda lib, s, d: lib.matmul(s, d[:, 0]).sum(),
    ]
    for fn in runs:
        (kg, tg), (kdg, tdg) = grads(lambda s, d: fn(kn, s, d), lambda s, d: fn(torch, s, d))
        same(kg, tg)
        same(kdg, tdg)
    k, t = pair(requires_grad=True)
    (gk,) = kn.autograd.grad(kn.mm(k, kn.tensor(M)).sum(), k)
    (gt,) = torch.autograd.grad(torch.mm(t, torch.tensor(M)).sum(), t)
    same(gk, gt)
    assert kn.mm(k, kn.tensor(M)).grad_fn.name() == torch.mm(t, torch.tensor(M)).grad_fn.name()


def test_sparse_grad_accumulates_and_autograd_grad():
    k, t = pair([[0, 1]], [1.0, 2.0], (2,), requires_grad=True)
    for _ in range(2):
        k.to_dense().sum().backward()
        t.to_dense().sum().backward()
    same(k.grad, t.grad, flag=False)
    (gk,) = kn.autograd.grad((k.to_dense() * 3).sum(), k)
    (gt,) = torch.autograd.grad((t.to_dense() * 3).sum(), t)
    same(gk, gt, flag=False)
    # a sparse non-leaf that retains its gradient: sparse too
    kr, tr = k * 2, t * 2
    kr.retain_grad(), tr.retain_grad()
    (kr.to_dense() * 3).sum().backward()
    (tr.to_dense() * 3).sum().backward()
    same(kr.grad, tr.grad, flag=False)
    # a strided leaf through to_sparse: its gradient is masked, as PyTorch's
    x = np.array([[0, 1.0], [2.0, 0]], np.float32)
    kx, tx = kn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kx.to_sparse().to_dense().sum().backward()
    tx.to_sparse().to_dense().sum().backward()
    same(kx.grad, tx.grad)
    assert kx.to_sparse().grad_fn.name() == tx.to_sparse().grad_fn.name()


def test_sparse_embedding_grad_matches_pytorch():
    ids = [[1, 3], [1, 0]]
    w = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    for padding_idx in (None, 1):
        ke = kn.nn.Embedding(5, 2, sparse=True, padding_idx=padding_idx, _weight=w)
        te = torch.nn.Embedding(5, 2, sparse=True, padding_idx=padding_idx,
                                _weight=torch.tensor(w))  # fmt: skip
        scale = np.arange(8.0, dtype=np.float32).reshape(2, 2, 2)
        (ke(kn.tensor(ids)) * kn.tensor(scale)).sum().backward()
        (te(torch.tensor(ids)) * torch.tensor(scale)).sum().backward()
        same(ke.weight.grad, te.weight.grad)
        same(ke.weight.grad.coalesce(), te.weight.grad.coalesce())
        # a second backward accumulates: a broadcast gradient's entries are concatenated, a
        # contiguous one's merged (PyTorch's rule, which depends on the values' strides)
        ke(kn.tensor(ids)).sum().backward()
        te(torch.tensor(ids)).sum().backward()
        same(ke.weight.grad, te.weight.grad)
        (ke(kn.tensor(ids)) * 2).sum().backward()
        (te(torch.tensor(ids)) * 2).sum().backward()
        same(ke.weight.grad, te.weight.grad)
        same(ke.weight.grad.coalesce(), te.weight.grad.coalesce())


def test_sparse_errors():
    k, t = pair()
    for fn in (kn.exp, lambda s: s.mean(), lambda s: s.view(6), lambda s: s[0]):
        with pytest.raises(NotImplementedError, match="sparse_coo"):
            fn(k)
    with pytest.raises(TypeError, match="Use Tensor.to_dense"):
        t.numpy()
    with pytest.raises(RuntimeError, match=re.escape("Use Tensor.to_dense() first")):
        k.numpy()
    for a, b in [(k, 1), (k, kn.tensor(D))]:
        with pytest.raises(RuntimeError, match=re.escape("add(sparse, dense) is not supported")):
            a + b
    bad = [([[0, 2]], [1.0, 2.0], (2,), "size is inconsistent with indices: for dim 0, size is 2 "
             "but found index 2"),
           ([[0, -1]], [1.0, 2.0], (2,), "found negative index -1 for dim 0"),
           ([[0, 1]], [1.0, 2.0, 3.0], (2,), "indices and values must have same nnz"),
           ([[0, 1]], [1.0, 2.0], (2, 3), "'len(size) == sparse_dim + dense_dim' is not satisfied"),
           ([0, 1], [1.0, 2.0], (2,), "indices must be sparse_dim x nnz")]  # fmt: skip
    for indices, values, size, message in bad:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size,
                                    check_invariants=True)  # fmt: skip
        with pytest.raises((ValueError, RuntimeError), match=re.escape(message)):
            kn.sparse_coo_tensor(indices, values, size)
    # mm gives a sparse operand a strided gradient (as PyTorch's): kiln carries it to sparse
    # leaves only, so a sparse non-leaf made from a sparse leaf is refused (one made from
    # values is not: tests/ports/test_port_hunt4.py)
    s = kn.sparse_coo_tensor(IDX, V, (2, 3), requires_grad=True) * 2.0
    with pytest.raises(NotImplementedError, match="kn.sparse.mm"):
        kn.mm(s, kn.tensor(M))


def test_sparse_at_the_graph_boundary():
    k, _ = pair()
    f = kn.compile(lambda x: x * 2)
    with pytest.raises(kn.KilnError, match="to_dense"):
        f(k)
    np.testing.assert_array_equal(f(k.to_dense()).numpy(), k.to_dense().numpy() * 2)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (2, 3))
        with pytest.raises(kn.KilnError, match="to_dense"):
            p + k
    # kn.sparse.mm of a constant sparse tensor and a graph value compiles (symbolic dims too)
    c = k.coalesce()
    g = kn.compile(lambda x: kn.sparse.mm(c, x) * 2)
    x = kn.tensor(M, requires_grad=True)
    g(x).sum().backward()
    x2 = torch.tensor(M, requires_grad=True)
    (torch.sparse.mm(torch.sparse_coo_tensor(IDX, V, (2, 3)), x2) * 2).sum().backward()
    np.testing.assert_allclose(g(kn.tensor(M)).numpy(), (c.to_dense().numpy() @ M) * 2)
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (3, "n"))
        fn = kn.function([p], kn.sparse.mm(c, p))
    ones = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(fn(ones), c.to_dense().numpy() @ ones)


@pytest.mark.parametrize("log", [False, True])
def test_sparse_softmax_matches_pytorch(log):
    name = "log_softmax" if log else "softmax"
    k, t = pair(requires_grad=True)
    w = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for dim in (0, 1, -1):
        same(getattr(kn.sparse, name)(k, dim), getattr(torch.sparse, name)(t, dim))
    getattr(kn.sparse, name)(k, 1).to_dense().mul(kn.tensor(w)).sum().backward()
    getattr(torch.sparse, name)(t, 1).to_dense().mul(torch.tensor(w)).sum().backward()
    same(k.grad, t.grad, flag=False)
    h, th = pair([[0, 2]], [[1.0, 2.0], [3.0, 5.0]], (3, 2))
    for dim in (0, 1):
        same(getattr(kn.sparse, name)(h, dim), getattr(torch.sparse, name)(th, dim))
    got = getattr(kn.sparse, name)(k.detach(), 1, dtype=kn.float64)
    same(got, getattr(torch.sparse, name)(t.detach(), 1, dtype=torch.float64))


def test_sparse_in_place_and_like():
    """In-place ops change a sparse tensor's entries (their number too), as PyTorch's."""
    k, t = pair()
    k2, t2 = pair([[1], [1]], [7.0])
    runs = [
        lambda lib, a, b: a.clone().zero_(),
        lambda lib, a, b: a.clone().add_(b),
        lambda lib, a, b: a.clone().sub_(b),
        lambda lib, a, b: a.clone().mul_(2),
        lambda lib, a, b: a.clone().div_(2),
        lambda lib, a, b: a.clone().neg_(),
        lambda lib, a, b: a.clone().copy_(b),
        lambda lib, a, b: lib.zeros_like(a),
        lambda lib, a, b: lib.empty_like(a, dtype=lib.float64),
        lambda lib, a, b: lib.zeros(2, 3).add_(a, alpha=2),
        lambda lib, a, b: lib.tensor(D).sparse_mask(a),
        lambda lib, a, b: lib.tensor(D).sparse_mask(a.coalesce()),
    ]
    for fn in runs:
        same(fn(kn, k, k2), fn(torch, t, t2))
    for fn in (kn.ones_like, lambda a: kn.full_like(a, 2.0)):
        with pytest.raises(NotImplementedError, match="fill_ does not support the sparse_coo"):
            fn(k)


def sparse_adam_step(lib, param, state, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
    """PyTorch's SparseAdam update, written with the sparse gradient's public interface
    (coalesce, _indices, _values, sparse_mask, dense add_ of a sparse tensor): what an
    optimizer over kiln's sparse gradients reads."""
    beta1, beta2 = betas
    state["step"] += 1
    grad = param.grad.coalesce()
    indices, values, size = grad._indices(), grad._values(), grad.size()

    def make_sparse(v):
        return lib.sparse_coo_tensor(indices, v, size)

    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    old_avg = exp_avg.sparse_mask(grad)._values()
    avg_update = (values - old_avg) * (1 - beta1)
    exp_avg.add_(make_sparse(avg_update))
    old_sq = exp_avg_sq.sparse_mask(grad)._values()
    sq_update = (values**2 - old_sq) * (1 - beta2)
    exp_avg_sq.add_(make_sparse(sq_update))
    numer = avg_update + old_avg
    denom = (sq_update + old_sq).sqrt() + eps
    step_size = lr * (1 - beta2 ** state["step"]) ** 0.5 / (1 - beta1 ** state["step"])
    with lib.no_grad():
        param.add_(make_sparse(-step_size * (numer / denom)))


def test_sparse_embedding_grad_drives_sparse_adam_as_pytorch():
    """Embedding(sparse=True)'s gradient has what SparseAdam reads: three steps of its update
    on kiln match torch.optim.SparseAdam on PyTorch."""
    w = np.arange(12.0, dtype=np.float32).reshape(6, 2) / 7
    ke = kn.nn.Embedding(6, 2, sparse=True, _weight=w)
    te = torch.nn.Embedding(6, 2, sparse=True, _weight=torch.tensor(w))
    opt = torch.optim.SparseAdam(te.parameters(), lr=0.01)
    state = {"step": 0, "exp_avg": kn.zeros(6, 2), "exp_avg_sq": kn.zeros(6, 2)}
    for ids in ([[1, 3], [1, 0]], [[5, 5], [2, 3]], [[0, 1], [4, 4]]):
        target = np.arange(8.0, dtype=np.float32).reshape(2, 2, 2)
        ke.weight.grad = None
        ((ke(kn.tensor(ids)) - kn.tensor(target)) ** 2).sum().backward()
        sparse_adam_step(kn, ke.weight, state)
        opt.zero_grad()
        ((te(torch.tensor(ids)) - torch.tensor(target)) ** 2).sum().backward()
        opt.step()
        np.testing.assert_allclose(ke.weight.detach().numpy(), te.weight.detach().numpy(),
                                   rtol=1e-6, atol=1e-7)  # fmt: skip


def test_sparse_methods_on_strided_tensors_as_pytorch():
    x, tx = kn.ones(2, 3), torch.ones(2, 3)
    assert (x.sparse_dim(), x.dense_dim()) == (tx.sparse_dim(), tx.dense_dim())
    assert x.to_dense() is x and tx.to_dense() is tx
    for name in ("coalesce", "indices", "values", "is_coalesced"):
        message = f"{name} expected sparse"
        with pytest.raises(RuntimeError, match=message):
            getattr(tx, name)()
        with pytest.raises(RuntimeError, match=message):
            getattr(x, name)()
    # a strided value is its own dense form in a graph too
    f = kn.compile(lambda a: a.to_dense() * a.dense_dim())
    np.testing.assert_array_equal(f(x).numpy(), np.full((2, 3), 2.0, np.float32))


def test_sparse_times_sparse_gradients_agree_with_pytorch_as_values():
    """sparse.mm of two sparse tensors: the product as PyTorch's; the gradients' values as
    PyTorch's (PyTorch's hold explicit zeros off the operand's pattern too: compared dense)."""
    out = []
    for lib in (kn, torch):
        a = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1], [2, 0, 2]]), lib.tensor([3.0, 4.0, 5.0]),
                                  (2, 3), requires_grad=True)  # fmt: skip
        b = lib.sparse_coo_tensor(lib.tensor([[2, 0, 2], [1, 1, 0]]), lib.tensor([1.0, 2.0, 7.0]),
                                  (3, 2), requires_grad=True)  # fmt: skip
        r = lib.sparse.mm(a, b)
        (r.to_dense() * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        out.append((r, a.grad.to_dense(), b.grad.to_dense()))
    same(out[0][0], out[1][0])
    same(out[0][1], out[1][1])
    same(out[0][2], out[1][2])


@pytest.mark.parametrize("case", ["scale", "square", "mul_dense"])
def test_sparse_second_order_gradients_match_pytorch(case):
    """create_graph=True through sparse ops: the gradient's own gradient, as PyTorch's."""
    fns = {
        "scale": lambda lib, s, d: (s * 2).to_dense().pow(2).sum(),
        "square": lambda lib, s, d: (s * s).to_dense().pow(2).sum(),
        "mul_dense": lambda lib, s, d: (s * d).to_dense().pow(3).sum(),
    }
    got = []
    for lib in (kn, torch):
        s = lib.sparse_coo_tensor(lib.tensor([[0, 1, 0]]), lib.tensor([1.0, 2.0, 4.0]), (3,),
                                  requires_grad=True)  # fmt: skip
        d = lib.tensor([1.0, 2.0, 3.0])
        (g,) = lib.autograd.grad(fns[case](lib, s, d), s, create_graph=True)
        (h,) = lib.autograd.grad((g.to_dense() ** 2).sum(), s)
        got.append((g.to_dense().tolist(), h.to_dense().tolist(), g.layout, h.layout))
    assert got[0][:2] == got[1][:2]
    assert [repr(x) for x in got[0][2:]] == [repr(x).replace("torch", "kiln") for x in got[1][2:]]


def test_sparse_without_entries_as_pytorch():
    e, te = pair(np.zeros((2, 0), np.int64), np.zeros(0, np.float32))
    o, to = pair([[0], [1]], [5.0])
    runs = [
        lambda lib, a, b: a.to_dense(), lambda lib, a, b: a.coalesce(),
        lambda lib, a, b: lib.sparse.sum(a), lambda lib, a, b: lib.sparse.sum(a, 0),
        lambda lib, a, b: lib.sparse.mm(a, lib.ones(3, 2)), lambda lib, a, b: a + b,
        lambda lib, a, b: b + a, lambda lib, a, b: a * 2, lambda lib, a, b: a * a,
        lambda lib, a, b: lib.sparse.softmax(a, 1), lambda lib, a, b: a.t(),
        lambda lib, a, b: b.t(), lambda lib, a, b: -a,
    ]  # fmt: skip
    for fn in runs:
        same(fn(kn, e, o), fn(torch, te, to))


def test_sparse_addmm_matches_pytorch():
    got = []
    for lib in (kn, torch):
        m = lib.ones(2, 2, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 0]]), lib.tensor([2.0, 3.0]), (2, 2),
                                  requires_grad=True)  # fmt: skip
        d = lib.tensor([[0.0, 1.0], [2.0, 3.0]], requires_grad=True)
        r = lib.sparse.addmm(m, s, d, beta=0.5, alpha=2.0)
        (r * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        got.append((r, m.grad, s.grad, d.grad))
    for k, t in zip(*got):
        same(k, t, flag=False)
