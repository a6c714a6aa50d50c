"""How region ops run their bodies: each body is compiled once per device as its own program
(the one compile path: optimized, planned per signature over its own arena, which every
iteration reuses) and called once per iteration or branch taken."""

from __future__ import annotations

import numpy as np

from ..ops import control
from .backend import get_backend
from .program import Program


def run_body(region, xp):
    """A callable running `region`'s body on arrays of `xp`; the body's outputs come back as
    fresh arrays of that device."""
    device = "cpu" if xp is np else f"cuda:{xp.cuda.Device().id}"
    program = region.cache.get(device)
    if program is None:
        body = region.graph
        program = Program(body.outputs, body.inputs, {}, get_backend(device))
        region.cache[device] = program
    return lambda arrays: program.run(arrays, host=False)


control.use_body_runner(run_body)
