"""PyTorch's own indexing tests (test/test_indexing.py: TestIndexing and NumpyTests) as an
oracle: each behaviour they check is written as a scenario, a function of the module `lib`,
run once with torch and once with kiln (and, where it makes sense, under `kn.compile`);
values, dtypes, shapes, aliasing and exception types must agree. Here: `x[index]` and
`x[index] = v`; the index functions (index_add_, index_put_, take...) are in
test_port_pt_indexing_ops.py, the shared helpers in pt_indexing_common.py.

torch 2.13 is the oracle: every expected value is what torch gives for the same scenario.
Indexing moves values without arithmetic, so values must be equal (float sums of index_add
and of accumulate=True agree within 1e-6).
"""

import warnings

import numpy as np
import pytest
from pt_indexing_common import B, E, Idx, L, _, build, check, check_compiled, consec

import kiln as kn

pytestmark = pytest.mark.filterwarnings("ignore:indexing with dtype uint8")


SHAPE = (3, 4, 5, 6)

# Indices of x of shape (3, 4, 5, 6): where the index arrays' broadcast shape goes (in place
# when adjacent, else first; ints drop their dim first), masks (1-d, several dims, Python
# lists, 0-d), None and Ellipsis among them, int32 and 0-d index tensors, empty indices.
INDICES = [
    # basic: views
    0,
    -1,
    (1, 2),
    (slice(1, 3),),
    (2, 3, 4, 5),
    (-1, -2, -3, -4),
    (_, 2, slice(0, 5, 2)),
    (E, 2),
    (0, E, 2),
    (0, 2, E),
    (E, 1, 2, 3),
    (2, E, 1, 0),
    (E,),
    (),
    None,
    (2, None),
    (None, 2, None, None),
    (slice(1, 3), None),
    (None, slice(1, 3), None, None),
    (E, None),
    (slice(0),),
    (slice(0), 2),
    (2, slice(1, 1), 2),
    (slice(1, 3, 2),),
    (slice(None, None, 4),),
    (slice(-2, None),),
    (slice(None, -1),),
    (slice(-10, 10),),
    (slice(3, 1),),
    (None, E, None),
    (L(1),),
    (0, L(2)),
    (L(1), _, L(-1)),
    # one index array
    ([0, 2],),
    (L(2, 0),),
    (Idx([2, 0], "int32"),),
    (_, [1, 3]),
    (_, _, [[0, 1], [2, 3]]),
    ([-1], [0]),
    ([0, 2], [-1]),
    (_, [-1]),
    (_, [0, 1, 1, 2, 2]),
    (E, [5, 0]),
    ([1], E),
    (E, _, [0, 4]),
    (_, E, [4]),
    ([[0, 1], [1, 0]],),
    ([0, 2], _, E),
    (range(3),),
    ((0, 2),),
    ([[0, 2]],),
    # several index arrays: adjacent (in place) or not (first)
    ([0, 2], [1, 3]),
    (_, [0, 2], [1, 3]),
    (_, _, [0, 2], [1, 3]),
    ([0, 2], _, [1, 3]),
    ([0, 2], _, _, [1, 3]),
    (_, [0, 1], _, [[2], [3]]),
    ([[0], [2]], [1, 3], _, [0]),
    ([0, 2], 1, [1, 3]),
    (1, [0, 2], 3, [1, 3]),
    (1, _, [0, 2]),
    ([0, 2], None, [1, 3]),
    ([0, 2], E, [1, 3]),
    (E, [1, 3], [2, 3]),
    ([2, 0, 1], [1, 2, 3], [4], _),
    ([[0, 1], [1, 0]], [[2, 1], [3, 3]], E, _),
    (_, [2], [[0, 3], [4, 4]]),
    (L(1, 2), Idx([0, 3], "int32")),
    (L(2), 1, L(3)),
    (L([[1]]), L([0, 2]), L(4)),
    (None, [0, 2], None, [1, 3]),
    ([1, 2], [3], [4], [5]),
    # masks
    (B(True, False, True),),
    (_, B(True, False, False, True)),
    (B([[True, False, True, False]] * 3),),
    (_, B([[True, False] * 3 + [False] * 0] * 5)),
    (B(False, False, False),),
    ([True, False, True],),
    ([True, False, True], [False, True, True, True]),
    (B(True, False, True), _, B(False, True, True, True, False)),
    (B(True, False, True), [1, 2]),
    (0, B(True, False, False, True)),
    (E, B(True, False, True, False, False, True)),
    (None, E, B(True, True, False, False, False, True)),
    (B(True, True, False), None, 1),
    (Idx([1, 0, 1], "uint8"),),
    (True,),
    (False,),
    (True, 1),
    (False, E),
    (None, True, E),
    (True, [0, 1], True, True, [1], [[2]]),
    (0, True, [1, 2]),
    (B(True),),
    (B(False), 1),
    (Idx(1, "uint8"),),
    (Idx(0, "uint8"), E),
    # empty index arrays
    ([],),
    (L([]),),
    (_, L(np.zeros((0, 2), np.int64))),
    (L([]), L([])),
    (B([[False] * 4] * 3),),
]


