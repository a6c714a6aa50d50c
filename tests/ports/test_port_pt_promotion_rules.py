"""PyTorch's type-promotion rules (after its test_type_promotion.py and test_binary_ufuncs.py)
where kiln already agrees, as regression checks against torch 2.13: in-place casting and its
refusals, out= dtypes, alpha errors, bool arithmetic, 0-d and wrapped-number promotion,
promote_types/can_cast/result_type, comparisons across dtypes and of uint8 with negative
numbers, shifts by the width and more, integer pow, NaN handling, copysign/nextafter/atan2/
hypot/gcd/lcm, and a sample under kn.compile with the numbers passed as arguments. The harness
(and its tolerance) is test_port_pt_promotion's.
"""

import pytest
from test_port_pt_promotion import FLOATS, INF, INTS, NAN, T, _op, check

# -- what already agrees: PyTorch's type-promotion rules, as regression checks ----------------

ALL = ("bool", *INTS, *FLOATS, "complex64", "complex128")


def _value(d):
    return [True, False, True] if d == "bool" else [1, 2, 3]


def _inplace_and_out_cases():
    # in-place ops cast the result to self's dtype and refuse one they cannot take
    # (`int_t += 1.5`, bool += uint8); out= takes any dtype the result casts to (not float to
    # int); comparisons write bools
    cases = []
    for d in ALL:
        for s in (True, 2, 1.5, 1j):
            if d == "float16" and s == 1j:
                continue  # complex32, which kiln does not have (test_promotion_table)
            cases += [
                (f"{d}.add_({s!r})", lambda lib, t, s=s: t.add_(s), [T(d, _value(d))]),
                (f"{d}.mul_({s!r})", lambda lib, t, s=s: t.mul_(s), [T(d, _value(d))]),
            ]
        for d2 in ALL:
            if d == "float16" and d2.startswith("complex"):
                continue  # complex32 again
            x, y = T(d, _value(d)), T(d2, _value(d2))
            cases += [
                (f"{d}.add_({d2})", lambda lib, t, u: t.add_(u), [x, y]),
                (f"{d}.add_(0-d {d2})", lambda lib, t, u: t.add_(u), [x, T(d2, 1)]),
                (
                    f"add(f32, i32, out={d2})",
                    lambda lib, d2=d2: lib.add(
                        lib.ones(3),
                        lib.ones(3, dtype=lib.int32),
                        out=lib.empty(3, dtype=getattr(lib, d2)),
                    ),
                    [],
                ),
                (
                    f"lt(out={d2})",
                    lambda lib, d2=d2: lib.lt(
                        lib.ones(3), 2, out=lib.empty(3, dtype=getattr(lib, d2))
                    ),
                    [],
                ),
            ]
    cases += [
        ("true_divide_ int", lambda lib, t: t.true_divide_(2), [T("int64", [1, 2])]),
        (
            "true_divide out int",
            lambda lib, t: lib.true_divide(t, 2, out=lib.empty_like(t)),
            [T("int32", [1, 2])],
        ),
        # torch 2.13: neg, bitwise_not and conj_physical refuse an out= of another dtype
        # (RuntimeError "Found dtype Double but expected Float"); kiln cast into it
        (
            "neg out double",
            lambda lib: lib.neg(lib.ones(2), out=lib.empty(2, dtype=lib.float64)),
            [],
        ),
        (
            "neg out int64",
            lambda lib, t: lib.neg(t, out=lib.empty(2, dtype=lib.int64)),
            [T("int32", [1, 2])],
        ),
        (
            "bitwise_not out int64",
            lambda lib, t: lib.bitwise_not(t, out=lib.empty(2, dtype=lib.int64)),
            [T("int32", [1, 2])],
        ),
        (
            "conj_physical out c128",
            lambda lib, t: lib.conj_physical(t, out=lib.empty(2, dtype=lib.complex128)),
            [T("complex64", [1j, 2])],
        ),
        (
            "neg out same",
            lambda lib, t: lib.neg(t, out=lib.empty(2, dtype=lib.int32)),
            [T("int32", [1, 2])],
        ),
        ("lerp mixed", lambda lib: lib.lerp(lib.ones(2, dtype=lib.float64), lib.ones(2), 0.5), []),
        (
            "abs complex out float",
            lambda lib, t: lib.abs(t, out=lib.empty(2)),
            [T("complex64", [3 + 4j, 1j])],
        ),
        (
            "abs complex out long",
            lambda lib, t: lib.abs(t, out=lib.empty(2, dtype=lib.long)),
            [T("complex64", [3 + 4j, 1j])],
        ),
        (
            "uint8 *= int16",
            lambda lib, t, u: t.mul_(u),
            [T("uint8", [1, 2]), T("int16", [300, -1])],
        ),
    ]
    return cases


