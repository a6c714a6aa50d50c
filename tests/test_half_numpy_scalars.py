"""A NumPy float scalar with a float16/bfloat16 tensor (`q * (1 / np.sqrt(d))`) computes as
the Python float it holds, as PyTorch's argument parser reads it: `t * s`, `s * t` and `t / s`
in float32 with s unrounded, rounded once (kiln/eager/dispatch.py `opmath_operands`). Before,
s was rounded to the tensor's dtype first: a third of float16 products of 0.1 differed from
PyTorch's. The expected bits are the Python float's path, which matches PyTorch 2.13's CPU
kernels bit for bit (checked against torch when it is installed)."""

import numpy as np
import pytest

import kiln as kn

X = np.random.default_rng(0).standard_normal(512).astype(np.float32)
SCALARS = [np.float64(0.1), np.float32(0.1), np.float64(1.0004), np.float16(3.3)]
OPS = {
    "mul": lambda t, s: t * s,
    "rmul": lambda t, s: s * t,
    "div": lambda t, s: t / s,
    "kn.mul": lambda t, s: kn.mul(t, s),
}


def _bits(t):
    return t.float().numpy() if isinstance(t, kn.Tensor) else np.asarray(t, np.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_numpy_scalar_is_the_python_float_eager_graph_compiled(dtype, op, s):
    fn = OPS[op]
    t = kn.tensor(X).to(getattr(kn, dtype))
    want = fn(t, float(s))
    got = fn(t, s)
    assert got.dtype == want.dtype == t.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))
    compiled = kn.compile(lambda t: fn(t, s))(t)
    np.testing.assert_array_equal(_bits(compiled), _bits(want))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_numpy_scalar_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    for s in SCALARS:
        for op, fn in OPS.items():
            if op == "kn.mul":
                continue
            got = fn(kn.tensor(X).to(getattr(kn, dtype)), s).float().numpy()
            want = fn(torch.tensor(X).to(getattr(torch, dtype)), s).float().numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {s!r}")
