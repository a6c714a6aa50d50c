"""Small differences from PyTorch that would pass silently in ported code, and `out=` on the
functions and factories that take it: comparisons with a list, tuple, str or None are
Python's (PyTorch's operators return NotImplemented there), bool ** bool has PyTorch's
dtypes, and a `range` indexes as a list. The expected values are written out by hand (from
PyTorch 2.13's answers, which `test_*_match_torch` check against torch itself when it is
installed), so the tests run without torch."""

import warnings

import numpy as np
import pytest

import kiln as kn

# -- comparisons with what is not a tensor or a number ----------------------------------------

NOT_OPERANDS = [[1, 2, 4], [1, 2, 3], (1, 2, 3), "abc", None, [1, 2], {1: 2}, range(3)]


@pytest.mark.parametrize("other", NOT_OPERANDS, ids=repr)
def test_eq_and_ne_with_sequences_are_pythons(other):
    t = kn.tensor([1, 2, 3])
    assert (t == other) is False and (t != other) is True  # identity: PyTorch's NotImplemented
    assert (other == t) is False and (other != t) is True
    with pytest.raises(TypeError, match="not supported between instances"):
        t < other  # noqa: B015
    with pytest.raises(TypeError, match="not supported between instances"):
        t >= other  # noqa: B015


def test_comparisons_with_numbers_and_arrays_stay_elementwise():
    t = kn.tensor([1, 2, 3])
    assert (t == 2).tolist() == [False, True, False]
    assert (t != np.int64(2)).tolist() == [True, False, True]
    assert (t == np.array([1, 2, 4])).tolist() == [True, True, False]
    assert (t < kn.tensor(3)).tolist() == [True, True, False]


def test_comparisons_of_graph_values_with_a_list_are_pythons():
    with kn.Graph().as_default():
        p = kn.placeholder(kn.int64, (3,))
        assert (p == [1, 2, 3]) is False and (p != (1, 2, 3)) is True
    f = kn.compile(lambda x: (x == [1, 2, 3], x + 1))
    same, y = f(kn.tensor([1, 2, 3]))
    assert same is False and y.tolist() == [2, 3, 4]


# -- bool ** bool -------------------------------------------------------------------------------

# (expression, dtype, values) from PyTorch 2.13; None: PyTorch raises NotImplementedError
BOOL_POWERS = [
    ("b ** True", "bool", [True, False]),
    ("b ** False", "bool", [True, True]),
    ("L.pow(b, True)", "bool", [True, False]),
    ("b.pow(False)", "bool", [True, True]),
    ("L.tensor(True) ** True", "bool", True),
    ("b ** 2", "int64", [1, 0]),
    ("b ** 0", "int64", [1, 1]),
    ("b ** 2.0", "float32", [1.0, 0.0]),
    ("2 ** b", "int64", [2, 1]),
    ("2.0 ** b", "float32", [2.0, 1.0]),
    ("b ** L.tensor(2)", "int64", [1, 0]),
    ("b ** L.tensor([1.0, 2.0])", "float32", [1.0, 0.0]),
    ("L.tensor([1, 2]) ** b", "int64", [1, 1]),
    ("L.tensor([1, 2], dtype=L.uint8) ** b", "uint8", [1, 1]),
    ("b ** L.tensor([1, 2], dtype=L.int8)", "int8", [1, 0]),
    ("b ** b", None, None),
    ("True ** b", None, None),
    ("False ** b", None, None),
    ("b ** L.tensor(True)", None, None),
    ("L.tensor(True) ** b", None, None),
    ("L.pow(True, b)", None, None),
]


def _bool_power(lib, expr):
    return eval(expr, {"L": lib, "b": lib.tensor([True, False])})


@pytest.mark.parametrize("expr, dtype, values", BOOL_POWERS, ids=[r[0] for r in BOOL_POWERS])
def test_bool_powers_have_pytorchs_dtypes(expr, dtype, values):
    if dtype is None:
        with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
            _bool_power(kn, expr)
        return
    r = _bool_power(kn, expr)
    assert r.dtype == np.dtype(dtype) and r.tolist() == values


