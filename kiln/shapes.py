"""Shapes: dims are ints or symbolic `Dim`s; broadcasting, matmul and reshape over both.

A symbolic dim is a product `coeff * a * b ...` of atoms: named (`"batch"`, the same wherever
the name is used) or anonymous (from `None`, each one distinct). Rules unify symbolic dims
assuming they do not broadcast (as in JAX's shape polymorphism): what cannot be proven at build
time is recorded as a constraint that feeds check at run time.

Dims that only a run binds (a data-dependent length, kiln/ops/dynamic.py, and dims made from
one: `run_bound`) broadcast as PyTorch's do: two that may differ give a fresh such dim, the
run computes it (equal sizes, or one of them 1, the other) before the op runs.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import Counter

import numpy as np

from .errors import DimTypeError, IndexOutOfBoundsError, ShapeError

_anon_ids = itertools.count()


class Dim:
    """A symbolic dimension.

    >>> b = Dim("batch")
    >>> b == Dim("batch"), b * 784, (b * 784).evaluate({"batch": 2})
    (True, batch*784, 1568)
    """

    __slots__ = ("coeff", "atoms", "_hash")

    def __init__(self, name: str | None = None, *, coeff: int = 1, atoms: tuple = ()):
        if name is not None and not atoms:
            if not isinstance(name, str) or not name.isidentifier():
                raise ShapeError(f"a dim name must be an identifier, got {name!r}")
            atoms = (name,)
        elif not atoms:
            atoms = (next(_anon_ids),)  # anonymous: an int id, printed as `_`
        self.coeff = coeff
        self.atoms = tuple(sorted(atoms, key=_atom_key))
        self._hash = hash((self.coeff, self.atoms))

    @property
    def is_atom(self) -> bool:
        return self.coeff == 1 and len(self.atoms) == 1

    def __eq__(self, other):
        return isinstance(other, Dim) and self.coeff == other.coeff and self.atoms == other.atoms

    def __hash__(self):
        return self._hash

    def __mul__(self, other):
        return dim_product((self, other))

    __rmul__ = __mul__

    def __repr__(self):
        parts = [a if isinstance(a, str) else "_" for a in self.atoms]
        parts += [str(self.coeff)] if self.coeff != 1 else []
        return "*".join(parts)

    def evaluate(self, bindings) -> int:
        """The int this dim takes when its atoms are bound; KeyError names a missing atom."""
        return self.coeff * math.prod(bindings[a] for a in self.atoms)


def _atom_key(atom):
    return (0, atom, 0) if isinstance(atom, str) else (1, "", atom)


def is_static(shape) -> bool:
    return all(isinstance(d, int) for d in shape)


def _factors(d) -> tuple[int, Counter]:
    if isinstance(d, Dim):
        return d.coeff, Counter(d.atoms)
    return d, Counter()


def _make(coeff: int, atoms: Counter):
    if not atoms or coeff == 0:
        return coeff
    return Dim(coeff=coeff, atoms=tuple(atoms.elements()))


def dim_product(dims):
    """The product of ints and Dims, as an int when no symbol remains."""
    dims = dims if type(dims) is tuple else tuple(dims)  # (a generator is read once)
    if all(type(d) is int for d in dims):  # NOTE: eager shapes: no Counter per dim
        return math.prod(dims)
    coeff, atoms = 1, Counter()
    for d in dims:
        c, a = _factors(d)
        coeff *= c
        atoms += a
    return _make(coeff, atoms)


def dim_quotient(total, part):
    """`total / part` when it divides exactly (symbolically), else None."""
    tc, ta = _factors(total)
    pc, pa = _factors(part)
    if pc == 0 or tc % pc or any(ta[k] < n for k, n in pa.items()):
        return None
    return _make(tc // pc, ta - pa)


def size(shape):
    """Number of elements: an int, or a Dim product when the shape is symbolic."""
    return dim_product(shape)


def as_shape(shape) -> tuple:
    """Canonical shape: ints stay, `None` becomes an anonymous Dim, a string a named one.

    >>> as_shape((None, "batch", 3))[1:]
    (batch, 3)
    """
    if isinstance(shape, (int, str)) or shape is None or isinstance(shape, Dim):
        shape = (shape,)
    out = []
    for d in shape:
        if d is None or isinstance(d, str):
            out.append(Dim(d))
        elif isinstance(d, Dim):
            out.append(d)
        elif isinstance(d, bool) or not hasattr(d, "__index__"):
            raise ShapeError(f"a dim must be an int, None or a name, got {d!r} in {shape!r}")
        elif int(d) < 0:
            raise ShapeError(f"a dim must be >= 0, got {int(d)} in shape {tuple(shape)!r}")
        else:
            out.append(int(d))
    return tuple(out)


def format_shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# -- run-time constraints ------------------------------------------------------------------

_pending = threading.local()


def collect_constraints():
    """Starts collecting the constraints that shape rules record; returns the list."""
    _pending.items = []
    return _pending.items


def require_equal(a, b, why: str):
    """Records that dims `a` and `b` must be equal once feeds bind them (or raises now)."""
    if a == b:
        return
    if _provably_unequal(a, b):
        raise ShapeError(f"{why}: {a} != {b}")
    items = getattr(_pending, "items", None)
    if items is not None:
        items.append((a, b, why))


def require_stretch(d, t, why: str):
    """Records that dim `d` must broadcast to `t` (be 1 or `t`) once feeds bind them; a dim
    the run binds (`run_bound`) may be 1 there, which the op checks when it runs."""
    if d != 1 and not run_bound((d, t)):
        require_equal(d, t, why)


def _provably_unequal(a, b) -> bool:
    ac, aa = _factors(a)
    bc, ba = _factors(b)
    if not aa and not ba:
        return ac != bc
    if aa == ba:
        return ac != bc
    # An atom is a whole number, so coeff * atoms can only equal a constant its coeff divides.
    if not ba:
        return bc != 0 and bc % ac != 0
    if not aa:
        return ac != 0 and ac % bc != 0
    return False


def unify_dims(a, b, why: str):
    """The broadcast of two dims: 1 stretches; symbolic dims must match (checked at run time),
    but for a dim the run binds (`run_bound`): it may be 1 there, so the result is the other
    when that is an int, else a fresh dim the run binds (its operands' sizes, broadcast).

    >>> n = Dim()
    >>> mark_run_bound(n)
    >>> unify_dims(n, 3, "add"), run_bound(unify_dims(n, Dim(), "add")), unify_dims(n, n, "add")
    (3, True, _)
    """
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ShapeError(f"{why}: dims {a} and {b} cannot be broadcast together")
    if _RUN_BOUND and (run_bound(a) or run_bound(b)):
        if isinstance(a, int) or isinstance(b, int):
            return a if isinstance(a, int) else b  # the other is 1 or this int at run time
        fresh = Dim()
        mark_run_bound(fresh)
        return fresh
    require_equal(a, b, why)
    return b if isinstance(b, int) else a


# -- dims only a run binds -------------------------------------------------------------------

# The atoms of such dims (anonymous ones: their ids are unique in the process); an atom is
# marked when an op's rules first give it, so a graph loaded from a file marks its own.
_RUN_BOUND: set = set()


def mark_run_bound(value) -> None:
    """Marks the atoms of `value` (a dim, or tuples of them) as bound by a run, not by feeds."""
    _RUN_BOUND.update(atoms_of(value))


def run_bound(value) -> bool:
    """Whether `value` (a dim, or tuples of them) holds an atom that only a run binds."""
    return bool(_RUN_BOUND) and any(a in _RUN_BOUND for a in atoms_of(value))


def atoms_of(value):
    """The atoms of the dims in `value` (a dim, or tuples of them, nested)."""
    if isinstance(value, Dim):
        yield from value.atoms
    elif isinstance(value, tuple):
        for v in value:
            yield from atoms_of(v)


def mark_derived(in_shapes, attrs, shape) -> None:
    """After an op's rules gave `shape` on `in_shapes`: where an operand holds a dim a run
    binds, the new atoms of `shape` (in no operand's shape nor attr: a slice's length) are
    bound by the run too."""
    if not _RUN_BOUND or not any(run_bound(tuple(s)) for s in in_shapes):
        return
    new = set(atoms_of(tuple(shape))) - set(atoms_of(tuple(tuple(s) for s in in_shapes)))
    new -= set(atoms_of(tuple(attrs.values())))
    _RUN_BOUND.update(new)


def broadcast_shapes(*shapes, why: str = "operands could not be broadcast together"):
    """NumPy broadcasting over ints and Dims.

    >>> broadcast_shapes((Dim("b"), 1, 3), (4, 1))
    (b, 4, 3)
    """
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])  # the common case: nothing to broadcast (ints or Dims alike)
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for i in range(ndim):
        dims = [s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0]
        d = dims[0]
        for other in dims[1:]:
            try:
                d = unify_dims(d, other, why)
            except ShapeError:
                text = " and ".join(format_shape(s) for s in shapes)
                raise ShapeError(f"{why}: shapes {text}") from None
        result.append(d)
    return tuple(result)


def normalize_axis(axis: int, ndim: int) -> int:
    """`axis` in [0, ndim); a 0-d array takes 0 and -1, as PyTorch wraps its dims."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        if not isinstance(axis, np.integer):  # NumPy's ints are dims too, as in PyTorch
            raise DimTypeError(f"axis must be an int, got {axis!r}")
        axis = int(axis)
    if not -max(ndim, 1) <= axis < max(ndim, 1):  # (PyTorch's message)
        raise IndexOutOfBoundsError(
            f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
            f"{max(ndim, 1) - 1}], but got {axis})"
        )
    return axis % ndim if ndim else 0


def _static_reshape(in_shape, target):
    """`reshape_shape` of int shapes that fit (sizes >= 0, at most one -1), else None (the
    general path, which also says what is wrong). Eager reshapes all come here."""
    if not all(type(d) is int for d in in_shape) or not all(type(d) is int for d in target):
        return None
    total = math.prod(in_shape)
    if -1 in target:
        if target.count(-1) > 1 or any(d < -1 for d in target):
            return None
        known = -math.prod(target)
        if known == 0 or total % known:
            return None
        return tuple(total // known if d == -1 else d for d in target)
    if any(d < 0 for d in target) or math.prod(target) != total:
        return None
    return tuple(target)


def normalize_axes(axis, ndim: int) -> tuple:
    """Canonical reduction axes: a sorted tuple of non-negative ints (None means all). A dim
    named twice raises PyTorch's RuntimeError; on a 0-d value (ndim 0) dims 0 and -1 name the
    value itself, which has no axis: the answer is ().

    >>> normalize_axes((1, -3), 3), normalize_axes((0,), 0)
    ((0, 1), ())
    >>> normalize_axes((0, -1), 0)
    Traceback (most recent call last):
    kiln.errors.ShapeError: dim 0 appears multiple times in the list of dims
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(sorted(normalize_axis(a, ndim) for a in axes))
    for a, b in zip(out, out[1:]):
        if a == b:  # (torch 2.13's message)
            raise ShapeError(f"dim {a} appears multiple times in the list of dims")
    return out if ndim else ()


def reshape_shape(in_shape, target):
    """The output of reshaping `in_shape` to `target` (which may hold one -1)."""
    found = _static_reshape(in_shape, target)
    if found is not None:
        return found
    target = tuple(-1 if (isinstance(d, int) and d == -1) else d for d in target)
    if sum(1 for d in target if isinstance(d, int) and d == -1) > 1:
        raise ShapeError(f"can only specify one unknown dimension in {format_shape(target)}")
    known = as_shape(tuple(d for d in target if not (isinstance(d, int) and d == -1)))
    total = size(in_shape)
    why = f"cannot reshape {format_shape(in_shape)} into {format_shape(target)}"
    if len(known) < len(target):
        rest = dim_quotient(total, size(known))
        if rest is None:
            if is_static(in_shape) and is_static(known) or _provably_unequal(total, 0):
                raise ShapeError(why)
            raise ShapeError(f"{why}: the -1 dim is not a whole symbolic product; spell it out")
        it = iter(known)
        return tuple(rest if (isinstance(d, int) and d == -1) else next(it) for d in target)
    require_equal(total, size(known), why)
    return known
