"""Regression tests for silent differences from PyTorch (wrong values, no error) that an
outside review found. Each expected value is PyTorch's documented behaviour, worked out by
hand in the comment beside it; none needs PyTorch installed."""

import numpy as np
import pytest

import kiln as kn
from kiln.frontend.nn_functional import pad as torch_pad


def in_three_modes(fn, *arrays):
    """fn's results (a list of arrays) eagerly, in graph mode and under kn.compile."""

    def as_list(out):
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def host(v):
        return v.detach().numpy() if isinstance(v, kn.Tensor) else np.asarray(v)

    eager = [host(v) for v in as_list(fn(*[kn.tensor(a) for a in arrays]))]
    with kn.Graph().as_default():
        ins = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        graph = kn.function(ins, as_list(fn(*ins)))(*arrays)
    compiled = [host(v) for v in as_list(kn.compile(fn)(*[kn.tensor(a) for a in arrays]))]
    return {"eager": eager, "graph": list(graph), "compile": compiled}


def check(fn, arrays, *expected):
    for mode, got in in_three_modes(fn, *arrays).items():
        assert len(got) == len(expected), mode
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert g.dtype == e.dtype and g.shape == e.shape, (mode, g, e)
            np.testing.assert_allclose(g, e, rtol=1e-6, err_msg=mode)


# --- 1. nn.functional.pad takes PyTorch's pad tuple (last dim first) -------------------------

ROW = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)


def test_pad_tuple_pads_the_last_dim_first():
    # PyTorch: pad=(1, 1) pads only the last dim, (2, 3) -> (2, 5); NumPy's pad_width would
    # pad every dim, (4, 5).
    assert torch_pad(np.ones((2, 3), np.float32), (1, 1)).shape == (2, 5)
    # (left, right, top, bottom) on NCHW pads W by 1+1 and H by 1+1: (1, 2, 3, 4) -> (1, 2, 5, 6)
    assert torch_pad(np.ones((1, 2, 3, 4), np.float32), (1, 1, 1, 1)).shape == (1, 2, 5, 6)
    # (0, 1, 2, 0) on (1, 1, 3): W gets 1 on the right, H 2 on top, (1, 3, 4); 7 fills
    want = np.full((1, 3, 4), 7, np.float32)
    want[0, 2:, :3] = ROW
    check(lambda x: torch_pad(x, (0, 1, 2, 0), value=7), [ROW[None]], want)


@pytest.mark.parametrize(
    ("mode", "widths", "want"),
    [
        # reflect mirrors without repeating the edge: 3 2 | 1 2 3 | 2 1 (by hand)
        ("reflect", (2, 2), [[3, 2, 1, 2, 3, 2, 1]]),
        # replicate repeats the edge: 1 1 | 1 2 3 | 3
        ("replicate", (2, 1), [[1, 1, 1, 2, 3, 3]]),
        # circular wraps around: 2 3 | 1 2 3 | 1
        ("circular", (2, 1), [[2, 3, 1, 2, 3, 1]]),
        # a negative constant width crops: drop 1 on the left, add 0 twice on the right
        ("constant", (-1, 2), [[2, 3, 0, 0]]),
    ],
)
def test_pad_modes(mode, widths, want):
    check(lambda x: torch_pad(x, widths, mode=mode), [ROW], np.array(want, np.float32))


def test_pad_reflect_gradient_sums_the_mirrored_copies():
    # reflect (2, 2) of [1 2 3] is 3 2 1 2 3 2 1: x0 read twice, x1 three times, x2 twice
    x = kn.tensor(ROW, requires_grad=True)
    torch_pad(x, (2, 2), mode="reflect").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 3, 2]])


def test_pad_rejects_what_pytorch_rejects():
    with pytest.raises(kn.ShapeError, match="pad"):
        torch_pad(np.ones((2, 3)), (1, 1, 1))  # odd length
    with pytest.raises(kn.ShapeError, match="pad"):
        torch_pad(np.ones(3), (1, 1, 1, 1))  # more pairs than dims
    with pytest.raises(kn.ShapeError, match="reflect"):
        torch_pad(ROW, (3, 0), mode="reflect")  # a reflect width must be < the dim's size


def test_nn_functional_pad_is_pytorchs():
    # kn.nn.functional.pad is the one with PyTorch's pad tuple: (1, 1) on (2, 3) gives (2, 5)
    assert kn.nn.functional.pad is torch_pad
    assert kn.nn.functional.pad(kn.ones(2, 3), (1, 1)).shape == (2, 5)