def test_bool_powers_in_graph_mode_and_compiled():
    b = np.array([True, False])
    with kn.Graph().as_default():
        p = kn.placeholder(kn.bool, (2,))
        f = kn.function([p], [p**True, p**False, p**2])
    got = [(str(r.dtype), r.tolist()) for r in f(b)]
    assert got == [("bool", [True, False]), ("bool", [True, True]), ("int64", [1, 0])]
    g = kn.compile(lambda x: (x**True, x**False))
    t, f_ = g(kn.tensor(b))
    assert t.dtype == f_.dtype == kn.bool and t.tolist() == [True, False]
    assert f_.tolist() == [True, True]


def test_bool_powers_match_torch():
    torch = pytest.importorskip("torch")
    for expr, dtype, values in BOOL_POWERS:
        if dtype is None:
            with pytest.raises(NotImplementedError):
                _bool_power(torch, expr)
            continue
        r = _bool_power(torch, expr)
        assert str(r.dtype) == f"torch.{dtype}" and r.tolist() == values, expr


# -- index kinds ---------------------------------------------------------------------------

# (index expression, on a 1-d arange(10) or a 2-d arange(16).reshape(4, 4), expected x[index])
INDEXES = [
    ("range(3)", 1, [0, 1, 2]),
    ("range(1, 6, 2)", 1, [1, 3, 5]),
    ("range(0)", 1, []),
    ("np.array([0, 2])", 1, [0, 2]),
    ("np.array([True, False] * 5)", 1, [0, 2, 4, 6, 8]),
    ("[True, False] * 5", 1, [0, 2, 4, 6, 8]),
    ("L.tensor(3)", 1, 3),
    ("np.int64(3)", 1, 3),
    ("np.int32(-1)", 1, 9),
    ("np.uint8(2)", 1, 2),
    ("np.array(2)", 1, 2),
    ("[np.int64(1), 2]", 1, [1, 2]),
    ("L.tensor([True, False] * 5)", 1, [0, 2, 4, 6, 8]),
    ("(range(2), 0)", 2, [0, 4]),
    ("(0, range(2))", 2, [0, 1]),
    ("(Ellipsis, range(2))", 2, [[0, 1], [4, 5], [8, 9], [12, 13]]),
    ("(slice(None), np.array([1, 0]))", 2, [[1, 0], [5, 4], [9, 8], [13, 12]]),
    ("(np.array([0, 1]), np.array([1, 2]))", 2, [1, 6]),
    ("[[0, 1], [1, 2]]", 2, [1, 6]),
    ("[range(2), range(1, 3)]", 2, [1, 6]),
]


def _base(lib, ndim):
    return lib.arange(10) if ndim == 1 else lib.arange(16).reshape(4, 4)


def _written(ndim, want):
    """The base with -1 at the elements `want` names (their values are their positions)."""
    base = np.arange(10) if ndim == 1 else np.arange(16).reshape(4, 4)
    return np.where(np.isin(base, np.asarray(want, np.int64)), -1, base).tolist()


@pytest.mark.parametrize("expr, ndim, want", INDEXES, ids=[r[0] for r in INDEXES])
def test_index_kinds_read_and_write_as_pytorchs(expr, ndim, want):
    index = eval(expr, {"L": kn, "np": np})
    assert np.asarray(_base(kn, ndim)[index]).tolist() == want
    x = _base(kn, ndim)
    x[index] = -1
    assert x.tolist() == _written(ndim, want)


@pytest.mark.parametrize("expr, ndim, want", INDEXES, ids=[r[0] for r in INDEXES])
def test_index_kinds_compiled(expr, ndim, want):
    index = eval(expr, {"L": kn, "np": np})

    def read_write(x):
        y = x[index]
        x = x.clone()
        x[index] = -1
        return y, x

    y, x = kn.compile(read_write)(_base(kn, ndim))
    assert np.asarray(y).tolist() == want and x.tolist() == _written(ndim, want)


