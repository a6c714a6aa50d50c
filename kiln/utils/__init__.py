"""Utilities with PyTorch's names: `kiln.utils.data` (datasets, samplers, DataLoader) and
`kiln.utils.checkpoint` (activation checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
