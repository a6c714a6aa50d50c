"""The tensors a kn.compile'd function makes while it is traced: a factory's results
(`kn.zeros`, `kn.full`, `kn.tensor`...) and the results of ops on those only (`.to(dtype)`,
`.float()`, `.clone()`, `.tril()`, `* 2`: kiln/eager/dispatch.py's `_after` sees every eager
result while a trace runs). Each call of the eager function makes them afresh, so a traced
value may be written into one (kiln/frontend/trace_locals.py); a tensor from outside the
function (a global, a captured one), or made from one, is the caller's and is not noted.

>>> import kiln as kn
>>> @kn.compile
... def f(x):
...     b = kn.zeros(3).to(kn.float64)  # a copy of a factory's result
...     b[0] = x[0]
...     return b
>>> f(kn.ones(3)).tolist()
[1.0, 0.0, 0.0]
"""

from __future__ import annotations

import weakref

from ..graph.core import get_default_graph
from ..graph.region import outermost
from .tensor import Tensor

__all__ = ["READ_IN_TRACE", "made_in_trace", "note_derived", "note_made", "note_read"]

# While kn.compile traces (kiln/tracing/trace.py): a set per trace of the ids of the eager
# tensors it read (an eager op's operands, a graph constant's value: `note_read`).
READ_IN_TRACE: list[set] = []


def note_made(t: Tensor) -> None:
    """Notes that a factory made `t` in the kn.compile trace being made."""
    graph = outermost(get_default_graph())
    graph.__dict__.setdefault("_made_in_trace", {})[id(t)] = weakref.ref(t)


def made_in_trace(t: Tensor, graph) -> bool:
    """Whether `t` was made in the kn.compile trace of `graph` (`note_made`, `note_derived`)."""
    ref = graph.__dict__.get("_made_in_trace", {}).get(id(t))
    return ref is not None and ref() is t


def note_derived(out: Tensor, args) -> None:
    """Notes `out`, the result of an op on `args` (not a view of one), as made in the trace
    being made where every tensor among `args` was (other arguments are Python or NumPy
    constants). Called while kn.compile traces only."""
    graph = outermost(get_default_graph())
    made = graph.__dict__.get("_made_in_trace")
    if not made:
        return
    for a in args:
        if isinstance(a, Tensor):
            ref = made.get(id(a))
            if ref is None or ref() is not a:
                return
    made[id(out)] = weakref.ref(out)


def note_read(args) -> None:
    """Notes the tensors among `args`, an eager op's operands, as read by the kn.compile trace
    being made (`READ_IN_TRACE`), where one records them."""
    if READ_IN_TRACE:
        READ_IN_TRACE[-1].update(id(a) for a in args if isinstance(a, Tensor))


def check_grad_read(t) -> None:
    """Refuses, while a kn.compile trace runs, a read of the `.grad` of a leaf `t` that the
    trace takes as a constant: the value would be the traced call's on every call. The
    error names `t` (`written`), so the trace is made again with `t` as an input where kiln
    finds it among what the function reaches (kiln/tracing/trace.py `_lift_written`)."""
    from ..ops.random import in_trace  # NOTE: lazy: kiln.ops builds on the eager Tensor

    if not in_trace():
        return
    from ..errors import GraphError
    from .tensor import describe

    error = GraphError(
        f"kn.compile: the traced code reads the .grad of {describe(t)}, a tensor it does not "
        "take as an input (kiln finds no name, list item or attribute of the function's it "
        "is read through): the .grad of each call cannot reach the program. Read the tensor "
        "through the function's closure, globals or arguments"
    )
    error.written = t
    raise error
