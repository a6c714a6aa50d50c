"""PyTorch's in-place view methods, which change a tensor's shape rather than its values
(`t_`, `transpose_`, `swapaxes_`, `swapdims_`, `squeeze_`, `unsqueeze_`, `as_strided_`), and
`detach_`, on eager Tensors and on Symbols; `resize_` and `resize_as_` on Symbols.

An eager tensor takes the view's data and history as its own (its memory stays the same). A
Symbol then stands for the view of its old value (`functionalize.rebind`): code after the
change sees the new shape, views taken before keep theirs, as PyTorch's share the memory.
"""

from __future__ import annotations

import numpy as np

from ..eager import forward_ad
from ..eager.tensor import Tensor, describe, make, version_of
from ..errors import AutogradError, GraphError, node_error
from ..graph.core import Symbol, user_site
from . import functionalize
from . import shape as s
from . import torch_more as tmore
from . import torch_shape as ts
from .layouts import restrided

__all__ = ["install"]


def _transpose(x, dim0, dim1):
    return s.transpose(x, dim0, dim1)


def _squeeze(x, dim=None):
    return s.squeeze(x) if dim is None else s.squeeze(x, dim)


def _resize(x, *sizes, size=None):
    """`resize_`'s new value: x's leading elements in row-major order, in the new shape (the
    elements beyond x's are zeros; PyTorch leaves them uninitialized)."""
    sizes = (size,) if size is not None else sizes
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    shape = tuple(int(d) for d in shape)
    n, have = int(np.prod(shape, dtype=np.int64)), int(np.prod(x.shape, dtype=np.int64))
    flat = s.reshape(x, (-1,))
    flat = flat[:n] if n <= have else s.pad(flat, [(0, n - have)])
    return s.reshape(flat, shape)


VIEWS = {
    "t_": lambda x: s.t(x),
    "transpose_": _transpose,
    "swapaxes_": lambda x, axis0, axis1: _transpose(x, axis0, axis1),
    "swapdims_": lambda x, dim0, dim1: _transpose(x, dim0, dim1),
    "squeeze_": _squeeze,
    "unsqueeze_": lambda x, dim: s.unsqueeze(x, dim),
    "as_strided_": tmore.as_strided,
}
# Symbols only (eager tensors reallocate their memory: kiln/eager/tensor.py)
RESIZES = {
    "resize_": _resize,
    "resize_as_": lambda x, the_template, memory_format=None: _resize(x, tuple(the_template.shape)),
}
del ts


def _alias(t: Tensor) -> Tensor:
    """Another tensor object for t's data, history and version counter: the view is taken of
    it, so that the tape keeps t's old shape when t takes the view's."""
    alias = make(t._data, t._device)
    if t._meta is not None:
        alias.grad_fn, alias._requires_grad = t.grad_fn, t._requires_grad
        alias._vc, alias._inference = version_of(t), t._inference
    return alias


def _eager(name: str, view):
    def method(self, *args, **kwargs):
        from .inplace import _check

        recording = _check(self, name, False)
        out = view(_alias(self), *args, **kwargs)
        self._data = out._data
        forward_ad.view_tangent(self, view, args, kwargs)  # a dual's tangent: the same view
        if recording:
            self.grad_fn, self._requires_grad = out.grad_fn, True
        # an in-place op for the version counter too, as PyTorch's: a value saved for a
        # gradient before the change (in its old shape) is then refused at backward, where
        # the tape would read the new shape
        from .inplace import _bump

        _bump(self, name)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: `t.{name}(…)` makes t the view `t.{name[:-1]}(…)` of its memory."
    return method


def _check_symbol(x: Symbol, name: str) -> None:
    """The refusals of a change of the Python object x: inputs (placeholders, Variables, a
    compiled function's arguments), whose object names the graph's input."""
    functionalize._check_target(x, name)
    argument = functionalize._ARGUMENTS.get(x.node.graph, {}).get(id(x))
    if argument is not None and argument[0] is x:
        raise node_error(
            GraphError,
            f"{name} of '{x.name}', an argument of the compiled function: kiln's compiled calls "
            f"change their arguments' values, not their shapes; write x = x.{name[:-1]}(…)",
            op=name, site=user_site(), inputs=[x],
        )  # fmt: skip


def _symbol(name: str, view):
    def method(self, *args, **kwargs):
        _check_symbol(self, name)
        new = view(self, *args, **kwargs)
        functionalize.rebind(self, new)
        restrided(self, new)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"`x.{name}(…)` on a Symbol: x then stands for its value in the new shape, made from "
        "its old value (kiln/frontend/functionalize.py's rebind)."
    )
    return method


def _view_error(x, name: str):
    return node_error(
        AutogradError,
        "Can't detach views in-place. Use detach() instead.",
        op=name, site=user_site(), inputs=[describe(x) if isinstance(x, Tensor) else x],
    )  # fmt: skip


def detach_(self):
    """In place: the tensor leaves the autograd graph (no history, no longer requires grad),
    as PyTorch's `detach_`; a view refuses (use `detach()`).

    >>> import kiln as kn
    >>> y = kn.ones(2, requires_grad=True) * 2
    >>> y.detach_() is y, y.requires_grad, y.grad_fn
    (True, False, None)
    """
    if isinstance(self, Symbol):
        _check_symbol(self, "detach_")
        if "view" in self.node.op.tags and self.node.op.name != "stop_gradient":
            raise _view_error(self, "detach_")
        functionalize.rebind(self, functionalize.core.call("stop_gradient", self))
        return self
    if self._base is not None:
        raise _view_error(self, "detach_")
    self.grad_fn, self._requires_grad = None, False
    forward_ad.view_tangent(self, None, (), {})  # (no longer dual, as PyTorch's)
    return self


def install(tensor_cls=Tensor, symbol_cls=Symbol) -> None:
    """Puts the in-place view methods and `detach_` on eager Tensors and on Symbols."""
    for name, view in VIEWS.items():
        if name != "as_strided_":
            setattr(symbol_cls, name, _symbol(name, view))
        setattr(tensor_cls, name, _eager(name, view))
    for name, resize in RESIZES.items():
        setattr(symbol_cls, name, _symbol(name, resize))
    tensor_cls.detach_ = symbol_cls.detach_ = detach_
