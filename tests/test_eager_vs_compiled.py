"""Every op-table row eager against compiled with `kn.testing.check_eager_vs_compiled`: the
outputs for every dtype, and the gradients for the rows whose vjp test_op_grads.py checks
(differentiable, float64, finite, smooth at its inputs).

All array inputs are Tensors in both runs (float ones requiring grad in the gradient rows).
`pytest tests/test_eager_vs_compiled.py -k tanh` runs the tanh rows.
"""

import pytest
from op_table import CASES, OpCase
from test_op_grads import _takes_part
from test_ops import make_inputs

from kiln.testing import check_eager_vs_compiled

# Ops whose rows cannot run both ways, with the reason.
SKIP_OPS = {
    "random_normal": "random: eager and compiled draw from different streams",
    "random_uniform": "random: eager and compiled draw from different streams",
    "random_bernoulli": "random: eager and compiled draw from different streams",
    "random_poisson": "random: eager and compiled draw from different streams",
    "random_binomial": "random: eager and compiled draw from different streams",
    "random_gamma": "random: eager and compiled draw from different streams",
    "constant": "kn.constant builds a graph node: it has no eager counterpart",
}

# float16 sums round differently by layout (a compiled program makes its feeds contiguous,
# eager reduces strided views as they are): a few ulp, test_ops.py's float16 tolerance.
FLOAT16_TOL = (2e-3, 2e-3)

GRAD_ROWS = {case.id for case in CASES if case.op not in SKIP_OPS and _takes_part(case)}


def _rows():
    return [
        pytest.param(case, dtype, id=f"{case.id}-{dtype}")
        for case in CASES
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize("case, dtype", _rows())
def test_eager_vs_compiled(case: OpCase, dtype):
    if case.op in SKIP_OPS:
        pytest.skip(SKIP_OPS[case.op])
    arrays = make_inputs(case, dtype)
    grads = dtype == "float64" and case.id in GRAD_ROWS
    rtol = atol = None
    if case.rtol is not None or case.atol is not None:
        rtol, atol = case.rtol or 0.0, case.atol or 0.0
    elif dtype == "float16":
        rtol, atol = FLOAT16_TOL
    assert check_eager_vs_compiled(case.fn, *arrays, grads=grads, rtol=rtol, atol=atol)


def test_gradient_rows_are_checked():
    """The gradient half covers every row test_op_grads.py differentiates."""
    assert len(GRAD_ROWS) > 300
