"""`print` inside a function that `kn.compile` traces: the call is recorded, not made, and the
compiled function makes it on every call with that call's values, as PyTorch's compiled
functions print on every call. Without this, the trace would print a Symbol's description
once and later calls nothing.

`warnings.warn` is recorded and made by each call alike (through the warning filters then,
as an eager call's warning), at the place the warning names.

Besides these, only the storing of traced values in Python state is made by each call
(`stores`). Other Python side effects of a traced function run once, when it is traced.

A traced value formatted into a string (`f"{loss:.4f}"`, `"{}".format(x)`) becomes a marker,
`<kiln traced value N>`, that a replayed `print` replaces with the value of each call,
formatted with the same spec. A string that never reaches `print` keeps the marker: a value
it would need exists only when the compiled function runs (`str(x)` and `%` keep the
Symbol's description, as before).

>>> import kiln as kn
>>> f = kn.compile(lambda x: print("twice:", x * 2) or x + 1)
>>> f(kn.tensor([1.0, 2.0]))
twice: tensor([2., 4.])
tensor([2., 3.])
>>> f(kn.tensor([5.0, 6.0]))
twice: tensor([10., 12.])
tensor([6., 7.])
>>> g = kn.compile(lambda x: print(f"sum {x.sum():.2f}") or x)
>>> _ = g(kn.tensor([1.0, 2.0]))
sum 3.00
>>> _ = g(kn.tensor([0.25, 0.5]))
sum 0.75
"""

from __future__ import annotations

import builtins
import contextlib
import re
import sys
import threading
import warnings

from ..graph.core import Symbol
from .scalars import TracedScalar, python_value

_local = threading.local()  # .calls: the recording list of this thread's trace, if any
_lock = threading.Lock()
_active = 0  # traces recording now, all threads: print stays patched while any is
_saved = builtins.print  # the print that was there when the first of them began
_saved_warn = warnings.warn
_MARKER = re.compile(r"<kiln traced value (\d+)>")


class Recorded(list):
    """The recorded `print` calls, (args, kwargs) each, and in `formatted` the (Symbol, format
    spec) of each marker the trace made, by number."""

    def __init__(self):
        super().__init__()
        self.formatted: list = []


def _format(symbol, spec: str) -> str:
    """Symbol.__format__ while a trace records: a marker of (symbol, spec) where this thread
    traces, else what formatting a Symbol gives otherwise (its description)."""
    calls = getattr(_local, "calls", None)
    if calls is None:
        return object.__format__(symbol, spec)
    calls.formatted.append((_snapshot(symbol), spec))
    return f"<kiln traced value {len(calls.formatted) - 1}>"


def tracing_now() -> bool:
    """Whether this thread records a trace now."""
    return getattr(_local, "calls", None) is not None


def _print(*args, **kwargs):
    calls = getattr(_local, "calls", None)
    if calls is None:  # another thread, not tracing
        _saved(*args, **kwargs)
    else:
        calls.append((_snapshot(args), _snapshot(kwargs)))


def _snapshot(value):
    """`value` with each traced value in it (in lists, tuples and dicts too) as it is now: a
    node that reads it, which a later in-place change of it (`y.add_(1)` after
    `print(y)`) leaves reading this value, as eager code prints it before the change."""
    if isinstance(value, Symbol):
        from ..frontend.core import call  # NOTE: lazy: the frontend imports this module

        with value.graph.as_default():  # (a copy: an identity cast, a node of its own)
            return call("cast", value, dtype=value.dtype)
    if type(value) in (list, tuple):
        return type(value)(map(_snapshot, value))
    if type(value) is dict:
        return {k: _snapshot(v) for k, v in value.items()}
    return value


class _Warned(tuple):
    """A recorded `warnings.warn` call: ((message,), {}) as a print's, and in `where` the
    rest of `warnings.warn_explicit`'s arguments, found when it was made."""


