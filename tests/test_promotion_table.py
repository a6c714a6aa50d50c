"""Promotion follows PyTorch's `torch.result_type`, checked against its answers kept here as data.

The tables below were generated once with PyTorch 2.13 (`torch.result_type` over every pair of
kiln's dtypes and the Python scalar kinds) and checked in as literal data: this module does
not need PyTorch. `-` marks pairs PyTorch refuses (uint16/32/64 beside other integers), where
kiln gives NumPy's `promote_types`. Rows are the left operand (a tensor with dims), columns
the right one in the order of COLUMNS.
"""

import numpy as np
import pytest

import kiln as kn

COLUMNS = "b i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64".split()
SCALAR_COLUMNS = (True, 2, 1.5)  # bool, int, float

# result_type(tensor of row dtype with dims, tensor of column dtype with dims)
DIMS = {
    "b": "   b   i8  i16  i32  i64   u8    -    -    -  f16 bf16  f32  f64",
    "i8": "  i8   i8  i16  i32  i64  i16    -    -    -  f16 bf16  f32  f64",
    "i16": " i16  i16  i16  i32  i64  i16    -    -    -  f16 bf16  f32  f64",
    "i32": " i32  i32  i32  i32  i64  i32    -    -    -  f16 bf16  f32  f64",
    "i64": " i64  i64  i64  i64  i64  i64    -    -    -  f16 bf16  f32  f64",
    "u8": "  u8  i16  i16  i32  i64   u8    -    -    -  f16 bf16  f32  f64",
    "u16": "   -    -    -    -    -    -  u16    -    -  f16 bf16  f32  f64",
    "u32": "   -    -    -    -    -    -    -  u32    -  f16 bf16  f32  f64",
    "u64": "   -    -    -    -    -    -    -    -  u64  f16 bf16  f32  f64",
    "f16": " f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f32  f64",
    "bf16": "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32 bf16  f32  f64",
    "f32": " f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64",
    "f64": " f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64",
}
# result_type(tensor of row dtype with dims, 0-d tensor of column dtype)
ZERO_DIM = {
    "b": "   b   i8  i16  i32  i64   u8    -    -    -  f16 bf16  f32  f64",
    "i8": "  i8   i8   i8   i8   i8   i8   i8   i8   i8  f16 bf16  f32  f64",
    "i16": " i16  i16  i16  i16  i16  i16  i16  i16  i16  f16 bf16  f32  f64",
    "i32": " i32  i32  i32  i32  i32  i32  i32  i32  i32  f16 bf16  f32  f64",
    "i64": " i64  i64  i64  i64  i64  i64  i64  i64  i64  f16 bf16  f32  f64",
    "u8": "  u8   u8   u8   u8   u8   u8   u8   u8   u8  f16 bf16  f32  f64",
    "u16": " u16  u16  u16  u16  u16  u16  u16  u16  u16  f16 bf16  f32  f64",
    "u32": " u32  u32  u32  u32  u32  u32  u32  u32  u32  f16 bf16  f32  f64",
    "u64": " u64  u64  u64  u64  u64  u64  u64  u64  u64  f16 bf16  f32  f64",
    "f16": " f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16",
    "bf16": "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16",
    "f32": " f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32",
    "f64": " f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64",
}
# result_type(0-d tensor of row dtype, 0-d tensor of column dtype)
BOTH_ZERO_DIM = {
    "b": "   b   i8  i16  i32  i64   u8    -    -    -  f16 bf16  f32  f64",
    "i8": "  i8   i8  i16  i32  i64  i16    -    -    -  f16 bf16  f32  f64",
    "i16": " i16  i16  i16  i32  i64  i16    -    -    -  f16 bf16  f32  f64",
    "i32": " i32  i32  i32  i32  i64  i32    -    -    -  f16 bf16  f32  f64",
    "i64": " i64  i64  i64  i64  i64  i64    -    -    -  f16 bf16  f32  f64",
    "u8": "  u8  i16  i16  i32  i64   u8    -    -    -  f16 bf16  f32  f64",
    "u16": "   -    -    -    -    -    -  u16    -    -  f16 bf16  f32  f64",
    "u32": "   -    -    -    -    -    -    -  u32    -  f16 bf16  f32  f64",
    "u64": "   -    -    -    -    -    -    -    -  u64  f16 bf16  f32  f64",
    "f16": " f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f32  f64",
    "bf16": "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32 bf16  f32  f64",
    "f32": " f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64",
    "f64": " f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64",
}
# result_type(tensor of row dtype with dims, Python scalar True / 2 / 1.5)
SCALARS = {
    "b": "   b  i64  f32",
    "i8": "  i8   i8  f32",
    "i16": " i16  i16  f32",
    "i32": " i32  i32  f32",
    "i64": " i64  i64  f32",
    "u8": "  u8   u8  f32",
    "u16": " u16  u16  f32",
    "u32": " u32  u32  f32",
    "u64": " u64  u64  f32",
    "f16": " f16  f16  f16",
    "bf16": "bf16 bf16 bf16",
    "f32": " f32  f32  f32",
    "f64": " f64  f64  f64",
}
# result_type(0-d tensor of row dtype, Python scalar True / 2 / 1.5)
ZERO_DIM_SCALARS = {
    "b": "   b  i64  f32",
    "i8": "  i8   i8  f32",
    "i16": " i16  i16  f32",
    "i32": " i32  i32  f32",
    "i64": " i64  i64  f32",
    "u8": "  u8   u8  f32",
    "u16": " u16  u16  f32",
    "u32": " u32  u32  f32",
    "u64": " u64  u64  f32",
    "f16": " f16  f16  f16",
    "bf16": "bf16 bf16 bf16",
    "f32": " f32  f32  f32",
    "f64": " f64  f64  f64",
}


