"""What the ports of PyTorch's optimizer tests share (test_port_pt_optim*.py): a fixed small
problem, run for a few steps by an optimizer of `torch.optim` or `kiln.optim` built the same
way, and the parameters it leaves after each step, as NumPy arrays, to compare."""

import numpy as np
from port_common import to_numpy

RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal((5, 2))
W0 = RNG.standard_normal((3, 2))
B0 = RNG.standard_normal(2)
XC = X + 1j * RNG.standard_normal((5, 3))
YC = Y + 1j * RNG.standard_normal((5, 2))
W0C = W0 + 1j * RNG.standard_normal((3, 2))
B0C = B0 - 1j * RNG.standard_normal(2)

_F64, _F32 = dict(rtol=1e-12, atol=1e-12), dict(rtol=1e-6, atol=1e-6)
TOL = {"float64": _F64, "float32": _F32, "complex128": _F64, "complex64": _F32}


def params(lib, dtype="float64"):
    """The problem's weight and bias, leaves of `lib` in `dtype`."""
    complex_ = dtype.startswith("complex")
    w, b = (W0C, B0C) if complex_ else (W0, B0)
    dt = getattr(lib, dtype)
    return [
        lib.tensor(w, dtype=dt, requires_grad=True),
        lib.tensor(b, dtype=dt, requires_grad=True),
    ]


def loss_of(lib, w, b):
    """The problem's loss (real): squared error of tanh(x @ w + b) (complex: of x @ w + b)."""
    if w.dtype.is_complex:
        x, y = lib.tensor(XC, dtype=w.dtype), lib.tensor(YC, dtype=w.dtype)
        return ((x @ w + b - y).abs() ** 2).sum()
    x, y = lib.tensor(X, dtype=w.dtype), lib.tensor(Y, dtype=w.dtype)
    return (((x @ w + b).tanh() - y) ** 2).sum()


def closure_of(lib, opt, ps):
    def closure():
        opt.zero_grad()
        loss = loss_of(lib, *ps)
        loss.backward()
        return loss

    return closure


def snapshot(ps):
    return [to_numpy(p.detach()).copy() for p in ps]


def trajectory(lib, name, kwargs, dtype="float64", steps=6, ps=None, opt=None):
    """Parameters after each of `steps` steps of optimizer `name` (with `kwargs`) on the
    problem; (trajectory, optimizer, params)."""
    ps = params(lib, dtype) if ps is None else ps
    opt = getattr(lib.optim, name)(ps, **kwargs) if opt is None else opt
    out = []
    for _ in range(steps):
        opt.step(closure_of(lib, opt, ps))
        out.append(snapshot(ps))
    return out, opt, ps


def assert_trajectories(got, want, dtype="float64"):
    for i, (gs, ws) in enumerate(zip(got, want, strict=True)):
        for j, (g, w) in enumerate(zip(gs, ws, strict=True)):
            assert g.dtype == w.dtype, (i, j, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, err_msg=f"step {i} param {j}", **TOL[dtype])
