"""Every differentiable op-table row: its vjp passes the dot-product test in a random
direction (float64), `<grad L(x), v> == (L(x + eps v) - L(x - eps v)) / 2 eps` with
`L = sum(fn(x) * u)`; a subset is also checked at second order.

A row takes part when its op has a vjp (and is not random or tagged "nondiff"), it has a
float64 output, its loss is finite at its inputs (rows of inf and overflow test kernels,
not derivatives), and its inputs are not at a kink (`NOT_SMOOTH_HERE`).

`pytest tests/test_op_grads.py -k tanh` runs the tanh rows.
"""

import zlib

import numpy as np
import pytest
from op_table import CASES, OpCase
from test_ops import as_list

import kiln as kn
from kiln.graph.opdef import REGISTRY

EPS = 1e-6

# Rows whose inputs sit where the function has no derivative, with the reason.
NOT_SMOOTH_HERE = {
    "maximum-ties": "ties: maximum has no derivative where its operands are equal",
    "minimum-ties": "ties: minimum has no derivative where its operands are equal",
    "max_pool2d_grad-ties": "ties in the windows: the argmax moves under perturbation",
    "max_pool2d_gather-ties": "ties in the windows: the argmax moves under perturbation",
    "relu_grad-ties": "y holds zeros, where the mask flips under any perturbation",
}
# Reduction rows of these ops draw few distinct values on purpose (ties); their gradients are
# checked on distinct values in test_autodiff.py and by the second-order cases below.
TIED_OPS = {"reduce_max", "reduce_min"}


def _region_rule(op) -> bool:
    """Region ops (and their `get`s) differentiate through kiln/passes/region_grad.py; while_loop
    has no reverse-mode rule."""
    return op.name == "get" or ("region" in op.tags and op.name != "while_loop")


def _differentiable(case: OpCase) -> bool:
    op = REGISTRY.get(case.op)
    return (
        op is not None
        and "float64" in case.dtypes
        and (op.vjp is not None or _region_rule(op))
        and not op.tags & {"random", "nondiff"}
        and case.id not in NOT_SMOOTH_HERE
        and case.op not in TIED_OPS
    )


def _takes_part(case: OpCase) -> bool:
    if not _differentiable(case):
        return False
    arrays, rng = _inputs(case)
    built = _program(case, arrays, rng)
    if built is None:
        return False
    with np.errstate(all="ignore"):
        return bool(np.isfinite(built[0](*arrays)[0]))


def _grad_cases():
    return [pytest.param(c, id=c.id) for c in CASES if _takes_part(c)]


def _inputs(case: OpCase):
    rng = np.random.default_rng(zlib.crc32(f"{case.id}-float64".encode()))
    return [np.array(a) for a in case.make_args(rng, np.dtype("float64"))], rng


def _program(case: OpCase, arrays, rng):
    """L = sum_k sum(y_k * u_k) over the float outputs, its gradients, and the float inputs."""
    with kn.Graph().as_default():
        inputs = [kn.placeholder(a.dtype, a.shape, f"x{i}") for i, a in enumerate(arrays)]
        ys = [y for y in as_list(case.fn(*inputs)) if y.dtype == np.float64]
        if not ys:
            return None
        terms = [kn.sum(y * kn.constant(rng.standard_normal(y.shape))) for y in ys]
        loss = sum(terms[1:], terms[0])
        float_idx = [i for i, x in enumerate(inputs) if x.dtype == np.float64]
        grads = kn.grad(loss, [inputs[i] for i in float_idx], disconnected="zero")
        return kn.function(inputs, [loss, *grads]), float_idx


@pytest.mark.parametrize("case", _grad_cases())
def test_vjp_dot_product(case: OpCase):
    arrays, rng = _inputs(case)
    f, float_idx = _program(case, arrays, rng)
    with np.errstate(all="ignore"):
        _, *grads = f(*arrays)
        directions = {i: rng.standard_normal(arrays[i].shape) for i in float_idx}
        plus = [a + EPS * directions[i] if i in directions else a for i, a in enumerate(arrays)]
        minus = [a - EPS * directions[i] if i in directions else a for i, a in enumerate(arrays)]
        numeric = (float(f(*plus)[0]) - float(f(*minus)[0])) / (2 * EPS)
    analytic = sum(float(np.sum(g * directions[i])) for g, i in zip(grads, float_idx))
    assert abs(analytic - numeric) <= 1e-6 + 1e-5 * abs(numeric), (
        f"{case.id}: <grad, v> = {analytic!r}, finite differences give {numeric!r}"
    )


# Second order on a subset: one row per family, through composites with reductions.
SECOND_ORDER = [
    lambda x: kn.sum(kn.tanh(x) * kn.exp(x)),
    lambda x: kn.sum(kn.sigmoid(x) ** 3),
    lambda x: kn.sum(kn.softplus(x, beta=2.0) * kn.sin(x)),
    lambda x: kn.logsumexp(x, axis=1),
    lambda x: kn.softmax(x, axis=-1),
    lambda x: kn.var(x, axis=0),
    lambda x: kn.sum(kn.gelu(x) + kn.gelu(x, approximate="tanh")),
    lambda x: kn.sum((x @ x.T) ** 2),
    lambda x: kn.sum(kn.amax(x, axis=1) ** 2),
    lambda x: kn.sum(kn.concat([x, x * 2.0], axis=1)[:, 1:] ** 2),
    lambda x: kn.sum(kn.tile(x, (2, 1))[:3] * kn.pad(x, ((1, 1), (0, 0)))[1:-1] ** 2),
    lambda x: kn.sum(kn.erf(x) * kn.rsqrt(x * x + 1.0)),
]


@pytest.mark.parametrize("fn", SECOND_ORDER, ids=[f"f{i}" for i in range(len(SECOND_ORDER))])
def test_first_and_second_order(fn):
    x = np.random.default_rng(7).normal(size=(3, 2))
    assert kn.testing.gradcheck(fn, [x])
    assert kn.testing.gradgradcheck(fn, [x])
