"""Modules in PyTorch's style that build graph-mode Variables: `kn.nn.Linear`, `kn.nn.MLP`…"""

from . import functional, init, utils
from .activation import ELU, LeakyReLU, LogSoftmax, SiLU, Softmax, Softplus
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
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Buffer, Module, Parameter, RemovableHandle, pending_updates, updates_for
from .rnn import GRU, LSTM, RNN, RNNBase

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "RNNBase",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "Buffer",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "HuberLoss",
    "Identity",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MLP",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "RemovableHandle",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "functional",
    "init",
    "updates_for",
    "utils",
]
