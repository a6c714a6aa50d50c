"""torch.func.vmap's argument forms and refusals around kiln's vmap (kiln/tracing/transforms.py):
in_dims that do not fit the inputs, out_dims in pytree forms (None for an output returned
as it is, dicts), outputs that are not tensors, `chunk_size` and `randomness` (random ops
refused, drawn once for the batch, or drawn per example).

>>> import kiln as kn
>>> kn.func.vmap(lambda a: (a * 2, kn.ones(2)), out_dims=(1, None))(kn.ones(3, 2))[1]
tensor([1., 1.])
"""

from __future__ import annotations

from ..errors import ArgumentError, IndexOutOfRangeError, UsageError
from ..graph.core import Symbol

RANDOMNESS = ("error", "different", "same")
_RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def check_chunk_size(chunk_size) -> None:
    """torch.func's refusal of a chunk_size that is not None nor positive."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ArgumentError(
            f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})"
        )


def check_randomness(randomness) -> None:
    if randomness not in RANDOMNESS:
        raise UsageError("Only allowed values for randomness are 'error', 'different', or "
                         f"'same'. Got {randomness}")  # fmt: skip


def check_in_dims(f, in_dims) -> None:
    """in_dims is an int, None or a (nested) tuple (lists inside it, for list arguments)."""
    if in_dims is not None and not isinstance(in_dims, (int, tuple)):
        raise ArgumentError(f"vmap({_name(f)}, in_dims={in_dims}, ...)(<inputs>): expected "
                            "`in_dims` to be int or a (potentially nested) tuple matching the "
                            f"structure of inputs, got: {type(in_dims)}.")  # fmt: skip


def check_out_dims(f, out_dims) -> None:
    def fits(d):
        if d is None or type(d) is int:
            return True
        if isinstance(d, (tuple, list)):
            return all(fits(x) for x in d)
        return isinstance(d, dict) and all(fits(x) for x in d.values())

    if not fits(out_dims):
        raise ArgumentError(f"vmap({_name(f)}, ..., out_dims={out_dims}): `out_dims` must be an "
                            "int, None or a python collection of ints representing where in "
                            "the outputs the vmapped dimension should appear.")  # fmt: skip


def check_leaves_mapped(f, in_dims, value, axis, i: int) -> None:
    """The values an int of in_dims covers (a leaf, or all of a tuple, list or dict) are
    tensors: refuses a number or other value among them, as torch.func's."""
    from .func_checks import leaves_of

    for leaf in leaves_of(value):
        if leaf is not None and not isinstance(leaf, Symbol):
            check_mapped(f, in_dims, leaf, axis, i)


def check_mapped(f, in_dims, value, axis, i: int) -> None:
    """A leaf of argument `i` that in_dims maps at `axis`: a tensor with that dim."""
    where = f"vmap({_name(f)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ArgumentError(f"{where}: in_dims for argument {i} must be an int or None, got "
                            f"{axis!r}")  # fmt: skip
    if not isinstance(value, Symbol):
        raise ArgumentError(f"{where}: Got in_dim={axis} for an input but the input is of type "
                            f"{type(value)}. We cannot vmap over non-Tensor arguments, please use "
                            "None as the respective in_dim")  # fmt: skip
    ndim = value.ndim
    if not -ndim <= axis < ndim:
        raise ArgumentError(f"{where}: Got in_dim={axis} for some input, but that input is a "
                            f"Tensor of dimensionality {ndim} so expected in_dim to satisfy "
                            f"-{ndim} <= in_dim < {ndim}.")  # fmt: skip


