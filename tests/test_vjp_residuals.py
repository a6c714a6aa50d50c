"""What each op's backward keeps alive: the primal values (its inputs `x0, x1, ...` and its
output `y`) that its vjp reads. A training step keeps them from the forward pass to the
backward pass, so each is a choice: the table below is reviewed, and a change to a vjp that
reads more (relu reading x, or a float mask kept instead of y) fails here.

The table was written from the vjps as they are, then each entry checked against the op's
derivative: e.g. exp, tanh, sigmoid and relu need only y; mul needs both inputs; add none.
"""

import numpy as np
import pytest
from op_table import CASES
from test_ops import build, make_inputs

import kiln as kn
from kiln.graph.opdef import REGISTRY

KEEPS = {
    "abs": {"x0"}, "add": set(), "after": set(), "avg_pool2d": set(), "broadcast_to": set(),
    "cast": set(), "clip": {"x0", "x1", "x2"}, "concat": set(), "conv2d": {"x0", "x1"},
    "cos": {"x0"}, "div": {"x0", "x1"}, "erf": {"x0"}, "exp": {"y"}, "expm1": {"y"},
    "gather": {"x1"}, "index": set(), "log": {"x0"}, "log1p": {"x0"}, "matmul": {"x0", "x1"},
    "max_pool2d": {"x0"}, "maximum": {"x0", "x1"}, "minimum": {"x0", "x1"},
    "mod": {"x0", "x1"}, "mul": {"x0", "x1"}, "neg": set(), "pad": set(),
    "pow": {"x0", "x1", "y"}, "reduce_max": {"x0", "y"}, "reduce_min": {"x0", "y"},
    "reduce_mean": set(), "reduce_prod": {"x0", "y"}, "reduce_sum": set(), "relu": {"y"},
    "relu_grad": {"x1"},
    "reshape": set(), "rsqrt": {"y"}, "scatter_add": {"x1"}, "scatter_along_axis": {"x1"},
    "sigmoid": {"y"}, "sin": {"x0"}, "softplus": {"x0"}, "sqrt": {"y"}, "square": {"x0"},
    "sub": set(), "sum_to": set(), "take_along_axis": {"x1"}, "tanh": {"y"}, "tile": set(),
    "transpose": set(), "where": {"x0"},
}  # fmt: skip
# (div reads its inputs, as PyTorch's: its output may change in place before backward,
# tests/test_fuzz_ops_findings.py)
# PyTorch's functions (kiln/ops/elementwise_torch.py, scan.py, index.py, linalg.py); scatter's
# first row writes (reduce "none"): only where it wrote, from the index
KEEPS |= {
    "tan": {"y"}, "asin": {"x0"}, "acos": {"x0"}, "atan": {"x0"}, "sinh": {"x0"},
    "cosh": {"x0"}, "asinh": {"x0"}, "acosh": {"x0"}, "atanh": {"x0"}, "exp2": {"y"},
    "log2": {"x0"}, "log10": {"x0"}, "atan2": {"x0", "x1"}, "fmod": {"x0", "x1"},
    "hypot": {"x0", "x1", "y"},
    "copysign": {"x0", "y"}, "cumsum": set(), "cumprod": {"x0", "y"}, "share_ties": {"x0", "x1"},
    "logcumsumexp": {"x0", "y"}, "scatter": {"x1"}, "inv": {"y"}, "det": {"x0"}, "cofactor": {"x0"},
    "solve": {"x0", "y"}, "cholesky": {"y"}, "logabsdet": {"x0"},
    "slogdet_sign": set(),  # a real sign has no gradient; a complex one reads x0 and y
    "lgamma": {"x0"}, "digamma": {"x0"}, "polygamma": {"x0"}, "erfinv": {"y"}, "i0": {"x0"},
    "i1": {"x0", "y"},
    "i0e": {"x0", "y"}, "i1e": {"x0", "y"}, "ndtr": {"x0"}, "ndtri": {"y"},
    "erfc": {"x0"}, "log_ndtr": {"x0", "y"}, "erfcx": {"x0", "y"}, "entr": {"x0"},
    "xlogy": {"x0", "x1"}, "xlog1py": {"x0", "x1"}, "zeta": {"x0", "x1"}, "gammainc": {"x0", "x1"},
    "gammaincc": {"x0", "x1"}, "logaddexp": {"x0", "x1"}, "logit": {"x0"}, "unfold": set(),
}  # fmt: skip
# kn.linalg's factorizations (tests/op_table_linalg.py): their packed results y (qr of a wide
# matrix reads x0's last columns too, not in its first row); the solves X = A⁻¹ B read A and
# X; matrix_exp's is exp of a block matrix of x0; pinv's A and A⁺
KEEPS |= {
    "qr": {"y"}, "eigh": {"y"}, "svd": {"y"}, "lu": {"y"}, "solve_triangular": {"x0", "y"},
    "matrix_exp": {"x0"}, "pinv": {"x0", "y"}, "cholesky_ex": {"y"}, "inv_ex": {"y"},
}  # fmt: skip
# ops differentiable in some inputs only (PyTorch's): their backward is asked for those
DIFFERENTIABLE_INPUTS = {"zeta": (1,), "gammainc": (1,), "gammaincc": (1,)}
# advanced indexing (tests/op_table_index.py): the index arrays only
KEEPS |= {"advanced_index": {"x1", "x2"}, "index_put": {"x2", "x3"}}
# addmm(input, mat1, mat2) = beta * input + alpha * mat1 @ mat2: the two matrices, as matmul's
KEEPS |= {"addmm": {"x1", "x2"}}
# complex numbers and transforms (tests/op_table_complex.py, op_table_fft.py): angle's (of
# the real row this test runs) is zero, i x / |x|^2 of complex x; eig's gradients read A (to
# recompute the other result) and the eigenvectors; the parts, the conjugate and the Fourier
# transforms are linear: nothing
KEEPS |= {
    "angle": set(), "complex": set(), "conj": set(), "real": set(), "imag": set(),
    "view_as_real": set(), "view_as_complex": set(), "eig_values": {"x0"},
    "eig_vectors": {"x0", "y"}, "fft_c2c": set(), "fft_r2c": set(), "fft_c2r": set(),
    "phase_check": set(),  # the identity in x (its check is on the forward's operands)
}  # fmt: skip
# the epilogue kernels (kiln/ops/epilogue.py, losses.py): bias_relu's backward is relu's, from
# its output; relu_grad_bias's is relu_grad's, from y; log_softmax_take's recomputes the
# softmax from the logits and scatters at the indices; add_colsum's keeps nothing (the
# cotangent, spread over g's rows and scaled)
KEEPS |= {
    "add_colsum": set(),
    "bias_relu": {"y"},
    "relu_grad_bias": {"x1"},
    "log_softmax_take": {"x0", "x1"},
    "rows": set(),
}
# multi-result ops (kiln/ops/multi.py): their tuple "y", for the indices element (split: none).
# Their rows' result is a tuple, not a float, so _first_rows leaves them out of the check below
KEEPS |= {"sort": {"y"}, "topk": {"y"}, "max_dim": {"y"}, "min_dim": {"y"}, "split": set()}


