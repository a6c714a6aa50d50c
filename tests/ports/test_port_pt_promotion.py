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


@pytest.mark.xfail(
    strict=True,
    reason="kiln rounds each product of float32 lerp/addcmul; computing them in float64 and "
    "rounding once gives torch's values, but a float64 cast of a transposed input makes the "
    "sum laid out as the other operand (test_eager_layouts_torch's lerp/addcmul cases fail)",
)
def test_float32_lerp_and_addcmul_round_once_as_pytorchs_fused_kernels(torch):
    # torch 2.13's float32 lerp is fma(w, end - x, x) for |w| < 0.5, else
    # end - (end - x) * (1 - w) rounded once, and addcmul(x, a, b, value=v) is
    # fma(v * a, b, x): kiln rounded each product (5036 and 2874 of 20000 random elements an
    # ulp off); compared exactly
    rng = np.random.default_rng(4)
    x, y, z = (rng.normal(size=(3, 4096)) * 3).astype(np.float32)
    w = rng.uniform(size=4096).astype(np.float32)
    calls = [
        ("lerp 0.3", lambda lib, p, q, r, s: lib.lerp(p, q, 0.3)),
        ("lerp 0.7", lambda lib, p, q, r, s: lib.lerp(p, q, 0.7)),
        ("lerp tensor", lambda lib, p, q, r, s: lib.lerp(p, q, s)),
        ("lerp_", lambda lib, p, q, r, s: p.clone().lerp_(q, 0.1)),
        ("addcmul", lambda lib, p, q, r, s: lib.addcmul(p, q, r, value=0.3)),
        ("addcmul_", lambda lib, p, q, r, s: p.clone().addcmul_(q, r, value=-0.01)),
    ]
    for name, fn in calls:
        want = fn(torch, *map(torch.tensor, (x, y, z, w))).numpy()
        got = fn(kn, *map(kn.tensor, (x, y, z, w))).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


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
