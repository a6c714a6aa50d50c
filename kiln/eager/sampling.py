"""Eager sampling functions with PyTorch's names and `generator=`: `randperm`, `bernoulli`,
`multinomial`, and the in-place `Tensor.normal_`, `uniform_`, `bernoulli_`, `exponential_`,
`cauchy_`, `log_normal_`, `geometric_`, `random_`. Every draw is
seeded by `next_seed()`: from `kn.manual_seed`'s stream, or from `generator` when given."""

from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentTypeError, UnsupportedDTypeError, UsageError
from ..graph.core import Symbol
from ..ops.random import host_seed, in_trace, seeds_from
from .factories import _finish, _integer_grad, _traced, rand, randn
from .grad_mode import no_grad
from .out import factory_out, takes_out
from .tensor import Tensor, make

__all__ = ["bernoulli", "multinomial", "randperm"]


# the float dtypes whose integers are exact up to 2**digits: a randperm of more refuses
_EXACT_UP_TO = {
    np.dtype(np.float16): 2**11,
    np.dtype(np.float32): 2**24,
    np.dtype(np.float64): 2**53,
}


def _rng(generator) -> np.random.Generator:
    with seeds_from(generator):
        return np.random.default_rng(host_seed())


def _host(t: Tensor) -> np.ndarray:
    data = t.detach()._data
    return data.get() if hasattr(data, "get") else np.asarray(data)  # NOTE: CuPy arrays


@factory_out(pin_memory=True)
def randperm(
    n: int, *, generator=None, dtype=dt.int64, device="cpu", requires_grad: bool = False
) -> Tensor:
    """A random permutation of `0 … n-1` (int64 unless `dtype`), as PyTorch's `randperm`.

    >>> import kiln as kn
    >>> g = kn.Generator().manual_seed(0)
    >>> p = kn.randperm(6, generator=g)
    >>> sorted(p.tolist()), bool((p == kn.randperm(6, generator=g.manual_seed(0))).all())
    ([0, 1, 2, 3, 4, 5], True)
    """
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise ArgumentTypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    n, dtype = operator.index(n), dt.as_dtype(dtype)
    if n < 0:
        raise UsageError(f"n must be non-negative, got {n}")
    if dtype.kind in "bc":
        raise UnsupportedDTypeError(f'"randperm" not implemented for {dtype}')
    if dtype.kind in "iu" and n - 1 > np.iinfo(dtype).max:
        raise UsageError(f"randperm: value cannot be converted to type {dtype} without overflow: "
                         f"n={n}")  # fmt: skip
    if dtype in _EXACT_UP_TO and n > _EXACT_UP_TO[dtype] + 1:  # (bfloat16: not checked, as PyTorch)
        raise UsageError(f"randperm: n cannot be greater than {_EXACT_UP_TO[dtype] + 1} for "
                         f"{dtype} type (its integers are exact up to there)")  # fmt: skip
    if in_trace():
        _integer_grad(dtype, requires_grad, "randperm")
        return _traced("randperm", (int(n),), dt.as_dtype(dtype), generator)
    values = _rng(generator).permutation(int(n)).astype(dt.as_dtype(dtype))
    return _finish(values, device, requires_grad)


@takes_out
def bernoulli(input, p=None, *, generator=None) -> Tensor:  # noqa: A002
    """0/1 samples, 1 with probability `input` (or `p`) per element, in `input`'s dtype, as
    PyTorch's `bernoulli`.

    >>> import kiln as kn
    >>> kn.bernoulli(kn.tensor([0.0, 1.0, 1.0]))
    tensor([0., 1., 1.])
    """
    if isinstance(input, Symbol) or in_trace():
        from ..frontend.random import sample_bernoulli

        return sample_bernoulli(input, p, generator=generator)
    if p is None and not (dt.is_float(input.dtype) or input.dtype.kind == "c"):
        raise UnsupportedDTypeError(f'"bernoulli_tensor_cpu_p_" not implemented for '
                                    f"{input.dtype} (the probabilities)")  # fmt: skip
    probs = _host(input) if p is None else np.broadcast_to(np.asarray(p), tuple(input.shape))
    if ((probs < 0) | (probs > 1)).any():
        raise UsageError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    draws = _rng(generator).random(probs.shape) < probs
    result = _finish(draws.astype(input.dtype), str(input.device), False)
    if p is None and input.requires_grad:  # PyTorch's: on the tape, with a zero gradient
        from ..frontend.math import where  # NOTE: the frontend builds on eager

        result = where(np.False_, input, result)
    return result


