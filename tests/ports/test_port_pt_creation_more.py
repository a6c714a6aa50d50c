"""PyTorch's tensor creation tests (test_tensor_creation_ops.py), continued: integer
`linspace` near the dtype's limits, big Python numbers and float-to-integer conversions of
created tensors, `requires_grad=` of the factories (refused on integer dtypes), `stack` and
`triu` forms and `repeat_interleave`. As test_port_pt_creation.py, each behaviour is a
scenario (pt_oracle.py runs it on torch and on kiln, eagerly and under `kn.compile`).

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios

nan, inf = float("nan"), float("inf")

SCENARIOS = Scenarios()
case = SCENARIOS.case


def refuses(name, make):
    """A scenario `name` whose call `make(lib)` torch refuses."""
    case(name)(make)


# -- conversions of created values, requires_grad, repeat_interleave -----------------------


@case("large_integer_linspace")
def _(lib):
    return (
        lib.linspace(-(2**31), (2**31 - 1) & ~0xFFF, 15, dtype=lib.int32),
        lib.linspace(-(2**63), (2**63 - 1) & ~0xFFF, 15, dtype=lib.int64),
    )


@case("tensor_of_big_python_numbers")
def _(lib):
    values = (2**24 + 1, 2**53 + 1, 2**63 - 1, 2**64 - 1, 2**64, -1e500, 1e500)
    return [lib.tensor(v, dtype=d) for d in (lib.float32, lib.float64) for v in values]


@case("float_to_int_conversions")
def _(lib):
    big = 3.4028234663852886e38
    finite = lib.tensor([-big, -2, -1.5, -0.5, 0, 0.5, 1.5, 2, big])
    special = lib.tensor([-inf, inf, nan])
    return [
        t.to(d)
        for t in (finite, special)
        for d in (lib.bool, lib.uint8, lib.int8, lib.int16, lib.int32, lib.int64)
    ]


@case("tri_indices_bfloat16")
def _(lib):
    return lib.tril_indices(4, 3, 1, dtype=lib.bfloat16).float(), lib.triu_indices(
        4, 3, 1, dtype=lib.bfloat16
    ).float()


@case("new_factories_requires_grad")
def _(lib):
    x = lib.randn(10)
    return [
        getattr(x, name)(*args, requires_grad=flag).requires_grad
        for name, args in (
            ("new_full", [(10,), 1]),
            ("new_empty", [(10,)]),
            ("new_zeros", [(10,)]),
            ("new_ones", [(10,)]),
        )
        for flag in (True, False)
    ]


for name, make in {
    "new_full_integer_requires_grad": lambda lib: lib.randint(10, (10,)).new_full(
        (10,), 1, requires_grad=True
    ),
    "new_empty_integer_requires_grad": lambda lib: lib.randint(10, (10,)).new_empty(
        (10,), requires_grad=True
    ),
    "zeros_integer_requires_grad": lambda lib: lib.zeros(2, dtype=lib.int64, requires_grad=True),
    "tensor_integer_requires_grad": lambda lib: lib.tensor([1, 2], requires_grad=True),
    "arange_integer_requires_grad": lambda lib: lib.arange(3, requires_grad=True),
    "full_integer_requires_grad": lambda lib: lib.full((2,), 1, requires_grad=True),
    "randperm_requires_grad": lambda lib: lib.randperm(3, requires_grad=True),
    "zeros_like_integer_requires_grad": lambda lib: lib.zeros_like(
        lib.ones(2, dtype=lib.int64), requires_grad=True
    ),
    "zeros_out_of_another_dtype": lambda lib: lib.zeros(
        (2, 3), dtype=lib.float32, out=lib.zeros(2, 3, dtype=lib.float64)
    ),
    "cat_ranks_differ_3": lambda lib: lib.cat(
        [lib.ones(2, 1), lib.ones(2, 1, 1), lib.ones(2, 1, 1)]
    ),
    "cat_sizes_differ_off_dim": lambda lib: lib.cat(
        [lib.ones(2, 1, 2), lib.ones(2, 1, 1), lib.ones(2, 2, 1)], dim=1
    ),
    "cat_with_none": lambda lib: lib.cat([lib.ones(2), None]),
    "triu_in_place_of_an_expanded_tensor": lambda lib: (
        lib.ones(3, 1, 3, 3).expand(3, 3, 3, 3).triu_(2)
    ),
    "repeat_interleave_of_a_matrix_alone": lambda lib: lib.repeat_interleave(
        lib.arange(4).reshape(2, 2)
    ),
    "repeat_interleave_float_counts": lambda lib: lib.repeat_interleave(lib.arange(4.0)),
    "repeat_interleave_negative_counts": lambda lib: lib.repeat_interleave(lib.tensor([1, 2, -1])),
    "repeat_interleave_counts_too_many": lambda lib: lib.repeat_interleave(
        lib.ones(2, 2), lib.tensor([1, 2, 3]), dim=0
    ),
    "repeat_interleave_2d_counts": lambda lib: lib.repeat_interleave(
        lib.ones(3, 2), lib.ones(3, 3, dtype=lib.int64), dim=0
    ),
}.items():
    refuses(name, make)


@case("stack_and_triu_forms")
def _(lib):
    x = lib.ones(3, 1, 3, 3, dtype=lib.long)
    h = lib.arange(24.0).reshape(2, 3, 4).half()
    i = lib.arange(24).reshape(2, 3, 4).int()
    return (
        x.expand(3, 3, 3, 3).triu(2),
        lib.stack((h, h + 1, h + 2), 1, out=lib.empty(2, 3, 3, 4, dtype=lib.half)),
        lib.stack((i, i + 1, i + 2), -3, out=lib.empty(2, 3, 3, 4, dtype=lib.int32)),
        [lib.stack((i, i, i), d).shape for d in range(-4, 4)],
    )


@case("repeat_interleave_forms")
def _(lib):
    y = lib.tensor([[1, 2], [3, 4]])
    return (
        lib.repeat_interleave(lib.tensor([0, 1, 2, 3])),
        lib.repeat_interleave(y, 2),
        lib.repeat_interleave(y, lib.tensor(2)),
        lib.repeat_interleave(y, lib.tensor([2])),
        lib.repeat_interleave(y, 3, dim=1),
        lib.repeat_interleave(y, lib.tensor([1, 2]), dim=0),
        lib.repeat_interleave(lib.zeros(5, 0), repeats=3, dim=1),
        lib.repeat_interleave(lib.tensor([], dtype=lib.int64), lib.tensor([], dtype=lib.int64)),
    )


# -- scalar casts, meshgrid/cartesian_prod/combinations, out= overlaps, random_ bounds -----


@case("scalar_casts")
def _(lib):
    return (int(lib.tensor([1.5])), float(lib.zeros(1, 1, 1, 1)), complex(lib.tensor([1.5])),
            complex(lib.tensor(1.5j)), int(lib.tensor([1.0, 2.0, 3.0])[2:]))  # fmt: skip


refuses("int_of_an_empty_tensor", lambda lib: int(lib.Tensor([])))
refuses("float_of_two_values", lambda lib: float(lib.Tensor([1, 2])))
refuses("complex_of_a_matrix", lambda lib: complex(lib.Tensor([[1, 2], [3, 4]])))
refuses("float_of_a_complex", lambda lib: float(lib.tensor(1.5j)))
refuses("int_of_a_complex", lambda lib: int(lib.tensor(1.5j)))


@case("meshgrid_0d_and_1d")
def _(lib):
    a, b, c = lib.tensor(1), lib.tensor([1, 2, 3]), lib.tensor([1, 2])
    return (lib.meshgrid([a, b, c]), lib.meshgrid(a, b, c, indexing="xy"),
            lib.meshgrid([a, b, c], indexing="ij"), lib.meshgrid(a, a, a, indexing="xy"),
            lib.meshgrid(lib.ones(3), lib.tensor(1.0), lib.ones(7), indexing="xy"))  # fmt: skip


refuses("meshgrid_empty_indexing", lambda lib: lib.meshgrid(lib.tensor([1, 2]), indexing=""))
refuses("meshgrid_of_a_matrix", lambda lib: lib.meshgrid(lib.tensor([[1, 2], [3, 4]])))


@case("cartesian_prod_and_combinations")
def _(lib):
    a, b, c, e = lib.tensor([1]), lib.tensor([1, 2, 3]), lib.tensor([1, 2]), lib.empty(0)
    return (lib.cartesian_prod(a, b, c), lib.cartesian_prod(a, b, c, e.long()),
            lib.cartesian_prod(b),
            [lib.combinations(b, r=r) for r in range(6)],
            [lib.combinations(b, r=r, with_replacement=True) for r in range(4)],
            lib.combinations(e), lib.combinations(e, with_replacement=True))  # fmt: skip


refuses("linspace_out_overlapping", lambda lib: lib.linspace(1, 10, 10, out=lib.rand(1).expand(10)))
refuses("logspace_out_overlapping", lambda lib: lib.logspace(1, 10, 10, out=lib.rand(1).expand(10)))


@case("legacy_constructors_of_numpy_arrays")
def _(lib):
    kinds = (
        np.float64,
        np.float32,
        np.float16,
        np.int64,
        np.int32,
        np.int16,
        np.int8,
        np.uint8,
        np.bool_,
    )
    return [ctor(np.array([1, 2, 3, 4], dtype=k)) for k in kinds
            for ctor in (lib.DoubleTensor, lib.FloatTensor, lib.HalfTensor)]  # fmt: skip


@case("random_in_place_bounds")
def _(lib):
    def drawn(dtype, *args):
        t = lib.empty(300, dtype=dtype).fill_(-1 if dtype != lib.bool else 0).random_(*args)
        return t.dtype, bool(t.min() >= (args[0] if len(args) > 1 else 0))

    return (
        [
            drawn(d, 1, 4)
            for d in (lib.float32, lib.float64, lib.int8, lib.int16, lib.int32, lib.int64)
        ]
        + [drawn(d, 4) for d in (lib.float32, lib.int8)]
        + [drawn(lib.bool), drawn(lib.bool, 0, 2), drawn(lib.bool, 1, 2)]
    )


refuses("random_bool_from_below", lambda lib: lib.empty(3, dtype=lib.bool).random_(-1, 1))
refuses("random_bool_to_beyond", lambda lib: lib.empty(3, dtype=lib.bool).random_(0, 3))
refuses("random_bool_empty_range", lambda lib: lib.empty(3, dtype=lib.bool).random_(1, 1))
refuses("random_int8_from_below", lambda lib: lib.empty(3, dtype=lib.int8).random_(-129, 0))
refuses("random_int8_to_beyond", lambda lib: lib.empty(3, dtype=lib.int8).random_(0, 129))
refuses("random_uint8_negative_from", lambda lib: lib.empty(3, dtype=lib.uint8).random_(-1, 5))
refuses("random_int32_to_beyond", lambda lib: lib.empty(3, dtype=lib.int32).random_(2**40))
refuses("random_reversed", lambda lib: lib.empty(3, dtype=lib.int32).random_(5, 3))
refuses("random_complex", lambda lib: lib.empty(3, dtype=lib.complex64).random_())


refuses(
    "random_float16_to_beyond_its_range",
    lambda lib: lib.empty(3, dtype=lib.float16).random_(0, 70000),
)
refuses(
    "random_float16_from_below_its_range",
    lambda lib: lib.empty(3, dtype=lib.float16).random_(-(2**63), 0),
)
refuses(
    "randint_float16_beyond_its_range", lambda lib: lib.randint(0, 70000, (3,), dtype=lib.float16)
)


@case("random_full_ranges")
def _(lib):
    kinds = (lib.float32, lib.bfloat16, lib.int64, lib.uint8)
    return [lib.empty(3, dtype=d).random_(*args).dtype for d in kinds
            for args in ((-(2**63), 0), (0, 2**63 - 1))[: 1 if d == lib.uint8 else 2]]  # fmt: skip


@case("type_names")
def _(lib):
    kinds = (lib.float32, lib.int8, lib.bool, lib.complex64, lib.complex128, lib.bfloat16)
    names = [lib.empty(2, dtype=d).type().split(".", 1)[1] for d in kinds + (lib.uint16,)]
    return names, lib.tensor([]).type().split(".")[1], lib.empty(2).type(lib.DoubleTensor).dtype


@case("zeros_and_ones_out")
def _(lib):
    out = lib.zeros(3, 4)
    return (lib.zeros((3, 4), dtype=lib.float32, out=out),
            lib.zeros((3, 4), layout=lib.strided, out=out),
            lib.zeros(100, 100, out=lib.tensor(())), lib.ones(10, 10, out=lib.tensor(())),
            lib.zeros(2, 2, dtype=lib.bool), lib.zeros(1, 1, dtype=lib.half),
            lib.ones(1, 2, dtype=lib.bool))  # fmt: skip


refuses(
    "zeros_out_integer_dtype", lambda lib: lib.zeros((3, 4), dtype=lib.int64, out=lib.zeros(3, 4))
)
refuses("as_strided_negative_stride", lambda lib: lib.as_strided(lib.ones(3, 3), (1, 1), (2, -1)))


# -- tensor(): conversions to bool, inference among NumPy values, copies -----------------

F64_MAX = 1.7976931348623157e308


@case("tensor_to_bool")
def _(lib):
    b = lib.bool
    return (
        lib.tensor([-1, -1.1, 0, 1, 1.1], dtype=b),
        lib.tensor((-0.3, 0, 0.3, 1, 3 / 7), dtype=b),
        lib.tensor((nan, 0, -(2**63), 2**63 - 1, -(2**63) - 1), dtype=b),
        lib.tensor((2**63, 0, 2**64, 2**64 + 1, -F64_MAX), dtype=b),
        lib.tensor((F64_MAX, 0, F64_MAX + 1, -F64_MAX - 1, F64_MAX + 1e291), dtype=b),
        lib.tensor([1e-323, 1e-324, 0j, 1e-323j, 1e-324j, 1 + 2j, -1j], dtype=b),
        lib.tensor((1e323, -1e323, inf, -inf), dtype=b),
    )


@case("tensor_infers_among_numpy_values")
def _(lib):
    return (
        lib.tensor(()),
        lib.tensor(((7, 5), (9, 5.0))),
        lib.tensor(((5, 3 + 2j), (3, 5 + 4j))),
        lib.tensor(np.array(())),
        lib.tensor(np.array(5.0)),
        lib.tensor(np.array(5)),
        lib.tensor(((7, np.array(5)), (np.array(9), 5.0))),
        lib.tensor(((7, 5), (9, np.array(5.0)))),
        lib.tensor(((5, np.array(3)), (np.array(3), 5))),
        lib.tensor(((5, np.array(3, dtype=np.int8)), (np.array(3, dtype=np.uint8), 5))),
        lib.tensor([True, np.int8(3)]),
        lib.tensor([np.uint8(200), np.int8(-1)]),
        lib.tensor([np.complex64(1j), 1.5]),
        lib.tensor([lib.tensor(1.5, dtype=lib.float16), np.float32(1)]),
    )


@case("tensor_copies_keep_no_history")
def _(lib):
    s = lib.randn(5, 5, dtype=lib.double, requires_grad=True)
    one = lib.randn(1)
    flags = (
        lib.tensor(s),
        lib.tensor(s, requires_grad=True),
        one.new_tensor(s),
        one.new_tensor(s, requires_grad=True),
    )
    cast = lib.as_tensor(s, dtype=lib.float)
    return (
        [(t.is_leaf, t.requires_grad, t.dtype) for t in flags],
        lib.as_tensor(s) is s,
        cast.is_leaf,
        cast.requires_grad,
        cast.dtype,
    )


@case("new_tensor_forms")
def _(lib):
    u8 = lib.ByteTensor([1, 1])
    return (
        u8.new_tensor([1, 1]),
        u8.new_tensor([1, 1], dtype=lib.int),
        u8.new_tensor(u8, dtype=lib.int),
        u8.new_tensor(1),
        u8.new_tensor(1.7),
        lib.tensor([1.5]).new_tensor(np.array([5.0])),
    )


refuses("new_tensor_uint8_overflow", lambda lib: lib.ByteTensor([1, 1]).new_tensor([300]))
refuses("tensor_of_mixed_strings", lambda lib: lib.as_tensor([0, "torch"]))


# -- range/arange out= and edges, empty tensors' strides, eye, complex spacing ------------


@case("ranges_into_out")
def _(lib):
    x, y = lib.zeros(2, 3), lib.zeros(2, 3)
    lib.arange(0, 4, out=x.narrow(1, 1, 2))  # a non-contiguous out of 4 elements keeps its shape
    lib.range(0, 3, out=y.narrow(1, 1, 2))
    r = lib.zeros(3, 3, 5).to(lib.int64).permute(2, 0, 1)
    lib.arange(0, 45, out=r)
    line = lib.zeros(size=(1, 49))
    lib.arange(-1, 1, 2.0 / 49, dtype=lib.float32, out=line)
    return (
        x,
        y,
        r,
        r.flatten(),
        line.shape,
        lib.arange(0, 10000, out=lib.tensor([], dtype=lib.int64)),
        lib.arange(1, -1, -1, out=lib.tensor([])),
        lib.arange(1, 0, -1, out=lib.tensor([])),
        lib.arange(0.6, 0.89, 0.1, out=lib.FloatTensor()),
        lib.arange(1, 10, 0.3, out=lib.DoubleTensor()),
        lib.range(0, 1, out=lib.tensor(())),
        lib.range(1, 0, -1, out=lib.tensor(())),
        lib.range(1, 1, -1, out=lib.tensor(())),
        lib.range(1, 1, 1, out=lib.tensor(())),
    )


@case("arange_edges")
def _(lib):
    return (
        lib.arange(True),
        lib.arange(False),
        lib.arange(0, 5 + 1e-6),
        lib.arange(0, 5 - 1e-6),
        lib.arange(10, -1 + 1e-6, -1),
        lib.arange(10, -1 - 1e-6, -1),
        lib.arange(-4.0, 4.0, 0.01, dtype=lib.float32).shape,
        [
            t.dtype
            for t in (
                lib.arange(lib.tensor(1.0, dtype=lib.float64)),
                lib.arange(lib.tensor(1, dtype=lib.int16)),
                lib.arange(lib.tensor(1, dtype=lib.int16), lib.tensor(3.0)),
                lib.arange(
                    lib.tensor(1),
                    lib.tensor(3, dtype=lib.int16),
                    lib.tensor(1.0, dtype=lib.float64),
                ),
                lib.arange(lib.tensor(1), lib.tensor(3), lib.tensor(1, dtype=lib.int16)),
            )
        ],
    )


for name, make in {
    "arange_out_overlapping": lambda lib: lib.arange(10, out=lib.empty(1).expand(10)),
    "arange_from_nan": lambda lib: lib.arange(float("nan"), 10),
    "arange_to_minus_infinity": lambda lib: lib.arange(0, float("-inf"), -1),
    "arange_overflowing_size": lambda lib: lib.arange(1.175494351e-38, 3.402823466e38),
    "as_strided_fewer_strides": lambda lib: lib.tensor(0.42).as_strided((1, 2), (1,)),
    "as_strided_in_place_fewer_strides": lambda lib: lib.tensor(0.42).as_strided_((1,), ()),
    "eye_both_negative": lambda lib: lib.eye(-1, -1),
}.items():
    refuses(name, make)


@case("empty_strides_and_eye")
def _(lib):
    shapes = [(0,), (0, 3), (5, 0), (5, 0, 3, 0, 2), (0, 3, 0, 2), (0, 5, 0, 2, 0)]
    return (
        [(lib.empty(s).stride(), lib.empty(s).is_contiguous()) for s in shapes],
        [
            lib.empty_strided(s, st).stride()
            for s in [(2, 3, 4), (0, 2, 0)]
            for st in [(12, 4, 1), (2, 4, 6)]
        ],
        [
            lib.eye(n, m, dtype=d)
            for d in (lib.half, lib.bool, lib.complex64, lib.int8)
            for n, m in ((3, 5), (7, 3))
        ],
        lib.eye(3, 5, out=lib.empty(0, dtype=lib.bool)),
    )


@case("complex_spacing")
def _(lib):
    a, b = (
        -0.0316082797944545745849609375 + 0.8888888888j,
        0.0315315723419189453125 + 0.444444444444j,
    )
    return (
        lib.linspace(a, b, 257, dtype=lib.complex64),
        lib.linspace(a, b, 11, dtype=lib.complex128),
        lib.linspace(a, b, 1, dtype=lib.complex64),
        lib.logspace(0.3 + 0.1j, 5.2 - 1j, 11, dtype=lib.complex64),
        lib.logspace(0.3 + 0.1j, 1.2 - 1j, 11),
        lib.logspace(0.3, 2.2, 11, dtype=lib.complex64),
        lib.logspace(
            -0.0316082797944545745849609375, 0.0315315723419189453125, 257, dtype=lib.float64
        ),
    )


# -- windows, factories of empty shapes, linspace dtypes ----------------------------------


@case("windows")
def _(lib):
    return (
        [lib.hamming_window(n, periodic=p) for n in (0, 1, 2, 5, 10) for p in (True, False)],
        [lib.bartlett_window(n, periodic=p) for n in (0, 1, 2, 5, 10) for p in (True, False)],
        [
            lib.blackman_window(n, periodic=p, dtype=lib.float64)
            for n in (0, 1, 5)
            for p in (True, False)
        ],
        [lib.kaiser_window(n, periodic=p, beta=7.5) for n in (0, 1, 2, 10) for p in (True, False)],
        lib.hann_window(5),
        lib.kaiser_window(10, False, 0.5, dtype=lib.float64),
    )


refuses("hann_window_integer", lambda lib: lib.hann_window(3, dtype=lib.int64))
refuses("kaiser_window_integer", lambda lib: lib.kaiser_window(3, dtype=lib.int64))
refuses("hann_window_sparse", lambda lib: lib.hann_window(3, layout=lib.sparse_coo))


@case("factories_of_empty_shapes")
def _(lib):
    shapes = [(5, 0, 1), (0,), (0, 0, 1, 0, 2, 0, 0)]
    kinds = (lib.half, lib.bool, lib.complex64, lib.uint8, lib.float32)
    return (
        [
            (
                lib.zeros(s, dtype=d).shape,
                lib.full(s, 3, dtype=d).shape,
                lib.ones_like(lib.zeros(s, dtype=d)).shape,
                lib.full_like(lib.zeros(s, dtype=d), 3).shape,
                lib.empty_strided(s, (0,) * len(s), dtype=d).shape,
            )
            for s in shapes
            for d in kinds
        ],
        [lib.randint(2, s, dtype=lib.bool).shape for s in shapes],
        [lib.randint_like(lib.zeros(s, dtype=lib.bool), 2).shape for s in shapes],
        lib.randn((5, 0, 1), dtype=lib.complex64).shape,
        lib.eye(0, 5).shape,
        lib.eye(5, 0).shape,
        lib.linspace(1, 1, 0).shape,
        lib.logspace(1, 1, 0).shape,
        lib.randperm(0).shape,
        lib.bartlett_window(0, periodic=False).shape,
        lib.tensor([[[]]]).shape,
        lib.as_tensor([[[]]]).shape,
    )


refuses("randint_complex_empty", lambda lib: lib.randint(6, (5, 0, 1), dtype=lib.complex64))
refuses("rand_integer_empty", lambda lib: lib.rand((5, 0, 1), dtype=lib.int8))
refuses("randint_like_complex", lambda lib: lib.randint_like(lib.zeros(3, dtype=lib.complex64), 6))
refuses("randint_like_bool_beyond", lambda lib: lib.randint_like(lib.zeros(3, dtype=lib.bool), 6))
refuses("linspace_without_steps", lambda lib: lib.linspace(0, 1, dtype=lib.float32))
refuses("linspace_complex_start_into_float", lambda lib: lib.linspace(0j, 1, 5, dtype=lib.float32))


@case("linspace_and_logspace_dtypes")
def _(lib):
    kinds = (lib.int8, lib.uint8, lib.int16, lib.bfloat16, lib.half, lib.complex64)
    ends = [(1, 2), (1.0, 2), (1.0, -2.0), (1j, 2j), (0.0, 2j), (1j, 2)]
    return (
        [lib.linspace(10, 20, 11, dtype=d).float() for d in kinds[:-1]],
        [
            lib.linspace(10, 2000, 1991, dtype=d).float()
            for d in (lib.int16, lib.bfloat16, lib.half)
        ],
        [
            lib.linspace(-100, 100, 401, dtype=d).float()
            for d in (lib.int8, lib.int16, lib.bfloat16, lib.half)
        ],
        lib.linspace(0, 200, 401, dtype=lib.uint8),
        [lib.linspace(2, 0, 3, dtype=d).float() for d in kinds[:-1]],
        [lib.linspace(s, e, steps=100).dtype for s, e in ends],
        [lib.logspace(s, e, steps=10).dtype for s, e in ends],
        [lib.linspace(0, 10, steps=n, dtype=d).float() for n in (0, 1) for d in kinds[:-1]],
        bool((lambda y: (y[:-1] < y[1:]).all())(lib.linspace(0, 999999, 1000000))),
    )


# -- logspace forms, full's out=, normal's forms, uniform_'s bounds ----------------------


@case("logspace_forms_and_out")
def _(lib):
    x, y = lib.zeros(2, 3), lib.zeros(2, 3, dtype=lib.int32)
    lib.logspace(0, 3, 4, base=2, out=x.narrow(1, 1, 2))
    lib.logspace(0, 3, 4, base=2, dtype=lib.int32, out=y.narrow(1, 1, 2))
    kinds = (lib.float32, lib.int64, lib.uint8, lib.float64)
    return (
        x,
        y,
        [lib.logspace(0, 1, 1, dtype=d) for d in kinds],
        [lib.logspace(0, 6, steps=49, base=2, dtype=d) for d in kinds],
        [lib.logspace(1, 1, 1, 2, dtype=d) for d in kinds],
        [lib.logspace(0, 2, 3, 2, dtype=d) for d in kinds],
        [lib.logspace(1, 0, 2, dtype=d) for d in kinds],
        lib.logspace(0.3, 0.9, 137, out=lib.tensor(())),
    )


refuses("logspace_complex_end_into_float", lambda lib: lib.logspace(0, 1j, 5, dtype=lib.float32))
refuses("logspace_complex_start_into_float", lambda lib: lib.logspace(0j, 1, 5, dtype=lib.float32))
refuses("logspace_negative_steps", lambda lib: lib.logspace(0, 1, -1))
refuses("logspace_without_steps", lambda lib: lib.logspace(0, 1, dtype=lib.float32))
refuses(
    "full_out_of_another_dtype",
    lambda lib: lib.full((5,), 1.0, dtype=lib.float, out=lib.empty(5, dtype=lib.long)),
)


@case("full_out_takes_its_dtype")
def _(lib):
    o = lib.empty(5, dtype=lib.long)
    return (
        lib.full((5,), 1.0, out=o),
        lib.full((5,), 1, out=o),
        lib.full((5,), 1.5, out=o),
        lib.full((5,), True, out=lib.empty(5)),
        lib.tensor(np.arange(5.0)),
    )


@case("normal_more_forms")
def _(lib):
    m = lib.randn(3, 3)
    return (
        [
            t.dtype
            for t in (
                lib.normal(lib.ones(3, 3)),
                lib.normal(lib.ones(3, 3), 3),
                lib.normal(
                    lib.ones(3, 3, dtype=lib.double), 3, out=lib.empty(3, 3, dtype=lib.double)
                ),
                lib.normal(2, lib.ones(3, 3), out=lib.empty(3, 3)),
                lib.normal(2, 3, (10, 10), dtype=lib.double),
                lib.normal(lib.zeros(2, 2, dtype=lib.complex64), lib.ones(2, 2)),
            )
        ],
        lib.normal(mean=lib.empty((0, 2)), std=lib.empty((0, 1))).shape,
        lib.normal(2, 0, (3, 3), out=lib.empty(3, 3)),
        (lib.normal(m, 0) == m).all(),
        lib.normal(2, lib.zeros(3, 3)),
        (lib.normal(m, lib.zeros(3, 3)) == m).all(),
        lib.normal(lib.tensor(0.0), 1.0, (4,)).shape,
    )


refuses("normal_0d_mean_negative_std_with_size", lambda lib: lib.normal(lib.tensor(0.0), -1, (10,)))
refuses("normal_number_mean_negative_std_tensor", lambda lib: lib.normal(0, lib.tensor(-1.0)))
refuses(
    "normal_complex_std_into_out",
    lambda lib: lib.normal(
        0, lib.empty(4, dtype=lib.complex64), out=lib.empty(4, dtype=lib.complex64)
    ),
)
refuses("uniform_from_minus_infinity", lambda lib: lib.empty(3).uniform_(float("-inf"), 0))
refuses("uniform_to_infinity", lambda lib: lib.empty(3).uniform_(0, float("inf")))
refuses(
    "uniform_span_beyond_float32",
    lambda lib: lib.empty(3).uniform_(-3.4028234663852886e38, 3.4028234663852886e38),
)
refuses(
    "uniform_from_beyond_float32", lambda lib: lib.empty(3).uniform_(-1.7976931348623157e308, 0)
)
refuses(
    "uniform_float16_from_beyond", lambda lib: lib.empty(3, dtype=lib.float16).uniform_(-70000, 0)
)
refuses("uniform_reversed", lambda lib: lib.empty(3).uniform_(42, 0))


# -- randperm's float limits, randint/randn into out=, *_like dtypes, frombuffer ----------


@case("random_factories_into_out")
def _(lib):
    return (
        [lib.randint(*a, size=(2, 1), out=lib.empty((2, 1))).dtype for a in [(3,), (1, 3)]],
        [lib.randint(*a, size=(2, 1), layout=lib.strided).dtype for a in [(3,), (1, 3)]],
        lib.randint(0, 6, (4, 4), out=lib.empty((), dtype=lib.int64)).shape,
        lib.randn(3, 3, out=lib.tensor([], dtype=lib.float64)).dtype,
        lib.rand(0, 0, out=lib.tensor([])).shape,
        lib.randperm(2**11 + 1, out=lib.empty(0, dtype=lib.half)).shape,
        lib.randperm(0, out=lib.tensor(5, dtype=lib.half)).shape,
        lib.randperm(258, dtype=lib.bfloat16).shape,
    )


@case("randperm_into_a_transposed_out")
def _(lib):
    return lib.randperm(6, out=lib.zeros((2, 3), dtype=lib.long).t()).stride()


refuses("randperm_half_beyond_2049", lambda lib: lib.randperm(2**11 + 2, dtype=lib.half))
refuses(
    "randperm_half_out_beyond_2049",
    lambda lib: lib.randperm(2**11 + 2, out=lib.empty(0, dtype=lib.half)),
)
refuses(
    "randperm_uint8_out_beyond_256",
    lambda lib: lib.randperm(2**8 + 1, out=lib.empty(0, dtype=lib.uint8)),
)
refuses(
    "randint_out_of_another_dtype",
    lambda lib: lib.randint(3, size=(2, 1), out=lib.empty((2, 1)), dtype=lib.int64),
)


@case("like_dtypes_and_frombuffer")
def _(lib):
    ints = bytearray(np.arange(5, dtype=np.int16).tobytes())
    shared = bytearray(4)
    lib.frombuffer(shared, dtype=lib.uint8)[0] = 7
    return (
        lib.ones_like(lib.tensor([True, True])),
        lib.full_like(lib.empty((5,), dtype=lib.long), 1.0).dtype,
        lib.full_like(lib.empty((5,), dtype=lib.long), 1.0, dtype=lib.complex64).dtype,
        [
            lib.empty_like(a).type().split(".")[1]
            for a in (lib.tensor([]), lib.randn(4, 4), lib.IntTensor([1, 2]))
        ],
        lib.frombuffer(bytearray(np.arange(5, dtype=np.float32).tobytes()), dtype=lib.float32),
        lib.frombuffer(ints, dtype=lib.int16, count=3, offset=2),
        lib.frombuffer(ints, dtype=lib.int16, offset=4),
        lib.frombuffer(b"1234", dtype=lib.int8),
        shared[0],
    )


for name, make in {
    "frombuffer_integer_requires_grad": lambda lib: lib.frombuffer(
        bytearray(4), dtype=lib.int16, requires_grad=True
    ),
    "frombuffer_zero_count": lambda lib: lib.frombuffer(bytearray(10), dtype=lib.int16, count=0),
    "frombuffer_count_too_big": lambda lib: lib.frombuffer(bytearray(10), dtype=lib.int16, count=6),
    "frombuffer_offset_at_the_end": lambda lib: lib.frombuffer(
        bytearray(10), dtype=lib.int16, offset=10
    ),
    "frombuffer_negative_offset": lambda lib: lib.frombuffer(
        bytearray(10), dtype=lib.int16, offset=-1
    ),
    "frombuffer_length_not_a_multiple": lambda lib: lib.frombuffer(bytearray(10), dtype=lib.int32),
    "frombuffer_empty": lambda lib: lib.frombuffer(bytearray(), dtype=lib.int32),
    "frombuffer_of_a_list": lambda lib: lib.frombuffer([1, 2], dtype=lib.int8),
}.items():
    refuses(name, make)


# -- asarray: aliasing, copies, requires_grad, buffers -------------------------------------


@case("asarray_autograd_and_aliases")
def _(lib):
    def seen(a, c):
        return (
            a.requires_grad,
            a.grad_fn is not None,
            a is c,
            a.data_ptr() == c.data_ptr(),
            a.is_leaf,
        )

    forms = (
        {},
        {"requires_grad": True},
        {"copy": True},
        {"requires_grad": False},
        {"requires_grad": False, "copy": True},
        {"dtype": lib.float64, "requires_grad": True},
    )
    c, t = lib.ones(3, requires_grad=True).clone(), lib.ones(3)
    return (
        [seen(lib.asarray(c, **kw), c) for kw in forms],
        seen(lib.asarray(t, requires_grad=True), t),
        t.requires_grad,
        lib.asarray([1.0, 2.0], requires_grad=True).requires_grad,
    )


@case("asarray_of_buffers_and_data")
def _(lib):
    f32 = np.arange(3, dtype=np.float32)
    return (
        lib.asarray(memoryview(f32)),
        lib.asarray(bytearray(8)),
        lib.asarray(memoryview(f32), dtype=lib.float32),
        [
            lib.asarray(e)
            for e in (True, 42, 1.0, [True, False, 0], [0.0, True, False, 42, 5j], range(5))
        ],
        lib.asarray(np.float32(2.5)),
        lib.asarray([np.float32(2.5), 1]),
        lib.asarray(lib.tensor(2.5, dtype=lib.float64), dtype=lib.float32),
    )


refuses(
    "asarray_copy_false_needing_a_cast",
    lambda lib: lib.asarray(lib.ones(3), dtype=lib.float64, copy=False),
)
refuses("asarray_copy_false_of_a_list", lambda lib: lib.asarray([1.0, 2.0], copy=False))
refuses(
    "asarray_buffer_not_a_multiple",
    lambda lib: lib.asarray(memoryview(np.arange(3, dtype=np.int16))),
)


GRAPH_VALUES = (
    "values made inside kn.compile are graph values, whose requires_grad, is_leaf and identity "
    "are not asked (their gradients are graph values too)"
)
SCENARIOS.eager_only.update(
    {
        "new_factories_requires_grad": GRAPH_VALUES,
        "tensor_copies_keep_no_history": GRAPH_VALUES,
        "asarray_autograd_and_aliases": GRAPH_VALUES,
        "like_dtypes_and_frombuffer": "frombuffer shares a Python buffer's memory: an eager tensor",
        "randperm_into_a_transposed_out": "kn.compile refuses a traced draw written into a view "
        "(here resized) of a tensor the function made (GraphError: it follows the made tensor, "
        "not its views)",
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