def test_index_kinds_match_torch():
    torch = pytest.importorskip("torch")
    for expr, ndim, want in INDEXES:
        index = eval(expr, {"L": torch, "np": np})
        assert _base(torch, ndim)[index].tolist() == want, expr
        x = _base(torch, ndim)
        x[index] = -1
        assert x.tolist() == _written(ndim, want), expr


def test_comparisons_match_torch():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1, 2, 3])
    for other in NOT_OPERANDS:
        assert (t == other) is False and (t != other) is True
        with pytest.raises(TypeError):
            t < other  # noqa: B015


# -- out= on the functions that return named tuples, and on factories -----------------------


def test_out_of_named_tuple_functions():
    x = kn.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    v, i = kn.zeros(0), kn.zeros(5, dtype=kn.int64)
    with pytest.warns(UserWarning, match="was resized"):  # i had 5 elements
        r = kn.max(x, 1, out=(v, i))
    assert type(r).__name__ == "max_out" and r.values is v and r.indices is i
    assert v.tolist() == [3.0, 5.0] and i.tolist() == [0, 1]
    r = kn.sort(x, out=[kn.zeros(0), kn.zeros(0, dtype=kn.int64)])
    assert type(r).__name__ == "sort_out"
    assert r.values.tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    assert r.indices.tolist() == [[1, 2, 0], [0, 2, 1]]
    r = kn.topk(x, 1, out=(kn.zeros(0), kn.zeros(0, dtype=kn.int64)))
    assert r.values.tolist() == [[3.0], [5.0]] and r.indices.tolist() == [[0], [1]]
    r = kn.frexp(kn.tensor([3.0, 0.5]), out=(kn.zeros(0), kn.zeros(0, dtype=kn.int32)))
    assert r.mantissa.tolist() == [0.75, 0.5] and r.exponent.tolist() == [2, 0]
    # PyTorch: the values' dtype must be the result's, the indices int64
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float32, but got"):
        kn.max(x, 1, out=(kn.zeros(0, dtype=kn.float64), kn.zeros(0, dtype=kn.int64)))
    with pytest.raises(RuntimeError, match="dtype int64, but got int32"):
        kn.sort(x, out=(kn.zeros(0), kn.zeros(0, dtype=kn.int32)))
    with pytest.raises(TypeError, match="takes a tuple of 2 tensors"):
        kn.max(x, 1, out=kn.zeros(0))


def test_out_dtype_rules_as_pytorchs():
    x = kn.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    wide = kn.zeros(0, dtype=kn.float64)
    assert kn.acos(kn.tensor([1.0]), out=wide) is wide and wide.tolist() == [0.0]  # same kind
    wide = kn.zeros(0, dtype=kn.float64)
    assert kn.cumsum(kn.tensor([1, 2]), 0, out=wide).tolist() == [1.0, 3.0]  # int into float
    for call in (  # PyTorch's kernels that want the result's own dtype
        lambda o: kn.floor(x, out=o),
        lambda o: kn.gather(x, 0, kn.tensor([[0]]), out=o),
        lambda o: kn.mm(x, x.T, out=o),
        lambda o: kn.tril(x, out=o),
        lambda o: kn.index_select(x, 0, kn.tensor([0]), out=o),
    ):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float32"):
            call(kn.zeros(0, dtype=kn.float64))
    with pytest.raises(RuntimeError, match="int64, but got int32"):
        kn.argmax(x, 1, out=kn.zeros(0, dtype=kn.int32))
    got = kn.tril(x, out=kn.zeros(0))
    assert got.tolist() == [[3.0, 0.0, 0.0], [0.0, 5.0, 0.0]]


