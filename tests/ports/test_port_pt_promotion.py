"""PyTorch's own type-promotion and binary-ufunc tests (test_type_promotion.py,
test_binary_ufuncs.py) as an oracle: scenarios of our own, written once against a module
argument `lib`, run on torch 2.13 and on kiln (eagerly, and a subset under `kn.compile` with
the Python scalars passed as arguments), comparing values, dtypes, shapes and exception types
(kiln's exception must be an instance of torch's class).

What they cover beyond tests/test_promotion_table.py (result_type of every dtype pair) and
tests/test_torch_opinfo.py (OpInfo samples): in-place ops that cannot cast, `out=` dtypes,
integer division and rounding modes with negative operands and zero divisors, fmod/remainder
signs, integer pow, shifts by the bit width and more, comparisons of uint8 with negative
scalars, half-precision rounding of two-step formulas (xlogy, logaddexp2), NaN handling of
min/max/fmax, ldexp's dtype, the real angle of -0.0 and the dtypes each op refuses.

Values compare exactly, but for float results within 1e-6 relative (a libm may round a
transcendental function one ulp apart); NaNs compare equal.
"""

import math

import numpy as np
import pytest

import kiln as kn

NAN, INF = math.nan, math.inf
INTS = ("uint8", "int8", "int16", "int32", "int64")
HALF = ("float16", "bfloat16")
FLOATS = (*HALF, "float32", "float64")


def T(dtype, values):
    """An input: a tensor of `values` in `dtype` (a dtype name), made by each library."""
    return ("tensor", dtype, values)


def _build(lib, arg):
    if isinstance(arg, tuple) and len(arg) == 3 and arg[0] == "tensor":
        return lib.tensor(arg[2], dtype=getattr(lib, arg[1]))
    return arg


def _summary(result):
    """A result as comparable data: (dtype name, shape, float64/complex128 values) of tensors,
    nested for tuples, plain for Python values."""
    if isinstance(result, (tuple, list)):
        return tuple(_summary(r) for r in result)
    if hasattr(result, "dtype") and hasattr(result, "shape"):
        name = str(result.dtype).split(".")[-1]
        x = result.detach()
        x = x.float() if name == "bfloat16" else x
        values = np.asarray(x.numpy())
        values = values.astype(np.complex128 if values.dtype.kind == "c" else np.float64)
        return (name, tuple(result.shape), values)
    return result


def outcome(lib, fn, args, jit=False):
    """("ok", summary) of `fn(lib, *args)`, or ("err", the exception)."""
    built = [_build(lib, a) for a in args]
    try:
        if jit:
            return "ok", _summary(kn.compile(lambda *xs: fn(kn, *xs))(*built))
        return "ok", _summary(fn(lib, *built))
    except Exception as e:  # noqa: BLE001 -- the exception is the outcome compared
        return "err", e


def _same(t, k) -> bool:
    if isinstance(t, tuple) and len(t) == 3 and isinstance(t[2], np.ndarray):
        if not (isinstance(k, tuple) and len(k) == 3 and (k[0], k[1]) == (t[0], t[1])):
            return False
        try:
            np.testing.assert_allclose(k[2], t[2], rtol=1e-6, atol=0, equal_nan=True)
        except AssertionError:
            return False
        return True
    if isinstance(t, tuple):
        return isinstance(k, tuple) and len(t) == len(k) and all(map(_same, t, k))
    if isinstance(t, float) and math.isnan(t):
        return isinstance(k, float) and math.isnan(k)
    return type(t) is type(k) and t == k


def differences(torch, cases, jit=False):
    """The cases (name, fn, args) whose kiln outcome is not torch's, with both outcomes."""
    wrong = []
    for name, fn, args in cases:
        t = outcome(torch, fn, args)
        k = outcome(kn, fn, args, jit)
        if t[0] == k[0] == "err":
            if not isinstance(k[1], type(t[1])):
                wrong.append(
                    (
                        name,
                        f"torch raises {type(t[1]).__name__}: {t[1]}",
                        f"kiln raises {type(k[1]).__name__}: {k[1]}",
                    )
                )
        elif t[0] != k[0] or not _same(t[1], k[1]):
            wrong.append((name, t, k))
    return wrong


def _brief(outcome_or_text) -> str:
    text = " ".join(str(outcome_or_text).split())
    return text if len(text) < 400 else text[:400] + "..."


def check(torch, cases, jit=False):
    wrong = differences(torch, cases, jit)
    assert not wrong, "\n".join(
        f"{name}:\n  torch {_brief(t)}\n  kiln  {_brief(k)}" for name, t, k in wrong[:10]
    )


