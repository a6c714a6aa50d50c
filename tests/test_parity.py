"""Parity with NumPy: kiln refuses exactly the shapes NumPy refuses (broadcasting, reshape,
matmul, basic indexing) and gives NumPy's shapes otherwise; `kn.promote` (the primitives' dtype
rule) is NumPy 2's, while the frontend's functions promote as PyTorch does (Python scalars are
weak; tests/test_promotion_table.py holds PyTorch's table). Also symbolic dims: proven
mismatches fail at build time, naming the caller; unprovable ones are checked when feeds bind
them.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_promotion_table import SCALARS

import kiln as kn

DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)  # fmt: skip

# -- strategies --------------------------------------------------------------------------------

SIDES = st.sampled_from([0, 1, 1, 2, 3, 4])


def shapes(min_dims=0, max_dims=4, sides=SIDES):
    return st.lists(sides, min_size=min_dims, max_size=max_dims).map(tuple)


# Random pairs are mostly incompatible; NumPy's own strategy gives compatible ones.
shape_pairs = st.one_of(
    st.tuples(shapes(), shapes()),
    hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4).map(
        lambda r: tuple(r.input_shapes)
    ),
)


def numpy_outcome(fn):
    """`fn()`'s value, or the exception NumPy raises (ValueError, IndexError, TypeError)."""
    try:
        with np.errstate(all="ignore"):
            return fn(), None
    except (ValueError, IndexError, TypeError, OverflowError) as e:
        return None, e


def run(inputs, output, arrays):
    return kn.function(inputs, output)(*arrays)


# -- broadcasting --------------------------------------------------------------------------


@given(shape_pairs)
def test_add_broadcasting_matches_numpy(pair):
    a, b = pair
    want, error = numpy_outcome(lambda: np.broadcast_shapes(a, b))
    with kn.Graph().as_default():
        x, y = kn.placeholder(kn.float32, a), kn.placeholder(kn.float32, b)
        if error is not None:
            with pytest.raises(kn.ShapeError):
                kn.add(x, y)
            return
        z = kn.add(x, y)
        assert z.shape == want
        xa = np.arange(math.prod(a), dtype=np.float32).reshape(a)
        yb = np.ones(b, np.float32)
        np.testing.assert_array_equal(run([x, y], z, [xa, yb]), xa + yb)


# -- reshape ---------------------------------------------------------------------------------


@st.composite
def reshape_cases(draw):
    """A shape and a target with up to two -1s. (NumPy also reads other negative dims as -1;
    kiln refuses them, on purpose, so they are left out.)"""
    shape = draw(shapes(max_dims=3))
    if draw(st.booleans()):  # a rearrangement of the same size: mostly valid
        target = [*draw(st.permutations(list(shape))), *[1] * draw(st.integers(0, 2))]
    else:
        target = draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 6]), max_size=4))
    for _ in range(draw(st.integers(0, 2))):
        if target:
            target[draw(st.integers(0, len(target) - 1))] = -1
    return shape, tuple(target)


@given(reshape_cases())
def test_reshape_matches_numpy(case):
    shape, target = case
    data = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    want, error = numpy_outcome(lambda: data.reshape(target))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, shape)
        if error is not None:
            with pytest.raises(kn.ShapeError):
                kn.reshape(x, target)
            return
        y = kn.reshape(x, target)
        assert y.shape == want.shape
        np.testing.assert_array_equal(run([x], y, [data]), want)
    np.testing.assert_array_equal(kn.reshape(data, target), want)


# -- matmul ----------------------------------------------------------------------------------


@st.composite
def matmul_shapes(draw):
    """Random pairs, and pairs built to contract (1-d, 2-d, batched with broadcasting)."""
    small = st.sampled_from([1, 2, 3])
    if draw(st.booleans()):
        return draw(shapes(0, 4, small)), draw(shapes(0, 4, small))
    batch_a, batch_b = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)
    ).input_shapes
    n, k, m = draw(small), draw(st.sampled_from([0, 2, 3])), draw(small)
    a = (k,) if draw(st.booleans()) else (*batch_a, n, k)
    b = (k,) if draw(st.booleans()) else (*batch_b, k, m)
    return a, b


