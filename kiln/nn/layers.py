"""Layers: PyTorch's constructors, initializations and parameter shapes."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import init
from ..eager import no_grad
from ..errors import ArgumentAssertionError, ArgumentError
from . import functional_attention, functional_core, functional_norm
from .activation import GELU, ReLU, Sigmoid, Tanh
from .containers import Sequential
from .functional_norm import group_norm
from .module import Module, Parameter

__all__ = [
    "GELU",
    "MLP",
    "BatchNorm1d",
    "BatchNorm2d",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "RMSNorm",
    "Embedding",
    "Flatten",
    "GroupNorm",
    "LayerNorm",
    "Linear",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
]


def _param(initializer, shape, dtype=dt.DEFAULT_FLOAT) -> Parameter:
    return Parameter(initializer(tuple(shape), dt.as_dtype(dtype)))


class Linear(Module):
    """`y = x @ weight.T + bias`, weight (out_features, in_features), as PyTorch's `Linear`
    (and its initialization: kaiming-uniform weight with `a=sqrt(5)`, uniform bias in
    ±1/sqrt(in_features)).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     fc = kn.nn.Linear(784, 10)
    ...     y = fc(kn.placeholder(kn.float32, ("batch", 784), name="x"))
    >>> y.type_str(), tuple(fc.weight.shape), fc.weight.variable_in(y.graph).name
    ('f32[batch,10]', (10, 784), 'weight')
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dtype = dtype or dt.DEFAULT_FLOAT
        self.weight = _param(
            init.kaiming_uniform(a=math.sqrt(5)), (out_features, in_features), dtype
        )
        self.bias = None
        if bias:
            bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
            self.bias = _param(init.uniform(-bound, bound), (out_features,), dtype)
        if device is not None:
            self.to(device)

    def forward(self, x):
        return functional_attention.linear(x, self.weight, self.bias)  # autocast: one op

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class _DropoutNd(Module):
    """What the dropout layers share (`p`, `inplace`), as PyTorch's `_DropoutNd`: Dropout2d
    is not a Dropout, as there."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Inverted dropout with probability `p` while `training`; the identity in eval mode.

    >>> import kiln as kn, numpy as np
    >>> drop = kn.nn.Dropout(0.5).eval()
    >>> x = np.ones(3, np.float32)
    >>> drop(x) is x
    True
    """

    def forward(self, x):
        return functional_core.dropout(x, self.p, self.training, self.inplace)


class _FnDropout(_DropoutNd):
    """A dropout layer that calls its class's `fn(x, p, training, inplace)`."""

    fn = staticmethod(functional_core.dropout2d)

    def forward(self, x):
        return type(self).fn(x, self.p, self.training, self.inplace)


class Dropout1d(_FnDropout):
    """Zeroes whole channels of (N, C, L) inputs with probability `p` while training.

    >>> import kiln as kn
    >>> kn.nn.Dropout1d().eval()(kn.ones(1, 2, 2)).sum().item()
    4.0
    """

    fn = staticmethod(functional_core.dropout1d)


class Dropout2d(_FnDropout):
    """Zeroes whole channels of (N, C, H, W) inputs with probability `p` while training.

    >>> import kiln as kn
    >>> kn.nn.Dropout2d(p=0.0)(kn.ones(1, 2, 2, 2)).sum().item()
    8.0
    """

    fn = staticmethod(functional_core.dropout2d)


class Dropout3d(_FnDropout):
    """Zeroes whole channels of (N, C, D, H, W) inputs with probability `p` while training.

    >>> import kiln as kn
    >>> kn.nn.Dropout3d().eval()(kn.ones(1, 1, 1, 1, 2)).sum().item()
    2.0
    """

    fn = staticmethod(functional_core.dropout3d)


class PixelShuffle(Module):
    """(N, C * r * r, H, W) to (N, C, H * r, W * r).

    >>> import kiln as kn
    >>> list(kn.nn.PixelShuffle(2)(kn.zeros(1, 8, 3, 3)).shape)
    [1, 2, 6, 6]
    """

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return functional_core.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H * r, W * r) to (N, C * r * r, H, W).

    >>> import kiln as kn
    >>> list(kn.nn.PixelUnshuffle(2)(kn.zeros(1, 2, 6, 6)).shape)
    [1, 8, 3, 3]
    """

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return functional_core.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Flatten(Module):
    """Merges dims `start_dim..end_dim` into one (the batch dim stays by default)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


_ACTIVATIONS = {"relu": ReLU, "gelu": GELU, "tanh": Tanh, "sigmoid": Sigmoid}


