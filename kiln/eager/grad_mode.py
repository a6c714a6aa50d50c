"""Grad mode, inference mode and anomaly detection: per-thread switches, as PyTorch's.

Each switch is a context manager that also works as a decorator.
"""

from __future__ import annotations

import functools
import inspect
import threading

__all__ = [
    "enable_grad",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]


class _State(threading.local):
    """Defaults for every thread: grad on, inference mode off."""

    grad = True
    inference = False


state = _State()
_anomaly = [False]  # process-wide, as PyTorch's
# How many threads are in inference mode: while none is, a new tensor is not an inference
# tensor, which every op can tell without reading the thread's state (a slower read).
inference_threads = 0
_inference_lock = threading.Lock()
# Called with True when a first thread enters inference mode, False when the last one leaves
# (kiln.eager closes the frontend's short path meanwhile: it makes no inference tensors).
inference_watchers: list = []


def _set(name: str, value: bool) -> None:
    global inference_threads
    if name == "inference" and value != state.inference:
        with _inference_lock:
            before = inference_threads > 0
            inference_threads += 1 if value else -1
            if (inference_threads > 0) != before:
                for watcher in inference_watchers:
                    watcher(not before)
    setattr(state, name, value)


def is_grad_enabled() -> bool:
    """Whether eager ops on tensors that require grad record the tape now."""
    return state.grad


def is_inference_mode_enabled() -> bool:
    return state.inference


def is_anomaly_enabled() -> bool:
    return _anomaly[0]


def set_detect_anomaly(mode: bool) -> None:
    """Checks every backward step for NaN; the error names the forward op and its line.

    >>> import kiln as kn
    >>> kn.set_detect_anomaly(True); kn.eager.is_anomaly_enabled()
    True
    >>> kn.set_detect_anomaly(False)
    """
    _anomaly[0] = bool(mode)


class _Mode:
    """A switch of `state`: a context manager, and a decorator that applies it per call."""

    def __init__(self, **values):
        self._values = values
        self._saved: list = []

    def __enter__(self):
        self._saved.append({k: getattr(state, k) for k in self._values})
        for k, v in self._values.items():
            _set(k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self._saved.pop().items():
            _set(k, v)
        return False

    def __call__(self, fn):
        values = self._values
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, values)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Mode(**values):
                return fn(*args, **kwargs)

        return wrapper


def _generator_in_mode(fn, values):
    """A decorated generator function: its body runs in the mode at every step, and the
    caller has its own mode back at every yield, as PyTorch's."""

    @functools.wraps(fn)
    def generator(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with _Mode(**values):
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with _Mode(**values):
                        gen.close()
                    raise
                except BaseException as e:  # thrown in by the caller: passed on
                    with _Mode(**values):
                        response = gen.throw(e)
                else:
                    with _Mode(**values):
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator


class _NoArgs(_Mode):
    """A switch without arguments, also a decorator without parentheses (`@no_grad`)."""

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        return cls()(fn)


class no_grad(_NoArgs):  # noqa: N801 — PyTorch's name
    """Ops run without recording the tape; their results do not require grad.

    >>> import kiln as kn
    >>> x = kn.ones(2, requires_grad=True)
    >>> with kn.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        super().__init__(grad=False)


class enable_grad(_NoArgs):  # noqa: N801
    """Turns recording back on inside `no_grad`."""

    def __init__(self):
        super().__init__(grad=True)


class set_grad_enabled(_Mode):  # noqa: N801
    """Sets grad mode now (called as a function), or for a block (as a context manager).

    >>> import kiln as kn
    >>> with kn.set_grad_enabled(False):
    ...     kn.is_grad_enabled()
    False
    >>> kn.is_grad_enabled()
    True
    """

    def __init__(self, mode: bool):
        super().__init__(grad=bool(mode))
        self._saved.append({"grad": state.grad})
        state.grad = bool(mode)

    def __enter__(self):
        return self  # set already, by __init__

    def __call__(self, fn):
        # as a decorator: the mode __init__ set is undone, and applies to the calls only
        state.grad = self._saved.pop()["grad"]
        return super().__call__(fn)


class inference_mode(_Mode):  # noqa: N801
    """`no_grad`, and every tensor made inside is an inference tensor: it can never be saved
    for a later backward, nor changed in place outside inference mode.

    >>> import kiln as kn
    >>> with kn.inference_mode():
    ...     y = kn.ones(2) * 2
    >>> y.is_inference(), y.requires_grad
    (True, False)
    """

    def __new__(cls, mode=True):
        if not callable(mode):
            return super().__new__(cls)
        return cls()(mode)  # `@inference_mode` without parentheses

    def __init__(self, mode: bool = True):
        # As PyTorch's: inference_mode(False) turns grad mode back on
        super().__init__(grad=not mode, inference=bool(mode))
