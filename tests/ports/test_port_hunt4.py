"""Differences found by porting scientific and numerical PyTorch code by renaming `torch` to
`kn`: physics-informed nets, neural ODEs, Gaussian processes, flows, spectral methods, linear
algebra, segment reductions, sparse products and numerically sensitive functions. Each test is
the smallest form of one difference, with torch 2.13 as the oracle.
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn


def assert_same(k, t, **tol):
    """Nested tuples of tensors agree in structure, shape, dtype and values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(k, tuple) and len(k) == len(t)
        for a, b in zip(k, t):
            assert_same(a, b, **tol)
        return
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(k), to_numpy(t), **(tol or {"rtol": 1e-6}))


# -- kn.autograd.functional: the products of a PINN's residual ---------------------------------
# Only jacobian and hessian existed: code computing Hessian-vector products of a loss (Newton-CG,
# curvature probes) or a PDE operator's directional derivative with vjp/jvp/hvp/vhp stopped with
# an AttributeError.


def heat_residual(lib):
    """u(x, t) = sin(x) exp(-t) x t, and a scalar loss of it: a PINN-style function of inputs."""

    def u(x, t):
        return lib.sin(x) * lib.exp(-t) * x * t

    def loss(x, t):
        return (u(x, t) ** 2).sum() + (x * t).prod()

    return u, loss


X = np.array([0.3, -1.2, 2.0], np.float64)
T = np.array([0.5, 1.5, 0.1], np.float64)
V = np.array([1.0, -2.0, 0.5], np.float64)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_functional_products(torch, name, create_graph):
    results = []
    for lib in (torch, kn):
        fn = getattr(lib.autograd.functional, name)
        u, loss = heat_residual(lib)
        x = lib.tensor(X, requires_grad=True)
        t, v = lib.tensor(T), lib.tensor(V)
        f = loss if name in ("vhp", "hvp") else u
        one = fn(lambda x: f(x, t), x, v, create_graph=create_graph)
        both = fn(f, (x, t), v if name == "vjp" else (v, v), create_graph=create_graph)
        assert one[1].requires_grad == create_graph and one[0].requires_grad == create_graph
        second = ()
        if create_graph:  # the product is differentiable with respect to the caller's x
            second = lib.autograd.grad(one[1].sum(), x)
        results.append((one, both, second))
    assert_same(results[1], results[0])


def test_autograd_functional_defaults_and_errors(torch):
    results = []
    for lib in (torch, kn):
        F = lib.autograd.functional
        s = lib.tensor(1.5, dtype=lib.float64)
        results.append((
            F.vjp(lambda x: (x**3).sum(), lib.tensor(X)),  # v=None: a single-element output
            F.jvp(lambda x: lib.stack([x, x**2]), s),  # v=None: a single-element input
            F.vhp(lambda x: x**4, s),
            F.vjp(lambda x, y: x * 2, (lib.tensor(X), lib.tensor(T)), lib.tensor(V)),  # unused
            F.jvp(lambda x: lib.ones(2, dtype=lib.float64), lib.tensor(X), lib.tensor(V)),
        ))  # fmt: skip
        for call in (
            lambda: F.vjp(lambda x: x, lib.tensor(X)),
            lambda: F.vjp(lambda x: x, lib.tensor(X), lib.ones(2, dtype=lib.float64)),
            lambda: F.hvp(lambda x: x, lib.tensor(X), lib.tensor(V)),
            lambda: F.vjp(lambda x: lib.ones(3), lib.tensor(X), lib.ones(3), strict=True),
        ):
            with pytest.raises(RuntimeError):
                call()
    assert_same(results[1], results[0])


# -- a graph convolution with kn.addmm of a sparse adjacency -----------------------------------
# `torch.addmm(bias, adj, x @ w)` with a sparse COO `adj` (GCN layers written as one GEMM) raised
# LayoutError: kn.addmm had a form for compressed (CSR) matrices only, kn.sparse.addmm for COO.


def gcn_layer(lib, beta, alpha):
    edges = lib.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
    deg = lib.bincount(edges[0], minlength=3).float()
    adj = lib.sparse_coo_tensor(edges, deg[edges[0]].rsqrt() * deg[edges[1]].rsqrt(), (3, 3))
    x = lib.tensor([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.25]])
    w = lib.tensor([[1.0, 2.0], [-0.5, 1.5]], requires_grad=True)
    b = lib.tensor([0.1, -0.2], requires_grad=True)
    h = lib.addmm(b, adj, x @ w, beta=beta, alpha=alpha).relu()
    h.pow(2).sum().backward()
    return h, w.grad, b.grad


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addmm_of_a_sparse_coo_matrix(torch, beta, alpha):
    assert_same(gcn_layer(kn, beta, alpha), gcn_layer(torch, beta, alpha))
