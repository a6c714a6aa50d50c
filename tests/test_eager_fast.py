"""The short path of the frontend's unary and binary functions on plain eager tensors and NumPy
arrays (`unary_function` / `binary_function` in kiln.frontend.core): the same values, dtypes,
errors, tape and inference flags as the long path (`lift_and_bind`), for every op whose kernel
is one ufunc."""

import functools
import itertools
import threading
import warnings

import numpy as np
import pytest

import kiln as kn
from kiln import dtypes as dt
from kiln.eager import grad_mode
from kiln.errors import DTypeError, ShapeError
from kiln.frontend import core
from kiln.frontend.core import binary_function, lift_and_bind, unary_function
from kiln.graph.opdef import REGISTRY

UFUNC_OPS = [op for op in REGISTRY.values() if getattr(op.impl, "ufunc_name", None)]
UNARY = [op for op in UFUNC_OPS if getattr(np, op.impl.ufunc_name).nin == 1]
BINARY = [op for op in UFUNC_OPS if getattr(np, op.impl.ufunc_name).nin == 2]
VALUES = {"f": [0.5, -1.5, 2.0], "i": [1, -2, 3], "u": [1, 2, 3], "b": [True, False, True]}
SCALARS = [True, 0, 3, -2, 300, 2.5, -0.0, 1e10]
SCALAR_DTYPES = ("float32", "float16", "int8", "uint8", "bool")


def tensor(values, dtype):
    return kn.tensor(np.asarray(values).astype(dtype))


def outcome(fn, *args):
    """What `fn(*args)` gives: (type, dtype, shape, values) or the error's type."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception as e:  # noqa: BLE001 — the two paths must fail alike
        return type(e)
    array = out.numpy() if isinstance(out, kn.Tensor) else out
    return type(out), array.dtype, array.shape, array.tobytes()  # NaN's bytes compare equal


def both_paths(op, *args):
    fn = unary_function(op) if len(args) == 1 else binary_function(op)
    fast, slow = outcome(fn, *args), outcome(lift_and_bind, op, *args)
    assert fast == slow, (op.name, args)


@pytest.mark.parametrize("op", UFUNC_OPS, ids=lambda op: op.name)
def test_short_path_ufunc_refuses_the_dtypes_the_rule_refuses(op):
    ufunc = getattr(np, op.impl.ufunc_name)
    for dtypes in itertools.product(dt.SUPPORTED, repeat=ufunc.nin):
        try:
            rule = str(op.dtype_rule(*dtypes))
        except DTypeError:
            rule = "refused"
        try:
            with np.errstate(all="ignore"):
                kernel = str(ufunc(*(np.ones(2, d) for d in dtypes)).dtype)
        except TypeError:  # NumPy: no loop for these dtypes
            kernel = "refused"
        if rule == "refused" and kernel != "refused":
            # a rule that refuses what NumPy computes through a cast (two bools shifted in
            # int8, which PyTorch refuses): the short path's casting="no" refuses it as well
            with pytest.raises(TypeError), np.errstate(all="ignore"):
                ufunc(*(np.ones(2, d) for d in dtypes), casting="no")
            continue
        assert kernel == rule, dtypes


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_short_path_unary_matches_the_long_path(op):
    for dtype in ("float32", "float16", "float64", "int32", "uint8", "bool"):
        values = VALUES[np.dtype(dtype).kind]
        both_paths(op, tensor(values, dtype))
        both_paths(op, tensor(values[0], dtype))  # 0-d: NumPy's ufuncs give scalars
        both_paths(op, np.asarray(values, dtype))  # NumPy arrays in, NumPy arrays out
        both_paths(op, np.asarray(values[1], dtype))
    both_paths(op, tensor([[0.5, 1.5], [2.5, 3.5]], "float32").T)


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_short_path_binary_matches_the_long_path(op):
    pairs = [("float32", "float32"), ("float32", "float64"), ("int32", "float16"),
             ("bool", "int8"), ("uint8", "int8"), ("int64", "uint64")]  # fmt: skip
    for da, db in pairs:
        a = tensor(VALUES[np.dtype(da).kind], da)
        b = tensor([[v] for v in VALUES[np.dtype(db).kind][:2]], db)  # broadcasts to (2, 3)
        both_paths(op, a, b)
        both_paths(op, b, a[0])
        both_paths(op, a, b[0])  # (3,) with (1,): broadcasts; (3,) with (2,) does not
        both_paths(op, a, b[:, 0])
    for dtype, scalar in itertools.product(SCALAR_DTYPES, SCALARS):
        x = tensor(VALUES[np.dtype(dtype).kind], dtype)
        both_paths(op, x, scalar)  # weak Python scalars, on either side
        both_paths(op, scalar, x)
        both_paths(op, x[0], scalar)


def with_grad(fn, op, args):
    """`outcome` of fn(*args) with its tensor requiring grad, and of the tensor's gradient."""
    x = kn.tensor(next(a for a in args if isinstance(a, np.ndarray)), requires_grad=True)
    args = [x if isinstance(a, np.ndarray) else a for a in args]
    made = []
    y = outcome(lambda *a: made.append(fn(*a)) or made[0].detach(), *args)
    if not made or not made[0].requires_grad:
        return y, None
    out = made[0]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out.sum().backward()
    return y, out.grad_fn.name(), None if x.grad is None else x.grad.numpy().tobytes()


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_short_path_with_a_scalar_records_the_tape_as_the_long_path(op):
    # A float tensor that requires grad beside a Python scalar: the short path keeps the
    # scalar on the tape as `lift` makes it; values, grad_fn and gradients are the long path's
    for dtype, scalar in itertools.product(("float32", "float16", "float64"), SCALARS):
        x = np.asarray(VALUES["f"], dtype)
        for args in ((x, scalar), (scalar, x)):
            fast = with_grad(binary_function(op), op, args)
            assert fast == with_grad(functools.partial(lift_and_bind, op), op, args), args


