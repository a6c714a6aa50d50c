"""Utilities with PyTorch's names: `kiln.utils.data` (datasets, samplers, DataLoader)."""

from . import data

__all__ = ["data"]
