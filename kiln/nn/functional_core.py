"""`kn.nn.functional`'s forms of softmax, log_softmax, softplus, dropout (and its channel
variants), embedding, pixel shuffles and the legacy upsample functions, with PyTorch's
signatures (`dim=None`, `dtype=`, `threshold=`, `inplace=`, `padding_idx=`) over kiln's ops."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager.autograd import name_history
from ..eager.factories import ones_like
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    DTypeMismatchError,
    ShapeMismatchError,
    UnsupportedDTypeError,
    call_error,
)
from ..frontend.autocast import autocast_op
from ..frontend.nn_functional import refuse_integer_dropout
from ..frontend.nn_interpolate import interpolate
from ..frontend.result_layouts import suggested_layout
from ..frontend.torch_index import int_index
from ..graph.core import Symbol
from .functional_act import implicit_softmax_dim, in_place, opmath_grad

__all__ = [
    "channel_shuffle",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "embedding",
    "log_softmax",
    "pixel_shuffle",
    "pixel_unshuffle",
    "softmax",
    "softplus",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


def _softmax_input(input, dim, dtype, name):  # noqa: A002
    (x,) = F.core.lift(input)
    if dtype is not None:
        x = F.cast(x, dt.as_dtype(dtype))
    return x, implicit_softmax_dim(x.ndim, name, 5) if dim is None else dim


@autocast_op(None, cuda="fp32")
def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """`exp(x) / sum(exp(x))` along `dim` (cast to `dtype` first when given).

    >>> import kiln as kn
    >>> kn.nn.functional.softmax(kn.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    x, dim = _softmax_input(input, dim, dtype, "softmax")
    return F.softmax(x, dim)


@autocast_op(None, cuda="fp32")
def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):  # noqa: A002
    """`x - logsumexp(x)` along `dim` (cast to `dtype` first when given).

    >>> import kiln as kn
    >>> kn.nn.functional.log_softmax(kn.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    x, dim = _softmax_input(input, dim, dtype, "log_softmax")
    return F.log_softmax(x, dim)


def refuse_integers(kernel: str, x) -> None:
    """Refuses an integer or bool `x` as PyTorch's activation kernels do (NotImplementedError
    naming the kernel): softplus, silu, elu."""
    from ..frontend.reductions import require_floating

    message = f"\"{kernel}\" not implemented for '{{dtype}}'"
    require_floating(kernel.removesuffix("_cpu"), x, message, UnsupportedDTypeError)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):  # noqa: A002
    """`log(1 + exp(beta * x)) / beta`, and `x` itself where `beta * x > threshold`. A half
    input is computed in float32 and rounded once, its gradient by PyTorch's kernel's formula.

    >>> import kiln as kn
    >>> kn.nn.functional.softplus(kn.tensor([0.0, 30.0]))
    tensor([ 0.6931, 30.0000])
    """
    (x,) = F.core.lift(input)
    refuse_integers("softplus_cpu", x)

    def fn(x):
        return F.where(F.greater(F.mul(x, beta), threshold), x, F.softplus(x, beta))

    out = in_place("softplus", fn, x, False, opmath=opmath_grad(fn, "softplus", beta, threshold))
    saved = {"_saved_self": x, "_saved_beta": beta, "_saved_threshold": threshold}
    return name_history(out, "SoftplusBackward0", x, saved=saved)  # PyTorch's node


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Inverted dropout: zeroes each element with probability `p` and scales the rest by
    `1 / (1 - p)` while `training`.

    >>> import kiln as kn
    >>> kn.nn.functional.dropout(kn.ones(3), training=False)
    tensor([1., 1., 1.])
    """
    if inplace and (not training or p == 0.0) and 0.0 <= p <= 1.0:
        return input  # PyTorch's: nothing is written (a leaf that requires grad too)
    return in_place("dropout_", lambda x: F.dropout(x, p, training), input, inplace)


