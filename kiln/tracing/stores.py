"""Traced values that a function `kn.compile` traces stores in Python state: an attribute
(`self.last = y`), a dict item (a forward hook's `activations[name] = out.detach()`), a list
item or an appended one (`losses.append(loss.item())`).

While tracing, such a value is a Symbol. Left there, the module would hold a Symbol after the
call, and a list a Symbol appended once, where eager code holds each call's tensor (and
appends one per call), as PyTorch's compiled functions do. So the state the function reaches
(its captured dicts and lists, the attributes of the objects and modules it uses, the
globals it names and its closure cells) is compared before and after the trace: each new
value that holds traced values becomes a store. The trace's change is undone, the values
join the program's outputs, and every call (the first one included) makes the store again
with that call's values: `setattr`, `d[key] = ...`, `lst[i] = ...`, `lst.append(...)` or a
closure cell's `nonlocal h; h = ...`. A call that fails stores nothing. The guards
(`guards.Captures`) do not compare what is stored by identity (it changes each call): the
cache key holds its kind (nothing, None, a tensor...), and a tensor stored there is an input
of the next call's program, so state carried from call to call (an RNN's `self.hidden`) is
read as eager code reads it.

>>> import kiln as kn
>>> class Net(kn.nn.Module):
...     def forward(self, x):
...         self.doubled = x * 2
...         return self.doubled.sum()
>>> net = kn.compile(Net())
>>> net(kn.tensor([1.0, 2.0])), net.doubled
(tensor(6.), tensor([2., 4.]))
>>> net(kn.tensor([3.0, 4.0])), net.doubled
(tensor(14.), tensor([6., 8.]))
"""

from __future__ import annotations

from ..frontend.trace_locals import symbol_of
from ..graph.core import Symbol
from ..nn.module import Module
from .guards import _EMPTY, _attributes_of, _cell_value, _is_kiln
from .scalars import TracedScalar
from .structure import _unflatten, flatten

__all__ = ["Store", "Watch", "make_stores", "store_outputs", "stored_keys"]

_MISSING = object()


class Store:
    """One store to make on each call: `kind` "attr" (`setattr(target, key, value)`), "item"
    (`target[key] = value`), "cell" (a closure cell's contents: `nonlocal h; h = value`) or
    "append" (`target.append(value)`); `structure` rebuilds the
    value from its leaves (the program's outputs `symbols` and any other objects it held);
    `old`: what the place held before the trace (None where nothing)."""

    __slots__ = ("kind", "target", "key", "structure", "leaves", "old")

    def __init__(self, kind, target, key, structure, leaves, old=None):
        self.kind, self.target, self.key = kind, target, key
        self.structure, self.leaves, self.old = structure, leaves, old

    def describe(self) -> str:
        """Where it stores, in words: `Net.last`, `item 'fc' of a dict`, `appended to a list`."""
        if self.kind == "attr":
            return f"{type(self.target).__name__}.{self.key}"
        if self.kind == "item":
            return f"item {self.key!r} of a {type(self.target).__name__}"
        if self.kind == "cell":
            return "a closure variable"
        return "appended to a list"

    def make(self, values: dict) -> None:
        """Stores the value rebuilt from `values` (id(symbol) -> this call's value)."""
        value = _unflatten(self.structure, iter([values.get(id(x), x) for x in self.leaves]))
        if self.kind == "attr":
            setattr(self.target, self.key, value)
        elif self.kind == "cell":
            self.target.cell_contents = value
        elif self.kind == "item":
            self.target[self.key] = value
        else:
            self.target.append(value)


def _resolved(value):
    """`value`, or the graph value it stands for: a tensor the function made and wrote a
    traced value into (kiln/frontend/trace_locals.py)."""
    symbol = symbol_of(value)
    return value if symbol is None else symbol


def _traced(value, graph) -> list | None:
    """The leaves of `value` (flattened) if it holds a traced value of `graph`, else None."""
    value = _resolved(value)
    if isinstance(value, (Symbol, TracedScalar)):
        symbol = value if isinstance(value, Symbol) else value.symbol
        return [value] if symbol.graph is graph else None
    if type(value) not in (list, tuple, dict) and not isinstance(value, tuple):
        return None
    leaves: list = []
    try:
        flatten(value, "", leaves, [], [])
    except RecursionError:
        return None
    leaves = [_resolved(x) for x in leaves]
    ours = [x for x in leaves if isinstance(x, (Symbol, TracedScalar))]
    symbols = [x if isinstance(x, Symbol) else x.symbol for x in ours]
    return leaves if any(s.graph is graph for s in symbols) else None


def _structure(value) -> tuple:
    leaves: list = []
    structure = flatten(value, "", leaves, [], [])
    return structure, [_resolved(x) for x in leaves]


