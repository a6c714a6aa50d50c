"""`kn.masked`: PyTorch's `torch.masked` reductions and normalizations of strided tensors with
a boolean `mask=` (broadcast to the input): masked-out elements are ignored.

Each function replaces the masked-out elements by the identity of its operation (0 for `sum`,
`cumsum`, `normalize` and `norm`, 1 for `prod` and `cumprod`, -inf (the dtype's least integer)
for `amax`, `argmax`, `softmax`, `log_softmax`, `logsumexp` and `logaddexp`, +inf for `amin`,
`argmin` and `softmin`, NaN for `median`) and calls kiln's op of the name, so eager code, graph
mode and `kn.compile` all run them and gradients flow through the kept elements. Results over
fully masked-out elements are PyTorch's: the identity (`sum` 0, `amax` -inf...), NaN for
`mean`, `median`, `var` and `std` and the softmaxes (0/0). `mask=None` keeps every element.
"""

from __future__ import annotations

import math

from .. import dtypes as dt
from ..errors import UnsupportedDTypeError

__all__ = [
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
    "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std",
    "sum", "var",
]  # fmt: skip

_SMALL_INTS = ("uint8", "bool", "int8", "int16", "int32")  # summed in int64 by default


def _kn():
    import kiln

    return kiln


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _canonical_dim(dim, ndim: int) -> tuple:
    """dim as a sorted tuple of dims in [0, ndim) (None or () for every dim), as PyTorch's."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"masked: dim={d} appears multiple times in the list of dims")
        if not -ndim <= d < ndim:
            raise IndexError(
                f"masked: Dimension out of range (expected to be in range of "
                f"[{-ndim}, {ndim - 1}], but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _dims(dim_: tuple):
    """The dims of a canonical tuple as the reductions take them (() of a 0-d input: all)."""
    return dim_ if dim_ else None


def _mask_of(input, mask):
    """mask broadcast to input's shape, as bool (IndexError if it has more dims)."""
    kn = _kn()
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError(
                f"masked: expected a mask broadcastable to the input (got a mask of "
                f"{mask.ndim} dims for an input of {input.ndim})"
            )
        mask = kn.broadcast_to(mask, input.shape)
    return mask.to(kn.bool)


def _input_mask(input, *args, **kwargs):
    """torch.masked's helper of the same name, which PyTorch's own wrappers of masked ops
    call (its OpInfo tests' gradcheck wrapper): the `mask` keyword broadcast to input's
    shape as bool, all True without one (the other arguments are the op's, unused)."""
    mask = kwargs.get("mask")
    if mask is None:
        return _kn().ones_like(input, dtype=_kn().bool)
    return _mask_of(input, mask)


def _identity(op: str, input, *args):
    """The value that op leaves out (a Python number), as PyTorch's _reduction_identity."""
    dtype = input.dtype
    floating = dtype.is_floating_point
    signed = dtype.is_signed or _name(dtype) == "uint8"
    if op in ("sum", "cumsum"):
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating or (op == "logsumexp" and dtype.is_complex):
            return -math.inf
        if signed and not dtype.is_complex and _name(dtype) != "bool":
            return int(_kn().iinfo(dtype).min)
    elif op in ("amin", "argmin"):
        if floating:
            return math.inf
        if signed and not dtype.is_complex and _name(dtype) != "bool":
            return int(_kn().iinfo(dtype).max)
    elif op == "norm":
        ord = args[0] if args else 2
        return math.inf if ord == -math.inf else 0
    elif op == "median":
        return math.nan
    raise UnsupportedDTypeError(f"masked.{op}: no identity for {_name(dtype)} inputs")