def _channel_dropout(name, spatial, input, p, training, inplace):  # noqa: A002
    """Zeroes whole channels: one draw per (N, C), or per C for an unbatched input, as
    PyTorch's: dropout1d takes 2-D or 3-D inputs only; dropout2d and dropout3d warn on other
    ranks and drop along dims (0, 1) of them; dropout2d reads a 3-D input as (N, C, L) (with
    a warning), dropout3d reads any input but a 5-D one as unbatched."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
    (x,) = F.core.lift(input)
    if x.ndim not in (spatial + 1, spatial + 2):
        note = (f"Note that {name} exists to provide channel-wise dropout on inputs with "
                f"{spatial} spatial dimension{'s' if spatial > 1 else ''}, a channel "
                f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
                f"{spatial + 2}D inputs).")  # fmt: skip
        if spatial == 1:
            raise call_error(ShapeMismatchError, f"{name}: Expected 2D or 3D input, but "
                             f"received a {x.ndim}D input. {note}", name, x)  # fmt: skip
        warnings.warn(f"{name}: Received a {x.ndim}-D input to {name}, which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior "
                      f"and silence this warning, please use dropout instead. {note}",
                      stacklevel=3)  # fmt: skip
    if spatial == 2 and x.ndim == 3:
        warnings.warn(_DROPOUT2D_3D, stacklevel=3)
    unbatched = spatial != 2 and x.ndim != spatial + 2  # channels along dim 0
    if not training or p == 0.0:
        return x
    if x.ndim + unbatched < 2:
        raise call_error(ShapeMismatchError, "Feature dropout requires at least 2 dimensions "
                         "in the input", name, x)  # fmt: skip
    if p != 1.0:
        refuse_integer_dropout(x, name)

    def fn(x):
        lead = 1 if unbatched else 2
        mask_shape = tuple(x.shape[:lead]) + (1,) * (x.ndim - lead)
        ones = F.broadcast_to(F.core.lift(1.0, context=(x,), dtype=x.dtype)[0], mask_shape)
        return F.mul(x, F.dropout(ones, p, True))

    return in_place(f"{name}_", fn, x, inplace)


_DROPOUT2D_3D = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
    "This behavior will change in a future release to interpret the input as one without a "
    "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
    "please switch to using dropout1d instead."
)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zeroes whole channels of (N, C, L) or (C, L) inputs with probability `p`.

    >>> import kiln as kn
    >>> kn.nn.functional.dropout1d(kn.ones(1, 2, 3), training=False).shape
    kiln.Size([1, 2, 3])
    """
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zeroes whole channels of (N, C, H, W) inputs with probability `p`; a 3-D input is read
    as (N, C, L), as PyTorch's (which warns).

    >>> import kiln as kn
    >>> y = kn.nn.functional.dropout2d(kn.ones(4, 8, 3, 3))
    >>> sorted(set(y.numpy().reshape(32, 9).std(axis=1).tolist()))
    [0.0]
    """
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability `p`.

    >>> import kiln as kn
    >>> kn.nn.functional.dropout3d(kn.ones(2, 1, 1, 1), p=0.0).sum().item()
    2.0
    """
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)


def _type_name(dtype) -> str:
    try:
        return dt.type_name(dtype)
    except Exception:  # noqa: BLE001 -- a dtype without a tensor type name
        return str(dtype)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,  # noqa: A002
              scale_grad_by_freq: bool = False, sparse: bool = False):  # fmt: skip
    """Rows of `weight` (V, D) picked by integer `input` (...), giving (..., D); the row of
    `padding_idx` gets no gradient.

    >>> import kiln as kn
    >>> kn.nn.functional.embedding(kn.tensor([2, 0]), kn.arange(6.0).reshape(3, 2))
    tensor([[4., 5.],
            [0., 1.]])
    """
    if len(getattr(weight, "shape", np.shape(weight))) != 2:
        raise call_error(ShapeMismatchError, "'weight' must be 2-D", "embedding", weight)
    ids, table = F.core.lift(input, weight)
    if not int_index(ids.dtype):  # (the sparse form's too)
        raise call_error(
            DTypeMismatchError,
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {_type_name(ids.dtype)} instead (while checking "
            "arguments for embedding)", "embedding", table, ids,
        )  # fmt: skip
    if sparse and max_norm is not None and isinstance(weight, Tensor):
        # PyTorch's: renorm in place, then look up
        weight.detach().copy_(_renormed(table, ids, float(max_norm), float(norm_type)).detach())
        max_norm = None
    if sparse:
        return F.sparse._embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq)
    if max_norm is not None:
        table = _renormed(table, ids, float(max_norm), float(norm_type))
        if isinstance(weight, Tensor):
            weight.detach().copy_(table.detach())  # PyTorch's: the rows change in place
        elif _traced_parameter(weight) is not None:  # kn.compile: the parameter changes,
            table = _renew_parameter(weight, table)  # later reads (these rows) see it
    rows = _looked_up(table, ids, padding_idx, scale_grad_by_freq)
    if max_norm is not None and isinstance(weight, Symbol) and _traced_parameter(weight) is None:
        _write_renormed(weight, table, rows)
    saved = {"_saved_indices": ids, "_saved_padding_idx": -1 if padding_idx is None else
             padding_idx, "_saved_scale_grad_by_freq": scale_grad_by_freq,
             "_saved_sparse": False, "_saved_weight_sym_argsize_0": table.shape[0]}  # fmt: skip
    return name_history(rows, "EmbeddingBackward0", table, saved=saved)  # PyTorch's node


