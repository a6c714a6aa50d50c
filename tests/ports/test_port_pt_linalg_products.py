"""PyTorch's linear-algebra tests (test_linalg.py), the products' part, as an oracle: matmul's
rules for 1-D operands and broadcasting, mm/bmm/mv/dot/vdot/inner/outer, the fused
addmm/addbmm/baddbmm/addmv/addr (beta and alpha; beta=0 ignores NaN and inf in the input),
integer and boolean products, zero-size operands and the errors of mismatched shapes and
dtypes. Each scenario runs on torch and on kiln, eagerly and under `kn.compile` (pt_oracle.py),
and compares values, dtypes, shapes and exception types. test_port_pt_linalg.py has kn.linalg's.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios

nan, inf = float("nan"), float("inf")
f32, f64 = np.float32, np.float64
RNG = np.random.default_rng(0)


def rand(*shape, dtype=f32):
    return RNG.standard_normal(shape).astype(dtype)


def irand(*shape, dtype=np.int64):
    return RNG.integers(-5, 6, shape).astype(dtype)


SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- matmul: 1-D operands, broadcasting, the shapes of its results ------------------------


@case("matmul_1d_1d_is_a_0d_dot", rand(4), rand(4))
def _(lib, a, b):
    return lib.matmul(a, b), a @ b


@case("matmul_1d_2d_prepends_then_drops", rand(3), rand(3, 5))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_2d_1d_appends_then_drops", rand(5, 3), rand(3))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_1d_batched", rand(3), rand(2, 4, 3, 5), rand(2, 4, 5, 3))
def _(lib, v, a, b):
    return lib.matmul(v, a), lib.matmul(b, v)


@case("matmul_broadcasts_batch_dims", rand(2, 1, 4, 3), rand(5, 3, 6), rand(3, 6))
def _(lib, a, b, c):
    return lib.matmul(a, b), lib.matmul(a, c), lib.matmul(c.T, a.transpose(-1, -2))


@case("matmul_batch_dims_of_one_both_sides", rand(1, 3, 2, 4), rand(5, 1, 4, 2))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_zero_size", np.zeros((0, 3), f32), np.zeros((3, 0), f32), rand(2, 0, 3))
def _(lib, a, b, c):
    # a contraction over zero elements is zeros; zero-size batches stay zero-size
    return lib.matmul(b, a), lib.matmul(a, b), lib.matmul(c, rand_mat(lib, 3, 4)), b @ b.T


def rand_mat(lib, *shape):
    return lib.tensor(np.arange(np.prod(shape), dtype=f32).reshape(shape) / 7)


@case("matmul_0d_refused", np.array(2.0, f32), rand(3))
def _(lib, s, v):
    return lib.matmul(s, v)


@case("matmul_mismatch_refused", rand(2, 3), rand(4, 5))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_1d_mismatch_refused", rand(3), rand(4))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_batch_mismatch_refused", rand(2, 3, 4), rand(3, 4, 5))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_dtype_mismatch_refused", rand(2, 3), rand(3, 2, dtype=f64))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_int_float_refused", irand(2, 3), rand(3, 2))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_integers", irand(3, 4), irand(4, 2), irand(2, 3, 4, dtype=np.int32))
def _(lib, a, b, c):
    return lib.matmul(a, b), lib.matmul(c, c.transpose(1, 2)), lib.mv(a, b[:, 0]), a @ b[:, 1]


@case("matmul_int8_wraps", np.full((2, 40), 7, np.int8), np.full((40, 2), 9, np.int8))
def _(lib, a, b):
    # the sum of the products wraps in the operands' dtype (2520 mod 256)
    return lib.matmul(a, b), lib.mm(a, b)


@case("matmul_uint8", np.full((2, 3), 200, np.uint8), np.full((3, 2), 3, np.uint8))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_bool_refused", np.eye(2, dtype=bool), np.eye(2, dtype=bool))
def _(lib, a, b):
    return lib.matmul(a, b)


@case("matmul_float64_and_complex", rand(2, 3, dtype=f64), (rand(3, 2) + 1j * rand(3, 2)))
def _(lib, a, c):
    return lib.matmul(a, a.T), lib.matmul(c.T, c), lib.matmul(c[:, 0], c[:, 1])


@case("matmul_grad_1d_and_broadcast", Leaf.of(rand(3)), Leaf.of(rand(2, 3, 4)), Leaf.of(rand(4, 5)))
def _(lib, v, a, b):
    (
        lib.matmul(v, a).sum() + (lib.matmul(a, b) ** 2).sum() + lib.matmul(b.T, a[0, 0]).sum()
    ).backward()
    return v.grad, a.grad, b.grad


# -- mm, bmm, mv, dot, vdot, inner, outer ------------------------------------------------


@case("mm_bmm_mv", rand(3, 4), rand(4, 2), rand(5, 3, 4), rand(5, 4, 2), rand(4))
def _(lib, a, b, ba, bb, v):
    return lib.mm(a, b), lib.bmm(ba, bb), lib.mv(a, v), a.mm(b), ba.bmm(bb), a.mv(v)


@case("mm_refuses_1d_and_3d", rand(3), rand(3, 3), rand(2, 3, 3))
def _(lib, v, a, b):
    out = []
    for x, y in ((v, a), (a, v), (b, a)):
        try:
            lib.mm(x, y)
            out.append("ok")
        except RuntimeError:
            out.append("RuntimeError")
    return out


@case("mm_mismatch_refused", rand(3, 4), rand(3, 4))
def _(lib, a, b):
    return lib.mm(a, b)


@case("bmm_batch_mismatch_refused", rand(2, 3, 4), rand(3, 4, 2))
def _(lib, a, b):
    return lib.bmm(a, b)


@case("bmm_does_not_broadcast", rand(1, 3, 4), rand(3, 4, 2))
def _(lib, a, b):
    return lib.bmm(a, b)


@case("mv_refuses_2d_vector", rand(3, 4), rand(4, 1))
def _(lib, a, v):
    return lib.mv(a, v)


@case("mm_zero_size", np.zeros((3, 0), f32), np.zeros((0, 4), f32), np.zeros((0, 2, 3), f32))
def _(lib, a, b, c):
    return lib.mm(a, b), lib.mm(b.T, a.T), lib.bmm(c, c.transpose(1, 2)), lib.mv(a, lib.zeros(0))


@case("dot_vdot_inner", rand(4), rand(4), (rand(4) + 1j * rand(4)).astype(np.complex64))
def _(lib, a, b, c):
    return (
        lib.dot(a, b),
        lib.vdot(a, b),
        lib.inner(a, b),
        a.dot(b),
        lib.vdot(c, c),
        lib.dot(c, c),
        lib.inner(c, c),
    )


@case("dot_integers_and_empty", irand(5), irand(5), np.zeros(0, f32))
def _(lib, a, b, e):
    return lib.dot(a, b), lib.vdot(a, b), lib.dot(e, e), lib.inner(e, e)


@case("dot_refuses_2d", rand(2, 2), rand(2, 2))
def _(lib, a, b):
    return lib.dot(a, b)


@case("dot_refuses_length_mismatch", rand(3), rand(4))
def _(lib, a, b):
    return lib.dot(a, b)


@case("dot_refuses_dtype_mismatch", rand(3), rand(3, dtype=f64))
def _(lib, a, b):
    return lib.dot(a, b)


@case("vdot_refuses_2d", rand(2, 2), rand(2, 2))
def _(lib, a, b):
    return lib.vdot(a, b)


@case("inner_nd", rand(2, 3, 4), rand(5, 4), np.array(3.0, f32))
def _(lib, a, b, s):
    # inner contracts the last dims; a 0-d operand multiplies
    return lib.inner(a, b), lib.inner(s, a), lib.inner(b, s)


@case("inner_mismatch_refused", rand(2, 3), rand(2, 4))
def _(lib, a, b):
    return lib.inner(a, b)


@case("outer_ger", rand(3), rand(4), irand(2), (rand(2) + 1j * rand(2)).astype(np.complex64))
def _(lib, a, b, i, c):
    return lib.outer(a, b), lib.ger(a, b), lib.outer(i, i), lib.outer(c, c), a.outer(b)


@case("outer_mixed_dtypes_promote", rand(3), irand(2))
def _(lib, a, i):
    return lib.outer(a, i), lib.outer(i, a.double())


@case("outer_refuses_2d", rand(3, 1), rand(4))
def _(lib, a, b):
    return lib.outer(a, b)


# -- addmm / addbmm / baddbmm / addmv / addr: beta, alpha, broadcasting -------------------


@case("addmm_beta_alpha", rand(3, 2), rand(3, 4), rand(4, 2), rand(2))
def _(lib, c, a, b, row):
    return (
        lib.addmm(c, a, b),
        lib.addmm(c, a, b, beta=0.5, alpha=2),
        lib.addmm(row, a, b, alpha=-1),
        c.addmm(a, b, beta=2),
        lib.addmm(c, a, b, beta=1, alpha=0),
    )


@case("addmm_beta_zero_ignores_nan", np.full((3, 2), nan, f32), rand(3, 4), rand(4, 2))
def _(lib, c, a, b):
    return (
        lib.addmm(c, a, b, beta=0),
        lib.addmm(c * inf, a, b, beta=0.0, alpha=3),
        lib.addmm(c, a, b, beta=0.5),
    )


@case("addmm_alpha_zero_skips_product", rand(3, 2), np.full((3, 4), nan, f32), rand(4, 2))
def _(lib, c, a, b):
    # PyTorch's addmm, addmv and addbmm of float32/float64 (addmm's and addbmm's of complex)
    # call BLAS: alpha=0 does not read the product
    return (lib.addmm(c, a, b, alpha=0), lib.addmv(c[:, 0], a, b[:, 0], alpha=0),
            lib.addbmm(c, a[None], b[None] * inf, alpha=0, beta=2),
            lib.addmm(c.double(), a.double(), b.double(), alpha=0, beta=0),
            lib.addmm(c.half(), a.half(), b.half(), alpha=0),  # (not BLAS: NaN)
            lib.addmm(c.cfloat(), a.cfloat(), b.cfloat(), alpha=0),
            lib.addmv(c[:, 0].cfloat(), a.cfloat(), b[:, 0].cfloat(), alpha=0))  # fmt: skip


@case("addmm_alpha_zero_grads", Leaf.of(rand(3, 2)), Leaf.of(rand(3, 4)), Leaf.of(rand(4, 2)))
def _(lib, c, a, b):
    (
        lib.addmm(c, a, b, alpha=0, beta=3) + lib.addmv(c[:, 0], a, b[:, 1], alpha=0)[:, None]
    ).sum().backward()
    return c.grad, a.grad, b.grad


@case("baddbmm_addr_alpha_zero_keep_nan_of_product", rand(3, 2), np.full((3, 4), nan, f32))
def _(lib, c, a):
    # (baddbmm and addr do read it: NaN * 0 is NaN there)
    return lib.baddbmm(c[None], a[None], lib.ones(1, 4, 2), alpha=0), lib.addr(
        c, a[:, 0], c[0], alpha=0
    )


@case("addmm_integers", irand(3, 2), irand(3, 4), irand(4, 2))
def _(lib, c, a, b):
    return lib.addmm(c, a, b, beta=2, alpha=3), lib.addmv(c[:, 0], a, b[:, 0], beta=-1)


@case("addmm_integer_float_alpha_refused", irand(3, 2), irand(3, 4), irand(4, 2))
def _(lib, c, a, b):
    return lib.addmm(c, a, b, alpha=0.5)


@case("addmm_zero_size_contraction", rand(3, 2), np.zeros((3, 0), f32), np.zeros((0, 2), f32))
def _(lib, c, a, b):
    return lib.addmm(c, a, b, beta=2), lib.addmm(c, a, b, beta=0)


@case("addmm_refuses_1d", rand(3), rand(3, 4), rand(4))
def _(lib, c, a, v):
    return lib.addmm(c, a, v)


@case("addmm_input_not_broadcastable_refused", rand(4, 2), rand(3, 4), rand(4, 2))
def _(lib, c, a, b):
    return lib.addmm(c, a, b)


@case("baddbmm_addbmm", rand(5, 3, 2), rand(5, 3, 4), rand(5, 4, 2), rand(3, 2))
def _(lib, c, a, b, c2):
    return (
        lib.baddbmm(c, a, b),
        lib.baddbmm(c, a, b, beta=0.5, alpha=-2),
        lib.baddbmm(c2, a, b),
        lib.addbmm(c2, a, b),
        lib.addbmm(c2, a, b, beta=2, alpha=0.5),
        lib.addbmm(c2[0], a, b),
        c.baddbmm(a, b, alpha=3),
    )


@case(
    "baddbmm_addbmm_beta_zero_ignores_nan",
    np.full((5, 3, 2), nan, f32),
    rand(5, 3, 4),
    rand(5, 4, 2),
)
def _(lib, c, a, b):
    return lib.baddbmm(c, a, b, beta=0), lib.addbmm(c[0] * inf, a, b, beta=0)


@case("addbmm_zero_batch", rand(3, 2), np.zeros((0, 3, 4), f32), np.zeros((0, 4, 2), f32))
def _(lib, c, a, b):
    return lib.addbmm(c, a, b, beta=3), lib.baddbmm(lib.zeros(0, 3, 2), a, b)


@case("addmv_addr", rand(3), rand(3, 4), rand(4), rand(3, 4), rand(3))
def _(lib, c, a, v, m, u):
    return (
        lib.addmv(c, a, v),
        lib.addmv(c, a, v, beta=0.5, alpha=2),
        lib.addr(m, u, v),
        lib.addr(m, u, v, beta=-1, alpha=0.25),
        lib.addr(c[0], u, v),
        m.addr(u, v),
        c.addmv(a, v, beta=2),
    )


@case("addmv_addr_beta_zero_ignores_nan", np.full(3, nan, f32), rand(3, 4), rand(4), rand(3))
def _(lib, c, a, v, u):
    return lib.addmv(c, a, v, beta=0), lib.addr(a * nan, u, v, beta=0)


@case("addr_integers_and_bool", irand(3, 2), irand(3), irand(2), np.array([True, False]))
def _(lib, m, u, v, b):
    return (
        lib.addr(m, u, v, beta=2, alpha=-1),
        lib.addr(lib.zeros(2, 2, dtype=lib.bool), b, b, beta=False, alpha=True),
    )


@case("addr_bool_refuses_int_beta", np.array([True, False]))
def _(lib, b):
    return lib.addr(lib.zeros(2, 2, dtype=lib.bool), b, b, beta=2)


@case("addmm_grads", Leaf.of(rand(3, 2)), Leaf.of(rand(3, 4)), Leaf.of(rand(4, 2)))
def _(lib, c, a, b):
    (lib.addmm(c, a, b, beta=0.5, alpha=2) ** 2).sum().backward()
    return c.grad, a.grad, b.grad


@case(
    "baddbmm_addr_grads",
    Leaf.of(rand(2, 3, 2)),
    Leaf.of(rand(2, 3, 4)),
    Leaf.of(rand(2, 4, 2)),
    Leaf.of(rand(3)),
    Leaf.of(rand(2)),
)
def _(lib, c, a, b, u, v):
    y = lib.baddbmm(c, a, b, beta=-1, alpha=3).sum(0) * lib.addr(c[0], u, v, beta=2, alpha=0.5)
    (lib.addbmm(c[1], a, b, alpha=0.5) * y).sum().backward()
    return c.grad, a.grad, b.grad, u.grad, v.grad


@case("addmv_grads", Leaf.of(rand(3)), Leaf.of(rand(3, 4)), Leaf.of(rand(4)))
def _(lib, c, a, v):
    (lib.addmv(c, a, v, beta=3, alpha=-0.5) ** 3).sum().backward()
    return c.grad, a.grad, v.grad


@case("dot_vdot_outer_grads", Leaf.of(rand(4)), Leaf.of(rand(4)))
def _(lib, a, b):
    (lib.dot(a, b) * lib.vdot(b, a) + lib.outer(a, b).sin().sum() + lib.inner(a, a)).backward()
    return a.grad, b.grad


# -- chain products: tensordot, kron, chain_matmul --------------------------------------


@case("tensordot_forms", rand(2, 3, 4), rand(4, 3, 5))
def _(lib, a, b):
    return (
        lib.tensordot(a, b, dims=1),
        lib.tensordot(a, b, dims=([1, 2], [1, 0])),
        lib.tensordot(a, b, dims=0).shape,
        lib.tensordot(a[0], b[:, :, 0].T, dims=2),
    )


@case("chain_matmul", rand(2, 3), rand(3, 4), rand(4, 5))
def _(lib, a, b, c):
    return lib.chain_matmul(a, b, c), lib.chain_matmul(a)


# -- the test ----------------------------------------------------------------------------

SCENARIOS.eager_only.update({})
SCENARIOS.xfail.update({})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
