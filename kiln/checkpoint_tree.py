"""Nested checkpoint state (PyTorch's `torch.save` objects) as safetensors: every tensor or
array becomes one named entry (its path of keys joined by '.'), and the structure becomes
typed JSON kept in the header's metadata. Nothing is pickled; loading builds only the types
listed in `_SCALARS`, containers, Tensors, Parameters and NumPy arrays."""

from __future__ import annotations

import json
from collections import Counter, OrderedDict

import numpy as np

from .errors import DeviceError, KilnError, call_error
from .graph.core import Symbol, Variable

__all__ = ["TREE_KEY", "flatten", "unflatten"]

TREE_KEY = "kiln.tree"  # the metadata entry that holds the structure
MAX_DEPTH = 200  # nesting refused beyond this when loading (hostile files)
_SCALARS = {"none": type(None), "bool": bool, "int": int, "float": float, "str": str}
_DICTS = {"dict": dict, "OrderedDict": OrderedDict, "Counter": Counter}
_KINDS = """kn.save holds Tensors, Parameters, NumPy arrays and scalars, numbers, strings,
bytes, None, and dicts, lists and tuples of them (it never pickles)""".replace("\n", " ")


def _is_numeric_numpy(obj) -> bool:
    return isinstance(obj, np.generic) and not isinstance(obj, (np.str_, np.bytes_))


def _error(message: str):
    from .checkpoint import CheckpointError  # NOTE: lazy, checkpoint imports this module

    return CheckpointError(message)


class _Flattener:
    def __init__(self):
        self.arrays: dict = {}

    def name(self, path: list) -> str:
        base = ".".join(str(p) for p in path) or "_"
        name, n = base, 1
        while name in self.arrays:  # "a.b" from {"a.b": x} and {"a": {"b": y}}
            name, n = f"{base}#{n}", n + 1
        return name

    def array(self, path, kind: str, array: np.ndarray, **extra) -> dict:
        key = self.name(path)
        self.arrays[key] = array
        return {"t": kind, "k": key, **extra}

    def node(self, obj, path: list) -> dict:
        from .eager import Tensor
        from .nn.parameter import Parameter

        if obj is None:
            return {"t": "none"}
        if type(obj) in (bool, int, float, str):
            return {"t": type(obj).__name__, "v": obj}
        if isinstance(obj, (bool, int, float, str)) and not _is_numeric_numpy(obj):
            kind = next(k for k, t in _SCALARS.items() if k != "none" and isinstance(obj, t))
            return {"t": kind, "v": _SCALARS[kind](obj)}  # a subclass (IntEnum, np.str_)
        if isinstance(obj, Parameter):
            return self.array(path, "parameter", obj.numpy(), rg=bool(obj.requires_grad))
        if isinstance(obj, Tensor):
            return self.array(path, "tensor", obj.detach().cpu().numpy(),
                              rg=bool(obj.requires_grad), dev=str(obj.device))  # fmt: skip
        if isinstance(obj, Variable):
            return self.array(path, "ndarray", obj.numpy())
        if isinstance(obj, Symbol):
            raise _error(f"cannot save {'.'.join(map(str, path)) or 'the object'}: "
                         f"'{obj.name}' is a Symbol, which has no value outside a run")  # fmt: skip
        if isinstance(obj, np.ndarray):
            return self.array(path, "ndarray", obj)
        if _is_numeric_numpy(obj):
            return self.array(path, "npscalar", np.asarray(obj))
        if isinstance(obj, bytes):
            return self.array(path, "bytes", np.frombuffer(obj, np.uint8))
        if isinstance(obj, dict):
            kind = type(obj).__name__ if type(obj).__name__ in _DICTS else "dict"
            items = [[self.key(k, path), self.node(v, [*path, k])] for k, v in obj.items()]
            return {"t": kind, "items": items}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {"t": kind, "items": [self.node(v, [*path, i]) for i, v in enumerate(obj)]}
        where = ".".join(map(str, path)) or "the object"
        raise _error(f"cannot save {where}: it is a {type(obj).__name__}; {_KINDS}")

    def key(self, key, path) -> dict:
        if key is None or isinstance(key, (bool, int, float, str)):
            return self.node(key, path)
        if isinstance(key, tuple):
            return {"t": "tuple", "items": [self.key(k, path) for k in key]}
        where = ".".join(map(str, path)) or "the top"
        raise _error(f"cannot save the dict at {where}: its key {key!r} is a "
                     f"{type(key).__name__}; keys are numbers, strings or tuples")  # fmt: skip


