"""kn.autograd.functional.jacobian/hessian of eager functions (expected values from the
analytic derivatives, and from torch.autograd.functional where installed); kn.grad,
kn.jacobian and kn.hessian on eager Tensors say what to use instead."""

import numpy as np
import pytest

import kiln as kn

jacobian, hessian = kn.autograd.functional.jacobian, kn.autograd.functional.hessian


def test_jacobian_of_one_input_and_output_is_analytic():
    x = np.array([0.5, -1.0, 2.0])
    jac = jacobian(lambda v: kn.stack([v[0] * v[1], kn.sin(v[2]), (v**2).sum()]), kn.tensor(x))
    want = [[x[1], x[0], 0], [0, 0, np.cos(x[2])], 2 * x]
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-12)
    assert not jac.requires_grad and tuple(jac.shape) == (3, 3)


def test_jacobian_shapes_and_nesting_follow_pytorch():
    a, b = kn.tensor(np.ones((2, 3))), kn.tensor(np.arange(4.0))
    jac = jacobian(lambda x, y: (x.sum(1), y * 2.0), (a, b))
    assert len(jac) == 2 and len(jac[0]) == 2
    assert [tuple(j.shape) for j in jac[0]] == [(2, 2, 3), (2, 4)]
    np.testing.assert_array_equal(jac[1][1].numpy(), 2 * np.eye(4))
    np.testing.assert_array_equal(jac[0][1].numpy(), np.zeros((2, 4)))  # independent: zeros
    single_out = jacobian(lambda x, y: x.sum() * y, (a, b))
    assert isinstance(single_out, tuple) and tuple(single_out[0].shape) == (4, 2, 3)
    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function is independent of input 1"
    ):
        jacobian(lambda x, y: (x.sum(1), y * 2.0), (a, b), strict=True)


def test_hessian_is_analytic_and_nests_over_inputs():
    x = kn.tensor([3.0, 5.0], dtype=kn.float64)
    h = hessian(lambda v: v[0] ** 3 * v[1], x)
    np.testing.assert_allclose(h.numpy(), [[6 * 3 * 5, 3 * 9], [3 * 9, 0]])
    hh = hessian(lambda u, v: (u * u * v).sum(), (kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0])))
    np.testing.assert_allclose(hh[0][0].numpy(), np.diag([6.0, 8.0]))  # d2/du2 = 2v
    np.testing.assert_allclose(hh[0][1].numpy(), np.diag([2.0, 4.0]))  # d2/dudv = 2u
    np.testing.assert_allclose(hh[1][1].numpy(), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="single element Tensor"):
        hessian(lambda v: v * 2.0, x)


def test_importable_as_in_pytorch():
    from kiln.autograd.functional import jacobian as imported

    assert imported is jacobian


def test_create_graph_keeps_the_result_differentiable():
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    jac = jacobian(lambda v: v**3, x, create_graph=True)
    assert jac.requires_grad
    (g,) = kn.autograd.grad(jac.sum(), x)  # d/dx sum(diag(3x^2)) = 6x
    np.testing.assert_allclose(g.numpy(), [6.0, 12.0])


def test_matches_torch_autograd_functional():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x0, y0 = rng.standard_normal(3), rng.standard_normal((3, 2))

    def f(lib):
        return lambda x, y: (lib.tanh(x @ y), (x * x).sum())

    ours = jacobian(f(kn), (kn.tensor(x0), kn.tensor(y0)))
    theirs = torch.autograd.functional.jacobian(f(torch), (torch.tensor(x0), torch.tensor(y0)))
    for row_ours, row_theirs in zip(ours, theirs, strict=True):
        for a, b in zip(row_ours, row_theirs, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)

    def g(lib):
        return lambda x, y: (lib.tanh(x @ y) ** 2).sum()

    ours = hessian(g(kn), (kn.tensor(x0), kn.tensor(y0)))
    theirs = torch.autograd.functional.hessian(g(torch), (torch.tensor(x0), torch.tensor(y0)))
    for row_ours, row_theirs in zip(ours, theirs, strict=True):
        for a, b in zip(row_ours, row_theirs, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "call, advice",
    [
        (lambda x: kn.grad((x * x).sum(), [x]), "kn.autograd.grad"),
        (lambda x: kn.grad([(x * x).sum()], x), "kn.autograd.grad"),
        (lambda x: kn.jacobian(x * x, x), "kn.autograd.functional.jacobian"),
        (lambda x: kn.hessian((x * x).sum(), x), "kn.autograd.functional.hessian"),
    ],
)
def test_graph_transforms_on_eager_tensors_say_what_to_use(call, advice):
    # Regression: these failed with "iteration over a 0-d tensor".
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="eager Tensor") as info:
        call(x)
    assert advice in str(info.value)