def out_dim_checked(axis: int, ndim: int) -> int:
    """`axis` of a batched output of `ndim` dims (the batch's included), non-negative."""
    if not -ndim <= axis < ndim:
        raise IndexOutOfRangeError(f"Dimension out of range (expected to be in range of "
                                   f"[{-ndim}, {ndim - 1}], but got {axis})")  # fmt: skip
    return axis % ndim


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def walk_outputs(f, out, out_dims, visit):
    """`out` rebuilt with each leaf replaced by `visit(leaf, its out_dim)`: out_dims an int or
    None for all, or a tuple, list or dict of the outputs' structure (a prefix of it: an entry
    covers a whole sub-structure), as torch.func's. A single output takes a 1-tuple too."""

    def fail():
        raise ArgumentError(f"vmap({_name(f)}, ..., out_dims={out_dims})(<inputs>): out_dims is "
                            "not compatible with the structure of `outputs`.")  # fmt: skip

    def walk(value, dims):
        is_dict = isinstance(value, dict)  # (an OrderedDict comes back one)
        if is_dict or type(value) in (list, tuple) or _is_namedtuple(value):
            if isinstance(dims, dict):
                if not is_dict or set(dims) != set(value):
                    fail()
                return type(value)((k, walk(v, dims[k])) for k, v in value.items())
            if isinstance(dims, (tuple, list)):
                if is_dict or len(dims) != len(value):
                    fail()
                items = [walk(v, d) for v, d in zip(value, dims)]
            elif is_dict:
                return type(value)((k, walk(v, dims)) for k, v in value.items())
            else:
                items = [walk(v, dims) for v in value]
            return type(value)(*items) if _is_namedtuple(value) else type(value)(items)
        if isinstance(dims, (tuple, list, dict)):
            fail()
        return visit(value, dims)

    if isinstance(out_dims, (tuple, list)) and len(out_dims) == 1 and hasattr(out, "shape"):
        out_dims = out_dims[0]
    return walk(out, out_dims)


def not_a_tensor(f, value) -> ArgumentError:
    return ArgumentError(f"vmap({_name(f)}, ...): `{_name(f)}` must only return Tensors, got "
                         f"type {type(value)}. Did you mean to set out_dims= to None for "
                         "output?")  # fmt: skip


def batched_for_none(f) -> ArgumentError:
    return ArgumentError(f"vmap({_name(f)}, ...): `{_name(f)}` can not return a BatchedTensor "
                         "when out_dim is None")  # fmt: skip


def random_values(graph, since: int, n, randomness: str) -> dict:
    """The random draws `f` made (the random nodes of `graph` from count `since` on), as
    vmap's `randomness` takes them: refused ('error'), left as one draw for the whole batch
    ('same'), or {id(draw): a draw of n times as many values} for the batch ('different')."""
    from ..ops.core import bind_graph
    from ..ops.random import next_seed

    draws = [node for node in graph.nodes[since:] if "random" in node.op.tags]
    if not draws or randomness == "same":
        return {}
    if randomness == "error":
        raise UsageError(_RANDOM_ERROR)
    batched = {}
    for node in draws:
        attrs = {**node.attrs, "shape": (n, *node.attrs["shape"]), "seed": next_seed()}
        batched[id(node.out)] = bind_graph(node.op, (), attrs, None, graph)
    return batched


def depends(values, batched: dict) -> list:
    """Whether each of `values` depends on the batched ones (ids, keys of `batched`)."""
    from ..passes.vectorize import ancestors

    found = set(batched)
    for node in ancestors(list(values), stop=found):
        if any(id(i) in found for i in node.inputs):
            found.add(id(node.out))
    return [id(v) in found for v in values]


def check_changes(changes, batched: dict) -> None:
    """Refuses an in-place change (`changes`: the function's, as functionalization notes
    them) that writes values of the batch into a tensor outside it, as torch.func's vmap:
    the tensor holds one example's elements, not the batch's."""
    if not changes:
        return
    olds = [old for old, _, _ in changes]
    news = [node.out for _, node, _ in changes]
    flags = depends([*olds, *news], batched)
    for k, (_, _, op) in enumerate(changes):
        if flags[len(changes) + k] and not flags[k]:
            raise UsageError(
                f"vmap: {op}(self, *extra_args) is not possible because there exists a Tensor "
                "`other` in extra_args that has more elements than `self`. This happened due "
                "to `other` being vmapped over but `self` not being vmapped over in a vmap. "
                "Please try to use out-of-place operators instead of "
                f"{op}. If said operator is being called inside the PyTorch framework, please "
                "file a bug report instead."
            )