@given(matmul_shapes())
def test_matmul_shapes_match_numpy(pair):
    a, b = pair
    xa = np.arange(math.prod(a), dtype=np.float64).reshape(a)
    yb = np.ones(b, np.float64)
    want, error = numpy_outcome(lambda: np.matmul(xa, yb))
    with kn.Graph().as_default():
        x, y = kn.placeholder(kn.float64, a), kn.placeholder(kn.float64, b)
        if error is not None:
            with pytest.raises(kn.ShapeError):
                kn.matmul(x, y)
            return
        z = kn.matmul(x, y)
        assert z.shape == np.shape(want)
        np.testing.assert_allclose(run([x, y], z, [xa, yb]), want)


# -- basic indexing ------------------------------------------------------------------------

bounds = st.none() | st.integers(-7, 7)
index_items = st.one_of(
    st.integers(-6, 6),
    st.builds(slice, bounds, bounds, st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3, 0])),
    st.none(),
    st.just(Ellipsis),
)


@st.composite
def index_cases(draw):
    shape = draw(shapes(max_dims=3, sides=st.sampled_from([0, 1, 2, 3, 5])))
    key = tuple(draw(st.lists(index_items, max_size=4)))
    if len(key) == 1 and draw(st.booleans()):
        key = key[0]  # x[i] rather than x[(i,)]
    return shape, key


@given(index_cases())
def test_basic_indexing_matches_numpy(case):
    shape, key = case
    data = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    items = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in items):
        # PyTorch's rule (Tensor indexing has its name): a negative step raises ValueError
        with kn.Graph().as_default():
            with pytest.raises(ValueError):  # (or another refusal of the key first)
                kn.placeholder(kn.float32, shape)[key]
        return
    if sum(k is Ellipsis for k in items) > 1:
        # PyTorch's rule: several Ellipsis are read as PyTorch reads them (NumPy refuses);
        # tests/ports/test_port_pt_indexing.py::test_several_ellipses checks it against torch
        return
    want, error = numpy_outcome(lambda: data[key])
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, shape)
        if error is not None:
            with pytest.raises(kn.ShapeError):
                x[key]
            with pytest.raises(kn.ShapeError):
                kn.getitem(data, key)
            return
        y = x[key]
        assert y.shape == np.shape(want), f"x{list(shape)}[{key!r}]"
        np.testing.assert_array_equal(run([x], y, [data]), want)
    np.testing.assert_array_equal(kn.getitem(data, key), want)


def test_too_many_full_slices_raise():
    # Regression: x[:, :, :] on a 2-d value skipped the index op and returned x.
    x = kn.placeholder(kn.float32, (2, 3))
    for key in [(slice(None),) * 3, (slice(None), slice(None), None, slice(None))]:
        with pytest.raises(kn.ShapeError, match="too many indices"):
            x[key]
        with pytest.raises(kn.ShapeError, match="too many indices"):
            kn.getitem(np.ones((2, 3)), key)
    with pytest.raises(kn.ShapeError, match="too many indices"):
        kn.getitem(np.float32(1.0), slice(None))


# -- dtype promotion -----------------------------------------------------------------------


def test_promote_matches_numpy_result_type():
    wrong = [
        (a, b, kn.promote(a, b), np.result_type(a, b))
        for a in DTYPES
        for b in DTYPES
        if kn.promote(a, b) != np.result_type(a, b)
    ]
    assert not wrong, f"(a, b, kiln, NumPy): {wrong}"


def test_promote_with_weak_scalars_matches_numpy():
    for d in DTYPES:
        for scalar in (True, 2, 2.0):
            want = np.result_type(np.dtype(d), scalar)  # NumPy 2: Python scalars are weak
            assert kn.promote(d, scalar) == want == kn.promote(scalar, d), (d, scalar)


BINARY = {
    "add": (kn.add, np.add), "sub": (kn.sub, np.subtract), "mul": (kn.mul, np.multiply),
    "div": (kn.div, np.true_divide), "pow": (kn.pow, np.power),
    "floordiv": (kn.floordiv, np.floor_divide), "mod": (kn.mod, np.remainder),
    "maximum": (kn.maximum, np.maximum), "less": (kn.less, np.less),
    "equal": (kn.frontend.math.equal, np.equal),
}  # fmt: skip


def scalar_params():
    out = []
    for op in sorted(BINARY):
        for side in ("rhs", "lhs"):
            for scalar in (True, 2, -3, 2.0, 1.5, -0.5):
                out.append(pytest.param(op, side, scalar, id=f"{op}-{side}-{scalar!r}"))
    return out


