"""The array API is PyTorch's where PyTorch has the name: each idiom gives PyTorch's answer
eagerly, in graph mode (Symbols through kn.function) and under kn.compile. Expected values
are PyTorch's documented behaviour, worked out by hand in the comments (no PyTorch here:
tests/test_torch_oracle.py compares with it where it is installed)."""

import numpy as np
import pytest

import kiln as kn

X = np.arange(6, dtype=np.float32).reshape(2, 3)  # [[0, 1, 2], [3, 4, 5]]


def in_three_modes(fn, *arrays):
    """fn's results (a list of arrays) eagerly, in graph mode and under kn.compile."""

    def as_list(out):
        return list(out) if isinstance(out, tuple) else [out]

    def host(v):
        return v.detach().numpy() if isinstance(v, kn.Tensor) else np.asarray(v)

    eager = [host(v) for v in as_list(fn(*[kn.tensor(a) for a in arrays]))]
    with kn.Graph().as_default():
        ins = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        outs = as_list(fn(*ins))
        graph = kn.function(ins, outs)(*arrays)
    compiled = [host(v) for v in as_list(kn.compile(fn)(*[kn.tensor(a) for a in arrays]))]
    return {"eager": eager, "graph": list(graph), "compile": compiled}


def check(fn, arrays, *expected):
    for mode, got in in_three_modes(fn, *arrays).items():
        assert len(got) == len(expected), mode
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert g.dtype == e.dtype and g.shape == e.shape, (mode, g, e)
            np.testing.assert_allclose(g, e, rtol=1e-6, err_msg=mode)


# -- the five idioms ----------------------------------------------------------------------------


def test_transpose_swaps_two_dims_and_permute_reorders():
    # Regression: x.transpose(0, 1) returned x unchanged (NumPy's permutation (0, 1)).
    check(lambda x: x.transpose(0, 1), [X], X.T)
    check(lambda x: kn.transpose(x, 1, 0), [X], X.T)
    check(lambda x: (x.T, x.t(), x.permute(1, 0), x.mT), [X], X.T, X.T, X.T, X.T)
    y = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = (y.swapaxes(0, 2), y.transpose(2, 1, 0), y.swapaxes(1, 2), y.transpose(2, 0, 1))
    check(lambda x: (x.transpose(0, 2), x.T, x.mT, x.permute(2, 0, 1)), [y], *want)
    v = np.array([1.0, 2.0], np.float32)
    check(lambda x: x.t(), [v], v)  # t() leaves 0-d and 1-d tensors as they are
    with pytest.raises(kn.ShapeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        kn.tensor(y).t()


def test_std_and_var_use_bessels_correction():
    # PyTorch's tutorial: features normalised with std (correction=1). Here by hand:
    # x = [1, 2, 3, 4]: mean 2.5, squares 5, var 5/3, biased 5/4.
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    check(lambda t: (t.var(), t.std()), [x], np.float32(5 / 3), np.float32(np.sqrt(5 / 3)))
    check(lambda t: (t.var(unbiased=False), t.std(correction=0), kn.var(t, 0, False)), [x],
          np.float32(1.25), np.float32(np.sqrt(1.25)), np.float32(1.25))  # fmt: skip
    check(lambda t: t.std(1, keepdim=True), [X], np.ones((2, 1), np.float32))
    # one element: n - correction = 0, so 0/0 (PyTorch gives nan with a warning)
    assert np.isnan(kn.tensor([3.0]).var().item())


def test_var_over_a_symbolic_dim_divides_by_the_count_at_run_time():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3))
        f = kn.function([x], kn.var(x, 0))
    np.testing.assert_allclose(f(X), np.var(X, 0, ddof=1), rtol=1e-6)
    ramp = X[:1].repeat(3, 0) + np.arange(3, dtype=np.float32)[:, None]  # each column 0, 1, 2
    np.testing.assert_allclose(f(ramp), [1, 1, 1])


