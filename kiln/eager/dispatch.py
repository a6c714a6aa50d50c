"""The eager half of `bind`: an op on Tensors runs now, on their device, and records its tape
entry when grad mode is on and an input requires grad. NumPy arrays in give NumPy arrays out.

This is the per-op path of eager mode, so it is kept short: one pass over the arguments, the
op's shape and dtype rules checked once per signature (then cached), the kernel, one Tensor.
The frontend's unary and binary functions come in shorter still (`apply_unary`,
`apply_binary`): an op that is one ufunc runs it on CPU Tensors without lifting or binding.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DeviceError, DTypeError, ShapeError
from ..frontend.core import lift_and_bind
from ..graph.core import user_site
from ..ops import core as ops_core
from ..ops.random import next_seed
from ..runtime.backend import get_backend
from . import autograd, grad_mode
from .grad_mode import state
from .saved import SavedTensorError, Unavailable
from .tensor import Tensor, describe, make, version_of

__all__ = ["apply_binary", "apply_unary", "eager_dispatch"]

_ndarray = np.ndarray
_new = object.__new__
_XP = {"cpu": np}
_VIEWS = frozenset(op for op in ops_core.REGISTRY.values() if "view" in op.tags)
_RANDOM = frozenset(op for op in ops_core.REGISTRY.values() if "random" in op.tags)
_checked: set = set()  # signatures (op, shapes, dtypes, attrs) whose rules passed
_CHECKED_MAX = 1 << 16


def eager_dispatch(op, args, attrs):
    """Runs `op` on `args` now: Tensors give a Tensor, anything else goes to NumPy."""
    if len(args) == 1 and type(args[0]) is Tensor:  # the common case, kept short
        x = args[0]
        data = x._data
        try:
            key = (
                (op, data.shape, data.dtype, *attrs.items())
                if attrs
                else (op, data.shape, data.dtype)
            )
            checked = key in _checked
        except TypeError:  # an unhashable attr: check every time
            key, checked = None, False
        if not checked:
            _check(op, [data], attrs, args, key)
        device = x._device
        xp = np if device == "cpu" else _xp(device)
        data = op.impl(xp, data, **attrs)
        if type(data) is not _ndarray:
            data = xp.asarray(data)  # 0-d: NumPy's ufuncs give scalars
        out = _new(Tensor)  # as `make`, inline: this is the per-op cost
        out._data, out._device, out._requires_grad, out.grad_fn = data, device, False, None
        out._grad = out._vc = out._base = None
        out._inference = grad_mode.inference_threads > 0 and state.inference
        if op in _VIEWS:
            _link_view(out, x)
        if x._requires_grad and state.grad:
            autograd.record(op, args, attrs, out)
        return out
    return _dispatch(op, args, attrs)


def _dispatch(op, args, attrs):
    device = None
    grad = False
    try:
        for a in args:
            if isinstance(a, Tensor):
                a._data  # noqa: B018 — an Unavailable (saved value) raises here
                if a._requires_grad:
                    grad = True
                if device is None:
                    device = a._device
                elif a._device is not device and a._device != device:
                    raise _device_error(op, args)
    except SavedTensorError:
        return _unavailable(op, args, attrs)
    if device is None:
        if op in _RANDOM and "key" not in attrs:
            attrs["key"] = (next_seed(), 0)
        return ops_core.run_eager(op, args, attrs)
    xp = np if device == "cpu" else _xp(device)
    datas = [a._data if isinstance(a, Tensor) else xp.asarray(a) for a in args]
    try:
        if len(datas) == 2:  # binary ops: no list building
            a, b = datas
            key = (op, 2, a.shape, a.dtype, b.shape, b.dtype, *attrs.items())
        else:
            key = (op, len(datas), *[(d.shape, d.dtype) for d in datas], *attrs.items())
        checked = key in _checked
    except TypeError:
        key, checked = None, False
    if not checked:
        _check(op, datas, attrs, args, key)
    data = op.impl(xp, *datas, **attrs)
    if type(data) is not _ndarray:
        data = xp.asarray(data)
    out = make(data, device)
    if op in _VIEWS:
        _link_view(out, args[0])
    if grad and state.grad:
        autograd.record(op, args, attrs, out)
    return out


def _check(op, datas, attrs, args, key) -> None:
    """The op's shape and dtype rules (errors as in graph mode); `key` remembers a pass."""
    try:
        ops_core.check_rules(op, datas, attrs)
    except (ShapeError, DTypeError) as e:
        inputs = ", ".join(describe(a) if isinstance(a, Tensor) else f"array {a.dtype}"
                           f"{list(np.shape(a))}" for a in args)  # fmt: skip
        raise type(e)(f"{e}; inputs: {inputs}") from None
    if key is not None:
        if len(_checked) >= _CHECKED_MAX:
            _checked.clear()
        _checked.add(key)


def _link_view(out: Tensor, x) -> None:
    """`out` shares `x`'s data (as PyTorch's views do): it shares its version counter too."""
    if not isinstance(x, Tensor):
        return
    a, b = out._data, x._data
    if (a.base if a.base is not None else a) is (b.base if b.base is not None else b):
        base = x._base if x._base is not None else x
        out._base = base
        out._vc = version_of(base)


def _xp(device: str):
    """The array module of a GPU device, made current: CuPy launches on the current device."""
    return get_backend(device).activate()