def flatten(obj) -> tuple[dict, str]:
    """({entry name: array}, structure as JSON) of a nested object."""
    f = _Flattener()
    tree = f.node(obj, [])
    return f.arrays, json.dumps(tree, separators=(",", ":"))


class _Builder:
    def __init__(self, path: str, arrays: dict, map_location):
        self.path, self.arrays, self.map_location = path, arrays, map_location
        self.used: set = set()

    def fail(self, what: str):
        from .checkpoint import _invalid

        return _invalid(self.path, f"its kiln.tree metadata {what}")

    def array(self, node) -> np.ndarray:
        key = node.get("k")
        if not isinstance(key, str) or key not in self.arrays:
            raise self.fail(f"names tensor {key!r}, which the file does not hold")
        if key in self.used:
            raise self.fail(f"names tensor {key!r} twice")
        self.used.add(key)
        return self.arrays[key]

    def device(self, saved: str) -> str:
        where = self.map_location
        if where is None:
            return saved
        if isinstance(where, dict):
            return str({str(k): v for k, v in where.items()}.get(saved, saved))
        return str(where)

    def build(self, node, depth: int = 0):
        if depth > MAX_DEPTH:
            raise self.fail(f"nests deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            raise self.fail(f"has a node that is not a typed object: {str(node)[:80]}")
        kind = node["t"]
        if kind in _SCALARS:
            value = node.get("v")
            if kind != "none" and (type(value) is not _SCALARS[kind]
                                   and not (kind == "float" and type(value) is int)):  # fmt: skip
                raise self.fail(f"has a {kind} node holding {str(value)[:40]}")
            return None if kind == "none" else _SCALARS[kind](value)
        if kind in ("list", "tuple"):
            items = [self.build(n, depth + 1) for n in self.items(node)]
            return items if kind == "list" else tuple(items)
        if kind in _DICTS:
            pairs = []
            for pair in self.items(node):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.fail("has a dict item that is not a [key, value] pair")
                pairs.append((self.build(pair[0], depth + 1), self.build(pair[1], depth + 1)))
            try:
                return _DICTS[kind](pairs)
            except TypeError as e:  # an unhashable key
                raise self.fail(f"has a bad dict key ({e})") from None
        return self.leaf(kind, node)

    def items(self, node) -> list:
        items = node.get("items")
        if not isinstance(items, list):
            raise self.fail(f"has a {node['t']} node without a list of items")
        return items

    def leaf(self, kind: str, node):
        from .eager.tensor import make
        from .nn.parameter import Parameter

        if kind == "ndarray":
            return self.array(node)
        if kind == "npscalar":
            return self.array(node)[()]
        if kind == "bytes":
            return self.array(node).tobytes()
        if kind == "parameter":
            return Parameter(self.array(node), requires_grad=bool(node.get("rg", True)))
        if kind == "tensor":
            t = make(self.array(node))
            device = self.device(str(node.get("dev", "cpu")))
            if device != "cpu":
                t = _to_device(t, device, self.path)
            return t.requires_grad_(True) if node.get("rg") else t
        raise self.fail(f"has a node of unknown type {kind!r}")


def _to_device(t, device: str, path: str):
    try:
        return t.to(device)
    except KilnError as e:
        raise call_error(
            DeviceError, f"a tensor of '{path}' was saved on {device}, which is not usable "
            f"here ({e}); pass map_location='cpu' to load it on the CPU", "load",
        ) from e  # fmt: skip


def unflatten(path: str, tree_json: str, arrays: dict, map_location=None):
    """The object `flatten` saved, from its structure and arrays."""
    builder = _Builder(path, arrays, map_location)
    try:
        tree = json.loads(tree_json)
    except (json.JSONDecodeError, RecursionError) as e:
        raise builder.fail(f"is not JSON ({str(e)[:80]})") from None
    return builder.build(tree)