def test_max_and_min_along_a_dim_give_values_and_indices():
    # Regression: `values, idx = x.max(1)` unpacked the values themselves.
    check(lambda x: tuple(x.max(1)), [X], np.float32([2, 5]), np.int64([2, 2]))
    check(lambda x: tuple(kn.min(x, dim=0, keepdim=True)), [X], X[:1], np.int64([[0, 0, 0]]))
    out = kn.tensor(X).max(1)
    assert type(out) is kn.return_types.max and out._fields == ("values", "indices")
    assert repr(out).startswith("kiln.return_types.max(\nvalues=tensor([2., 5.]),")
    check(lambda x: (x.max(), kn.min(x)), [X], np.float32(5), np.float32(0))  # 0-d values
    z = np.float32([[9, 0, 0], [0, 0, 9]])
    check(lambda x, y: kn.max(x, y), [X, z], np.maximum(X, z))  # a tensor: maximum


def test_bitwise_operators_on_integers_and_bools():
    # Regression: &, |, ^, ~ on integer tensors were logical_and/or/not.
    a, b = np.array([12, 10, -1], np.int32), np.array([10, 6, 3], np.int32)
    check(lambda x, y: (x & y, x | y, x ^ y, ~x), [a, b], a & b, a | b, a ^ b, ~a)
    check(lambda x: (x << 2, x >> 1, 5 & x, 1 | x), [a], a << 2, a >> 1, 5 & a, 1 | a)
    p, q = np.array([True, True, False]), np.array([True, False, False])
    check(lambda x, y: (x & y, x | y, x ^ y, ~x), [p, q], p & q, p | q, p ^ q, ~p)
    with pytest.raises(TypeError, match="bitwise_and does not support dtype"):
        kn.tensor([1.0]) & kn.tensor([2.0])
    assert kn.bitwise_and(np.array(7, np.int8), 3).dtype == np.int8  # a weak Python int


# -- contiguity and views -----------------------------------------------------------------------


def test_contiguous_is_row_major_so_view_works():
    # Regression: x.T.contiguous().view(12) raised: contiguous() kept column-major order.
    x = kn.arange(12.0).reshape(3, 4)
    flat = x.T.contiguous().view(12)
    np.testing.assert_array_equal(flat.numpy(), np.arange(12.0).reshape(3, 4).T.reshape(12))
    assert x.T.contiguous().is_contiguous() and not x.T.is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.T.view(12)
    np.testing.assert_array_equal(x.T.reshape(12).numpy(), flat.numpy())  # reshape copies
    w = kn.ones(3, 4, requires_grad=True)
    (w.T.contiguous().view(12) * kn.arange(12.0)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(12.0).reshape(4, 3).T)


def test_view_that_would_copy_is_refused_in_graph_mode_and_compiled_as_eagerly():
    # Regression (found by a random eager-against-compiled comparison): a Symbol's view() was
    # reshape(), so `x[::2].view(-1)` ran under kn.compile where eager kiln and torch 2.13
    # raise; a view that needs no copy still works, and one of a single element always does
    def f(x):
        return x[::2].view(-1)

    with pytest.raises(RuntimeError, match="view size is not compatible"):
        f(kn.ones(4, 4))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        kn.compile(f)(kn.ones(4, 4))
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (3, 4), name="a")
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            a.T.view(12)
        assert a.T.contiguous().view(12).shape == (12,) and a[1:].view(2, 2, 2).shape == (2, 2, 2)
        assert a[1:2, 1:2].view(1).shape == (1,)
    # a diagonal of an expand is a view in torch (kiln makes it by a reshape): view works
    d = kn.compile(lambda b: b.expand(4, 4).diagonal().view(2, 2) * 1)(kn.arange(4.0))
    assert d.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert kn.compile(lambda x: x[1].view(2, 2))(kn.arange(8.0).reshape(2, 4)).tolist() == [
        [4.0, 5.0],
        [6.0, 7.0],
    ]


# -- promotion ------------------------------------------------------------------------------------