class MLP(Sequential):
    """Linear layers of `sizes` (`[in, hidden…, out]`) with `activation` (and dropout, if
    `dropout > 0`) between them and nothing after the last.

    >>> import kiln as kn
    >>> mlp = kn.nn.MLP([784, 128, 10], dropout=0.1)
    >>> [type(m).__name__ for m in mlp]
    ['Linear', 'ReLU', 'Dropout', 'Linear']
    >>> sum(p.size for p in mlp.parameters())
    101770
    """

    def __init__(self, sizes, activation="relu", dropout: float = 0.0):
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ArgumentError(f"MLP needs at least an input and an output size, got {sizes}")
        if isinstance(activation, str) and activation not in _ACTIVATIONS:
            raise ArgumentError(f"MLP: unknown activation {activation!r}: {sorted(_ACTIVATIONS)}")
        make = _ACTIVATIONS[activation] if isinstance(activation, str) else activation
        super().__init__()
        for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            self.append(Linear(n_in, n_out))
            if i < len(sizes) - 2:
                self.append(make())
                if dropout > 0:
                    self.append(Dropout(dropout))


class LayerNorm(Module):
    """Normalizes over the last `len(normalized_shape)` dims, then scales and shifts
    (weight ones, bias zeros), as PyTorch's `LayerNorm`."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or dt.DEFAULT_FLOAT
        shape = self.normalized_shape
        self.weight = _param(init.ones(), shape, dtype) if elementwise_affine else None
        has_bias = elementwise_affine and bias
        self.bias = _param(init.zeros(), shape, dtype) if has_bias else None
        if device is not None:
            self.to(device)

    def forward(self, x):
        axes = tuple(range(-len(self.normalized_shape), 0))
        return F.layer_norm(x, weight=self.weight, bias=self.bias, eps=self.eps, axis=axes)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


def _pretrained_table(embeddings, op: str) -> np.ndarray:
    """The NumPy copy of a pretrained 2-D embedding table (a Tensor or an array)."""
    if hasattr(embeddings, "detach"):
        embeddings = embeddings.detach()
    shape = tuple(getattr(embeddings, "shape", np.shape(embeddings)))
    if len(shape) != 2:  # PyTorch asserts it
        raise ArgumentAssertionError(
            f"{op}: Embeddings parameter is expected to be 2-dimensional (num_embeddings, "
            f"embedding_dim), got shape {shape}"
        )
    return np.array(embeddings)


def _given_table(weight, num_embeddings: int, embedding_dim: int, dtype) -> np.ndarray:
    """An Embedding's `_weight` as its table: of shape (num_embeddings, embedding_dim), in
    `dtype` where given, else in its own dtype."""
    table = np.asarray(weight)
    if dtype is not None:
        table = table.astype(dt.as_dtype(dtype))
    if table.shape != (num_embeddings, embedding_dim):
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return table


class Embedding(Module):
    """A table (num_embeddings, embedding_dim) of N(0, 1) rows, looked up by integer ids; the
    row of `padding_idx` starts at zeros and gets no gradient, as PyTorch's `Embedding`.

    >>> import kiln as kn
    >>> emb = kn.nn.Embedding(3, 2, padding_idx=0)
    >>> emb(kn.tensor([0])).tolist()
    [[0.0, 0.0]]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):  # fmt: skip
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            table = init.normal()((num_embeddings, embedding_dim),
                                  dt.as_dtype(dtype or dt.DEFAULT_FLOAT))  # fmt: skip
            if padding_idx is not None:
                table[padding_idx] = 0
        else:  # PyTorch's: the table keeps its dtype unless `dtype` is given
            table = _given_table(_weight, num_embeddings, embedding_dim, dtype)
        self.weight = Parameter(table, requires_grad=not _freeze)  # (a frozen int table too)
        if device is not None:
            self.to(device)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False):  # fmt: skip
        """An Embedding whose table is a copy of the 2-D `embeddings` (its rows kept as they
        are, the `padding_idx` row included), frozen unless `freeze=False`.

        >>> import kiln as kn
        >>> emb = kn.nn.Embedding.from_pretrained(kn.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> emb(kn.tensor([1])).tolist(), emb.weight.requires_grad
        ([[3.0, 4.0]], False)
        """
        table = _pretrained_table(embeddings, "Embedding.from_pretrained")
        return cls(table.shape[0], table.shape[1], padding_idx, max_norm, norm_type,
                   scale_grad_by_freq, sparse, _weight=table, _freeze=freeze,
                   dtype=table.dtype)  # fmt: skip

    def reset_parameters(self) -> None:
        """Redraws the table from N(0, 1), the `padding_idx` row zeros, as PyTorch's.

        >>> import kiln as kn
        >>> emb = kn.nn.Embedding(3, 2, padding_idx=1)
        >>> emb.reset_parameters()
        >>> emb.weight[1].tolist()
        [0.0, 0.0]
        """
        from . import init as nn_init  # NOTE: lazy: kiln.nn.init imports this package's parts

        nn_init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, ids):
        # max_norm renormalises the looked-up rows of the weight in place, as PyTorch's: in a
        # graph an `assign` tied to the output (functional_core._write_renormed)
        return functional_core.embedding(ids, self.weight, self.padding_idx, self.max_norm,
                                         self.norm_type, self.scale_grad_by_freq,
                                         self.sparse)  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse:
            text += ", sparse=True"
        return text


