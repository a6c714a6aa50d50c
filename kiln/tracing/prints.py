"""`print` inside a function that `kn.compile` traces: the call is recorded, not made, and the
compiled function makes it on every call with that call's values, as PyTorch's compiled
functions print on every call. Without this, the trace would print a Symbol's description
once and later calls nothing.

Only `print` is replayed. Other Python side effects of a traced function (appending to a list,
changing an attribute) run once, when it is traced.

>>> import kiln as kn
>>> f = kn.compile(lambda x: print("twice:", x * 2) or x + 1)
>>> f(kn.tensor([1.0, 2.0]))
twice: tensor([2., 4.])
tensor([2., 3.])
>>> f(kn.tensor([5.0, 6.0]))
twice: tensor([10., 12.])
tensor([6., 7.])
"""

from __future__ import annotations

import builtins
import contextlib
import threading

from ..graph.core import Symbol

_local = threading.local()  # .calls: the recording list of this thread's trace, if any
_lock = threading.Lock()
_active = 0  # traces recording now, all threads: print stays patched while any is
_saved = builtins.print  # the print that was there when the first of them began


def _print(*args, **kwargs):
    calls = getattr(_local, "calls", None)
    if calls is None:  # another thread, not tracing
        _saved(*args, **kwargs)
    else:
        calls.append((args, kwargs))


@contextlib.contextmanager
def recording(graph):
    """Records the `print` calls this thread makes while tracing into `graph`; yields the list
    of (args, kwargs), where args may hold Symbols of `graph`. A trace inside another one
    (a compiled function called while tracing) records into the outer list."""
    global _active, _saved
    outer = getattr(_local, "calls", None)
    calls = outer if outer is not None else []
    with _lock:
        if not _active:
            _saved = builtins.print
            builtins.print = _print
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


def printed_symbols(calls, graph) -> list:
    """The Symbols of `graph` the recorded calls print, each once, in order of first use."""
    seen, symbols = set(), []
    for args, kwargs in calls:
        for value in (*args, *kwargs.values()):
            if isinstance(value, Symbol) and value.graph is graph and id(value) not in seen:
                seen.add(id(value))
                symbols.append(value)
    return symbols


def replay(calls, symbols, values) -> None:
    """Makes the recorded calls with each Symbol replaced by its value in this call."""
    value_of = {id(s): v for s, v in zip(symbols, values)}
    for args, kwargs in calls:
        args = [value_of.get(id(a), a) if isinstance(a, Symbol) else a for a in args]
        kwargs = {k: value_of.get(id(v), v) if isinstance(v, Symbol) else v
                  for k, v in kwargs.items()}  # fmt: skip
        builtins.print(*args, **kwargs)