def byte_mask(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, Idx) and i.dtype == "uint8" and i.values.ndim for i in items)


def index_id(index):
    return repr(index)[:60]


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_getitem_value_dtype_shape(torch, index):
    check(torch, lambda lib: consec(lib, *SHAPE)[build(lib, index)])


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_getitem_view_or_copy(torch, index):
    """Basic indexing gives a view (writing into it changes x), advanced a copy."""

    def scenario(lib):
        x = consec(lib, *SHAPE)
        x[build(lib, index)].add_(1000)
        return x

    check(torch, scenario)


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_setitem_scalar_tensor_and_broadcast(torch, index):
    def scenario(lib):
        x, y, z = consec(lib, *SHAPE), consec(lib, *SHAPE), consec(lib, *SHAPE, dtype=lib.int32)
        shape = x[build(lib, index)].shape
        y[build(lib, index)] = -lib.arange(float(int(np.prod(shape)))).view(shape)
        if byte_mask(index):  # torch refuses one value through a uint8 mask (masked_fill_)
            return y
        x[build(lib, index)] = -1.5
        z[build(lib, index)] = lib.tensor(7, dtype=lib.int32)
        return x, y, z

    check(torch, scenario)


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_getitem_backward(torch, index):
    """Gradients of x[index] (several uses of one element add up)."""

    def scenario(lib):
        x = consec(lib, *SHAPE).requires_grad_()
        y = x[build(lib, index)]
        (y * lib.arange(float(y.numel())).view(y.shape)).sum().backward()
        return x.grad

    check(torch, scenario)


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_getitem_and_setitem_compiled(torch, index):
    """Under kn.compile, the index tensors are arguments of the function."""
    tensors = [i for i in (index if isinstance(index, tuple) else (index,)) if isinstance(i, Idx)]

    def make_inputs(lib):
        return (consec(lib, *SHAPE), *(i.build(lib) for i in tensors))

    def body(lib, x, *args):
        given = iter(args)
        items = index if isinstance(index, tuple) else (index,)
        ix = tuple(next(given) if isinstance(i, Idx) else i for i in items)
        if not isinstance(index, tuple):
            ix = ix[0]
        y = x * 1
        y[ix] = x[ix] * -2 if byte_mask(index) else -2.0
        z = x * 1
        z[ix] += x[ix] * 3
        return x[ix] * 2, y, z

    check_compiled(torch, make_inputs, body)


