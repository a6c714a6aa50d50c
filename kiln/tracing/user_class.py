"""What a traced function's own code sees of its values' classes while kn.compile traces it.

Inside the trace a tensor is a graph value (a `Symbol`). PyTorch code asks
`isinstance(x, torch.Tensor)` or `isinstance(w, nn.Parameter)` and takes branches on the
answer, so a compiled function must get the answer eager code gets: the value's eager class.
kiln's own modules keep seeing the Symbol (they build the graph from it), and so does graph
mode, where no trace runs.
"""

from __future__ import annotations

from ..eager.tensor import Tensor
from ..graph import core
from ..nn.parameter import owner_of


def _seen_class(symbol):
    owner = owner_of(symbol)  # (a module's Parameter or Buffer: its Variable in the trace)
    return Tensor if owner is None else type(owner)


class eager_classes:  # noqa: N801
    """While a kn.compile trace runs the function's code: the code sees a graph value's
    eager class (`isinstance(x, kn.Tensor)` is True, as eagerly).

    >>> import kiln as kn
    >>> kn.compile(lambda x: isinstance(x * 2, kn.Tensor))(kn.ones(2))
    True
    """

    def __enter__(self):
        self.before = core.USER_CLASS[0]
        core.USER_CLASS[0] = _seen_class

    def __exit__(self, *exc):
        core.USER_CLASS[0] = self.before
        return False
