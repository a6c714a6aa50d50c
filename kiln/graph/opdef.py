"""The op record and the registry of every primitive, by IR name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import GraphError


@dataclass(frozen=True, eq=False)
class OpDef:
    """Everything the compiler knows about one primitive, in one record.

    `shape_rule(*in_shapes, **attrs)` and `dtype_rule(*in_dtypes, **attrs)` give the output's
    shape and dtype (raising ShapeError / DTypeError); `impl(xp, *arrays, out=None, **attrs)`
    computes it with the array module `xp` (NumPy or CuPy); `vjp(ct, out, *inputs, **attrs)`
    gives one cotangent (or None) per input, written with kiln ops; `vjp=None` means not
    differentiable. `tags` are plain properties: "elementwise", "view", "commutative",
    "reduction", "random", "source", "update", and "nondiff" for float ops that are
    deliberately not differentiable (floor, round, stop_gradient…): autodiff stops there
    quietly, while a missing vjp on any other op on the path is an error; "no_inplace"
    for elementwise ops whose kernel must not write into one of its own inputs; "vjp_needs"
    for ops whose vjp takes `needs` (a bool per input) and computes only the cotangents
    needed (None for the others), where an unneeded one would cost (matmul's, conv2d's);
    "vjp_arrays" for ops whose vjp, given bare NumPy arrays of one float32 or float64 dtype,
    computes bit for bit what it computes on plain tensors (eager backward then runs it so);
    "collective" for the ops of `kiln.distributed` that every rank must run exactly once, in
    the same order (never folded, merged, fused or recomputed); "autocast_lower" and
    "autocast_fp32" for the ops the graph-mode autocast pass computes in the low dtype
    (products, convolutions) or in float32 (PyTorch's autocast lists).

    Effects, read by the alias analysis, the planner and the fusers (never guessed from names):
    `views` are the inputs whose storage the output may share (its kernel may return a view
    of them when called without `out`; such ops also carry the "view" tag); `overwrites` are
    the inputs the kernel writes into; `may_fail` marks ops whose kernel can raise on inputs
    of valid shapes and dtypes (index bounds, integer powers, checks), which a run orders
    before its first in-place write; `lowering` is the scalar form of an elementwise op that
    the fused CPU and CUDA kernels emit (None: such an op is run by its own kernel).

    `batch(args, batched, **attrs)` is the batching rule `kn.vmap` uses: `args` are the
    inputs, those flagged in `batched` with one extra leading axis (the batch); it returns
    the output with that leading axis, written with kiln ops (None: `kn.vmap` refuses the op).
    `jvp(tangents, out, *inputs, **attrs)` gives the output's tangent (forward mode) from the
    inputs' tangents (None for zero ones); None: forward mode transposes the vjp instead
    (kiln/passes/forward.py), so only an op without a vjp needs one.

    `prepare(backend, in_shapes, in_dtypes, out_shape, **attrs)` gives a kernel specialized to
    one signature, called as `kernel(xp, *arrays, out=None)` (attrs bound), or None for
    `impl`: a planned program calls it on every run, so the work that depends only on the
    signature is done once (the fused op's compiled loops).

    `method` is `(name, attr)` for a view op whose kernel, called without `out`, is the array
    method `name` with its one attr (`x.transpose(perm)`): the generated program calls the
    method, a fifth of the kernel call's cost.
    """

    name: str
    shape_rule: Callable
    dtype_rule: Callable
    impl: Callable
    vjp: Callable | None = None
    tags: frozenset = field(default_factory=frozenset)
    views: tuple = ()
    overwrites: tuple = ()
    may_fail: bool = False
    lowering: object = None
    batch: Callable | None = None
    jvp: Callable | None = None
    prepare: Callable | None = None
    method: tuple | None = None

    def __repr__(self):
        return f"OpDef({self.name})"


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise GraphError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    return op


class ArrayValue:
    """An array held in an attr (a constant's value): hashable and compared by content."""

    __slots__ = ("array", "_key")

    def __init__(self, array):
        array = np.array(array, order="C")  # a private copy (ascontiguousarray makes 0-d 1-d)
        array.flags.writeable = False
        self.array = array
        digest = hashlib.sha256(array.tobytes()).hexdigest()
        self._key = (array.dtype.str, array.shape, digest)

    def __eq__(self, other):
        return isinstance(other, ArrayValue) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return f"ArrayValue({self.array.dtype}{list(self.array.shape)})"


class Attrs(Mapping):
    """A node's attributes: frozen, sorted by key, hashable (values must be hashable)."""

    __slots__ = ("_items", "_dict", "_hash")

    def __init__(self, items=()):
        if isinstance(items, Attrs):  # already canonical
            self._items, self._dict, self._hash = items._items, items._dict, items._hash
            return
        items = tuple(sorted(dict(items).items()))
        self._items = items
        self._dict = dict(items)
        try:
            self._hash = hash(items)
        except TypeError as e:
            raise GraphError(f"attr values must be hashable: {items!r}") from e

    def __getitem__(self, key):
        return self._dict[key]

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._items)

    # the dict's own views: Mapping's iterate through __iter__ and __getitem__ (~5x slower)
    def items(self):
        return self._dict.items()

    def keys(self):
        return self._dict.keys()

    def values(self):
        return self._dict.values()

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return isinstance(other, Attrs) and self._items == other._items

    def __repr__(self):
        return f"Attrs({dict(self._items)!r})"
