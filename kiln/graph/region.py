"""Regions: the sub-graphs that region ops (cond, while_loop, scan) hold, and captures, which
turn the Symbols a body reads from enclosing graphs into explicit operands of its op."""

from __future__ import annotations

import contextlib
import threading

from .core import Graph, Symbol
from .opdef import REGISTRY


class Region:
    """A sub-graph: parameters `graph.inputs` (placeholders) and results `graph.outputs`.

    A region op's attr; it hashes by identity (two bodies are never compared by value).
    `cache` holds what the runtime compiled of it, per device. `extends`: a Region whose
    results are the first results of this one, computed the same way (a scan's forward body
    that also returns residuals for its gradient): simplify then runs one scan for both.

    >>> import kiln as kn
    >>> body = kn.Graph()
    >>> with body.as_default():
    ...     x = kn.placeholder(kn.float32, (3,), name="x")
    ...     body.inputs, body.outputs = [x], [x * 2.0]
    >>> Region(body)
    Region(f32[3] -> f32[3])
    """

    __slots__ = ("graph", "cache", "extends", "__weakref__")

    def __init__(self, graph: Graph, extends: Region | None = None):
        self.graph = graph
        self.cache: dict = {}
        self.extends = extends

    @property
    def inputs(self) -> list:
        return self.graph.inputs

    @property
    def outputs(self) -> list:
        return self.graph.outputs

    def __repr__(self):
        ins = ", ".join(s.type_str() for s in self.inputs)
        outs = ", ".join(s.type_str() for s in self.outputs)
        return f"Region({ins} -> {outs})"


def regions_of(node) -> list:
    """The (attr name, Region) pairs of a node, in attr order."""
    return [(k, v) for k, v in node.attrs.items() if isinstance(v, Region)]


class _Frame:
    """One body being traced: its graph, the graph it is nested in, and its captures."""

    def __init__(self, graph: Graph, parent: Graph):
        self.graph = graph
        self.parent = parent
        self.captured: dict[int, Symbol] = {}  # id(Symbol of parent) -> its placeholder here
        self.outer: list[Symbol] = []  # the captured Symbols of parent, in capture order


_local = threading.local()


def _frames() -> list:
    if not hasattr(_local, "frames"):
        _local.frames = []
    return _local.frames


def innermost() -> Graph | None:
    """The graph of the body being traced on this thread, if any."""
    frames = _frames()
    return frames[-1].graph if frames else None


def outermost(graph: Graph) -> Graph:
    """The graph around every body being traced, for `graph` one of those bodies (else
    `graph`): where state such as a module's Variables belongs (bodies capture it)."""
    frames = _frames()
    if frames and any(f.graph is graph for f in frames):
        return frames[0].parent
    return graph


@contextlib.contextmanager
def tracing(graph: Graph, parent: Graph):
    """Builds a body into `graph` (the default graph inside): ops on Symbols of `parent` or of
    the graphs around it go into `graph`, their operands captured (see `capture`)."""
    frame = _Frame(graph, parent)
    _frames().append(frame)
    try:
        with graph.as_default():
            yield frame
    finally:
        _frames().pop()


def _capture(sym: Symbol, k: int) -> Symbol:
    frames = _frames()
    frame = frames[k]
    if sym.graph is frame.graph:
        return sym
    outer = _capture(sym, k - 1) if k > 0 else sym
    if outer.graph is not frame.parent:
        return sym  # not of the enclosing graphs: bind reports the mix of graphs
    found = frame.captured.get(id(outer))
    if found is None:
        attrs = {"shape": outer.shape, "dtype": outer.dtype}
        base = outer.name.rsplit("/", 1)[-1]
        node = frame.graph.add_node(REGISTRY["placeholder"], (), attrs, base, outer.site,
                                    outer.shape, outer.dtype)  # fmt: skip
        node.site = outer.site
        found = frame.captured[id(outer)] = node.out
        frame.outer.append(outer)
    return found


def capture(sym: Symbol) -> Symbol:
    """`sym` as a value of the innermost body: itself if it is one, else the placeholder that
    stands for it there (made once, and threaded through every body in between)."""
    frames = _frames()
    return _capture(sym, len(frames) - 1) if frames else sym


def capture_args(args) -> tuple:
    """The operands of an op built while a body is traced: when any is a Symbol of the body or
    of a graph around it, the op goes into the body and every Symbol operand is captured."""
    frames = _frames()
    if not frames:
        return args
    chain = {id(frames[0].parent), *(id(f.graph) for f in frames)}
    if not any(isinstance(a, Symbol) and id(a.graph) in chain for a in args):
        return args
    return tuple(capture(a) if isinstance(a, Symbol) else a for a in args)