def test_factories_take_out_in_its_dtype():
    o = kn.zeros(0, dtype=kn.int32)
    assert kn.arange(3, out=o) is o and o.dtype == kn.int32 and o.tolist() == [0, 1, 2]
    with pytest.warns(UserWarning, match="The number of elements in the out tensor of shape"):
        kn.arange(3.5, out=kn.zeros(5, dtype=kn.int32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the other factories resize silently, as PyTorch's
        assert kn.zeros(3, out=kn.ones(5, dtype=kn.int32)).tolist() == [0, 0, 0]
        assert kn.full((2,), 1.5, out=kn.zeros(5, dtype=kn.int32)).tolist() == [1, 1]
        assert kn.full((2,), 1.5, out=kn.zeros(0, dtype=kn.float64)).tolist() == [1.5, 1.5]
        assert kn.eye(2, out=kn.zeros(0, dtype=kn.int32)).tolist() == [[1, 0], [0, 1]]
        assert kn.linspace(0, 1, 3, out=kn.zeros(0, dtype=kn.float64)).tolist() == [0, 0.5, 1]
        assert kn.ones(2, 3, out=kn.zeros(0, dtype=kn.int64)).shape == (2, 3)
        assert kn.rand(4, out=kn.zeros(0, dtype=kn.float64)).dtype == kn.float64
        r = kn.randint(5, (3,), out=kn.zeros(0, dtype=kn.float64))
        assert r.dtype == kn.float64 and all(v in (0, 1, 2, 3, 4) for v in r.tolist())
        assert sorted(kn.randperm(4, out=kn.zeros(0, dtype=kn.int64)).tolist()) == [0, 1, 2, 3]
        assert kn.logspace(0, 2, 3, out=kn.zeros(0, dtype=kn.float64)).tolist() == [1, 10, 100]
    with pytest.raises(RuntimeError, match=r"dtype float64 does not match dtype of out"):
        kn.zeros(3, dtype=kn.float64, out=kn.zeros(0, dtype=kn.int32))
    assert kn.ones(2, layout=kn.strided).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="strided"):
        kn.zeros(2, layout=kn.sparse_coo)
    assert kn.empty(2, memory_format=kn.contiguous_format, pin_memory=False).shape == (2,)


def test_out_under_compile_is_refused_as_elsewhere():
    # sort's indices into a float out: torch 2.13 refuses it ("Expected out tensor to have
    # dtype long int, but got float instead"); kiln eagerly and compiled refuse it the same way
    # (out= inside kn.compile writes as eagerly: tests/test_compile_out_argument.py)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long"):
        torch.sort(torch.ones(2), out=(torch.zeros(2), torch.zeros(2)))

    def f(x, o):
        return kn.sort(x, out=(o, o))

    for g in (f, kn.compile(f)):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype int64"):
            g(kn.ones(2), kn.zeros(2))


def test_out_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, kn):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        r = lib.max(x, 1, out=(lib.zeros(0), lib.zeros(0, dtype=lib.int64)))
        assert type(r).__name__ == "max_out" and r.values.tolist() == [3.0, 5.0]
        o = lib.zeros(0, dtype=lib.int32)
        assert lib.arange(3, out=o) is o and o.tolist() == [0, 1, 2]
        with pytest.raises(RuntimeError):
            lib.zeros(3, dtype=lib.float64, out=lib.zeros(0, dtype=lib.int32))
        with pytest.raises(RuntimeError):
            lib.floor(x, out=lib.zeros(0, dtype=lib.float64))
        with pytest.raises(RuntimeError):
            lib.sort(x, out=(lib.zeros(0), lib.zeros(0, dtype=lib.int32)))
        assert lib.acos(lib.tensor([1.0]), out=lib.zeros(0, dtype=lib.float64)).tolist() == [0]


