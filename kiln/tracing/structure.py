"""The structure of a compiled function's arguments and results: `flatten` takes arrays and
Tensors out of nested tuples, lists, dicts and named tuples (their slots in a hashable
structure; other values stay in it as static), `_unflatten` puts values back, and `signature`
and `describe` give an input's key and its text in messages."""

from __future__ import annotations

import collections
import dataclasses
import types

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.sparse import LAYOUTS
from ..eager.tensor import Tensor
from ..graph.core import Symbol
from .scalars import TracedScalar, python_value

_LEAF = "<array>"  # an array's slot in a structure; other values are kept in it (static)
_STATIC = "<static>"
_SLICE = "<slice>"
_SCALAR = "<python value>"  # a TracedScalar's slot: the call's array, as .item()/.tolist()
_DATACLASS = "<dataclass>"  # a dataclass instance: its fields' structures, by name
_ARRAYS = (Tensor, np.ndarray, np.generic, Symbol)
_LAZY = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def flatten(value, path: str, leaves: list, paths: list, statics: list):
    """`value`'s structure (hashable): arrays and Tensors go to `leaves` (their names to
    `paths`); any other value stays in the structure, static (`statics`: (path, value)). A
    NumPy scalar (`np.float64(2.5)`) is a Python number there, as eager kiln and PyTorch
    take it (`int_tensor * np.float64(2.5)` is float32), keyed by its NumPy type."""
    if type(value) is slice:  # (not hashable before Python 3.12): static, by its parts
        return (_SLICE, value.start, value.stop, value.step)
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        statics.append((path, value))
        return (_STATIC, value.item(), (type(value), _kind(value.item())))
    if isinstance(value, _ARRAYS):
        leaves.append(value)
        paths.append(path)
        return _LEAF
    if isinstance(value, TracedScalar):
        leaves.append(value)
        paths.append(path)
        return (_SCALAR, value.kind)
    if type(value) in (list, tuple) or _is_namedtuple(value):
        items = (flatten(v, f"{path}_{i}", leaves, paths, statics) for i, v in enumerate(value))
        return (type(value), tuple(items))
    if type(value) is dict or type(value) is collections.OrderedDict:
        items = (flatten(v, f"{path}_{k}", leaves, paths, statics) for k, v in value.items())
        ordered = () if type(value) is dict else (collections.OrderedDict,)  # (rebuilt so)
        return (dict, tuple(value), tuple(items), *ordered)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = tuple(f.name for f in dataclasses.fields(value))
        items = (flatten(getattr(value, n), f"{path}_{n}", leaves, paths, statics) for n in names)
        return (_DATACLASS, type(value), names, tuple(items))
    statics.append((path, value))
    return (_STATIC, value, _kind(value))


def _kind(value):
    """What tells apart static values that compare equal but trace differently: the type
    (`2`, `2.0` and `True` promote an integer tensor differently) and the sign of a zero
    (`x / -0.0`)."""
    if type(value) is float and value == 0.0:
        return float, str(value)
    return type(value)


def flatten_outputs(result, leaves: list, paths: list, name: str):
    """`flatten` of a traced function's result; refuses a value it returns that holds a
    traced value where flatten does not look (an object's attribute: it would come back
    holding the trace's graph value, not a tensor)."""
    from ..errors import GraphError

    statics: list = []
    structure = flatten(result, "output", leaves, paths, statics)
    for path, value in statics:
        if isinstance(value, _LAZY):  # its code would run after the trace, on graph values
            raise GraphError(
                f"kn.compile: {name} returned a {type(value).__name__} as {path}: its code runs "
                "when it is iterated (awaited), after the trace, where the function's values "
                "are graph values; return a list of its items (`list(...)`), or call the "
                "function uncompiled"
            )
        held = _held_symbol(value, 2)
        if held is not None:
            raise GraphError(
                f"kn.compile: {name} returned a {type(value).__name__} as {path} holding the "
                f"traced value '{held.name}': a compiled function returns Tensors in nested "
                "tuples, lists, dicts, named tuples or dataclasses; return its tensors so"
            )
    return structure


def _held_symbol(value, depth: int):
    """A Symbol among `value`'s attributes or items (`depth` levels down), else None."""
    if isinstance(value, Symbol):
        return value
    if depth == 0:
        return None
    items = getattr(value, "__dict__", None)
    items = items.values() if isinstance(items, dict) else ()
    if isinstance(value, (set, frozenset, list, tuple)):
        items = value
    return next((s for v in items if (s := _held_symbol(v, depth - 1)) is not None), None)


def _is_namedtuple(value) -> bool:
    """`sort(x)`'s `(values, indices)` and the like: a tuple class with named fields."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _unflatten(structure, leaves):
    if structure is _LEAF:
        return next(leaves)
    if structure[0] is _STATIC:
        return structure[1]
    if structure[0] is _SLICE:
        return slice(*structure[1:])
    if structure[0] is _SCALAR:
        return python_value(next(leaves), structure[1])
    if structure[0] is dict:
        made = dict(zip(structure[1], (_unflatten(s, leaves) for s in structure[2])))
        return structure[3](made) if len(structure) > 3 else made
    if structure[0] is _DATACLASS:  # its fields set as they were read (as copy.copy would)
        _, cls, names, items = structure
        made = object.__new__(cls)
        for name, item in zip(names, items):
            object.__setattr__(made, name, _unflatten(item, leaves))
        return made
    items = (_unflatten(s, leaves) for s in structure[1])
    return structure[0](*items) if hasattr(structure[0], "_fields") else structure[0](items)


def name_of(fn) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def signature(leaf) -> tuple:
    if isinstance(leaf, Tensor):
        if type(leaf) is not Tensor and type(leaf) in LAYOUTS:  # sparse (any layout), quantized
            from ..frontend.sparse_coo import graph_error

            raise graph_error("kn.compile", leaf)
        return (leaf.shape, leaf.dtype, leaf._device, leaf._requires_grad)
    return (np.shape(leaf), np.asarray(leaf).dtype, "cpu", False)


def describe(sig) -> str:
    """`f32[2,3] on cpu, requires grad`: an input's signature in messages."""
    shape, dtype, device, requires_grad = sig
    grad = ", requires grad" if requires_grad else ""
    return f"{dt.short_name(dtype)}{sh.format_shape(shape)} on {device}{grad}"
