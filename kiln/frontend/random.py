"""Random values: `kn.random.normal`, `uniform`, `bernoulli`, `randint`, seeded by
`kn.manual_seed`; and PyTorch's `torch.random` names for the random state (`fork_rng`,
`get_rng_state`, `set_rng_state`, `initial_seed`, `seed`, `default_generator`, `Generator`).

Each call adds a random node to the default graph; every run of it draws fresh values, and
the sequence is the same for the same `kn.manual_seed`.
"""

from __future__ import annotations

import contextlib
import math

import ml_dtypes
import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, ArgumentTypeError, ShapeError, UnsupportedDTypeError, UsageError
from ..generator import Generator, default_generator
from ..graph.core import get_default_graph
from ..graph.opdef import REGISTRY
from ..ops.core import bind, bind_graph, scalar
from ..ops.random import manual_seed, next_seed, seeds_from

__all__ = [
    "normal",
    "uniform",
    "bernoulli",
    "randint",
    "manual_seed",
    "sample_bernoulli",
    "sample_multinomial",
    "traced_factory",
    "fork_rng",
    "default_generator",
    "Generator",
]


def __getattr__(name):
    """`get_rng_state`, `set_rng_state`, `initial_seed` and `seed`: kiln's (imported late:
    kiln builds this module before them)."""
    if name in ("get_rng_state", "set_rng_state", "initial_seed", "seed"):
        from . import torch_namespace

        return getattr(torch_namespace, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):  # fmt: skip
    """Runs its block with the random state of its start, and puts that state back after it
    (draws inside do not move the stream outside), as PyTorch's `torch.random.fork_rng`;
    kiln's one random state covers every device.

    >>> import kiln as kn
    >>> _ = kn.manual_seed(0)
    >>> with kn.random.fork_rng():
    ...     _ = kn.rand(5)
    >>> a = kn.rand(2); _ = kn.manual_seed(0)
    >>> bool((a == kn.rand(2)).all())
    True
    """
    if not enabled:
        yield
        return
    from .torch_namespace import get_rng_state, set_rng_state

    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def _random(op_name, shape, dtype, name, **params):
    attrs = {"shape": sh.as_shape(shape), "dtype": dt.as_dtype(dtype), "seed": next_seed()}
    return bind_graph(REGISTRY[op_name], (), {**attrs, **params}, name, get_default_graph())


def normal(shape, mean: float = 0.0, std: float = 1.0, dtype=dt.float32, name=None):
    """Normal samples of `shape` (dims may be symbolic), fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     z = kn.random.normal(("batch", 4), std=0.1)
    >>> z.type_str()
    'f32[batch,4]'
    """
    return _random("random_normal", shape, dtype, name, mean=float(mean), std=float(std))


def uniform(shape, low: float = 0.0, high: float = 1.0, dtype=dt.float32, name=None):
    """Uniform samples in `[low, high)` of `shape`, fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     u = kn.random.uniform((2, 3), -1.0, 1.0)
    >>> u.type_str()
    'f32[2,3]'
    """
    return _random("random_uniform", shape, dtype, name, low=float(low), high=float(high))


def bernoulli(shape, p: float = 0.5, dtype=dt.float32, name=None):
    """Ones with probability `p`, else zeros, of `shape`, fresh on every run.

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     m = kn.random.bernoulli((8,), p=0.9)
    >>> m.type_str()
    'f32[8]'
    """
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"bernoulli: p must be in [0, 1], got {p}")
    return _random("random_bernoulli", shape, dtype, name, p=float(p))


def randint(low: int, high: int, shape, dtype=dt.int64, name=None):
    """Integers drawn uniformly from [low, high) of `shape`, fresh on every run (PyTorch's
    `randint(low, high, size)`, as a graph node).

    >>> import kiln as kn
    >>> with kn.Graph().as_default():
    ...     i = kn.random.randint(0, 10, ("batch", 3))
    >>> i.type_str()
    'i64[batch,3]'
    """
    low, high = int(low), int(high)
    if high <= low:
        raise ArgumentError(f"randint: low ({low}) must be less than high ({high})")
    u = _random("random_uniform", shape, dt.float64, name, low=0.0, high=1.0)
    # NOTE: floor(u * n) < n for u < 1, but rounding may reach n for huge n: hence the minimum
    scaled = bind(REGISTRY["floor"], u * float(high - low)) + float(low)
    values = bind(REGISTRY["minimum"], scaled, scalar(float(high - 1), scaled))
    return bind(REGISTRY["cast"], values, dtype=dt.as_dtype(dtype))