def _dtype(short: str, a: str, b: str) -> np.dtype:
    """The table's entry as a dtype: PyTorch's answer, or NumPy's where PyTorch refuses."""
    if short == "-":
        return np.promote_types(kn.dtypes.as_dtype(a), kn.dtypes.as_dtype(b))
    return kn.dtypes.as_dtype("bool" if short == "b" else short)


def _name(short: str) -> str:
    return "bool" if short == "b" else short


def _pairs(table):
    for row, entries in table.items():
        for col, want in zip(COLUMNS, entries.split()):
            yield _name(row), _name(col), _dtype(want, _name(row), _name(col))


def _scalars(table):
    for row, entries in table.items():
        for scalar, want in zip(SCALAR_COLUMNS, entries.split()):
            yield _name(row), scalar, kn.dtypes.as_dtype(_name(want))


def _value(dtype, ndim):
    return np.ones((2,) * ndim, kn.dtypes.as_dtype(dtype))


def test_tables_cover_every_kiln_dtype():
    names = ({kn.dtypes.short_name(d) for d in kn.dtypes.SUPPORTED} - {"bool"}) | {"b"}
    for table in (DIMS, ZERO_DIM, BOTH_ZERO_DIM, SCALARS, ZERO_DIM_SCALARS):
        assert set(table) == names


@pytest.mark.parametrize(
    "table, left, right", [(DIMS, 1, 1), (ZERO_DIM, 1, 0), (BOTH_ZERO_DIM, 0, 0)],
    ids=["dims", "zero-dim", "both-zero-dim"],
)  # fmt: skip
def test_result_type_is_pytorchs(table, left, right):
    wrong = [(a, b, kn.result_type(_value(a, left), _value(b, right)), want)
             for a, b, want in _pairs(table)
             if kn.result_type(_value(a, left), _value(b, right)) != want]  # fmt: skip
    assert not wrong