def test_out_of_fft_and_linalg_functions():
    o = kn.zeros(0, dtype=kn.complex128)  # complex64 into complex128: same kind, as PyTorch's
    assert kn.fft.fft(kn.ones(4), out=o) is o and o.tolist() == [4, 0, 0, 0]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type float32"):
        kn.fft.fft(kn.ones(4), out=kn.zeros(0))
    assert kn.fft.fftfreq(4, out=kn.zeros(0, dtype=kn.float64)).tolist() == [0, 0.25, -0.5, -0.25]
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point"):
        kn.fft.fftfreq(4, out=kn.zeros(0, dtype=kn.int64))
    a = kn.tensor([[2.0, 1.0], [1.0, 2.0]])  # eigenvalues 1 and 3, determinant 3
    r = kn.linalg.eigh(a, out=(kn.zeros(0), kn.zeros(0)))
    assert type(r).__name__ == "linalg_eigh_out" and r.eigenvalues.tolist() == [1.0, 3.0]
    assert kn.linalg.det(a, out=kn.zeros(0)).item() == 3.0
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float32"):
        kn.linalg.det(a, out=kn.zeros(0, dtype=kn.float64))


def test_linalg_takes_the_names_torchs_parser_takes():
    a = kn.tensor([[2.0, 1.0], [1.0, 2.0]])
    assert kn.linalg.eigvalsh(input=a).tolist() == [1.0, 3.0]
    assert kn.linalg.norm(input=kn.tensor([3.0, 4.0])).item() == 5.0
    assert kn.linalg.det(A=a).item() == 3.0  # torch.linalg.det takes A
    assert kn.cholesky(input=kn.eye(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_weighted_l1_and_mse_losses():
    F = kn.nn.functional
    x, y = kn.tensor([1.0, 2.0, 3.0]), kn.tensor([0.0, 0.0, 1.0])
    w = kn.tensor([1.0, 2.0, 0.5])
    # by hand: squared errors 1, 4, 4; weighted 1, 8, 2 (sum 11, weights' sum 3.5)
    assert F.mse_loss(x, y, weight=w, reduction="none").tolist() == [1.0, 8.0, 2.0]
    assert F.mse_loss(x, y, weight=w, reduction="sum").item() == 11.0
    assert F.mse_loss(x, y, weight=w).item() == pytest.approx(11 / 3.5)
    assert F.l1_loss(x, y, weight=w).item() == pytest.approx(6 / 3.5)  # 1 + 4 + 1
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(x, y, weight=kn.tensor(2.0))


def test_memory_format_force_and_pin_memory_keywords():
    x = kn.ones(2, requires_grad=True)
    assert x.clone(memory_format=kn.contiguous_format).tolist() == [1.0, 1.0]
    assert x.numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()
    assert kn.ones(2).cpu(memory_format=kn.preserve_format).tolist() == [1.0, 1.0]
    assert kn.tensor([1, 2]).resize_(3, memory_format=kn.contiguous_format).shape == (3,)
    assert kn.hann_window(4, pin_memory=False).tolist() == [0.0, 0.5, 1.0, 0.5]
    assert kn.zeros_like(x, layout=kn.strided).tolist() == [0.0, 0.0]


def test_weighted_losses_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, y = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 0.0, 1.0])
    w = torch.tensor([1.0, 2.0, 0.5])
    assert F.mse_loss(x, y, weight=w, reduction="none").tolist() == [1.0, 8.0, 2.0]
    assert F.mse_loss(x, y, weight=w).item() == pytest.approx(11 / 3.5)
    assert F.l1_loss(x, y, weight=w).item() == pytest.approx(6 / 3.5)