def test_index_arrays_that_do_not_broadcast_raise_index_error(torch):
    """Index arrays of shapes [2] and [3] are an IndexError in PyTorch (kiln raised a
    ShapeError, a ValueError and RuntimeError but no IndexError), eagerly and compiled."""

    def scenario(lib):
        return lib.zeros(5, 5)[[0, 1], [0, 1, 2]]

    def setitem(lib):
        x = lib.zeros(5, 5)
        x[[0, 1], [0, 1, 2]] = 1.0

    def masks(lib):  # a mask's true count that the run gives disagrees with the other array
        return lib.zeros(3, 4)[lib.tensor([True, True, False]), lib.tensor([0, 1, 2])]

    for fn in (scenario, setitem, masks):
        check(torch, fn)
    check_compiled(torch, lambda lib: (lib.zeros(3, 4), lib.tensor([True, True, False])),
                   lambda lib, x, m: x[m, lib.tensor([0, 1, 2])])  # fmt: skip


def test_compiled_augmented_assignment_through_a_mask(torch):
    """`z[mask] += v` under kn.compile raised TypeError ('Dim' object cannot be interpreted as
    an integer): the in-place add's shape check read the mask's count, which the run gives,
    with NumPy. torch: the masked rows change."""

    def body(lib, x, m, m2):
        z = x * 1
        z[m] += x[m2] * 3
        return z

    for m2 in ([True, False, True], [False, True, False]):
        check_compiled(
            torch,
            lambda lib, m2=m2: (
                lib.arange(6.0).view(3, 2),
                lib.tensor([True, False, True]),
                lib.tensor(m2),
            ),  # fmt: skip
            body,
        )


# -- errors: exception types ---------------------------------------------------------------------

ERRORS = [
    (slice(1, 9, 0),),
    (slice(1, 9, -1),),
    (1, 1, 1, 1, 1),
    (1, 1, 1, 1, slice(1, 1)),
    (2,) * 8,
    (0.0,),
    (0, 0.0),
    (0.0, _),
    (_, 0.0, _),
    (-1.4,),
    (0, -1.4, 0),
    (slice(0.0, 2.0),),
    (0.0, slice(0.0, 2.0)),
    (0.0, E, slice(0.0, 2.0)),
    (slice("0", "1"),),
    (3,),
    (-4,),
    (0, 4),
    (_, _, 5),
    (0, 1, 15),
    (1 << 30,),
    (1 << 62,),
    (1 << 64,),
    (-(1 << 63),),
    (L(3),),
    (L(-4),),
    ([3],),
    ([0, 1], [0, 1, 2]),
    (Idx([1.0], "float32"),),
    (Idx([], "float32"),),
    (B(True),),
    (B([False] * 6),),
    (Idx(np.zeros((4, 4)), "uint8"),),
    (_, Idx(np.zeros((4, 4)), "uint8")),
    (E, E),
    (E, 0, E),
    ([1], [0, 2], [3]),
    (Idx([1], "int16"),),
    (Idx([1], "int8"),),
    (Idx([1, 0], "int16"), [0, 1]),
]


@pytest.mark.parametrize("index", ERRORS, ids=index_id)
def test_getitem_and_setitem_errors(torch, index):
    """An index torch refuses (IndexError, TypeError, ValueError, RuntimeError) raises an
    instance of the same class in kiln; one it takes gives the same value."""
    check(torch, lambda lib: consec(lib, 3, 4, 5, 6)[build(lib, index)])

    def setitem(lib):
        x = consec(lib, 3, 4, 5, 6)
        x[build(lib, index)] = 0.5
        return x

    check(torch, setitem)


def test_delitem_is_a_type_error(torch):
    def scenario(lib):
        x = consec(lib, 3, 3)
        del x[0]

    check(torch, scenario)


@pytest.mark.parametrize(
    "index",
    [0, (0,), 1, L(0), _, (_,), [0], L([0]), None, E, True, False, (), (None, E)],
    ids=index_id,
)
def test_zero_dim_tensor_indexing(torch, index):
    """A 0-d tensor takes None, Ellipsis, bools and (): ints and slices are IndexErrors."""
    check(torch, lambda lib: lib.tensor(10.0)[build(lib, index)])

    def setitem(lib):
        x = lib.tensor(10.0)
        x[build(lib, index)] = 2.5
        return x

    check(torch, setitem)


