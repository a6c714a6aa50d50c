"""Index checks: class labels, ids and gather indices outside their dimension raise
kn.IndexOutOfRangeError (an IndexError, as PyTorch raises) naming the op and the user's line,
eagerly, in graph mode and under kn.compile; they never wrap around."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import kiln as kn
from kiln.graph.opdef import REGISTRY, OpDef
from kiln.ops.core import bind, bind_graph

HERE = "test_index_checks.py:"
LOGITS = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float32)
TABLE = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def _line(offset: int = 1) -> str:
    """`test_index_checks.py:N` of the caller's line plus `offset`."""
    return f"{HERE}{sys._getframe(1).f_lineno + offset}"


def _graph(fn, *arrays):
    """`fn` built on placeholders with a symbolic first dim, as a kn.function."""
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, (None, *a.shape[1:])) for a in arrays]
        return kn.function(xs, fn(*xs))


def _raises(fn, *args, match, **kwargs):
    with pytest.raises(kn.IndexOutOfRangeError, match=match) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, IndexError) and isinstance(info.value, kn.KilnError)
    return str(info.value)


# -- cross_entropy: labels outside [0, C) -------------------------------------------------------


@pytest.mark.parametrize("label", [-1, 3, -100])
def test_cross_entropy_label_out_of_range_raises_eagerly(label):
    # Regression: [0, -1] gave a loss (the last class); PyTorch raises IndexError
    # "Target -1 is out of bounds." (kiln has no ignore_index, so -100 raises too).
    labels = np.array([0, label])
    for lo, la in [(LOGITS, labels), (kn.tensor(LOGITS), kn.tensor(labels))]:
        text = _raises(kn.cross_entropy, lo, la, match=f"index {label} is out of bounds")
        # the op: take_along_axis, or (eager Tensors) the fused cross-entropy kernel that
        # stands for it, log_softmax_take
        assert "dimension 1 with size 3" in text
        assert "op take_along_axis" in text or "op log_softmax_take" in text


def test_cross_entropy_error_names_the_callers_line_in_every_mode():
    labels = np.array([0, -1])
    with pytest.raises(kn.IndexOutOfRangeError) as info:
        kn.cross_entropy(kn.tensor(LOGITS), kn.tensor(labels))
    assert f"created at {_line(-1)}" in str(info.value)

    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 3))
        y = kn.placeholder(kn.int64, (None,))
        loss = kn.cross_entropy(x, y)
        where = _line(-1)
        f = kn.function([x, y], loss)
    text = _raises(f, LOGITS, labels, match="index -1 is out of bounds for dimension 1")
    assert f"created at {where}" in text and "node 'take_along_axis'" in text
    assert "inputs:" in text  # the node's input types, as every node error

    compiled = kn.compile(lambda a, b: kn.cross_entropy(a, b))
    where = _line(-1)
    compiled(kn.tensor(LOGITS), kn.tensor(np.array([0, 2])))  # traces, then runs compiled
    text = _raises(compiled, kn.tensor(LOGITS), kn.tensor(labels), match="index -1")
    # the op: take_along_axis, or the fused cross-entropy kernel that stands for it
    # (kiln/passes/softmax_xent.py); the node keeps take_along_axis's name either way
    assert f"created at {where}" in text and "node 'take_along_axis'" in text
    assert "op take_along_axis" in text or "op log_softmax_take" in text


def test_a_training_step_with_a_bad_label_changes_no_variable():
    # Regression: a label -1 wrapped to the last class and the step updated the weights.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (None, 3))
        y = kn.placeholder(kn.int64, (None,))
        w = kn.Variable(np.eye(3, dtype=np.float32), name="w")
        loss = kn.cross_entropy(x @ w, y)
        (gw,) = kn.grad(loss, [w])
        step = kn.function([x, y], loss, updates={w: w - 0.5 * gw})
    step(LOGITS, np.array([0, 2]))
    before = w.numpy().copy()
    for bad in (-1, 3):
        with pytest.raises(kn.IndexOutOfRangeError):
            step(LOGITS, np.array([0, bad]))
        np.testing.assert_array_equal(w.numpy(), before)


def test_an_eager_training_step_with_a_bad_label_changes_no_parameter():
    w = kn.tensor(np.eye(3, dtype=np.float32), requires_grad=True)
    opt = kn.optim.SGD([w], lr=0.5)
    with pytest.raises(kn.IndexOutOfRangeError):
        kn.cross_entropy(kn.tensor(LOGITS) @ w, kn.tensor(np.array([0, -1]))).backward()
    assert w.grad is None
    opt.step()
    np.testing.assert_array_equal(w.detach().numpy(), np.eye(3))