def _warn(message, category=None, stacklevel=1, source=None, **kwargs):
    calls = getattr(_local, "calls", None)
    if calls is None:  # another thread, not tracing
        return _saved_warn(message, category, stacklevel + 1, source, **kwargs)
    if isinstance(message, Warning):
        category = type(message)
    try:
        frame = sys._getframe(stacklevel)
        globals_, filename, lineno = frame.f_globals, frame.f_code.co_filename, frame.f_lineno
    except ValueError:  # (as warnings.warn: past the outermost frame)
        globals_, filename, lineno = sys.__dict__, "sys", 1
    entry = _Warned(((message,), {}))
    # no module_globals: as warnings.warn, whose source line comes from the file (a module's
    # loader may have none: `python -c`'s __main__ raises ImportError when asked)
    entry.where = (category or UserWarning, filename, lineno, globals_.get("__name__", "<string>"),
                   globals_.setdefault("__warningregistry__", {}), None, source)  # fmt: skip
    calls.append(entry)
    return None


@contextlib.contextmanager
def recording(graph):
    """Records the `print` calls this thread makes while tracing into `graph`; yields the list
    of (args, kwargs), where args may hold Symbols of `graph`. A trace inside another one
    (a compiled function called while tracing) records into the outer list."""
    global _active, _saved, _saved_warn
    outer = getattr(_local, "calls", None)
    calls = outer if outer is not None else Recorded()
    with _lock:
        if not _active:
            _saved = builtins.print
            builtins.print = _print
            _saved_warn, warnings.warn = warnings.warn, _warn
            Symbol.__format__ = _format
        _active += 1
    _local.calls = calls
    try:
        yield calls
    finally:
        _local.calls = outer
        with _lock:
            _active -= 1
            if not _active:
                builtins.print = _saved
                warnings.warn = _saved_warn
                del Symbol.__format__


def _printed(calls):
    """Each value the recorded calls print: their arguments, and the Symbols whose markers
    their strings hold (a TracedScalar's: its Symbol)."""
    for args, kwargs in calls:
        yield from _values(calls, (*args, *kwargs.values()))


def _values(calls, values):
    for value in values:
        if isinstance(value, str):
            for m in _MARKER.finditer(value):
                yield _symbol(calls.formatted[int(m.group(1))][0])
        elif type(value) in (list, tuple, dict):  # (a list of tensors printed)
            yield from _values(calls, value.values() if type(value) is dict else value)
        else:
            yield _symbol(value)


def _symbol(value):
    return value.symbol if isinstance(value, TracedScalar) else value


def printed_symbols(calls, graph) -> list:
    """The Symbols of `graph` the recorded calls print, each once, in order of first use."""
    seen, symbols = set(), []
    for value in _printed(calls):
        if isinstance(value, Symbol) and value.graph is graph and id(value) not in seen:
            seen.add(id(value))
            symbols.append(value)
    return symbols


def replay(calls, symbols, values) -> None:
    """Makes the recorded calls with each Symbol replaced by its value in this call, and each
    marker in their strings by its Symbol's value formatted with the marker's spec."""
    value_of = {id(s): v for s, v in zip(symbols, values)}

    def fill(a):
        if isinstance(a, Symbol):
            return value_of.get(id(a), a)
        if isinstance(a, TracedScalar) and id(a.symbol) in value_of:
            return python_value(value_of[id(a.symbol)], a.kind)
        if isinstance(a, str) and "<kiln traced value " in a:
            return _MARKER.sub(lambda m: _filled(calls.formatted[int(m.group(1))], value_of), a)
        if type(a) in (list, tuple):
            return type(a)(map(fill, a))
        if type(a) is dict:
            return {k: fill(v) for k, v in a.items()}
        return a

    for entry in calls:
        args, kwargs = entry
        if isinstance(entry, _Warned):
            warnings.warn_explicit(fill(args[0]), *entry.where)
        else:
            builtins.print(*map(fill, args), **{k: fill(v) for k, v in kwargs.items()})


def _filled(marked, value_of) -> str:
    symbol, spec = marked
    value = value_of.get(id(_symbol(symbol)))
    if value is None:
        return f"<kiln traced value of {_symbol(symbol).name}>"
    if isinstance(symbol, TracedScalar):
        value = python_value(value, symbol.kind)
    return format(value, spec)