def _device_error(op, args) -> DeviceError:
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    devices = list(dict.fromkeys(a._device for _, a in tensors))
    inputs = ", ".join(f"input {i} {describe(a)}" for i, a in tensors)
    return DeviceError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices[0]} and {devices[1]}! (op {op.name}: {inputs}; at {user_site()})"
    )


def _unavailable(op, args, attrs) -> Unavailable:
    """An op on a saved value that backward may not read: typed by the rules, not computed."""
    reason = next(a._reason for a in args if isinstance(a, Unavailable))
    device = next(a._device for a in args if isinstance(a, Tensor))
    shape = op.shape_rule(*(np.shape(a) if not isinstance(a, Tensor) else a.shape for a in args),
                          **attrs)  # fmt: skip
    dtype = op.dtype_rule(*(a.dtype if isinstance(a, Tensor) else np.asarray(a).dtype
                            for a in args), **attrs)  # fmt: skip
    return Unavailable(shape, dtype, device, reason)


# -- the short path of the frontend's unary and binary functions ------------------------------
# An op whose kernel is one ufunc and whose dtype rule is that ufunc's own type resolution, on
# CPU Tensors, is that ufunc and one new Tensor. The ufunc refuses what the rules refuse (dtypes
# it has no loop for, shapes that do not broadcast: tests/test_eager_fast.py holds them to it),
# and anything it raises sends the call down the long path, where the rules raise kiln's error
# with the op and the site. Python scalars mix in as NumPy's weak scalars, as `lift` makes them.

_CPU = "cpu"
_KILN_DTYPES = frozenset(dt.SUPPORTED)
_UFUNCS: dict = {}  # op -> its plan, made on its first call


def _ufunc(op):
    """The op's plan: the NumPy ufunc its kernel is, or None (see `_ufunc_kernel`)."""
    name = getattr(op.impl, "ufunc_name", None)
    ufunc = _UFUNCS[op] = None if name is None else getattr(np, name)
    return ufunc


def _weak(value, t: Tensor) -> bool:
    """Whether NumPy's ufuncs take `value` beside `t` as `lift` would: a Python float or bool
    (an int only beside floats: NumPy compares int8 with 300, which `lift` refuses to make)."""
    cls = type(value)
    return cls is float or cls is bool or cls is int and t._data.dtype.kind == "f"


def apply_unary(op: ops_core.OpDef, x):
    """`op(x)` for the frontend: `lift_and_bind(op, x)`, by the short path where it can."""
    if type(x) is Tensor and x._device is _CPU:
        try:
            ufunc = _UFUNCS[op]
        except KeyError:
            ufunc = _ufunc(op)
        if ufunc is not None:
            try:
                data = ufunc(x._data)
            except Exception:
                return lift_and_bind(op, x)
            if type(data) is not _ndarray:
                data = np.asarray(data)  # 0-d: NumPy's ufuncs give scalars
            out = _new(Tensor)  # as `make`, inline: this is the per-op cost
            out._data = data
            out._device = _CPU
            out._requires_grad = False
            out.grad_fn = out._grad = out._vc = out._base = None
            out._inference = grad_mode.inference_threads > 0 and state.inference
            if x._requires_grad and state.grad:
                autograd.record(op, (x,), {}, out)
            return out
    elif type(x) is _ndarray and x.dtype in _KILN_DTYPES:  # NumPy arrays in, arrays out
        try:
            ufunc = _UFUNCS[op]
        except KeyError:
            ufunc = _ufunc(op)
        if ufunc is not None:
            try:
                data = ufunc(x)
            except Exception:
                return lift_and_bind(op, x)
            return data if type(data) is _ndarray else np.asarray(data)
    return lift_and_bind(op, x)


def apply_binary(op: ops_core.OpDef, a, b):
    """`op(a, b)` for the frontend: `lift_and_bind(op, a, b)`, by the short path where it can."""
    if type(a) is Tensor:
        if type(b) is Tensor:
            if a._device is not _CPU or b._device is not _CPU:
                return lift_and_bind(op, a, b)
            x, y, grad = a._data, b._data, (a._requires_grad or b._requires_grad) and state.grad
        elif a._device is _CPU and not (a._requires_grad and state.grad) and _weak(b, a):
            x, y, grad = a._data, b, False  # the tape keeps `b` as `lift` makes it: long path
        else:
            return lift_and_bind(op, a, b)
    elif type(b) is Tensor and b._device is _CPU and not (b._requires_grad and state.grad):
        if not _weak(a, b):
            return lift_and_bind(op, a, b)
        x, y, grad = a, b._data, False
    else:
        return lift_and_bind(op, a, b)
    try:
        ufunc = _UFUNCS[op]
    except KeyError:
        ufunc = _ufunc(op)
    if ufunc is None:
        return lift_and_bind(op, a, b)
    try:
        data = ufunc(x, y)
    except Exception:
        return lift_and_bind(op, a, b)
    if type(data) is not _ndarray:
        data = np.asarray(data)
    out = _new(Tensor)
    out._data = data
    out._device = _CPU
    out._requires_grad = False
    out.grad_fn = out._grad = out._vc = out._base = None
    out._inference = grad_mode.inference_threads > 0 and state.inference
    if grad:
        autograd.record(op, (a, b), {}, out)
    return out
