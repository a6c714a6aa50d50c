"""Automatic mixed precision: `kn.autocast` (PyTorch's `torch.autocast`) and `autocast_op`,
the decorator that gives an op PyTorch's autocast casting policy.

While autocast is on for a device type, a decorated op casts its floating-point tensor
arguments before it runs: "lower" ops (matrix products, convolutions) to the autocast dtype,
"fp32" ops (losses, `prod`) to float32, "promote" ops (`cat`, `stack`) to the widest dtype among
them. Only float32, float16 and bfloat16 tensors are cast (float64 never is, as in PyTorch),
and inside a decorated op autocast is off, so the ops it is made of are not cast again.
Symbols are cast like Tensors, so `kn.compile` traces and graphs built under autocast hold
the same casts (`cast` nodes). The policy tables are PyTorch's CPU and CUDA lists
(aten/src/ATen/autocast_mode.cpp), restricted to the ops kiln has.
"""

from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from .. import dtypes as dt
from ..eager.grad_mode import is_grad_enabled
from ..eager.tensor import Tensor
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol
from ..ops.random import enter_trace
from .core import call

__all__ = ["autocast", "autocast_op", "get_autocast_dtype", "is_autocast_enabled"]

DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}
_ELIGIBLE = (np.dtype(np.float32), np.dtype(np.float16), dt.bfloat16)
_SAME = object()


class _State(threading.local):
    def __init__(self):
        self.enabled: dict = {}  # device type -> its autocast dtype, while on
        self.dtypes = dict(_DEFAULT_DTYPES)  # device type -> dtype (set also while off)
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict = {}  # id(leaf Tensor) -> (the Tensor, its cast)


