"""What a `kn.compile`d function reads besides its arguments, found by a walk of its code:
its closure cells, the globals it names, and the attributes that code (or the methods of the
object's class) names of the objects and modules it reaches, and the items of the dicts
(and of the lists and tuples of more than Python values) there. Python values there
(numbers, strings, tuples of them) go into the cache key; tensors and objects there are
guarded, and so is what the modules reached hold. An object reached whose class has a
`_compile_key()` method (an optimizer: the group options its compiled step bakes in) adds
what that returns, a Python value, to the cache key.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import operator
import os
import random
import sys
import types

import numpy as np

from ..eager.hooks import _hooks_of
from ..eager.tensor import Tensor
from ..nn.module import Module
from ..nn.module_hooks import GLOBAL_FORWARD_HOOKS, GLOBAL_FORWARD_PRE_HOOKS
from .code_names import code_names as _code_names
from .code_names import global_names as _global_names
from .code_names import read_names as _read_names

__all__ = ["APPENDS", "ITEMS", "Captures", "Guard", "put", "rebindable", "rebound"]

_VALUES = (bool, int, float, complex, str, bytes, type(None), np.generic)
# keyed or walked apart
_MODULE_STATE = {"training", "_parameters", "_buffers", "_modules", "_name"}
_MAX_DEPTH = 4  # objects reached through more globals or attributes than this are not walked
_MAX_CODE = 500  # functions walked per Captures, at most
_MAX_ITEMS = 64  # lists, tuples and dicts longer than this are not walked
_EMPTY = object()  # an empty closure cell's value, or a deleted global or attribute
_CELL = object()  # the key of a closure cell's place (`put`)
ITEMS = object()  # the key of a list's place: all its items (`put`)
APPENDS = object()  # the key of a list's place where a call appends items (`put`)
_HOOKS = ("_forward_pre_hooks", "_forward_hooks")  # a Module's, run by its calls


def _is_value(v) -> bool:
    """Whether `v` is captured by value: traced as a constant, compared with ==."""
    return isinstance(v, _VALUES) or type(v) is tuple and all(_is_value(i) for i in v)


def _is_kiln(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "kiln"


@functools.lru_cache(maxsize=1024)
def _methods(cls: type) -> dict:
    """name -> function: the methods (and property getters) of `cls` and its bases, as
    attribute lookup finds them (but those of `object` and `Module`)."""
    found: dict = {}
    for base in cls.__mro__:
        if base in (object, Module):
            continue
        for name, member in vars(base).items():
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if isinstance(member, property):
                member = member.fget
            if isinstance(member, types.FunctionType):
                found.setdefault(name, member)
    return found


# dunder methods a traced function does not call (the others, `__iter__`, `__len__`,
# `__getitem__`, ..., run for `for x in obj`, `len(obj)`, `obj[k]` without being named)
_NOT_CALLED = frozenset({"__init__", "__new__", "__del__", "__repr__", "__str__",
                         "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__",
                         "__init_subclass__", "__class_getitem__", "__set_name__"})  # fmt: skip


def _reached_methods(cls: type, names: set) -> list:
    """The methods of `cls` that code naming `names` may call: those named, and those they
    name in turn (`self.helper()`); a module's `forward`, a callable's `__call__` and the
    other dunder methods (`__iter__` for `for x in obj`) always."""
    methods = _methods(cls)
    todo = [n for n in methods if n in names or n in ("forward", "__call__")
            or (n not in _NOT_CALLED and n[:2] == n[-2:] == "__")]  # fmt: skip
    found = set(todo)
    while todo:
        for n in _code_names(methods[todo.pop()].__code__):
            if n in methods and n not in found:
                found.add(n)
                todo.append(n)
    return [methods[n] for n in sorted(found)]


def _attributes_of(obj) -> dict | None:
    """`obj.__dict__`, read past any `__getattr__` of its class (a proxy's may raise)."""
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except Exception:  # noqa: BLE001 (no instance dict, whatever the reason)
        return None
    return attrs if isinstance(attrs, dict) else None


class _ClassLevel:
    """The attributes of `obj` (a class, or an instance) that its class or a base holds as
    data (`Cfg.lr`, `self.scale` set in the class body), read as attribute lookup finds
    them, as a dict: `Captures` keys what the code reads of them, and `put` sets them."""

    __slots__ = ("obj", "classes", "instance")

    def __init__(self, obj):
        self.obj = obj
        self.instance = not isinstance(obj, type)
        mro = type(obj).__mro__ if self.instance else obj.__mro__
        self.classes = [c for c in mro if c not in (object, Module) and not _is_kiln(c)]

    def __contains__(self, name) -> bool:
        return any(name in vars(c) and not _is_method(vars(c)[name]) for c in self.classes)

    def __getitem__(self, name):
        if self.instance:
            attrs = _attributes_of(self.obj)
            if attrs is not None and name in attrs:
                return attrs[name]
        for c in self.classes:
            if name in vars(c):
                return vars(c)[name]
        raise KeyError(name)

    def __setitem__(self, name, value) -> None:
        setattr(self.obj, name, value)


def _is_method(member) -> bool:
    """Whether a class member is code or a descriptor rather than data."""
    return isinstance(member, (types.FunctionType, property, staticmethod, classmethod)) or (
        hasattr(type(member), "__get__") and not isinstance(member, type)
    )


def _user_class(value) -> bool:
    return isinstance(value, type) and not _is_kiln(value) and value.__module__ != "builtins"


def _user_module(value) -> bool:
    """A Python module whose attributes a program may change (`import cfg`): not kiln's,
    nor the standard library's."""
    if not isinstance(value, types.ModuleType):
        return False
    top = value.__name__.split(".")[0]
    return top != "kiln" and top not in sys.stdlib_module_names


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def rebindable(get) -> bool:
    """Whether the source a captured tensor's getter reads can be set (`rebound`): a dict
    (globals, an object's attributes), a list, or a closure cell."""
    if isinstance(get, functools.partial) and get.func is _item:
        return isinstance(get.args[0], (dict, list))
    return isinstance(get, functools.partial) and get.func is _cell_value


@contextlib.contextmanager
def rebound(getters, values):
    """Sets each source that `getters` read (`rebindable`) to the matching value, and back
    to what it held on the way out: while tracing, fn then reads the placeholder of each
    captured tensor that it takes as an input."""
    saved = [get() for get in getters]
    try:
        for get, value in zip(getters, values):
            _set(get, value)
        yield
    finally:  # (a source fn stored a new value in is left to `stores`, which undoes it)
        for get, value, placeholder in zip(getters, saved, values):
            if get() is placeholder:
                _set(get, value)


def put(place, value) -> None:
    """Stores `value` at a place `Captures.changes` names: a dict's key, a closure cell, or
    the items of a list (`value` a tuple of them)."""
    holder, key = place
    if key is _CELL:
        holder.cell_contents = value
    elif key is ITEMS:
        holder[:] = value
    elif key is APPENDS:
        holder.extend(value)
    else:
        holder[key] = value


def _set(get, value) -> None:
    if get.func is _item:
        env, key = get.args
        env[key] = value
    else:
        get.args[0].cell_contents = value


def _cell_values(cell) -> tuple:
    return (cell.cell_contents,)


def _one(get, env) -> tuple:
    return (get(env),)


def _list_items(lst: list) -> tuple:
    return (tuple(lst),)


def _item(env, key):
    """`env[key]` (a dict, list or tuple), or `_EMPTY` where it is no longer there."""
    try:
        return env[key]
    except (KeyError, IndexError):
        return _EMPTY


def _method_members(obj, names: frozenset, classes: tuple, keep: list) -> tuple:
    """Which of its methods `names` (those its code calls) `obj` holds in its own
    `__dict__` instead (`m.act = other`), and the identity of each, and of each method as
    the classes up to the one that defined it hold it (`classes`: (name, their `vars`);
    `Net.act = other`, on that class or a subclass): a change there traces again. `keep`
    holds them (after what it found last, first), so that no other object takes their ids
    while a trace keyed by them is kept."""
    attrs = _attributes_of(obj)
    own = names & attrs.keys() if attrs is not None else ()
    members = [ds[0].get(n) if len(ds) == 1 else next((d[n] for d in ds if n in d), None)
               for n, ds in classes]  # fmt: skip
    if own:
        own = sorted(own)
        members += [attrs[n] for n in own]
    found = (tuple(own), tuple(map(id, members)))
    if found != keep[0]:  # (new members: held)
        keep[0] = found
        keep.append(members)
    return found


def _environment() -> tuple:
    """The process environment, as `os.environ` reads it (its items, compared as a set)."""
    return (frozenset(getattr(os.environ, "_data", os.environ).items()),)


def _length(container, n: int) -> tuple:
    """(n,) while `container` still has n items; else a ValueError, on which the caller
    walks the function again (what it reaches through the container changed)."""
    if len(container) != n:
        raise ValueError("a captured container changed its length")
    return (n,)


def _stored_kind(get) -> tuple:
    """What a source that the traces store in holds: a tensor (an input of the program),
    nothing, or another type (a program traced with what was there before)."""
    value = get()
    if isinstance(value, Tensor):
        return ("a tensor",)
    if isinstance(value, (list, tuple, dict)):  # (`self.log = self.log + [y]`: its length)
        return (type(value).__name__, len(value))
    return ("nothing",) if value is _EMPTY else (type(value).__name__,)


def _compile_key(obj) -> tuple:
    return (obj._compile_key(),)


def _is_container(value) -> bool:
    """A dict, list or tuple of at most `_MAX_ITEMS` items, or a list of Python values of
    any length (compared by its items on each call, as a tuple of them would be)."""
    if type(value) not in (list, tuple, dict, collections.defaultdict, collections.OrderedDict):
        return False
    return len(value) <= _MAX_ITEMS or type(value) is list and all(map(_is_value, value))


class Captures:
    """The sources `fn` (and `roots`: (label, object) pairs, a call's static arguments) read:
    `labels` and `values()` (the Python values), `tensors` (label, getter), `objects` (label,
    getter, object: functions, modules, objects walked) and `modules` (with descendants)."""

    def __init__(self, fn, roots=(), exclude=frozenset()):
        self.read: set = set()  # names used by the user's code walked (not kiln's)
        self.codes: list = []  # the code objects of the user's functions walked
        self.envs: list[tuple] = []  # (globals, the names code walked reads or writes there)
        self.stored: list[tuple] = []  # (label, getter): what the traces store, found again
        self._exclude = exclude  # (id(dict or list), key): what the trace stores (`stores`)
        self.labels: list[str] = []
        self.tensors: list[tuple] = []
        self.objects: list[tuple] = []
        self.generators: list[tuple] = []  # (label, a host random generator fn reaches)
        self._modules: dict[int, Module] = {}
        self._getters: list = []  # each gives a tuple of values, in `labels` order
        self._places: list = []  # per getter of Python values: (dict, key) or (cell, _CELL)
        self._pending: list[tuple] = []  # (label, dict, name, depth, walk): sources to sort
        self._cells: list[tuple] = []  # (label, cell, depth)
        self.closure_cells: list = []  # every closure cell of the code walked (`stores`)
        self._environ = False  # whether the code reads os.environ
        self._lengths: list[tuple] = []  # (label, container): lists, tuples, dicts walked
        self._grown: list[tuple] = []  # (label, container): those each call stores in
        self._lists: list[tuple] = []  # (label, list): lists of Python values, by their items
        self._holders: list[tuple] = []  # (label, object, depth): attributes maybe read
        self._classes: list[tuple] = []  # (label, class, depth): class attributes maybe read
        self._python_modules: list[tuple] = []  # (label, module, depth): `cfg.scale` read
        self._keyed: list[tuple] = []  # (label, object): objects with a `_compile_key()`
        self._class_level: dict[int, _ClassLevel] = {}  # id(object) -> its class attributes
        self._names: dict[int, set] = {}  # id(holder) -> the attribute names its methods read
        self._seen: set[int] = set()
        self._sources: set[tuple] = set()
        self._codes = 0
        self._walk(fn, getattr(fn, "__name__", "fn"), 0)
        for label, obj in roots:
            self._walk(obj, label, 0)
        self._resolve()

    @property
    def modules(self) -> list:
        return list(self._modules.values())

    def values(self) -> tuple:
        """The captured Python values now: one tuple per dict or cell they are read from."""
        return tuple([g() for g in self._getters])

    def changes(self, before: tuple) -> list:
        """(label, place, value before, value now) of each captured Python value (an
        attribute, a global, a closure cell) that differs from `before`, an earlier reading
        of `values()`: what a trace of the function stored there (`self.count += 1`)."""
        try:
            now = self.values()
        except (KeyError, IndexError, ValueError):  # a source went away: nothing to replay
            return []
        labels, found, k = self.labels, [], 0
        for places, old, new in zip(self._places, before, now):
            for place, a, b in zip(places, old, new):
                if a is not b and (type(a) is not type(b) or a != b):
                    found.append((labels[k], place, a, b))
                k += 1
        return found

    def only_appended(self, label: str, items: bool = False) -> bool:
        """Whether the code walked uses what `label` names (a global, a closure cell, an
        attribute: `log`, `self.log`) only to append to it (`log.append(x)`; with `items`,
        or to set its items: `acts[name] = out`): a list (or dict) it does not read, whose
        appends each call can make again without a new trace."""
        name = label.rsplit(".", 1)[-1]
        if not name.isidentifier():  # an item of a container, a default: not by name
            return False
        return not any(name in _read_names(code, items) for code in self.codes)

    def group_options(self) -> list:
        """(group, a copy of it) of each param group of the optimizers reached (objects with
        a `_compile_key()`): their learning rates are read when a call runs, not keyed, so a
        change a trace makes (a scheduler's step) is `group_changes`'."""
        return [(g, dict(g)) for _, obj in self._keyed
                for g in getattr(obj, "param_groups", ()) if isinstance(g, dict)]  # fmt: skip

    def container_keys(self) -> list:
        """(container, its keys or length) of each dict, list or tuple walked: what
        `check_new_entries` puts back after a trace that added entries."""
        return [(c, set(c) if isinstance(c, dict) else len(c)) for _, c in self._lengths]

    # -- the walk ----------------------------------------------------------------------------

    def _walk(self, value, label: str, depth: int) -> None:
        """Reaches into a function, method, module or object held by a source."""
        if id(value) in self._seen or depth > _MAX_DEPTH or isinstance(value, type):
            return
        self._seen.add(id(value))
        if isinstance(value, types.MethodType):
            self._walk(value.__func__, label, depth)
            self._walk(value.__self__, "self", depth)
        elif isinstance(value, functools.partial):
            self._walk(value.func, label, depth)
            for k in range(len(value.args)):  # and what it binds (`partial(f, w=d)`)
                self._pending.append((f"{label}.args[{k}]", value.args, k, depth, True))
            for k in value.keywords:
                self._pending.append((f"{label}.keywords[{k!r}]", value.keywords, k, depth, True))
        elif isinstance(value, types.FunctionType):
            self._function(value, depth)
        elif isinstance(value, Module):
            for path, m in value.named_modules(prefix=label):
                self._modules.setdefault(id(m), m)
                self._seen.add(id(m))
                self._holder(m, path, depth)
                for kind in _HOOKS:  # what its forward hooks read (and store: `stores`)
                    for key, hook in (m.__dict__.get(kind) or {}).items():
                        self._walk(hook, f"{path}.{kind}[{key}]", depth + 1)
                for key, hook in _global_hooks():  # and the global ones its calls run
                    self._walk(hook, f"global_forward_hooks[{key}]", depth + 1)
                for name, p in m._parameters.items():  # and its parameters' gradient hooks
                    for k, hook in enumerate(_hooks_of(p, 1) if p is not None else ()):
                        self._walk(hook, f"{path}.{name}.hooks[{k}]", depth + 1)
        elif _attributes_of(value) is not None and not isinstance(value, types.ModuleType):
            if callable(getattr(type(value), "_compile_key", None)):
                self._keyed.append((label, value))
                self._plain_params(value, label, depth)
            self._holder(value, label, depth)

    def _plain_params(self, optimizer, label: str, depth: int) -> None:
        """The plain tensors an optimizer reached trains (not Parameters, which are graph
        Variables): a compiled `opt.step()` reads and changes them, so the trace takes them
        as inputs (trace.py `_lifted`) even where the function's code does not name them."""
        for i, group in enumerate(getattr(optimizer, "param_groups", ())):
            params = group.get("params") if isinstance(group, dict) else None
            if type(params) is not list or len(params) > _MAX_ITEMS:
                continue
            for k, p in enumerate(params):
                if type(p) is Tensor:
                    self._pending.append((f"{label}.param_groups[{i}]['params'][{k}]", params,
                                          k, depth + 1, True))  # fmt: skip

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        """A user's function: the names it reads, its globals and closure cells."""
        if _is_kiln(fn) or self._codes >= _MAX_CODE:
            # kiln's own functions read no user state but their arguments, and the user's
            # function one wraps (`__wrapped__`: a transform's graph form, kn.func.vmap's)
            wrapped = getattr(fn, "__wrapped__", None)
            if wrapped is not None and _is_kiln(fn):
                self._walk(wrapped, getattr(wrapped, "__name__", "fn"), depth)
            return
        self._codes += 1
        self.codes.append(fn.__code__)
        read = _code_names(fn.__code__)
        self.read |= read
        env = fn.__globals__
        self.envs.append((env, _global_names(fn.__code__)))
        for name in _global_names(fn.__code__):
            if name in env:
                self._pending.append((name, env, name, depth, True))
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            self._cells.append((name, cell, depth))
            self.closure_cells.append(cell)
        # its mutable defaults (`k=[1.0]`, `cache={}`): what a call that does not pass them
        # reads (an array default is an argument instead: trace.py)
        names, defaults = fn.__code__.co_varnames[: fn.__code__.co_argcount], fn.__defaults__
        for k, value in enumerate(defaults or ()):
            if type(value) in (list, dict):
                name = names[len(names) - len(defaults) + k]
                self._pending.append((f"{name} (default)", defaults, k, depth, True))
        for name, value in (fn.__kwdefaults__ or {}).items():
            if type(value) in (list, dict):
                self._pending.append((f"{name} (default)", fn.__kwdefaults__, name, depth, True))

    def _holder(self, obj, label: str, depth: int) -> None:
        """An object whose attributes the code may read (and whose methods it may call)."""
        self._holders.append((label, obj, depth))
        self._names[id(obj)] = set()

    def _resolve(self) -> None:
        """Sorts the sources found until no new ones come (a method or function walked may
        name more attributes of the objects reached), then makes the getters of the values."""
        groups: dict[int, tuple] = {}  # id(dict) -> (dict, [names], [labels])
        cells: list[tuple] = []
        while True:
            grown = False
            for label, obj, depth in list(self._holders):
                grown |= self._attributes(label, obj, depth)
            for label, cls, depth in self._classes:
                self._class_attributes(label, cls, depth, self.read)
            for label, module, depth in self._python_modules:
                env = vars(module)
                for name in sorted(env.keys() & self.read):
                    if (id(env), name) not in self._sources:
                        self._pending.append((f"{label}.{name}", env, name, depth, True))
            pending, self._pending = self._pending, []
            for label, env, name, depth, walk in pending:
                self._sort(label, env, name, depth, walk, groups)
            found, self._cells = self._cells, []
            for label, cell, depth in found:
                self._sort_cell(label, cell, depth, cells)
            if not (grown or pending or found or self._pending or self._cells):
                break
        for env, names, labels in groups.values():
            get = operator.itemgetter(*names)
            if len(names) > 1:
                self._getters.append(functools.partial(get, env))
            else:  # itemgetter of one name gives the value, not a tuple
                self._getters.append(functools.partial(_one, get, env))
            self.labels.extend(labels)
            self._places.append([(env, name) for name in names])
        for label, cell in cells:
            self._getters.append(functools.partial(_cell_values, cell))
            self.labels.append(label)
            self._places.append([(cell, _CELL)])
        for label, lst in self._lists:
            self._getters.append(functools.partial(_list_items, lst))
            self.labels.append(label)
            self._places.append([(lst, ITEMS)])
        self._lengths += [(f"len({label})", c) for label, c in self._grown
                          if not self.only_appended(label, items=True)]  # fmt: skip
        for label, container in self._lengths:
            self._getters.append(functools.partial(_length, container, len(container)))
            self.labels.append(label)
        for label, obj, _ in self._holders:  # the methods its code calls on a user's object
            if not _is_kiln(type(obj)):  # (`self.act(x)`), replaced (`m.act = other`)
                reached = set(map(id, _reached_methods(type(obj), self.read)))
                names = [n for n, f in _methods(type(obj)).items() if id(f) in reached]
                mro = type(obj).__mro__  # (per name, the classes up to the one defining it)
                ends = [next(k for k, c in enumerate(mro) if n in vars(c)) for n in names]
                classes = tuple((n, tuple(map(vars, mro[: k + 1]))) for n, k in zip(names, ends))
                self._getters.append(
                    functools.partial(_method_members, obj, frozenset(names), classes, [None])
                )
                self.labels.append(f"the methods of {label} ({', '.join(names)})")
        if self._environ:
            self._getters.append(_environment)
            self.labels.append("os.environ")
        for label, get in self.stored:  # a tensor there is an input (trace.py, `_lifted`)
            self._getters.append(functools.partial(_stored_kind, get))
            self.labels.append(f"kind of {label}")
        for label, obj in self._keyed:
            self._getters.append(functools.partial(_compile_key, obj))
            self.labels.append(f"{label}._compile_key()")

    def _attributes(self, label: str, obj, depth: int) -> bool:
        """Walks the methods of `obj` the code may call and queues the attributes it may
        read; whether anything new came."""
        own = self._names[id(obj)]
        size = len(own)
        for method in _reached_methods(type(obj), self.read):
            own |= _code_names(method.__code__)
            if id(method) not in self._seen:  # a user's method: its globals and closure
                self._seen.add(id(method))
                self._function(method, depth + 1)
        attrs = _attributes_of(obj)
        if attrs is None:
            return len(own) > size
        module = isinstance(obj, Module)
        new = [n for n in attrs.keys() & (self.read | own) if (id(attrs), n) not in self._sources]
        for name in sorted(new):
            if not (module and name in _MODULE_STATE):
                # objects held by a kiln object are walked only where the user's code names
                # them: kiln's methods read attributes such as `last` that change per call
                walk = name in self.read or not _is_kiln(type(obj))
                self._pending.append((f"{label}.{name}", attrs, name, depth + 1, walk))
        if not _is_kiln(type(obj)):  # `self.scale` that the class body sets
            self._class_attributes(label, obj, depth, (self.read | own) - attrs.keys())
        return len(own) > size

    def _class_attributes(self, label: str, obj, depth: int, names) -> None:
        """Queues the class-level data attributes of `obj` (a class, or an instance) that
        `names` name, as attribute lookup finds them."""
        level = self._class_level.get(id(obj))
        if level is None:
            level = self._class_level[id(obj)] = _ClassLevel(obj)
        for name in sorted(n for n in names if (id(level), n) not in self._sources):
            if name in level:
                self._pending.append((f"{label}.{name}", level, name, depth + 1, True))

    def _sort(self, label, env: dict, name: str, depth: int, walk: bool, groups: dict) -> None:
        if (id(env), name) in self._sources:
            return
        self._sources.add((id(env), name))
        if (id(env), name) in self._exclude:  # stored by each call: its kind is keyed
            self.stored.append((label, functools.partial(_item, env, name)))
            return
        value = env[name]
        if value is os.environ or value is os and "environ" in self.read:
            self._environ = True  # `os.environ.get("FLAG")`: keyed by the environment
        elif isinstance(value, _GENERATORS):  # its draws: `check_no_host_draws`
            self.generators.append((label, value))
        elif isinstance(value, Tensor):
            self.tensors.append((label, functools.partial(_item, env, name)))
        elif _is_value(value):
            entry = groups.setdefault(id(env), (env, [], []))
            entry[1].append(name)
            entry[2].append(label)
        elif isinstance(value, np.ndarray):  # no version counter: its identity only
            self.objects.append((label, functools.partial(_item, env, name), value))
        elif walk and _is_container(value):
            self.objects.append((label, functools.partial(_item, env, name), value))
            self._container(value, label, depth + 1)
        elif walk and self._walkable(value):
            self.objects.append((label, functools.partial(_item, env, name), value))
            self._walk(value, label, depth + 1)
        elif walk and _user_class(value) and depth < _MAX_DEPTH:  # `Cfg.lr`: what it holds
            self.objects.append((label, functools.partial(_item, env, name), value))
            self._classes.append((label, value, depth + 1))
        elif walk and _user_module(value) and depth < _MAX_DEPTH:  # `cfg.scale`, `import cfg`
            self.objects.append((label, functools.partial(_item, env, name), value))
            self._python_modules.append((label, value, depth + 1))

    def _sort_cell(self, label, cell, depth: int, cells: list) -> None:
        if (id(cell), None) in self._sources:
            return
        self._sources.add((id(cell), None))
        if (id(cell), None) in self._exclude:  # stored by each call (`nonlocal h; h = ...`)
            self.stored.append((label, functools.partial(_cell_value, cell)))
            return
        value = _cell_value(cell)
        if value is os.environ or value is os and "environ" in self.read:
            self._environ = True  # (`import os` in the enclosing function)
        elif isinstance(value, _GENERATORS):  # its draws: `check_no_host_draws`
            self.generators.append((label, value))
        elif isinstance(value, Tensor):
            self.tensors.append((label, functools.partial(_cell_value, cell)))
        elif _is_value(value):
            cells.append((label, cell))
        elif isinstance(value, np.ndarray):
            self.objects.append((label, functools.partial(_cell_value, cell), value))
        elif _is_container(value):
            self.objects.append((label, functools.partial(_cell_value, cell), value))
            self._container(value, label, depth + 1)
        elif self._walkable(value):
            self.objects.append((label, functools.partial(_cell_value, cell), value))
            self._walk(value, label, depth + 1)
        elif _user_class(value) and depth < _MAX_DEPTH:  # `Cfg.lr`: what it holds
            self.objects.append((label, functools.partial(_cell_value, cell), value))
            self._classes.append((label, value, depth + 1))
        elif _user_module(value) and depth < _MAX_DEPTH:
            self.objects.append((label, functools.partial(_cell_value, cell), value))
            self._python_modules.append((label, value, depth + 1))

    def _container(self, container, label: str, depth: int) -> None:
        """The items of a dict, or of a list or tuple that holds more than Python values (a
        list of modules), sorted as sources (torch.compile guards them too); its length is
        checked on each call. A list of Python values only is one Python value, its items:
        keyed, and put back by each call where a trace changed it (`made.append(7)`), as
        torch.compile guards a list's length and replays its appends. But a list each call
        stores a tensor's value in (`losses.append(loss.item())`) is left to `stores`."""
        if id(container) in self._seen or depth > _MAX_DEPTH:
            return
        self._seen.add(id(container))
        stored = {k for i, k in self._exclude if i == id(container)}
        if stored:  # appended to, or items stored, by each call: its length is keyed
            self._grown.append((label, container))  # where the code reads it (`len(log)`)
        if not isinstance(container, dict) and all(_is_value(v) for v in container):
            if type(container) is list and not stored:
                self._lists.append((label, container))
            return
        if None in stored:
            return
        if not stored:  # (one whose items each call stores may grow)
            self._lengths.append((f"len({label})", container))
        keys = list(container) if isinstance(container, dict) else range(len(container))
        for key in keys:
            if key in stored:
                self.stored.append((f"{label}[{key!r}]", functools.partial(_item, container, key)))
                continue
            self._pending.append((f"{label}[{key!r}]", container, key, depth, True))

    def _walkable(self, value) -> bool:
        """Functions, modules and objects with attributes (not Python modules, classes)."""
        if value is _EMPTY or isinstance(value, (types.ModuleType, type)):
            return False
        return isinstance(value, (types.FunctionType, types.MethodType, functools.partial,
                                  Module)) or _attributes_of(value) is not None  # fmt: skip


_GENERATORS = (random.Random, np.random.Generator, np.random.RandomState)


def _tensor_state(t) -> tuple:
    return (t._version, t.shape, t.dtype, t._device, t._requires_grad)


def _global_hooks() -> list:
    """(key, hook) of the global forward hooks every module call runs
    (`kn.nn.modules.module.register_module_forward_hook`)."""
    return [*GLOBAL_FORWARD_PRE_HOOKS.items(), *GLOBAL_FORWARD_HOOKS.items()]


def _members(module: Module) -> tuple:
    """What `module` holds: its parameters, buffers and submodules, and the forward hooks its
    calls run, the global ones too (replacing, adding or removing one retraces)."""
    d = module.__dict__
    return (*module._parameters.values(), *module._buffers.values(),
            *module._modules.values(), *(d.get(_HOOKS[0]) or {}).values(),
            *(d.get(_HOOKS[1]) or {}).values(), *GLOBAL_FORWARD_PRE_HOOKS.values(),
            *GLOBAL_FORWARD_HOOKS.values())  # fmt: skip


class Guard:
    """The state of what a trace captured, taken after tracing: the tensors' (identity,
    version, shape, dtype, device, requires_grad), the objects' identity, what the modules
    hold (their parameters', buffers' and submodules' identity), the Python values' types
    (their values are in the cache key) or, with `by_value`, the values themselves."""

    def __init__(self, captures: Captures, by_value: bool = False, lifted=frozenset()):
        self.captures = captures
        self.tensors = []
        for label, get in captures.tensors:
            t = get()
            if isinstance(t, Tensor):
                self.tensors.append((label, get, t, t._data, _tensor_state(t), id(t) in lifted))
        self.objects = captures.objects
        self.stored = [(label, get, _tensor_state(t)) for label, get in captures.stored
                       if isinstance(t := get(), Tensor)]  # fmt: skip
        self.members = [(m, _members(m)) for m in captures.modules]
        self.by_value = by_value
        self.values = captures.values()
        self.types = value_types(self.values)

    def check(self, values: tuple) -> tuple[str, bool] | None:
        """None if every captured tensor and object is as it was; else (what changed,
        whether an object was replaced: then what the function reaches is found again).
        `values`: the key's captured values (those of the function's own Captures)."""
        for label, get, t, data, state, is_input in self.tensors:
            now = get()
            if now is not t:
                what = "another tensor" if isinstance(now, Tensor) else "no longer a tensor"
                return f"captured tensor '{label}' is {what}", True
            if is_input:  # read by each call: its values and memory may change
                new = _tensor_state(t)
                if new[1:] != state[1:]:
                    return f"captured tensor '{label}' changed ({_difference(state, new)})", False
                continue
            # NOTE: the same array has the same shape, dtype and device: the cheap test first
            if t._data is not data or t._version != state[0] or t._requires_grad != state[4]:
                new = _tensor_state(t)
                change = _difference(state, new) if new != state else "its data was replaced"
                return f"captured tensor '{label}' changed ({change})", False
        for label, get, obj in self.objects:
            if get() is not obj:
                return f"captured '{label}' is another object", True
        for label, get, state in self.stored:  # another tensor each call: the same kind
            now = get()
            new = _tensor_state(now) if isinstance(now, Tensor) else None
            if new is not None and new[1:] != state[1:]:
                return f"stored tensor '{label}' changed ({_difference(state, new)})", False
        for module, held in self.members:
            now = _members(module)
            if len(now) != len(held) or any(a is not b for a, b in zip(now, held)):
                what = f"{type(module).__name__} module"
                return f"a {what} holds another parameter, buffer, submodule or hook", True
        if self.by_value:
            try:
                values = self.captures.values()
            except (KeyError, IndexError, ValueError):  # a container it reads grew or shrank
                return "a container the function reads changed its length", True
            if values != self.values:
                return value_changes(self.captures.labels, values, self.values), False
        if values and value_types(values) != self.types:
            return value_changes(self.captures.labels, values, self.values), False
        return None


def value_types(values: tuple) -> tuple:
    return tuple([tuple(map(type, group)) for group in values])


def _flat(values: tuple) -> list:
    return [v for group in values for v in group]


def value_changes(labels: list, new: tuple, old: tuple) -> str:
    """`captured 'alpha' is 3.0 (was 2.0)`, for each captured value that differs."""
    found = [f"captured '{label}' is {a!r} (was {b!r})"
             for label, a, b in zip(labels, _flat(new), _flat(old))
             if type(a) is not type(b) or a != b]  # fmt: skip
    return "; ".join(found) or "a captured Python value changed"


def _difference(old: tuple, new: tuple) -> str:
    names = ("version", "shape", "dtype", "device", "requires_grad")
    return ", ".join(f"{n} {a} -> {b}" for n, a, b in zip(names, old, new) if a != b)
