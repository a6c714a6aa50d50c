"""The CPU's compiled fused loops read their inputs by pattern (`fused_codegen.loop_pattern`):
one-element inputs once before the loop, with the equations that need only them; an input
whose buffer a result takes (an update in place) through that result's array. Expected
values come from NumPy running the same equations one by one (the program's straight-line
code), bit for bit.
"""

import numpy as np
import pytest

import kiln as kn
from kiln.ops import fused as fused_ops
from kiln.ops.fused_codegen import FULL, ONE, loop_pattern, loop_source, numba_loop

F32 = np.float32
# Adam's update of a parameter p (input 0) from its moments m, v (inputs 1, 2) with scalar
# step size, bias correction and eps (inputs 3-5): p - lr * m / (sqrt(v / bc) + eps)
ADAM = (
    ("div", (("in", 2), ("in", 4)), ()),
    ("sqrt", (("eq", 0),), ()),
    ("add", (("eq", 1), ("in", 5)), ()),
    ("sqrt", (("in", 4),), ()),  # needs only a one-element input: hoisted
    ("mul", (("in", 3), ("eq", 3)), ()),  # so is this one
    ("mul", (("eq", 4), ("in", 1)), ()),
    ("div", (("eq", 5), ("eq", 2)), ()),
    ("sub", (("in", 0), ("eq", 6)), ()),
)


def adam_inputs(n=4096):
    rng = np.random.default_rng(7)
    p, m = (rng.standard_normal(n).astype(F32) for _ in range(2))
    v = rng.uniform(0, 2, n).astype(F32)
    return [p, m, v, np.array(F32(1e-3)), np.array(F32(0.1)), np.array(F32(1e-8))]


def reference(prog, inputs):
    sig = prog.signature(tuple(a.dtype for a in inputs))
    return prog.code(np, sig, True)[0](None, *inputs)


def test_loop_text_hoists_one_element_inputs_and_reads_in_place_through_the_result():
    prog = fused_ops.compiled(ADAM, (len(ADAM) - 1,))
    inputs = adam_inputs(8)
    sig = prog.signature(tuple(a.dtype for a in inputs))
    p = inputs[0]
    pattern = loop_pattern(sig, [p], inputs)
    assert pattern == (0, FULL, FULL, ONE, ONE, ONE)
    text = loop_source(prog, sig.dtypes, True, pattern)
    head, loop = text.split("    for i in range(n):\n")
    # read once, before the loop: the one-element inputs and the equations of them only
    for line in ("v3 = a3.reshape(-1)[0]", "v4 = a4.reshape(-1)[0]", "e3 = ", "e4 = "):
        assert f"    {line}" in head and line not in loop
    # in the loop: full inputs at i, the parameter through the result it is written to
    assert "v0 = o[i]" in loop and "v1 = f1[i]" in loop and "v2 = f2[i]" in loop
    assert "a0.ctypes.data != out.ctypes.data" in head  # checked on every call
    assert loop_source(prog, sig.dtypes, True).count("[i]") == 6 + 1  # no pattern: all full


def test_in_place_update_gives_numpys_bits_and_its_loop_refuses_other_memory():
    pytest.importorskip("numba")
    prog = fused_ops.compiled(ADAM, (len(ADAM) - 1,))
    inputs = adam_inputs()
    want = reference(prog, inputs)
    sig = prog.signature(tuple(a.dtype for a in inputs))
    p = inputs[0]
    pattern = loop_pattern(sig, [p], inputs)
    loop = numba_loop(prog, sig.dtypes, (p, *inputs), True, pattern)
    elsewhere = np.zeros_like(p)
    assert loop(elsewhere, *inputs) is False, "out is not the memory of input 0"
    assert not elsewhere.any(), "a refused call writes nothing"
    assert loop(p, *inputs) is True
    np.testing.assert_array_equal(p, want)


def test_fused_kernel_in_place_and_not_runs_the_loop_of_each_pattern():
    pytest.importorskip("numba")
    prog = fused_ops.compiled(ADAM, (len(ADAM) - 1,))
    inputs = adam_inputs()
    want = reference(prog, inputs)
    fresh = [fused_ops.fused.impl(np, *inputs, program=ADAM, outputs=(7,)) for _ in range(3)]
    for got in fresh:
        np.testing.assert_array_equal(got, want)
    results = []
    for _ in range(3):
        args = [a.copy() for a in inputs]
        results.append(fused_ops.fused.impl(np, *args, out=args[0], program=ADAM, outputs=(7,)))
        assert results[-1] is args[0]
    for got in results:
        np.testing.assert_array_equal(got, want)
    sig = prog.signature(tuple(a.dtype for a in inputs))
    assert set(sig.loop) == {(FULL, FULL, FULL, ONE, ONE, ONE), (0, FULL, FULL, ONE, ONE, ONE)}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_graph_updates_of_a_64k_parameter_are_one_loop_with_the_unplanned_values(optimizer):
    """A 256x64 float32 parameter (64 KiB, between the 16 KiB the CPU fuses without numba and
    the 1 MiB from which fused groups run blocked), updated in place by SGD with momentum or
    by Adam written as graph ops: with numba its update is one fused node, and every step
    gives the values and updates of the unplanned program."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((256, 64)).astype(F32)
    x = rng.standard_normal((16, 256)).astype(F32)
    runs = []
    for plan in (True, False):
        with kn.Graph().as_default():
            w = kn.Variable(w0.copy(), name="w")
            m = kn.Variable(np.zeros_like(w0), name="m")
            v = kn.Variable(np.zeros_like(w0), name="v")
            t = kn.Variable(np.zeros((), F32), name="t")
            xs = kn.placeholder(kn.float32, (16, 256), name="x")
            loss = kn.mean(kn.square(kn.matmul(xs, w)))
            (g,) = kn.grad(loss, [w])
            if optimizer == "sgd":
                m_new = 0.9 * m + g
                updates = {m: m_new, w: w - 0.1 * m_new}
            else:
                t_new = t + 1.0
                m_new, v_new = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
                lr = 1e-2 * kn.sqrt(1.0 - 0.999**t_new) / (1.0 - 0.9**t_new)
                updates = {
                    t: t_new,
                    m: m_new,
                    v: v_new,
                    w: w - lr * m_new / (kn.sqrt(v_new) + 1e-8),
                }
            step = kn.function([xs], loss, updates=updates, plan=plan)
            losses = [np.asarray(step(x)).copy() for _ in range(4)]
            runs.append([*losses, *(np.asarray(s.value).copy() for s in (w, m, v))])
            if plan and fused_ops.has_compiled_loops():
                made_by = {var.name: sym.op.name for var, sym in step.graph.updates.items()}
                assert made_by["w"] in ("fused", "get"), made_by
    for got, want in zip(*runs):
        np.testing.assert_array_equal(got, want)
