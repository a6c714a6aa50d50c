"""Containers, as PyTorch's: `Sequential`, `ModuleList`, `ModuleDict`, `ParameterList`,
`ParameterDict`, and `Identity`."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from .. import dtypes as dt
from ..eager import Tensor
from ..errors import ArgumentError, ArgumentTypeError, IndexOutOfRangeError
from .module import Module, Parameter

__all__ = ["Identity", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList",
           "Sequential"]  # fmt: skip


def _index(index, size: int) -> int:
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexOutOfRangeError(f"index {index} is out of range")
    return index % size


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, as PyTorch's `Identity`).

    >>> import kiln as kn
    >>> kn.nn.Identity(54, unused="x")(kn.ones(2))
    tensor([1., 1.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class _Numbered(Module):
    """Children kept in order and named by position ("0", "1", …): what `Sequential` and
    `ModuleList` share."""

    def append(self, module: Module):
        """Adds `module` at the end (named by its position)."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]):
        for module in modules:
            self.append(module)
        return self

    def _insert(self, index: int, module: Module) -> None:
        """Puts `module` before position `index`; the children are renumbered."""
        if module is not None and not isinstance(module, Module):  # (before any change)
            raise ArgumentTypeError(f"{type(module).__name__} is not a Module subclass")
        items = list(self._modules.values())
        n = len(items)
        index = operator.index(index)
        if not -n <= index <= n:
            raise IndexOutOfRangeError(f"Index out of range: {index}")
        items.insert(index, module)  # a negative index counts from the end, as list.insert
        self._renumber(items)

    def _renumber(self, items) -> None:
        self._modules.clear()
        self.extend(items)

    def _item(self, index) -> Module:
        return list(self._modules.values())[_index(index, len(self))]

    def __delitem__(self, index) -> None:
        items = list(self._modules.values())
        if isinstance(index, slice):
            del items[index]
        else:
            del items[_index(index, len(self))]
        self._renumber(items)  # PyTorch renumbers after a deletion too

    def pop(self, index):
        """Removes and returns the child at `index` (or a container of a slice's children);
        the rest are renumbered."""
        value = self[index]
        del self[index]
        return value

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


def _sequential_operand(other, op: str) -> None:
    if not isinstance(other, Sequential):
        raise ArgumentError(
            f"{op} operator supports only objects of Sequential class, but {type(other)} is given."
        )


def _repeats(other, owner) -> int:
    if not isinstance(other, int) or isinstance(other, bool):
        raise ArgumentTypeError(
            f"unsupported operand type(s) for *: {type(owner)} and {type(other)}"
        )
    if other <= 0:
        raise ArgumentError(f"Non-positive multiplication factor {other} for {type(owner)}")
    return other


