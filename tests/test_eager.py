"""Eager Tensors: factories, attributes and conversions, views and version counters, in-place
ops, devices, indexing with boolean masks, dtype promotion as in graph mode, and every op-table
row run on Tensors against NumPy."""

import copy

import numpy as np
import pytest
from op_table import CASES
from test_ops import as_list, assert_matches, expected_values, is_eager_capable, make_inputs

import kiln as kn
from kiln.eager.tensor import make

# -- factories -----------------------------------------------------------------------------------


def test_tensor_infers_pytorch_dtypes_and_copies():
    assert kn.tensor([1.0, 2.0]).dtype == np.float32
    assert kn.tensor([1, 2]).dtype == np.int64
    assert kn.tensor([True]).dtype == np.bool_
    assert kn.tensor(np.zeros(2, np.float64)).dtype == np.float64
    assert kn.tensor([1, 2], dtype=kn.float16).dtype == np.float16
    a = np.zeros(3, np.float32)
    t = kn.tensor(a)
    a[0] = 1.0
    assert t.tolist() == [0.0, 0.0, 0.0]  # a copy
    assert kn.tensor(3.5).shape == () and kn.tensor(3.5).item() == 3.5


def test_tensor_of_a_tensor_is_a_detached_copy():
    x = kn.ones(2, requires_grad=True)
    t = kn.tensor(x)
    assert not t.requires_grad and t.is_leaf
    t.add_(1)
    assert x.detach().tolist() == [1.0, 1.0]


def test_tensor_class_constructs_like_the_factory_and_deep_copies_leaves():
    t = kn.Tensor([1.0, 2.0], requires_grad=True)
    assert isinstance(t, kn.Tensor) and t.dtype == np.float32 and t.requires_grad
    c = copy.deepcopy(t)
    assert (
        c is not t
        and c.requires_grad
        and not np.shares_memory(c.detach().numpy(), t.detach().numpy())
    )
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(t * 2)
    model = copy.deepcopy(kn.nn.Linear(2, 2))  # a Parameter's tensor keeps sharing its value
    w = model.weight.tensor()
    assert np.shares_memory(w.detach().numpy(), model.weight.value)


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4, dtype=np.float32)
    t = kn.from_numpy(a)
    a[0] = 10
    assert t[0].item() == 10
    t.mul_(2)
    assert a.tolist() == [20, 2, 4, 6]
    assert t.numpy() is a
    with pytest.raises(TypeError, match="expected np.ndarray"):
        kn.from_numpy([1, 2])


@pytest.mark.parametrize(
    "make_tensor, shape, dtype",
    [
        (lambda **k: kn.zeros(2, 3, **k), (2, 3), np.float32),
        (lambda **k: kn.zeros((2, 3), **k), (2, 3), np.float32),
        (lambda **k: kn.ones(4, **k), (4,), np.float32),
        (lambda **k: kn.full((2,), 1.5, **k), (2,), np.float32),
        (lambda **k: kn.eye(3, **k), (3, 3), np.float32),
        (lambda **k: kn.linspace(0, 1, 5, **k), (5,), np.float32),
        (lambda **k: kn.arange(0.0, 2.0, 0.5, **k), (4,), np.float32),
        (lambda **k: kn.randn(2, 5, **k), (2, 5), np.float32),
        (lambda **k: kn.rand(3, **k), (3,), np.float32),
        (lambda **k: kn.zeros_like(kn.ones(2, 2), **k), (2, 2), np.float32),
        (lambda **k: kn.ones_like(kn.ones(3), **k), (3,), np.float32),
        (lambda **k: kn.full_like(kn.ones(3), 2.0, **k), (3,), np.float32),
    ],
)
def test_factories_take_dtype_device_and_requires_grad(make_tensor, shape, dtype):
    t = make_tensor()
    assert (t.shape, t.dtype, t.device, t.requires_grad) == (shape, dtype, "cpu", False)
    t = make_tensor(dtype=kn.float64, device="cpu", requires_grad=True)
    assert (t.dtype, t.requires_grad, t.is_leaf, t.grad, t.grad_fn) == (
        np.float64, True, True, None, None
    )  # fmt: skip
    with pytest.raises(kn.DeviceError, match="cuda"):
        make_tensor(device="cuda")


def test_factory_values():
    assert kn.arange(4).tolist() == [0, 1, 2, 3] and kn.arange(4).dtype == np.int64
    assert kn.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert kn.full((2,), 7).dtype == np.int64 and kn.full((1,), True).dtype == np.bool_
    np.testing.assert_array_equal(kn.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))
    np.testing.assert_allclose(kn.linspace(-1, 1, 3).numpy(), [-1, 0, 1])
    assert kn.zeros_like(kn.ones(2, dtype=kn.int32)).dtype == np.int32