class Watch:
    """The Python state a trace may store traced values in, as it was before the trace:
    the `__dict__` of the modules and objects the function reaches, the dicts and lists it
    captures, and the globals its code names (`captures`: a `guards.Captures`)."""

    def __init__(self, captures, modules=()):
        self._dicts: list[tuple] = []  # (dict, owner or None, names or None, snapshot)
        self._lists: list[tuple] = []  # (list, snapshot)
        seen: set[int] = set()
        for m in [*captures.modules, *modules]:
            self._add_dict(m.__dict__, m, None, seen)
        for _, obj, _ in captures._holders:
            if _is_kiln(type(obj)) and not isinstance(obj, Module):
                continue  # an optimizer, a scaler: their state is the program's updates
            attrs = _attributes_of(obj)
            if attrs is not None:
                self._add_dict(attrs, obj, None, seen)
        for _, _, value in captures.objects:
            if type(value) is dict:
                self._add_dict(value, None, None, seen)
            elif type(value) is list and id(value) not in seen:
                seen.add(id(value))
                self._lists.append((value, list(value)))
        for env, names in captures.envs:
            self._dicts.append((env, None, names, {n: env.get(n, _MISSING) for n in names}))
        self._cells = [(cell, _cell_value(cell)) for cell in captures.closure_cells]

    def _add_dict(self, d: dict, owner, names, seen: set) -> None:
        if id(d) not in seen:
            seen.add(id(d))
            self._dicts.append((d, owner, names, dict(d)))

    def collect(self, graph) -> list[Store]:
        """The stores the trace (of `graph`) made, undone: the state is as it was before."""
        stores: list[Store] = []
        for d, owner, names, before in self._dicts:
            for key in list(d if names is None else names):
                value = d.get(key, _MISSING)
                if value is _MISSING or value is before.get(key, _MISSING):
                    continue
                if _traced(value, graph) is None:
                    continue
                structure, leaves = _structure(value)
                old = before.get(key, _MISSING)
                held = None if old is _MISSING else old
                if owner is not None:
                    stores.append(Store("attr", owner, key, structure, leaves, held))
                else:
                    stores.append(Store("item", d, key, structure, leaves, held))
                if old is _MISSING:
                    del d[key]
                else:
                    d[key] = old
        for cell, before in self._cells:  # `nonlocal h; h = x * 2`
            value = _cell_value(cell)
            if value is before or _traced(value, graph) is None:
                continue
            structure, leaves = _structure(value)
            held = None if before is _EMPTY else before
            stores.append(Store("cell", cell, None, structure, leaves, held))
            if before is _EMPTY:
                del cell.cell_contents
            else:
                cell.cell_contents = before
        for lst, before in self._lists:
            kept, appended = [], []
            for i, value in enumerate(lst):
                old = before[i] if i < len(before) else _MISSING
                if value is old or _traced(value, graph) is None:
                    kept.append(value)
                    continue
                structure, leaves = _structure(value)
                if old is _MISSING:
                    appended.append(Store("append", lst, None, structure, leaves))
                else:
                    stores.append(Store("item", lst, i, structure, leaves, old))
                    kept.append(old)
            lst[:] = kept
            stores += appended
        return stores


def stored_keys(stores) -> set:
    """(id(dict or list), key) of each store, `key` None for a list appended to: what the
    guards skip."""
    found = set()
    for s in stores:
        if s.kind == "attr":
            attrs = _attributes_of(s.target)
            found.add((id(attrs), s.key))
        else:  # (a closure cell's key: None)
            found.add((id(s.target), s.key))
    return found


def store_outputs(stores, graph, outputs: list) -> list:
    """(id(leaf), output index) of each traced value of `graph` the stores hold, added to
    `outputs` (after the returned ones) where not returned already: each call's values,
    recorded on the tape as the returned ones are. Builds into the default graph."""
    from ..frontend.autodiff import stop_gradient

    index = {id(s): k for k, s in enumerate(outputs)}
    found = []
    for store in stores:
        for leaf in store.leaves:
            if isinstance(leaf, TracedScalar):
                symbol = stop_gradient(leaf.symbol)
            elif isinstance(leaf, Symbol) and leaf.graph is graph:
                symbol = leaf
            else:
                continue  # another object: stored as it is
            if id(symbol) not in index:
                index[id(symbol)] = len(outputs)
                outputs.append(symbol)
            found.append((id(leaf), index[id(symbol)]))
    return found


def make_stores(stores, index: list, values: list, contents=(), leaves=(), call=None) -> None:
    """Makes the stores with a call's output `values` (`index`: from `store_outputs`), and
    gives the containers among the call's arguments (`call`: its `(args, kwargs)`; `leaves`:
    their arrays) the items the trace left in them (`contents`: kiln/tracing/arg_stores.py)."""
    contents = contents if call is not None else ()
    if stores or contents:
        by_id = {leaf: values[k] for leaf, k in index}
        for store in stores:
            store.make(by_id)
        for content in contents:
            content.make(by_id, leaves, call)