def test_integer_division_and_floats_with_integers_give_the_default_float():
    i = np.array([1, 2], np.int32)
    want = (np.float32([1, 1]), np.float32([1.5, 2.5]), np.int32([2, 4]), np.int32([0, 1]))
    check(lambda a: (a / a, a + 0.5, a * 2, a // 2), [i], *want)
    i8 = np.array([1, 2], np.int8)
    want = (np.int8([2, 3]), np.exp(i8.astype(np.float32)), np.sqrt(i8.astype(np.float32)))
    check(lambda a: (a + 1, a.exp(), kn.sqrt(a)), [i8], *want)
    f = np.array([1.0, 2.0], np.float32)
    # a 0-d tensor of a higher dtype in the same category does not widen (float64 0-d)
    check(lambda a, s: a + s, [f, np.array(1.0)], np.float32([2, 3]))
    check(lambda a, s: a + s, [i, np.array(1.5)], np.float64([2.5, 3.5]))  # but across kinds


def test_sums_of_integers_and_bools_are_int64():
    b = np.array([True, True, False])
    check(lambda x: (x.sum(), x.sum(dtype=kn.float32)), [b], np.int64(2), np.float32(2))
    check(lambda x: x.prod(0), [np.array([[2, 3]], np.int8)], np.int64([2, 3]))


# -- dim= and keepdim= ----------------------------------------------------------------------------


def test_reductions_take_dim_and_keepdim_with_numpys_names_as_aliases():
    fns = {
        "sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min,
        "logsumexp": lambda a, axis, keepdims: np.log(np.exp(a).sum(axis, keepdims=keepdims)),
    }  # fmt: skip
    for name, ref in fns.items():
        want = np.asarray(ref(X, axis=1, keepdims=True))
        check(lambda x, name=name: getattr(kn, name)(x, dim=1, keepdim=True), [X], want)
        check(lambda x, name=name: getattr(x, name)(axis=1, keepdims=True), [X], want)
    check(lambda x: (x.argmax(dim=1), x.argmin(dim=0, keepdim=True)), [X],
          np.int64([2, 2]), np.int64([[0, 0, 0]]))  # fmt: skip
    check(lambda x: (x.all(dim=1), (x > 0).any(1)), [X], np.array([False, True]), [True, True])
    check(lambda x: kn.sum(x, dim=(0, 1)), [X], np.float32(15))
    with pytest.raises(TypeError, match="got multiple values for argument 'dim'"):
        kn.sum(kn.tensor(X), dim=0, axis=1)


def test_softmax_takes_dim():
    e = np.exp(X - X.max(1, keepdims=True))
    check(lambda x: (kn.softmax(x, dim=1), kn.log_softmax(x, dim=-1)), [X],
          e / e.sum(1, keepdims=True), np.log(e / e.sum(1, keepdims=True)))  # fmt: skip


def test_dims_of_0d_tensors_and_squeeze_of_wide_dims():
    s = np.float32(3.0)
    check(lambda x: (x.sum(0), x.sum(-1, keepdim=True), x.squeeze(0), x.mean(dim=-1)),
          [np.asarray(s)], s, s, s, s)  # fmt: skip
    with pytest.raises(kn.ShapeError, match="Dimension out of range"):
        kn.tensor(3.0).sum(1)
    # squeeze of a dim whose size is not 1 leaves it; tuples of dims too
    check(lambda x: (x.squeeze(0), x.squeeze((0, 1))), [X], X, X)
    y = np.zeros((1, 3, 1), np.float32)
    check(lambda x: (x.squeeze(), x.squeeze(-1), x.flatten(start_dim=1), x.unsqueeze(dim=0)),
          [y], np.zeros(3, np.float32), np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32),
          np.zeros((1, 1, 3, 1), np.float32))  # fmt: skip


# -- dtypes, devices, sizes --------------------------------------------------------------------


def test_pytorchs_dtype_names_and_default_dtype():
    assert (kn.long, kn.int, kn.float, kn.double, kn.half, kn.bool) == (
        kn.int64, kn.int32, kn.float32, kn.float64, kn.float16, kn.bool_)  # fmt: skip
    assert kn.get_default_dtype() == kn.float32
    t = kn.tensor([1, 2])
    assert (t.float().dtype, t.double().dtype, t.half().dtype, t.bool().dtype) == (
        kn.float, kn.double, kn.half, kn.bool)  # fmt: skip
    with pytest.raises(TypeError, match="only floating-point types"):
        kn.set_default_dtype(kn.int32)


def test_size_and_device():
    t = kn.zeros(2, 3)
    assert isinstance(t.shape, kn.Size) and t.shape == (2, 3) and t.shape.numel() == 6
    assert t.size() == kn.Size([2, 3]) and t.size(-1) == 3 and t.numel() == 6
    assert repr(t.shape) == "kiln.Size([2, 3])"
    d = kn.device("cuda", 0)
    assert (d.type, d.index, str(d), repr(d)) == (
        "cuda",
        0,
        "cuda:0",
        "device(type='cuda', index=0)",
    )
    assert t.device == "cpu" and t.device.type == "cpu" and t.device.index is None
    assert kn.zeros(2, device=kn.device("cpu")).device == "cpu"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        kn.device("tpu")


def test_symbols_have_the_tensor_methods_that_need_no_value():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3), name="x")
        w = kn.placeholder(kn.int32, (2, 3), name="w")
        assert x.size()[1] == 3 and x.size(1) == 3 and x.dim() == 2 and w.numel() == 6
        assert isinstance(x.size(), kn.Size) and x.device == "cpu"
        with pytest.raises(kn.GraphError, match="known only when the graph runs"):
            x.numel()
        assert x.contiguous() is x and x.to("cpu") is x and x.to(kn.float32) is x
        outs = [x.any(), x.all(1), x.view(-1), x.detach(), x.float(), x.int(), x.long()]
        outs += [x.bool(), x.half(), x.double(), x.type_as(w), x.to(kn.float64), x.to(w)]
        assert [o.dtype.name for o in outs] == [
            "bool", "bool", "float32", "float32", "float32", "int32", "int64", "bool",
            "float16", "float64", "int32", "float64", "int32",
        ]  # fmt: skip
        f = kn.function([x], outs[:4])
    got = f(X)
    assert got[0] == True and got[1].tolist() == [False, True]  # noqa: E712 -- 0-d arrays
    np.testing.assert_array_equal(got[2], X.reshape(-1))


