"""The checks a generated program runs (kiln/runtime/codegen.py): NaN/Inf in a node's result
(`check_numerics=True`, KILN_CHECKS=2) and a kernel run in place against the same kernel
out of place (KILN_CHECKS=1)."""

from __future__ import annotations

import numpy as np

from ..errors import GraphError, NumericsError, node_error

__all__ = ["check_in_place", "check_numerics"]


def check_numerics(value, node) -> None:
    """Raises NumericsError when `value` (the output of `node`) holds NaN or Inf."""
    if bool((value - value == 0).all()):  # NOTE: x - x is NaN exactly where x is NaN or Inf
        return
    host = np.asarray(value.get() if hasattr(value, "get") else value)
    nans = int(np.isnan(host).sum())
    infs = int(np.isinf(host).sum())
    raise node_error(
        NumericsError, f"produced {nans} NaN and {infs} Inf values among {host.size} "
        "(check_numerics)", op=node.op.name, name=node.name, site=node.site, inputs=node.inputs,
    )  # fmt: skip


def check_in_place(xp, value, reference, node) -> None:
    """KILN_CHECKS=1: raises GraphError when a kernel that wrote into an input's storage gave
    other values than the same kernel writing into fresh memory (NaN equal to NaN)."""
    if isinstance(value, tuple):  # the results of a fused node with several
        for v, r in zip(value, reference):
            check_in_place(xp, v, r, node)
        return
    if not bool(xp.array_equal(value, reference, equal_nan=value.dtype.kind in "fc")):
        raise node_error(GraphError, "the kernel run in place gave other values than out of "
                         "place (KILN_CHECKS=1): an aliasing bug in the memory plan",
                         op=node.op.name, name=node.name, site=node.site,
                         inputs=node.inputs)  # fmt: skip