def test_empty_dim_indexing(torch):
    """On a tensor of shape (10, 0): rows by list, two empty lists, and an IndexError for
    columns of a dim of size 0."""
    check(torch, lambda lib: lib.zeros(10, 0)[[1, 2]])
    check(torch, lambda lib: lib.zeros(10, 0)[[], []])
    check(torch, lambda lib: lib.zeros(10, 0)[:, [0, 1]])
    check(torch, lambda lib: lib.arange(5.0)[lib.zeros(0, 2, dtype=lib.int64)])
    check(torch, lambda lib: lib.zeros(2, 3, 4, 5)[:, lib.zeros(0, 6, dtype=lib.int64)])
    check(torch, lambda lib: lib.arange(5.0)[lib.zeros(0, 2, dtype=lib.uint8)])
    check(torch, lambda lib: lib.zeros(2, 3, 4, 5)[:, :, :, 1][:, 1:1, :].is_contiguous())


def test_index_limits_on_an_empty_tensor(torch):
    for i in (-(1 << 63), (1 << 63) - 1, 0, -1):
        check(torch, lambda lib, i=i: lib.tensor([])[i])


def test_out_of_bound_messages(torch):
    x_values = np.arange(100).reshape(2, 5, 10)
    cases = [((0, 5), "index 5 is out of bounds for dimension 1 with size 5"),
             ((4, 5), "index 4 is out of bounds for dimension 0 with size 2"),
             ((0, 1, 15), "index 15 is out of bounds for dimension 2 with size 10"),
             ((_, _, 12), "index 12 is out of bounds for dimension 2 with size 10")]  # fmt: skip
    for index, message in cases:
        with pytest.raises(IndexError, match=message):
            kn.tensor(x_values)[index]
        with pytest.raises(IndexError, match=message):
            torch.tensor(x_values)[index]


@pytest.mark.parametrize(
    "index",
    [(E, E), (E, 0, E), (0, E, 1, E), (E, 0, E, 1), (E, E, 0), (None, E, E), (E, [0, 1], E),
     (E, None, E), (0, E, E), (E, B(np.ones((5, 6), bool)), E), (E, L(0, 1), E)],
    ids=index_id,
)  # fmt: skip
def test_several_ellipses(torch, index):
    """PyTorch reads each Ellipsis as the dims no other item takes (`x[..., 0, ...]` is
    `x[..., 0]`); kiln refused any second one, as NumPy does."""
    check(torch, lambda lib: consec(lib, 3, 4, 5, 6)[build(lib, index)])

    def setitem(lib):
        x = consec(lib, 3, 4, 5, 6)
        x[build(lib, index)] = -1.0
        return x

    check(torch, setitem)


# -- setitem: bools, 0-d, broadcasting and casts; views through chained indexing ---------------


@pytest.mark.parametrize("shape", [(2, 3), ()], ids=str)
def test_setitem_with_bools_none_and_ellipsis(torch, shape):
    """Values with leading 1s broadcast (NumPy drops them); False writes nothing."""

    def scenario(lib):
        a = lib.arange(6.0)[: int(np.prod(shape))].view(shape)
        minus = -lib.ones_like(a).unsqueeze(0).unsqueeze(0)
        steps = []
        one, zero = lib.tensor(1, dtype=lib.uint8), lib.tensor(0, dtype=lib.uint8)
        for index, value in [(True, minus), (False, 5.0), (one, minus * 2), (zero, 5.0),
                             (None, minus * 3), (E, minus * 4), (lib.tensor(True), minus * 5),
                             ((), minus * 6)]:  # fmt: skip
            a[index] = value
            steps.append(a.clone())
        return steps

    check(torch, scenario)

    def wider(lib):  # a value with leading dims that are not 1: refused
        a = lib.arange(6.0)[: int(np.prod(shape))].view(shape)
        a[True] = a.expand(5, 1, *shape)

    check(torch, wider)


