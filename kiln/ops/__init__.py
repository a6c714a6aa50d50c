"""The op registry: one `OpDef` per primitive, in one module of its family; `bind` applies one."""

from ..graph.opdef import REGISTRY, OpDef
from . import (
    bitcast,
    complex_values,
    control,
    dynamic,
    elementwise,
    elementwise_special,
    elementwise_torch,
    epilogue,
    fft,
    fused,
    index,
    linalg,
    linalg_decomp,
    linalg_eig,
    linalg_factor,
    linalg_geqrf,
    linalg_ldl,
    losses,
    movement,
    multi,
    nn,
    nn_grad,
    random,
    random_gamma,
    reduce,
    scan,
    sort,
    state,
)
from .core import bind, defop

__all__ = ["REGISTRY", "OpDef", "bind", "defop"]
_FAMILIES = (
    bitcast, complex_values, control, dynamic, elementwise, elementwise_special, elementwise_torch,
    epilogue, fft, fused, index,
    linalg, linalg_decomp, linalg_eig, linalg_factor, linalg_geqrf, linalg_ldl, losses, movement,
    multi, nn, nn_grad,
    random, random_gamma, reduce,
    scan, sort,
    state,
)  # fmt: skip
