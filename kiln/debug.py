"""The environment flags, read when used (see docs/debugging.md for their levels):
`KILN_DEBUG` (what kiln tells you, on stderr), `KILN_CHECKS` (what kiln verifies) and
`KILN_EXACT` (on unless set to 0: compiled kernels give NumPy's bits; `KILN_EXACT=0` runs
kiln's own float32 exp, log, tanh and sigmoid in every path of a planned program, and lets
compiled fused loops call libm, within 2 ulp of NumPy)."""

from __future__ import annotations

import os
import sys


def _level(name: str) -> int:
    value = os.environ.get(name, "0").strip() or "0"
    try:
        return int(value)
    except ValueError:
        return 1  # any other non-empty value means "on"


def debug_level() -> int:
    return _level("KILN_DEBUG")


def checks_level() -> int:
    return _level("KILN_CHECKS")


def exact_mode() -> bool:
    """Whether KILN_EXACT is on (the default; `KILN_EXACT=0` turns it off): fused loops then
    compile only ops that give NumPy's bits, and every other program runs NumPy's kernels
    (read when a program is planned). Exact by default, so that two programs grouping the same
    ops differently (a recomputation under a memory budget, an ONNX round trip) give the same
    bits."""
    value = os.environ.get("KILN_EXACT", "1").strip() or "1"
    return value != "0"


def log(level: int, message: str) -> None:
    """Writes `kiln: message` to stderr when KILN_DEBUG >= level."""
    if debug_level() >= level:
        print(f"kiln: {message}", file=sys.stderr, flush=True)
