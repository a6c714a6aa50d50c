"""Complex values' views against PyTorch (torch 2.13 as the reference, skipped without it):
`view_as_real` / `view_as_complex` and `z.real` / `z.imag` share their base's memory, and
in-place writes through them are recorded for autograd as PyTorch's (the base's history is
rebased, the views' histories are taken again), in eager mode, graph mode and kn.compile."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

Z = np.array([1 + 2j, 3 - 4j, -0.5 + 0.25j, 2 + 1j])
P = np.stack([Z.real, Z.imag], -1)  # Z as pairs of reals


# -- the views share memory, with PyTorch's strides and refusals --------------------------------


def test_view_as_real_and_view_as_complex_share_memory_as_pytorchs():
    def run(m):
        z = m.tensor(Z.reshape(2, 2))
        r = m.view_as_real(z)
        r[0, 1, 1] = 7.0  # through the real view
        c = m.view_as_complex(r)
        c[1, 0] = 9j  # through a complex view of the real view
        t = m.view_as_real(z.T)  # a view of a transposed base: strides doubled
        x = m.tensor(P.copy())
        w = m.view_as_complex(x)
        w.mul_(1j)  # x changes too
        strides = (r.stride(), c.stride(), t.stride(), w.stride(), z.real.stride())
        return [z.numpy(), r.numpy(), x.numpy(), t.numpy()], strides, (z._version, x._version)

    got, want = run(kn), run(torch)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    assert got[1:] == want[1:]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda m: m.zeros(3, 4), "last dimension of size 2"),
        (lambda m: m.zeros(2, 2).T, "last dimension with stride 1"),
        (lambda m: m.zeros(3, 3)[:, 1:], "stride divisible by 2"),
        (lambda m: m.zeros(7)[1:].reshape(3, 2), "storage_offset divisible by 2"),
        (lambda m: m.zeros(()), "one or more dimensions"),
        (lambda m: m.zeros(2, 2, dtype=m.int32), "only supported for"),
    ],
)
def test_view_as_complex_refuses_what_pytorch_refuses(make, message):
    with pytest.raises(RuntimeError, match=message):
        torch.view_as_complex(make(torch))
    with pytest.raises((RuntimeError, TypeError), match=message):
        kn.view_as_complex(make(kn))
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        kn.view_as_real(kn.zeros(2))


# -- in-place writes through the views, with autograd -------------------------------------------


def _scaled_real(m):
    x = m.tensor(Z, requires_grad=True)
    y = x * 2
    y.real.mul_(3)
    return (x,), y


def _imag_items(m):
    x = m.tensor(Z, requires_grad=True)
    y = x * (1 + 1j)
    y.imag[0] = 5
    y.imag[1:3] *= 2  # a view of a view, written back through the first view
    y.real[2:] = y.imag[:2].detach()
    return (x,), y


def _real_plus_grad(m):  # `z.real += w` with w requiring grad, z not
    w = m.tensor(Z.real.copy(), requires_grad=True)
    y = m.tensor(Z)
    r = y.real
    r += w * w
    return (w,), y


def _through_view_as_real(m):
    x = m.tensor(Z, requires_grad=True)
    y = x * x
    v = m.view_as_real(y)
    v[:, 1] *= 2
    v[0, 0] = 1.0
    return (x,), y


def _through_view_as_complex(m):
    x = m.tensor(P, requires_grad=True)
    y = x * 3
    c = m.view_as_complex(y)
    c.mul_(1j)
    c[1] = c[2].clone() * c[3].clone()
    return (x,), y


def _overlapping_views(m):  # the second view's history is taken again after the first's write
    x = m.tensor(Z, requires_grad=True)
    y = x * 2
    r, re = m.view_as_real(y), y.real
    re.mul_(2)
    r.mul_(3)
    y.imag.add_(y.real)  # reads one view of y, writes another
    return (x,), y


CASES = [_scaled_real, _imag_items, _real_plus_grad, _through_view_as_real,
         _through_view_as_complex, _overlapping_views]  # fmt: skip


def _loss(y):
    y = y if y.is_complex() else y[..., 0] + 1j * y[..., 1]
    return (y * y.conj()).real.sum() + y.abs().sum() + (y * (0.5 - 2j)).imag.sum()


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[1:] for c in CASES])
def test_inplace_writes_through_complex_views_record_as_pytorchs(case):
    def run(m, f):
        leaves, y = f(m)
        _loss(y).backward()
        return [y.detach().numpy()] + [leaf.grad.numpy() for leaf in leaves]

    want = run(torch, case)
    for got, w in zip(run(kn, case), want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)


def test_inplace_write_through_a_view_bumps_the_version_pytorch_checks():
    # exp saves its output; a write through its real part makes backward refuse, as torch's
    for m in (torch, kn):
        x = m.tensor(Z, requires_grad=True)
        y = x.exp()
        y.real.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.abs().sum().backward()


def test_a_view_of_a_leaf_that_requires_grad_refuses_inplace_writes():
    for m in (torch, kn):
        x = m.tensor(Z, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf"):
            x.real.mul_(2)


# -- graph mode and kn.compile: the same writes, functionalized ---------------------------------


def _writes(m, x, w):
    y = x * 2
    y.real.mul_(3)
    y.imag[1:3] *= 2
    r = y.real
    r += w * w
    v = m.view_as_real(y)
    v[:, 1] *= 2
    v[0, 0] = 1.0
    c = m.view_as_complex(v)  # a view of a view
    c.mul_(1j)
    y.imag.add_(y.real)
    return _loss(y), y


def test_writes_through_complex_views_trace_as_pytorchs_eager_run():
    xt, wt = torch.tensor(Z, requires_grad=True), torch.tensor(Z.real.copy(), requires_grad=True)
    loss, y = _writes(torch, xt, wt)
    loss.backward()
    want = [loss.detach().numpy(), y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    for run in (lambda a, b: _writes(kn, a, b), kn.compile(lambda a, b: _writes(kn, a, b))):
        x, w = kn.tensor(Z, requires_grad=True), kn.tensor(Z.real.copy(), requires_grad=True)
        loss, y = run(x, w)
        loss.backward()
        got = [loss.detach().numpy(), y.detach().numpy(), x.grad.numpy(), w.grad.numpy()]
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    with kn.Graph().as_default():
        x, w = kn.placeholder(kn.complex128, (4,)), kn.placeholder(kn.float64, (4,))
        a, b = x * 1, w * 1  # placeholders (feeds) cannot change in place
        loss, y = _writes(kn, a, b)
        gx, gw = kn.grad(loss, [x, w])
        got = kn.function([x, w], [loss, y, gx, gw])(Z, Z.real.copy())
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_symbols_report_the_strides_of_pytorchs_views():
    def layouts(m, z, x):
        views = (z.real, z.imag, m.view_as_real(z), m.view_as_real(z.T)[1:], z[1].imag,
                 m.view_as_complex(x), m.view_as_complex(x[1:]))  # fmt: skip
        return [(v.stride(), v.storage_offset(), v.is_contiguous()) for v in views]

    want = layouts(torch, torch.zeros(2, 3, dtype=torch.complex64), torch.zeros(3, 2))
    with kn.Graph().as_default():
        z, x = kn.placeholder(kn.complex64, (2, 3)), kn.placeholder(kn.float32, (3, 2))
        assert layouts(kn, z, x) == want
        with pytest.raises(RuntimeError, match="stride 1"):
            kn.view_as_complex(kn.view_as_real(z).transpose(0, 2))  # last stride 6


def test_a_compiled_function_writes_through_its_arguments_views_as_eager():
    # torch.compile's rule: an argument changed in place (here through its views) is changed
    # for the caller too; expected: the eager run of the same function
    def f(z, x):
        z.real.mul_(2)
        z.imag[0] = -1.0
        kn.view_as_complex(x).mul_(1j)
        return z.abs().sum()

    runs = []
    for fn in (f, kn.compile(f), kn.compile(f)):  # the second compiled call: the cached program
        z, x = kn.tensor(Z), kn.tensor(P.copy())
        runs.append([fn(z, x).numpy(), z.numpy(), x.numpy()])
    for run in runs[1:]:
        for got, want in zip(run, runs[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(runs[0][2], np.stack([-Z.imag, Z.real], -1))  # Z * 1j, by hand


def test_assigning_real_and_imag_writes_through_as_pytorchs_setters():
    def run(m, w, y0):
        y = y0 * 1
        y.real = w * 2  # PyTorch's setter: y.real.copy_(w * 2)
        y.imag = 3.0
        x = m.tensor([1.0, 2.0])
        x.real = m.tensor([5.0, 6.0])  # a real tensor is its own real part
        return (y.abs().sum() + x.sum(), y)

    wt = torch.tensor(Z.real.copy(), requires_grad=True)
    total, y = run(torch, wt, torch.tensor(Z))
    total.backward()
    want = [total.detach().numpy(), y.detach().numpy(), wt.grad.numpy()]
    for fn in (lambda w, y0: run(kn, w, y0), kn.compile(lambda w, y0: run(kn, w, y0))):
        w = kn.tensor(Z.real.copy(), requires_grad=True)
        total, y = fn(w, kn.tensor(Z))
        total.backward()
        for got, e in zip([total.detach().numpy(), y.detach().numpy(), w.grad.numpy()], want):
            np.testing.assert_allclose(got, e, rtol=1e-12)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        kn.ones(2).imag = 1.0
