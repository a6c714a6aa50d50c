"""Optimizers (PyTorch's `torch.optim`) for eager and graph mode."""

from . import graph_step, lr_scheduler
from .adaptive import Adadelta, Adamax, RAdam
from .algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from .lbfgs import LBFGS
from .optimizer import Optimizer, ParamGroup

graph_step.install()  # Symbol.backward: PyTorch's training step in kn.compile and graph mode

__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Optimizer",
    "ParamGroup",
    "RAdam",
    "RMSprop",
    "lr_scheduler",
]
