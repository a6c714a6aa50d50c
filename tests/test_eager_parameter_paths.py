"""Parameters and Buffers take eager's short paths (kiln/eager/dispatch.py `same_ops`), and an
optimizer's step writes them with `overwrite`: the results, tape entries, version counters
and inference-mode marks are those of the long path. Expected values are computed by hand
or by the same code on plain Tensors (the long path before the short one took Parameters)."""

import numpy as np
import pytest

import kiln as kn
from kiln.errors import AutogradError


def _pair():
    w = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]], np.float32)
    return kn.nn.Parameter(w), kn.tensor(w, requires_grad=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda p, x: p + x,
        lambda p, x: x * p,
        lambda p, x: p - 2.0,
        lambda p, x: kn.exp(p) * x,
        lambda p, x: kn.relu(p),
        lambda p, x: p.t() @ x,
        lambda p, x: kn.matmul(x.t(), p),
        lambda p, x: kn.maximum(p, x),
        lambda p, x: p * p,
    ],
)
def test_parameter_ops_match_plain_tensors(fn):
    p, t = _pair()
    x = kn.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    out_p, out_t = fn(p, x), fn(t, x)
    np.testing.assert_array_equal(out_p.detach().numpy(), out_t.detach().numpy())
    assert out_p.dtype == out_t.dtype and out_p.requires_grad
    out_p.sum().backward()
    out_t.sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())


def test_frozen_parameter_records_nothing():
    p = kn.nn.Parameter(np.ones(3, np.float32), requires_grad=False)
    y = p + kn.ones(3)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(kn.exp(p).numpy(), np.exp(np.ones(3, np.float32)))


def test_parameter_ops_in_inference_mode_make_inference_tensors():
    p, _ = _pair()
    with kn.inference_mode():
        y = p * 2.0 + p
        z = kn.exp(p)
    assert y.is_inference() and z.is_inference() and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), 3 * p.detach().numpy())


def test_parameter_view_shares_version_counter():
    p, _ = _pair()
    v = p.t()
    with kn.no_grad():
        p.add_(1.0)
    assert v._version == p._version == 1
    np.testing.assert_array_equal(v.detach().numpy(), p.detach().numpy().T)


def test_step_bumps_version_so_stale_saved_values_are_refused():
    # PyTorch: a backward through a value saved before opt.step() changed it raises
    model = kn.nn.Linear(3, 2)
    opt = kn.optim.SGD(model.parameters(), lr=0.1)
    x = kn.ones(4, 3)
    model(x).sum().backward()
    before = model.weight._version
    stale = (model.weight * model.weight).sum()  # saves the weight
    opt.step()
    assert model.weight._version == before + 1
    with pytest.raises(AutogradError, match="modified by an inplace operation"):
        stale.backward()


def test_step_writes_through_to_views_of_a_parameter():
    w = kn.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    view = w.detach()[1:3]
    opt = kn.optim.SGD([w], lr=0.5)
    (w * w).sum().backward()  # grad 2w
    opt.step()  # w - 0.5 * 2w = 0
    np.testing.assert_array_equal(w.detach().numpy(), np.zeros(4, np.float32))
    np.testing.assert_array_equal(view.numpy(), np.zeros(2, np.float32))


def test_step_of_a_float64_parameter_keeps_its_dtype():
    w = kn.nn.Parameter(np.array([1.0, -1.0]))
    opt = kn.optim.Adam([w], lr=0.1)
    (w * 3.0).sum().backward()
    opt.step()  # Adam's first step: lr * g / (|g| + eps) against the gradient, g = 3
    assert w.dtype == kn.float64
    move = 0.1 * 3.0 / (3.0 + 1e-8)
    np.testing.assert_allclose(w.detach().numpy(), [1.0 - move, -1.0 - move], rtol=1e-15)


@pytest.mark.parametrize(
    "shape, target, expected",
    [
        ((2, 3), (3, -1), (3, 2)),
        ((2, 3), (6,), (6,)),
        ((4,), (2, 2), (2, 2)),
        ((0, 3), (3, 0), (3, 0)),
        ((2, 0), (0, -1), None),  # PyTorch: the -1 of an empty tensor beside a 0 is refused
        ((2, 3), (4, -1), None),
        ((2, 3), (-1, -1), None),
        ((2, 3), (5,), None),
        ((2, 3), (-2, 3), None),
    ],
)
def test_reshape_shape_of_int_shapes(shape, target, expected):
    # the int fast path (kiln/shapes.py `_static_reshape`) gives what the general path gives
    from kiln import shapes as sh
    from kiln.errors import ShapeError

    if expected is None:
        with pytest.raises(ShapeError):
            sh.reshape_shape(shape, target)
    else:
        assert sh.reshape_shape(shape, target) == expected
    assert sh.dim_product(d for d in shape) == int(np.prod(shape))  # a generator, read once
