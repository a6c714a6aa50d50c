"""Op-table rows for torch.special's functions (kiln/ops/elementwise_special.py, reached
through `kn.special`): values against SciPy computed in float64 and rounded once to the row's
dtype, in every mode test_ops.py and its siblings run (graph, eager, symbolic dims, `out=`,
compiled, the simulated GPU), and the derivatives by finite differences (test_op_grads.py).

References: SciPy's functions of the same name (`i0e`, `ndtr`, `zeta`, `j0`, `k0e`,
`airy`...); for the orthogonal polynomials SciPy's `eval_chebyt/chebyu/sh_chebyt/sh_chebyu/
hermite/hermitenorm/laguerre/legendre`, and for the Chebyshev polynomials of the third and
fourth kinds, which SciPy lacks, the identities V_n = U_n - U_{n-1} and W_n = U_n + U_{n-1}
(the shifted ones at 2x - 1). zeta's and gammainc's rows take their first input as integers
or a Python number: PyTorch (and kiln) give no derivative with respect to it, and the
gradient rows differentiate every float input.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc
from op_case import OpCase

import kiln as kn

FLOATS = ("float32", "float64")
S = kn.special

CASES: list[OpCase] = []


def rows(*cases):
    CASES.extend(cases)


def uniform(*specs):
    """`make_args`: one array per (shape, low, high[, dtype]) drawn uniformly; the dtype is
    the row's unless given ("int64": integers in [low, high))."""

    def make(rng, dtype):
        out = []
        for shape, low, high, *own in specs:
            if own and own[0] == "int64":
                out.append(rng.integers(low, high, shape).astype(np.int64))
            else:
                out.append(np.asarray(rng.uniform(low, high, shape), own[0] if own else dtype))
        return out

    return make


def given(*arrays):
    """`make_args`: these arrays in the row's dtype."""
    return lambda rng, dtype: [np.asarray(a, dtype) for a in arrays]


def in64(f):
    """SciPy's `f` in float64, rounded to the float dtype the inputs promote to (PyTorch's:
    an int64 operand beside a float one takes the float's dtype)."""

    def ref(*xs):
        floats = [x.dtype for x in xs if x.dtype.kind == "f"]
        out = np.result_type(*floats) if floats else np.dtype(np.float32)
        with np.errstate(all="ignore"):
            return np.asarray(f(*(np.asarray(x, np.float64) for x in xs))).astype(out)

    return ref


def unary_rows(op, fn, ref, low, high, label="", layouts=False):
    """A basic row of a one-input function on [low, high); with `layouts`, 0-d, size-0 and
    transposed-view rows too (one function of each kernel family takes them: the rows
    of the others would check the same elementwise machinery again)."""
    name = f"{label}-" if label else ""

    def transposed(rng, dtype):
        return [np.asarray(rng.uniform(low, high, (5, 3)), dtype).T]

    rows(OpCase(op, f"{name}basic", fn, uniform(((3, 5), low, high)), ref, FLOATS))
    if layouts:
        rows(
            OpCase(op, f"{name}0d", fn, uniform(((), low, high)), ref, FLOATS),
            OpCase(op, f"{name}empty", fn, uniform(((0, 3), low, high)), ref, FLOATS),
            OpCase(op, f"{name}transposed", fn, transposed, ref, FLOATS),
        )


# -- one input, differentiable ----------------------------------------------------------------

unary_rows("i0e", S.i0e, in64(sc.i0e), -8.0, 8.0, layouts=True)
unary_rows("i1e", S.i1e, in64(sc.i1e), -8.0, 8.0)
unary_rows("ndtr", S.ndtr, in64(sc.ndtr), -5.0, 5.0)
unary_rows("ndtri", S.ndtri, in64(sc.ndtri), 0.02, 0.98)
unary_rows("log_ndtr", S.log_ndtr, in64(sc.log_ndtr), -12.0, 4.0)
unary_rows("erfcx", S.erfcx, in64(sc.erfcx), -2.0, 12.0)
unary_rows("entr", S.entr, in64(sc.entr), 0.05, 3.0)
unary_rows("erfc", kn.erfc, in64(sc.erfc), -3.0, 12.0)
_EDGES = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e-8]
rows(
    OpCase("i0e", "edges", S.i0e, given(_EDGES), in64(sc.i0e), FLOATS),
    OpCase("i1e", "edges", S.i1e, given(_EDGES), in64(sc.i1e), FLOATS),
    OpCase("ndtr", "edges", S.ndtr, given(_EDGES), in64(sc.ndtr), FLOATS),
    OpCase("ndtri", "edges", S.ndtri, given([0.0, 1.0, 0.5, -0.5, 2.0, np.nan, 1e-30]),
           in64(sc.ndtri), FLOATS),
    OpCase("log_ndtr", "edges", S.log_ndtr, given(_EDGES), in64(sc.log_ndtr), FLOATS),
    OpCase("erfcx", "edges", S.erfcx, given(_EDGES), in64(sc.erfcx), FLOATS),
    OpCase("entr", "edges", S.entr, given(_EDGES), in64(sc.entr), FLOATS),
    OpCase("erfc", "edges", kn.erfc, given(_EDGES), in64(sc.erfc), FLOATS),
    OpCase("ndtr", "int", S.ndtr, uniform(((2, 3), -3, 4, "int64")), in64(sc.ndtr),
           ("float32",)),
)  # fmt: skip