# -- embedding, gather, x[idx] ------------------------------------------------------------------


@pytest.mark.parametrize("ids", [[-1], [3], [0, 2, 5]])
def test_embedding_id_out_of_range_raises(ids):
    # Regression: embedding([-1]) gave the last row; PyTorch raises IndexError
    # ("index out of range in self").
    ids = np.array(ids)
    bad = ids[(ids < 0) | (ids >= 3)][0]
    match = f"index {bad} is out of bounds for dimension 0 with size 3"
    _raises(kn.embedding, TABLE, ids, match=match)
    _raises(kn.embedding, kn.tensor(TABLE), kn.tensor(ids), match=match)
    text = _raises(_graph(kn.embedding, TABLE, ids), TABLE, ids, match=match)
    assert "node 'gather'" in text and HERE in text


def test_embedding_module_and_its_gradient_with_valid_ids():
    table = kn.tensor(TABLE, requires_grad=True)
    kn.embedding(table, kn.tensor(np.array([2, 0, 2]))).sum().backward()
    np.testing.assert_array_equal(table.grad.numpy(), [[1, 1], [0, 0], [2, 2]])
    with pytest.raises(kn.IndexOutOfRangeError, match="index 3"):
        kn.nn.Embedding(3, 2)(kn.tensor(np.array([3])))


def test_gather_refuses_negative_indices_but_getitem_counts_them_from_the_end():
    # PyTorch: index_select rejects -1 ("index out of range in self"); x[idx] takes the last.
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([-1, 0])
    _raises(
        kn.index_select, x, 0, idx, match="index -1 is out of bounds for dimension 0 with size 3"
    )
    _raises(kn.gather, x, 1, np.array([[1], [4]]), match="index 4 .* dimension 1 with size 4")
    np.testing.assert_array_equal(kn.getitem(x, idx), x[idx])
    np.testing.assert_array_equal(kn.tensor(x)[kn.tensor(idx)].numpy(), x[idx])
    np.testing.assert_array_equal(_graph(lambda a, i: a[i], x, idx)(x, idx), x[idx])
    # ... but never past the start or the end (PyTorch: "index -4 is out of bounds ...").
    for bad in (-4, 3):
        match = f"index {bad} is out of bounds for dimension 0 with size 3"
        _raises(kn.getitem, x, np.array([0, bad]), match=match)
        _raises(lambda: kn.tensor(x)[kn.tensor(np.array([bad]))], match=match)
        _raises(_graph(lambda a, i: a[i], x, idx), x, np.array([bad]), match=match)


def test_getitem_gradient_with_negative_indices_lands_on_the_rows_they_name():
    x = kn.tensor(np.zeros((3, 2)), requires_grad=True)
    x[kn.tensor(np.array([-1, 0, -1]))].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [0, 0], [2, 2]])


def test_take_along_axis_refuses_indices_outside_the_axis():
    # PyTorch's gather: RuntimeError "index -1 is out of bounds for dimension 1 with size 3";
    # kiln's error is an IndexError and a RuntimeError.
    x = np.arange(6.0).reshape(2, 3)
    for bad in (-1, 3):
        idx = np.array([[0], [bad]])
        match = f"index {bad} is out of bounds for dimension 1 with size 3"
        with pytest.raises(RuntimeError, match=match):
            kn.take_along_axis(x, idx, 1)
        _raises(kn.take_along_axis, kn.tensor(x), kn.tensor(idx), 1, match=match)
        f = _graph(lambda a, i: kn.take_along_axis(a, i, 1), x, idx)
        _raises(f, x, idx, match=match)


def test_scatters_refuse_indices_outside_the_target():
    ct = np.ones((2, 3))
    scatter_add = REGISTRY["scatter_add"]
    for wrap, bad in [(False, -1), (False, 3), (True, -4), (True, 3)]:
        _raises(bind, scatter_add, ct, np.array([0, bad]), axis=0, shape=(3, 3),
                wrap_negative=wrap, match=f"index {bad} is out of bounds")  # fmt: skip
    out = bind(scatter_add, ct, np.array([-1, 2]), axis=0, shape=(3, 3), wrap_negative=True)
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 0, 0], [2, 2, 2]])
    along = REGISTRY["scatter_along_axis"]
    for bad in (-1, 3):
        idx = np.array([[0, 1, bad], [0, 0, 0]])
        _raises(bind, along, ct, idx, axis=1, shape=(2, 3), match=f"index {bad} is out")


