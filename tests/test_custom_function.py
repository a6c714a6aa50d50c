"""`kn.autograd.Function` and `kn.func`, against PyTorch's own (skipped without torch where
torch is the reference; the by-hand values say where they come from)."""

import numpy as np
import pytest

import kiln as kn


class Exp(kn.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class ScaledSplit(kn.autograd.Function):
    """Two results, a number argument, and a backward that skips the number (None)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return x * scale, x.sin()

    @staticmethod
    def backward(ctx, g_scaled, g_sin):
        (x,) = ctx.saved_tensors
        return g_scaled * ctx.scale + g_sin * x.cos(), None


class NewStyle(kn.autograd.Function):
    """PyTorch's newer form: forward without ctx, setup_context apart."""

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x


X = np.array([0.5, -1.0, 2.0], np.float32)
Y = np.array([1.5, 3.0, -0.5], np.float32)


def loss_exp(lib, Fn, x, y):
    return (Fn.apply(x) * y).sum()


def loss_split(lib, Fn, x, y):
    a, b = Fn.apply(x, 3.0)
    return (a * y).sum() + (b * b).sum()


def loss_new(lib, Fn, x, y):
    return (Fn.apply(x, y) ** 2).sum()


CASES = [(loss_exp, Exp), (loss_split, ScaledSplit), (loss_new, NewStyle)]


def _by_hand(loss):
    """Values and gradients from the formulas: exp: e^x * y; split: 3y + 2 sin x cos x;
    new: 2 x y² and 2 x² y."""
    x, y = X.astype(np.float64), Y.astype(np.float64)
    if loss is loss_exp:
        return (np.exp(x) * y).sum(), np.exp(x) * y, None
    if loss is loss_split:
        return (3 * x * y).sum() + (np.sin(x) ** 2).sum(), 3 * y + 2 * np.sin(x) * np.cos(x), None
    return ((x * y) ** 2).sum(), 2 * x * y**2, 2 * x**2 * y


@pytest.mark.parametrize("case", CASES, ids=[c[1].__name__ for c in CASES])
def test_values_and_gradients_in_every_mode(case):
    loss, Fn = case
    want_v, want_gx, want_gy = _by_hand(loss)
    # eager
    x, y = kn.tensor(X, requires_grad=True), kn.tensor(Y, requires_grad=True)
    v = loss(kn, Fn, x, y)
    v.backward()
    np.testing.assert_allclose(v.item(), want_v, rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), want_gx, rtol=1e-5)
    if want_gy is not None:
        np.testing.assert_allclose(y.grad.numpy(), want_gy, rtol=1e-5)
    # kn.compile, backward through the tape and inside the compiled step
    x2, y2 = kn.tensor(X, requires_grad=True), kn.tensor(Y, requires_grad=True)
    kn.compile(lambda a, b: loss(kn, Fn, a, b))(x2, y2).backward()
    np.testing.assert_allclose(x2.grad.numpy(), want_gx, rtol=1e-5)
    # graph mode
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (3,), name="a")
        b = kn.placeholder(kn.float32, (3,), name="b")
        out = loss(kn, Fn, a, b)
        ga, gb = kn.grad(out, [a, b])
        got = kn.function([a, b], [out, ga, gb])(X, Y)
    np.testing.assert_allclose(got[0], want_v, rtol=1e-5)
    np.testing.assert_allclose(got[1], want_gx, rtol=1e-5)
    if want_gy is not None:
        np.testing.assert_allclose(got[2], want_gy, rtol=1e-5)


def test_grad_fn_name_needs_input_grad_and_higher_order():
    seen = []

    class Square(kn.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(x)
            return x * x + y

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad, grad

    x = kn.tensor([3.0], requires_grad=True)
    out = Square.apply(x, kn.tensor([1.0]))
    assert type(out.grad_fn).__name__ != "" and "SquareBackward" in repr(out.grad_fn)
    assert seen == [(True, False)]
    (g,) = kn.autograd.grad(out.sum(), x, create_graph=True)
    (g2,) = kn.autograd.grad(g.sum(), x)
    assert g.item() == 6.0 and g2.item() == 2.0  # d/dx x² = 2x = 6; d²/dx² = 2


def test_wrong_number_or_shape_of_gradients_is_refused():
    class Bad(kn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(kn.ones(2, requires_grad=True)).sum().backward()

    class BadShape(kn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return kn.ones(5)

    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        BadShape.apply(kn.ones(2, requires_grad=True)).sum().backward()


def test_matches_torch_autograd_function():
    torch = pytest.importorskip("torch")

    class TExp(torch.autograd.Function):
        forward = staticmethod(Exp.forward)
        backward = staticmethod(Exp.backward)

    tx = torch.tensor(X, requires_grad=True)
    (TExp.apply(tx) * torch.tensor(Y)).sum().backward()
    kx = kn.tensor(X, requires_grad=True)
    (Exp.apply(kx) * kn.tensor(Y)).sum().backward()
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


FUNC_CASES = {
    "grad": lambda F: F.grad(lambda v: (v**3).sum())(X_T()),
    "grad-argnums": lambda F: F.grad(lambda v, w: (v * w).sum(), argnums=(0, 1))(X_T(), Y_T()),
    "grad-aux": lambda F: F.grad(lambda v: ((v**2).sum(), v.mean()), has_aux=True)(X_T()),
    "grad-of-grad": lambda F: F.grad(lambda v: F.grad(lambda u: (u**3).sum())(v).sum())(X_T()),
    "grad_and_value": lambda F: F.grad_and_value(lambda v: (v.sin()).sum())(X_T()),
    "vjp": lambda F: F.vjp(lambda v: v**2 * 3, X_T())[1](Y_T()),
    "jacrev": lambda F: F.jacrev(lambda v: v.sin() * v)(X_T()),
    "jacfwd": lambda F: F.jacfwd(lambda v: v.sin() * v)(X_T()),
    "hessian": lambda F: F.hessian(lambda v: (v**3).sum())(X_T()),
    "vmap": lambda F: F.vmap(lambda v: (v * v).sum())(X_T().reshape(3, 1) * Y_T()),
}
LIB = {}


def X_T():
    return LIB["lib"].tensor(X)


def Y_T():
    return LIB["lib"].tensor(Y)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [np.asarray(out.detach().numpy() if hasattr(out, "detach") else out, np.float64)]


@pytest.mark.parametrize("name", list(FUNC_CASES))
def test_kn_func_matches_torch_func(name):
    torch = pytest.importorskip("torch")
    LIB["lib"] = torch
    want = _flat(FUNC_CASES[name](torch.func))
    LIB["lib"] = kn
    got = _flat(FUNC_CASES[name](kn.func))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_functional_call_swaps_and_restores():
    lin = kn.nn.Linear(2, 1)
    before = lin.weight.detach().numpy().copy()
    out = kn.func.functional_call(lin, {"weight": kn.ones(1, 2), "bias": kn.zeros(1)},
                                  (kn.tensor([[1.0, 2.0]]),))  # fmt: skip
    assert out.tolist() == [[3.0]]  # 1*1 + 1*2 + 0
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)
    with pytest.raises(RuntimeError, match="Missing key"):  # (torch.func's class)
        kn.func.functional_call(lin, {"weight": kn.ones(1, 2)}, (kn.ones(1, 2),), strict=True)