# -- one input, no derivative (PyTorch's): Bessel functions, airy_ai ---------------------------

for _op, _fn, _ref, _low, _high in (
    ("bessel_j0", S.bessel_j0, sc.j0, -20.0, 20.0),
    ("bessel_j1", S.bessel_j1, sc.j1, -20.0, 20.0),
    ("bessel_y0", S.bessel_y0, sc.y0, 0.1, 20.0),
    ("bessel_y1", S.bessel_y1, sc.y1, 0.1, 20.0),
    ("modified_bessel_k0", S.modified_bessel_k0, sc.k0, 0.1, 20.0),
    ("modified_bessel_k1", S.modified_bessel_k1, sc.k1, 0.1, 20.0),
    ("scaled_modified_bessel_k0", S.scaled_modified_bessel_k0, sc.k0e, 0.1, 50.0),
    ("scaled_modified_bessel_k1", S.scaled_modified_bessel_k1, sc.k1e, 0.1, 50.0),
    ("spherical_bessel_j0", S.spherical_bessel_j0, lambda x: sc.spherical_jn(0, x), -20.0, 20.0),
    ("airy_ai", S.airy_ai, lambda x: sc.airy(x)[0], -10.0, 5.0),
):
    unary_rows(_op, _fn, in64(_ref), _low, _high, layouts=_op in ("bessel_j0", "airy_ai"))
    rows(OpCase(_op, "edges", _fn, given(_EDGES), in64(_ref), FLOATS))
# modified_bessel_i0/i1 are the i0/i1 ops with their results detached: rows of the detaching
# op (the gradient tests skip it), labelled by the function
unary_rows("stop_gradient", S.modified_bessel_i0, in64(sc.i0), -8.0, 8.0, "modified_bessel_i0")
unary_rows("stop_gradient", S.modified_bessel_i1, in64(sc.i1), -8.0, 8.0, "modified_bessel_i1")

# -- two inputs -------------------------------------------------------------------------------

for _op, _fn, _ref in (("xlogy", kn.xlogy, sc.xlogy), ("xlog1py", S.xlog1py, sc.xlog1py)):
    _zero_x = [0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0, np.nan]
    _y = [0.0, -1.0, np.inf, np.nan, 3.0, -2.0, np.inf, 1.0]
    rows(
        OpCase(_op, "basic", _fn, uniform(((3, 5), -2.0, 2.0), ((3, 5), 0.1, 3.0)), in64(_ref)),
        OpCase(_op, "broadcast", _fn, uniform(((3, 1), -2.0, 2.0), ((5,), 0.1, 3.0)),
               in64(_ref)),
        OpCase(_op, "edges", _fn, given(_zero_x, _y), in64(_ref)),
        OpCase(_op, "scalar-x", lambda y, f=_fn: f(2.5, y), uniform(((4,), 0.1, 3.0)),
               in64(lambda y, r=_ref: r(2.5, y))),
        OpCase(_op, "int-y", _fn, uniform(((2, 3), -2.0, 2.0), ((2, 3), 1, 5, "int64")),
               in64(_ref)),
    )  # fmt: skip