def test_torch_forms_take_their_own_parameters():
    # torch.embedding(weight, indices, padding_idx, scale_grad_by_freq): by hand, the row
    # padding_idx gets no gradient; scale_grad_by_freq divides each row's by its count
    w = kn.ones(4, 2, requires_grad=True)
    kn.embedding(w, kn.tensor([0, 1, 1]), padding_idx=1).sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    w.grad = None
    kn.embedding(w, kn.tensor([0, 1, 1]), -1, True).sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    # linalg.pinv's older form: rtol=rcond, atol 0 (1e-4 is below 1e-3 of the largest: cut)
    a = kn.tensor([[1.0, 0.0], [0.0, 1e-4]])
    assert kn.linalg.pinv(a, rcond=1e-3).tolist() == [[1.0, 0.0], [0.0, 0.0]]
    assert kn.linalg.pinv(a, 1e-3).tolist() == [[1.0, 0.0], [0.0, 0.0]]
    with pytest.raises(TypeError, match="rcond"):
        kn.linalg.pinv(a, rcond=1e-3, atol=0.1)
    # orgqr(input, input2): tau as torch.orgqr's parser names it; tau 0 gives the identity
    q = kn.eye(2).orgqr(input2=kn.zeros(1))
    assert q.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_backward_into_the_given_inputs_alone():
    # by hand: w = (x y)², dw/dx = 2 x y² = 36, dw/dy = 2 x² y = 24, dw/dz = 2 z = 12
    x, y = kn.tensor(2.0, requires_grad=True), kn.tensor(3.0, requires_grad=True)
    z = x * y
    (z * z).backward(inputs=[x])
    assert x.grad.item() == 36.0 and y.grad is None
    z = x * y
    (z * z).backward(inputs=[z, y])
    assert (x.grad.item(), y.grad.item(), z.grad.item()) == (36.0, 24.0, 12.0)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * 2).backward(inputs=[])
    unused = kn.tensor(1.0, requires_grad=True)
    kn.autograd.backward([x * 2], inputs=[unused, x])
    assert unused.grad is None and x.grad.item() == 38.0


def test_view_copy_takes_a_dtype():
    # 1.0 as float32 has the bits 0x3F800000 = 1065353216
    assert kn.view_copy(kn.ones(1), dtype=kn.int32).tolist() == [1065353216]
    assert kn.view_copy(kn.ones(1), kn.int32).tolist() == [1065353216]
    with pytest.raises(TypeError, match="a size or a dtype"):
        kn.view_copy(kn.ones(1))


# out= calls PyTorch takes that the signatures' sources do not list (its docstrings omit them):
# (call, expected value by hand)
MORE_OUT = [
    ("L.take(x, L.tensor([0, 4]), out=o())", [3.0, 5.0]),
    ("L.nansum(x, 1, out=o())", [6.0, 9.0]),
    ("L.vdot(L.ones(2), L.ones(2), out=o())", 2.0),
    ("L.softmax(L.zeros(2), 0, out=o())", [0.5, 0.5]),
    ("L.log_softmax(L.zeros(1), 0, out=o())", [0.0]),
    ("L.hardshrink(x, 2.5, out=o())", [[3.0, 0.0, 0.0], [0.0, 5.0, 4.0]]),
    ("L.threshold(x, 2.5, -1.0, out=o())", [[3.0, -1.0, -1.0], [-1.0, 5.0, 4.0]]),
    ("L.scatter_add(L.zeros(3), 0, L.tensor([0, 0]), L.ones(2), out=o())", [2.0, 0.0, 0.0]),
    ("L.scatter(L.zeros(3), 0, L.tensor([2]), L.ones(1), out=o())", [0.0, 0.0, 1.0]),
    ("L.scatter_reduce(L.ones(2), 0, L.tensor([0, 0]), L.ones(2) * 3, 'amax', out=o())", [3, 1]),
    ("L.tensordot(L.ones(2), L.ones(2), 1, out=o())", 2.0),
    ("L.chain_matmul(L.eye(2), L.eye(2) * 2, out=o())", [[2.0, 0.0], [0.0, 2.0]]),
    ("L.row_stack([L.ones(1), L.zeros(1)], out=o())", [[1.0], [0.0]]),
    ("L.argsort(x, dim=1, stable=True, out=o(L.int64))", [[1, 2, 0], [0, 2, 1]]),
    ("L.bucketize(L.tensor([0.5, 2.0]), L.tensor([1.0]), out=o(L.int64))", [0, 1]),
    ("L.isin(L.tensor([1, 2]), L.tensor([2]), out=o(L.bool))", [False, True]),
]


