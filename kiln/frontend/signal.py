"""`kn.signal`: PyTorch's `torch.signal` namespace; its `windows` module holds the window
functions (kiln/frontend/windows.py)."""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
