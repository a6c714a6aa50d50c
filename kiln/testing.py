"""Test helpers: `assert_close` with dtype-aware tolerances, `gradcheck`/`gradgradcheck` against
finite differences in float64, `check_eager_vs_compiled`, and hypothesis `strategies`
(hypothesis is imported only there).
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from . import frontend as _fe
from .checkpoint import as_numpy
from .errors import ArgumentError, ArgumentTypeError
from .graph.core import Graph, Symbol
from .runtime import function
from .testing_make import make_tensor

__all__ = ["assert_close", "check_eager_vs_compiled", "gradcheck", "gradgradcheck", "make_tensor",
           "strategies"]  # fmt: skip

# (rtol, atol) by dtype, as torch.testing.assert_close; exact for ints and bools.
_TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5),
    dt.bfloat16: (1.6e-2, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}


def _is_weak(value) -> bool:
    """Python scalars and lists take the other side's dtype (kiln's weak-scalar rule)."""
    return isinstance(value, (bool, int, float, complex, list, tuple))


def _default_tolerances(*dtypes) -> tuple[float, float]:
    """The loosest (rtol, atol) among `dtypes`."""
    pairs = [_TOLERANCES.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def assert_close(actual, expected, rtol=None, atol=None, *, equal_nan=False, check_dtype=True):
    """Asserts `|actual - expected| <= atol + rtol * |expected|` element by element.

    Accepts NumPy arrays, scalars, kiln Variables and Tensors. Shapes must be equal (no
    broadcasting) and, with `check_dtype`, dtypes too; a Python scalar or list takes the
    other side's dtype. Default tolerances follow the dtype, as in torch.testing: float16
    1e-3/1e-5, bfloat16 1.6e-2/1e-5, float32 1.3e-6/1e-5, float64 1e-7/1e-7 (rtol/atol);
    ints and bools exact.

    >>> import numpy as np
    >>> assert_close(np.float32([1.0, 2.0]), [1.0, 2.0000001])
    >>> assert_close(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.5]]))
    Traceback (most recent call last):
    AssertionError: arrays are not close (float64, shape (2, 2), rtol=1e-07, atol=1e-07)
    mismatched elements: 1 / 4 (25.0%)
    worst element at index (1, 1): actual 4.0, expected 4.5, abs error 0.5, rel error 0.111111
    greatest abs error 0.5 at (1, 1); greatest rel error 0.111111 at (1, 1)
    """
    if (rtol is None) != (atol is None):
        raise ArgumentError("give both rtol and atol, or neither (for the dtype's defaults)")
    a, e = _pair(actual, expected)
    if a.shape != e.shape:
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    if check_dtype and a.dtype != e.dtype:
        raise AssertionError(
            f"dtypes differ: actual {a.dtype}, expected {e.dtype} "
            "(pass check_dtype=False to compare the values only)"
        )
    if rtol is None:
        rtol, atol = _default_tolerances(a.dtype, e.dtype)
    ok = _close(a, e, rtol, atol, equal_nan)
    if not ok.all():
        raise AssertionError(_report(a, e, ok, rtol, atol))


def _pair(actual, expected):
    if _is_weak(actual) and not _is_weak(expected):
        e = as_numpy(expected)
        return np.asarray(actual, dtype=e.dtype), e
    a = as_numpy(actual)
    e = np.asarray(expected, dtype=a.dtype) if _is_weak(expected) else as_numpy(expected)
    return a, e


def _exact(dtype) -> bool:
    return not (dt.is_float(dtype) or np.dtype(dtype).kind == "c")


def _close(a, e, rtol, atol, equal_nan):
    if _exact(a.dtype) and _exact(e.dtype):
        return a == e
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (np.abs(a - e) <= atol + rtol * np.abs(e)) & np.isfinite(e)
        ok |= a == e  # infinities must be equal: inf <= inf would let inf match -inf
    if equal_nan:
        ok |= np.isnan(a) & np.isnan(e)
    return ok


def _errors(a, e):
    """Absolute and relative errors, and |expected|, in float64 (or complex128)."""
    wide = np.complex128 if "c" in (a.dtype.kind, e.dtype.kind) else np.float64
    a64, e64 = a.astype(wide), e.astype(wide)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_err = np.abs(a64 - e64)
        rel_err = abs_err / np.abs(e64)
    rel_err = np.where(abs_err == 0, 0.0, rel_err)  # 0 / 0
    return abs_err, rel_err, np.abs(e64)


def _argmax(values) -> tuple:
    """The index of the largest value, NaN counting as the largest."""
    values = np.where(np.isnan(values), np.inf, values)
    return tuple(int(i) for i in np.unravel_index(np.argmax(values), values.shape))


def _report(a, e, ok, rtol, atol) -> str:
    abs_err, rel_err, magnitude = _errors(a, e)
    allowed = atol + rtol * magnitude
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # exact: by abs error
        excess = np.where(ok, 0.0, abs_err / np.where(allowed > 0, allowed, 1e-300))
    worst = _argmax(excess)
    bad = int((~ok).sum())
    dtypes = f"{a.dtype}" if a.dtype == e.dtype else f"{a.dtype} vs {e.dtype}"
    lines = [
        f"arrays are not close ({dtypes}, shape {a.shape}, rtol={rtol:g}, atol={atol:g})",
        f"mismatched elements: {bad} / {a.size} ({100 * bad / a.size:.1f}%)",
        f"worst element at index {worst}: actual {a[worst]}, expected {e[worst]}, "
        f"abs error {abs_err[worst]:g}, rel error {rel_err[worst]:g}",
    ]
    if not _exact(a.dtype) and not _exact(e.dtype) and (np.isnan(a) & np.isnan(e)).any():
        lines.append("NaN in both at some elements: pass equal_nan=True to count them as equal")
    if a.size > 1:
        i_abs, i_rel = _argmax(np.where(ok, 0.0, abs_err)), _argmax(np.where(ok, 0.0, rel_err))
        lines.append(
            f"greatest abs error {abs_err[i_abs]:g} at {i_abs}; "
            f"greatest rel error {rel_err[i_rel]:g} at {i_rel}"
        )
    return "\n".join(lines)


# -- gradients against finite differences ---------------------------------------------------


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3) -> bool:
    """Checks kiln's gradient of `fn` against central finite differences, in float64.

    `fn` maps Symbols (float64 placeholders shaped like `inputs`, complex128 ones for complex
    inputs; int and bool inputs keep their dtype and are not differentiated) to one Symbol y.
    The analytic gradient of `sum(y * r)` for a fixed random `r` (of y itself when y is a
    real scalar; `sum(real(y) * r + imag(y) * s)` for a complex y) is compared, element by
    element, with `(f(x + eps) - f(x - eps)) / (2 eps)`: each element must satisfy
    `|analytic - numeric| <= atol + rtol * |numeric|`. A complex input is perturbed in its
    real and its imaginary part, as PyTorch's gradcheck does: its numeric gradient is
    `d/dRe + i d/dIm` of that real value, PyTorch's (conjugate Wirtinger) convention.
    Returns True, or raises AssertionError reporting the worst element.

    >>> import kiln as kn, numpy as np
    >>> gradcheck(lambda x, w: kn.tanh(x @ w), [np.ones((2, 3)), np.full((3, 2), 0.1)])
    True
    >>> gradcheck(lambda z: kn.abs(z * z + 1j), [np.array([1 + 2j, -0.5j])])
    True
    >>> gradcheck(lambda x: kn.sum(kn.stop_gradient(x) * x), [np.array([1.0, 2.0])])
    Traceback (most recent call last):
    AssertionError: gradcheck failed for input 0 (shape (2,)): 2 of 2 elements differ
    worst element (1,): analytic 2, numeric 4, abs error 2, rel error 0.5
    allowed: atol=1e-05 + rtol=0.001 * |numeric|
    analytic: d y / d input 0 for y = fn(*inputs)
    """
    return _check(fn, inputs, eps, atol, rtol, "")


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3) -> bool:
    """Checks second derivatives: kiln's gradient of the gradient of `fn` against finite
    differences of that (analytic) gradient, all in float64.

    It runs `gradcheck` on `x -> sum_i sum(v_i * grad_i(x))`, where `grad_i` is the analytic
    gradient of `sum(y * r)` with respect to input i and `v_i` are fixed random directions.

    >>> import kiln as kn, numpy as np
    >>> gradgradcheck(lambda x: kn.sum(kn.exp(x) * x), [np.array([0.5, -1.0])])
    True
    """
    rng = np.random.default_rng(1)

    def first_order(*xs):
        floats = [x for x in xs if dt.is_differentiable(x.dtype)]
        grads = _grad(_directional(_output(fn, xs)), floats)
        terms = [_fe.sum(_fe.real(g * _fe.constant(rng.standard_normal(g.shape))))
                 for g in grads]  # fmt: skip
        return sum(terms[1:], terms[0])

    return _check(first_order, inputs, eps, atol, rtol, "gradient of the gradient, ")


def _output(fn, xs) -> Symbol:
    y = fn(*xs)
    if not isinstance(y, Symbol):
        raise ArgumentTypeError(f"gradcheck: fn must return one Symbol, got {type(y).__name__}")
    if not dt.is_differentiable(y.dtype):
        raise ArgumentTypeError(
            f"gradcheck: fn must return a float Symbol (or a complex one), got {y.dtype}"
        )
    return y


def _directional(y) -> Symbol:
    """`y` itself when it is a real scalar, else `sum(y * r)` for a fixed random r; for a
    complex y, `sum(real(y) * r + imag(y) * s)` (both parts checked, in one direction)."""
    rng = np.random.default_rng(0)
    if y.dtype.kind == "c":
        real = _fe.real(y)
        r, s = rng.standard_normal((2, *y.shape))
        parts = real * _fe.constant(r, dtype=real.dtype) + _fe.imag(y) * _fe.constant(
            s, dtype=real.dtype
        )
        return _fe.sum(parts)
    if y.shape == ():
        return y
    r = rng.standard_normal(tuple(y.shape))
    return _fe.sum(y * _fe.constant(r, dtype=y.dtype))


def _grad(target, xs) -> list:
    return _fe.grad(target, xs, disconnected="zero") if xs else []


def _check(fn, inputs, eps, atol, rtol, what) -> bool:
    arrays = [np.asarray(x) for x in inputs]
    arrays = [a.astype(np.float64) if dt.is_float(a.dtype) else
              a.astype(np.complex128) if a.dtype.kind == "c" else a for a in arrays]  # fmt: skip
    wrt = [i for i, a in enumerate(arrays) if dt.is_differentiable(a.dtype)]
    if not wrt:
        raise ArgumentError("gradcheck needs at least one float input (or a complex one)")
    with Graph().as_default():
        xs = [_fe.placeholder(a.dtype, a.shape, name=f"input{i}") for i, a in enumerate(arrays)]
        y = _output(fn, xs)
        target = _directional(y)
        grads = _grad(target, [xs[i] for i in wrt])
        for i, g in zip(wrt, grads):
            if tuple(g.shape) != arrays[i].shape:
                raise AssertionError(
                    f"gradcheck: {what}gradient of input {i} has shape {g.shape}, "
                    f"not the input's {arrays[i].shape}"
                )
        analytic_fn = function(xs, grads)
        value_fn = function(xs, target)
    analytic = analytic_fn(*arrays)
    for i, g in zip(wrt, analytic):
        numeric = _numeric_gradient(value_fn, arrays, i, eps)
        g = np.asarray(g, dtype=numeric.dtype)
        ok = np.abs(g - numeric) <= atol + rtol * np.abs(numeric)
        if not ok.all():
            shape = tuple(y.shape)
            raise AssertionError(_grad_report(i, g, numeric, ok, atol, rtol, what, shape))
    return True


def _numeric_gradient(value_fn, arrays, i, eps) -> np.ndarray:
    """Central differences of the scalar `value_fn` in each element of input i; for a
    complex input, `d/dRe + i d/dIm` (each part perturbed in turn, as PyTorch's gradcheck)."""
    args = [a.copy() for a in arrays]
    x = args[i]
    flat = x.reshape(-1)  # a view: writes through to args[i]
    steps = (eps, 1j * eps) if x.dtype.kind == "c" else (eps,)
    out = np.zeros(x.size, x.dtype)
    for j in range(x.size):
        saved = flat[j]
        for unit, step in zip((1, 1j), steps):
            flat[j] = saved + step
            plus = float(value_fn(*args))
            flat[j] = saved - step
            minus = float(value_fn(*args))
            out[j] += unit * (plus - minus) / (2 * eps)
        flat[j] = saved
    return out.reshape(x.shape)


def _grad_report(i, analytic, numeric, ok, atol, rtol, what, y_shape) -> str:
    abs_err = np.abs(analytic - numeric)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.where(ok, 0.0, abs_err / (atol + rtol * np.abs(numeric)))
        rel_err = abs_err / np.abs(numeric)
    k = _argmax(excess)
    bad = int((~ok).sum())
    return "\n".join([
        f"gradcheck failed for {what}input {i} (shape {analytic.shape}): "
        f"{bad} of {analytic.size} elements differ",
        f"worst element {k}: analytic {analytic[k]:g}, numeric {numeric[k]:g}, "
        f"abs error {abs_err[k]:g}, rel error {rel_err[k]:g}",
        f"allowed: atol={atol:g} + rtol={rtol:g} * |numeric|",
        f"analytic: d sum(y * r) / d input {i} for y = fn(*inputs), y of shape {y_shape}, "
        "r fixed random" if y_shape != () else f"analytic: d y / d input {i} for y = fn(*inputs)",
    ])  # fmt: skip


# -- eager against compiled ------------------------------------------------------------------


def check_eager_vs_compiled(fn, *inputs, grads=True, rtol=None, atol=None) -> bool:
    """Runs `fn` eagerly and through `kn.compile`; compares outputs and gradients.

    Arrays and Tensors among `inputs` become fresh leaf Tensors (float ones requiring grad when
    `grads`); other values pass as they are (static). With `grads`, each run backwards
    `sum(out * r)` over the outputs that require grad (`r` fixed random), and the gradients of
    the inputs and of the module parameters `fn` uses are compared, with `assert_close`'s
    tolerances. In the default mode (`KILN_EXACT` unset or 0) compiled programs run kiln's own
    float32 exp and tanh (within 1 ulp of the correctly rounded value and 2 of NumPy's, but 3
    at three inputs of exp where NumPy's is 3 off) and may call libm functions that differ
    from NumPy's by at most 2 ulp (docs/debugging.md); the default float tolerances (float32:
    about 11 ulp relative) cover that per op. With `KILN_EXACT=1` compiled programs give
    eager mode's bits. Returns True, or raises AssertionError naming the first output or
    gradient that differs and by how much.

    >>> import kiln as kn, numpy as np
    >>> check_eager_vs_compiled(lambda x, w: kn.tanh(x @ w), np.ones((2, 3)), np.ones((3, 2)))
    True
    >>> def f(x):  # knows whether it is traced
    ...     return x * (2.5 if isinstance(x, kn.Symbol) else 2.0)
    >>> check_eager_vs_compiled(f, np.ones(3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: output 'output' differs, compiled (actual) vs eager (expected): arrays ...
    mismatched elements: 3 / 3 (100.0%)
    ...
    """
    from .tracing import CompiledFunction

    compiled = CompiledFunction(fn)  # (a Module too: kn.compile's OptimizedModule runs one)
    example = compiled.flatten_args([_leaf(x, grads) for x in inputs], {})
    params = compiled.trace_for(*example).params  # the module parameters `fn` uses
    c_outs, paths, c_grads = _run(compiled, inputs, grads, params)
    e_outs, _, e_grads = _run(fn, inputs, grads, params)
    if len(c_outs) != len(e_outs):
        raise AssertionError(f"compiled gives {len(c_outs)} outputs, eager {len(e_outs)}")
    for path, c, e in zip(paths, c_outs, e_outs):
        _compare(f"output '{path}'", c, e, rtol, atol)
    for (name, c), (_, e) in zip(c_grads, e_grads):
        _compare(f"gradient of {name}", c, e, rtol, atol)
    return True


def _run(run, inputs, grads, params) -> tuple[list, list, list]:
    """(outputs, their paths, [(name, gradient)]) of one run on fresh leaves; the parameters'
    values and `.grad` are left as they were."""
    from .eager import Tensor, autograd
    from .tracing.traced import flatten

    args = [_leaf(x, grads) for x in inputs]
    saved = [(p.tensor().grad, p.numpy()) for p in params]
    for p in params:
        p.tensor().grad = None
    outs, paths = [], []
    with np.errstate(all="ignore"):
        flatten(run(*args), "output", outs, paths, [])
    ys = [y for y in outs if isinstance(y, Tensor) and y.requires_grad]
    if grads and ys:
        rngs = [np.random.default_rng(k) for k in range(len(ys))]
        autograd.backward(
            ys,
            [
                Tensor(np.asarray(r.standard_normal(y.shape)), dtype=y.dtype)
                for r, y in zip(rngs, ys)
            ],
        )
    wrt = [(f"input {i}", a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    wrt += [(f"parameter '{p.name}'", p.tensor()) for p in params]
    found = [(name, t.grad) for name, t in wrt if t.requires_grad] if grads else []
    for p, (grad, value) in zip(params, saved):
        p.tensor().grad = grad
        p.assign(value)
    return outs, paths, found


def _leaf(x, grads: bool):
    from .eager.tensor import Tensor, make

    if not isinstance(x, (Tensor, np.ndarray, np.generic)):
        return x
    t = x.detach() if isinstance(x, Tensor) else make(np.asarray(x))  # same memory and layout
    return t.requires_grad_(grads and dt.is_float(t.dtype))


def _compare(what: str, actual, expected, rtol, atol) -> None:
    def host(x):
        return x.detach()._host() if hasattr(x, "detach") else x

    if (actual is None) != (expected is None) or _grad_of(actual) != _grad_of(expected):
        raise AssertionError(f"{what}: compiled {actual!r:.60}, eager {expected!r:.60}")
    try:
        if actual is not None:
            assert_close(host(actual), host(expected), rtol, atol, equal_nan=True)
    except AssertionError as e:
        raise AssertionError(
            f"{what} differs, compiled (actual) vs eager (expected): {e}"
        ) from None


def _grad_of(x) -> bool:
    return bool(getattr(x, "requires_grad", False))


# -- hypothesis strategies ------------------------------------------------------------------

_DTYPE_KINDS = {
    "float": ("float16", "float32", "float64"),
    "int": ("int8", "int16", "int32", "int64"),
    "uint": ("uint8", "uint16", "uint32", "uint64"),
    "bool": ("bool",),
}


def _hypothesis():
    """hypothesis and its NumPy extra, imported only when a strategy is asked for."""
    try:
        import hypothesis.extra.numpy as hnp
        import hypothesis.strategies as st
    except ImportError as e:
        raise ImportError("kiln.testing.strategies needs hypothesis: pip install hypothesis") from e
    return st, hnp


class strategies:  # lower case: a namespace, used as `kn.testing.strategies.shapes()`
    """Hypothesis strategies for kiln's tests (hypothesis is imported on first use).

    >>> from kiln.testing import strategies as kst
    >>> from hypothesis import given
    >>> @given(kst.arrays("float32", kst.shapes(max_dims=2)))
    ... def test_finite(a):
    ...     assert np.isfinite(a).all()
    >>> test_finite()
    """

    def __init__(self):
        raise ArgumentTypeError("kiln.testing.strategies is a namespace; call its functions")

    @staticmethod
    def shapes(min_dims=0, max_dims=3, min_side=1, max_side=5):
        """Array shapes: tuples of `min_dims..max_dims` sides in `min_side..max_side`."""
        _, hnp = _hypothesis()
        return hnp.array_shapes(
            min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
        )

    @staticmethod
    def broadcastable_shapes(shape, min_dims=0, max_dims=None, min_side=1, max_side=None):
        """Shapes that broadcast against `shape` (NumPy's rules)."""
        _, hnp = _hypothesis()
        return hnp.broadcastable_shapes(
            tuple(shape), min_dims=min_dims, max_dims=max_dims, min_side=min_side,
            max_side=max_side,
        )  # fmt: skip

    @staticmethod
    def dtypes(kind="float"):
        """NumPy dtypes of a kind ("float", "int", "uint", "bool"), a tuple of kinds, or "all"."""
        st, _ = _hypothesis()
        kinds = tuple(_DTYPE_KINDS) if kind == "all" else (kind,) if isinstance(kind, str) else kind
        unknown = [k for k in kinds if k not in _DTYPE_KINDS]
        if unknown:
            raise ArgumentError(f"unknown dtype kind(s) {unknown}; use {sorted(_DTYPE_KINDS)}")
        return st.sampled_from([np.dtype(n) for k in kinds for n in _DTYPE_KINDS[k]])

    @staticmethod
    def arrays(dtype, shape, elements=None):
        """NumPy arrays of `dtype` and `shape` (each a value or a strategy); finite by default."""
        st, hnp = _hypothesis()
        if elements is not None:
            return hnp.arrays(dtype, shape, elements=elements)
        if not isinstance(dtype, st.SearchStrategy):
            return hnp.arrays(dtype, shape, elements=_finite(dtype))
        return dtype.flatmap(lambda d: hnp.arrays(d, shape, elements=_finite(d)))


def _finite(dtype):
    _, hnp = _hypothesis()
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False)
    return hnp.from_dtype(dtype)
