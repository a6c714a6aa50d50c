"""The environment flags, read when used (see docs/debugging.md for their levels):
`KILN_DEBUG` (what kiln tells you, on stderr), `KILN_CHECKS` (what kiln verifies) and
`KILN_EXACT` (off unless set to 1: planned programs run kiln's own float32 exp and tanh in
every path and let compiled fused loops call libm, within 2 ulp of NumPy's kernels but for
three inputs of exp, docs/debugging.md; `KILN_EXACT=1` gives NumPy's bits)."""

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
    """Whether KILN_EXACT is on (`KILN_EXACT=1`; off by default, or set to 0), read when a
    program is planned: fused loops then compile only ops that give NumPy's bits, and every
    other program runs NumPy's kernels, so a compiled function gives eager mode's bits. Off,
    float32 exp and tanh run kiln's own kernels (kiln/ops/vecmath.py) in every path of a
    planned program, and fused loops may call libm functions (kiln/ops/fused_codegen.py's
    LIBM): results within 2 ulp of NumPy's (docs/debugging.md)."""
    value = os.environ.get("KILN_EXACT", "0").strip() or "0"
    return value != "0"


def log(level: int, message: str) -> None:
    """Writes `kiln: message` to stderr when KILN_DEBUG >= level."""
    if debug_level() >= level:
        print(f"kiln: {message}", file=sys.stderr, flush=True)