def test_zero_dim_index_tensors_are_views_like_ints(torch):
    def scenario(lib):
        a = lib.arange(6.0).view(2, 3)
        zero, one = lib.tensor(0), lib.tensor(1)
        same = [a[0, 1].data_ptr() == a[zero, one].data_ptr(),
                a[1].data_ptr() == a[one.int()].data_ptr(),
                a[1].data_ptr() == a[one.short()].data_ptr(),
                a[None].data_ptr() == a.data_ptr(), a[...].data_ptr() == a.data_ptr(),
                a[()].data_ptr() == a.data_ptr(), a[True].data_ptr() == a.data_ptr(),
                a[[0]].data_ptr() == a.data_ptr()]  # fmt: skip
        a[1, zero] = 7.5
        a[zero] = lib.tensor([1.0, 2.0, 3.0])
        return same, a, a[zero], a[zero][one], a[zero, 1], a[0, one], a[...] is a

    check(torch, scenario)


def test_chained_indexing_writes_through_views_only(torch):
    """x[0][1] = v changes x (views); x[[0]][0] = v and x[mask][0] = v change copies."""

    def scenario(lib):
        x = lib.zeros(3, 4)
        x[0][1] = 5.0
        x[1, :][2:] = 6.0
        x[:, 1][2] = 7.0
        x[[0]][0] = 8.0
        x[x > 100][:] = 9.0
        x[1:2, [1, 2]].zero_()
        x[..., 3][None][0, 0] = 2.5
        x.select(1, 0)[1] = -1.0
        x.narrow(0, 2, 1)[0, 0] = -2.0
        return x

    check(torch, scenario)


def test_setitem_value_broadcasting_and_casts(torch):
    def scenario(lib):
        a = lib.zeros(4, 3)
        a[[0, 2]] = lib.tensor([1.0, 2.0, 3.0])  # one row for both
        a[:, [1]] = lib.tensor([[4.0], [5.0], [6.0], [7.0]])
        a[[[0], [1], [2]], [0, 1, 2]] = lib.tensor([2.0, 3.0, 4.0])  # index broadcast to (3, 3)
        b = lib.zeros(5, 5)
        b[lib.arange(4, -1, -1)] = lib.arange(5.0)[:, None]
        c = lib.zeros(4, dtype=lib.int32)
        c[[1, 2]] = 2.7  # a Python float into ints: truncated
        c[0] = -1.5
        c[3] = True
        d = lib.zeros(3, dtype=lib.uint8)
        d[1] = -1  # wraps around as in torch
        e = lib.zeros(4, dtype=lib.bool)
        e[[1, 2]] = 0.5
        f = lib.zeros(4)
        f[0:2] = lib.tensor([1, 2])  # a slice copies with a cast
        f[f > 0] = lib.tensor(3)  # one value through a mask: cast too
        return a, b, c, d, e, f

    check(torch, scenario)
    for value in (300, -1.5):  # overflow of uint8: torch's RuntimeError
        check(torch, lambda lib, v=value: lib.zeros(3, dtype=lib.uint8).__setitem__(1, v))


def test_setitem_errors(torch):
    for fn in [
        lambda lib: lib.arange(0, 4).__setitem__(lib.arange(0, 4) > -1, lib.tensor([1, 2, 3])),
        lambda lib: lib.arange(0, 4).__setitem__(lib.arange(0, 4) > -1, lib.zeros(0).long()),
        lambda lib: lib.arange(0, 4)[:1].__setitem__(lib.tensor([True]), lib.tensor([1, 2, 3])),
        lambda lib: lib.zeros(2, 3).__setitem__(([0, 1],), lib.zeros(3, 3)),
        lambda lib: lib.zeros(2, 3).__setitem__(slice(None), lib.zeros(2, 4)),
        lambda lib: lib.tensor(2.0).__setitem__(slice(None), 8.8),
        lambda lib: lib.tensor(2.0).__setitem__(lib.tensor(0), 8.8),
    ]:  # fmt: skip
        check(torch, fn)