@pytest.mark.parametrize("table, ndim", [(SCALARS, 1), (ZERO_DIM_SCALARS, 0)], ids=["dims", "0d"])
def test_result_type_with_python_scalars_is_pytorchs(table, ndim):
    for a, scalar, want in _scalars(table):
        assert kn.result_type(_value(a, ndim), scalar) == want, (a, scalar)
        assert kn.result_type(scalar, _value(a, ndim)) == want, (scalar, a)


def _modes(fn, *values):
    """fn's result dtype eagerly (Tensors) and in graph mode (placeholders and constants)."""
    eager = fn(*[kn.tensor(v) if isinstance(v, np.ndarray) else v for v in values]).dtype
    with kn.Graph().as_default():
        ins = [kn.placeholder(v.dtype, v.shape) if isinstance(v, np.ndarray) else v for v in values]
        graph = fn(*ins).dtype
    return eager, graph


@pytest.mark.parametrize("table, left, right", [(DIMS, 1, 1), (ZERO_DIM, 1, 0)], ids=["dims", "0d"])
def test_add_and_div_compute_in_the_tables_dtype_eagerly_and_in_graph_mode(table, left, right):
    wrong = []
    for a, b, want in _pairs(table):
        x, y = _value(a, left), _value(b, right)
        # true division: integer results become the default float (PyTorch's `div`)
        want_div = want if kn.dtypes.is_float(want) else kn.get_default_dtype()
        for fn, expected in ((kn.add, want), (kn.div, want_div)):
            for mode, got in zip(("eager", "graph"), _modes(fn, x, y)):
                if got != expected:
                    wrong.append((fn.__name__, mode, a, b, got, expected))
    assert not wrong


@pytest.mark.parametrize("table, ndim", [(SCALARS, 1), (ZERO_DIM_SCALARS, 0)], ids=["dims", "0d"])
def test_python_scalars_take_part_as_in_the_table(table, ndim):
    wrong = []
    for a, scalar, want in _scalars(table):
        x = _value(a, ndim)
        for fn in (kn.add, kn.mul, lambda u, v: kn.maximum(v, u)):
            for mode, got in zip(("eager", "graph"), _modes(fn, x, scalar)):
                if got != want:
                    wrong.append((mode, a, scalar, got, want))
    assert not wrong


def test_compiled_functions_promote_as_the_table():
    # int32 / int32 and int32 + 0.5 give float32; float16 with int64 stays float16
    f = kn.compile(lambda i, j, h: (i / j, i + 0.5, h * j.long()))
    i, j, h = kn.ones(2, dtype=kn.int32), kn.ones(2, dtype=kn.int32), kn.ones(2, dtype=kn.half)
    assert [r.dtype for r in f(i, j, h)] == [kn.float32, kn.float32, kn.float16]


def test_default_dtype_decides_integer_to_float_promotion():
    kn.set_default_dtype(kn.float64)
    try:
        i = kn.ones(2, dtype=kn.int32)
        assert (i / i).dtype == (i + 0.5).dtype == kn.tensor([1.5]).dtype == kn.float64
        assert kn.zeros(2).dtype == kn.float64
    finally:
        kn.set_default_dtype(kn.float32)
    assert (i / i).dtype == kn.zeros(2).dtype == kn.float32


# -- every binary op, both operand orders, eagerly and in graph mode --------------------------
# PyTorch promotes every binary op by `result_type`, then: comparisons give bool, true
# division and float functions (atan2) give a float (the default float for integers), the rest
# keep the promoted dtype. What PyTorch refuses (bool - bool, fmod/% of two bools) is skipped.

_COMPARE = (kn.eq, kn.lt, kn.ge, lambda a, b: a != b)
_MOD = (kn.fmod, kn.remainder, lambda a, b: a % b)  # PyTorch has no kernel for two bools
_KEEP = (kn.add, kn.mul, kn.maximum, kn.minimum, *_MOD, lambda a, b: a * b,
         lambda a, b: a + b, lambda a, b: kn.where(True, a, b))  # fmt: skip
_FLOAT = (kn.atan2, lambda a, b: a / b, kn.true_divide)