# -- printing ------------------------------------------------------------------------------------


def test_repr_and_grad_fn_names_are_pytorchs():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    m = kn.ones(2, 2, requires_grad=True)
    assert repr(w) == "tensor([1., 2.], requires_grad=True)"
    names = {
        "MulBackward0": w * 2, "AddBackward0": w + 1, "SubBackward0": w - 1,
        "DivBackward0": w / 2, "PowBackward0": w**2, "ExpBackward0": w.exp(),
        "SumBackward0": w.sum(), "SumBackward1": m.sum(0), "MeanBackward0": w.mean(),
        "MmBackward0": m @ m, "DotBackward0": w @ w, "ReluBackward0": w.relu(),
        "TanhBackward0": w.tanh(), "SigmoidBackward0": w.sigmoid(), "ViewBackward0": m.view(4),
        "TBackward0": m.t(), "PermuteBackward0": m.reshape(1, 2, 2).permute(2, 0, 1),
        "TransposeBackward0": m.reshape(1, 2, 2).transpose(0, 2), "MaxBackward1": w.max(),
        "NegBackward0": -w, "ExpandBackward0": w.broadcast_to((2, 2)),
        "ToCopyBackward0": w.double(), "CloneBackward0": w.clone(),
    }  # fmt: skip
    # (torch 2.13's names; a non-contiguous tensor's contiguous() copy is a clone there too)
    assert m.t().contiguous().grad_fn.name() == "CloneBackward0"
    assert {name: t.grad_fn.name() for name, t in names.items()} == {n: n for n in names}
    assert repr(w * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(kn.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(kn.tensor([1, 2], dtype=kn.int32)) == "tensor([1, 2], dtype=kiln.int32)"


def test_cuda_memory_functions_without_cuda_are_zero():
    if kn.cuda.is_available():
        pytest.skip("a GPU is present")
    assert kn.cuda.memory_allocated() == kn.cuda.max_memory_allocated() == 0
    assert kn.cuda.memory_reserved(0) == 0 and kn.cuda.empty_cache() is None


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8", "float16"])
def test_sum_and_prod_return_the_dtype_asked_for(dtype):
    # PyTorch: torch.tensor([1, 2, 3], dtype=torch.int32).sum(dtype=torch.int32).dtype is int32
    # (the accumulation is in that dtype); kiln's kernel accumulates small ints as int64.
    x = kn.tensor([1, 2, 3]).to(getattr(kn, dtype))
    want = np.dtype(dtype)
    assert x.sum(dtype=want).dtype == want and x.prod(dtype=want).dtype == want
    assert kn.sum(x, 0, dtype=want).dtype == want
    assert x.sum(dtype=want).item() == 6 and x.prod(dtype=want).item() == 6
    assert x.sum().dtype == (np.dtype("float16") if dtype == "float16" else np.int64)


def test_legacy_tensor_constructor_uses_the_default_float_dtype():
    # torch.Tensor([1, 2]).dtype is float32; torch.Tensor(2, 3) is a 2x3 float32 tensor;
    # torch.Tensor() has shape (0,) (PyTorch's legacy constructor, unlike torch.tensor)
    assert kn.Tensor([1, 2]).dtype == np.float32 and kn.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert kn.Tensor([True]).dtype == np.float32
    assert tuple(kn.Tensor(2, 3).shape) == (2, 3) and kn.Tensor(2, 3).dtype == np.float32
    assert tuple(kn.Tensor().shape) == (0,)
    assert kn.tensor([1, 2]).dtype == np.int64  # the factory keeps ints, as torch.tensor
    with pytest.raises(TypeError):
        kn.Tensor([1.0], [2.0])


def test_flatten_that_merges_nothing_is_its_input():
    # torch 2.13: "If no dimensions are flattened, then the original object input is
    # returned", so an in-place shape change of the result is the input's (found by running
    # random programs on kiln and on torch)
    x = kn.ones(4)
    assert x.flatten() is x and kn.flatten(x) is x
    y = kn.ones(2, 3)
    assert y.flatten(1) is y and y.flatten(0, 0) is y and y.flatten() is not y
    x.flatten().unsqueeze_(0)
    assert tuple(x.shape) == (1, 4)


def test_in_place_change_of_overlapping_windows_is_refused():
    # unfold's windows hold elements twice: torch 2.13 writes them in its loop's order (add_
    # adds 2000 to an element in two windows twice); kiln computes new values first, so it
    # refuses rather than give other numbers, as it and torch refuse an expand's
    x = kn.zeros(4)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.unfold(0, 2, 1).add_(1)
    assert x.tolist() == [0.0] * 4
    x.unfold(0, 2, 2).add_(1)  # windows apart: no element twice
    assert x.tolist() == [1.0] * 4


def test_an_in_place_shape_change_counts_as_a_change_of_a_saved_value():
    # `y.t_()` after `z = y * b` saved y: torch 2.13 refuses the backward ("modified by an
    # inplace operation"); eager kiln computed a gradient from y in its new shape (silently
    # wrong: b.grad came out transposed; found by running random programs on kiln and torch)
    a = kn.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = kn.tensor([1.0, 10.0], requires_grad=True)
    y = a.relu()
    z = y * b
    y.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y2 = a * 1  # (relu would save its own result, and torch refuses then too)
    y2.t_()  # a change before anything saved it is fine
    (y2 * b).sum().backward()
    assert b.grad.tolist() == [3.0, 7.0]  # y2 = a.T = [[1, 3], [2, 4]]: 1 + 2, 3 + 4 (torch too)