class _BatchNorm(Module):
    """What BatchNorm1d, BatchNorm2d, BatchNorm3d and SyncBatchNorm share, as PyTorch's
    `_BatchNorm` (none of them is a subclass of another, as there).

    Training: normalizes with the batch's mean and biased variance, and records updates of
    the running statistics (the unbiased variance; `momentum=None` for a cumulative average)
    as declared updates: they apply when a run fetches the train op of `opt.minimize(loss)`
    for a loss that uses this output, or `kn.nn.updates_for(output)`; fetching the output
    alone changes nothing. Eval: normalizes with the running statistics.

    >>> import kiln as kn
    >>> from kiln.nn.layers import _BatchNorm
    >>> bn = kn.nn.BatchNorm2d(3)
    >>> isinstance(bn, kn.nn.BatchNorm1d), isinstance(bn, _BatchNorm)
    (False, True)
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = dtype or dt.DEFAULT_FLOAT
        self.weight = _param(init.ones(), (num_features,), dtype) if affine else None
        self.bias = _param(init.zeros(), (num_features,), dtype) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:  # as PyTorch's: the names exist, as None (not in state_dict)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        if device is not None:
            self.to(device)

    ndims: tuple = (2, 3)  # the input ranks the class takes

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked (PyTorch's).

        >>> import kiln as kn
        >>> bn = kn.nn.BatchNorm1d(2)
        >>> _ = bn(kn.tensor([[1.0, 2.0], [3.0, 6.0]])); bn.reset_running_stats()
        >>> bn.running_mean.tolist(), bn.running_var.tolist(), bn.num_batches_tracked.item()
        ([0.0, 0.0], [1.0, 1.0], 0)
        """
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def forward(self, x):
        if x.ndim not in self.ndims:
            wanted = " or ".join(f"{d}D" for d in self.ndims)
            raise ArgumentError(f"expected {wanted} input (got {x.ndim}D input)")
        # as PyTorch's: eval mode normalizes by the running statistics whenever the buffers
        # exist (even with track_running_stats set False afterwards); training updates them
        # when tracking and the buffers exist
        if not self.training and not (self.running_mean is None and self.running_var is None):
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, eps=self.eps
            )
        axes = (0, *range(2, x.ndim))
        # as PyTorch's kernel: a half-precision input normalized in float32 (its statistics
        # too) and rounded once, its gradient summed in float32 and rounded once
        half = x.dtype in (dt.bfloat16, np.float16)
        wide = F.cast(x, np.float32) if half else x
        mean = F.mean(wide, axes)
        var = F.var(wide, axes, correction=0)
        y = F.batch_norm(wide, mean, var, self.weight, self.bias, eps=self.eps)
        y = F.cast(y, x.dtype) if half else y
        if self._tracks():
            self._record_updates(y, self._running_updates(x, axes, mean, var))
        return y

    def _tracks(self) -> bool:
        """Whether this training call updates the running statistics."""
        return (self.training and self.track_running_stats
                and self.running_mean is not None and self.running_var is not None)  # fmt: skip

    def _running_updates(self, x, axes, mean, var) -> dict:
        sizes = [x.shape[a] for a in axes]
        if all(isinstance(d, int) for d in sizes):
            n = math.prod(sizes)
            if n == 1:
                raise ArgumentError(
                    f"Expected more than 1 value per channel when training, got input size "
                    f"{tuple(x.shape)}"
                )
        else:  # a symbolic batch: count at run time
            shape = tuple(x.shape[a] if a in axes else 1 for a in range(x.ndim))
            n = F.sum(F.broadcast_to(F.constant(np.ones((), x.dtype), graph=x.graph), shape))
        unbiased = F.stop_gradient(var * (n / (n - 1)))
        mean = F.stop_gradient(mean)
        count = self.num_batches_tracked + 1
        m = self.momentum
        if m is None:
            m = F.cast(1.0 / F.cast(count, np.float64), self.running_mean.dtype)
        return {
            "running_mean": self.running_mean * (1 - m) + mean * m,
            "running_var": self.running_var * (1 - m) + unbiased * m,
            "num_batches_tracked": count,
        }

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs, as PyTorch's `BatchNorm1d` (see
    `_BatchNorm`).

    >>> import kiln as kn
    >>> kn.nn.BatchNorm1d(2)(kn.tensor([[1.0, 2.0], [3.0, 6.0]])).round(decimals=3).tolist()
    [[-1.0, -1.0], [1.0, 1.0]]
    """

    ndims: tuple = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs, per channel, as PyTorch's `BatchNorm2d`
    (running statistics and their updates as BatchNorm1d's).

    >>> import kiln as kn
    >>> bn = kn.nn.BatchNorm2d(3)
    >>> [name for name, _ in bn.named_buffers()]
    ['running_mean', 'running_var', 'num_batches_tracked']
    >>> abs(bn(kn.randn(4, 3, 5, 5)).mean().item()) < 1e-6
    True
    """

    ndims = (4,)


