"""The op table's row type, in its own module so every table module imports the same class."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class OpCase:
    """One row: `fn(*inputs)` must equal `reference(*arrays)` for `make_args(rng, dtype)`."""

    op: str  # the registered IR op the row exercises (its graph must contain one)
    label: str
    fn: Callable
    make_args: Callable
    reference: Callable
    dtypes: tuple = ("float32", "float64")
    rtol: float | None = None
    atol: float | None = None

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"
