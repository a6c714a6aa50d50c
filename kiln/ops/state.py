"""Sources and state: placeholder, constant, variable, and the update and grouping ops."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, ShapeError
from .core import apply, defop, same_dtype, same_shape, unbatched_to


def _no_kernel(name):
    def kernel(xp, *arrays, out=None, **attrs):
        raise RuntimeError(f"{name} has no kernel: the runtime supplies its value")

    return kernel


def _source_shape(**attrs):
    return attrs["shape"]


def _source_dtype(**attrs):
    return dt.as_dtype(attrs["dtype"])


placeholder = defop(
    "placeholder", _source_shape, _source_dtype, _no_kernel("placeholder"), tags={"source"}
)
variable = defop("variable", _source_shape, _source_dtype, _no_kernel("variable"), tags={"source"})


def _constant(xp, out=None, *, value):
    array = xp.asarray(value.array)
    if out is None:
        return array.copy()
    out[...] = array
    return out


constant = defop(
    "constant",
    lambda value: value.array.shape,
    lambda value: value.array.dtype,
    _constant,
    tags={"source"},
)


def _identity(xp, x, out=None):
    if out is None:
        return x
    out[...] = x
    return out


stop_gradient = defop(
    "stop_gradient", same_shape, same_dtype, _identity, tags={"complex_linear", "view", "nondiff"},
    batch=lambda args, batched: apply("stop_gradient", args[0]),
)  # fmt: skip


def _after_batch(args, batched):
    x, token = args
    out = apply("after", x, token)
    return out if batched[0] else unbatched_to(out, token.shape[0])


def _after(xp, x, token, out=None):
    return _identity(xp, x, out)


# `after(x, token)`: x, read only once `token` exists. Recomputation in the backward pass
# (kn.checkpoint) starts from `after(input, cotangent)`, so the recomputed values can neither
# be made before the backward pass reaches them nor be merged with the originals by CSE.
after = defop(
    "after", lambda x, token: x, lambda x, token: x, _after,
    vjp=lambda ct, y, x, token: (ct, None), views=(0,), batch=_after_batch,
    tags={"complex_linear"},
)  # fmt: skip


def _assign_shape(var, value):
    if len(var) != len(value) or any(a != b and isinstance(a, int) and isinstance(b, int)
                                     for a, b in zip(var, value)):  # fmt: skip
        raise ShapeError(
            f"an update must keep the variable's shape {sh.format_shape(var)}, "
            f"got {sh.format_shape(value)}"
        )
    for a, b in zip(var, value):
        sh.require_equal(a, b, "update shape")
    return var


def _assign_dtype(var, value):
    if not np.can_cast(value, var, "same_kind"):
        raise DTypeError(f"an update of a {var} variable cannot take a {value} value")
    return var


# `assign(var, value)`: the value `var` takes after the run; applied with all other updates
# of the run, after its outputs, all or nothing. Its output is the new value.
def _assign(xp, var, value, out=None):
    return _identity(xp, value, out)


assign = defop(
    "assign", _assign_shape, _assign_dtype, _assign, tags={"complex_linear", "update", "nondiff"}
)


def _group(xp, *arrays, out=None):
    if out is None:
        return xp.asarray(True)
    out[...] = True
    return out


# `group(*values)`: a train op; runs its inputs (and their updates), returns nothing useful.
group = defop(
    "group", lambda *shapes: (), lambda *dtypes: dt.bool_, _group, tags={"group", "complex_linear"}
)


def _custom_value(xp, value, *inputs, out=None, function):
    return _identity(xp, value, out)


def _custom_vjp(ct, y, value, *inputs, function):
    return (None, *function.backward(ct, len(inputs)))


def _custom_batch(args, batched, function):
    """vmap of a Function: the value and inputs batched; the node's backward was written for
    one example, so a gradient of the batched node is refused (`function.batched()`); one
    taken inside vmap (`vmap(grad(f))`) is built before, of the example's node."""
    n = args[batched.index(True)].shape[0]
    args = [a if b else unbatched_to(a, n) for a, b in zip(args, batched)]
    return apply("custom_grad", *args, function=function.batched())


# `custom_grad(value, *inputs, function=f)`: `value` (the forward result of a user's
# `kn.autograd.Function`, computed without a gradient path), whose cotangent reaches `inputs`
# through `f.backward`, the user's backward (kiln/frontend/custom_function.py). `function`
# holds Python objects: such graphs run and differentiate but cannot be dumped.
custom_grad = defop(
    "custom_grad", lambda value, *inputs, function: value,
    lambda value, *inputs, function: value, _custom_value, vjp=_custom_vjp, views=(0,),
    tags={"complex_linear"}, batch=_custom_batch,
)  # fmt: skip


# Backward formulas of `with_grad` nodes, by name: `GRAD_FORMULAS[name](ct, *saved, *params)`
# gives the cotangent of the node's `x`, written with kiln ops (so gradients of gradients
# follow them). Modules that bind `with_grad` register theirs (kiln/nn/functional_act.py).
GRAD_FORMULAS: dict = {}


def _with_grad_value(xp, value, x, *saved, out=None, formula):
    return _identity(xp, value, out)


def _with_grad_vjp(ct, y, value, x, *saved, formula):
    name, *params = formula
    return (None, GRAD_FORMULAS[name](ct, *saved, *params), *(None for _ in saved))


def _with_grad_batch(args, batched, formula):
    n = args[batched.index(True)].shape[0]
    args = [a if b else unbatched_to(a, n) for a, b in zip(args, batched)]
    return apply("with_grad", *args, formula=formula)


# `with_grad(value, x, *saved, formula=(name, *params))`: `value` (computed from `x`, of its
# shape), whose cotangent `ct` reaches `x` as `GRAD_FORMULAS[name](ct, *saved, *params)`
# instead of through `value`'s own ops: a backward formula of PyTorch's kernels where
# differentiating kiln's composite rounds differently (half-precision activations, whose
# kernels round a saved buffer or order their float32 steps their own way). `saved` are
# values of `x`'s shape that the formula reads; they take no cotangent of their own.
with_grad = defop(
    "with_grad", lambda value, x, *saved, formula: value,
    lambda value, x, *saved, formula: value, _with_grad_value, vjp=_with_grad_vjp, views=(0,),
    batch=_with_grad_batch,
)  # fmt: skip
