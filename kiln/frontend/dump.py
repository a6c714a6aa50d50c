"""`dump`: a graph or program as text, JSON or DOT; `load_graph`: a graph back from JSON."""

from __future__ import annotations

from ..errors import ArgumentError, ArgumentTypeError
from ..graph.core import Graph, Symbol
from ..graph.dot import to_dot
from ..graph.printer import format_graph, format_program
from ..graph.serialize import MAX_CHARS, MAX_ELEMENTS, MAX_WORK, from_json, graph_program, to_json
from ..passes.program import prune
from ..runtime.function import Function

FORMATS = ("text", "json", "dot")


def dump(obj, format: str = "text") -> str:  # noqa: A002 (the API's name)
    """The program of `obj` as `"text"` (the IR), `"json"` (for `load_graph`) or `"dot"`.

    `obj` is a Graph (its inputs, or placeholders, and its outputs, or unused values), a Symbol
    or a list of them (the nodes they need), a Function (its pruned program, inputs, outputs and
    updates), or a traced function (its `.function`). Dumps are deterministic: the same program
    gives the same text in any process.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, ("n",), name="x")
    ...     y = kn.exp(x) * 2.0
    >>> print(dump(y, "text"), end="")  # doctest: +ELLIPSIS
    { lambda x:f32[n] .
        t0:f32[n] = exp x  # ...
        t1:f32[n] = mul t0 2.0:f32[]  # ...
      in (t1) }
    >>> dump([y], "dot").splitlines()[0]
    'digraph kiln {'
    """
    if format not in FORMATS:
        raise ArgumentError(f"unknown dump format {format!r}: use 'text', 'json' or 'dot'")
    nodes, inputs, outputs, updates = _program(obj)
    if format == "json":
        program = obj.function if isinstance(getattr(obj, "function", None), Function) else obj
        graph = program.graph if isinstance(program, Function) else program
        optimized = graph.optimized if isinstance(graph, Graph) else ()
        return to_json(nodes, inputs, outputs, updates, optimized)
    if format == "dot":
        return to_dot(nodes, inputs, outputs, updates)
    if isinstance(obj, Graph) and not updates:
        return format_graph(obj)
    return format_program(nodes, inputs, outputs, list(updates.items()))


def _program(obj):
    """`(nodes, inputs, outputs, updates)` of what `dump` takes."""
    if isinstance(getattr(obj, "function", None), Function):  # a traced function
        obj = obj.function
    if isinstance(obj, Function):  # the optimized program it runs
        g = obj.program.graph
        return g.nodes, g.inputs, g.outputs, g.updates
    if isinstance(obj, Graph):
        return graph_program(obj)
    symbols = [obj] if isinstance(obj, Symbol) else obj
    if not isinstance(symbols, (list, tuple)) or not all(isinstance(s, Symbol) for s in symbols):
        raise ArgumentTypeError(
            "dump() takes a Graph, a Symbol or a list of Symbols, or a Function; "
            f"got {type(obj).__name__}"
        )
    nodes = prune(list(symbols), [], {})
    inputs = [n.out for n in nodes if n.op.name == "placeholder"]
    return nodes, inputs, list(symbols), {}


def load_graph(
    text,
    *,
    max_chars: int | None = MAX_CHARS,
    max_elements: int | None = MAX_ELEMENTS,
    max_work: int | None = MAX_WORK,
    trusted: bool = False,
) -> Graph:
    """The Graph of `dump(..., "json")` text, with `.inputs`, `.outputs` and `.updates` (a dict
    Variable -> Symbol); it runs and gives the same results as the original. Malformed,
    truncated or hostile text (or anything but a str) raises GraphFormatError naming the node
    and the reason; nothing in it is evaluated, and every attr must be one its op takes.

    A file is untrusted: a few hundred bytes can declare values that would take forever, or
    all memory, to compute. So the loader refuses text over `max_chars` characters (2**28), a
    value over `max_elements` elements (2**28, 1 GiB of float32), and a graph whose values hold
    over `max_work` elements together (2**32: a cheap, linear estimate of its work; a matmul of
    two values within the limits may still take minutes, so lower the limits where that
    matters). Symbolic dims count as their coefficient. None lifts one limit; `trusted=True`
    lifts all three, for files you wrote yourself.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, ("n",), name="x")
    ...     y = kn.exp(x) * 2.0
    >>> g = load_graph(dump(y, "json"))
    >>> f = kn.function(g.inputs, g.outputs)
    >>> f(np.zeros(2, np.float32))
    [array([2., 2.], dtype=float32)]
    >>> load_graph(b"{}")
    Traceback (most recent call last):
    kiln.errors.GraphFormatError: a kiln graph is JSON text (a str), got bytes
    >>> with kn.Graph().as_default():
    ...     big = kn.exp(kn.placeholder(kn.float32, (40000, 40000), name="big"))
    >>> load_graph(dump(big, "json"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    kiln.errors.GraphFormatError: node 0 ('big'): op placeholder gives f32[40000,40000], ...
    >>> load_graph(dump(big, "json"), trusted=True).outputs
    [<Symbol exp:f32[40000,40000] = exp>]
    """
    if trusted:
        max_chars = max_elements = max_work = None
    return from_json(text, max_chars=max_chars, max_elements=max_elements, max_work=max_work)
