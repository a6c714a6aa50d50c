"""Pure `Graph -> Graph` passes, run from one ordered list (more arrive with later issues)."""

from ..graph.verify import verify

__all__ = ["verify"]