def _combine(op: str, input, mask, *args):
    """input with its masked-out elements replaced by op's identity."""
    if mask is None:
        return input
    return _kn().where(_mask_of(input, mask), input, _identity(op, input, *args))


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return _kn().int64 if _name(input.dtype) in _SMALL_INTS else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the elements of input that mask keeps, over dim (every dim by default);
    0 where every element is masked out. Small integer and bool inputs sum in int64.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.sum(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([4., 0.])
    """
    dtype = _sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    return _kn().sum(_combine("sum", input, mask), _dims(dim_), bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the elements of input that mask keeps, over dim (every dim by
    default); 1 where every element is masked out.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.prod(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([3., 1.])
    """
    dtype = _sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine("prod", input, mask).to(dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    """The cumulative sum along dim of input with its masked-out elements taken as 0.

    >>> import kiln as kn
    >>> kn.masked.cumsum(kn.tensor([1.0, 2.0, 3.0]), 0, mask=kn.tensor([True, False, True]))
    tensor([1., 1., 4.])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return _kn().cumsum(_combine("sum", input, mask), dim_, dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """The cumulative product along dim of input with its masked-out elements taken as 1.

    >>> import kiln as kn
    >>> kn.masked.cumprod(kn.tensor([2.0, 5.0, 3.0]), 0, mask=kn.tensor([True, False, True]))
    tensor([2., 2., 6.])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return _kn().cumprod(_combine("prod", input, mask), dim_, dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The largest element of input that mask keeps, over dim (every dim by default); -inf
    (the dtype's least integer) where every element is masked out.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 7.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.amax(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([3., -inf])
    """
    dtype = input.dtype if dtype is None else dtype
    masked = _combine("amax", input, mask)
    dim_ = _canonical_dim(dim, masked.ndim)
    return _kn().amax(masked, _dims(dim_) or (), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The least element of input that mask keeps, over dim (every dim by default); +inf
    (the dtype's largest integer) where every element is masked out.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 7.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.amin(x, 1, mask=kn.tensor([[False, True, True], [False, False, False]]))
    tensor([3., inf])
    """
    dtype = input.dtype if dtype is None else dtype
    masked = _combine("amin", input, mask)
    dim_ = _canonical_dim(dim, masked.ndim)
    return _kn().amin(masked, _dims(dim_) or (), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the largest element of input that mask keeps, along dim (of the
    flattened input by default), in input's dtype unless dtype is given (as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 7.0, 3.0])
    >>> kn.masked.argmax(x, 0, mask=kn.tensor([True, False, True]), dtype=kn.int64)
    tensor(2)
    """
    dtype = input.dtype if dtype is None else dtype
    return _kn().argmax(_combine("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the least element of input that mask keeps, along dim (of the flattened
    input by default), in input's dtype unless dtype is given (as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 7.0, 3.0])
    >>> kn.masked.argmin(x, 0, mask=kn.tensor([False, True, True]), dtype=kn.int64)
    tensor(2)
    """
    dtype = input.dtype if dtype is None else dtype
    return _kn().argmin(_combine("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the elements of input that mask keeps, over dim (every dim by default);
    NaN where every element is masked out. Takes floating and complex dtypes (ValueError
    otherwise, as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.mean(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([2., nan])
    """
    kn = _kn()
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype}"
        )
    if mask is None:
        count = sum(kn.ones_like(input, dtype=kn.int64), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _mask_of(input, mask)
        count = inmask.sum(dim=_dims(_canonical_dim(dim, input.ndim)), keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The median of the elements of input that mask keeps, along dim (the last by default;
    the lower of the two middle values for an even count); NaN where every element is masked
    out (a ValueError for integer inputs, as PyTorch's).

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 9.0, 3.0, 4.0], [4.0, 5.0, 6.0, 7.0]])
    >>> kn.masked.median(x, 1, mask=kn.tensor([[True, False, True, True], [False] * 4]))
    tensor([3., nan])
    """
    kn = _kn()
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(kn.float32)
    output = kn.nanmedian(_combine("median", input, mask), dim_, keepdim).values
    if is_float:
        return output
    if isinstance(output, kn.Tensor) and bool(kn.isnan(output).any()):
        raise ValueError(
            "masked median expects no fully masked out rows if dtype is not floating point"
        )
    return output.to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp(x))) of the elements x of input that mask keeps, over dim (every dim by
    default); -inf where every element is masked out.

    >>> import kiln as kn
    >>> x = kn.tensor([[0.0, 5.0, 0.0], [1.0, 2.0, 3.0]])
    >>> kn.masked.logsumexp(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([0.6931,   -inf])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)
    masked = _combine("logsumexp", input, mask)
    return _kn().logsumexp(masked, _dims(dim_) or (), keepdim=bool(keepdim)).to(dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)), elementwise, with the masked-out elements of each taken
    as -inf (-inf where both are masked out).

    >>> import kiln as kn
    >>> a, b = kn.tensor([-100.0, -200.0, -300.0]), kn.tensor([-1.0, -2.0, -3.0])
    >>> mask = kn.tensor([True, False, True])
    >>> kn.masked.logaddexp(a, b, input_mask=mask, other_mask=mask)
    tensor([-1., -inf, -3.])
    """
    dtype = input.dtype if dtype is None else dtype
    masked_input = _combine("logaddexp", input, input_mask)
    masked_other = _combine("logaddexp", other, other_mask)
    return _kn().logaddexp(masked_input, masked_other).to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The vector ord-norm of the elements of input that mask keeps, over dim (every dim by
    default), as `kn.linalg.vector_norm`; 0 where every element is masked out (+inf for
    ord=-inf).

    >>> import kiln as kn
    >>> x = kn.tensor([[3.0, 7.0, 4.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.norm(x, 2.0, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([5., 0.])
    """
    dtype = input.dtype if dtype is None else dtype
    masked = _combine("norm", input, mask, ord)
    dim_ = _canonical_dim(dim, input.ndim)
    return _kn().linalg.vector_norm(masked, ord, _dims(dim_), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction_opt, keepdim, dtype, mask, take_sqrt):
    kn = _kn()
    if unbiased is not None and correction_opt is not None:
        raise ValueError("masked var/std: only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = kn.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = kn.float32
    dims = _dims(_canonical_dim(dim, input.ndim))
    if mask is None:
        inmask = None
        count = sum(kn.ones_like(input, dtype=kn.int64), dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _mask_of(input, mask)
        count = inmask.sum(dim=dims, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    x = input - sample_total / count
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real = (
            dt.public(dt.to_real(dt.as_dtype(compute_dtype))) if compute_dtype.is_complex else None
        )
        count = (count.to(real or compute_dtype) - correction).clamp(min=0)
    output = (total / count).to(dtype)
    return kn.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The variance of the elements of input that mask keeps, over dim (every dim by
    default), with Bessel's correction unless unbiased=False or correction= says otherwise;
    NaN where every element is masked out. Integer inputs give float32.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 9.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.var(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([2., nan])
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The standard deviation of the elements of input that mask keeps, over dim (every dim
    by default): the square root of `kn.masked.var`'s.

    >>> import kiln as kn
    >>> x = kn.tensor([[1.0, 9.0, 3.0], [4.0, 5.0, 6.0]])
    >>> kn.masked.std(x, 1, mask=kn.tensor([[True, False, True], [False, False, False]]))
    tensor([1.4142,    nan])
    """
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax along dim of the elements of input that mask keeps (the masked-out ones give
    0; NaN where every element is masked out).

    >>> import kiln as kn
    >>> kn.masked.softmax(kn.tensor([1.0, 5.0, 1.0]), 0, mask=kn.tensor([True, False, True]))
    tensor([0.5000, 0.0000, 0.5000])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return _kn().nn.functional.softmax(_combine("amax", input, mask), dim_, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax along dim of the elements of input that mask keeps (the masked-out ones
    give -inf; NaN where every element is masked out).

    >>> import kiln as kn
    >>> kn.masked.log_softmax(kn.tensor([1.0, 5.0, 1.0]), 0, mask=kn.tensor([True, False, True]))
    tensor([-0.6931,    -inf, -0.6931])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return _kn().nn.functional.log_softmax(_combine("amax", input, mask), dim_, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmin along dim of the elements of input that mask keeps (the masked-out ones give
    0; NaN where every element is masked out).

    >>> import kiln as kn
    >>> kn.masked.softmin(kn.tensor([1.0, -5.0, 1.0]), 0, mask=kn.tensor([True, False, True]))
    tensor([0.5000, 0.0000, 0.5000])
    """
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return _kn().nn.functional.softmin(_combine("amin", input, mask), dim_, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the `kn.masked.norm` of its kept elements along dim (at least eps),
    with its masked-out elements 0.

    >>> import kiln as kn
    >>> x = kn.tensor([3.0, 7.0, 4.0])
    >>> kn.masked.normalize(x, 2.0, 0, mask=kn.tensor([True, False, True]))
    tensor([0.6000, 0.0000, 0.8000])
    """
    dtype = input.dtype if dtype is None else dtype
    masked = _combine("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return masked / _kn().clamp(nrm, min=eps)
