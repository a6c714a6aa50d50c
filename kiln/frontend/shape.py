"""Shape and movement functions, and indexing (`x[...]`)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.autograd import name_history
from ..errors import ArgumentTypeError, ShapeError, call_error
from ..graph.core import Symbol
from .core import call, lift
from .indexing import getitem

__all__ = [
    "broadcast_to",
    "concat",
    "concatenate",
    "expand_dims",
    "flatten",
    "matrix_transpose",
    "gather",
    "getitem",
    "one_hot",
    "pad",
    "permute",
    "reshape",
    "split",
    "squeeze",
    "swapaxes",
    "swapdims",
    "t",
    "stack",
    "take_along_axis",
    "tile",
    "transpose",
    "unsqueeze",
]


def varargs(op: str, args: tuple, keyword, name: str) -> tuple:
    """Sizes or dims as PyTorch takes them: as arguments (`x.permute(2, 0, 1)`), as one
    sequence (`x.permute((2, 0, 1))`) or by keyword (`x.permute(dims=(2, 0, 1))`).

    >>> varargs("permute", (), (2, 0, 1), "dims")
    (2, 0, 1)
    """
    if keyword is not None:
        if args:
            raise ArgumentTypeError(f"{op}() got {name} both as arguments and as {name}=")
        args = (keyword,)
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, sh.Dim)):
        args = tuple(args[0])
    return tuple(args)


def reshape(input, shape):  # noqa: A002
    """`x` with a new shape of the same size; one dim may be -1; dims may be symbolic.

    >>> import kiln as kn, numpy as np
    >>> kn.reshape(np.arange(6), (3, -1)).shape
    (3, 2)
    """
    (input,) = lift(input)  # noqa: A001
    shape = (shape,) if isinstance(shape, (int, sh.Dim)) else tuple(shape)
    return call("reshape", input, shape=sh.reshape_shape(input.shape, shape))


def flatten(input, start_dim: int = 0, end_dim: int = -1):  # noqa: A002
    """Merges the dims from `start_dim` to `end_dim` into one (PyTorch's `flatten`).

    >>> import kiln as kn, numpy as np
    >>> kn.flatten(np.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    (input,) = lift(input)  # noqa: A001
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = sh.normalize_axis(start_dim, input.ndim), sh.normalize_axis(end_dim, input.ndim)
    if s > e:
        raise ShapeError(f"flatten() has invalid args: start_dim {start_dim} cannot come after "
                         f"end_dim {end_dim}")  # fmt: skip
    if s == e:  # nothing merged: input itself, as PyTorch's (an in-place shape change of the
        return input  # result, `unsqueeze_`, is then input's)
    merged = sh.dim_product(input.shape[s : e + 1])
    return reshape(input, (*input.shape[:s], merged, *input.shape[e + 1 :]))


def permute(input, *args, dims=None):  # noqa: A002
    """`input` with its dims reordered: dim i of the result is dim `dims[i]` of input
    (PyTorch's `permute`; the dims as arguments, as one sequence or as `dims=`).

    >>> import kiln as kn, numpy as np
    >>> kn.permute(np.zeros((2, 3, 4)), 2, 0, 1).shape
    (4, 2, 3)
    """
    if not args and dims is None:  # (PyTorch's message)
        raise ArgumentTypeError('permute() missing 1 required positional arguments: "dims"')
    (input,) = lift(input)  # noqa: A001
    dims = varargs("permute", args, dims, "dims")
    if len(dims) != input.ndim:
        raise ShapeError(f"permute: the number of dims of the input ({input.ndim}) is not the "
                         f"length of the ordering {dims}")  # fmt: skip
    perm = tuple(sh.normalize_axis(int(d), input.ndim) for d in dims)
    if len(set(perm)) != len(perm):
        raise ShapeError("permute(): duplicate dims are not allowed.")
    return name_history(call("transpose", input, perm=perm), "PermuteBackward0", input)


def transpose(input, dim0: int, dim1: int):  # noqa: A002
    """`x` with dims `dim0` and `dim1` swapped (PyTorch's `transpose`; `permute` reorders
    all of them).

    >>> import kiln as kn, numpy as np
    >>> kn.transpose(np.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    (input,) = lift(input)  # noqa: A001
    perm = list(range(input.ndim))
    if input.ndim == 0:
        sh.normalize_axis(dim0, 0), sh.normalize_axis(dim1, 0)
        return call("transpose", input, perm=())
    a, b = sh.normalize_axis(dim0, input.ndim), sh.normalize_axis(dim1, input.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return name_history(call("transpose", input, perm=tuple(perm)), "TransposeBackward0", input)


swapdims = transpose


def swapaxes(input, axis0: int, axis1: int):  # noqa: A002
    """`transpose` under NumPy's name and argument names, as PyTorch's `swapaxes`.

    >>> import kiln as kn, numpy as np
    >>> kn.swapaxes(np.zeros((2, 3)), axis0=0, axis1=1).shape
    (3, 2)
    """
    return transpose(input, axis0, axis1)


def t(input):  # noqa: A002
    """The transpose of a matrix; tensors of 0 or 1 dims as they are (PyTorch's `t`).

    >>> import kiln as kn, numpy as np
    >>> kn.t(np.zeros((2, 3))).shape
    (3, 2)
    """
    (input,) = lift(input)  # noqa: A001
    if input.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    out = (
        transpose(input, 0, -1)
        if input.ndim == 2
        else call("transpose", input, perm=tuple(range(input.ndim)))
    )
    return name_history(out, "TBackward0", input)


def reverse_dims(x):
    """All dims reversed: `x.T` (PyTorch's, for any number of dims).

    >>> import kiln as kn
    >>> kn.zeros(2, 3, 4).T.shape
    kiln.Size([4, 3, 2])
    """
    (x,) = lift(x)
    out = call("transpose", x, perm=tuple(reversed(range(x.ndim))))
    return name_history(out, "PermuteBackward0", x)  # PyTorch's x.T is a permute


def matrix_transpose(x):
    """The last two dims swapped: `x.mT`, a batch of matrices transposed.

    >>> import kiln as kn
    >>> kn.zeros(5, 2, 3).mT.shape
    kiln.Size([5, 3, 2])
    """
    (x,) = lift(x)
    if x.ndim == 0:  # PyTorch's (deprecated there): a 0-d tensor as it is, a view
        return call("transpose", x, perm=())
    if x.ndim < 2:
        raise ShapeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                         f"{x.ndim}-D tensor.")  # fmt: skip
    return transpose(x, -2, -1)


def squeeze(input, dim=None):  # noqa: A002
    """Removes dims of size 1: all of them, or those of `dim` (an int or a tuple) that have
    size 1; a dim of another size stays (PyTorch's `squeeze`). In graph mode a symbolic dim
    (None, or a name) stays without `dim`, and `dim` naming one raises ShapeError: whether it
    is 1 is known only when the graph runs.

    >>> import kiln as kn, numpy as np
    >>> kn.squeeze(np.zeros((1, 3, 1)), 0).shape, kn.squeeze(np.zeros((2, 3)), 0).shape
    ((3, 1), (2, 3))
    """
    (input,) = lift(input)  # noqa: A001
    if dim is None:
        axes = tuple(i for i, d in enumerate(input.shape) if d == 1)
    else:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if input.ndim == 0 and not sh.normalize_axes(dims, 0):
            return reshape(input, ())
        axes = sh.normalize_axes(dims, input.ndim)
        for a in axes:
            if not isinstance(input.shape[a], (int, np.integer)):
                raise _symbolic_squeeze(input, dim, a)
        axes = tuple(a for a in axes if input.shape[a] == 1)
    out = reshape(input, tuple(d for i, d in enumerate(input.shape) if i not in axes))
    # PyTorch's: squeeze() SqueezeBackward0, squeeze(int) 1, squeeze(tuple) 2
    which = 0 if dim is None else 1 if isinstance(dim, (int, np.integer)) else 2
    return name_history(out, f"SqueezeBackward{which}", input)


def _symbolic_squeeze(x, dim, axis: int) -> ShapeError:
    d = x.shape[axis]
    return call_error(
        ShapeError,
        f"squeeze({dim}): dim {axis} has the symbolic size {d}, so whether it is 1 (which "
        "PyTorch's squeeze removes) is known only when the graph runs, and the result's number "
        "of dims must be known when it is built; give the dim a size (in the placeholder's "
        f"shape), or remove it with x.select({axis}, 0) or a reshape",
        "squeeze",
        x,
    )


def unsqueeze(input, dim: int):  # noqa: A002
    """Inserts a dim of size 1 at `dim` (PyTorch's `unsqueeze`, NumPy's `expand_dims`).

    >>> import kiln as kn, numpy as np
    >>> kn.unsqueeze(np.zeros((2, 3)), -1).shape
    (2, 3, 1)
    """
    (input,) = lift(input)  # noqa: A001
    dim = sh.normalize_axis(dim, input.ndim + 1)
    out = reshape(input, (*input.shape[:dim], 1, *input.shape[dim:]))
    if dim == input.ndim:  # PyTorch's new last dim has stride 1 (NumPy's reshape: the one before's)
        _appended(out)
    return name_history(out, "UnsqueezeBackward0", input, saved={"_saved_dim": dim})


def _appended(out) -> None:
    """`out`, an unsqueeze at the end, given stride 1 there (a view's eager data, a graph
    value's layout), as PyTorch's."""
    if isinstance(out, Symbol):
        from .layouts import mark_appended  # NOTE: lazy (layouts builds on this module)

        mark_appended(out)
        return
    data = getattr(out, "_data", None)
    if type(data) is np.ndarray and data.ndim and data.strides[-1] != data.itemsize:
        strides = (*data.strides[:-1], data.itemsize)
        out._data = np.lib.stride_tricks.as_strided(data, data.shape, strides)


expand_dims = unsqueeze


def broadcast_to(input, size):  # noqa: A002
    """`x` broadcast to `shape`, as NumPy's `broadcast_to`.

    >>> import kiln as kn, numpy as np
    >>> kn.broadcast_to(np.ones(3), (2, 3)).shape
    (2, 3)
    """
    (input,) = lift(input)  # noqa: A001
    return call("broadcast_to", input, shape=sh.as_shape(size))


def concat(xs, axis: int = 0):
    """Joins arrays along an existing axis (NumPy's `concatenate`).

    >>> import kiln as kn, numpy as np
    >>> kn.concat([np.ones((2, 3)), np.zeros((1, 3))]).shape
    (3, 3)
    """
    xs = lift(*xs)
    if not xs:
        raise ShapeError("need at least one array to concatenate")
    return call("concat", *xs, axis=sh.normalize_axis(axis, xs[0].ndim))


concatenate = concat


def stack(xs, axis: int = 0):
    """Joins arrays of the same shape along a new axis (NumPy's `stack`).

    >>> import kiln as kn, numpy as np
    >>> kn.stack([np.ones(3), np.zeros(3)], axis=1).shape
    (3, 2)
    """
    xs = lift(*xs)
    if not xs:
        raise ShapeError("need at least one array to stack")
    if any(x.shape != xs[0].shape for x in xs[1:]):
        raise ShapeError(
            "all input arrays must have the same shape: "
            + ", ".join(sh.format_shape(x.shape) for x in xs)
        )
    axis = sh.normalize_axis(axis, xs[0].ndim + 1)
    return name_history(concat([unsqueeze(x, axis) for x in xs], axis), "StackBackward0", *xs)


def split(x, indices_or_sections, axis: int = 0) -> list:
    """Splits `x` along `axis` into equal sections or at the given indices (NumPy's `split`).

    >>> import kiln as kn, numpy as np
    >>> [p.shape for p in split(np.zeros((6, 2)), [1, 4])]  # kn.split is PyTorch's
    [(1, 2), (3, 2), (2, 2)]
    """
    (x,) = lift(x)
    axis = sh.normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if not isinstance(n, int):
        raise ShapeError(f"split along a symbolic dim ({n}) is not supported; its size varies")
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise ShapeError(f"array split does not result in an equal division ({n} into {k})")
        bounds = list(range(0, n + 1, n // k)) if n else [0] * (k + 1)
    else:
        bounds = [0, *(int(i) for i in indices_or_sections), n]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        spec = (("slice", None, None, None),) * axis + (("slice", lo, hi, None),)
        parts.append(call("index", x, spec=spec))
    return parts


def pad(x, pad_width, value=0):
    """Pads with a constant, NumPy's `pad(x, pad_width, constant_values=value)`.

    >>> import kiln as kn, numpy as np
    >>> kn.pad(np.ones((2, 2)), 1).shape
    (4, 4)
    """
    (x,) = lift(x)
    width = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    canonical = tuple((int(b), int(a)) for b, a in width)
    return call("pad", x, pad_width=canonical, value=float(value) if dt.is_float(x.dtype)
                else int(value))  # fmt: skip


def tile(input, dims):  # noqa: A002
    """Repeats `x` by `reps` along each dim (NumPy's `tile`).

    >>> import kiln as kn, numpy as np
    >>> kn.tile(np.ones((2, 3)), (2, 1)).shape
    (4, 3)
    """
    (input,) = lift(input)  # noqa: A001
    dims = (dims,) if isinstance(dims, int) else tuple(int(r) for r in dims)
    return call("tile", input, reps=dims)


def one_hot(ids, num_classes: int, dtype=dt.float32):
    """One-hot rows of `num_classes` for integer `ids` (an id outside the range raises
    IndexOutOfRangeError, as PyTorch's `one_hot` raises).

    >>> import kiln as kn, numpy as np
    >>> kn.one_hot(np.array([0, 2]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    (ids,) = lift(ids)
    depth = num_classes if isinstance(num_classes, sh.Dim) else int(num_classes)  # run-bound
    return call("one_hot", ids, depth=depth, dtype=dt.as_dtype(dtype))


def gather(x, indices, axis: int = 0):
    """Takes `indices` along `axis`: NumPy's `take(x, indices, axis)` (TF's `gather`), but an
    index outside [0, size) raises IndexOutOfRangeError, as PyTorch's `index_select` raises.

    >>> import kiln as kn, numpy as np
    >>> gather(np.arange(6).reshape(2, 3), np.array([2, 0]), axis=1)
    array([[2, 0],
           [5, 3]])
    """
    (x,) = lift(x)
    (indices,) = lift(indices, context=(x,))
    axis = sh.normalize_axis(axis, x.ndim)
    return call("gather", x, indices, axis=axis, wrap_negative=False)


def take_along_axis(x, indices, axis: int):
    """NumPy's `take_along_axis` (PyTorch's `gather`): an index outside [0, size) raises
    IndexOutOfRangeError, as PyTorch's `gather` raises (negative ones too).

    >>> import kiln as kn, numpy as np
    >>> kn.take_along_axis(np.array([[1, 2], [3, 4]]), np.array([[1], [0]]), 1)
    array([[2],
           [3]])
    """
    (x,) = lift(x)
    (indices,) = lift(indices, context=(x,))
    return call("take_along_axis", x, indices, axis=sh.normalize_axis(axis, x.ndim))