@pytest.mark.parametrize("call, want", MORE_OUT, ids=[c[0].split("(")[0] for c in MORE_OUT])
def test_more_out_calls(call, want):
    made = []

    def o(dtype=kn.float32):
        made.append(kn.zeros(3, 3, dtype=dtype))  # wrong-shaped: resized, with a warning
        return made[-1]

    x = kn.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    with pytest.warns(UserWarning, match="was resized"):
        r = eval(call, {"L": kn, "x": x, "o": o})
    assert r is made[0] and r.tolist() == want


def test_more_out_calls_match_torch():
    torch = pytest.importorskip("torch")
    x = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    for call, want in MORE_OUT:
        made = []

        def o(dtype=torch.float32, made=made):
            made.append(torch.zeros(3, 3, dtype=dtype))
            return made[-1]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = eval(call, {"L": torch, "x": x, "o": o})
        assert r is made[0] and r.tolist() == want, call


def test_out_of_copies_and_norms():
    x = kn.tensor([[1.0, 2.0], [3.0, 4.0]])
    parts = [kn.zeros(0), kn.zeros(5)]  # resized (the second with a warning)
    with pytest.warns(UserWarning, match="was resized"):
        assert kn.unbind_copy(x, out=parts) is None  # as PyTorch's list-valued out= forms
    assert [p.tolist() for p in parts] == [[1.0, 2.0], [3.0, 4.0]]
    o = kn.zeros(0)
    assert kn.frobenius_norm(kn.tensor([[3.0, 4.0]]), [0, 1], out=o) is o and o.item() == 5.0
    got = kn.slice_scatter(kn.zeros(2, 2), kn.ones(1, 2), 0, 0, 1, out=kn.zeros(0))
    assert got.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    r = kn.linalg.lstsq(kn.eye(2), kn.eye(2) * 2)
    outs = tuple(kn.zeros(0, dtype=t.dtype) for t in r)
    r2 = kn.linalg.lstsq(kn.eye(2), kn.eye(2) * 2, out=outs)
    assert type(r2).__name__ == "linalg_lstsq_out" and r2.solution.tolist() == [[2, 0], [0, 2]]


# -- kn.tensor of lists that mix Python and NumPy scalars ----------------------------------------
# PyTorch promotes every value's dtype (a Python float: the default float; int: int64; a NumPy
# scalar: its own) by its own table; kiln read the first value alone and made float32 of
# [1.0, np.float64(2)]. Expected dtypes: PyTorch 2.13's torch.tensor on the same data.

LISTED = [
    ([1.0, np.float64(2)], kn.float64),
    ([[1.0, 2.0], [np.float64(3), 4.0]], kn.float64),
    ((1, np.float64(2.5)), kn.float64),
    ([np.float16(1), 2], kn.float16),
    ([1, np.float16(2)], kn.float16),
    ([[1, 2], [3, np.float16(4)]], kn.float16),
    ([1 + 2j, np.float64(1)], kn.complex128),
    ([np.int64(1), np.float64(2)], kn.float64),
    ([True, np.float64(0.5)], kn.float64),
    ([2.0, np.float32(1)], kn.float32),
    ([1.0, 2.0], kn.float32),
    ([[1.0], [2.0]], kn.float32),
]


@pytest.mark.parametrize("data, dtype", LISTED, ids=lambda v: repr(v)[:40])
def test_tensor_of_mixed_scalars_promotes_every_value(data, dtype):
    t = kn.tensor(data)
    assert t.dtype == dtype
    want = np.asarray(data, dtype=np.complex128)
    np.testing.assert_array_equal(t.numpy().astype(np.complex128), want)