def _traced_parameter(weight):
    """The module's Parameter whose Variable `weight` is in a kn.compile trace, else None."""
    from ..frontend.functionalize import in_compiled_trace
    from ..graph.core import Variable
    from .parameter import owner_of

    if isinstance(weight, Variable) and in_compiled_trace(weight):
        return owner_of(weight)
    return None


def _renew_parameter(weight, table):
    """PyTorch's in-place renorm of a module's weight under kn.compile: the program assigns
    the renormed table on each call, and the trace's later reads of the weight (the lookup,
    a read after the call) see it; gradients flow on to the Parameter, as to PyTorch's leaf
    changed under no_grad. Returns the weight's new value in the trace."""
    owner = _traced_parameter(weight)
    owner._traced_assign(weight.graph, F.stop_gradient(table), "embedding_renorm_")
    return owner._traced_value(weight.graph)


def _write_renormed(weight, table, rows) -> None:
    """PyTorch's in-place renorm of `weight` by `max_norm`, in a graph: a Variable (a module's
    parameter, in graph mode or under kn.compile) gets an `assign` of the renormed table, which
    applies with the updates of `rows` (`kn.nn.updates_for`, `opt.minimize`; kn.compile's
    program updates), as BatchNorm's running statistics do; an argument of a compiled function
    changes in place (kiln/frontend/functionalize.py). A feed or a computed value holds nothing
    between runs: only the result's rows are renormed."""
    from ..frontend.functionalize import is_compiled_argument
    from ..graph.core import Variable
    from ..ops.core import apply
    from .module import keeps_grad, record_assigns

    new = F.stop_gradient(table)
    if isinstance(weight, Variable):
        assign = apply("assign", weight, new)
        keeps_grad(assign)  # the rows read the renormed table: the weight's gradient goes on
        record_assigns(rows, [assign])
    elif is_compiled_argument(weight):
        weight.copy_(new)


def _looked_up(table, ids, padding_idx, scale_grad_by_freq):
    rows = F.embedding(table, ids)
    if scale_grad_by_freq:
        # the same values; each row's gradient divided by how often its index occurs
        counts = F.embedding(_occurrences(ids, table), ids)
        frozen = F.stop_gradient(rows)
        rows = F.add(frozen, F.div(F.sub(rows, frozen), F.unsqueeze(counts, -1)))
    if padding_idx is None:
        return rows
    n = table.shape[0]
    if not -n <= padding_idx < n:
        raise AssertionError("Padding_idx must be within num_embeddings")
    pad_id = padding_idx % n
    keep = F.unsqueeze(F.not_equal(ids, pad_id), -1)
    return F.where(keep, rows, F.stop_gradient(rows))


def _occurrences(ids, table):
    """How often each row index of `table` occurs in `ids` (V,), in table's dtype."""
    flat = F.reshape(ids, (-1,))
    (zeros,) = F.core.lift(np.zeros(table.shape[0], table.dtype), context=(table,))
    return F.index_add(zeros, 0, flat, ones_like(flat, dtype=table.dtype))  # any length


