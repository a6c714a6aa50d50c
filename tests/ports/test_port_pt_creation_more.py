"""PyTorch's tensor creation tests (test_tensor_creation_ops.py), continued: integer
`linspace` near the dtype's limits, big Python numbers and float-to-integer conversions of
created tensors, `requires_grad=` of the factories (refused on integer dtypes), `stack` and
`triu` forms and `repeat_interleave`. As test_port_pt_creation.py, each behaviour is a
scenario (pt_oracle.py runs it on torch and on kiln, eagerly and under `kn.compile`).

Expected values: torch 2.13 (the oracle).
"""

import pytest
from pt_oracle import MODES, Scenarios

nan, inf = float("nan"), float("inf")

SCENARIOS = Scenarios()
case = SCENARIOS.case


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


refuses = SCENARIOS.case
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
    refuses(name)(make)


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


SCENARIOS.eager_only.update(
    {
        "new_factories_requires_grad": "values made inside kn.compile are graph values, whose "
        "requires_grad is not asked (their gradients are graph values too)",
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