def _alpha_and_bool_cases():
    i, b = T("int32", [1, 2]), T("bool", [True, False])
    return [
        ("add int alpha float", lambda lib, t: lib.add(t, t, alpha=1.1), [i]),
        ("add bool alpha float", lambda lib, t: lib.add(t, t, alpha=1.1), [b]),
        ("add bool alpha True", lambda lib, t: lib.add(t, t, alpha=True), [b]),
        ("add bool alpha False", lambda lib, t: lib.add(t, t, alpha=False), [b]),
        ("add int alpha 3", lambda lib, t: lib.add(t, t, alpha=3), [i]),
        ("add int8 alpha 300", lambda lib, t: lib.add(t, t, alpha=300), [T("int8", [1, 2])]),
        ("sub bools", lambda lib, t: t - t, [b]),
        ("sub bool int", lambda lib, t: t - 1, [b]),
        ("rsub bool", lambda lib, t: 1 - t, [b]),
        ("add bools", lambda lib, t: t + t, [b]),
        ("add bool True", lambda lib, t: t + True, [b]),
        ("mul bools", lambda lib, t: t * t, [b]),
        ("bool == 0", lambda lib, t: t.t() == 0, [T("bool", [[True, True], [False, True]])]),
        ("neg bool", lambda lib, t: -t, [b]),
        ("uint8 + 1000", lambda lib, t: t + 1000, [T("uint8", [0, 1])]),
        ("uint8 + 5.5", lambda lib, t: t + 5.5, [T("uint8", [0, 1])]),
        (
            "uint8 + 0-d double",
            lambda lib, t: t + lib.tensor(5.5, dtype=lib.float64),
            [T("uint8", [0, 1])],
        ),
        (
            "float + 0-d double",
            lambda lib, t: t + lib.tensor(5.5, dtype=lib.float64),
            [T("float32", [0, 1])],
        ),
        (
            "complex64 + 0-d double",
            lambda lib, t: t + lib.tensor(5.5, dtype=lib.float64),
            [T("complex64", [1j, 1])],
        ),
        ("1j * ones", lambda lib: 1j * lib.ones(2) + 1j, []),
        ("half + 0-d float", lambda lib, t: t + lib.tensor(1e5), [T("float16", [5.5])]),
        ("half + 100000", lambda lib, t: t + 100000, [T("float16", [5.5])]),
    ]


