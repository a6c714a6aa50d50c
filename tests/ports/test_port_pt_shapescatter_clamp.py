"""PyTorch's own clamp/clip tests (test_shape_ops.py's test_clamp*) as an oracle, as
test_port_pt_shapescatter_shape.py does for the shape ops (pt_oracle.py runs each scenario on
torch and on kiln, eagerly and under `kn.compile`): number and tensor bounds, NaN bounds,
min > max, in-place forms and out=, integer inputs with float bounds, the refusal of a tensor
bound beside a number, and the gradients (ties with a bound go to the input).

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios
from pt_shapescatter_common import grad_of as _grad

nan, inf = float("nan"), float("inf")
f32 = np.float32

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- clamp, clip -------------------------------------------------------------------------------

CL = np.array([-25.0, -10.5, -3, 0, 4.5, 10, 11, nan, inf, -inf], f32)


@case("clamp_scalar_bounds", CL, np.arange(-12, 13, 3))
def _(lib, x, i):
    return (lib.clamp(x, -10, 10), lib.clamp(x, min=-10), lib.clamp(x, max=10), x.clip(-3, 4),
            lib.clip(x, None, 0.5), lib.clamp(i, -10, 10), lib.clamp(i, max=3),
            lib.clamp(i, 2.5), lib.clamp(i, -1.5, 1.5), lib.clamp(i, max=1.5),
            lib.clamp(x.half(), -1, 1), lib.clamp(x, 5, 1), lib.clamp(i, 5, 1))  # fmt: skip


@case("clamp_nan_bounds", CL)
def _(lib, x):
    return lib.clamp(x, None, nan), lib.clamp(x, nan, None), lib.clamp(x, nan, nan)


@case("clamp_tensor_bounds", CL, np.linspace(-5, 5, 10).astype(f32), np.full(10, 3, f32))
def _(lib, x, lo, hi):
    return (lib.clamp(x, lo, hi), lib.clamp(x, min=lo), lib.clamp(x, max=hi), x.clip(lo, hi),
            lib.clamp(x, hi, lo), lib.clamp(x, lo[:1], hi[:1]),
            lib.clamp(x.reshape(2, 5), lo.reshape(2, 5)[:, :1], hi[:5]),
            lib.clamp(x, lo.double()), lib.clamp(x.long().clamp(-9, 9), lo, hi))  # fmt: skip


@case("clamp_tensor_nan_bounds", np.arange(4, dtype=f32), np.array([nan, 0, 1, nan], f32))
def _(lib, x, b):
    return lib.clamp(x, b), lib.clamp(x, max=b), lib.clamp(x, b, b)


@case("clamp_int_tensor_with_float_bound", np.arange(-3, 4), np.full(7, 1.5, f32))
def _(lib, i, b):
    return lib.clamp(i, b), lib.clamp(i, max=b), lib.clamp(i.to(lib.int8), -b, b)


@case("clamp_tensor_and_number_bounds", CL, np.full(10, 3, f32))
def _(lib, x, hi):
    # torch's signatures take two numbers or two tensors (or None), not one of each
    return lib.clamp(x, -1, hi)


@case("clamp_inplace_tensor_and_number_bounds", CL, np.full(10, 3, f32))
def _(lib, x, lo):
    return x.clone().clamp_(lo, 2)


@case("clamp_0d_tensor_bound_beside_a_number_or_tensor", CL, np.full(10, 3, f32))
def _(lib, x, hi):
    # a 0-d tensor bound is read as a number beside a number, as a tensor beside a tensor
    zero = lib.tensor(0.0)
    return (x.clip(zero, 1), lib.clamp(x, -1, zero), lib.clamp(x, zero, hi),
            x.clone().clamp_(zero, 2.5), lib.clamp(x, min=zero.double(), max=1))  # fmt: skip


@case("clamp_inplace", CL, np.linspace(-5, 5, 10).astype(f32))
def _(lib, x, lo):
    a, b, c, d = x.clone(), x.clone(), x.clone(), x.clone()
    a.clamp_(-1, 1)
    b.clip_(max=0)
    c.clamp_(lo, lo + 2)
    d.clamp_min_(lo)
    return a, b, c, d


@case("clamp_int_inplace_float_bound", np.arange(-3, 4))
def _(lib, i):
    j = i.clone()
    j.clamp_(-1.5, 1.5)
    return j


@case("clamp_out", CL, np.arange(-3, 4))
def _(lib, x, i):
    out, out2 = lib.empty_like(x), lib.empty(0, dtype=lib.float64)
    return lib.clamp(x, -1, 1, out=out), out, lib.clip(i, 0, out=out2), out2


@case("clamp_no_bounds", CL)
def _(lib, x):
    return lib.clamp(x)


@case("clamp_method_no_bounds", CL)
def _(lib, x):
    return x.clamp()


@case("clamp_bool", np.array([True, False]))
def _(lib, b):
    return lib.clamp(b, 0, 1)


@case("clamp_gradients", Leaf.of(np.array([-3, -1, 0, 1, 2, 3, 1, -1], f32)),
      Leaf.of(np.array([-1, -1, -1, -1, 0, 0, 2, 0], f32)),
      Leaf.of(np.array([1, 1, 1, 1, 2, 2, 0, -2], f32)))  # fmt: skip
def _(lib, x, lo, hi):
    # ties with a bound go to the input; min > max: the max bound wins
    y = (lib.clamp(x, lo, hi), lib.clamp(x, -1, 1), lib.clamp(x, min=lo), lib.clamp(x, max=hi))
    return y, _grad(lib, y, x, lo, hi)


@case("clamp_min_max_names", CL, np.linspace(-5, 5, 10).astype(f32))
def _(lib, x, lo):
    return (lib.clamp_min(x, lo), lib.clamp_max(x, 2), x.clamp_min(-1), x.clamp_max(lo),
            lib.clip(x, min=lo, max=lo + 1))  # fmt: skip


@case("clamp_integer_overflowing_bound", np.array([3, 0, 200], np.int16))
def _(lib, i):
    # a bound beyond the dtype's range: the result is of the promoted dtype
    return lib.clamp(i.to(lib.uint8), -5, 300), lib.clamp(i.to(lib.int8), max=1000.5)


@case("clamp_complex", np.array([1 + 1j, 2], np.complex64))
def _(lib, c):
    return lib.clamp(c, 0, 1)


# -- the test ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
