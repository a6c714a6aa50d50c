"""PyTorch's tensor creation tests (test_tensor_creation_ops.py) as an oracle: the dtype
`tensor`/`as_tensor` infer from Python data, NumPy arrays and 0-d tensors; `arange`, `range`,
`linspace` and `logspace` (dtype inference, float and negative steps, the length's rounding,
integer dtypes with float ends); `full` and `full_like` inferring the dtype from the fill
value; the size forms of `zeros`/`ones`/`empty`; `*_like` with `dtype=`; `eye`;
`tril_indices`/`triu_indices`; `vander`; `set_default_dtype`'s effect on all of these. Each
behaviour is a scenario of its own (pt_oracle.py runs it on torch and on kiln, eagerly and under
`kn.compile`, comparing values, dtypes, shapes and exception types).
test_port_pt_creation_random.py has the random factories and the stacking ops.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios

import kiln as kn

nan, inf = float("nan"), float("inf")

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- tensor()/as_tensor(): the dtype inferred from Python data ------------------------------


@case("tensor_infers_from_mixed_scalars")
def _(lib):
    return (lib.tensor([True, 1]), lib.tensor([True, 1.5]), lib.tensor([1, 2.5]),
            lib.tensor([1, 2j]), lib.tensor([True, 2j]), lib.tensor([[1, 2], [3.0, 4]]),
            lib.tensor(3), lib.tensor(3.5), lib.tensor(True), lib.tensor(1j),
            lib.tensor((1, 2.5)), lib.tensor(range(4)))  # fmt: skip


@case("tensor_empty_lists")
def _(lib):
    return lib.tensor([]), lib.tensor([[]]), lib.tensor([[], []]), lib.as_tensor([])


@case("tensor_of_0d_tensors")
def _(lib):
    i8 = lib.tensor(1, dtype=lib.int8)
    return (lib.tensor([lib.tensor(1), lib.tensor(2)]), lib.tensor([lib.tensor(1.5), 2]),
            lib.tensor([i8, i8]), lib.tensor([i8, 2]),
            lib.tensor([lib.tensor(1.0, dtype=lib.float64), 2.5]),
            lib.tensor([lib.tensor(1.0, dtype=lib.float16), 2.5]),
            lib.as_tensor([lib.tensor(1.5), lib.tensor(2.5)]))  # fmt: skip


@case("tensor_of_numpy_scalars")
def _(lib):
    return (lib.tensor(np.float64(2.5)), lib.tensor(np.int32(2)), lib.tensor(np.bool_(True)),
            lib.tensor([np.float64(2.5), 1]), lib.tensor([np.float32(2.5), 1]),
            lib.tensor([np.int8(2), 1]), lib.tensor([np.float16(2.5), 1]))  # fmt: skip


@case("tensor_of_numpy_arrays_keeps_their_dtype")
def _(lib):
    kinds = (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32)
    kinds += (np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)
    return [lib.tensor(np.array([1, 0, 1], kind)) for kind in kinds] + [
        lib.as_tensor(np.array([[1, 2]], kind)) for kind in kinds
    ]


@case("tensor_dtype_casts")
def _(lib):
    return (lib.tensor([1, 2], dtype=lib.float64), lib.tensor([1.7, -2.7], dtype=lib.int32),
            lib.tensor([1.5, 0], dtype=lib.bool), lib.tensor([[1, 2]], dtype=lib.uint8),
            lib.tensor([-1], dtype=lib.uint8), lib.tensor([1e300], dtype=lib.float32),
            lib.tensor(lib.tensor([1, 2]), dtype=lib.float16),
            lib.as_tensor(np.array([1, 2], np.int16), dtype=lib.float32),
            lib.as_tensor(lib.tensor([1, 2]), dtype=lib.float32),
            lib.as_tensor(3.5, dtype=lib.float64))  # fmt: skip


@case("tensor_python_int_limits")
def _(lib):
    return (
        lib.tensor(2**63 - 1),
        lib.tensor(-(2**63)),
        lib.tensor([2**63 - 1, 1]),
        lib.tensor([1e300]),
    )


@case("tensor_int_beyond_int64")
def _(lib):
    return lib.tensor(2**64)


@case("tensor_ragged_list")
def _(lib):
    return lib.tensor([[1, 2], [3]])


@case("tensor_of_strings")
def _(lib):
    return lib.tensor([1, "a"])


@case("tensor_uint8_overflow")
def _(lib):
    return lib.tensor(300, dtype=lib.uint8)


for _name, _data, _dtype in (
    ("tensor_with_none", [1, None], None),
    ("tensor_of_none", None, None),
    ("tensor_nan_into_int32", [nan], "int32"),
    ("tensor_infinity_into_int32", [inf], "int32"),
    ("tensor_float_beyond_int64", [1e20], "int64"),
    ("tensor_float_beyond_uint8", [300.0], "uint8"),
    ("tensor_negative_float_into_uint8", [-1.0], "uint8"),
    ("tensor_float_beyond_int32", [3e9], "int32"),
):
    case(_name)(lambda lib, d=_data, k=_dtype: lib.tensor(d, dtype=k and getattr(lib, k)))


@case("legacy_constructors")
def _(lib):
    return (lib.Tensor(lib.tensor([1.0])), lib.Tensor(2, 3, device="cpu").shape,
            lib.Tensor([1, 2], device="cpu"),
            lib.Tensor(lib.Size([2, 3]), device="cpu").shape, lib.tensor([1]).new(lib.tensor([1])),
            lib.tensor([1.0]).new(2, device="cpu").shape, lib.Tensor())  # fmt: skip


case("legacy_tensor_of_a_tensor_with_device")(lambda lib: lib.Tensor(lib.tensor([1]), device="cpu"))
case("legacy_new_of_a_tensor_with_device")(
    lambda lib: lib.tensor([1]).new(lib.tensor([1]), device="cpu")
)


@case("from_numpy_keeps_dtype_and_shape")
def _(lib):
    return (lib.from_numpy(np.array([1, 2], np.uint16)), lib.from_numpy(np.array(2.5)),
            lib.from_numpy(np.array([1, 2, 3], np.int8)[::2]), lib.from_numpy(np.zeros((2, 3)).T),
            lib.from_numpy(np.zeros((0, 3), np.float16)))  # fmt: skip


@case("from_numpy_of_a_list")
def _(lib):
    return lib.from_numpy([1, 2])


@case("from_numpy_of_strings")
def _(lib):
    return lib.from_numpy(np.array(["a"]))


# -- arange / range -------------------------------------------------------------------------


@case("arange_infers_dtype")
def _(lib):
    return (lib.arange(5), lib.arange(5.0), lib.arange(1, 4, 0.5), lib.arange(1, 2.5),
            lib.arange(np.int64(4)), lib.arange(np.float32(4)), lib.arange(lib.tensor(5)),
            lib.arange(lib.tensor(5.0)), lib.arange(lib.tensor(1), lib.tensor(4.0)))  # fmt: skip


@case("arange_float_and_negative_steps")
def _(lib):
    return (lib.arange(0, 1, 0.1), lib.arange(10, 0, -3), lib.arange(10, 0, -3.5),
            lib.arange(0, -1, -0.1), lib.arange(0, 1, 1 / 3), lib.arange(-1, 1, 0.2),
            lib.arange(0.0, 1.0, 0.1, dtype=lib.float64), lib.arange(1e9, 1e9 + 10))  # fmt: skip


@case("arange_integer_dtype_with_float_ends")
def _(lib):
    return (lib.arange(0, 10, 3, dtype=lib.float32), lib.arange(0.5, 5.5, dtype=lib.int64),
            lib.arange(-0.5, 3.7, 1.2, dtype=lib.int32), lib.arange(5, dtype=lib.uint8),
            lib.arange(300, dtype=lib.uint8), lib.arange(3, dtype=lib.float16))  # fmt: skip


@case("arange_empty_and_keywords")
def _(lib):
    return (lib.arange(0, 0), lib.arange(5, 0), lib.arange(start=1, end=4),
            lib.arange(1, 4, step=2), lib.arange(end=4))  # fmt: skip


@case("arange_zero_step")
def _(lib):
    return lib.arange(0, 5, 0)


@case("arange_step_against_the_bounds")
def _(lib):
    return lib.arange(0, 10, -1)


@case("arange_to_infinity")
def _(lib):
    return lib.arange(0, inf)


@case("arange_to_nan")
def _(lib):
    return lib.arange(0, nan)


@case("arange_integer_step_truncating_to_zero")
def _(lib):
    return lib.arange(0, 1, 0.3, dtype=lib.int64)


@case("arange_bool")
def _(lib):
    return lib.arange(5, dtype=lib.bool)


@case("range_includes_the_end")
def _(lib):
    return (lib.range(1, 4), lib.range(1, 4, 0.5), lib.range(0, 1, 0.1), lib.range(4, 1, -1),
            lib.range(1, 4, dtype=lib.int64), lib.range(1.5, 4))  # fmt: skip


# -- linspace / logspace --------------------------------------------------------------------


@case("linspace_forms")
def _(lib):
    return (lib.linspace(0, 1, 5), lib.linspace(0, 1, 1), lib.linspace(0, 1, 0),
            lib.linspace(1, 0, 4), lib.linspace(2, 2, 3), lib.linspace(0, 5, steps=3),
            lib.linspace(0, 1, 5, dtype=lib.float64), lib.linspace(-1e4, 1e4, 1001),
            lib.linspace(lib.tensor(0), lib.tensor(1), 3),
            lib.linspace(lib.tensor(0.0, dtype=lib.float64), 1, 3))  # fmt: skip


@case("linspace_complex")
def _(lib):
    return lib.linspace(0, 1j, 3), lib.linspace(0, 1, 3, dtype=lib.complex64)


@case("linspace_integer_dtypes")
def _(lib):
    return (lib.linspace(0, 10, 4, dtype=lib.int64), lib.linspace(-10, 10, 7, dtype=lib.int64),
            lib.linspace(0, 10, 6, dtype=lib.int32), lib.linspace(0, 255, 4, dtype=lib.uint8),
            lib.linspace(-5, 5, 3, dtype=lib.int8))  # fmt: skip


@case("linspace_integer_dtype_with_float_ends")
def _(lib):
    # the ends are truncated to the integer dtype before the step is computed
    return (lib.linspace(0.5, 5.5, 4, dtype=lib.int64), lib.linspace(-2.7, 5.5, 5, dtype=lib.int32),
            lib.linspace(0.9, 9.9, 10, dtype=lib.int16))  # fmt: skip


@case("linspace_negative_steps")
def _(lib):
    return lib.linspace(0, 1, -1)


@case("linspace_bool")
def _(lib):
    return lib.linspace(0, 1, 3, dtype=lib.bool)


@case("logspace_forms")
def _(lib):
    return (lib.logspace(0, 2, 3), lib.logspace(0, 2, 3, base=2), lib.logspace(0, 2, 1),
            lib.logspace(0, 2, 0), lib.logspace(0, 2, 3, base=-2.0), lib.logspace(-1, 1, 3),
            lib.logspace(0, 2, 3, base=2, dtype=lib.float64), lib.logspace(0, 2, 3, base=0.5),
            lib.logspace(lib.tensor(0), 2, 3), lib.logspace(0, 2, steps=3, base=10.0))  # fmt: skip


@case("logspace_integer_dtypes")
def _(lib):
    return (lib.logspace(0, 3, 4, dtype=lib.int64),
            lib.logspace(0, 10, 11, base=2, dtype=lib.int32),
            lib.logspace(0, 2, 3, dtype=lib.uint8))  # fmt: skip


@case("logspace_integer_dtype_with_float_ends")
def _(lib):
    # the ends are truncated to the integer dtype before the exponents are spaced
    return (lib.logspace(0.5, 2, 4, dtype=lib.int64),
            lib.logspace(-0.5, 2.9, 4, base=3, dtype=lib.int64))  # fmt: skip


# -- full / full_like: the dtype from the fill value ----------------------------------------


@case("full_infers_dtype_from_the_value")
def _(lib):
    return (lib.full((2, 2), 1), lib.full((2, 2), 1.5), lib.full((2, 2), True), lib.full((2,), 1j),
            lib.full([2, 3], 2), lib.full(lib.Size([2, 3]), 2), lib.full((), 3),
            lib.full((2,), lib.tensor(3)), lib.full((2,), lib.tensor(3.5, dtype=lib.float64)),
            lib.full((2,), np.float64(3.5)), lib.full((2,), np.int32(3)),
            lib.full(size=(2,), fill_value=3))  # fmt: skip


@case("full_with_dtype")
def _(lib):
    return (lib.full((2,), 7, dtype=lib.float64), lib.full((2,), -1, dtype=lib.uint8),
            lib.full((2,), 1.5, dtype=lib.int64))  # fmt: skip


@case("full_overflowing_dtype")
def _(lib):
    return lib.full((2,), 300, dtype=lib.uint8)


@case("full_like_keeps_dtype_unless_given")
def _(lib):
    i32, f32, u8 = lib.zeros(2, dtype=lib.int32), lib.zeros(2), lib.zeros(2, dtype=lib.uint8)
    return (lib.full_like(i32, 1.7), lib.full_like(f32, 3), lib.full_like(f32, True),
            lib.full_like(i32, 3, dtype=lib.float64), lib.full_like(u8, -1),
            lib.full_like(lib.zeros(2, dtype=lib.complex64), 1j))  # fmt: skip


# -- zeros / ones / empty: the size forms ---------------------------------------------------


@case("size_forms")
def _(lib):
    return (lib.zeros(2, 3), lib.zeros((2, 3)), lib.zeros([2, 3]), lib.zeros(lib.Size([2, 3])),
            lib.zeros(()), lib.zeros([]), lib.zeros(0), lib.zeros(size=(2, 3)),
            lib.zeros(np.int64(3), 2), lib.ones(2, 3), lib.ones((2, 3), dtype=lib.bool),
            lib.ones(size=[2]), lib.ones(lib.Size()), lib.empty(2, 3).shape,
            lib.empty((2, 3), dtype=lib.int8).dtype, lib.empty(lib.Size([0, 3])).shape,
            lib.empty(size=(2,)).shape, lib.rand(2, 3).shape, lib.rand((2, 3)).dtype,
            lib.rand([2, 3], dtype=lib.float64).dtype, lib.randn(lib.Size([2])).shape,
            lib.randn(size=(2, 3)).shape, lib.randn(()).shape)  # fmt: skip


@case("size_of_a_0d_int_tensor")
def _(lib):
    return lib.zeros(lib.tensor(3)), lib.ones(lib.tensor(2), 3)


@case("size_negative")
def _(lib):
    return lib.zeros(2, -1)


@case("size_float")
def _(lib):
    return lib.zeros(2.0)


@case("size_float_in_a_tuple")
def _(lib):
    return lib.zeros((2, 3.0))


@case("like_with_dtype")
def _(lib):
    i32, x = lib.ones(2, dtype=lib.int32), lib.ones(2, 3)
    return (lib.zeros_like(i32), lib.zeros_like(i32, dtype=lib.float64),
            lib.ones_like(x, dtype=lib.bool), lib.empty_like(x, dtype=lib.int16).dtype,
            lib.rand_like(x, dtype=lib.float64).dtype, lib.randn_like(x, dtype=lib.complex64).dtype,
            lib.randint_like(x, 5).dtype, lib.randint_like(x, 5, dtype=lib.int32).dtype,
            lib.randint_like(x, 2, 5).shape, lib.randint_like(lib.ones(2, dtype=lib.int8), 5).dtype,
            lib.zeros_like(x.t()).stride(), lib.empty_like(x.t()).stride(),
            lib.ones_like(x.t(), memory_format=lib.contiguous_format).stride())  # fmt: skip


@case("new_factories")
def _(lib):
    i32, f64 = lib.zeros(2, dtype=lib.int32), lib.zeros(2, dtype=lib.float64)
    return (i32.new_zeros(3), i32.new_ones((3, 2)), i32.new_full((3,), 2.5),
            i32.new_full((3,), 2.5, dtype=lib.float64), i32.new_tensor([1.5, 2]),
            f64.new_tensor([1, 2]), f64.new_tensor(np.array([1, 2], np.int16)),
            f64.new_empty(2, 3).dtype, f64.new_ones(2, 3, dtype=lib.int8),
            f64.new_zeros(lib.Size([1])), f64.new_zeros([]),
            i32.new_empty_strided((2, 3), (1, 2)).stride())  # fmt: skip


# -- eye, tril_indices / triu_indices, vander -----------------------------------------------


@case("eye_forms")
def _(lib):
    return (lib.eye(3), lib.eye(2, 4), lib.eye(4, 2), lib.eye(0), lib.eye(3, 0),
            lib.eye(3, dtype=lib.int64), lib.eye(3, dtype=lib.bool),
            lib.eye(2, 3, dtype=lib.complex64),
            lib.eye(n=2, m=3))  # fmt: skip


@case("eye_negative_n")
def _(lib):
    return lib.eye(-1)


@case("eye_negative_m")
def _(lib):
    return lib.eye(2, -1)


@case("tri_indices_with_offsets")
def _(lib):
    shapes = ((3, 3), (4, 3), (3, 5), (1, 4), (5, 1), (0, 3), (3, 0), (0, 0))
    return [f(r, c, off) for f in (lib.tril_indices, lib.triu_indices) for r, c in shapes
            for off in (-10, -2, -1, 0, 1, 2, 10)]  # fmt: skip


@case("tri_indices_dtype_and_keywords")
def _(lib):
    return (lib.tril_indices(3, 3, dtype=lib.int32), lib.triu_indices(5, 2, offset=1),
            lib.tril_indices(row=3, col=2, offset=0))  # fmt: skip


@case("tri_indices_float_dtype")
def _(lib):
    return lib.tril_indices(3, 3, dtype=lib.float32)


@case("tri_indices_negative_row")
def _(lib):
    return lib.tril_indices(-1, 3)


@case("vander_dtypes")
def _(lib):
    return (lib.vander(lib.tensor([1, 2, 3]), 4, True), lib.vander(lib.tensor([True, False])),
            lib.vander(lib.tensor([1.5, 2]), 3), lib.vander(lib.tensor([1, 2], dtype=lib.uint8), 3),
            lib.vander(lib.tensor([1, 2], dtype=lib.int8), 3),
            lib.vander(lib.tensor([]), 0))  # fmt: skip


@case("vander_complex")
def _(lib):
    return lib.vander(lib.tensor([1 + 1j, 2]), 3), lib.vander(
        lib.tensor([1j, 2 - 1j]), increasing=True
    )


@case("vander_negative_n")
def _(lib):
    return lib.vander(lib.tensor([1, 2, 3]), N=-1)


@case("vander_of_a_matrix")
def _(lib):
    return lib.vander(lib.ones(2, 2))


# -- fill_ ---------------------------------------------------------------------------------


@case("fill_value_casts")
def _(lib):
    return (lib.tensor([1, 2], dtype=lib.int32).fill_(2.7), lib.empty(2, dtype=lib.uint8).fill_(-1),
            lib.empty(2, dtype=lib.bool).fill_(2),
            lib.empty(2).fill_(lib.tensor(3, dtype=lib.int64)))  # fmt: skip


@case("fill_of_a_1d_tensor")
def _(lib):
    return lib.empty(2).fill_(lib.tensor([3.0]))


# -- set_default_dtype ---------------------------------------------------------------------


def _under_default(lib, dtype, make):
    previous = lib.get_default_dtype()
    lib.set_default_dtype(dtype)
    try:
        return make()
    finally:
        lib.set_default_dtype(previous)


def _factories(lib, complex_too=True):
    made = (lib.tensor([1.5, 2]), lib.tensor(1.5), lib.tensor([1, 2]), lib.tensor([True, 1.5]),
            lib.tensor(np.array([1.5], np.float32)), lib.as_tensor([1.5]), lib.arange(3.0),
            lib.arange(0, 1, 0.25), lib.arange(3), lib.range(0, 2), lib.linspace(0, 1, 3),
            lib.logspace(0, 1, 3), lib.full((2,), 1.5), lib.full((2,), 1), lib.zeros(2),
            lib.ones(2),
            lib.empty(2).dtype, lib.rand(2).dtype, lib.randn(2).dtype, lib.randint(5, (2,)).dtype,
            lib.eye(2), lib.normal(0.0, 1.0, (2,)).dtype, lib.empty_strided((2,), (1,)).dtype,
            lib.tensor([1, 2]) * 1.5, lib.tensor([1, 2]) / 2, lib.sqrt(lib.tensor([4])),
            lib.tensor([]).dtype, lib.zeros(1).new_tensor([1.5]), lib.scalar_tensor(1),
            lib.full_like(lib.ones(2, dtype=lib.int64), 1.5))  # fmt: skip
    if not complex_too:  # (float16's: PyTorch's complex32, which kiln lacks)
        return made
    return made + (lib.tensor([1j]), lib.linspace(0, 1j, 3), lib.full((2,), 1j),
                   lib.complex(lib.zeros(1), lib.zeros(1)))  # fmt: skip


@case("default_dtype_float64")
def _(lib):
    return _under_default(lib, lib.float64, lambda: _factories(lib))


@case("default_dtype_float16")
def _(lib):
    return _under_default(lib, lib.float16, lambda: _factories(lib, complex_too=False))


@case("default_dtype_integer_refused")
def _(lib):
    return _under_default(lib, lib.int64, lambda: None)


# -- eager-only scenarios, and differences left ---------------------------------------------

SCENARIOS.eager_only.update({})

SCENARIOS.xfail.update({})


# -- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


def test_from_numpy_shares_memory_both_ways(torch):
    for lib in (torch, kn):
        a = np.zeros(3, np.float32)
        t = lib.from_numpy(a)
        a[0] = 5.0
        t[1] = 7.0
        assert a.tolist() == [5.0, 7.0, 0.0] and t.tolist() == [5.0, 7.0, 0.0]


def test_as_tensor_shares_an_array_of_its_dtype(torch):
    for lib in (torch, kn):
        a = np.zeros(3, np.float64)
        shared, copied = lib.as_tensor(a), lib.as_tensor(a, dtype=lib.float32)
        a[0] = 2.0
        assert shared[0].item() == 2.0 and copied[0].item() == 0.0


def test_tensor_copies_its_data(torch):
    for lib in (torch, kn):
        a = np.zeros(3, np.float32)
        t = lib.tensor(a)
        a[0] = 2.0
        assert t[0].item() == 0.0


def test_creation_reprs_match(torch):
    def made(lib):
        return (lib.arange(3), lib.arange(3.0), lib.zeros(2, dtype=lib.int32), lib.tensor([]),
                lib.empty(0, 3), lib.tensor([True, False]), lib.eye(2, dtype=lib.float64),
                lib.tensor([1j, 2]), lib.full((2,), 7, dtype=lib.uint8), lib.tensor(2.5),
                lib.zeros(2, 0), lib.empty(0, dtype=lib.int64), lib.ones(2, dtype=lib.float16),
                lib.arange(3, dtype=lib.bfloat16), lib.tensor([1e10, 1.5]),
                lib.tensor([1e-10, 1.0]),
                lib.tensor([1, -2], dtype=lib.int8), lib.linspace(0, 1, 3, dtype=lib.float64),
                lib.tensor(True), lib.tensor([1 + 2j, 3.5j], dtype=lib.complex128),
                lib.arange(12).reshape(3, 4), lib.tensor([nan, inf, -inf]),
                lib.zeros(2, requires_grad=True), lib.arange(2000), lib.tensor([0.1, 100000.0]),
                lib.tensor([], dtype=lib.complex64), lib.ones(1, 1, 1), lib.tensor([123456789.0]),
                lib.tensor(2.5, dtype=lib.float16))  # fmt: skip

    for k, t in zip(made(kn), made(torch)):
        assert repr(k).replace("kiln", "torch") == repr(t)


SPACED = [(-46.64, 22.97, 103), (0, 1, 4), (1, 0, 7), (-2.0, 39.0, 124), (-52, 52, 19),
          (0.5, 5.5, 4), (2.99505, 0.9142, 47), (-10, 10, 1001), (3, 3, 5), (-1.7, 2.3, 1),
          (0.1, 0.7, 2), (-0.3, 0.9, 250)]  # fmt: skip
SPACED_DTYPES = ("float16", "bfloat16", "float32", "float64", "int64", "int32", "int16", "uint8")


@pytest.mark.parametrize("dtype", SPACED_DTYPES)
def test_linspace_and_logspace_values_bit_for_bit(torch, dtype):
    # PyTorch's kernels: ends converted to the dtype, halfway from each end, fused
    # multiply-adds (kiln/eager/spacing.py); kiln's float64 values were off by an ulp
    # (float16: 0.6665 for 0.6670) and its integer ones by one
    for start, end, steps in SPACED:
        if dtype == "uint8":
            start, end = abs(start), abs(end)
        for fn, ends, kw in (("linspace", (start, end), {}),
                             ("logspace", (start / 20, end / 20), {"base": 3.0}),
                             ("logspace", (start / 20, end / 20), {"base": 10.0})):  # fmt: skip
            t = getattr(torch, fn)(*ends, steps, dtype=getattr(torch, dtype), **kw)
            k = getattr(kn, fn)(*ends, steps, dtype=getattr(kn, dtype), **kw)
            where = (fn, ends, steps, kw)
            assert k.dtype == getattr(kn, dtype), where
            np.testing.assert_array_equal(k.float().numpy(), t.float().numpy(), err_msg=str(where))


ARANGES = [(-17.0, -0.49, 0.3), (2040, 2100, 1.0), (1e6, 1e6 + 50, 0.1), (0, 1000, 0.1),
           (0, 300, 0.7), (5, -3, -0.25), (-1, 1, 1 / 3)]  # fmt: skip
# two ulps of the range's largest value: PyTorch's vectorized kernel rounds its values
# through a vector's first one, kiln each value once
ARANGE_RTOL = {"float16": 2.0**-9, "bfloat16": 2.0**-6, "float32": 2.0**-22, "float64": 2.0**-51}


@pytest.mark.parametrize("dtype", sorted(ARANGE_RTOL))
def test_arange_values_are_not_accumulated_in_the_dtype(torch, dtype):
    # kiln's float arange summed its step in the dtype (NumPy's arange): bfloat16's
    # arange(2040, 2100) ran 56 off, float32's arange(1e6, 1e6 + 50, 0.1) 12.5
    for start, end, step in ARANGES:
        if dtype == "float16" and abs(start) > 6e4:
            continue
        t = torch.arange(start, end, step, dtype=getattr(torch, dtype)).double().numpy()
        k = kn.arange(start, end, step, dtype=getattr(kn, dtype)).double().numpy()
        assert k.shape == t.shape, (start, end, step)
        scale = max(abs(start), abs(end), abs(step))  # (an ulp of the range's largest value)
        assert (np.abs(k - t) <= ARANGE_RTOL[dtype] * scale).all(), (start, end, step, k, t)