@takes_out
def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:  # noqa: A002
    """Indices drawn from the categories of each row of `input` (non-negative weights, 1-D
    or 2-D), without replacement unless `replacement`, as PyTorch's `multinomial` (int64).

    >>> import kiln as kn
    >>> kn.multinomial(kn.tensor([0.0, 0.0, 5.0, 0.0]), 1)
    tensor([2])
    """
    if isinstance(input, Symbol) or in_trace():
        from ..frontend.random import sample_multinomial

        return sample_multinomial(input, num_samples, replacement, generator=generator)
    if input.dtype.kind not in "f" and input.dtype != dt.bfloat16:
        raise UsageError(f"multinomial only supports floating-point dtypes for input, got: "
                         f"{input.dtype}")  # fmt: skip
    weights = _host(input).astype(np.float64)
    if weights.ndim not in (1, 2):
        raise UsageError(f"prob_dist must be 1 or 2 dim, got {weights.ndim}")
    rows = weights.reshape(int(np.prod(weights.shape[:-1])), weights.shape[-1])
    if num_samples <= 0:
        raise UsageError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > rows.shape[1]:
        raise UsageError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise UsageError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(1) <= 0).any():
        raise UsageError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    draws = [_draw(rng, row, num_samples, replacement) for row in rows]
    out = np.stack(draws) if draws else np.zeros((0, num_samples), np.int64)  # (no rows)
    out = out.reshape(*weights.shape[:-1], num_samples).astype(np.int64)
    return _finish(out, str(input.device), False)


def _draw(rng, row, num_samples: int, replacement: bool) -> np.ndarray:
    """`num_samples` categories of one row of weights. Without replacement, once the
    categories of positive weight are drawn, those of weight 0 follow (in order), as
    PyTorch's (its keys q / p are inf there, sorted last) gives them rather than refusing."""
    positive = int(np.count_nonzero(row))
    if replacement or positive >= num_samples:
        return rng.choice(row.shape[0], size=num_samples, replace=replacement, p=row / row.sum())
    drawn = rng.choice(row.shape[0], size=positive, replace=False, p=row / row.sum())
    return np.concatenate([drawn, np.flatnonzero(row == 0)[: num_samples - positive]])


def _fill_values(factory, shape: tuple, generator) -> Tensor:
    """float64 samples of `shape` from `factory` (`randn` or `rand`) for an in-place fill of
    an eager tensor. Inside a kn.compile trace (a tensor made there, or captured) they are
    drawn on the host, which the trace's check counts (`host_seed`): the function then runs
    eagerly, drawing afresh each call, as eager code does."""
    if in_trace():
        rng = _rng(generator)
        return make(rng.standard_normal(shape) if factory is randn else rng.random(shape))
    return factory(shape, generator=generator, dtype=np.float64)


def _fill_(t: Tensor, values: Tensor) -> Tensor:
    return t.copy_(values.to(t.device))  # PyTorch's in-place rules (a leaf needing grad refuses)


def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """In place: samples of N(mean, std²) (from `generator` when given)."""
    from ..frontend.torch_namespace import check_normal  # NOTE: the frontend builds on eager

    check_normal(dt.as_dtype(self.dtype), std)  # an integer tensor is refused, as PyTorch's
    with no_grad():
        draw = _fill_values(randn, tuple(self.shape), generator)
    return _fill_(self, make(_host(draw) * std + mean))