# the first inputs of the edge rows: constants (no derivative with respect to them)
_ZETA_X = [1.0, 2.0, 0.5, np.inf, 2.0, 2.0, np.nan, 4.0]
_GAMMA_A = [0.0, 1.0, 1.0, -1.0, 2.0, np.inf, 1.0]
rows(
    OpCase("zeta", "int-x", lambda x, q: S.zeta(x + 1, q),
           uniform(((3, 5), 1, 6, "int64"), ((3, 5), 0.2, 4.0)),
           in64(lambda x, q: sc.zeta(x + 1, q))),
    OpCase("zeta", "scalar-x", lambda q: S.zeta(3.5, q), uniform(((2, 3), 0.2, 4.0)),
           in64(lambda q: sc.zeta(3.5, q))),
    OpCase("zeta", "edges", lambda q: S.zeta(np.asarray(_ZETA_X, q.dtype), q),
           given([1.0, 0.0, 1.0, 1.0, -1.5, np.inf, 1.0, -2.0]),
           in64(lambda q: sc.zeta(np.asarray(_ZETA_X), q))),
    OpCase("gammainc", "int-a", S.gammainc,
           uniform(((3, 5), 1, 6, "int64"), ((3, 5), 0.1, 8.0)), in64(sc.gammainc)),
    OpCase("gammainc", "scalar-a", lambda x: S.gammainc(np.asarray(2.5, x.dtype), x),
           uniform(((2, 3), 0.1, 8.0)), in64(lambda x: sc.gammainc(2.5, x))),
    OpCase("gammainc", "edges", lambda x: S.gammainc(np.asarray(_GAMMA_A, x.dtype), x),
           given([1.0, 0.0, np.inf, 1.0, -1.0, 1.0, np.nan]),
           in64(lambda x: sc.gammainc(np.asarray(_GAMMA_A), x))),
    OpCase("gammaincc", "int-a", S.gammaincc,
           uniform(((3, 5), 1, 6, "int64"), ((3, 5), 0.1, 8.0)), in64(sc.gammaincc)),
    OpCase("gammaincc", "broadcast", lambda x: S.gammaincc(np.asarray([[0.5], [3.0]], x.dtype), x),
           uniform(((4,), 0.1, 8.0)), in64(lambda x: sc.gammaincc(np.array([[0.5], [3.0]]), x))),
    OpCase("gammaincc", "edges", lambda x: S.gammaincc(np.asarray(_GAMMA_A, x.dtype), x),
           given([1.0, 0.0, np.inf, 1.0, -1.0, 1.0, np.nan]),
           in64(lambda x: sc.gammaincc(np.asarray(_GAMMA_A), x))),
)  # fmt: skip

# -- orthogonal polynomials: x in and around [-1, 1] (the shifted ones: [0, 1]), n in 0..13 ---


def _u(n, x):
    return np.where(n >= 0, sc.eval_chebyu(np.maximum(n, 0).astype(np.int64), x), 0.0)


def _v(n, x):  # the third kind: V_n = U_n - U_{n-1}
    return _u(n, x) - _u(n - 1, x)


def _w(n, x):  # the fourth kind: W_n = U_n + U_{n-1}
    return _u(n, x) + _u(n - 1, x)


def _int(f):
    return lambda n, x: f(np.asarray(n).astype(np.int64), x)


_POLYNOMIAL_REFS = {
    "chebyshev_polynomial_t": _int(sc.eval_chebyt),
    "chebyshev_polynomial_u": _int(sc.eval_chebyu),
    "chebyshev_polynomial_v": _v,
    "chebyshev_polynomial_w": _w,
    "shifted_chebyshev_polynomial_t": _int(sc.eval_sh_chebyt),
    "shifted_chebyshev_polynomial_u": _int(sc.eval_sh_chebyu),
    "shifted_chebyshev_polynomial_v": lambda n, x: _v(n, 2 * x - 1),
    "shifted_chebyshev_polynomial_w": lambda n, x: _w(n, 2 * x - 1),
    "hermite_polynomial_h": _int(sc.eval_hermite),
    "hermite_polynomial_he": _int(sc.eval_hermitenorm),
    "laguerre_polynomial_l": _int(sc.eval_laguerre),
    "legendre_polynomial_p": _int(sc.eval_legendre),
}

for _k, (_kind, _ref) in enumerate(_POLYNOMIAL_REFS.items()):
    _fn = getattr(S, _kind)
    _lo, _hi = (-0.1, 1.1) if _kind.startswith("shifted") else (-1.2, 1.2)
    if _k % 2 == 0:  # int64 degrees
        rows(OpCase("orthogonal_polynomial", _kind, _fn,
                    uniform(((3, 5), _lo, _hi), ((3, 5), 0, 14, "int64")),
                    in64(lambda x, n, r=_ref: r(n, x))))  # fmt: skip
    else:  # float degrees (truncated), broadcast against x
        rows(OpCase("orthogonal_polynomial", f"{_kind}-float-n-broadcast", _fn,
                    uniform(((4, 1), _lo, _hi), ((5,), 0, 14)),
                    in64(lambda x, n, r=_ref: r(np.trunc(n), x))))  # fmt: skip
    if _kind in ("chebyshev_polynomial_u", "hermite_polynomial_h"):  # a Python degree
        rows(OpCase("orthogonal_polynomial", f"{_kind}-python-n", lambda x, f=_fn: f(x, 9),
                    uniform(((2, 3), _lo, _hi)),
                    in64(lambda x, r=_ref: r(np.full(x.shape, 9), x))))  # fmt: skip
