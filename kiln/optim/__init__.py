"""Optimizers (PyTorch's `torch.optim`) for eager and graph mode."""

from . import lr_scheduler
from .algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from .lbfgs import LBFGS
from .optimizer import Optimizer, ParamGroup

__all__ = [
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "LBFGS",
    "Optimizer",
    "ParamGroup",
    "RMSprop",
    "lr_scheduler",
]