class GroupNorm(Module):
    """Normalizes each of `num_groups` groups of channels of (N, C, ...) inputs, then scales
    and shifts per channel (weight ones, bias zeros), as PyTorch's `GroupNorm`.

    >>> import kiln as kn
    >>> gn = kn.nn.GroupNorm(2, 4)
    >>> gn(kn.tensor([[1.0, 3.0, 10.0, 30.0]]))
    tensor([[-1.0000,  1.0000, -1.0000,  1.0000]], grad_fn=<AddBackward0>)
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ArgumentError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups,
            num_channels,
            eps,
            affine,
        )
        dtype = dtype or dt.DEFAULT_FLOAT
        self.weight = _param(init.ones(), (num_channels,), dtype) if affine else None
        self.bias = _param(init.zeros(), (num_channels,), dtype) if affine and bias else None
        if device is not None:
            self.to(device)

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _InstanceNorm(Module):
    ndims: tuple = (3, 4)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum, self.affine = (
            num_features,
            eps,
            momentum,
            affine,
        )
        self.track_running_stats = track_running_stats
        dtype = dtype or dt.DEFAULT_FLOAT
        self.weight = _param(init.ones(), (num_features,), dtype) if affine else None
        self.bias = _param(init.zeros(), (num_features,), dtype) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:  # as PyTorch's: the names exist, as None (not in state_dict)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim not in self.ndims:
            wanted = " or ".join(f"{d}D" for d in self.ndims)
            raise ArgumentError(f"expected {wanted} input (got {x.ndim}D input)")
        batched = x.ndim == self.ndims[1]
        x = x if batched else F.unsqueeze(x, 0)
        if self.track_running_stats and not self.training:
            stats = (self.running_mean, self.running_var)
            y = functional_norm.instance_norm(x, *stats, self.weight, self.bias, False,
                                              eps=self.eps)  # fmt: skip
        else:
            y = functional_norm.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)
            if self.track_running_stats and self.momentum is not None:
                self._record_updates(y, self._running_updates(x))
        return y if batched else F.squeeze(y, 0)

    def _running_updates(self, x) -> dict:
        """PyTorch's: the running statistics move towards the mean over the batch of each
        instance's mean and unbiased variance (num_batches_tracked stays)."""
        axes = tuple(range(2, x.ndim))
        n = math.prod(x.shape[a] for a in axes)
        x = F.cast(x, np.float32) if x.dtype in (dt.bfloat16, np.float16) else x
        mean = F.stop_gradient(F.mean(F.mean(x, axes), 0))
        var = F.stop_gradient(F.mean(F.var(x, axes, correction=1 if n > 1 else 0), 0))
        m = self.momentum
        return {"running_mean": self.running_mean * (1 - m) + mean * m,
                "running_var": self.running_var * (1 - m) + var * m}  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Normalizes each channel of each (N, C, L) or (C, L) sample over L (PyTorch's
    defaults: no affine parameters, no running statistics).

    >>> import kiln as kn
    >>> kn.nn.InstanceNorm1d(1)(kn.tensor([[[1.0, 3.0]]]))
    tensor([[[-1.0000,  1.0000]]])
    """

    ndims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Normalizes each channel of each (N, C, H, W) or (C, H, W) sample over H, W.

    >>> import kiln as kn
    >>> list(kn.nn.InstanceNorm2d(3, affine=True)(kn.randn(2, 3, 4, 4)).shape)
    [2, 3, 4, 4]
    """

    ndims = (3, 4)


class RMSNorm(Module):
    """`x / sqrt(mean(x**2) + eps) * weight` over the last dims, as PyTorch's `RMSNorm`.

    >>> import kiln as kn
    >>> kn.nn.RMSNorm(2, eps=0.0)(kn.tensor([[3.0, 4.0]]))
    tensor([[0.8485, 1.1314]], grad_fn=<MulBackward0>)
    """

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None
    ):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or dt.DEFAULT_FLOAT
        self.weight = (
            _param(init.ones(), self.normalized_shape, dtype) if elementwise_affine else None
        )
        if device is not None:
            self.to(device)

    def forward(self, x):
        return functional_norm.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
