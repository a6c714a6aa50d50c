"""Tensors that a function made from constants while `kn.compile` traced it, and then wrote a
traced value into: the preallocated buffer of PyTorch code (`outs = torch.zeros(T, n)`, then
`outs[t] = h` in a loop; `out = torch.zeros(n, d); out.index_add_(0, rows, y)`).

A factory (`kn.zeros`, `kn.full`, `kn.tensor`...) called in a trace makes an eager Tensor of
constants, which the program cannot change. So the factories note the tensors they make in a
trace (`note_made`), and the results of ops on those only are noted too (`.to(dtype)`,
`.clone()`, `.tril()`, `* 2`: kiln/eager/trace_notes.py). The first in-place write of a
traced value into one of them makes it a `TracedLocal` (`promote`): a graph constant of its
values stands for it from then on, the write is that constant's in-place change
(kiln/frontend/functionalize.py), and every later use of the tensor (its methods, operators,
indexing, the ops it is passed to, returning it) is its graph value's. Each compiled call
then starts from the constant again, as each eager call makes its buffer afresh.

A tensor made before the trace (a global, a captured one) is state of the caller's, and a
traced value written into it is still refused, with what to write instead.

>>> import kiln as kn
>>> @kn.compile
... def running(x):
...     outs = kn.zeros(x.shape[0], 2)
...     h = x.new_zeros(2)
...     for t in range(x.shape[0]):
...         h = h + x[t]
...         outs[t] = h
...     return outs
>>> running(kn.ones(3, 2)).tolist()
[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
"""

from __future__ import annotations

import gc

from ..eager.tensor import Meta, Tensor
from ..eager.trace_notes import made_in_trace
from ..errors import GraphError, node_error
from ..graph.core import Symbol, get_default_graph, user_site
from ..graph.region import outermost
from ..ops.random import in_trace
from .core import constant

__all__ = ["TracedLocal", "end_trace", "promote", "symbol_of", "take_value"]


def _graph():
    return outermost(get_default_graph())


def promote(t: Tensor, op: str) -> Symbol | None:
    """`t`'s graph value, made now where t is a plain tensor a factory made in the trace being
    made (`made_in_trace`): t then stands for that value (a `TracedLocal`). None for any
    other tensor, or outside a trace. Raises where a view of t was taken before (it would
    keep t's old values: a plain tensor cannot follow the graph value)."""
    if not in_trace() or type(t) is not Tensor:
        return None
    graph = _graph()
    if not made_in_trace(t, graph) or t._requires_grad:
        return None
    if any(type(r) is Meta and r.base is t for r in gc.get_referrers(t)):
        raise node_error(
            GraphError,
            f"{op} writes a traced value into a tensor the compiled function made, of which "
            "a view was taken before; that view would keep the old values. Write the first "
            "traced value into the tensor before taking views of it",
            op=op, site=user_site(), inputs=[f"{t.dtype}{list(t.shape)}"],
        )  # fmt: skip
    _install()
    with graph.as_default():
        value = constant(t.detach().cpu().numpy().copy())
    graph.__dict__.setdefault("_traced_locals", {})[id(t)] = (t, value)
    t.__class__ = TracedLocal
    return value


def take_value(t: Tensor, value: Symbol, op: str) -> bool:
    """Makes `t`, a tensor the trace being made made, stand for `value` from now on (of
    another shape: an out= of a length the run binds, `kn.nonzero(x, out=out)`), as an eager
    call resizes it and writes the result into it. False where t is not such a tensor (a
    TracedLocal already: its graph value's shape is its own)."""
    if promote(t, op) is None:
        return False
    _graph().__dict__["_traced_locals"][id(t)] = (t, value)
    return True


def symbol_of(t) -> Symbol | None:
    """The graph value a `TracedLocal` stands for in the trace being made, else None."""
    if type(t) is not TracedLocal:
        return None
    entry = _graph().__dict__.get("_traced_locals", {}).get(id(t))
    return None if entry is None or entry[0] is not t else entry[1]


def end_trace(graph) -> dict:
    """Ends the trace of `graph`: its TracedLocals become plain tensors again (holding the
    values they were made with) and the notes go. Returns {id(tensor): its graph value} of
    those tensors, for the function's result that holds them."""
    locals_ = graph.__dict__.pop("_traced_locals", {})
    for t, _ in locals_.values():
        t.__class__ = Tensor
    graph.__dict__.pop("_made_in_trace", None)  # (kiln/eager/trace_notes.py)
    return {key: value for key, (_, value) in locals_.items()}


def _symbol(t) -> Symbol:
    value = symbol_of(t)
    if value is None:
        raise RuntimeError("a tensor a kn.compile trace wrote a traced value into is used "
                           "after that trace ended")  # fmt: skip
    return value


# what a TracedLocal keeps as a Tensor's, beside the private names: its type
_OWN = frozenset({"__class__"})


class TracedLocal(Tensor):
    """A tensor made in a kn.compile trace that a traced value was written into (`promote`):
    every attribute, method and operator is its graph value's (`symbol_of`)."""

    __slots__ = ()

    def __getattribute__(self, name: str):
        if name in _OWN or (name[0] == "_" and name[1] != "_"):  # kiln's own reads: a Tensor's
            return object.__getattribute__(self, name)
        symbol = _symbol(self)
        try:
            return getattr(symbol, name)
        except AttributeError:
            return object.__getattribute__(self, name)

    def _traced_value(self, graph):
        return _symbol(self)

    def _traced_assign(self, graph, value, op: str) -> None:
        _symbol(self).copy_(value)

    __hash__ = Tensor.__hash__


def _forward(name: str):
    def method(self, *args, **kwargs):
        return getattr(_symbol(self), name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


_KEPT = frozenset({"__init__", "__hash__", "__getattribute__", "__setattr__", "__delattr__"})


def _install() -> None:
    """TracedLocal's special methods (Python looks them up on the type, not through
    `__getattribute__`): each a Symbol has, its Symbol's. Once, at the first promotion: the
    frontend has given Symbol all its methods by then."""
    if getattr(TracedLocal, "_installed", False):
        return
    for name, value in vars(Symbol).items():
        if name.startswith("__") and name.endswith("__") and callable(value) and name not in _KEPT:
            setattr(TracedLocal, name, _forward(name))
    TracedLocal._installed = True