def test_scatter_in_a_gradient_graph_checks_its_indices():
    # The gradient of kn.index_select alone: its scatter_add runs without the forward gather.
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3, 2))
        i = kn.placeholder(kn.int64, (None,))
        (gx,) = kn.grad(kn.sum(kn.index_select(x, 0, i)), [x])
        f = kn.function([x, i], gx)
    np.testing.assert_array_equal(f(TABLE, np.array([2, 2])), [[0, 0], [0, 0], [2, 2]])
    text = _raises(f, TABLE, np.array([2, 3]), match="index 3 is out of bounds")
    assert "op scatter_add" in text


def test_int_index_into_a_symbolic_dim_is_checked_when_it_runs():
    # An int index is an attr: the shape rule checks it when the feeds bind the dim, before
    # any kernel runs (a ShapeError, as at build time for a static dim).
    x = np.arange(3.0)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float64, (None,))
        pick = kn.function([p], p[2])
        last = kn.function([p], p[-3])
    assert pick(x) == 2.0 and last(x) == 0.0
    with pytest.raises(kn.ShapeError, match="index 2 is out of bounds for dimension 0 with size 2"):
        pick(x[:2])
    with pytest.raises(kn.ShapeError, match="index -3 is out of bounds .* op index"):
        last(x[:2])


def test_one_hot_refuses_ids_outside_the_classes():
    # PyTorch's one_hot: "Class values must be non-negative." / "... smaller than num_classes."
    _raises(kn.one_hot, np.array([0, -1]), 3, match="Class values must be non-negative")
    _raises(kn.one_hot, kn.tensor(np.array([3])), 3, match="smaller than num_classes")
    f = _graph(lambda i: kn.one_hot(i, 3), np.array([0]))
    np.testing.assert_array_equal(f(np.array([2])), [[0, 0, 1]])
    text = _raises(f, np.array([2, 7]), match=r"smaller than num_classes \(3\), got 7")
    assert "node 'one_hot'" in text


def test_empty_and_unsigned_indices_pass_the_checks():
    empty = kn.index_select(TABLE, 0, np.zeros(0, np.int64))
    np.testing.assert_array_equal(empty, np.zeros((0, 2)))
    np.testing.assert_array_equal(kn.embedding(TABLE, np.array([2], np.uint8)), [[4, 5]])
    _raises(kn.embedding, TABLE, np.array([200], np.uint8), match="index 200")
    assert kn.one_hot(np.zeros((0,), np.int64), 0).shape == (0, 0)


def test_may_fail_is_declared_on_every_op_with_an_index_check():
    # A run orders in-place updates after these ops, so a failed check changes no Variable.
    checked = {"gather", "scatter_add", "take_along_axis", "scatter_along_axis", "one_hot"}
    assert all(REGISTRY[name].may_fail for name in checked)


def test_other_kernel_failures_stay_kernel_errors_with_the_node():
    def broken(xp, x, out=None):
        raise ZeroDivisionError("boom")

    op = OpDef("broken", lambda x: x, lambda x: x, broken)  # not registered: test-only
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,))
        y = bind_graph(op, (x,), {})
        f = kn.function([x], y)
    with pytest.raises(kn.KernelError, match="ZeroDivisionError: boom") as info:
        f(np.zeros(2, np.float32))
    assert "node 'broken'" in str(info.value) and HERE in str(info.value)
    assert not isinstance(info.value, IndexError)


def test_checks_run_on_the_simulated_gpu_too(monkeypatch):
    # CuPy's indexing does not check bounds on the device (it wraps, to avoid a sync):
    # kiln's check in the kernel is what stops a bad id there.
    fake_cupy = pytest.importorskip("fake_cupy")
    host_kernels = pytest.importorskip("host_kernels")
    if not host_kernels.have_compiler():
        pytest.skip("no g++ to compile kiln's generated kernels for the simulated GPU")
    fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    try:
        with kn.Graph().as_default():
            i = kn.placeholder(kn.int64, (None,))
            f = kn.function([i], kn.embedding(kn.constant(TABLE), i), device="cuda")
        np.testing.assert_array_equal(f(np.array([2])), TABLE[[2]])
        _raises(f, np.array([0, 3]), match="index 3 is out of bounds for dimension 0")
        labels = kn.tensor(np.array([0, -1]), device="cuda")
        _raises(kn.cross_entropy, kn.tensor(LOGITS, device="cuda"), labels, match="index -1")
    finally:
        fake_cupy.reset_kiln()
