"""Modules in PyTorch's style that build graph-mode Variables: `kn.nn.Linear`, `kn.nn.MLP`…"""

from .conv import Conv2d, MaxPool2d
from .layers import (
    GELU,
    MLP,
    BatchNorm1d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from .module import Module, Parameter, pending_updates, updates_for

__all__ = [
    "BatchNorm1d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "LayerNorm",
    "Linear",
    "MLP",
    "MaxPool2d",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "updates_for",
]
