"""Dims bound while a program runs: an op tagged "data_shape" (kiln/ops/dynamic.py) gives a
result whose length is its attr `count`, a symbolic dim no feed binds. A planned program keeps
such dims symbolic in its shapes and attrs (the feeds' dims bound); a value whose shape holds
one is a fresh array outside the arena, made by a kernel called without `out=`; the program
binds each such dim from the first result that has it (`bind`), checks every later result's
shape against its bound dims, and evaluates the attrs that hold them before each call.

>>> import kiln as kn, numpy as np
>>> with kn.Graph().as_default():
...     x = kn.placeholder(kn.float32, (None,), name="x")
...     y = x[x > 0] * 2
>>> y.shape[0] == x.shape[0]  # the count of positive elements: a dim of its own
False
>>> kn.function([x], [y])(np.array([1.0, -2.0, 3.0], np.float32))[0]
array([2., 6.], dtype=float32)
"""

from __future__ import annotations

import math

from .. import shapes as sh
from ..dtypes import TUPLE
from ..errors import ShapeError, node_error
from ..ops.dynamic import _atoms, data_atoms, holds, run_bound

__all__ = ["bind", "data_atoms", "dims", "holds", "infer", "partial"]


def partial(value, bindings):
    """`value` (a dim, or tuples of them) with the atoms that `bindings` holds evaluated: an
    int where none is left, else a dim of the others."""
    if isinstance(value, tuple):
        return tuple(partial(v, bindings) for v in value)
    if not isinstance(value, sh.Dim):
        return value
    coeff, rest = value.coeff, []
    for a in value.atoms:
        if a in bindings:
            coeff *= bindings[a]
        else:
            rest.append(a)
    return sh.dim_product((coeff, *(sh.Dim(atoms=(a,)) for a in rest)))


def dims(value, bound: dict):
    """`value` with every dim evaluated from the dims bound so far in this run (the generated
    program's call of a kernel whose attrs hold such a dim); one not bound yet stays (the
    `count` of the op that binds it)."""
    if isinstance(value, sh.Dim):
        return value.evaluate(bound) if bound.keys() >= set(value.atoms) else value
    if isinstance(value, tuple):
        return tuple(dims(v, bound) for v in value)
    return value


def bind(value, shape, bound: dict, node) -> None:
    """Binds the dims of `shape` (the node's result's, partly symbolic) that are not yet bound
    from the array `value`, and checks the others: a result of another shape than its rules
    gave (two counts that differ where the graph assumed them equal) is a ShapeError there."""
    _bind_shape(tuple(value.shape), shape, bound, node)


def infer(node, args, attrs: dict, shape, bound: dict) -> None:
    """Before `node` runs on `args` (arrays, some of lengths this run bound): its shape rules
    on their shapes, which bind the dims of its result's `shape` that the run gives (a
    broadcast of two such lengths: equal, or one of them 1) and check the operands agree
    (a ShapeError naming the node and the operands' shapes where they do not)."""
    shapes = [tuple(a.shape) for a in args]
    try:
        got = node.op.shape_rule(*shapes, **{k: dims(v, bound) for k, v in attrs.items()})
    except ShapeError as e:  # the rules' message gives the operands' shapes
        raise node_error(type(e), f"at run time: {e}", op=node.op.name, name=node.name,
                         site=node.site, inputs=node.inputs) from None  # fmt: skip
    _bind_shape(tuple(got), shape, bound, node)


def _bind_shape(got, shape, bound: dict, node) -> None:
    if len(got) == len(shape):
        for axis, d in enumerate(shape):
            if not isinstance(d, sh.Dim):
                if got[axis] != d:
                    break
                continue
            missing = [a for a in d.atoms if a not in bound]
            if not missing:
                if d.evaluate(bound) != got[axis]:
                    break
                continue
            if len(missing) > 1:
                break
            known = d.coeff * math.prod(bound[a] for a in d.atoms if a in bound)
            if known == 0 or got[axis] % known:
                break
            bound[missing[0]] = got[axis] // known
        else:
            return
    want = sh.format_shape(tuple(dims(d, bound) if not holds(d, _unbound(d, bound)) else d
                                 for d in shape))  # fmt: skip
    raise node_error(
        ShapeError, f"at run time the result has shape {list(got)} where the graph's shape "
        f"rules, with the dims the data bound so far, give {want} (values of data-dependent "
        "lengths that the graph took as equal differ)", op=node.op.name, name=node.name,
        site=node.site, inputs=node.inputs,
    )  # fmt: skip


def _unbound(d, bound) -> frozenset:
    return frozenset(a for a in getattr(d, "atoms", ()) if a not in bound)


def binders_first(nodes, attrs, after: dict, graph) -> dict:
    """`after` (node index -> indices that must run before it) with an edge from the node
    that binds each dim (`run_bound`) to every node whose attrs hold that dim (a
    `broadcast_to` of a gradient to the count's shape reads no value of that node)."""
    bound = run_bound(graph)
    index = {id(n): i for i, n in enumerate(nodes)}
    after = dict(after)
    for i, n in enumerate(nodes):
        need = {index[id(bound[a])] for v in attrs[id(n)].values() for a in _atoms(v)
                if a in bound and id(bound[a]) in index}  # fmt: skip
        need.discard(i)
        if need:
            after[i] = set(after.get(i, ())) | need
    return after


def inferred(node, in_shapes, attrs) -> bool:
    """Whether the program runs `node`'s shape rules again on its operands' shapes (`infer`):
    an op of several operands, or of attrs holding dims, where one of those has a length the
    run binds (in_shapes and attrs: the concrete ones, the feeds' dims bound)."""
    if node.op.tags & {"data_shape", "region"} or node.out.dtype == TUPLE:
        return False
    held = sum(1 for s in in_shapes if any(type(d) is not int for d in s))
    if held and len(node.inputs) > 1:
        return True
    return any(True for v in attrs.values() for _ in _atoms(v))


def unplanned(node, in_shapes, attrs) -> bool:
    """Whether `node` gives a result whose shape only the run knows: an op of a data-dependent
    length, or one reading a value of such a length or with such a length in its (concrete)
    attrs (their dims the feeds bind are ints there)."""
    return (
        "data_shape" in node.op.tags
        or any(type(d) is not int for s in in_shapes for d in s)
        or any(True for v in attrs.values() for _ in _atoms(v))
    )
