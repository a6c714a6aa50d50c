"""The names a function's code reads (kiln/tracing/guards.py walks what they reach): all
it uses (`code_names`), those it reads other than to append to them or set their items
(`read_names`), and those it reads or writes as globals (`global_names`)."""

from __future__ import annotations

import dis
import functools
import types

__all__ = ["code_names", "global_names", "read_names"]


@functools.lru_cache(maxsize=4096)
def code_names(code: types.CodeType) -> frozenset:
    """The global and attribute names `code` and the code nested in it (lambdas,
    comprehensions, inner functions) use.

    >>> sorted(code_names((lambda x: cfg.scale * x).__code__))
    ['cfg', 'scale']
    """
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return frozenset(names)


_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"})
_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FAST",
                    "LOAD_ATTR", "LOAD_METHOD"})  # fmt: skip
_APPENDS = frozenset({"append", "extend"})


@functools.lru_cache(maxsize=4096)
def read_names(code: types.CodeType, items: bool = False) -> frozenset:
    """The names `code` (and the code nested in it) loads other than to call `.append` or
    `.extend` on what it loads: `log` in `len(log)` or `x = log`, not in `log.append(1)`;
    with `items`, nor to set an item of it by a plain key (`acts[name] = out`).

    >>> def f(x):
    ...     log.append(x)
    ...     acts["x"] = x
    ...     return len(seen)
    >>> sorted(read_names(f.__code__, items=True))
    ['append', 'len', 'seen', 'x']
    """
    ins = list(dis.get_instructions(code))
    names = {
        i.argval
        for i, nxt, then in zip(ins, ins[1:], [*ins[2:], None])
        if i.opname in _LOADS and isinstance(i.argval, str)
        and not (nxt.opname in ("LOAD_METHOD", "LOAD_ATTR") and nxt.argval in _APPENDS)
        and not (items and nxt.opname in _KEYS and then is not None
                 and then.opname == "STORE_SUBSCR")
    }  # fmt: skip
    if ins and ins[-1].opname in _LOADS and isinstance(ins[-1].argval, str):
        names.add(ins[-1].argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= read_names(const, items)
    return frozenset(names)


_KEYS = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"})


@functools.lru_cache(maxsize=4096)
def global_names(code: types.CodeType) -> frozenset:
    """The names `code` (and the code nested in it) reads or writes as globals: not the
    attribute names it uses (`opt.step()` does not read a global `step`).

    >>> sorted(global_names((lambda: opt.step()).__code__))
    ['opt']
    """
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return frozenset(names)
