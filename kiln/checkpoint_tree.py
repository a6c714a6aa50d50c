"""Nested checkpoint state (PyTorch's `torch.save` objects) as safetensors: every tensor or
array becomes one named entry (its path of keys joined by '.'), and the structure becomes
typed JSON kept in the header's metadata. Nothing is pickled; loading builds only the types
listed in `_SCALARS`, complex numbers, containers (sets too), dtypes, devices, Sizes, Tensors
(sparse COO too), Parameters and NumPy arrays. As with PyTorch, tensors that share memory are
saved as one storage entry and views of it (`_Flattener.share`), and one tensor saved twice
loads as one object (a "ref" node)."""

from __future__ import annotations

import json
from collections import Counter, OrderedDict

import numpy as np

from . import dtypes as dt
from .array_types import Size, device
from .errors import DeviceError, KilnError, call_error
from .graph.core import Symbol, Variable

__all__ = ["TREE_KEY", "flatten", "unflatten"]

TREE_KEY = "kiln.tree"  # the metadata entry that holds the structure
MAX_DEPTH = 200  # nesting refused beyond this when loading (hostile files)
_SCALARS = {"none": type(None), "bool": bool, "int": int, "float": float, "str": str}
_DICTS = {"dict": dict, "OrderedDict": OrderedDict, "Counter": Counter}
_KINDS = """kn.save holds Tensors, Parameters, NumPy arrays and scalars, numbers, strings,
bytes, None, dtypes, devices, Sizes, and dicts, lists, tuples and sets of them
(it never pickles)""".replace("\n", " ")


def _is_numeric_numpy(obj) -> bool:
    return isinstance(obj, np.generic) and not isinstance(obj, (np.str_, np.bytes_))


def _error(message: str):
    from .checkpoint import CheckpointError  # NOTE: lazy, checkpoint imports this module

    return CheckpointError(message)