def test_kn_pad_keeps_numpy_pad_width():
    # kn.pad is NumPy's pad (PyTorch has no torch.pad): an int pads every dim on both sides
    assert kn.pad(np.ones((2, 3)), 1).shape == (4, 5)


# --- 2. max/min along a dim give the whole gradient to the returned index -------------------

TIES = np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]], dtype=np.float32)


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_along_dim_route_gradient_to_the_index(keepdim):
    # PyTorch: max(dim) returns the first maximal index (0 and 0 here) and its backward puts
    # the whole gradient there: [[1, 0, 0], [1, 0, 0]]; min(dim) picks 1 and 2 (by hand).
    want = {"max": [[1, 0, 0], [1, 0, 0]], "min": [[0, 1, 0], [0, 0, 1]]}
    for which, grad in want.items():
        x = kn.tensor(TIES, requires_grad=True)
        values, indices = getattr(x, which)(1, keepdim=keepdim)
        values.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), grad)
        assert values.shape == ((2, 1) if keepdim else (2,)) == indices.shape


def test_max_along_dim_gradient_in_graph_and_compile():
    def grad_of_max(x):
        return kn.grad(kn.sum(kn.max(x, 0).values), x)[0]

    # columns 0 and 2 tie at 3 (rows 0 and 1): PyTorch returns the first, row 0, and gives it
    # the whole gradient; column 1's maximum is row 1's 2 (by hand)
    col = np.array([[3.0, 1.0, 3.0], [3.0, 2.0, 3.0]], dtype=np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3))
        (g,) = kn.function([x], [grad_of_max(x)])(col)
    np.testing.assert_array_equal(g, [[1, 0, 1], [0, 1, 0]])

    xc = kn.tensor(col, requires_grad=True)  # backward through a compiled call
    kn.compile(lambda x: x.max(0).values.sum())(xc).backward()
    np.testing.assert_array_equal(xc.grad.numpy(), [[1, 0, 1], [0, 1, 0]])


def test_full_max_and_amax_still_split_ties():
    # PyTorch splits the gradient of max() (no dim) and amax evenly among ties: 0.5 and 0.5
    x = kn.tensor([[3.0, 1.0, 3.0]], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0, 0.5]])
    y = kn.tensor([[3.0, 1.0, 3.0]], requires_grad=True)
    y.amax(1).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [[0.5, 0, 0.5]])


# --- 3. std's gradient is 0 where the std is 0 ------------------------------------------------

ROWS = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], dtype=np.float32)
# PyTorch masks std's backward where the result is 0: the constant row's gradient is 0 (not
# NaN). Row [1, 2, 3]: std 1, d std/dx = (x - mean) / ((n - 1) * std) = [-0.5, 0, 0.5] (by hand).
STD_GRAD = [[0, 0, 0], [-0.5, 0, 0.5]]


def test_std_of_a_constant_has_zero_gradient_eagerly():
    x = kn.tensor([2.0, 2.0, 2.0], requires_grad=True)
    s = x.std()
    s.backward()
    assert s.item() == 0  # PyTorch: std of a constant is 0
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])
    y = kn.tensor(ROWS, requires_grad=True)
    s = kn.std(y, 1)
    s.sum().backward()
    np.testing.assert_allclose(s.detach().numpy(), [0, 1])
    np.testing.assert_allclose(y.grad.numpy(), STD_GRAD, atol=1e-7)


def test_std_gradient_in_graph_mode_and_compile():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3))
        (g,) = kn.function([x], kn.grad(kn.sum(kn.std(x, 1)), x))(ROWS)
    np.testing.assert_allclose(g, STD_GRAD, atol=1e-7)
    yc = kn.tensor(ROWS, requires_grad=True)  # backward through a compiled call
    kn.compile(lambda y: kn.std(y, 1).sum())(yc).backward()
    np.testing.assert_allclose(yc.grad.numpy(), STD_GRAD, atol=1e-7)


# --- 4. matrix products of two dtypes raise, as PyTorch's ------------------------------------

F32 = np.ones((2, 2), np.float32)
F64 = np.ones((2, 2), np.float64)


@pytest.mark.parametrize(
    ("op", "fn", "a", "b"),
    [
        ("matmul", lambda a, b: a @ b, F32, F64),
        ("matmul", kn.matmul, F64, F32),
        ("mm", kn.mm, F32, F64),
        ("bmm", kn.bmm, F32[None], F64[None]),
        ("dot", kn.dot, F32[0], F64[0]),
        ("matmul", lambda a, b: a @ b, F32, F32.astype(np.int64)),
    ],
)
def test_matrix_products_of_two_dtypes_raise(op, fn, a, b):
    # PyTorch raises RuntimeError ("expected m1 and m2 to have the same dtype, but got: float
    # != double"); NumPy would promote to float64. kiln's error is a RuntimeError too.
    with pytest.raises(kn.DTypeError) as info:
        fn(kn.tensor(a), kn.tensor(b))
    assert isinstance(info.value, RuntimeError)
    text = str(info.value)
    assert f"op {op}" in text and str(a.dtype) in text and str(b.dtype) in text
    assert "test_torch_fixes.py" in text  # the user's line
    with kn.Graph().as_default(), pytest.raises(RuntimeError, match=op):
        fn(kn.placeholder(a.dtype, a.shape), kn.placeholder(b.dtype, b.shape))