def test_random_factories_follow_manual_seed_and_draw_fresh_values():
    kn.manual_seed(3)
    a, b = kn.randn(100), kn.randn(100)
    kn.manual_seed(3)
    assert np.array_equal(kn.randn(100).numpy(), a.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())
    u = kn.rand(1000).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    assert abs(float(kn.randn(10000).numpy().std()) - 1) < 0.05


def test_requires_grad_only_for_floats():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        kn.zeros(2, dtype=kn.int64, requires_grad=True)


# -- attributes and conversions ------------------------------------------------------------------


def test_attributes_and_pytorch_size():
    t = kn.zeros(2, 3, 5)
    assert t.ndim == t.dim() == 3 and t.numel() == 30 and t.size == 30
    assert t.size() == (2, 3, 5) and t.size(1) == 3 and len(t) == 2
    assert [u.shape for u in t] == [(3, 5), (3, 5)]
    with pytest.raises(TypeError, match="0-d"):
        len(kn.tensor(1.0))


def test_numpy_item_tolist():
    t = kn.tensor([[1.0, 2.0]])
    assert isinstance(t.numpy(), np.ndarray) and t.tolist() == [[1.0, 2.0]]
    assert kn.tensor([4.0]).item() == 4.0 and float(kn.tensor(2.5)) == 2.5
    assert int(kn.tensor(3)) == 3 and bool(kn.tensor(True))
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        t.item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        bool(t)
    w = kn.ones(2, requires_grad=True)
    assert w.item if w.numel() else None
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        w.numpy()
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        np.asarray(w)
    assert w.detach().numpy().tolist() == [1.0, 1.0]


