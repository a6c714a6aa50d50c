"""Tracing: `kn.compile` and `kn.trace` run eager-style code on Symbols and compile the graph.

It sits above eager mode, the frontend and `nn` (it guards tensors, runs modules and records
compiled calls on the tape), so imports run one way: nothing below imports it.
"""

from .trace import CompiledFunction, Traced, compile, trace  # noqa: A004 (the API's name)

__all__ = ["CompiledFunction", "Traced", "compile", "trace"]