def test_linear_on_float64_input_raises_and_one_dtype_still_works():
    layer = kn.nn.Linear(2, 3)  # float32 weights: PyTorch's Linear raises on a float64 input
    with pytest.raises(RuntimeError, match="float64 and float32"):
        layer(kn.tensor(F64))
    assert layer(kn.tensor(F32)).dtype == kn.float32
    assert (kn.tensor(F64) @ kn.tensor(F64)).dtype == kn.float64


# --- 5. cat and stack promote as PyTorch's result_type -----------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        # PyTorch: a float tensor with an int tensor is the float's dtype, float32 (NumPy would
        # give float64); int32 with int64 is int64; float16 with int64 stays float16
        (np.ones(2, np.float32), np.ones(2, np.int64), np.float32),
        (np.ones(2, np.int32), np.ones(2, np.int64), np.int64),
        (np.ones(2, np.float16), np.ones(2, np.int32), np.float16),
    ],
)
def test_cat_and_stack_use_pytorchs_promotion(a, b, want):
    check(lambda x, y: kn.cat([x, y]), [a, b], np.concatenate([a, b]).astype(want))
    check(lambda x, y: kn.stack([x, y], 1), [a, b], np.stack([a, b], 1).astype(want))


# --- 6. sign(nan) is 0 -----------------------------------------------------------------------


def test_sign_of_nan_is_zero():
    # PyTorch: torch.sign(nan) is 0 (NumPy's sign gives nan); the rest is -1, 0, 1 as usual
    x = np.array([np.nan, -2.0, 0.0, 3.0], np.float32)
    check(kn.sign, [x], np.float32([0, -1, 0, 1]))
    check(lambda v: v.sign(), [x.astype(np.float16)], np.float16([0, -1, 0, 1]))
    check(kn.sign, [np.array([-3, 0, 2], np.int8)], np.int8([-1, 0, 1]))


# --- 7. an int index out of range is an IndexError ---------------------------------------------


@pytest.mark.parametrize(
    ("index", "message"),
    [
        # PyTorch: IndexError "index 5 is out of bounds for dimension 0 with size 3"
        (5, "index 5 is out of bounds for dimension 0 with size 3"),
        ((slice(None), -3), "index -3 is out of bounds for dimension 1 with size 2"),
        # PyTorch: IndexError "too many indices for tensor of dimension 2"
        ((0, 0, 0), "too many indices"),
    ],
)
def test_int_index_out_of_range_is_an_index_error(index, message):
    x = np.ones((3, 2), np.float32)
    with pytest.raises(IndexError, match=message) as info:
        kn.tensor(x)[index]
    assert isinstance(info.value, kn.ShapeError)  # still a shape rule's error, as before
    assert "op index" in str(info.value) and "test_torch_fixes.py" in str(info.value)
    with kn.Graph().as_default(), pytest.raises(IndexError, match=message):
        kn.placeholder(kn.float32, (3, 2))[index]


# --- against PyTorch itself, where it is installed ---------------------------------------------


def test_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    for mode, widths in [("constant", (1, 2, -1, 3)), ("reflect", (2, 1, 0, 3)),
                         ("replicate", (3, 0, 1, 2)), ("circular", (1, 2, 3, 1))]:  # fmt: skip
        want = tf.pad(torch.tensor(x), widths, mode=mode).numpy()
        np.testing.assert_allclose(np.asarray(torch_pad(x, widths, mode=mode)), want)
    ties = torch.tensor(TIES, requires_grad=True)
    ties.max(1).values.sum().backward()
    x = kn.tensor(TIES, requires_grad=True)
    x.max(1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ties.grad.numpy())
    rows = torch.tensor(ROWS, requires_grad=True)
    rows.std(1).sum().backward()
    np.testing.assert_allclose(STD_GRAD, rows.grad.numpy(), atol=1e-7)
    assert torch.sign(torch.tensor(float("nan"))).item() == 0
    a, b = np.ones(3, np.float32), np.ones(2, np.int64)
    assert (
        str(torch.cat([torch.tensor(a), torch.tensor(b)]).dtype) == f"torch.{kn.cat([a, b]).dtype}"
    )
    with pytest.raises(RuntimeError):
        torch.tensor(F32) @ torch.tensor(F64)
    with pytest.raises(IndexError):
        torch.ones(3)[5]


