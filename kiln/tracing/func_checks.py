"""torch.func's checks of the arguments and results of `grad`, `vjp`, `jvp`, `jacrev`,
`jacfwd` and `hessian` (kiln/tracing/func.py, transforms.py), with its exception types:
argnums, has_aux's pair, outputs that are not tensors, integer inputs, chunk_size.

>>> import kiln as kn
>>> kn.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 0))(kn.ones(2), kn.ones(2))
Traceback (most recent call last):
...
kiln.errors.UsageError: argnums elements must be unique, got (0, 0) (called at ...)
"""

from __future__ import annotations

from .. import dtypes as dt
from ..eager.tensor import Tensor
from ..errors import ArgumentError, AutogradError, UsageError
from ..graph.core import Symbol


def argnum_positions(argnums, n: int) -> tuple[tuple, bool]:
    """(the positions `argnums` names among `n` positional arguments, whether it is one int)."""
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not single and not isinstance(nums, tuple):
        raise UsageError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for k in nums:
        if type(k) is not int:
            raise UsageError(f"argnum must be int, got: {type(k)}")
    if not nums:
        raise UsageError("argnums must be non-empty")
    for k in nums:
        if not -n <= k < n:
            raise UsageError(f"Got argnum={k}, but only {n} positional inputs")
    positions = tuple(k % n for k in nums)
    if len(set(positions)) != len(positions):
        raise UsageError(f"argnums elements must be unique, got {argnums}")
    return positions, single


def aux_pair(out, what: str):
    """`(output, aux)` of a function called with has_aux."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise UsageError(f"{what}: output of function f should be a tuple: (output, aux) if "
                         "has_aux is True")  # fmt: skip
    for a in leaves_of(out[1]):
        if not isinstance(a, (Tensor, Symbol)):
            raise UsageError(f"Expected tensors, got unsupported type {type(a)}")
    return out


def only_tensors(leaves, what: str) -> None:
    """torch.func's refusal of an output that is not a tensor (vjp, jvp, the jacobians), or
    of no output at all."""
    if all(y is None for y in leaves):
        raise UsageError(f"{what}: Expected f to be a function that has non-empty output (got "
                         f"output = {leaves})")  # fmt: skip
    for y in leaves:
        if not isinstance(y, (Tensor, Symbol)):
            raise UsageError(f"{what}: expected f(*primals) to return only tensors, got "
                             f"unsupported type {type(y)}")  # fmt: skip


def differentiable_outputs(leaves, what: str) -> None:
    """vjp's refusal of an integer or boolean output (it has no cotangent)."""
    for y in leaves:
        if not (dt.is_float(y.dtype) or y.dtype.kind == "c"):
            raise UsageError(f"{what}: All outputs of f must be floating-point or complex "
                             f"Tensors, got Tensor with dtype {y.dtype}")  # fmt: skip


def differentiable_input(value, name: str) -> None:
    """jacrev's and jacfwd's refusal of an integer or boolean input (PyTorch's classes:
    RuntimeError for jacrev, ValueError for jacfwd)."""
    if dt.is_float(value.dtype) or value.dtype.kind == "c":
        return
    if name == "jacfwd":
        raise ArgumentError("Expected primal to be floating point or complex, but got: "
                            f"{value.dtype}")  # fmt: skip
    raise AutogradError("only Tensors of floating point dtype can require gradients")


def check_chunk_size(chunk_size, name: str) -> None:
    if chunk_size is not None and chunk_size <= 0:
        raise ArgumentError(f"{name}: `chunk_size` should be greater than 0.")


def leaves_of(value) -> list:
    """The leaves of `value` as torch.func's pytrees see them: the items of tuples, lists,
    named tuples and dicts, any other value itself (a float, None)."""
    if type(value) in (tuple, list) or (isinstance(value, tuple) and hasattr(value, "_fields")):
        return [leaf for v in value for leaf in leaves_of(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves_of(v)]
    return [value]