def _op(name):
    """`lib.<name>` (dotted for submodules) as a function of (lib, *args)."""

    def fn(lib, *args):
        f = lib
        for part in name.split("."):
            f = getattr(f, part)
        return f(*args)

    return fn


# -- angle of real values: pi for negative ones, 0 for -0.0 (x < 0 is false there) -----------


def test_angle_of_negative_zero_is_zero(torch):
    # torch 2.13: angle([-0.0, -1.0, nan, 0.0]) is [0, pi, nan, 0] in every float dtype
    cases = [(f"angle {d}", _op("angle"), [T(d, [-0.0, -1.0, NAN, 0.0, -INF])]) for d in FLOATS]
    check(torch, cases)
    check(torch, cases[2:3], jit=True)


# -- ldexp: an integer exponent keeps a float input's dtype; bools are refused -----------------


def _ldexp_cases():
    cases = []
    for d in (*FLOATS, "int64", "complex64"):
        for e in (*INTS, "float16", "float32", "bool"):
            if (d, e) == ("complex64", "float16"):
                continue  # torch refuses 2.0**e in complex32 ("pow" not implemented)
            x = [1, 2, 3] if d == "int64" else [-1.5, 1.5, 2.5]
            cases.append((f"ldexp {d} {e}", _op("ldexp"), [T(d, x), T(e, [1, 0, 1])]))
            cases.append((f"ldexp {e} {d}", _op("ldexp"), [T(e, [1, 0, 1]), T(d, x)]))
    # a 0-d integer exponent, and exponents beyond the dtype's range: the exact product
    # (0 * 2**200 is 0; 2**-25 of a float16 1 rounds once, to its smallest subnormal's half)
    cases += [
        ("ldexp 0-d", _op("ldexp"), [T("float16", [1.0, 2.0]), T("int64", 3)]),
        (
            "ldexp f16 range",
            _op("ldexp"),
            [T("float16", [1, 2, 1, 3, 1000, 0]), T("int64", [20, -30, -24, -25, 10, 200])],
        ),
        (
            "ldexp f32 range",
            _op("ldexp"),
            [T("float32", [0.0, 1e-30, 3.0, 1.0, 5.0]), T("int32", [200, 200, -149, 128, -1000])],
        ),
        (
            "ldexp f64 range",
            _op("ldexp"),
            [
                T("float64", [0.0, 1e-300, 3.0, 1.0, 1e300]),
                T("int64", [5000, 1500, -1074, 1024, -2000]),
            ],
        ),
        ("ldexp uint8", _op("ldexp"), [T("float32", [1.0, 2.0]), T("uint8", [1, 255])]),
        # an integer input: 2.0**e in float32 first (0 * 2**200 is NaN there)
        ("ldexp int range", _op("ldexp"), [T("int64", [0, 1]), T("int64", [200, -200])]),
    ]
    return cases


def test_ldexp_dtypes_and_values_are_pytorchs(torch):
    # torch 2.13: ldexp(float16 x, int e) is float16 (kiln gave float32), the exact x * 2**e
    # rounded once (kiln: 0 * 2**200 gave NaN); ldexp(float x, bool) raises
    # NotImplementedError
    cases = _ldexp_cases()
    check(torch, cases)
    check(torch, [c for c in cases if "float16" in c[0] or "range" in c[0]][:6], jit=True)


# -- half precision: PyTorch's CPU kernels round each step of some two-step formulas ----------

_RNG = np.random.default_rng(0)
_X = [round(v, 3) for v in (_RNG.normal(size=64) * 10).tolist()] + [0.0, 0.0, 1.5, -1.5]
_Y = [round(v, 3) for v in (np.abs(_RNG.normal(size=64)) * 10).tolist()] + [0.0, NAN, 3.0, 3.0]


def test_xlogy_in_half_precision_rounds_the_log_first(torch):
    # torch 2.13: xlogy(float16 -1.5, 3) is -1.648 (log(3) rounded to float16, then the
    # product rounded); kiln rounded the float32 product once, -1.647 (bfloat16: -1.656 and
    # -1.648); the same for xlog1py, with a tensor, a 0-d tensor or a Python number y
    cases = []
    for d in HALF:
        for name in ("xlogy", "special.xlogy", "special.xlog1py"):
            cases += [
                (f"{name} {d}", _op(name), [T(d, _X), T(d, _Y)]),
                (f"{name} {d} number", _op(name), [T(d, _X), 3]),
                (f"{name} {d} 0-d", _op(name), [T(d, _X), T("float32", 3.0)]),
                (f"{name} number {d}", _op(name), [2.5, T(d, _Y)]),
            ]
    check(torch, cases)
    check(torch, cases[:2], jit=True)