def traced_factory(kind: str, shape, dtype, generator=None, **params):
    """The eager random factories inside a `kn.compile` trace: a random node (`kind` normal,
    uniform, randint or randperm) that draws fresh values on every call, seeded from
    `generator` when one is given (at trace time), else from the `kn.manual_seed` stream.

    >>> import kiln as kn
    >>> f = kn.compile(lambda x: x + kn.randn(3))
    >>> bool((f(kn.zeros(3)) != f(kn.zeros(3))).any())
    True
    """
    with seeds_from(generator):
        if kind == "normal":
            return normal(shape, dtype=dtype)
        if kind == "uniform":
            return uniform(shape, dtype=dtype)
        if kind == "randint":
            return randint(params["low"], params["high"], shape, dtype=dtype)
        # randperm: the order of n fresh uniform draws (float64: ties have probability ~n²/2⁵³)
        u = _random("random_uniform", shape, dt.float64, None, low=0.0, high=1.0)
        order = bind(REGISTRY["argsort"], u, axis=0, descending=False)
        return order if order.dtype == dtype else bind(REGISTRY["cast"], order, dtype=dtype)


def uniform_bounds(dtype, from_, to) -> None:
    """PyTorch's checks of `uniform_(from, to)` on a tensor of dtype: a floating or complex
    one (NotImplementedError otherwise), bounds within its finite range, from <= to and a
    span the dtype holds (RuntimeError)."""
    dtype = dt.as_dtype(dtype)
    if not (dt.is_float(dtype) or dt.is_complex(dtype)):
        raise UnsupportedDTypeError(
            f"uniform_: not implemented for {dt.public(dtype)} tensors (floating and "
            f"complex ones only)"
        )
    big = float(ml_dtypes.finfo(dt.to_real(dtype)).max)
    if not all(isinstance(v, (int, float)) for v in (from_, to)):
        return  # (bounds of other kinds: checked where they are numbers)
    for name, bound in (("from", from_), ("to", to)):
        if not -big <= bound <= big:  # (infinities and NaN too)
            raise UsageError(f"uniform_: {name} is out of bounds for {dtype}: {bound}")
    if from_ > to:
        raise UsageError(
            f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}"
        )
    if to - from_ > big:
        raise UsageError(f"uniform_ expects to-from <= the greatest {dtype}, but found "
                         f"to={to} and from={from_}")  # fmt: skip


def _uniform_fill(x, from_, to):
    """x.uniform_(from, to) as graph nodes: a complex x gets real and imaginary parts drawn
    apart, as PyTorch's."""
    uniform_bounds(x.dtype, from_, to)
    if not dt.is_complex(x.dtype):
        return uniform(x.shape, from_, to, x.dtype)
    from .complex_numbers import complex as make_complex

    real = dt.to_real(dt.as_dtype(x.dtype))
    return make_complex(uniform(x.shape, from_, to, real), uniform(x.shape, from_, to, real))


def _fill(draw):
    """A random in-place fill of a Symbol (`x.normal_()`, ...) as the value x then stands
    for (kiln/frontend/functionalize.py), drawn in x's graph and dtype."""

    def compute(x, *args, generator=None, **kwargs):
        with x.graph.as_default(), seeds_from(generator):
            return draw(x, *args, **kwargs)

    return compute


RANDOM_FILLS = {
    "normal_": _fill(lambda x, mean=0.0, std=1.0: normal(x.shape, mean, std, x.dtype)),
    "uniform_": _fill(lambda x, from_=0.0, to=1.0, **kw: _uniform_fill(
        x, kw.pop("from", from_), to)),
    "bernoulli_": _fill(lambda x, p=0.5: sample_bernoulli(x * 0.0 + p)),
}  # fmt: skip


# -- PyTorch's other in-place distributions, as transforms of float64 draws -----------------


