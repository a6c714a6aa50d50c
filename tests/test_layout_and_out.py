"""Tensor layout methods (`stride`, `storage_offset`, `type`, `view(dtype)`, `resize_`) and
PyTorch's `out=` argument, without PyTorch: expected values from NumPy's strides and views
and from PyTorch's documented rules (tests/test_layout_torch.py checks them against torch)."""

import warnings

import numpy as np
import pytest

import kiln as kn


def test_stride_and_storage_offset_count_elements():
    t = kn.arange(24.0).reshape(2, 3, 4)
    assert t.stride() == (12, 4, 1) and t.stride(-2) == 4
    assert t.permute(2, 0, 1).stride() == (1, 12, 4)
    assert t[:, 1:, ::2].stride() == (12, 4, 2)
    assert t[1, 2:, 1:].storage_offset() == 12 + 8 + 1
    assert t.storage_offset() == 0 and t.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)


def test_type_names_and_casts():
    assert kn.zeros(2).type() == "kiln.FloatTensor"
    assert kn.zeros(2, dtype=kn.int64).type() == "kiln.LongTensor"
    assert kn.zeros(2, dtype=kn.bool).type() == "kiln.BoolTensor"
    t = kn.tensor([1.5, -2.5])
    assert t.type(kn.float32) is t
    assert t.type(kn.int32).tolist() == [1, -2]
    assert t.type("torch.DoubleTensor").dtype == kn.float64  # code ported from PyTorch
    with pytest.raises(ValueError, match="invalid type"):
        t.type("kiln.FancyTensor")
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (2,))
        assert p.type() == "kiln.FloatTensor" and p.type(kn.float64).dtype == kn.float64


def test_view_dtype_reads_the_same_bytes():
    a = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    t = kn.tensor(a)
    np.testing.assert_array_equal(t.view(kn.int32).numpy(), a.view(np.int32))
    np.testing.assert_array_equal(t.view(kn.float16).numpy(), a.view(np.float16))
    assert t.view(kn.float16).shape == (2, 4) and t.view(kn.float64).shape == (2, 1)
    v = t.view(kn.int32)
    v[0, 0] = 0  # a view: the base changes too, and both versions move
    assert t[0, 0].item() == 0.0 and t._version == v._version == 1
    with pytest.raises(RuntimeError, match="stride\\(-1\\) must be 1"):
        t.T.view(kn.float16)
    with pytest.raises(ValueError, match="divisible by 2"):
        kn.zeros(3).view(kn.float64)
    with pytest.raises(ValueError, match="cannot be 0"):
        kn.tensor(1.0).view(kn.float16)
    assert not kn.ones(2, requires_grad=True).view(kn.int32).requires_grad
    with kn.Graph().as_default():  # graph mode: one bitcast node
        p = kn.placeholder(kn.float32, (2, 2))
        f = kn.function([p], p.view(kn.int32))
    np.testing.assert_array_equal(f(a), a.view(np.int32))


def test_resize_keeps_leading_elements():
    t = kn.tensor([1, 2, 3, 4])
    assert t.resize_(2, 2).tolist() == [[1, 2], [3, 4]] and t._version == 1
    assert t.resize_(3).tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="require grad"):
        kn.ones(2, requires_grad=True).resize_(3)


# -- out= --------------------------------------------------------------------------------------

OUT_CASES = [
    ("add", lambda out: kn.add(kn.tensor([1.0, 2.0]), 1.0, out=out), [2.0, 3.0]),
    ("mul", lambda out: kn.mul(kn.tensor([1.0, 2.0]), kn.tensor([3.0, 4.0]), out=out), [3, 8]),
    ("sin", lambda out: kn.sin(kn.zeros(2), out=out), [0.0, 0.0]),
    ("where", lambda out: kn.where(kn.tensor([True, False]), 1.0, 2.0, out=out), [1.0, 2.0]),
    ("sum", lambda out: kn.sum(kn.ones(2, 3), 1, out=out), [3.0, 3.0]),
    ("mean", lambda out: kn.mean(kn.ones(3, 2), dim=0, out=out), [1.0, 1.0]),
    ("amax", lambda out: kn.amax(kn.tensor([[1.0, 5.0], [7.0, 2.0]]), 0, out=out), [7, 5]),
    ("matmul", lambda out: kn.matmul(kn.ones(2, 3), kn.ones(3), out=out), [3.0, 3.0]),
    ("cat", lambda out: kn.cat([kn.ones(1), kn.zeros(1)], out=out), [1.0, 0.0]),
    ("clamp", lambda out: kn.clamp(kn.tensor([-1.0, 9.0]), 0, 1, out=out), [0.0, 1.0]),
    ("cumsum", lambda out: kn.cumsum(kn.ones(2), 0, out=out), [1.0, 2.0]),
]


@pytest.mark.parametrize("name, call, want", OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_writes_into_the_given_tensor(name, call, want):
    out = kn.zeros(2)
    view = out[:]
    assert call(out) is out
    assert out.tolist() == want and out._version == 1
    assert view.tolist() == want  # written in place: its views see it


def test_out_casts_by_same_kind_and_refuses_narrowing_kinds():
    # PyTorch: int + int into a float64 out computes and casts; float into int64 refuses
    out = kn.zeros(2, dtype=kn.float64)
    kn.add(kn.tensor([1, 2]), 1, out=out)
    assert out.tolist() == [2.0, 3.0] and out.dtype == kn.float64
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to .* int64"):
        kn.add(kn.ones(2), 1.0, out=kn.zeros(2, dtype=kn.int64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type bool"):
        kn.add(kn.tensor([1]), 1, out=kn.zeros(1, dtype=kn.bool))


def test_out_of_another_shape_is_resized_with_a_warning_unless_empty():
    out = kn.zeros(2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        kn.add(kn.ones(3), 1.0, out=out)
    assert out.tolist() == [2.0, 2.0, 2.0]
    empty = kn.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kn.matmul(kn.ones(2, 3), kn.ones(3, 4), out=empty)
    assert empty.shape == (2, 4)


def test_out_refuses_autograd_and_graph_values():
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        kn.mul(kn.ones(2, requires_grad=True), 2.0, out=kn.zeros(2))
    with kn.no_grad():  # allowed where no gradient is recorded
        out = kn.mul(kn.ones(2, requires_grad=True), 2.0, out=kn.zeros(2))
    assert out.tolist() == [2.0, 2.0]
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (2,))
        with pytest.raises(TypeError, match="out= takes an eager tensor"):
            kn.add(p, 1.0, out=p)
