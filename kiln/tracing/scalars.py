"""`.item()` and `.tolist()` of a traced value inside a function that `kn.compile` traces.

PyTorch code often ends a training step with `return loss.item()`, or prints the loss. While
tracing, the value does not exist yet, so `.item()` gives a `TracedScalar`: a stand-in that the
compiled function returns, on every call, as that call's Python number (or list), and that
`print` (replayed each call, see `prints`) shows as the number. Any other use while tracing
(arithmetic, comparison, `if`, `float()`) would need the value during the trace, so it raises
a GraphError naming the value and the line: it never becomes a constant of the program.

>>> import kiln as kn
>>> f = kn.compile(lambda x: (x * 2, (x * x).sum().item()))
>>> f(kn.tensor([1.0, 2.0]))
(tensor([2., 4.]), 5.0)
>>> f(kn.tensor([3.0, 1.0]))
(tensor([6., 2.]), 10.0)
"""

from __future__ import annotations

from ..errors import GraphError, ShapeMismatchError
from ..graph import core
from ..graph.core import user_site

__all__ = ["TracedScalar", "python_value"]


class TracedScalar:
    """`symbol.item()` (kind "item") or `symbol.tolist()` (kind "tolist") while traced: the
    compiled function returns it as a Python value; see the module docstring."""

    __slots__ = ("symbol", "kind", "site")

    def __init__(self, symbol, kind: str):
        self.symbol, self.kind, self.site = symbol, kind, user_site()

    def __repr__(self):
        return (
            f"<kiln traced value: {self.symbol.name}.{self.kind}(), known when the compiled "
            "function runs>"
        )

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        from .prints import _format

        return _format(self, spec)

    def _unknown(self, *_args, **_kwargs):
        raise GraphError(
            f".{self.kind}() of Symbol '{self.symbol.name}' ({self.symbol.op.name}, created at "
            f"{self.symbol.site}), taken at {self.site}, is used at {user_site()}: inside a "
            "function that kn.compile traces, the value exists only when the compiled function "
            "runs. Return it (each call returns that call's value) or print it; compute with "
            "the tensor itself (kn.where, kn.cond for choices) rather than with its Python value"
        )

    __bool__ = __float__ = __int__ = __index__ = __complex__ = __hash__ = _unknown
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _unknown
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unknown
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unknown
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __round__ = _unknown
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _unknown
    __len__ = __iter__ = __getitem__ = __contains__ = __array__ = _unknown


def python_value(value, kind: str):
    """A compiled call's result (a Tensor or array) as `.item()` or `.tolist()` give it."""
    return value.item() if kind == "item" else value.tolist()


def _deferred(symbol, kind: str):
    """`.item()`/`.tolist()` of `symbol`: a TracedScalar where this thread traces for
    kn.compile, else None (graph mode: the Symbol's own error)."""
    from .prints import tracing_now

    if not tracing_now():
        return None
    if kind == "item" and all(isinstance(d, int) for d in symbol.shape):
        size = 1
        for d in symbol.shape:
            size *= d
        if size != 1:
            raise ShapeMismatchError(
                f".item() of Symbol '{symbol.name}' ({symbol.type_str()}, created at "
                f"{symbol.site}) at {user_site()}: a Tensor with {size} elements cannot be "
                "converted to Scalar"
            )
    return TracedScalar(symbol, kind)


core.value_hook = _deferred
