"""In-place methods and item assignment on Symbols (graph mode and `kn.compile`), with
PyTorch's meaning, by functionalization.

A graph value never changes, so `x.add_(1)`, `x[0] = v` or `relu(x, inplace=True)` build the
new value out of place and then make the Python object `x` stand for it: the node that made x
gets a fresh Symbol for the old value, every node that read x so far reads that one, and x
becomes the output of the new value's node (`rebind`). Code after the change reads the new
value through x, code before it read the old one: what PyTorch's eager run computes.

Views share their base's memory in PyTorch, so a change through one is seen by the others:
changing a view (basic indexing, `transpose`/`permute`/`T`, `reshape`/`view`/`squeeze`/
`unsqueeze`, pieces of `split`/`chunk`, `detach`, and views of views) writes the new elements
back into its base (an `index_put` at the view's positions, the inverse transpose or reshape,
or for `detach` the new value with the base's gradient path kept), and every other view of
that base taken before is taken again from the new base. Changing a base retakes its views
too, the read-only ones (`expand`, `view(dtype)`) among them.

An argument of a function `kn.compile` traces may change (as under torch.compile): the
compiled call returns its new value and writes it into the caller's tensor.

Refused, with an error naming the op and the line: a graph-mode placeholder (a feed), a
Variable (it changes only through `updates=`/`assign`), an argument of a compiled function
that requires grad while grad mode is on (under no_grad its values change and its gradient
path stays, as for any value on that path), views PyTorch cannot write through
either (a broadcast `expand`), views kiln cannot yet write back (`bitcast`),
a result of another shape, and a result whose dtype the value cannot hold (PyTorch's "result
type Float can't be cast to the desired output type Long").
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import dtypes as dt
from ..eager.grad_mode import enable_grad, state
from ..errors import AutogradError, DTypeMismatchError, GraphError, ShapeMismatchError, node_error
from ..graph.core import Symbol, Variable, user_site
from . import core
from . import math as m
from .layouts import (  # noqa: F401 (the layout names, importable from here as before)
    _STRIDED,
    _STRIDED_LAYOUT,
    _is_split_piece,
    _layout,
    _storage,
    _strided,
    clone,
    contiguous,
    detached_from,
    is_contiguous,
    keep_layout,
    layout_known,
    layout_read,
    record_strided_view,
    storage_layout,
    storage_offset,
    storage_root,
    stride,
    strided_positions,
    strided_probe,
    strided_view,
    whole_in_order,
)

__all__ = ["assign_inplace", "install", "keeps_history", "rebind"]

# graph -> {id(argument placeholder): [the object, requires_grad, its placeholder once it
# changed]}: the arguments of a function kn.compile traces, which may change in place (the
# compiled call then writes the new value into the caller's tensor, as torch.compile does)
_ARGUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# the in-place changes made while a vmap builds its function, one list per vmap (nested ones
# stacked): (the old value, the node of the new one, the op); vmap refuses a change that
# writes values of its batch into a tensor outside it (kiln/tracing/vmap_forms.py)
CHANGES: list = []


def allow_argument_changes(graph, arguments, requires_grad) -> dict:
    """Lets the placeholders `arguments` of `graph` change in place (kn.compile's tracing);
    returns the record that `changed_arguments` reads."""
    record = {id(a): [a, bool(g), None] for a, g in zip(arguments, requires_grad)}
    _ARGUMENTS[graph] = record
    return record


def is_compiled_argument(x: Symbol) -> bool:
    """Whether x is an argument of a function kn.compile traces (it may change in place)."""
    argument = _ARGUMENTS.get(x.node.graph, {}).get(id(x))
    return argument is not None and argument[0] is x


def in_compiled_trace(x: Symbol) -> bool:
    """Whether x is a value of a function kn.compile traces (not of a graph-mode graph).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     in_compiled_trace(kn.placeholder(kn.float32, (1,)))
    False
    """
    return x.node.graph in _ARGUMENTS


def traced_requires_grad(x: Symbol) -> bool:
    """Whether the value x of a kn.compile trace is what eager code would see as requiring
    grad: it is computed (not through a `detach()`) from an argument that requires grad or a
    module's Parameter that does."""
    from ..nn.parameter import owner_of  # NOTE: lazy: kiln.nn builds on the frontend

    arguments = _ARGUMENTS.get(x.node.graph, {})
    stack, seen = [x], set()
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        argument = arguments.get(id(s))
        if argument is not None and argument[0] is s:
            if argument[1] and dt.is_differentiable(s.dtype):
                return True
            continue
        if isinstance(s, Variable):
            owner = owner_of(s)
            if owner is not None and owner.tensor()._requires_grad:
                return True
            continue
        if s.node.op.name != "stop_gradient" and dt.is_differentiable(s.dtype):
            stack.extend(i for i in s.node.inputs if isinstance(i, Symbol))
    return False


_WRITABLE_VIEWS = {"index", "transpose", "reshape", "stop_gradient", "unfold"} | {
    "real", "imag", "view_as_real", "view_as_complex"}  # fmt: skip
# views a change cannot go through, which still see their base's changes
_READ_ONLY_VIEWS = {"broadcast_to", "bitcast"}
_REFUSED_INPUTS = {"placeholder": "an input of the graph (a feed)", "variable": "a Variable"}
# graph -> {id(value): value}: the results of indexing by a 0-d integer Symbol (`a[i]`,
# `a[:, i]`: one `gather` each), which PyTorch reads as an int, so they are views of the value
# indexed: a change through one is written back at the index the program computes
_SELECTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_select(view: Symbol) -> Symbol:
    """Marks `view`, a `gather` of one 0-d integer Symbol, as the view that PyTorch's
    `x[i]` is (kiln/frontend/indexing.py); returns it."""
    _SELECTS.setdefault(view.node.graph, {})[id(view)] = view
    return view


def is_select(x: Symbol) -> bool:
    """Whether x is a view `record_select` marked (the object keeps the mark when it is
    taken again of its base's new value)."""
    selects = _SELECTS.get(x.node.graph)
    return selects is not None and selects.get(id(x)) is x


def rebind(x: Symbol, new: Symbol) -> Symbol:
    """Makes the object `x` stand for the value `new` (a fresh node's output, of x's graph):
    the nodes that read x so far read the old value, under a fresh Symbol, which is returned.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     a = kn.placeholder(kn.float32, (2,), name="a")
    ...     x = a * 2.0
    ...     y = x + 1.0
    ...     old = rebind(x, x * 3.0)
    >>> y.node.inputs[0] is old, x.node.op.name, x.node.inputs[0] is old
    (True, 'mul', True)
    """
    if new is x:
        return x
    old = x.node.graph.symbol_class(x.node, x.shape, x.dtype)
    x.node.out = old
    for node in x.node.graph.nodes:
        if any(i is x for i in node.inputs):
            node.inputs = tuple(old if i is x else i for i in node.inputs)
    strided = _strided(x)
    if strided is not None:  # the old value is the as_strided view now
        record_strided_view(old, *strided, _STRIDED_LAYOUT.get(old.node.graph, {}).get(id(x)))
    selects = _SELECTS.get(x.node.graph)
    if selects is not None and selects.get(id(x)) is x:  # the old value is the select now
        selects[id(old)] = old
        if new.node.op is not x.node.op:  # x a view of it (`x.unsqueeze_(0)`), not one again
            del selects[id(x)]
    producer = new.node
    x.node, x.shape, x.dtype = producer, new.shape, new.dtype
    producer.out = x
    return old


def _fresh(value: Symbol, since: int, graph) -> Symbol:
    """`value` as the output of a node of its own, made since node count `since`, that is not
    a view: x must not become a view of another value (`x.copy_(y.T)` gives x memory of its
    own in PyTorch), nor take over a value other code holds (`x.copy_(y)` gives y)."""
    node = value.node
    if "view" not in node.op.tags and any(n is node for n in graph.nodes[since:]):
        return value
    return core.call("cast", value, dtype=value.dtype)  # a copy: an identity cast


def _reads(value: Symbol, x: Symbol, since: int) -> bool:
    """Whether `value`, made by the nodes from count `since` on, reads x (through those
    nodes, and through views of x taken before: `x.copy_(x[:, 1])`)."""
    made = {id(n) for n in value.node.graph.nodes[since:]}
    stack, seen = [value], set()
    while stack:
        s = stack.pop()
        if s is x:
            return True
        if id(s) in seen:
            continue
        seen.add(id(s))
        if id(s.node) in made:
            stack.extend(s.node.inputs)
        elif s.node.op.views == (0,) and s.node.inputs:  # an older view: of x?
            stack.append(s.node.inputs[0])
    return False


def _module_data_of(x: Symbol):
    from ..nn.parameter import module_data_of  # NOTE: lazy: kiln.nn builds on the frontend

    return module_data_of(x)


def _module_value_of(x: Symbol):
    from ..nn.parameter import module_value_of  # NOTE: lazy: kiln.nn builds on the frontend

    return module_value_of(x)


def _update_module_value(owner, x: Symbol, new, op: str, fitted: bool = False) -> Symbol:
    """An in-place change of x, a module's Parameter or Buffer as read in a kn.compile trace
    (`self.n += 1`, `self.ema.mul_(0.9)`, `self.w.mul_(2)` under no_grad): the program
    assigns its new value on each call, as each eager call changes it. Returns its new value
    there."""
    if owner.requires_grad and state.grad:
        raise _error(AutogradError, "a leaf Variable that requires grad is being used in an "
                     "in-place operation: update it under kn.no_grad(), as optimizers do, or "
                     "compute a new tensor", op, x)  # fmt: skip
    return owner.traced_update(new if fitted else _fit(x, new, op), op)


def _error(cls, message: str, op: str, x: Symbol):
    return node_error(cls, message, op=op, site=user_site(), inputs=[x])


def _check_target(x: Symbol, op: str) -> None:
    """The refusals that do not depend on the new value: inputs, Variables, unwritable views."""
    node = x
    while True:
        name = node.node.op.name
        argument = _ARGUMENTS.get(node.node.graph, {}).get(id(node))
        if argument is not None and argument[0] is node:
            if argument[1] and state.grad:  # (under no_grad: as an optimizer's update)
                why = (
                    "a leaf Variable that requires grad is being used in an in-place operation "
                    "(compute a new value instead)"
                )
                if x.node.op.name == "stop_gradient":  # through .data: eager changes it
                    why = (
                        "eager code changes it so through .data, but a compiled call does not "
                        "change in place a tensor it takes as an input that requires grad; "
                        "change it outside the compiled function"
                    )
                raise _error(
                    GraphError,
                    f"in-place change of '{node.name}', an argument of the compiled function "
                    f"that requires grad: {why}",
                    op,
                    x,
                )
            return  # the compiled call writes its new value into the caller's tensor
        if (not state.grad and not isinstance(node, Variable)
                and _module_data_of(node) is not None):  # fmt: skip
            return  # a module's parameter after a step, changed under no_grad (`with
            # no_grad(): m.weight.clamp_(-c, c)`): the program assigns it (assign_inplace)
        if isinstance(node, Variable) or name in _REFUSED_INPUTS:
            what = _REFUSED_INPUTS.get(name, "a Variable")
            via = "" if node is x else f" (through the view '{x.name}')"
            hint = (
                "a Variable changes only through updates= or assign"
                if what == "a Variable"
                else "compute a new value (x = x + 1), or under kn.compile, return it"
            )
            if what == "a Variable" and _module_data_of(node) is not None:
                hint = (
                    "inside kn.compile a module's parameter changes in place whole, through "
                    "its .data or the Parameter itself (`m.weight.data.mul_(2)`, `for p in "
                    "m.parameters(): p.data.clamp_(-c, c)`), not through a view of it"
                )
            raise _error(
                GraphError,
                f"in-place change of '{node.name}', {what}{via}: a graph value of this kind "
                f"cannot change in place; {hint}",
                op,
                x,
            )
        if _is_split_piece(node):
            node = node.node.inputs[0].node.inputs[0]
            continue
        if is_select(node):
            node = node.node.inputs[0]
            continue
        strided = _strided(node)
        if strided is not None:
            if np.unique(strided[1]).size != strided[1].size:
                raise _error(ShapeMismatchError, "unsupported operation: more than one element "
                             "of the written-to tensor refers to a single memory location; "
                             "clone() it first", op, x)  # fmt: skip
            node = strided[0]
            continue
        if "view" not in node.node.op.tags or name in ("get", "after", "custom_grad", "with_grad"):
            return  # (custom_grad, with_grad: a value of its own, an op's result with a gradient)
        if name not in _WRITABLE_VIEWS:
            why = (
                "more than one element of the written-to tensor refers to a single memory "
                "location; clone() it first"
                if name == "broadcast_to"
                else f"writing through a {name} view is not supported; clone() it first"
            )
            raise _error(ShapeMismatchError, f"unsupported operation: {why}", op, x)
        if copies(node):
            return  # a copy in PyTorch (advanced indexing, reshape of a non-contiguous view)
        node = node.node.inputs[0]


def _fit(x: Symbol, new, op: str) -> Symbol:
    """`new` as a Symbol of x's shape and dtype, with PyTorch's refusals."""
    if not isinstance(new, Symbol):  # a value computed from constants alone: folded
        new = core.constant(np.asarray(new), graph=x.node.graph)
    if tuple(new.shape) != tuple(x.shape):
        if not _broadcasts_to(tuple(new.shape), tuple(x.shape)):
            raise _error(
                ShapeMismatchError,
                f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                f"{list(new.shape)}",
                op,
                x,
            )
        new = core.call("broadcast_to", new, shape=tuple(x.shape))
    if new.dtype != x.dtype:
        if not dt.can_cast(new.dtype, x.dtype):
            raise _error(
                DTypeMismatchError,
                f"result type {new.dtype} can't be cast to the desired output type {x.dtype}",
                op,
                x,
            )
        new = m.cast(new, x.dtype)
    return new


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether `shape` may broadcast to `target`: each dim 1 or equal, or symbolic (a mask's
    count, `x[mask] += v`: `broadcast_to` checks it when the run binds it)."""
    if len(shape) > len(target):
        return False
    pairs = zip(reversed(shape), reversed(target))
    return all(d == 1 or d == t or not isinstance(d, int) or not isinstance(t, int)
               for d, t in pairs)  # fmt: skip


def _base(view: Symbol) -> Symbol:
    """The value a writable view shares its elements with."""
    strided = _strided(view)
    if strided is not None:
        return strided[0]
    if _is_split_piece(view):
        return view.node.inputs[0].node.inputs[0]
    return view.node.inputs[0]


class _Through:
    """The `function` of the `custom_grad` node that writes a change made through `detach()`
    into its base: the base's gradient path stays as it was (PyTorch changes the memory, not
    the base's autograd history)."""

    def __repr__(self):
        return "detach_write"

    def backward(self, ct, n_inputs: int) -> tuple:
        return (ct,)

    def batched(self):  # (its backward is the same on a batch: vmap's)
        return self


THROUGH = _Through()


def keeps_history(value: Symbol, old: Symbol) -> bool:
    """Whether `value`, the new value of an in-place change of `old`, changed only its
    elements (changes under no_grad): its gradient goes on to `old`, so the tensor written
    into keeps its autograd history, as in eager PyTorch.

    >>> import kiln as kn
    >>> x = kn.placeholder(kn.float32, (2,), name="x")
    >>> keeps_history(x * 2, x)
    False
    """
    while value is not old:  # (several changes: a chain of them)
        node = value.node
        if not (node.op.name == "custom_grad" and node.attrs.get("function") is THROUGH):
            return False
        value = node.inputs[-1]
    return True


class _Overwrite:
    """The `function` of the `custom_grad` node of a change that does not read the value it
    changes (`assign_inplace`): the cotangent goes to the new value, zeros to the old one."""

    def __repr__(self):
        return "overwrite"

    def backward(self, ct, n_inputs: int) -> tuple:
        from ..eager.factories import zeros_like  # NOTE: lazy: eager builds on the frontend

        return (ct, zeros_like(ct))

    def batched(self):  # (its backward is the same on a batch: vmap's)
        return self


OVERWRITE = _Overwrite()


def _write_back(view: Symbol, new: Symbol) -> Symbol:
    """The new value of `view`'s base, with the view's elements replaced by `new`."""
    node = view.node
    base = _base(view)
    name = node.op.name
    strided = _strided(view)
    if strided is not None:
        from .indexing import index_put

        (positions,) = core.lift(strided[1].reshape(-1), context=(base,))
        flat = core.call("reshape", base, shape=(-1,))
        flat = index_put(flat, (positions,), core.call("reshape", new, shape=(-1,)), False)
        return core.call("reshape", flat, shape=tuple(base.shape))
    if is_select(view):  # base[:, ..., i] = new, i as the program computes it
        from .indexing import put

        items = (slice(None),) * node.attrs["axis"] + (node.inputs[1],)
        return put(base, items, new, False, as_ints=False)
    if _is_split_piece(view):
        split = node.inputs[0].node
        axis, k = split.attrs["axis"], node.attrs["index"]
        lo = sum(split.attrs["sizes"][:k])
        spec = (("slice", None, None, None),) * axis + (("slice", lo, lo + new.shape[axis], None),)
        return core.call("index_put", base, new, spec=spec, axes=(), accumulate=False)
    if name == "stop_gradient":
        return core.call("custom_grad", new, base, function=THROUGH)
    if name == "index":
        return core.call("index_put", base, new, spec=node.attrs["spec"], axes=(),
                         accumulate=False)  # fmt: skip
    if name == "transpose":
        perm = node.attrs["perm"]
        return core.call("transpose", new, perm=tuple(int(np.argsort(perm)[k])
                                                      for k in range(len(perm))))  # fmt: skip
    if name == "unfold":
        return _write_windows(base, new, **node.attrs)
    if name == "real":
        return core.call("complex", new, core.call("imag", base))
    if name == "imag":
        return core.call("complex", core.call("real", base), new)
    if name in ("view_as_real", "view_as_complex"):  # each the other's inverse
        return core.call("view_as_complex" if name == "view_as_real" else "view_as_real", new)
    return core.call("reshape", new, shape=tuple(base.shape))


def _write_windows(base: Symbol, new: Symbol, *, dim: int, size: int, step: int) -> Symbol:
    """`base` with the elements of its windows `base.unfold(dim, size, step)` replaced by
    `new`'s (where windows overlap, one of them: PyTorch leaves that order unspecified)."""
    from ..ops.movement import window_positions
    from .torch_extra_shape import index_copy

    if step < size:  # overlapping windows: each element from a window that changed it
        return _write_overlapping_windows(base, new, dim=dim, size=size, step=step)
    last = base.ndim  # new's window dim
    windows = core.call("transpose", new, perm=(*range(dim + 1), last, *range(dim + 1, last)))
    flat = (*base.shape[:dim], windows.shape[dim] * size, *base.shape[dim + 1 :])
    positions = window_positions(base.shape[dim], size, step).reshape(-1)
    (positions,) = core.lift(positions, context=(base,))
    return index_copy(base, dim, positions, core.call("reshape", windows, shape=flat))


def _write_overlapping_windows(base: Symbol, new: Symbol, *, dim: int, size: int, step: int):
    """`base` with its overlapping windows `base.unfold(dim, size, step)` replaced by `new`'s:
    an element of base takes the value of a window that changed it (the last such window),
    else keeps its own, so another window's old copy of it does not undo a write through one
    window (`b.unfold(0, 2, 1)[0] = 7` changes b[0] and b[1], as PyTorch's). Each element is
    written once: the gradient reaches the value written, not the copies it replaced."""
    from ..ops.movement import window_positions
    from .indexing import index_put
    from .torch_index import scatter_reduce
    from .torch_shape import unfold

    n = int(np.prod(base.shape, dtype=np.int64))
    ids = np.take(np.arange(n).reshape(tuple(base.shape)),
                  window_positions(base.shape[dim], size, step), axis=dim)  # fmt: skip
    ids = np.moveaxis(ids, dim + 1, -1).reshape(-1)  # each element of `new`: its place in base
    values = core.call("reshape", new, shape=(-1,))
    old = core.call("reshape", unfold(base, dim, size, step), shape=(-1,))
    order, places, none, slot = core.lift(np.arange(ids.size), ids, np.full(n, -1),
                                          np.full(ids.size, n), context=(base,))  # fmt: skip
    changed = m.not_equal(values, old)
    key = m.where(changed, order, -1)  # the last window that changed each place wins
    best = scatter_reduce(none, 0, places, key, "amax")
    wins = m.logical_and(changed, m.equal(key, core.call("take_along_axis", best, places, axis=0)))
    spare = core.call("concat", core.call("reshape", base, shape=(-1,)),
                      core.call("reshape", base, shape=(-1,))[:1], axis=0)  # fmt: skip
    flat = index_put(spare, (m.where(wins, places, slot),), values, False)  # the rest: to n
    return core.call("reshape", flat[:n], shape=tuple(base.shape))


def copies(x: Symbol) -> bool:
    """Whether x, made by a view op, is a copy in PyTorch: advanced indexing, and a reshape
    that cannot be a view (of a transpose, say)."""
    node = x.node
    if node.op.name == "index":
        return len(node.inputs) > 1
    return node.op.name == "reshape" and _layout(x) is None


def _is_writable_view(x: Symbol) -> bool:
    return (
        _strided(x) is not None
        or _is_split_piece(x)
        or is_select(x)
        or (x.node.op.name in _WRITABLE_VIEWS and not copies(x))
    )


def _retake_views(base: Symbol, old_base: Symbol) -> None:
    """Every view taken of the base's old value is taken again of its new value, and so are
    the views of those views (PyTorch's views share the base's memory)."""
    graph = base.node.graph
    for node in list(graph.nodes):
        if not node.inputs or node.inputs[0] is not old_base:
            continue
        if node.op.name == "split":
            _retake_pieces(node, base)
            continue
        if is_select(node.out):  # the object stays marked: it is rebound, not replaced
            view = node.out
            again = core.call("gather", base, *node.inputs[1:], **dict(node.attrs))
            _retake_views(view, rebind(view, again))
            continue
        if node.op.name not in _WRITABLE_VIEWS | _READ_ONLY_VIEWS or copies(node.out):
            continue
        view = node.out
        again = core.call(node.op.name, base, *node.inputs[1:], **dict(node.attrs))
        old_view = rebind(view, again)
        _retake_views(view, old_view)
    for view, of, positions in list(_STRIDED.get(graph, {}).values()):
        if of is base and _strided(view) is not None:
            from .torch_index import take

            (index,) = core.lift(positions, context=(base,))
            old_view = rebind(view, take(base, index))
            _retake_views(view, old_view)


def _retake_pieces(split, base: Symbol) -> None:
    """The pieces of `split` (of a base's old value) taken again of the base's new value."""
    graph = base.node.graph
    pieces = [n for n in graph.nodes if n.op.name == "get" and n.inputs[0] is split.out]
    again = core.call("split", base, **dict(split.attrs))
    for node in pieces:
        view = node.out
        old_view = rebind(view, core.call("get", again, **dict(node.attrs)))
        _retake_views(view, old_view)


def assign_inplace(x: Symbol, new, op: str, since: int) -> Symbol:
    """Makes x stand for `new` (PyTorch's in-place change of x to that value; `new` computed
    by nodes from count `since` on): written back through x's bases, whose other views are
    taken again. Returns x."""
    graph = x.node.graph
    new = _fit(x, new, op)
    if x.node.op.name == "stop_gradient" and state.grad and traced_requires_grad(new):
        raise _error(GraphError, f"in-place change of '{x.name}', a detach()ed tensor, by a "
                     "value that requires grad: eagerly it then requires grad (that value's "
                     "history) while the tensor it was detached from keeps its own; a compiled "
                     "call does not follow that. Compute a new tensor instead (y = x + v)", op,
                     x)  # fmt: skip
    if _is_writable_view(x):
        base = _base(x)
        start = len(graph.nodes)
        # the base's new value; its views, x among them, are then taken again from it
        assign_inplace(base, _write_back(x, new), op, start)
        return x
    layout = _layout(x, True, False)  # x's memory, which the change keeps: its layout too
    # a read of a module's Parameter or Buffer in a kn.compile trace (`self.buf`, or a view
    # of it written through): x stands for the new value, and each call assigns it there
    owner = _module_value_of(x)
    if owner is not None and owner.requires_grad and state.grad:
        _update_module_value(owner, x, new, op, True)  # (refused, as eager)
    new = _fresh(new, since, graph)
    if not state.grad and traced_requires_grad(x):
        # a change under no_grad of a value on the gradient path changes its elements, not
        # its autograd history: gradients of the new value go on to the old one's history
        with enable_grad():  # (made under no_grad, the node would end in stop_gradient)
            new = core.call("custom_grad", new, x, function=THROUGH)
    elif not _reads(new, x, since):
        # a change that does not read x (`zero_`, `fill_`, `copy_` of another value) keeps
        # x on the gradient path, as eager's tape does: x's new value requires grad where the
        # old one did, and the old history gets a zero gradient (PyTorch's ZeroBackward0)
        new = core.call("custom_grad", new, new, x, function=OVERWRITE)
    data = None if isinstance(x, Variable) else _module_data_of(x)
    if data is not None:  # a module's parameter as read after a step: the program assigns
        # it on each call, and x and later reads of the parameter are its new value
        from ..optim import graph_step  # NOTE: lazy: kiln.optim builds on the frontend

        data._traced_assign(graph, new, op)
        var = data.owner.variable(graph)
        with enable_grad():  # (read as the parameter: its gradient goes to the Variable)
            new = core.call("custom_grad", graph_step.current(var), var, function=THROUGH)
        graph_step.note_read(var, x)
    argument = _ARGUMENTS.get(graph, {}).get(id(x))
    if argument is not None and argument[0] is x and argument[1]:
        # an argument that requires grad, changed under no_grad: still the leaf its caller
        # holds, so the gradients of what reads its new value go to it (an optimizer's
        # update, a `clamp_` of an image optimized by LBFGS)
        with enable_grad():
            new = core.call("custom_grad", new, x, function=THROUGH)
    old = rebind(x, new)
    if CHANGES:  # (a vmap building its function: it checks what each change writes)
        CHANGES[-1].append((old, x.node, op))
    keep_layout(x, layout)
    if argument is not None and argument[0] is x and argument[2] is None:
        argument[2] = old  # the argument's placeholder, now under a fresh Symbol
    _retake_views(x, old)
    if owner is not None:
        _update_module_value(owner, x, x, op, True)
    return x


def check_no_overlap(x: Symbol, values, op: str) -> None:
    """Refuses a change of x that reads a value among `values` sharing part of x's memory
    (PyTorch's "unsupported operation", under torch.compile too): eager's rule
    (`kiln.eager.out.check_no_overlap`) on the layouts PyTorch's tensors would have."""
    from ..eager.out import overlap_error, partial_overlap

    if not any(isinstance(v, Symbol) and v is not x for v in values):
        return
    root, layout = _storage(x)
    for v in values:
        if isinstance(v, Symbol) and v is not x:
            other, place = _storage(v)
            if other is root and partial_overlap(layout, place):
                raise overlap_error(op, x, v)


def _method(name: str, compute):
    from .inplace import OVERLAP_ALLOWED

    checks = name not in OVERLAP_ALLOWED

    def method(self, *args, **kwargs):
        owner = _module_value_of(self) if isinstance(self, Variable) else None
        if owner is not None and not owner.requires_grad:  # a frozen Parameter (`_check_target`
            # refuses one that requires grad: outputs would lose its gradient after the call)
            return _update_module_value(owner, self, compute(self, *args, **kwargs), name)
        _check_target(self, name)
        if checks:
            check_no_overlap(self, (*args, *kwargs.values()), name)
        since = len(self.node.graph.nodes)
        return assign_inplace(self, compute(self, *args, **kwargs), name, since)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(…)` on a Symbol: the new value out of place, which x (and the views that "
        "share its elements) then stand for (kiln/frontend/functionalize.py)."
    )
    return method


def is_basic_index(index) -> bool:
    """Whether `index` is basic (ints, slices, None, ...): `t[index]` is then a view."""
    items = index if type(index) is tuple else (index,)
    return all(i is None or i is Ellipsis or type(i) in (int, slice) for i in items)


def setitem(self, index, value) -> None:
    """`x[index] = value` on a Symbol: x then stands for `index_put(x, index, value)`, and the
    views of x for their parts of it."""
    from ..eager.tensor import Tensor
    from . import indexing

    _check_target(self, "setitem")
    if isinstance(value, (Symbol, Tensor)) and value.dtype != self.dtype:
        indexing.check_put_dtype(self, index, value)
    if isinstance(value, Symbol):
        check_no_overlap(self[index] if is_basic_index(index) else self, (value,), "setitem")
    since = len(self.node.graph.nodes)
    if type(value) is int:  # an int64 first, whatever x's dtype (as eager's `setitem`)
        value = np.asarray(
            dt.int64_item(value, dt.as_dtype(self.dtype), "setitem", self), self.dtype
        )
    elif (type(value) is float or type(value) is complex) and self.dtype != np.float16:
        # refused where x's dtype cannot hold it (as eager's `setitem`)
        value = np.asarray(dt.python_float(value, dt.as_dtype(self.dtype), "setitem", self))
    if not isinstance(value, Symbol):
        value = core.constant(np.asarray(value), graph=self.node.graph)
    if value.dtype != self.dtype:
        value = m.cast(value, self.dtype)  # item assignment casts, as PyTorch's
    items = indexing.items_of(index)
    mask = items[0] if len(items) == 1 else None
    if (isinstance(mask, Symbol) and mask.dtype == np.bool_ and tuple(mask.shape) == tuple(
            self.shape) and tuple(value.shape) == ()):  # fmt: skip
        # x[mask] = v with a mask of x's shape and one value: a select, of a static shape
        # (the general index_put of a mask has as many positions as the mask has Trues)
        assign_inplace(self, m.where(mask, value, self), "setitem", since)
        return
    assign_inplace(self, indexing.put(self, index, value, False), "setitem", since)


def install(cls=Symbol) -> None:
    """Puts the in-place methods (those eager tensors have, kiln/frontend/inplace.py) and
    item assignment on Symbols."""
    from . import inplace
    from .random import RANDOM_FILLS

    for name, compute in (inplace.INPLACE | RANDOM_FILLS).items():
        setattr(cls, name, _method(name, compute))
    for name, method in inplace.OPERATORS.items():
        setattr(cls, name, getattr(cls, method))
    cls.__setitem__ = setitem


def symbol_inplace(name: str, fn, x: Symbol):
    """`fn(x)` written into the Symbol x (an `inplace=True` of nn.functional)."""
    owner = _module_value_of(x) if isinstance(x, Variable) else None
    if owner is not None and not owner.requires_grad:
        return _update_module_value(owner, x, fn(x), name)
    _check_target(x, name)
    since = len(x.node.graph.nodes)
    return assign_inplace(x, fn(x), name, since)