def _renormed(table, ids, max_norm: float, norm_type: float):
    """`table` with the rows `ids` picks scaled to a `norm_type`-norm of at most `max_norm`
    (PyTorch's `max_norm`: the scale, as its in-place renorm, takes no gradient)."""
    norms = F.linalg.vector_norm(table, norm_type, -1, keepdim=True)
    picked = F.unsqueeze(F.greater(_occurrences(ids, table), 0), -1)
    over = F.logical_and(picked, F.greater(norms, max_norm))
    scale = F.where(over, F.div(max_norm, F.add(norms, 1e-7)), 1.0)
    return F.add(table, F.stop_gradient(F.sub(F.mul(table, scale), table)))


def pixel_shuffle(input, upscale_factor: int):  # noqa: A002
    """(..., C * r * r, H, W) to (..., C, H * r, W * r), r the `upscale_factor`.

    >>> import kiln as kn
    >>> kn.nn.functional.pixel_shuffle(kn.arange(4.0).reshape(1, 4, 1, 1), 2)
    tensor([[[[0., 1.],
              [2., 3.]]]])
    """
    (x,) = F.core.lift(input)
    r = int(upscale_factor)
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise call_error(ShapeMismatchError, f"pixel_shuffle expects its input's 'channel' "
                         "dimension to be divisible by the square of upscale_factor, but "
                         f"input.size(-3)={c} is not divisible by {r * r}", "pixel_shuffle",
                         x)  # fmt: skip
    k = len(lead)
    y = F.reshape(x, (*lead, c // (r * r), r, r, h, w))
    y = F.permute(y, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    # (PyTorch's: channels-last where the input is)
    return suggested_layout(F.reshape(y, (*lead, c // (r * r), h * r, w * r)), x)


def pixel_unshuffle(input, downscale_factor: int):  # noqa: A002
    """(..., C, H * r, W * r) to (..., C * r * r, H, W), the inverse of `pixel_shuffle`.

    >>> import kiln as kn
    >>> kn.nn.functional.pixel_unshuffle(kn.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
    tensor([0., 1., 2., 3.])
    """
    (x,) = F.core.lift(input)
    r = int(downscale_factor)
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise call_error(ShapeMismatchError, f"pixel_unshuffle expects height {h} and width "
                         f"{w} to be divisible by downscale_factor {r}", "pixel_unshuffle",
                         x)  # fmt: skip
    k = len(lead)
    y = F.reshape(x, (*lead, c, h // r, r, w // r, r))
    y = F.permute(y, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    # (PyTorch's: channels-last where the input is)
    return suggested_layout(F.reshape(y, (*lead, c * r * r, h // r, w // r)), x)


def channel_shuffle(input, groups: int):  # noqa: A002
    """Interleaves the channels (dim 1) of `groups` groups: (N, g * k, ...) read as (g, k),
    written as (k, g).

    >>> import kiln as kn
    >>> kn.nn.functional.channel_shuffle(kn.arange(4.0).reshape(1, 4), 2)
    tensor([[0., 2., 1., 3.]])
    """
    (x,) = F.core.lift(input)
    n, c, *rest = x.shape
    y = F.reshape(x, (n, groups, c // groups, *rest))
    # (PyTorch's: channels-last where the input is)
    return suggested_layout(F.reshape(F.transpose(y, 1, 2), x.shape), x)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):  # noqa: A002
    """PyTorch's deprecated name of `interpolate`.

    >>> import kiln as kn
    >>> kn.nn.functional.upsample(kn.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """`interpolate(..., mode="nearest")`, PyTorch's deprecated name.

    >>> import kiln as kn
    >>> kn.nn.functional.upsample_nearest(kn.tensor([[[1.0, 2.0]]]), 3)
    tensor([[[1., 1., 2.]]])
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """`interpolate(..., mode="bilinear", align_corners=True)`, PyTorch's deprecated name.

    >>> import kiln as kn
    >>> kn.nn.functional.upsample_bilinear(kn.tensor([[[[0.0, 2.0]]]]), (1, 3))
    tensor([[[[0., 1., 2.]]]])
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