def test_trivial_indices_give_a_new_view(torch):
    """x[:], x[...] and x[()] are new views in PyTorch; kiln returned x itself, so an
    in-place change of the view's metadata (`v = x[:]; v.t_()`) changed x too."""

    def scenario(lib):
        out = []
        for index in [(), E, _, (_, _), (E, _), (None,)[1:]]:
            x = lib.arange(6.0).view(2, 3)
            v = x[index]
            out.append(v is x)
            v.t_()
            v[0, 1] = -1.0  # the elements stay shared
            out += [tuple(x.shape), tuple(v.shape), x]
        return out

    check(torch, scenario)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("float32", 1e39), ("float16", 1e5), ("bfloat16", 1e39), ("float32", 1 + 1j),
     ("int32", 2.5e10), ("int32", float("nan")), ("uint8", -1.5), ("uint8", 255.9),
     ("float32", float("inf")), ("bool", 2.5), ("int64", 1 + 0j), ("complex64", 1 + 2j)],
    ids=str,
)  # fmt: skip
def test_setitem_of_a_python_number_the_dtype_cannot_hold(torch, dtype, value):
    """x[i] = 1e39 on float32 silently wrote inf in kiln (torch: RuntimeError 'value cannot
    be converted to type float without overflow'); a float out of an int dtype's range, NaN
    or a complex number into a real dtype raised OverflowError, ValueError or TypeError (torch:
    RuntimeError), and 1 + 0j into int64 was refused (torch writes 1)."""
    for index in (1, [1], slice(1, 2)):

        def scenario(lib, index=index):
            x = lib.zeros(3, dtype=getattr(lib, dtype))
            x[index] = value
            return x

        check(torch, scenario)
        check_compiled(torch, lambda lib: (lib.zeros(3, dtype=getattr(lib, dtype)),),
                       lambda lib, x, index=index: _set_copy(x, index, value))  # fmt: skip


def _set_copy(x, index, value):
    y = x.clone()
    y[index] = value
    return y


# -- autograd through indexing and item assignment ------------------------------------------------


def test_setitem_autograd(torch):
    def scalar_into_rows(lib):
        z = lib.zeros(3, 4)
        w = lib.tensor(1.5, requires_grad=True)
        z[:, 0] = w
        z.sum().backward()
        return z, w.grad

    def into_a_non_leaf(lib):
        a = lib.arange(12.0).view(3, 4).requires_grad_()
        v = lib.tensor([10.0, 20.0], requires_grad=True)
        y = a * 2
        y[[0, 2], [1, 3]] = v * 3  # advanced
        y[1, 1:3] = v  # basic
        y[y > 15] = 0.0  # a mask the values choose
        (y * lib.arange(12.0).view(3, 4)).sum().backward()
        return y, a.grad, v.grad

    def into_a_leaf(lib):
        a = lib.zeros(3, requires_grad=True)
        a[0] = 1.0

    def duplicates_and_masks(lib):
        a = lib.arange(6.0).requires_grad_()
        y = a[[0, 0, 5, -1]] * lib.tensor([1.0, 2.0, 3.0, 4.0])
        z = a[a > 2] ** 2
        (y.sum() + z.sum()).backward()
        return a.grad

    for fn in (scalar_into_rows, into_a_non_leaf, into_a_leaf, duplicates_and_masks):
        check(torch, fn)


def test_list_indices_of_many_sequences(torch):
    """A list of 32 or more sequences is one index array; a shorter one is a tuple of them
    (torch's rule): 31 rows of 10 columns are too many indices for a 1-d tensor."""
    windows = [range(i, i + 10) for i in range(100)]
    for n in (100, 32, 31):
        check(torch, lambda lib, n=n: lib.arange(200.0)[windows[:n]])
    check(torch, lambda lib: lib.arange(200.0).view(20, 10)[[[0, 1], [1, 2]]])