def _expected(fn, want):
    if fn in _COMPARE:
        return np.dtype(bool)
    if fn in _FLOAT and not kn.dtypes.is_float(want):
        return kn.get_default_dtype()
    return want


@pytest.mark.parametrize("table, left, right", [(DIMS, 1, 1), (ZERO_DIM, 1, 0)], ids=["dims", "0d"])
def test_every_binary_op_promotes_as_the_table_in_both_orders(table, left, right):
    wrong = []
    refused = {
        (_name(r), c) for r, e in table.items() for c, w in zip(COLUMNS, e.split()) if w == "-"
    }
    for a, b, want in _pairs(table):
        if (a, "b" if b == "bool" else b) in refused:
            continue  # PyTorch refuses the pair
        x, y = _value(a, left), _value(b, right)
        for fn in (*_COMPARE, *_KEEP, *_FLOAT, kn.sub):
            if (fn is kn.sub and "bool" in (a, b)) or (fn in _MOD and a == b == "bool"):
                continue
            expected = _expected(fn, want)
            for mode, got in zip(("eager", "graph"), _modes(fn, x, y)):
                if got != expected:
                    wrong.append((getattr(fn, "__name__", "?"), mode, a, b, got, expected))
            if table is DIMS:  # the other order: result_type is symmetric for two tensors
                for mode, got in zip(("eager", "graph"), _modes(fn, y, x)):
                    if got != expected:
                        wrong.append((getattr(fn, "__name__", "?"), mode, b, a, got, expected))
    assert not wrong, wrong[:20]


@pytest.mark.parametrize("table, ndim", [(SCALARS, 1), (ZERO_DIM_SCALARS, 0)], ids=["dims", "0d"])
def test_every_binary_op_with_a_python_scalar_on_either_side(table, ndim):
    wrong = []
    for a, scalar, want in _scalars(table):
        x = _value(a, ndim)
        for fn in (*_COMPARE, *_KEEP, *_FLOAT, kn.sub):
            if fn is kn.sub and (a == "bool" or scalar is True):
                continue
            if fn in _MOD and a == "bool" and scalar is True:
                continue
            expected = _expected(fn, want)
            for args in ((x, scalar), (scalar, x)):
                if fn in (kn.fmod, kn.atan2) and args[0] is scalar:
                    continue  # PyTorch's fmod and atan2 take a tensor first
                for mode, got in zip(("eager", "graph"), _modes(fn, *args)):
                    if got != expected:
                        wrong.append((getattr(fn, "__name__", "?"), mode, a, scalar, got, expected))
    assert not wrong, wrong[:20]


# PyTorch's result_type with a Python complex (weak): complex64 for bool, integers and float32,
# complex32 for float16, complex128 for float64 (torch 2.13). kiln has no complex32: it refuses
# that one, with the same error eagerly and in graph mode.
COMPLEX_SCALAR = {"bool": "complex64", "int64": "complex64", "float32": "complex64",
                  "float16": "complex32", "float64": "complex128"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMPLEX_SCALAR))
def test_a_complex_python_scalar_promotes_as_pytorchs(name):
    x, want = _value(name, 1), COMPLEX_SCALAR[name]
    if want == "complex32":
        with pytest.raises(kn.DTypeError, match="complex32"):
            kn.add(kn.tensor(x), 1j)
        with kn.Graph().as_default():
            with pytest.raises(kn.DTypeError, match="complex32"):
                kn.add(kn.placeholder(x.dtype, x.shape), 1j)
        with pytest.raises(kn.DTypeError):
            kn.result_type(x, 1j)
        return
    assert kn.result_type(x, 1j) == np.dtype(want)
    got = kn.add(kn.tensor(x), 1j)
    assert got.dtype == np.dtype(want)
    np.testing.assert_array_equal(got.numpy(), x + np.asarray(1j, want))
    with kn.Graph().as_default():
        assert kn.add(kn.placeholder(x.dtype, x.shape), 1j).dtype == np.dtype(want)