def _positive(name: str, what: str, value) -> None:
    if not value > 0:
        raise UsageError(f"{name} expects {what} > 0.0, but found {what}={value}")


def _continuous(name: str, dtype) -> None:
    """PyTorch's refusal of an integer tensor: RuntimeError (NotImplementedError for
    log_normal_, which has no integer kernel)."""
    if not dt.is_float(dtype):
        message = (f"{name}: the distribution is continuous, so the dtype must be a floating "
                   f"point one, got {dtype}")  # fmt: skip
        if name == "log_normal_":
            raise UnsupportedDTypeError(message)
        raise UsageError(message)


def _exponential(u, dtype, lambd=1.0):
    from . import math as m

    _continuous("exponential_", dtype), _positive("exponential_", "lambda", lambd)
    return m.div(m.neg(m.log1p(m.neg(u))), float(lambd))


def _cauchy(u, dtype, median=0.0, sigma=1.0):
    from . import math as m
    from .torch_math import tan

    _continuous("cauchy_", dtype), _positive("cauchy_", "sigma", sigma)
    return m.add(m.mul(tan(m.mul(m.sub(u, 0.5), math.pi)), float(sigma)), float(median))


def _log_normal(z, dtype, mean=1.0, std=2.0):
    from . import math as m

    _continuous("log_normal_", dtype), _positive("log_normal_", "std", std)
    return m.exp(m.add(m.mul(z, float(std)), float(mean)))


def _geometric(u, dtype, p):
    from . import math as m

    if dt.as_dtype(dtype) == dt.bool_ or dt.is_complex(dtype):
        raise UnsupportedDTypeError(f"geometric_: not implemented for {dt.public(dtype)} tensors")

    if not 0 < p < 1:
        raise UsageError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    # floor(E) + 1 for E = log(1 - u) / log(1 - p), exponential: P(k) = (1 - p)^(k - 1) p
    return m.add(m.floor(m.div(m.log1p(m.neg(u)), math.log1p(-p))), 1.0)


def random_range(dtype, args, kwargs) -> tuple:
    """[low, high) of PyTorch's `random_(from=0, to=None)` (one positional argument is `to`)
    for a tensor of `dtype`: without `to`, up to 2**mantissa bits for floats (included), the
    dtype's greatest value for integers (included)."""
    low, high = (0, args[0]) if len(args) == 1 else (tuple(args) + (0, None))[:2]
    low = int(kwargs.pop("from", low))
    high = kwargs.pop("to", high)
    if kwargs:
        raise ArgumentTypeError(f"random_() got unexpected keyword arguments {sorted(kwargs)}")
    dtype = dt.as_dtype(dtype)
    if dtype.kind == "c":
        raise UnsupportedDTypeError(f'"random_" not implemented for {dtype}')
    if high is None:
        if dt.is_float(dtype):  # every integer up to 2**digits is a value of the dtype
            digits = 8 if dtype == dt.bfloat16 else np.finfo(dtype).nmant + 1
            high = 2**digits + 1
        else:
            high = 2 if dtype == dt.bool_ else int(np.iinfo(dtype).max) + 1
    high = int(high)
    if low >= high:
        raise UsageError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                         f">= to={high}")  # fmt: skip
    from ..eager.factories import check_range  # NOTE: the frontend builds on eager

    check_range(low, high, dtype)  # (an integer or bool dtype's)
    return low, high


def _random_ints(u, dtype, *args, **kwargs):
    from . import math as m

    low, high = random_range(dtype, args, kwargs)
    # NOTE: floor(u * n) < n for u < 1, but rounding may reach n for huge n: hence minimum
    scaled = m.floor(m.mul(u, float(high - low)))
    return m.add(m.minimum(scaled, float(high - low - 1)), float(low))


# name: (the draw it transforms, "uniform" or "normal"; the transform (draw, dtype, *args))
DISTRIBUTIONS = {
    "exponential_": ("uniform", _exponential),
    "cauchy_": ("uniform", _cauchy),
    "log_normal_": ("normal", _log_normal),
    "geometric_": ("uniform", _geometric),
    "random_": ("uniform", _random_ints),
}


