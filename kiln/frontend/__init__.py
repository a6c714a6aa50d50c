"""The user API: sources, op functions, operators on Symbol, random, dumps."""

from . import methods, random
from .autodiff import __all__ as _autodiff_all
from .autodiff import grad, hessian, jacobian, stop_gradient
from .core import Variable, constant, placeholder
from .math import *  # noqa: F403
from .math import __all__ as _math_all
from .nn_functional import *  # noqa: F403
from .nn_functional import __all__ as _nn_all
from .shape import *  # noqa: F403
from .shape import __all__ as _shape_all

methods.install()

__all__ = ["placeholder", "constant", "Variable", *_math_all, *_shape_all, *_nn_all, *_autodiff_all]
