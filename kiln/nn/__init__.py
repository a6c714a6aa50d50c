"""Modules in PyTorch's style that build graph-mode Variables: `kn.nn.Linear`, `kn.nn.MLP`…"""

from . import init
from .containers import Identity, ModuleDict, ModuleList, Sequential
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
    Sigmoid,
    Tanh,
)
from .module import Buffer, Module, Parameter, RemovableHandle, pending_updates, updates_for

__all__ = [
    "BatchNorm1d",
    "Buffer",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "Identity",
    "LayerNorm",
    "Linear",
    "MLP",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ReLU",
    "RemovableHandle",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "updates_for",
]
