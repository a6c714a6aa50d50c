"""PyTorch's `out=` argument on the frontend's functions: `takes_out` adds it, and
`kiln.eager.out.write_out` writes the result (the elementwise functions take `out` in their
own signature, kiln/eager/dispatch.py, so their short path stays one call)."""

from __future__ import annotations

from ..eager.out import factory_out, takes_out

__all__ = ["factory_out", "takes_out"]