def _function_cases():
    # result_type, promote_types, can_cast, and Python numbers in each position
    dtypes = (
        "bool",
        "uint8",
        "int8",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
    )
    cases = []
    for a in dtypes:
        for b in dtypes:
            cases += [
                (
                    f"promote_types {a} {b}",
                    lambda lib, a=a, b=b: str(
                        lib.promote_types(getattr(lib, a), getattr(lib, b))
                    ).split(".")[-1],
                    [],
                ),
                (
                    f"can_cast {a} {b}",
                    lambda lib, a=a, b=b: lib.can_cast(getattr(lib, a), getattr(lib, b)),
                    [],
                ),
            ]
        for s in (True, 1, 1.0, 1j):
            if a == "float16" and s == 1j:
                continue  # complex32 again
            cases += [
                (
                    f"result_type {a} {s!r}",
                    lambda lib, t, s=s: str(lib.result_type(t, s)).split(".")[-1],
                    [T(a, _value(a))],
                ),
                (
                    f"result_type 0-d {a} {s!r}",
                    lambda lib, t, s=s: str(lib.result_type(s, t)).split(".")[-1],
                    [T(a, 1)],
                ),
            ]
    cases += [
        ("result_type 1 1.", lambda lib: str(lib.result_type(1, 1.0)).split(".")[-1], []),
        # (torch.add of two Python numbers is a tensor; kiln's a NumPy value: left out)
        ("arange(False, True)", lambda lib: lib.arange(False, True), []),
        ("arange(False, True, 0.5)", lambda lib: lib.arange(False, True, 0.5), []),
        ("linspace bools", lambda lib: lib.linspace(False, True, 3), []),
        ("scalar_tensor(False)", lambda lib: lib.scalar_tensor(False), []),
    ]
    return cases


