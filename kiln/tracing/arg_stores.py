"""Lists, dicts and dataclass instances passed to a function `kn.compile` traces, changed by
it: `xs.append(y)`, `d["out"] = y`, `xs[0] = xs[0] * 2`, `xs.pop()`, `state.h = h`.

While tracing, the function gets lists, dicts and dataclass instances rebuilt around its
arguments' placeholders, not the caller's (kiln/tracing/structure.py), so a change it makes to
one would be lost, where eager code changes the caller's (and torch.compile replays the
change). So the containers handed to the function are recorded before the trace and compared
after it: one whose items changed (by identity) becomes a `ContentStore`, and every call (the
first one included) gives the caller's container at the same place among its arguments the
items the trace left there, with that call's values (the traced values are outputs of the
program; an argument's tensor is the caller's own tensor; other Python values are kept). A
call that fails changes nothing. The container's new length, keys or static fields are a new
argument structure: the next call traces again, as torch.compile recompiles.

>>> import kiln as kn
>>> @kn.compile
... def log_double(x, seen):
...     seen.append(x * 2)
...     return x + 1
>>> seen = []
>>> _ = log_double(kn.tensor([1.0]), seen), log_double(kn.tensor([2.0]), seen)
>>> seen
[tensor([2.]), tensor([4.])]
"""

from __future__ import annotations

import dataclasses

from .stores import _structure
from .structure import _is_namedtuple, _unflatten

__all__ = ["ContentStore", "argument_containers", "changed_containers"]


class ContentStore:
    """The new items of the argument container at `path` (keys from the call's `(args,
    kwargs)`): rebuilt each call from `structure` and `items` (the program's outputs among
    them are `leaves`, as `stores.store_outputs` takes them; `arguments`: id of an argument's
    placeholder -> its index among the call's leaves)."""

    __slots__ = ("path", "structure", "items", "leaves", "arguments")

    def __init__(self, path, structure, items, arguments):
        self.path, self.structure, self.items = path, structure, items
        self.arguments = {id(x): arguments[id(x)] for x in items if id(x) in arguments}
        self.leaves = [x for x in items if id(x) not in arguments]

    def make(self, values: dict, leaves: list, root) -> None:
        target = root
        for key in self.path:
            target = getattr(target, key) if _is_dataclass(target) else target[key]
        found = {**values, **{i: leaves[k] for i, k in self.arguments.items()}}
        value = _unflatten(self.structure, iter([found.get(id(x), x) for x in self.items]))
        if type(target) is list:
            target[:] = value
        elif type(target) is dict:
            target.clear()
            target.update(value)
        else:  # a dataclass: its fields
            for field in dataclasses.fields(target):
                setattr(target, field.name, getattr(value, field.name))


def argument_containers(args, kwargs) -> list:
    """(path, container, its items) of each list, dict and dataclass instance (its items: its
    fields) among the arguments handed to the traced function (as `structure.flatten` walks
    them).

    >>> xs = [1, {"a": 2}]
    >>> [(path, items) for path, _, items in argument_containers((xs,), {})]
    [((0, 0), [1, {'a': 2}]), ((0, 0, 1), {'a': 2})]
    """
    found: list = []
    for root, items in ((0, enumerate(args)), (1, kwargs.items())):
        for key, item in items:  # (not the kwargs dict itself: the call's own)
            _walk(item, (root, key), found)
    return found


def _walk(value, path, found) -> None:
    if type(value) is list:
        found.append((path, value, list(value)))
        items = enumerate(value)
    elif type(value) is dict:
        found.append((path, value, dict(value)))
        items = value.items()
    elif type(value) is tuple or _is_namedtuple(value):
        items = enumerate(value)
    elif _is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        found.append((path, value, fields))
        items = fields.items()
    else:
        return
    for key, item in items:
        _walk(item, (*path, key), found)


def _is_dataclass(value) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def changed_containers(containers, placeholders) -> list:
    """The `ContentStore`s of the containers (from `argument_containers`) whose items the
    trace changed; `placeholders`: the arguments' placeholders, in order."""
    arguments = {id(s): k for k, s in enumerate(placeholders)}
    stores = []
    for path, container, before in containers:
        if type(container) is list:
            now = dict(enumerate(container))
            before = dict(enumerate(before))
        elif type(container) is dict:
            now = container
        else:  # a dataclass: its fields (set by `s.h = ...`)
            now = {name: getattr(container, name) for name in before}
        if now.keys() == before.keys() and all(before[k] is v for k, v in now.items()):
            continue
        stores.append(ContentStore(path, *_structure(container), arguments))
    return sorted(stores, key=lambda s: len(s.path))  # outer ones first