class _Flattener:
    def __init__(self):
        self.arrays: dict = {}
        self.views: list = []  # (node, array) of each CPU tensor saved, for `share`
        self.seen: dict = {}  # id(tensor) -> (its index, the tensor)

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

        if obj is None:
            return {"t": "none"}
        if type(obj) in (bool, int, float, str):
            return {"t": type(obj).__name__, "v": obj}
        if isinstance(obj, complex) and not _is_numeric_numpy(obj):
            return {"t": "complex", "v": [obj.real, obj.imag]}
        if isinstance(obj, (set, frozenset)):
            kind = "set" if isinstance(obj, set) else "frozenset"
            return {"t": kind, "items": [self.key(v, path) for v in obj]}
        if isinstance(obj, dt.DType):
            return {"t": "dtype", "v": obj.dtype.name}
        if isinstance(obj, device):
            return {"t": "device", "v": str(obj)}
        if isinstance(obj, Size):
            return {
                "t": "size",
                "items": [self.node(int(n), [*path, i]) for i, n in enumerate(obj)],
            }
        if isinstance(obj, (bool, int, float, str)) and not _is_numeric_numpy(obj):
            kind = next(k for k, t in _SCALARS.items() if k != "none" and isinstance(obj, t))
            return {"t": kind, "v": _SCALARS[kind](obj)}  # a subclass (IntEnum, np.str_)
        if isinstance(obj, Tensor):  # one tensor saved twice loads as one object, as PyTorch's
            seen = self.seen.get(id(obj))
            if seen is not None:
                return {"t": "ref", "r": seen[0]}
            index = len(self.seen)
            self.seen[id(obj)] = (index, obj)  # (obj kept alive: ids stay unique)
            node = self.tensor(obj, path)
            node["id"] = index
            return node
        if isinstance(obj, Variable):
            return self.array(path, "ndarray", obj.numpy())
        if isinstance(obj, Symbol):
            raise _error(f"cannot save {'.'.join(map(str, path)) or 'the object'}: "
                         f"'{obj.name}' is a Symbol, which has no value outside a run")  # fmt: skip
        return self.rest(obj, path)

    def tensor(self, obj, path: list) -> dict:
        from .nn.parameter import Parameter

        if getattr(obj, "layout", None) is not None and str(obj.layout).endswith("sparse_coo"):
            parts = [self.node(obj._indices().detach(), [*path, "indices"]),
                     self.node(obj._values().detach(), [*path, "values"])]  # fmt: skip
            return {"t": "sparse_coo", "items": parts, "sh": list(obj.shape),
                    "c": bool(obj.is_coalesced()), "rg": bool(obj.requires_grad)}  # fmt: skip
        if isinstance(obj, Parameter):
            node = self.array(path, "parameter", obj.numpy(), rg=bool(obj.requires_grad))
            return self.viewed(node, obj)
        node = self.array(path, "tensor", obj.detach().cpu().numpy(),
                          rg=bool(obj.requires_grad), dev=str(obj.device))  # fmt: skip
        return self.viewed(node, obj)

    def rest(self, obj, path: list) -> dict:
        if isinstance(obj, np.ndarray):
            return self.array(path, "ndarray", obj)
        if _is_numeric_numpy(obj):
            return self.array(path, "npscalar", np.asarray(obj))
        if isinstance(obj, bytes):
            return self.array(path, "bytes", np.frombuffer(obj, np.uint8))
        if isinstance(obj, (dict, list)):  # a list or dict saved twice (or inside itself)
            seen = self.seen.get(id(obj))  # loads as one object, as PyTorch's
            if seen is not None:
                return {"t": "ref", "r": seen[0]}
            index = len(self.seen)
            self.seen[id(obj)] = (index, obj)
        if isinstance(obj, dict):
            kind = type(obj).__name__ if type(obj).__name__ in _DICTS else "dict"
            items = [[self.key(k, path), self.node(v, [*path, k])] for k, v in obj.items()]
            return {"t": kind, "items": items, "id": index}
        if isinstance(obj, list):
            items = [self.node(v, [*path, i]) for i, v in enumerate(obj)]
            return {"t": "list", "items": items, "id": index}
        if isinstance(obj, tuple):
            return {"t": "tuple", "items": [self.node(v, [*path, i]) for i, v in enumerate(obj)]}
        where = ".".join(map(str, path)) or "the object"
        raise _error(f"cannot save {where}: it is a {type(obj).__name__}; {_KINDS}")

    def viewed(self, node: dict, t) -> dict:
        if t.device.type == "cpu" and isinstance(t._data, np.ndarray):
            self.views.append((node, t._data))
        return node

    def share(self) -> None:
        """Tensors that view one storage (a tensor and its views, one tensor saved twice) are
        saved as that storage, once, and each as (offset, shape, strides) into it: loaded,
        they share memory again, as PyTorch's do. A tensor alone that is not contiguous (a
        transpose, an expand) is saved so too, and keeps its strides. Only the span of the
        storage they cover is saved. Memory kiln cannot address as one storage (another
        dtype's view, negative strides) and empty tensors stay copies of their own."""
        from .eager.storage import _root  # NOTE: lazy, eager sits above checkpoints

        groups: dict = {}
        for node, data in self.views:
            root = _root(data)
            groups.setdefault(id(root), (root, []))[1].append((node, data))
        for root, members in groups.values():
            if not root.flags.c_contiguous:
                continue
            item = root.itemsize
            spans = []
            for node, data in members:
                if data.dtype != root.dtype or not data.size or any(st < 0 for st in data.strides):
                    continue
                steps = [st // item for st in data.strides]
                first = (_address(data) - _address(root)) // item
                last = first + sum((n - 1) * st for n, st in zip(data.shape, steps))
                spans.append((node, data, steps, first, last))
            if not spans or (len(spans) == 1 and spans[0][1].flags.c_contiguous):
                continue
            low, high = min(s[3] for s in spans), max(s[4] for s in spans)
            key = self.name(["storage", spans[0][0]["k"]])
            self.arrays[key] = root.reshape(-1)[low : high + 1]
            for node, data, steps, first, _ in spans:
                del self.arrays[node.pop("k")]
                node.update(s=key, o=first - low, sh=list(data.shape), st=steps)

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
    f.share()
    return f.arrays, json.dumps(tree, separators=(",", ":"))


class _Builder:
    def __init__(self, path: str, arrays: dict, map_location):
        self.path, self.arrays, self.map_location = path, arrays, map_location
        self.used: set = set()
        self.storages: dict = {}  # the base tensor of each shared storage, by its entry name
        self.tensors: dict = {}  # tensors, lists, dicts built, by the index `_Flattener` gave

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
        if kind == "list" and type(node.get("id")) is int:  # registered first: refs inside it
            out = self.tensors[node["id"]] = []
            out.extend(self.build(n, depth + 1) for n in self.items(node))
            return out
        if kind in ("list", "tuple", "size"):
            items = [self.build(n, depth + 1) for n in self.items(node)]
            if kind == "size" and not all(type(n) is int for n in items):
                raise self.fail("has a Size node holding other than ints")
            return items if kind == "list" else tuple(items) if kind == "tuple" else Size(items)
        if kind == "ref":
            found = self.tensors.get(node.get("r")) if type(node.get("r")) is int else None
            if found is None:
                raise self.fail(f"refers to object {str(node.get('r'))[:20]}, not built before")
            return found
        if kind in ("sparse_coo", "tensor", "parameter") and "id" in node:
            built = self.sparse(node, depth) if kind == "sparse_coo" else self.leaf(kind, node)
            if type(node["id"]) is int:
                self.tensors[node["id"]] = built
            return built
        if kind == "sparse_coo":
            return self.sparse(node, depth)
        if kind in ("set", "frozenset"):
            try:
                return (set if kind == "set" else frozenset)(
                    self.build(n, depth + 1) for n in self.items(node)
                )
            except TypeError as e:  # an unhashable item
                raise self.fail(f"has a bad {kind} item ({e})") from None
        if kind == "complex":
            v = node.get("v")
            if not (isinstance(v, list) and len(v) == 2
                    and all(type(x) in (int, float) for x in v)):  # fmt: skip
                raise self.fail(f"has a complex node holding {str(v)[:40]}")
            return complex(*v)
        if kind in ("dtype", "device"):
            return self.named(kind, node.get("v"))
        if kind in _DICTS:
            out = _DICTS[kind]()
            if type(node.get("id")) is int:  # registered first: refs inside it
                self.tensors[node["id"]] = out
            for pair in self.items(node):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.fail("has a dict item that is not a [key, value] pair")
                key = self.build(pair[0], depth + 1)
                try:
                    out[key] = self.build(pair[1], depth + 1)
                except TypeError as e:  # an unhashable key
                    raise self.fail(f"has a bad dict key ({e})") from None
            return out
        return self.leaf(kind, node)

    def sparse(self, node, depth: int):
        from .frontend.sparse_coo import sparse_coo_tensor

        parts = [self.build(n, depth + 1) for n in self.items(node)]
        size = node.get("sh")
        if len(parts) != 2 or not isinstance(size, list) or not all(type(n) is int for n in size):
            raise self.fail("has a sparse_coo node without indices, values and a shape")
        try:
            return sparse_coo_tensor(*parts, size, is_coalesced=bool(node.get("c")),
                                     requires_grad=bool(node.get("rg")))  # fmt: skip
        except (TypeError, ValueError, RuntimeError) as e:
            raise self.fail(f"has a sparse_coo node kiln cannot build ({e})") from None

    def named(self, kind: str, name):
        try:
            if not isinstance(name, str):
                raise TypeError(name)
            return dt.public(dt.as_dtype(name)) if kind == "dtype" else device(name)
        except (TypeError, ValueError, RuntimeError) as e:
            raise self.fail(f"has a {kind} node of an unknown name ({e})") from None

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
            if "s" in node:  # a view of a shared storage: a Parameter over that memory
                view = self.view(node)
                p = Parameter(view, requires_grad=bool(node.get("rg", True)))
                p._data = view._data
                return p
            return Parameter(self.array(node), requires_grad=bool(node.get("rg", True)))
        if kind == "tensor":
            t = self.view(node) if "s" in node else make(self.array(node))
            saved = str(node.get("dev", "cpu"))
            if callable(self.map_location):  # PyTorch's map_location(storage, location)
                moved = self.map_location(t, saved)
                t = moved if moved is not None else t
                device = "cpu" if moved is not None else saved
            else:
                device = self.device(saved)
            if device != "cpu":
                t = _to_device(t, device, self.path)
            return t.requires_grad_(True) if node.get("rg") else t
        raise self.fail(f"has a node of unknown type {kind!r}")

    def view(self, node):
        """The tensor of a node saved as a view of a shared storage (`_Flattener.share`)."""
        from .eager.tensor import make

        key = node["s"]
        base = self.storages.get(key)
        if base is None:
            array = self.array({"k": key})
            if array.ndim != 1:
                raise self.fail(f"names storage {key!r}, which is not 1-d")
            base = self.storages[key] = make(array)
        size, stride, offset = node.get("sh"), node.get("st"), node.get("o")
        ints = [offset, *(size if isinstance(size, list) else [None]),
                *(stride if isinstance(stride, list) else [None])]  # fmt: skip
        if not all(type(n) is int and n >= 0 for n in ints) or len(size) != len(stride):
            raise self.fail(f"has a view of {key!r} with a bad offset, shape or strides")
        last = offset + sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else -1
        if last >= base._data.size:
            raise self.fail(f"has a view past the end of storage {key!r}")
        return make(np.ndarray(size, base._data.dtype, base._data, offset * base._data.itemsize,
                               [st * base._data.itemsize for st in stride]))  # fmt: skip


def _address(array) -> int:
    return array.__array_interface__["data"][0]


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
