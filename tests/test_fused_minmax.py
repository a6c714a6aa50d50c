"""Float maximum and minimum in compiled fused loops give the bits of NumPy's own kernels
(which the unfused program runs): on a tie of -0.0 and 0.0 the second argument, and the first
NaN (its payload too) where there is one. Expected values: NumPy's np.maximum / np.minimum
on the same arrays, compared bit for bit."""

import numpy as np
import pytest

import kiln as kn
from kiln.ops import fused as fused_ops
from kiln.ops.fused_codegen import loop_source
from kiln.runtime import program

# every pair of: -0.0, 0.0, 1.0, -1.0, two NaNs of other signs and payloads, inf
_SPECIAL = {
    np.float32: np.array(
        [0x80000000, 0x0, 0x3F800000, 0xBF800000, 0x7FC00001, 0xFFC00002, 0x7F800000], np.uint32
    ).view(np.float32),  # fmt: skip
    np.float64: np.array(
        [
            0x8000000000000000,
            0x0,
            0x3FF0000000000000,
            0xBFF0000000000000,
            0x7FF8000000000001,
            0xFFF8000000000002,
            0x7FF0000000000000,
        ],
        np.uint64,
    ).view(np.float64),  # fmt: skip
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_maximum_minimum_give_numpys_bits(monkeypatch, dtype):
    monkeypatch.setenv("KILN_EXACT", "1")  # exact ops only: the loop must give NumPy's bits
    monkeypatch.setattr(program, "NUMPY_SMALL_MIN_OPS", 2)  # fused without numba too
    special = _SPECIAL[dtype]
    a = np.repeat(special, len(special))
    b = np.tile(special, len(special))
    with kn.Graph().as_default():
        x, y = (kn.placeholder(dtype, a.shape, name=n) for n in "xy")
        hi, lo = kn.maximum(x, y), kn.minimum(x, y)
        # fused groups (`where` passes NaN payloads and signs through unchanged)
        out = kn.where(x == x, hi, hi), kn.where(y == y, lo, lo)
        f = kn.function([x, y], list(out))
    fused = [n for n in f.graph.nodes if n.op.name == "fused"]
    assert fused
    want = [np.maximum(a, b), np.minimum(a, b)]
    for _ in range(fused_ops.NUMBA_AFTER_CALLS + 1):  # the loop is built on the 2nd call
        got = f(a, b)
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes()
    pytest.importorskip("numba")
    for node in fused:  # each group ran as its compiled loop
        prog = fused_ops.compiled(node.attrs["program"], node.attrs["outputs"])
        assert all(s.loop for s in prog._signatures.values())


def test_the_loop_text_selects(monkeypatch):
    monkeypatch.setattr(program, "NUMPY_SMALL_MIN_OPS", 2)  # fused without numba too
    with kn.Graph().as_default():
        x, y = (kn.placeholder(kn.float32, (8,), name=n) for n in "xy")
        f = kn.function([x, y], kn.maximum(x * 2.0, y) + kn.minimum(x, y))
    node = next(n for n in f.graph.nodes if n.op.name == "fused")
    prog = fused_ops.compiled(node.attrs["program"], node.attrs["outputs"])
    text = loop_source(prog, prog.signature((np.dtype("float32"),) * prog.n_in).dtypes)
    assert "np.maximum" not in text and "np.minimum" not in text
    assert " > " in text and " < " in text
