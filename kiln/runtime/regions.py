"""How region ops run their bodies: each body is compiled once per device as its own program
(the one compile path: optimized, planned per signature over its own arena, which every
iteration reuses) and called once per iteration or branch taken. A body run by a program
that checks numerics checks its own values too: the error names the body's node and its site,
and the region op adds the iteration."""

from __future__ import annotations

import numpy as np

from ..ops import control
from .backend import get_backend
from .program import BODY_NUMERICS, Program


def run_body(region, xp, into: bool = False):
    """`region`'s body compiled for the device of the array module `xp`: a `Program` whose
    `run(arrays, host=False)` gives its outputs as fresh arrays, or, with `into`, whose
    `run(arrays, host=False, outs=arrays)` writes them into the caller's arrays (of
    `output_shapes(arrays)`): a loop's carry buffers and its stacked ys' slots."""
    device = "cpu" if xp is np else f"cuda:{xp.cuda.Device().id}"
    numerics = getattr(BODY_NUMERICS, "on", False)  # the running program checks numerics
    key = (device, into, "numerics") if numerics else (device, into)
    program = region.cache.get(key)
    if program is None:
        body = region.graph
        program = Program(body.outputs, body.inputs, {}, get_backend(device), into=into,
                          check_numerics=numerics)  # fmt: skip
        region.cache[key] = program
    return program


control.use_body_runner(run_body)