def test_repr_reads_like_pytorch():
    # PyTorch's printing (its output for these values): 4 decimals unless every value is an
    # integer, one width for all elements
    assert repr(kn.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(kn.tensor([1, 2], dtype=kn.int32)) == "tensor([1, 2], dtype=kiln.int32)"
    x = kn.ones(2, requires_grad=True)
    assert repr(x) == "tensor([1., 1.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
    # magnitudes spanning more than 1000x, or outside [1e-4, 1e8): scientific, as PyTorch
    assert repr(kn.tensor([1e-8, 1e8])) == "tensor([1.0000e-08, 1.0000e+08])"
    assert repr(kn.tensor([0.0, 1e-5])) == "tensor([0.0000e+00, 1.0000e-05])"
    assert repr(kn.tensor([0.0, 12.5, 1000.0])) == "tensor([   0.0000,   12.5000, 1000.0000])"
    assert repr(kn.tensor([[1.0, 20.0], [3.0, 4.0]])) == "tensor([[ 1., 20.],\n        [ 3.,  4.]])"


def test_to_cpu_dtype_and_unusable_cuda():
    t = kn.ones(2)
    assert t.to("cpu") is t and t.cpu() is t
    assert t.to(kn.float64).dtype == np.float64 and t.double().dtype == np.float64
    assert t.to("cpu", kn.int32).dtype == np.int32 and t.long().dtype == np.int64
    with pytest.raises(kn.DeviceError, match="unknown device"):
        t.to("tpu:0")
    if kn.cuda.is_available():
        return  # tests/test_devices.py makes CUDA unusable in each way it can be
    with pytest.raises(kn.DeviceError, match="cuda:0") as info:
        t.to("cuda")
    assert kn.cuda.why_unavailable() in str(info.value)  # the reason, no fallback
    with pytest.raises(kn.DeviceError):
        t.cuda()


def test_ops_mixing_devices_name_both_tensors_and_the_op():
    a = kn.ones(3)
    b = make(np.ones((2, 3), np.float32), "cuda:0")  # as a usable GPU would hold it
    with pytest.raises(kn.DeviceError) as info:
        a + b
    text = str(info.value)
    assert "Expected all tensors to be on the same device" in text
    assert "cpu and cuda:0" in text and "op add" in text
    assert "f32[3] on cpu" in text and "f32[2,3] on cuda:0" in text
    assert "test_eager.py" in text


# -- NumPy in, NumPy out; Tensors in, Tensors out ------------------------------------------------


def test_numpy_arrays_stay_numpy_and_tensors_stay_tensors():
    a = np.array([0.5, 1.0], np.float32)
    assert type(kn.sin(a)) is np.ndarray
    assert type(kn.sin(kn.from_numpy(a))) is kn.Tensor
    mixed = kn.from_numpy(a) + a
    assert type(mixed) is kn.Tensor and mixed.tolist() == [1.0, 2.0]
    assert type(a + kn.from_numpy(a)) is kn.Tensor  # NumPy defers to the Tensor
    assert type(kn.matmul(a, kn.ones(2))) is kn.Tensor


PROMOTIONS = [
    (np.float32, 2.5),
    (np.float32, 2),
    (np.int64, 1.5),
    (np.int32, np.int64),
    (np.int8, 300),
    (np.float16, np.float32),
    (np.bool_, 1),
    (np.uint8, np.int8),
    (np.int64, np.float32),
]


def _dtype_or_error(fn):
    try:
        return fn().dtype
    except Exception as e:
        return type(e)


@pytest.mark.parametrize("left, right", PROMOTIONS, ids=str)
def test_dtype_promotion_matches_graph_mode(left, right):
    x = kn.ones(2, dtype=left)
    y = right if not isinstance(right, type) else kn.ones(2, dtype=right)
    eager = _dtype_or_error(lambda: x + y)
    with kn.Graph().as_default():
        px = kn.placeholder(left, (2,), name="x")
        py = right if not isinstance(right, type) else kn.placeholder(right, (2,), name="y")
        assert eager == _dtype_or_error(lambda: px + py)


def test_rule_errors_match_graph_mode_and_name_the_tensors():
    with pytest.raises(kn.ShapeError, match="op add") as info:
        kn.ones(2, 3) + kn.ones(4)
    assert "f32[2,3] on cpu" in str(info.value) and "f32[4] on cpu" in str(info.value)
    with kn.Graph().as_default(), pytest.raises(kn.ShapeError):
        kn.placeholder(kn.float32, (2, 3)) + kn.placeholder(kn.float32, (4,))
    with pytest.raises(kn.ShapeError, match="matmul"):
        kn.ones(2, 3) @ kn.ones(2, 3)


def test_a_tensor_in_graph_mode_is_a_constant_unless_it_requires_grad():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = x + kn.tensor([1.0, 2.0])
        f = kn.function([x], y)
        with pytest.raises(kn.GraphError, match="requires grad"):
            x + kn.ones(2, requires_grad=True)
    assert f(np.zeros(2, np.float32)).tolist() == [1.0, 2.0]


# -- views and version counters ------------------------------------------------------------------


def test_basic_slicing_reshape_and_transpose_share_storage():
    t = kn.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    row, col, flat, tt = t[1], t[:, 0], t.reshape(6), t.T
    for v in (row, col, flat, tt):
        assert np.shares_memory(v.numpy(), t.numpy()) and v._base is t
    row.add_(10)
    assert t.tolist() == [[0, 1, 2], [13, 14, 15]] and flat[4].item() == 14
    copied = tt.reshape(6)  # not contiguous: a copy, as PyTorch's reshape
    assert copied._base is None and not np.shares_memory(copied.numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tt.view(6)
    assert t.view(3, 2)._base is t


def test_a_base_and_its_views_share_one_version_counter():
    t = kn.zeros(2, 3)
    v = t[0]
    w = v.reshape(3)
    assert t._version == v._version == w._version == 0
    w.add_(1)
    assert t._version == v._version == w._version == 1
    t.zero_()
    assert w._version == 2
    assert t.detach()._version == 2  # detach shares the counter, as in PyTorch
    assert t.clone()._version == 0


# -- in-place ops --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "apply, expected",
    [
        (lambda t: t.add_(kn.ones(3)), [2, 3, 4]),
        (lambda t: t.add_(kn.ones(3), alpha=2), [3, 4, 5]),
        (lambda t: t.sub_(1), [0, 1, 2]),
        (lambda t: t.sub_(1, alpha=3), [-2, -1, 0]),
        (lambda t: t.mul_(2), [2, 4, 6]),
        (lambda t: t.div_(kn.tensor([1.0, 2.0, 4.0])), [1, 1, 0.75]),
        (lambda t: t.zero_(), [0, 0, 0]),
        (lambda t: t.fill_(7), [7, 7, 7]),
        (lambda t: t.copy_(kn.tensor([4, 5, 6])), [4, 5, 6]),
        (lambda t: t.copy_(np.float64(2.0)), [2, 2, 2]),
        (lambda t: t.clamp_(1.5, 2.5), [1.5, 2, 2.5]),
        (lambda t: t.clamp_(max=2), [1, 2, 2]),
        (lambda t: t.copy_(t.clamp(2, 2)), [2, 2, 2]),
    ],
)
def test_inplace_ops_change_the_tensor_and_return_it(apply, expected):
    t = kn.tensor([1.0, 2.0, 3.0])
    data = t.numpy()
    assert apply(t) is t and t._version == 1
    assert t.tolist() == expected and t.numpy() is data


def test_augmented_assignment_is_in_place():
    t = kn.ones(2)
    alias = t
    t += 1
    t *= 3
    t -= kn.ones(2)
    t /= 5
    assert t is alias and t.tolist() == [1.0, 1.0] and t._version == 4


def test_inplace_shape_and_dtype_errors():
    t = kn.ones(3)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast"):
        t.add_(kn.ones(2, 3))
    i = kn.tensor([1, 2])
    # PyTorch: int64 + 1.5 computes in the default float, which int64 cannot hold
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired"):
        i.add_(1.5)
    i.add_(2)
    assert i.tolist() == [3, 4]
    b = kn.ones(3).broadcast_to((2, 3))
    with pytest.raises(RuntimeError, match="single memory location"):  # torch 2.13's words
        b.add_(1)
    b[1].add_(1)  # a row of it has no element twice: torch 2.13 changes the ones under it
    assert b.tolist() == [[2.0, 2.0, 2.0]] * 2


def test_setitem_in_place_and_recorded():
    t = kn.zeros(2, 3)
    t[0, 1] = 5.0
    t[1] = kn.tensor([1.0, 2.0, 3.0])
    t[t > 2.5] = -1.0
    assert t.tolist() == [[0, -1, 0], [1, 2, -1]] and t._version == 3
    # recorded (PyTorch: d/dx of (2x with x[0] replaced by 1).sum() is [0, 2])
    x = kn.ones(2, requires_grad=True)
    y = x * 2
    y[0] = 1.0
    y.sum().backward()
    assert y.tolist() == [1.0, 2.0] and x.grad.tolist() == [0.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 1.0


# -- indexing ----------------------------------------------------------------------------------


def test_boolean_masks_select_like_pytorch():
    t = kn.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    assert t[t > 0].tolist() == [1.0, 3.0, 5.0]
    assert t[np.array([False, True])].tolist() == [[-4.0, 5.0, -6.0]]
    assert t[:, kn.tensor([True, False, True])].tolist() == [[1.0, 3.0], [-4.0, -6.0]]
    assert t[[True, True], 1].tolist() == [-2.0, 5.0]
    assert t[t > 10].shape == (0,)
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not"):
        t[np.array([True, False, True])]


def test_tensor_indices():
    t = kn.arange(10.0)
    assert t[kn.tensor([3, 1])].tolist() == [3.0, 1.0]
    assert t[kn.tensor(2)].item() == 2.0
    assert kn.arange(6).reshape(2, 3)[:, kn.tensor([2, 0])].tolist() == [[2, 0], [5, 3]]


# -- inference tensors ---------------------------------------------------------------------------


def test_inference_tensors_cannot_change_in_place_outside_inference_mode():
    with kn.inference_mode():
        t = kn.ones(2)
        t.add_(1)  # allowed inside
        u = t * 2
    assert t.is_inference() and u.is_inference() and not kn.ones(1).is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        t.add_(1)
    with pytest.raises(RuntimeError, match="inference tensor outside InferenceMode"):
        t.requires_grad_()


# -- every op-table row, on Tensors -------------------------------------------------------------


def _eager_rows():
    return [
        pytest.param(case, dtype, id=f"{case.id}-{dtype}")
        for case in CASES
        if is_eager_capable(case)
        for dtype in case.dtypes
    ]


@pytest.mark.parametrize("case, dtype", _eager_rows())
def test_op_table_on_tensors_matches_numpy(case, dtype):
    arrays = make_inputs(case, dtype)
    expected = expected_values(case, arrays)
    # The data operand is a Tensor; the others (indices, conditions) stay as given.
    args = [kn.tensor(arrays[0]), *arrays[1:]] if isinstance(arrays[0], np.ndarray) else arrays
    with np.errstate(all="ignore"):
        outputs = as_list(case.fn(*args))
    assert len(outputs) == len(expected)
    for k, (got, exp) in enumerate(zip(outputs, expected)):
        assert isinstance(got, kn.Tensor) or not isinstance(args[0], kn.Tensor)
        assert_matches(got.numpy() if isinstance(got, kn.Tensor) else got, exp, case, f"out {k}")