_state = _State()


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` (PyTorch's `torch.is_autocast_enabled`).

    >>> import kiln as kn
    >>> with kn.autocast("cpu"):
    ...     kn.is_autocast_enabled("cpu")
    True
    """
    return device_type in _state.enabled


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on `device_type` (bfloat16 on "cpu", float16 on "cuda"
    unless an enclosing `kn.autocast` set another).

    >>> import kiln as kn
    >>> kn.get_autocast_dtype("cpu")
    kiln.bfloat16
    """
    if device_type not in DEVICE_TYPES:
        raise UsageError(f"get_autocast_dtype: expected one of {', '.join(DEVICE_TYPES)} "
                         f"device type, got {device_type!r}")  # fmt: skip
    return dt.public(_state.dtypes[device_type])


class autocast:  # noqa: N801 — PyTorch's name
    """Runs the ops of a block (or of a decorated function) in mixed precision, as PyTorch's
    `torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`: matrix
    products and convolutions in `dtype` (bfloat16 or float16), losses in float32, other ops
    in the dtypes of their inputs. `cache_enabled`: a leaf Tensor that requires grad (a
    weight) is cast once per outermost autocast block, not at every use.

    >>> import kiln as kn
    >>> x, w = kn.ones(2, 3), kn.ones(4, 3)
    >>> with kn.autocast("cpu", dtype=kn.bfloat16):
    ...     y = kn.nn.functional.linear(x, w)
    ...     loss = kn.nn.functional.mse_loss(y, kn.zeros(2, 4))
    >>> y.dtype, loss.dtype
    (kiln.bfloat16, kiln.float32)
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ArgumentError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in DEVICE_TYPES:
            raise UsageError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _state.dtypes[device_type] if dtype is None else dt.as_dtype(dtype)
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        self._args = (device_type, dtype, enabled, cache_enabled)
        if enabled and self.fast_dtype not in (dt.bfloat16, np.dtype(np.float16)):
            name = device_type.upper()
            warnings.warn(
                f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of kiln.bfloat16, "
                "kiln.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = bool(enabled)
        self._saved: list = []

    def __enter__(self):
        s = _state
        self._saved.append((dict(s.enabled), dict(s.dtypes), s.cache_enabled))
        if self._enabled:
            s.enabled[self.device] = self.fast_dtype
        else:
            s.enabled.pop(self.device, None)
        s.dtypes[self.device] = self.fast_dtype
        s.cache_enabled = self._cache_enabled
        s.nesting += 1
        return self

    def __exit__(self, *exc):
        s = _state
        s.nesting -= 1
        if s.nesting == 0:
            s.cache.clear()
        s.enabled, s.dtypes, s.cache_enabled = self._saved.pop()
        return False

    def __call__(self, fn):
        args = self._args

        @functools.wraps(fn)
        def decorated(*a, **kw):
            with autocast(*args):
                return fn(*a, **kw)

        return decorated


class _Off:
    """Autocast off for every device type while a decorated op runs (PyTorch excludes its
    autocast dispatch keys inside an autocast op)."""

    def __enter__(self):
        self.saved, _state.enabled = _state.enabled, {}

    def __exit__(self, *exc):
        _state.enabled = self.saved
        return False


def _device_type(args) -> str | None:
    """The device type of the first Tensor among `args` (lists included), else that of the
    first device type with autocast on (Symbols: graph mode and traces)."""
    for a in args:
        if isinstance(a, (list, tuple)):
            found = _device_type(a)
            if found is not None:
                return found
        elif isinstance(a, Tensor):
            return "cpu" if a._device == "cpu" else "cuda"
    return next((d for d in DEVICE_TYPES if d in _state.enabled), None)


def _cast(a, dtype):
    if not isinstance(a, (Tensor, Symbol)) or a.dtype == dtype or a.dtype not in _ELIGIBLE:
        return a
    cache = (
        isinstance(a, Tensor) and _state.cache_enabled and a.requires_grad and a.is_leaf
        and dtype != np.float32 and is_grad_enabled()
    )  # fmt: skip
    if cache:
        hit = _state.cache.get(id(a))
        if hit is not None and hit[0] is a and hit[1].dtype == dtype:
            return hit[1]
    out = call("cast", a, dtype=dtype)
    if cache:
        _state.cache[id(a)] = (a, out)
    return out


def _tensors(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _tensors(a)
        elif isinstance(a, (Tensor, Symbol)):
            yield a


def _target(policy: str, low, args):
    if policy == "lower":
        return low
    if policy == "fp32":
        return np.dtype(np.float32)
    found = [a.dtype for a in _tensors(args) if a.dtype in _ELIGIBLE]  # "promote"
    return functools.reduce(dt.promote, found, low)


def _cast_all(value, dtype):
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_all(v, dtype) for v in value)
    return _cast(value, dtype)


def autocast_op(policy: str | None, *, cuda=_SAME):
    """Gives the decorated op an autocast policy: "lower" (run in the autocast dtype), "fp32"
    (run in float32), "promote" (its float arguments in the widest of their dtypes) or None
    (as it is). `cuda` is the policy under CUDA autocast where it differs from the CPU's.

    >>> import kiln as kn
    >>> @autocast_op("fp32")
    ... def total(x):
    ...     return x.sum()
    >>> with kn.autocast("cpu"):
    ...     total(kn.ones(3, dtype=kn.bfloat16)).dtype
    kiln.float32
    """
    policies = {"cpu": policy, "cuda": policy if cuda is _SAME else cuda}

    def wrap(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _state.enabled:  # NOTE: the path of every call outside autocast
                return fn(*args, **kwargs)
            device = _device_type(args)
            low = _state.enabled.get(device)
            chosen = policies.get(device)
            if low is None or chosen is None:  # not on for this device, or not this op's
                return fn(*args, **kwargs)
            target = _target(chosen, low, (*args, *kwargs.values()))
            args = [_cast_all(a, target) for a in args]
            kwargs = {k: _cast_all(v, target) for k, v in kwargs.items()}
            with _Off():
                return fn(*args, **kwargs)

        op.autocast_policy = policies
        return op

    return wrap


def policy_of(fn) -> dict | None:
    """The autocast policies ({"cpu": ..., "cuda": ...}) of a decorated op, else None."""
    return getattr(fn, "autocast_policy", None)


def autocast_key(device: str):
    """What a `kn.compile` trace on `device` depends on: the autocast dtype there (None when
    off), so a call under another autocast state traces again."""
    kind = "cpu" if str(device) == "cpu" else "cuda"
    return _state.enabled.get(kind)


class tracing_on:  # noqa: N801
    """While a trace for `device` runs: autocast on only for that device type, so the
    Symbols of the trace are cast by its policy (and the cast cache is left alone)."""

    def __init__(self, device: str):
        self.kind = "cpu" if str(device) == "cpu" else "cuda"

    def __enter__(self):
        s = _state
        self.saved = s.enabled
        s.enabled = {self.kind: s.enabled[self.kind]} if self.kind in s.enabled else {}
        enter_trace(1)  # the random factories add graph nodes (kiln/ops/random.py)

    def __exit__(self, *exc):
        _state.enabled = self.saved
        enter_trace(-1)
        return False


def lower_precision(*values) -> tuple:
    """`values` (Tensors, Symbols or None) cast to the autocast dtype as a "lower" op casts
    its arguments, unchanged while autocast is off: for a composite that reads its weights
    itself (a recurrent layer, PyTorch's `mkldnn_rnn_layer`)."""
    if not _state.enabled:
        return values
    low = _state.enabled.get(_device_type([v for v in values if v is not None]))
    return values if low is None else tuple(_cast(v, low) for v in values)