def _elementwise_cases():
    cases = []
    big = {
        "uint8": 32,
        "int8": 32,
        "int16": 1024,
        "int32": 1 << 20,
        "int64": 1 << 35,
        "float16": 1024,
        "bfloat16": 1024,
        "float32": 1 << 20,
        "float64": 1 << 35,
    }
    for a in big:
        for b in big:  # comparisons across dtypes, with and without dims
            for name in ("lt", "le", "eq", "ne"):
                cases += [
                    (f"{name} {a} {b}", _op(name), [T(a, [big[a]]), T(b, [big[b]])]),
                    (f"{name} 0-d {a} {b}", _op(name), [T(a, big[a]), T(b, big[b])]),
                ]
    for d in (*INTS, "bool", *FLOATS):
        v = [0, 1, 1, 0, 1] if d == "bool" else [0, 1, 5, 100, 127]
        nv = v if d in ("uint8", "bool") else [-1, -128, 5, -100, 127]
        x = T(d, nv)
        for s in (-1, -300, 255, 256, 1e10, -0.5, NAN, INF, 0.5):  # uint8 beside negative numbers
            cases += [
                (f"{d} < {s}", lambda lib, t, s=s: t < s, [x]),
                (f"{d} == {s}", lambda lib, t, s=s: t == s, [x]),
                (f"{s} >= {d}", lambda lib, t, s=s: s >= t, [x]),
            ]
        if d in FLOATS:
            continue
        for sh in (0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 65):  # shifts by the width and more
            cases += [
                (f"{d} << {sh}", lambda lib, t, sh=sh: t << sh, [x]),
                (f"{d} >> {sh}", lambda lib, t, sh=sh: t >> sh, [x]),
                (f"{d} >> {d} {sh}", lambda lib, t, u: t >> u, [x, T(d, [sh] * 5)]),
            ]
        cases += [
            (f"~{d}", lambda lib, t: ~t, [x]),
            (f"{d} & 3", lambda lib, t: t & 3, [x]),
            (f"True | {d}", lambda lib, t: True | t, [x]),
            (f"{d} ^ int64", lambda lib, t, u: t ^ u, [x, T("int64", v)]),
            (f"{d} & 1.5", lambda lib, t: t & 1.5, [x]),
        ]
        for e in (-1, -2, 0, 2, 3, 0.5, True):  # integer powers: negative exponents refused
            cases += [
                (f"{d} ** {e!r}", lambda lib, t, e=e: t**e, [T(d, v)]),
                (f"{e!r} ** {d}", lambda lib, t, e=e: e**t, [T(d, v)]),
            ]
        cases += [
            (f"{d} ** 40", lambda lib, t: t**40, [T(d, [3, 7, 10, 2, 5])]),
            (
                f"pow({d}, int64 with negatives)",
                _op("pow"),
                [T(d, v), T("int64", [1, 2, -1, 0, 3])],
            ),
        ]
    nan_a, nan_b = (
        [NAN, 1.0, -0.0, 0.0, INF, -INF, NAN, 2.0],
        [1.0, NAN, 0.0, -0.0, -INF, INF, NAN, -3.0],
    )
    for d in FLOATS:
        for name in (
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "copysign",
            "nextafter",
            "atan2",
            "hypot",
            "heaviside",
            "remainder",
            "fmod",
            "float_power",
        ):
            cases.append((f"{name} {d}", _op(name), [T(d, nan_a), T(d, nan_b)]))
        for name in ("max", "min", "amax", "argmax", "nansum", "nanmean", "median", "nanmedian"):
            cases.append((f"{name} {d}", _op(name), [T(d, nan_a)]))
        cases += [
            (f"clamp {d}", lambda lib, t: lib.clamp(t, -1.0, 1.0), [T(d, nan_a)]),
            (f"clamp nan bound {d}", lambda lib, t: lib.clamp(t, NAN, 1.0), [T(d, nan_a)]),
        ]
    for name in ("gcd", "lcm"):
        for d in INTS:
            a = [0, 12, 200, 7, 0, 255] if d == "uint8" else [0, 12, -12, 7, 0, -128]
            b = [0, 18, 150, 14, 5, 3] if d == "uint8" else [0, 18, 18, -14, 5, -1]
            cases.append((f"{name} {d}", _op(name), [T(d, a), T(d, b)]))
        cases += [
            (f"{name} int8 int64", _op(name), [T("int8", [12]), T("int64", [18])]),
            (f"{name} float", _op(name), [T("float32", [12.0]), T("float32", [18.0])]),
        ]
    cases += [
        ("copysign int", _op("copysign"), [T("int64", [1, -2, 0]), T("int64", [-1, 1, -1])]),
        ("copysign int -0.", _op("copysign"), [T("int64", [1, -2, 0]), -0.0]),
        ("heaviside int", _op("heaviside"), [T("int64", [1, -2, 0]), T("int64", [5, 5, 7])]),
        # torch 2.13 refuses values of another dtype (RuntimeError) and complex ones;
        # kiln promoted them
        ("heaviside mixed", _op("heaviside"), [T("int64", [1, -2, 0]), T("float32", [5, 5, 7])]),
        ("heaviside 0-d", _op("heaviside"), [T("float32", [1, 0]), T("float64", 0.5)]),
        ("heaviside complex", _op("heaviside"), [T("complex64", [1j, 0]), T("complex64", [1j, 0])]),
        ("heaviside bools", _op("heaviside"), [T("bool", [True, False]), T("bool", [True, True])]),
        ("atan2 ints", _op("atan2"), [T("int32", [1, -2, 0]), T("int32", [0, 1, -1])]),
        ("true_divide ints", _op("true_divide"), [T("int16", [7, -7]), T("int16", [2, 2])]),
        ("int / int", lambda lib, t: t / 2, [T("int64", [7, -7])]),
    ]
    return cases


GROUPS = {
    "in-place and out=": _inplace_and_out_cases,
    "alpha and bools": _alpha_and_bool_cases,
    "functions": _function_cases,
    "elementwise": _elementwise_cases,
}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_promotion_rules_agree_with_pytorch(torch, group):
    # each case: torch 2.13's values, dtypes, shapes or exception class
    check(torch, GROUPS[group]())


@pytest.mark.parametrize("group", ["alpha and bools", "elementwise"])
def test_compiled_functions_promote_python_scalars_as_eager(torch, group):
    # the same cases traced by kn.compile, the tensors and Python numbers passed as arguments
    cases = [c for c in GROUPS[group]() if c[2]]
    check(torch, cases[::7], jit=True)
