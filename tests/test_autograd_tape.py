"""The eager tape's short paths. Backward's array path (kiln/eager/autograd.py,
`_ARRAY_VJP`): the vjp of an op tagged "vjp_arrays" runs on bare NumPy arrays when the
cotangent, output and inputs share one float dtype (float32 or float64). Each such vjp must
give, bit for bit, what it gives on plain tensors (the path every other case takes); and
backward through the array path must agree with PyTorch and with the tensor path
(create_graph=True takes the latter). And each tape entry's site (kept unformatted, formatted
when read) is the user's line, as `user_site` gives."""

import inspect

import numpy as np
import pytest

import kiln as kn
from kiln.eager.autograd import _ARRAY_VJP
from kiln.graph.opdef import REGISTRY

ARRAY_OPS = sorted(
    (op for op in REGISTRY.values() if "vjp_arrays" in op.tags), key=lambda op: op.name
)
# shapes of the inputs of a binary op: same shape, broadcasting, 0-d beside an array, 0-d
BINARY_SHAPES = [((5,), (5,)), ((3, 1), (1, 4)), ((), (4,)), ((), ())]


def test_the_ops_of_the_array_path():
    names = {op.name for op in ARRAY_OPS}
    assert {"add", "sub", "mul", "div", "exp", "tanh", "reduce_sum"} <= names
    assert all(op.vjp is not None for op in ARRAY_OPS)


def _plain(a):
    return kn.from_numpy(np.array(a))


def _cases(op, rng, dtype):
    """(inputs, attrs) to try: values in every op's domain (log, sqrt, div: positive)."""

    def values(shape):
        return np.asarray(rng.uniform(0.5, 2.0, shape), dtype=dtype)

    if "reduction" in op.tags:
        return [((values((3, 4)),), {"axes": axes, "keepdims": keep})
                for axes in ((0,), (1,), (0, 1)) for keep in (False, True)]  # fmt: skip
    positional = [p for p in inspect.signature(op.vjp).parameters.values()
                  if p.kind == p.POSITIONAL_OR_KEYWORD]  # fmt: skip
    if len(positional) == 4:  # (ct, out, a, b)
        return [((values(a), values(b)), {}) for a, b in BINARY_SHAPES]
    return [((values(s),), {}) for s in ((5,), (2, 3), ())]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ARRAY_OPS, ids=lambda op: op.name)
def test_array_vjp_matches_the_tensor_vjp_bit_for_bit(op, dtype):
    rng = np.random.default_rng(0)
    for inputs, attrs in _cases(op, rng, dtype):
        out = np.asarray(op.impl(np, *inputs, **attrs))
        ct = np.asarray(rng.uniform(-1.0, 1.0, out.shape), dtype=dtype)
        on_arrays = _ARRAY_VJP[op](ct, out, *inputs, **attrs)  # what backward runs
        on_tensors = op.vjp(_plain(ct), _plain(out), *map(_plain, inputs), **attrs)
        assert len(on_arrays) == len(on_tensors)
        for a, t in zip(on_arrays, on_tensors):
            if t is None:
                assert a is None
                continue
            a, t = np.asarray(a), t.numpy()
            assert (a.dtype, a.shape) == (t.dtype, t.shape), (op.name, inputs, attrs)
            np.testing.assert_array_equal(a, t, err_msg=f"{op.name} {attrs}")


def _chain(x, a, lib):
    """Every op of the array path, with broadcasting, a shared input and Python scalars."""
    y = lib.tanh(x * a + 0.5) - a / 3.0
    y = lib.exp(-y) * lib.sqrt(x * x + 1.0) + lib.log1p(lib.sigmoid(y))
    y = lib.sin(y) / (lib.cos(a) + 2.0) + lib.expm1(y * 0.1) + lib.rsqrt(x * x + 1.0)
    y = lib.log(y * y + 1.0) + lib.square(x) - y.sum(0) + y.mean(1, keepdim=True)
    return (y * x).sum()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backward_on_arrays_matches_pytorch_and_the_tensor_path(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x_v, a_v = rng.uniform(-1, 1, (3, 4)).astype(dtype), rng.uniform(0.5, 1, (1, 4)).astype(dtype)
    x, a = kn.tensor(x_v, requires_grad=True), kn.tensor(a_v, requires_grad=True)
    _chain(x, a, kn).backward()
    tx, ta = (torch.tensor(v, requires_grad=True) for v in (x_v, a_v))
    _chain(tx, ta, torch).backward()
    tol = {"float32": 1e-5, "float64": 1e-12}[dtype]
    for k, t in ((x, tx), (a, ta)):
        assert k.grad.dtype == k.dtype and k.grad.shape == k.shape
        np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)
    # create_graph=True takes the tensor path: the same gradients, bit for bit
    x2, a2 = kn.tensor(x_v, requires_grad=True), kn.tensor(a_v, requires_grad=True)
    _chain(x2, a2, kn).backward(create_graph=True)
    np.testing.assert_array_equal(x2.grad.detach().numpy(), x.grad.numpy())
    np.testing.assert_array_equal(a2.grad.detach().numpy(), a.grad.numpy())


def test_array_path_keeps_hooks_retain_grad_and_version_checks():
    x = kn.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    z = kn.exp(y)
    z.sum().backward(retain_graph=True)
    dz = np.exp(np.array([1.0, 2.0, 4.0], np.float32))  # d sum(exp(y)) / dy, by hand
    np.testing.assert_allclose(seen[0], dz, rtol=1e-6)
    # PyTorch runs retain_grad's hook after the others: y.grad is the hook's result
    np.testing.assert_allclose(y.grad.numpy(), dz * 10, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), dz * 10 * 2, rtol=1e-6)
    with kn.no_grad():
        y.mul_(2.0)  # exp saved its output z, not y: y's change is harmless here
        z.mul_(2.0)  # ... but z's is not
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_array_path_grad_of_a_non_leaf_and_accumulation():
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    (g,) = kn.autograd.grad((h * 3.0).sum(), h)
    np.testing.assert_array_equal(g.numpy(), [3.0, 3.0])
    for _ in range(2):
        (x * x + x).sum().backward()  # 2x + 1, twice: [3, 5] * 2
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 10.0])


def test_a_tape_entry_names_the_users_line():
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    here = inspect.currentframe().f_lineno
    y = kn.tanh(
        x * 2.0  # the product's line, not the call's first
    )
    z = (y + x).sum()
    assert y.grad_fn.site == f"test_autograd_tape.py:{here + 1}"
    assert y.grad_fn.next_functions[0][0].site == f"test_autograd_tape.py:{here + 2}"
    assert (
        z.grad_fn.site == z.grad_fn.next_functions[0][0].site == f"test_autograd_tape.py:{here + 4}"
    )
    assert "test_autograd_tape.py" in repr(z.grad_fn)