def _pytorch_dtype(op, d, scalar):
    """PyTorch's result dtype of `op` on a d[2] tensor and `scalar` (its table, as data)."""
    row = SCALARS["b" if d == "bool" else kn.dtypes.short_name(np.dtype(d))].split()
    short = row[0 if isinstance(scalar, bool) else 1 if isinstance(scalar, int) else 2]
    dtype = kn.dtypes.as_dtype("bool" if short == "b" else short)
    if op in ("less", "equal"):
        return np.dtype(bool)
    return kn.get_default_dtype() if op == "div" and dtype.kind != "f" else dtype


@pytest.mark.parametrize("op, side, scalar", scalar_params())
def test_python_scalars_are_weak_as_in_pytorch(op, side, scalar):
    kiln_fn, _ = BINARY[op]
    wrong = []
    for d in DTYPES:
        if op == "pow" and isinstance(scalar, int) and scalar < 0 and side == "rhs":
            continue  # int ** negative int is refused by value, not by dtype
        array = np.ones(2, d)
        pair = (lambda a: (a, scalar)) if side == "rhs" else (lambda a: (scalar, a))
        want = _pytorch_dtype(op, d, scalar)
        if op == "sub" and (d == "bool" or isinstance(scalar, bool)):
            want = None  # torch 2.13 refuses subtraction with a bool, tensor or scalar
        elif d == "bool" and scalar is True and op in ("floordiv", "mod", "pow"):
            # PyTorch refuses -, // and % of two bools, and so does kiln. ** is PyTorch's:
            # bool ** True is bool, True ** bool refused
            want = None
            if op == "pow":
                want = np.dtype(np.bool_) if side == "rhs" else None
        with kn.Graph().as_default():
            x = kn.placeholder(d, (2,))
            for mode, operand in (("graph", x), ("eager", kn.tensor(array))):
                try:
                    with np.errstate(all="ignore"):
                        got = kiln_fn(*pair(operand)).dtype
                except Exception as e:
                    # NOTE: -3 wraps into an unsigned dtype in arithmetic and comparisons, as
                    # PyTorch's (tests/test_edges_ints.py); pow's exponent and maximum's other
                    # refuse it (NumPy's OverflowError; PyTorch refuses pow's too)
                    wraps = scalar is not True and scalar == -3 and np.dtype(d).kind == "u"
                    wraps = wraps and isinstance(e, OverflowError) and op in ("pow", "maximum")
                    if not (wraps or want is None and isinstance(e, kn.DTypeError)):
                        wrong.append((d, mode, f"kiln raised {type(e).__name__}: {e}"))
                    continue
                if got != want:
                    wrong.append((d, mode, f"kiln {got}, PyTorch {want}"))
    assert not wrong, f"{op} with {scalar!r} on the {side}: {wrong}"


def test_same_named_dims_add():
    x = kn.placeholder(kn.float32, ("b", 3), name="x")
    y = kn.placeholder(kn.float32, ("b", 3), name="y")
    z = x + y
    assert z.shape == (kn.Dim("b"), 3)
    f = kn.function([x, y], z)
    np.testing.assert_array_equal(
        f(np.ones((5, 3), np.float32), np.ones((5, 3), np.float32)), np.full((5, 3), 2.0)
    )


def test_symbolic_against_static_dim_is_checked_at_run_time():
    x = kn.placeholder(kn.float32, ("b", 3), name="x")
    y = kn.placeholder(kn.float32, (4, 3), name="y")
    z = x + y  # b == 4 can't be proven or refuted here
    assert z.shape == (4, 3)
    f = kn.function([x, y], z)
    with pytest.raises(kn.ShapeError) as caught:
        f(np.ones((5, 3), np.float32), np.ones((4, 3), np.float32))
    assert f"'{z.name}'" in str(caught.value) and "test_parity.py" in str(caught.value)
    np.testing.assert_array_equal(
        f(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32)), np.full((4, 3), 2.0)
    )


def test_static_mismatch_raises_at_build_time_naming_the_caller():
    x = kn.placeholder(kn.float32, (2, 3), name="x")
    y = kn.placeholder(kn.float32, (4, 3), name="y")
    with pytest.raises(kn.ShapeError) as caught:
        x + y
    message = str(caught.value)
    assert "test_parity.py:" in message and "[2,3]" in message and "[4,3]" in message
