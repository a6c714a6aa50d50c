"""Ports of PyTorch's tutorials on autograd and custom Functions ("Double backward with custom
functions", "Extending PyTorch", "Learning PyTorch with examples"), each program written once
against a module argument `torch` and run with PyTorch and with kiln (`import kiln as kn`).
The torch.func tutorials are in test_port_hunt8_func.py.

The inputs are float64 and the programs small (at most a few dozen products per value), so
the two runs agree to float64 rounding: rtol 1e-10 unless a test says otherwise.
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

TOL = {"rtol": 1e-10, "atol": 1e-12}
X = np.array([0.5, -1.0, 2.0])


def assert_tree_close(k, t, **tol):
    """Two nests of tuples, lists, dicts and tensors agree leaf by leaf (values and shapes)."""
    tol = tol or TOL
    if isinstance(t, dict):
        assert list(k) == list(t)
        for name in t:
            assert_tree_close(k[name], t[name], **tol)
    elif isinstance(t, (tuple, list)):
        assert isinstance(k, (tuple, list)) and len(k) == len(t)
        for a, b in zip(k, t):
            assert_tree_close(a, b, **tol)
    elif t is None or isinstance(t, (bool, int, str)):
        assert k == t
    else:
        a, b = to_numpy(k), to_numpy(t)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


# -- "Double backward with custom functions" -------------------------------------------------


def custom_functions(torch):
    """The tutorial's Functions: one saving its input, one its output, one an intermediate
    result (returned so the graph reaches it), and one whose backward is once_differentiable."""

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)  # an input: its history is the input's
            return x**2

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return grad_out * 2 * x

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = torch.exp(x)
            ctx.save_for_backward(result)  # an output: its history is this Function's
            return result

        @staticmethod
        def backward(ctx, grad_out):
            (result,) = ctx.saved_tensors
            return grad_out * result

    class Sinh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = torch.exp(x), torch.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx  # intermediates as outputs

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            # the intermediates' own gradients, as the tutorial adds them
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    def sinh(x):
        return Sinh.apply(x)[0]

    class ExpOnce(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = torch.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_out):
            (result,) = ctx.saved_tensors
            return grad_out * result

    return Square.apply, Exp.apply, sinh, ExpOnce.apply


def double_backward(torch, fn):
    x = torch.tensor(X, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    return g, gg


@pytest.mark.parametrize("which", ["square", "exp", "sinh"])
def test_double_backward_of_custom_functions_matches_torch(torch, which):
    # the Function saving its output (exp) lost the second derivative: the saved result
    # was the forward's value, not joined to the Function's node, so the gradient's history
    # reached no input (an error here; a missing term where backward also uses the input)
    k = {"square": 0, "exp": 1, "sinh": 2}[which]
    t_fn, k_fn = custom_functions(torch)[k], custom_functions(kn)[k]
    assert_tree_close(double_backward(kn, k_fn), double_backward(torch, t_fn))
    x = torch.tensor(X, requires_grad=True)
    assert torch.autograd.gradcheck(t_fn, (x,)) and torch.autograd.gradgradcheck(t_fn, (x,))
    x = kn.tensor(X, requires_grad=True)
    assert kn.autograd.gradcheck(k_fn, (x,)) and kn.autograd.gradgradcheck(k_fn, (x,))


def test_saved_output_and_input_mix_in_double_backward(torch):
    # backward reading both a saved input and a saved output: the second derivative has a
    # term from each (kiln's lacked the output's: a silently wrong value, no error)
    def make(torch):
        class XExp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * torch.exp(x)
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * (y + torch.exp(x))  # d(x e^x) = x e^x + e^x

        return XExp.apply

    assert_tree_close(double_backward(kn, make(kn)), double_backward(torch, make(torch)))


def test_once_differentiable_refuses_double_backward(torch):
    for lib in (torch, kn):
        fn = custom_functions(lib)[3]
        x = lib.tensor(X, requires_grad=True)
        (g,) = lib.autograd.grad(fn(x).sum(), x, create_graph=True)
        assert not g.requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            lib.autograd.grad(g.sum(), x)
        assert lib.autograd.gradcheck(fn, (lib.tensor(X, requires_grad=True),))


@pytest.mark.parametrize("which", [0, 1, 2])
def test_second_derivative_of_custom_functions_under_compile(torch, which):
    # the same second derivatives by kn.func.grad of kn.func.grad, eagerly and compiled (in
    # graph mode `backward` runs on Symbols, the saved output being the Function's result)
    t_fn, k_fn = custom_functions(torch)[which], custom_functions(kn)[which]
    _, expected = double_backward(torch, t_fn)

    def second(x):
        return kn.func.grad(lambda y: kn.func.grad(lambda z: k_fn(z).sum())(y).sum())(x)

    assert_tree_close(second(kn.tensor(X)), expected)
    assert_tree_close(kn.compile(second)(kn.tensor(X)), expected)