# -- ops that promote their operands before a float-only step -----------------------------------


def test_dist_promotes_its_operands_first(torch):
    # torch 2.13: dist(int64 [1, 2], float32 [1, 5]) is 3.0 in float32 (kiln refused the
    # integer input); two integer tensors are refused (RuntimeError), bools by subtraction's
    # error; float16 with float64 gives float64, a complex operand a real result
    f = [1.0, 5.0]
    cases = [
        ("dist int float", _op("dist"), [T("int64", [1, 2]), T("float32", f)]),
        ("dist float int", _op("dist"), [T("float32", f), T("int8", [1, 2])]),
        ("dist int 0-d float", _op("dist"), [T("int64", [1, 2]), T("float32", 5.0)]),
        ("dist int int", _op("dist"), [T("int64", [1, 2]), T("int64", [1, 5])]),
        ("dist bool float", _op("dist"), [T("bool", [True, False]), T("float32", f)]),
        ("dist half double", _op("dist"), [T("float16", [1, 2]), T("float64", f)]),
        ("dist float complex", _op("dist"), [T("float32", [1, 2]), T("complex64", f)]),
        ("dist p=1", lambda lib, a, b: lib.dist(a, b, p=1), [T("int32", [1, 2]), T("float32", f)]),
        (
            "dist p=inf",
            lambda lib, a, b: lib.dist(a, b, p=INF),
            [T("uint8", [1, 2]), T("float64", f)],
        ),
    ]
    check(torch, cases)
    check(torch, cases[:1], jit=True)


# -- integer division, remainders and shifts -----------------------------------------------------


