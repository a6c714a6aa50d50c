"""Pure `Graph -> Graph` passes on program graphs, run from one ordered list."""

from __future__ import annotations

import time

from ..debug import checks_level, debug_level, log
from ..graph.verify import verify
from .bias_relu import fuse_bias_relu, fuse_bias_update, fuse_relu_grad_bias
from .fuse import fuse_elementwise
from .gemm import fuse_gemm
from .memory import MemoryPlan, PlanError, lower_bound, plan_offsets, validate_plan
from .program import extract, live_nodes, rebuild
from .schedule import schedule
from .simplify import simplify
from .softmax_xent import fuse_softmax_xent

# The optimizing passes, in order: (name, Graph -> Graph).
PIPELINE: list = [
    ("simplify", simplify), ("fuse_gemm", fuse_gemm), ("fuse_softmax_xent", fuse_softmax_xent),
    ("fuse_bias_relu", fuse_bias_relu), ("fuse_bias_update", fuse_bias_update),
    ("fuse_elementwise", fuse_elementwise),
]  # fmt: skip


def optimize(graph, passes=None):
    """Runs `passes` (default: PIPELINE) in order; each logs one line at KILN_DEBUG >= 1
    (time, nodes before -> after) and is verified at KILN_CHECKS >= 1."""
    for name, fn in PIPELINE if passes is None else passes:
        before = len(graph.nodes)
        start = time.perf_counter()
        graph = _carry(graph, fn(graph), name)
        graph.variables = [n.ref for n in graph.nodes if n.op.name == "variable"]
        ms = (time.perf_counter() - start) * 1e3
        log(1, f"after: {name} ({ms:.1f} ms), {before} -> {len(graph.nodes)} nodes")
        if debug_level() >= 2:
            log(2, str(graph))
        if checks_level() >= 1:
            verify(graph)
    return graph


def _carry(before, after, name: str):
    """`after` with what every pass keeps whatever it rewrites: the user graph it came from,
    the run-time dim checks of the nodes extracted (never matched by node names), and the
    passes that ran (a mark that it is not to be differentiated)."""
    if after is not before:
        after.source = before.source
        after.constraints = list(before.constraints)
    after.optimized = (*before.optimized, name)
    return after


__all__ = [
    "verify", "extract", "live_nodes", "rebuild", "optimize", "PIPELINE", "schedule", "simplify",
    "fuse_elementwise", "fuse_gemm", "fuse_softmax_xent", "fuse_bias_relu", "fuse_bias_update",
    "fuse_relu_grad_bias",
    "MemoryPlan", "PlanError", "lower_bound", "plan_offsets", "validate_plan",
]  # fmt: skip