def _distribution_fill(kind: str, transform):
    def draw(x, *args, **kwargs):
        z = (normal if kind == "normal" else uniform)(x.shape, dtype=dt.float64)
        values = transform(z, x.dtype, *args, **kwargs)
        return bind(REGISTRY["cast"], values, dtype=x.dtype)

    return _fill(draw)


RANDOM_FILLS |= {name: _distribution_fill(*entry) for name, entry in DISTRIBUTIONS.items()}


def sample_bernoulli(probs, p=None, *, generator=None):
    """PyTorch's `bernoulli(input, p=None)` as graph nodes: 1 where a fresh uniform draw is
    below the probability (`probs`, or `p` in its shape), else 0, in `probs`'s dtype; what
    `kn.bernoulli` and `Symbol.bernoulli` give in graph mode and under `kn.compile`.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (3,), name="x")
    ...     f = kn.function([x], kn.bernoulli(x))
    >>> f(np.array([0.0, 1.0, 1.0], np.float32))
    array([0., 1., 1.], dtype=float32)
    """
    from .core import lift
    from .math import cast, less

    if generator is not None:
        raise ArgumentTypeError(
            "bernoulli: generator= is for eager tensors; a graph's draws follow kn.manual_seed"
        )
    (probs,) = lift(probs)
    if p is None and not (dt.is_float(probs.dtype) or probs.dtype.kind == "c"):
        raise UnsupportedDTypeError(f'"bernoulli_tensor_cpu_p_" not implemented for '
                                    f"{probs.dtype} (the probabilities)")  # fmt: skip
    if isinstance(p, (int, float)) and not 0 <= p <= 1:
        raise UsageError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if p is None:
        limit = probs
    elif isinstance(p, (int, float)):
        limit = cast(scalar(float(p), probs) + probs * 0, probs.dtype)
    else:  # probabilities of probs's shape (`bernoulli_` of a tensor p)
        (limit,) = lift(p)
    u = _random("random_uniform", probs.shape, dt.float64, None, low=0.0, high=1.0)
    return cast(less(u, cast(limit, dt.float64)), probs.dtype)


def sample_multinomial(weights, num_samples: int, replacement: bool = False, *, generator=None):
    """PyTorch's `multinomial` as graph nodes: `num_samples` category indices per row of the
    non-negative `weights` (1-D or 2-D), drawn by the Gumbel-max trick: the argmax of
    `log(w) + g` (g standard Gumbel noise) is a draw with probabilities `w / sum(w)`; the
    top k of one noisy row are k draws without replacement.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.placeholder(kn.float32, (2, 4), name="w")
    ...     f = kn.function([w], kn.multinomial(w, 1))
    >>> f(np.array([[0, 0, 5, 0], [1, 0, 0, 0]], np.float32))
    array([[2],
           [0]])
    """
    from .core import lift
    from .math import add, argmax, log, neg
    from .torch_math import topk

    if generator is not None:
        raise ArgumentTypeError(
            "multinomial: generator= is for eager tensors; a graph's draws follow kn.manual_seed"
        )
    (w,) = lift(weights)
    if w.dtype.kind != "f" and w.dtype != dt.bfloat16:
        raise UsageError(f"multinomial only supports floating-point dtypes for input, got: "
                         f"{w.dtype}")  # fmt: skip
    if w.ndim not in (1, 2):
        raise ShapeError(f"multinomial: prob_dist must be 1 or 2 dim, got {w.ndim}")
    n = w.shape[-1]
    if num_samples <= 0:
        raise UsageError("cannot sample n_sample <= 0 samples")
    if not replacement and isinstance(n, int) and num_samples > n:
        raise ShapeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                            "without replacement")  # fmt: skip
    logw = log(bind(REGISTRY["cast"], w, dtype=dt.float64))

    def gumbel(shape):
        u = _random("random_uniform", shape, dt.float64, None, low=0.0, high=1.0)
        return neg(log(neg(log(add(u, 1e-300)))))

    if not replacement:
        return topk(add(logw, gumbel(w.shape)), num_samples, dim=-1).indices
    lead = tuple(w.shape[:-1])
    noisy = add(bind(REGISTRY["reshape"], logw, shape=(*lead, 1, n)),
                gumbel((*lead, num_samples, n)))  # fmt: skip
    return argmax(noisy, -1)