def _first_rows():
    """One float64 row per op that has a vjp, whose graph holds the op with float inputs."""
    seen, rows = set(), []
    for case in CASES:
        op = REGISTRY.get(case.op)
        if op is None or op.vjp is None or "float64" not in case.dtypes or case.op in seen:
            continue
        if case.op not in KEEPS or case.label.startswith(("size0", "zeros")):
            continue
        found = _node(case)
        floats = found is not None and found[1].out.dtype.kind == "f"
        if floats and any(i.dtype.kind == "f" for i in found[1].inputs):
            seen.add(case.op)
            rows.append(case)
    return rows


def _node(case):
    """(graph, the last node of the row's op) of the row's graph, or None."""
    graph, _, _ = build(case, make_inputs(case, "float64"))
    nodes = [n for n in graph.nodes if n.op.name == case.op]
    return (graph, nodes[-1]) if nodes else None


def _residuals(case) -> set:
    graph, node = _node(case)
    primal = {id(i): f"x{k}" for k, i in enumerate(node.inputs)}
    primal[id(node.out)] = "y"
    with graph.as_default():
        first = len(graph.nodes)
        ct = kn.placeholder(node.out.dtype, node.out.shape, name="ct")
        only = DIFFERENTIABLE_INPUTS.get(case.op, range(len(node.inputs)))
        diff = [i for k, i in enumerate(node.inputs) if i.dtype.kind == "f" and k in only]
        kn.grad(node.out, diff, grad_ys=ct, disconnected="zero")
    read = set()
    for n in graph.nodes[first:]:
        for i in n.inputs:
            base = i
            while id(base) not in primal and base.node.op.views and base.node.inputs:
                base = base.node.inputs[base.node.op.views[0]]  # a view reads its base
            if id(base) in primal:
                read.add(primal[id(base)])
    return read


@pytest.mark.parametrize("case", _first_rows(), ids=lambda c: c.op)
def test_backward_keeps_only_the_declared_residuals(case):
    assert _residuals(case) == KEEPS[case.op]


def test_every_differentiable_op_is_in_the_table():
    table_ops = {c.op for c in CASES if REGISTRY.get(c.op) is not None}
    missing = sorted(
        name for name, op in REGISTRY.items()
        if op.vjp is not None and name in table_ops and name not in KEEPS
        and not op.tags & {"random", "fused"}
        and not name.endswith(("_grad", "_gather")) and name != "index_scatter"
    )  # fmt: skip
    assert not missing, f"add what their backward keeps to KEEPS: {missing}"


def test_relu_backward_reads_its_output_not_a_mask_of_its_input():
    # The training-memory issue: relu's vjp reads y; no float mask crosses the passes.
    x = np.array([-1.0, 0.0, 2.0])
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (3,), name="x")
        (g,) = kn.grad(kn.sum(kn.relu(p) * 3.0), [p])
        ops = [n.op.name for n in kn.get_default_graph().nodes]
        np.testing.assert_array_equal(kn.function([p], g)(x), [0.0, 0.0, 3.0])  # PyTorch's
    assert "relu_grad" in ops and "greater" not in ops and "cast" not in ops