# add/sub's alpha (PyTorch 2.13's values, also checked by hand: input ± alpha * other)
ALPHA_CASES = [
    (lambda L: L.add(L.tensor([1, 2]), L.tensor([3, 4]), alpha=2), "int64", [7, 10]),
    (lambda L: L.sub(L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0]), alpha=0.5), "float32",
     [-0.5, 0.0]),
    (lambda L: L.tensor([1, 2], dtype=L.int32).add(3, alpha=2), "int32", [7, 8]),
    (lambda L: L.tensor([1.0, 2.0], dtype=L.float16).sub(L.tensor([3.0, 4.0]), alpha=3),
     "float32", [-8.0, -10.0]),
    (lambda L: L.add(L.tensor([True, False]), L.tensor([True, True]), alpha=0), "bool",
     [True, False]),
    (lambda L: L.tensor([1.0, 2.0]).add_(L.tensor([1.0, 1.0]), alpha=3), "float32", [4.0, 5.0]),
    (lambda L: L.subtract(L.tensor([1, 2]), 1, alpha=3), "int64", [-2, -1]),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(ALPHA_CASES)))
def test_add_and_sub_take_alpha_in_every_mode(case):
    fn, dtype, want = ALPHA_CASES[case]
    eager = fn(kn)
    assert str(eager.dtype) == f"kiln.{dtype}" and eager.tolist() == want
    assert kn.compile(lambda: fn(kn))().tolist() == want
    torch = pytest.importorskip("torch")
    assert fn(torch).tolist() == want


def test_alpha_refusals_and_gradient():
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        kn.add(kn.tensor([1, 2]), kn.tensor([3, 4]), alpha=0.5)
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    y = kn.tensor([3.0, 4.0], requires_grad=True)
    kn.sub(x, y, alpha=3).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [-3.0, -3.0]
    with kn.Graph().as_default():
        a = kn.placeholder(kn.float32, (2,), name="a")
        out = kn.function([a], [kn.add(a, a * 2.0, alpha=-1.0)])(np.array([1.0, 2.0], np.float32))
    assert out[0].tolist() == [-1.0, -2.0]


def test_a_compiled_function_may_return_values_made_from_constants():
    """torch.compile returns a new tensor each call, also for a value that depends on no
    argument; kiln refused such a result (GraphError)."""
    f = kn.compile(lambda: kn.arange(3.0) * 2)
    first = f()
    first.add_(1)  # the caller owns it: the next call's value is fresh
    assert isinstance(first, kn.Tensor) and f().tolist() == [0.0, 2.0, 4.0]
    g = kn.compile(lambda x: (x + 1, kn.ones(2)))
    assert [t.tolist() for t in g(kn.zeros(2))] == [[1.0, 1.0], [1.0, 1.0]]


def test_bool_and_empty_tensors_print_as_pytorch():
    """PyTorch 2.13's reprs (copied from torch, with `torch.` read as `kiln.`): bools are
    padded to the width of "False" only where one is printed; an empty tensor names its dtype
    unless it is the default float."""
    assert repr(kn.tensor([True, True])) == "tensor([True, True])"
    assert repr(kn.tensor([True, False])) == "tensor([ True, False])"
    assert repr(kn.zeros(0, dtype=kn.int64)) == "tensor([], dtype=kiln.int64)"
    assert repr(kn.zeros(0, dtype=kn.bool)) == "tensor([], dtype=kiln.bool)"
    assert repr(kn.tensor([])) == "tensor([])"
    assert repr(kn.zeros(2, 0)) == "tensor([], size=(2, 0))"


def test_hardtanh_and_relu6_keep_integer_dtypes():
    """PyTorch 2.13: hardtanh/relu6 of int64 give int64 (the bounds cast to the input's
    dtype: hardtanh([-3, 0, 2, 9], -1.5, 2.5) is [-1, 0, 2, 2]); kiln gave float32."""
    F = kn.nn.functional
    x = kn.tensor([-3, 0, 2, 9])
    assert F.hardtanh(x).dtype == np.int64 and F.hardtanh(x).tolist() == [-1, 0, 1, 1]
    assert F.relu6(x).tolist() == [0, 0, 2, 6] and F.relu6(x).dtype == np.int64
    assert F.hardtanh(x, -1.5, 2.5).tolist() == [-1, 0, 2, 2]