def _int_division_cases():
    a, b = [-7, -6, -1, 0, 1, 5, 7], [2, -2, 3, -3, 2, -4, 3]
    cases = []
    for d in (*INTS, *FLOATS):
        x = T(d, [abs(v) for v in a] if d == "uint8" else a)
        y = T(d, [abs(v) for v in b] if d == "uint8" else b)
        zero = T(d, [0] * 7)
        for mode in (None, "trunc", "floor"):
            div = lambda lib, p, q, mode=mode: lib.div(p, q, rounding_mode=mode)  # noqa: E731
            for what, other in (
                ("", y),
                (" by 0", zero),
                (" by -2", -2),
                (" by 0.", 0.0),
                (" by 2.5", 2.5),
            ):
                cases.append((f"div {d} {mode}{what}", div, [x, other]))
        for name in ("fmod", "remainder", "floor_divide"):
            for what, other in (("", y), (" by 0", zero), (" by -3", -3), (" by -2.5", -2.5)):
                cases.append((f"{name} {d}{what}", _op(name), [x, other]))
        cases += [
            (f"{d} // -2", lambda lib, p: p // -2, [x]),
            (f"7 % {d}", lambda lib, q: 7 % q, [y]),
            (f"-7.5 % {d}", lambda lib, q: -7.5 % q, [y]),
            (f"remainder(-7, {d})", lambda lib, q: lib.remainder(-7, q), [y]),
        ]
    return cases


def test_integer_division_and_remainders_are_pytorchs(torch):
    # the signs of fmod (the dividend's) and remainder (the divisor's), floor and trunc
    # rounding of negative quotients, and a zero integer divisor (RuntimeError; floats give
    # inf and NaN), for every dtype and with Python numbers; torch 2.13 is the oracle
    cases = _int_division_cases()
    check(torch, cases)
    check(torch, [c for c in cases if c[0].startswith(("div int8", "remainder int32"))], jit=True)


def test_bool_operands_of_integer_only_ops_are_refused(torch):
    # torch 2.13 has no bool kernel of floor/trunc division, fmod, remainder and the shifts
    # (NotImplementedError, "div_floor_cpu" not implemented for 'Bool'); kiln computed them
    # in int8 (NumPy's loop). A bool with an integer promotes to the integer, as PyTorch.
    t, f = T("bool", [True, False, True]), T("bool", [True, True, True])
    cases = []
    for name in ("fmod", "remainder", "floor_divide", "bitwise_left_shift", "bitwise_right_shift"):
        cases += [
            (f"{name} bools", _op(name), [t, f]),
            (f"{name} bool True", _op(name), [t, True]),
            (f"{name} bool int", _op(name), [t, T("int8", [1, 2, 3])]),
            (f"{name} bool 2", _op(name), [t, 2]),
        ]
    for mode in ("trunc", "floor"):
        div = lambda lib, p, q, mode=mode: lib.div(p, q, rounding_mode=mode)  # noqa: E731
        cases += [
            (f"div {mode} bools", div, [t, f]),
            (f"div {mode} by False", div, [t, T("bool", [False] * 3)]),
        ]
    cases += [
        ("bools // bools", lambda lib, p, q: p // q, [t, f]),
        ("bools % bools", lambda lib, p, q: p % q, [t, f]),
        ("bools << bools", lambda lib, p, q: p << q, [t, f]),
        ("bools >> True", lambda lib, p: p >> True, [t]),
        ("bools // 2", lambda lib, p: p // 2, [t]),
    ]
    check(torch, cases)
    check(torch, cases[:2], jit=True)


def test_complex_and_polar_take_float_parts_of_one_dtype(torch):
    # torch 2.13 raises RuntimeError for parts of two dtypes or of integers/bools ("Expected
    # both inputs to be Half, Float or Double tensors"); kiln raised a TypeError for complex
    # and computed polar of integers and bools as complex64
    cases = []
    for a, b in (
        ("float32", "float64"),
        ("int64", "int64"),
        ("bool", "bool"),
        ("float32", "int64"),
        ("float64", "float64"),
    ):
        for name in ("complex", "polar"):
            cases.append((f"{name} {a} {b}", _op(name), [T(a, [1, 0]), T(b, [1, 2])]))
    check(torch, cases)


# -- add and sub with alpha: one rounding of input + alpha * other ----------------------------

# 512 elements: PyTorch's vectorized loop takes blocks of 32 and rounds alpha * b to float16
# (bfloat16) first in the scalar loop of a remainder; kiln follows the vectorized loop
_A = (_RNG.normal(size=512)).astype(np.float32).tolist()
_B = (_RNG.normal(size=512)).astype(np.float32).tolist()


def _alpha_cases(dtypes):
    cases = []
    for d in dtypes:
        x, y = T(d, _A), T(d, _B)
        for alpha in (0.3, -0.001, 3):
            kw = {"alpha": alpha}
            cases += [
                (f"add {d} {alpha}", lambda lib, p, q, kw=kw: lib.add(p, q, **kw), [x, y]),
                (f"sub {d} {alpha}", lambda lib, p, q, kw=kw: lib.sub(p, q, **kw), [x, y]),
                (f"add_ {d} {alpha}", lambda lib, p, q, kw=kw: p.clone().add_(q, **kw), [x, y]),
                (f"add {d} number {alpha}", lambda lib, p, kw=kw: lib.add(p, 1.7, **kw), [x]),
                (f"rsub {d} {alpha}", lambda lib, p, q, kw=kw: lib.rsub(p, q, **kw), [x, y]),
                (f"sub_ {d} {alpha}", lambda lib, p, q, kw=kw: p.clone().sub_(q, **kw), [x, y]),
                (
                    f"add {d} out {alpha}",
                    lambda lib, p, q, kw=kw: lib.add(p, q, out=lib.empty_like(p), **kw),
                    [x, y],
                ),
            ]
    return cases


def test_add_with_alpha_rounds_once_as_pytorchs_fused_kernel(torch):
    # torch 2.13 computes add(a, b, alpha=0.3) in float32 as one fused multiply-add (one
    # rounding): kiln rounded alpha * b first, off by an ulp in ~18% of the elements; float16
    # and bfloat16 take alpha rounded to their dtype, a + alpha * b in float32, then round
    cases = _alpha_cases(("float32", *HALF))
    check(torch, cases)
    check(torch, cases[:2], jit=True)
    # float32 exactly (check's 1e-6 tolerance takes an ulp there)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=4096).astype(np.float32), rng.normal(size=4096).astype(np.float32)
    for alpha in (0.3, -0.001, 3):
        for name in ("add", "sub"):
            want = getattr(torch, name)(torch.tensor(a), torch.tensor(b), alpha=alpha).numpy()
            got = getattr(kn, name)(kn.tensor(a), kn.tensor(b), alpha=alpha).numpy()
            np.testing.assert_array_equal(got, want, err_msg=f"{name} alpha={alpha}")


def test_entr_in_half_precision_rounds_the_log_first(torch):
    # torch 2.13: special.entr of float16/bfloat16 is -x * log(x) with log(x) rounded to the
    # dtype first (354 of 3000 random float16 values differed from kiln's one rounding)
    x = _X + _Y + [0.0, -0.0, -1.0, INF, -INF, NAN, 1.0]
    cases = [(f"entr {d}", _op("special.entr"), [T(d, x)]) for d in HALF]
    check(torch, cases)
    check(torch, cases[:1], jit=True)


def test_logaddexp2_in_half_precision_is_float32_rounded_once(torch):
    # torch 2.13: logaddexp2 of float16/bfloat16 is the float32 result rounded once
    # (logaddexp2(0, -0) is 1.0 in bfloat16; kiln's steps in bfloat16 gave 0.996)
    cases = []
    for d in HALF:
        cases += [
            (f"logaddexp2 {d}", _op("logaddexp2"), [T(d, _X), T(d, _Y)]),
            (
                f"logaddexp2 {d} zeros",
                _op("logaddexp2"),
                [T(d, [0.0, -INF, INF, NAN]), T(d, [-0.0, -INF, INF, 1.0])],
            ),
            (f"logaddexp {d}", _op("logaddexp"), [T(d, _X), T(d, _Y)]),
        ]
    check(torch, cases)
    check(torch, cases[:1], jit=True)


def test_half_precision_floor_and_trunc_division_by_a_python_float(torch):
    # torch 2.13 divides a float16/bfloat16 tensor by a Python float in float32 with the float
    # unrounded (as its mul and div), then rounds: floor_divide(bfloat16 x, 1.37) differed in
    # 187 of 3000 random elements (kiln rounded 1.37 to bfloat16 first); a float first is
    # rounded to the tensor's dtype (as kiln does), and that case is
    # test_half_precision_floor_division_rounds_each_step's
    x = [round(v, 3) for v in (_RNG.normal(size=1024) * 20).tolist()]
    cases = []
    for d in HALF:
        for s in (1.37, -0.3, 2.5):
            floor = lambda lib, p, s=s: lib.div(p, s, rounding_mode="floor")  # noqa: E731
            trunc = lambda lib, p, s=s: lib.div(p, s, rounding_mode="trunc")  # noqa: E731
            fdiv = lambda lib, p, s=s: lib.floor_divide(p, s)  # noqa: E731
            cases += [
                (f"floor_divide {d} {s}", fdiv, [T(d, x)]),
                (f"{d} // {s}", lambda lib, p, s=s: p // s, [T(d, x)]),
                (f"div floor {d} {s}", floor, [T(d, x)]),
                (f"div trunc {d} {s}", trunc, [T(d, x)]),
            ]
    check(torch, cases)
    check(torch, cases[:5], jit=True)


def test_half_precision_floor_division_rounds_each_step(torch):
    # torch 2.13's float16/bfloat16 floor division of two tensors (and of a Python float by a
    # tensor) takes its float algorithm's steps in the half dtype, each rounded: (a - fmod(a,
    # b)) / b, minus 1 where the signs differ, then floored. floor_divide(float16 -4.0547,
    # 0.0010004) is -4056 there; kiln rounded the float32 quotient once, -4054 (and 2.5 //
    # bfloat16 -0.02405 is -105 against kiln's -104); a divisor of one element takes its
    # float32 loop, rounded once
    rng = np.random.default_rng(1)
    a = (rng.normal(size=4096) * 5).round(3).tolist() + [1.0, -1.0, 0.0, -0.0, 5.0, INF, NAN]
    b = (rng.normal(size=4096) * 5).round(3).tolist() + [0.0, 0.0, 3.0, -3.0, -0.0, 2.0, 1.0]
    cases = []
    for d in HALF:
        cases += [
            (f"floor_divide {d}", _op("floor_divide"), [T(d, a), T(d, b)]),
            (
                f"div floor {d}",
                lambda lib, p, q: lib.div(p, q, rounding_mode="floor"),
                [T(d, a), T(d, b)],
            ),
            (f"2.5 // {d}", lambda lib, q: 2.5 // q, [T(d, b)]),
            # a divisor of one element: float32, rounded once
            (f"{d} // 0-d", lambda lib, p, q: p // q, [T(d, a), T(d, 0.0137)]),
            (f"{d} // [1]", lambda lib, p, q: p // q, [T(d, a), T(d, [-0.024])]),
        ]
    check(torch, cases)
    check(torch, cases[:1] + cases[-1:], jit=True)


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


@pytest.mark.xfail(
    strict=True,
    reason="torch's float64 add/sub with alpha is one fused multiply-add; kiln rounds "
    "alpha * b first (no wider dtype to compute it in), an ulp off in ~18% of random elements",
)
def test_add_with_alpha_in_float64_rounds_once(torch):
    # compared exactly (check's 1e-6 tolerance takes float64's ulps)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=512), rng.normal(size=512)
    want = torch.add(torch.tensor(a), torch.tensor(b), alpha=0.3).numpy()
    np.testing.assert_array_equal(kn.add(kn.tensor(a), kn.tensor(b), alpha=0.3).numpy(), want)
