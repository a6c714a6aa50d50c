"""Optimizers (PyTorch's `torch.optim`) for eager and graph mode."""

from . import graph_step, lr_scheduler, swa_utils
from .adaptive import Adadelta, Adamax, NAdam, RAdam, SparseAdam
from .algorithms import SGD, Adagrad, Adam, AdamW, RMSprop
from .classic import ASGD, Rprop
from .lbfgs import LBFGS
from .matrix import Adafactor, Muon
from .optimizer import Optimizer, ParamGroup
from .state import swap_in_optimizer_params_and_state

graph_step.install()  # Symbol.backward: PyTorch's training step in kn.compile and graph mode

__all__ = [
    "ASGD",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "ParamGroup",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]