def test_short_path_records_a_scalar_without_the_long_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("took the long path")

    monkeypatch.setattr(core, "promote", refuse)  # what `lift_and_bind` calls first
    x = kn.tensor([0.5, 1.0], requires_grad=True)
    (kn.tanh(x * 1.5 + 2) - 1 * x).sum().backward()
    a = np.array([0.5, 1.0])
    expected = 1.5 * (1 - np.tanh(1.5 * a + 2) ** 2) - 1  # the chain rule by hand
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_short_path_errors_are_the_rules_with_the_site():
    with pytest.raises(ShapeError, match=r"broadcast.*test_eager_fast\.py"):
        kn.ones(3) + kn.ones(2)
    with pytest.raises(DTypeError, match=r"negative.*test_eager_fast\.py"):
        -kn.tensor([True, False])


def test_short_path_skips_lift_and_bind(monkeypatch):
    def refuse(*args):
        raise AssertionError("took the long path")

    monkeypatch.setattr(core, "lift_and_bind", refuse)
    x = kn.tensor([0.5, 1.0])
    y = kn.tanh(kn.sin(x) * x + 2.0) - 1 / x
    a = x.numpy()
    np.testing.assert_allclose(y.numpy(), np.tanh(np.sin(a) * a + 2) - 1 / a, rtol=1e-6)
    assert type(kn.exp(np.float32(1.0) * np.ones(2, np.float32))) is np.ndarray


def test_short_path_records_the_tape():
    x = kn.tensor([0.5, 1.0, 2.0], requires_grad=True)
    w = kn.tensor([1.0, -1.0, 3.0], requires_grad=True)
    (kn.sin(x) * w + x * x).sum().backward()
    xs, ws = x.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * ws + 2 * xs, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), np.sin(xs), rtol=1e-6)
    with kn.no_grad():
        assert not kn.sin(x).requires_grad and kn.sin(x).grad_fn is None


def test_short_path_marks_inference_tensors_of_this_thread_only():
    x = kn.ones(2)
    with kn.inference_mode():
        assert kn.sin(x).is_inference() and (x + x).is_inference()
    assert not kn.sin(x).is_inference() and grad_mode.inference_threads == 0
    entered, done = threading.Event(), threading.Event()
    made = []

    def other():
        with kn.inference_mode():
            made.append(kn.cos(x))
            entered.set()
            done.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(5)
    assert not kn.sin(x).is_inference()  # another thread's inference mode is not this one's
    done.set()
    thread.join()
    assert made[0].is_inference() and grad_mode.inference_threads == 0


def test_results_of_plain_tensors_are_plain_and_others_are_not():
    # A plain tensor (no Meta) is what keeps an eager op to one ufunc and two stores.
    x = kn.ones(3)
    assert x._meta is None and kn.sin(x)._meta is None and (x * 2.0 + x)._meta is None
    w = kn.ones(3, requires_grad=True)
    assert kn.sin(w).requires_grad and (w * 2.0)._meta is not None
    view = x[1:]
    assert view._meta is not None and x._meta is None  # the base stays plain until needed
    with kn.inference_mode():
        assert kn.sin(x)._meta is not None and kn.sin(x).is_inference()
    assert kn.sin(x)._meta is None