def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator=None, **kwargs) -> Tensor:
    """In place: samples of U[from, to) (PyTorch's `uniform_(from=0, to=1)`)."""
    from ..frontend.random import uniform_bounds  # NOTE: the frontend builds on eager

    from_ = kwargs.pop("from", from_)
    uniform_bounds(self.dtype, from_, to)
    parts = 2 if dt.is_complex(dt.as_dtype(self.dtype)) else 1  # complex: real, imaginary
    with no_grad():
        draw = _fill_values(rand, (*self.shape, parts), generator)
    values = _host(draw) * (to - from_) + from_
    return _fill_(
        self, make(values[..., 0] + 1j * values[..., 1] if parts == 2 else values[..., 0])
    )


def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """In place: 1 with probability `p` (a number or a Tensor of probabilities), else 0."""
    if isinstance(p, (int, float)):  # (a number: drawn as one under kn.compile too)
        if not 0 <= p <= 1:
            raise UsageError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        return _fill_(self, bernoulli(self, p, generator=generator))
    probs = _host(p) if isinstance(p, Tensor) else p
    if in_trace() and not isinstance(p, Symbol):  # drawn on the host: see `_fill_values`
        u = _host(_fill_values(rand, tuple(self.shape), generator))
        return _fill_(self, make((u < np.broadcast_to(probs, u.shape)).astype(self.dtype)))
    draws = bernoulli(self, np.broadcast_to(probs, tuple(self.shape)), generator=generator)
    return _fill_(self, draws)


def _distribution(name: str, kind: str, transform):
    """`Tensor.<name>(*args, generator=None)`: the transform of a float64 draw of `kind`
    (kiln/frontend/random.py's DISTRIBUTIONS), written into the tensor."""

    def method(self, *args, generator=None, **kwargs):
        if name == "random_":  # exact integers, where a float64 draw has too few bits
            from ..frontend.random import random_range  # NOTE: the frontend builds on eager

            low, high = random_range(self.dtype, args, kwargs)
            kind_ = np.uint64 if high > 2**63 else np.int64
            values = _rng(generator).integers(low, high, size=tuple(self.shape), dtype=kind_)
            return _fill_(self, make(values.astype(self.dtype)))
        with no_grad():
            draw = _fill_values(randn if kind == "normal" else rand, tuple(self.shape), generator)
            values = transform(draw.to("cpu"), self.dtype, *args, **kwargs)
        return _fill_(self, make(_host(values).astype(self.dtype)))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: samples of PyTorch's `{name}` distribution (`generator=`)."
    return method


def on_traced(method):
    """`method` of `Tensor` that, called unbound on a traced value (`kn.Tensor.normal_(x)`
    inside kn.compile, as PyTorch's own code calls `torch.Tensor.normal_`), does what that
    value's own method of the name does.

    >>> import kiln as kn
    >>> kn.compile(lambda x: kn.Tensor.uniform_(x, 2.0, 2.0))(kn.zeros(2)).tolist()
    [2.0, 2.0]
    """

    def call(self, *args, **kwargs):
        if isinstance(self, Symbol):
            return getattr(self, method.__name__)(*args, **kwargs)
        return method(self, *args, **kwargs)

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


def install_distributions(cls, distributions: dict) -> None:
    """The in-place distributions of `Tensor` (kiln/frontend/random.py's table, which the
    frontend passes: it builds on this package)."""
    for name, (kind, transform) in distributions.items():
        setattr(cls, name, on_traced(_distribution(name, kind, transform)))


def install(cls) -> None:
    """The sampling methods of `Tensor`."""
    cls.normal_, cls.uniform_, cls.bernoulli_ = map(on_traced, (normal_, uniform_, bernoulli_))
    cls.bernoulli = lambda self, p=None, *, generator=None: bernoulli(self, p, generator=generator)
    cls.multinomial = multinomial