class Sequential(_Numbered):
    """Modules applied in order; children are named "0", "1", … (or by the keys of one
    mapping given instead). Indexing with a slice gives a Sequential of those children,
    keeping their names.

    >>> import kiln as kn, numpy as np
    >>> model = kn.nn.Sequential(kn.nn.Linear(4, 3), kn.nn.ReLU(), kn.nn.Linear(3, 2))
    >>> [name for name, _ in model.named_parameters()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
    >>> model(np.ones((5, 4), np.float32)).shape
    (5, 2)
    >>> model[1:]
    Sequential(
      (1): ReLU()
      (2): Linear(in_features=3, out_features=2, bias=True)
    )
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for module in args:
                self.append(module)

    def insert(self, index: int, module: Module) -> Sequential:
        """Puts `module` before position `index`; the children are renumbered."""
        if not isinstance(module, Module):  # PyTorch's error
            raise AssertionError(f"module should be of type: {Module}")
        self._insert(index, module)
        return self

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(dict(list(self._modules.items())[index]))
        return self._item(index)

    def __setitem__(self, index, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self))]
        setattr(self, key, module)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __add__(self, other) -> Sequential:
        """A new Sequential of this one's children, then `other`'s, renumbered (the modules
        themselves are shared, not copied), as PyTorch's.

        >>> import kiln as kn
        >>> both = kn.nn.Sequential(kn.nn.ReLU()) + kn.nn.Sequential(kn.nn.Tanh())
        >>> [type(m).__name__ for m in both], list(both._modules)
        (['ReLU', 'Tanh'], ['0', '1'])
        """
        _sequential_operand(other, "add")
        return Sequential(*self, *other)

    def __iadd__(self, other) -> Sequential:
        _sequential_operand(other, "add")
        return self.extend(list(other))

    def __mul__(self, other) -> Sequential:
        """A new Sequential of `other` rounds of these children (the same modules each
        round, so their parameters are shared), as PyTorch's.

        >>> import kiln as kn
        >>> twice = kn.nn.Sequential(kn.nn.Linear(2, 2)) * 2
        >>> len(twice), twice[0] is twice[1], len(list(twice.parameters()))
        (2, True, 2)
        """
        return Sequential(*(list(self) * _repeats(other, self)))

    def __rmul__(self, other) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other) -> Sequential:
        return self.extend(list(self) * (_repeats(other, self) - 1))


class ModuleList(_Numbered):
    """A list of modules whose parameters the owner registers (a plain list hides them).

    >>> import kiln as kn
    >>> layers = kn.nn.ModuleList([kn.nn.Linear(2, 2) for _ in range(3)])
    >>> layers.append(kn.nn.ReLU())
    ModuleList(
      (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
      (3): ReLU()
    )
    >>> len(layers), len(list(layers.parameters())), type(layers[1:])
    (4, 6, <class 'kiln.nn.containers.ModuleList'>)
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        """A new ModuleList of these modules, then `other`'s (shared, renumbered)."""
        return ModuleList([*self, *other])

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._item(index)

    def __setitem__(self, index, module: Module) -> None:
        self.add_module(str(_index(index, len(self))), module)

    def __repr__(self):
        lines, items = [], list(self._modules.values())
        i = 0
        while i < len(items):  # runs of equal reprs print once, as PyTorch's
            j = i
            while j + 1 < len(items) and repr(items[j + 1]) == repr(items[i]):
                j += 1
            text = repr(items[i]).replace("\n", "\n  ")
            lines.append(f"  ({i}): {text}" if i == j else f"  ({i}-{j}): {j - i + 1} x {text}")
            i = j + 1
        return f"{type(self).__name__}(" + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


class ModuleDict(Module):
    """A dict of modules (string keys, insertion order) whose parameters the owner registers.

    >>> import kiln as kn
    >>> heads = kn.nn.ModuleDict({"cls": kn.nn.Linear(4, 3), "box": kn.nn.Linear(4, 2)})
    >>> list(heads), "cls" in heads, heads["box"].out_features
    (['cls', 'box'], True, 2)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        """Adds (key, module) pairs from a mapping, a ModuleDict or an iterable of pairs."""
        if not isinstance(modules, Iterable):
            raise ArgumentTypeError(
                "ModuleDict.update should be called with an iterable of key/module pairs, "
                f"but got {type(modules).__name__}"
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = list(modules.items())
        else:
            pairs = [_pair(p, i, "ModuleDict") for i, p in enumerate(modules)]
        for key, module in pairs:
            self[key] = module


def _pair(item, i: int, owner: str) -> tuple:
    """Element `i` of the pairs given to `owner.update`: a (key, value) sequence."""
    if not isinstance(item, Iterable):
        raise ArgumentTypeError(
            f"{owner} update sequence element #{i} should be Iterable; is " + type(item).__name__
        )
    item = tuple(item)
    if len(item) != 2:
        raise ArgumentError(
            f"{owner} update sequence element #{i} has length {len(item)}; 2 is required"
        )
    return item


# -- containers of parameters -------------------------------------------------------------


class ParameterList(Module):
    """Parameters in a list, registered as `"0"`, `"1"`, ... (PyTorch's `ParameterList`);
    tensors appended become Parameters.

    >>> import kiln as kn
    >>> ps = kn.nn.ParameterList([kn.nn.Parameter(kn.ones(2)), kn.zeros(3)])
    >>> [n for n, _ in ps.named_parameters()], len(ps)
    (['0', '1'], 2)
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _as_parameter(self, value):
        """PyTorch's: a Tensor becomes a Parameter; any other value is kept as it is."""
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            return Parameter(value)
        return value

    def _key(self, index) -> str:
        return str(_index(index, self._size))

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise ArgumentTypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def __len__(self):
        return self._size

    def __getitem__(self, index):
        if isinstance(index, slice):  # a ParameterList of the same values, as PyTorch's
            return type(self)([self[i] for i in range(self._size)[index]])
        return getattr(self, self._key(index))

    def __setitem__(self, index, value):
        setattr(self, self._key(index), self._as_parameter(value))

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def extra_repr(self) -> str:
        return _parameter_lines(enumerate(self), lambda p: f"kiln.{dt.as_dtype(p.dtype).name}")


class ParameterDict(Module):
    """Parameters by name (PyTorch's `ParameterDict`); tensors put in become Parameters.

    >>> import kiln as kn
    >>> pd = kn.nn.ParameterDict({"scale": kn.ones(1)})
    >>> list(pd.keys()), [n for n, _ in pd.named_parameters()]
    (['scale'], ['scale'])
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys: list = []
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key: str, value):
        if not isinstance(key, str):
            raise ArgumentTypeError(f"ParameterDict keys are strings, got {type(key).__name__}")
        if key not in self._keys:
            self._keys.append(key)
        setattr(self, key, ParameterList._as_parameter(self, value))

    def __getitem__(self, key: str):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __delitem__(self, key: str):
        self._keys.remove(key)
        delattr(self, key)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(list(self._keys))

    def __reversed__(self):
        return reversed(list(self._keys))

    def keys(self):
        return list(self._keys)

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def update(self, parameters):
        """Puts in the (key, value) pairs of `parameters`: in their order from an
        OrderedDict, a ParameterDict or an iterable of pairs, in sorted key order from any
        other mapping (a plain dict), as PyTorch's."""
        if not isinstance(parameters, Iterable):
            raise ArgumentTypeError(
                "ParameterDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(parameters).__name__}"
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = list(parameters.items())
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = [_pair(p, i, "ParameterDict") for i, p in enumerate(parameters)]
        for k, v in items:
            self[k] = v

    def get(self, key, default=None):
        return self[key] if key in self._keys else default

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple:
        """Removes and returns the (key, value) put in last."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = self._keys[-1]
        return key, self.pop(key)

    def setdefault(self, key: str, default=None):
        """`self[key]`, put in as `default` first where missing."""
        if key not in self._keys:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def copy(self) -> ParameterDict:
        """A new ParameterDict of the same Parameters (shared, not copied), as PyTorch's.

        >>> import kiln as kn
        >>> pd = kn.nn.ParameterDict({"w": kn.ones(2)})
        >>> pd.copy()["w"] is pd["w"]
        True
        """
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys, default=None) -> ParameterDict:
        """A new ParameterDict of `keys`, each holding `default`."""
        return ParameterDict([(k, default) for k in keys])

    def __or__(self, other) -> ParameterDict:
        both = self.copy()
        both.update(other)
        return both

    def __ror__(self, other) -> ParameterDict:
        both = other.copy()
        both.update(self)
        return both

    def __ior__(self, other) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(self.items(), lambda p: dt.type_name(p.dtype))


def _parameter_lines(pairs, type_text) -> str:
    """PyTorch's lines of a ParameterList (dtype named `kiln.float32`) or ParameterDict
    (type named `kiln.FloatTensor`): `  (key): Parameter containing: [type of size 2x3]`."""
    lines = []
    for key, p in pairs:
        if not isinstance(p, Tensor):
            lines.append(f"  ({key}): Object of type: {type(p).__name__}")
            continue
        size = "x".join(str(n) for n in p.shape)
        device = f" ({p.device})" if getattr(p.device, "type", "cpu") == "cuda" else ""
        lines.append(f"  ({key}): Parameter containing: [{type_text(p)} of size {size}{device}]")
    return "\n".join(lines)