def test_uint8_masks_warn_once_per_index(torch):
    def count(lib, fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(lib)
        return sum("uint8" in str(w.message) for w in caught)

    def one(lib):
        return lib.ones(5, 7, 3)[lib.tensor([1, 0, 1, 1, 0], dtype=lib.uint8)]

    def two(lib):
        return lib.ones(5, 7, 3)[lib.tensor([1, 0, 1, 1, 0], dtype=lib.uint8), :,
                                 lib.tensor([1, 1, 1], dtype=lib.uint8)]  # fmt: skip

    for fn in (one, two):
        assert count(kn, fn) == count(torch, fn) > 0
        check(torch, fn)


def test_index_put_needs_an_index(torch):
    """index_put with no index: torch raises RuntimeError; kiln wrote the value."""
    check(torch, lambda lib: lib.rand([]).index_put([], lib.tensor([1.0]), True))
    check(torch, lambda lib: lib.tensor(2.0).index_put((), lib.tensor(1.0)))


# -- under kn.compile ---------------------------------------------------------------------------


def _grid(lib):
    return (lib.arange(12.0).view(3, 4),)


def _chained_views(lib, x):
    y = x * 1
    y[0][1] = 5.0
    y[1, :][2:] = 6.0
    y[:, 1][2] = 7.0
    y[[0]][0] = 8.0  # a copy: y stays
    y[..., 3][None][0, 0] = 2.5
    return y


def _trivial_view(lib, x):
    y = x * 1
    v = y[:]
    v.t_()  # v alone is transposed
    v[0, 1] = -1.0  # and shares y's elements
    return y, v


def _masks(lib, x):
    y = x * 1
    y[y > 5] = 0.0
    y[y < 2] *= 10
    return y, x[True], x[None, ..., None], x[False], x[True, [0, 2]], x[..., 0, ...]


def _tensor_items(lib, x, i, j):
    y = x * 1
    y[:, i] += 100.0  # repeated indices: written once each, as PyTorch's index_put_
    y[j] = -1.0
    return y, x[j], x[j, 1:], x[1, j], x[:, i]


COMPILED = {
    "index_add": (lambda lib: (*_grid(lib), lib.tensor([0, 2, 0]), lib.ones(3, 4)),
                  lambda lib, x, i, s: (x.index_add(0, i, s, alpha=2),
                                        x.clone().index_add_(1, i, s[:, :3]))),
    "index_copy": (lambda lib: (*_grid(lib), lib.tensor([2, 0]), lib.ones(2, 4)),
                   lambda lib, x, i, s: x.index_copy(0, i, s)),
    "index_fill": (lambda lib: (*_grid(lib), lib.tensor([2, 0]), lib.tensor(7.0)),
                   lambda lib, x, i, v: (x.index_fill(1, i, -1.5), x.clone().index_fill_(1, i, v))),
    "take_put": (lambda lib: (*_grid(lib), lib.tensor([0, -1, 5, 5]), lib.tensor([1.0, 2, 3, 4])),
                 lambda lib, x, i, v: (x.take(i.view(2, 2)), x.put(i, v, accumulate=True),
                                       x.clone().put_(i[:3], v[:3]))),
    "take_along_dim": (lambda lib: (*_grid(lib), lib.tensor([[0, 3], [1, 1], [2, 0]])),
                       lambda lib, x, i: lib.take_along_dim(x, i, 1)),
    "index_reduce": (lambda lib: (*_grid(lib), lib.tensor([2, 0, 2]), lib.ones(3, 4) * 3),
                     lambda lib, x, i, s: x.index_reduce(0, i, s, "prod", include_self=False)),
    "chained_views": (_grid, _chained_views),
    "trivial_view": (_grid, _trivial_view),
    "masks": (_grid, _masks),
    "tensor_items": (lambda lib: (*_grid(lib), lib.tensor([-1, -4, 0, 0]), lib.tensor(2)),
                     _tensor_items),
    "out_of_range": (lambda lib: (*_grid(lib), lib.tensor([3])), lambda lib, x, i: x[i]),
    "out_of_range_set": (lambda lib: (*_grid(lib), lib.tensor([-4])),
                         lambda lib, x, i: x.index_put((i,), lib.tensor(1.0))),
    "empty": (lambda lib: (*_grid(lib), lib.tensor([], dtype=lib.int64),
                           lib.zeros(3, 4, dtype=lib.bool)),
              lambda lib, x, i, m: (x[i], x[m], x.index_put((i,), lib.tensor(1.0)),
                                    x.index_put((m,), lib.tensor(1.0)))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(COMPILED))
def test_compiled_scenarios(torch, name):
    """x[:].t_() under kn.compile transposed x too (the view was x's own graph value)."""
    check_compiled(torch, *COMPILED[name])


def test_compiled_setitem_gradients(torch):
    def body(lib, x, v):
        y = x * 1
        y[[0, 2]] = v
        y[:, 1:3] *= 2
        return y.sum()

    def scenario(lib):
        x = lib.arange(12.0).view(3, 4).requires_grad_()
        v = lib.ones(4, requires_grad=True)
        f = kn.compile(lambda a, b: body(kn, a, b)) if lib is kn else lambda a, b: body(lib, a, b)
        (f(x, v) * 2).backward()
        return x.grad, v.grad

    check(torch, scenario)


def test_augmented_assignment_with_repeated_indices(torch):
    """`x[i] += v` reads, adds and writes once per position (no accumulation of repeats)."""

    def scenario(lib):
        x = lib.arange(12.0).view(3, 4)
        i = lib.tensor([0, 0, 2, -1])
        x[:, i] += 100.0
        x[i[:2]] *= 2
        y = lib.arange(6.0)
        y[lib.tensor([1, 1, 1])] -= lib.tensor([1.0, 2.0, 3.0])
        return x, y

    check(torch, scenario)


SETITEM_INDEX_KINDS = {
    "list": lambda lib: [1, 2], "tensor": lambda lib: lib.tensor([1, 2]),
    "mask": lambda lib: lib.tensor([False, True, True, False]),
    "mask_and_list": lambda lib: (lib.tensor([True, False]), [1, 2]),
    "list_and_slice": lambda lib: ([0, 1], slice(1, 3)), "bool_0d": lambda lib: lib.tensor(True),
    "int": lambda lib: 1, "slice": lambda lib: slice(1, 3), "int_0d": lambda lib: lib.tensor(1),
    "ellipsis": lambda lib: E, "true": lambda lib: True,
}  # fmt: skip
TWO_ROWS = ("mask_and_list", "list_and_slice")


@pytest.mark.parametrize("kind", list(SETITEM_INDEX_KINDS))
@pytest.mark.parametrize("x_dtype", ["float32", "int64"])
def test_setitem_with_a_tensor_of_another_dtype(torch, kind, x_dtype):
    """Through index tensors PyTorch's index_put_ refuses a value of another dtype
    (RuntimeError 'Index put requires the source and destination dtypes match') save one mask
    with a one-element value; basic indices cast. kiln cast in every case."""
    values = [("int64", [3]), ("float64", [3.0]), ("bool", [True]), ("float16", 3.0),
              ("int64", 3), ("int64", [3, 4])]  # fmt: skip
    for dtype, value in values:

        def scenario(lib, dtype=dtype, value=value):
            shape = (2, 4) if kind in TWO_ROWS else (4,)
            x = lib.zeros(shape, dtype=getattr(lib, x_dtype))
            x[SETITEM_INDEX_KINDS[kind](lib)] = lib.tensor(value, dtype=getattr(lib, dtype))
            return x

        check(torch, scenario)
        check_compiled(torch, lambda lib, v=value, d=dtype: (
            lib.zeros((2, 4) if kind in TWO_ROWS else (4,), dtype=getattr(lib, x_dtype)),
            lib.tensor(v, dtype=getattr(lib, d))), lambda lib, x, v: _set_copy(
                x, SETITEM_INDEX_KINDS[kind](lib), v))  # fmt: skip
