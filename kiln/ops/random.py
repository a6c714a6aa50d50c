"""Random primitives. Each node carries a `seed` attr; each run draws fresh values from the
stream `(seed, run number)`, so a program is reproducible for a given `kn.manual_seed`."""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from .core import defop, scalar

_state = {"base": 0, "count": 0}
_lock = threading.Lock()


class _Source(threading.local):
    """This thread's random-number state: `generator`, a kn.Generator that seeds instead
    while set; `traces`, how many kn.compile traces run. Class defaults, so that reading
    them is a plain lookup (a missing attribute's getattr costs ~0.5 us: every factory call
    asks `in_trace()`)."""

    generator = None
    traces = 0
    host_draws = 0  # seeds taken for draws made on the host while a trace ran (`host_seed`)
    # seed -> kn.Generator of each random node made in a trace inside `seeds_from(g)`: each
    # call draws that node's step from g (`draw_steps`), not from the default stream
    traced_generators: dict = {}


_source = _Source()


def manual_seed(seed: int) -> None:
    """Seeds every random op created (and, in eager mode, run) from now on, and the eager
    random factories' stream (`kiln.generator.default_generator`)."""
    from ..generator import default_generator

    if _source.traces:  # (a kn.compile trace: see `host_seed`; it then runs eagerly)
        _source.host_draws += 1
    with _lock:
        _state["base"] = int(seed)
        _state["count"] = 0
        default_generator.manual_seed(seed)


def draw_steps(graph, names, groups=()) -> None:
    """Sets the next step of each random node named in `names` (of `graph`, a `kn.compile`
    trace) to one value drawn from the default generator, so that a compiled call draws
    fresh values each call and the same ones again after the same `kn.manual_seed`, as
    PyTorch's compiled functions do (a graph's own steps only count its runs: TF1's rule).
    `groups`: (generator, names) of the nodes drawn with a `generator=` argument, whose
    step comes from that generator (`random_nodes`): a call after `g.manual_seed(s)` repeats
    the draws of the call after the same seeding before, and the default stream is left
    alone, as eager draws from g.

    >>> import kiln as kn
    >>> g = kn.Graph()
    >>> kn.manual_seed(0); draw_steps(g, ["r"]); first = g.rng_steps["r"]
    >>> kn.manual_seed(0); draw_steps(g, ["r"]); g.rng_steps["r"] == first
    True
    """
    from ..generator import default_generator

    steps = [(default_generator.next_seed(), names)] if names else []
    steps += [(generator.next_seed(), names) for generator, names in groups]
    with graph._lock:
        for step, names in steps:
            graph.rng_steps.update(dict.fromkeys(names, step))


def random_nodes(graph) -> tuple[list, list]:
    """The names of the random nodes of `graph`, a trace that has just run, whose steps come
    from the default stream (`draw_steps`), and the (generator, names) groups of those drawn
    with a `generator=` argument (`draw_generator_steps`)."""
    names, groups = [], {}
    for node in graph.nodes:
        if "random" in node.op.tags:
            generator = _source.traced_generators.pop(node.attrs.get("seed"), None)
            if generator is None:
                names.append(node.name)
            else:
                groups.setdefault(id(generator), (generator, []))[1].append(node.name)
    return names, list(groups.values())


def in_trace() -> bool:
    """Whether a `kn.compile` trace runs in this thread: the eager random factories (`randn`,
    `rand`, `randint`, `randperm`) then add random nodes, which draw fresh values on every
    call of the compiled function, as torch.compile's do (not values drawn once, at trace
    time)."""
    return _source.traces > 0


def enter_trace(step: int) -> None:
    """Counts a trace in (`step` 1) or out (-1): `tracing_on` calls it."""
    _source.traces += step
    if step > 0 and _source.traces == 1:  # (what a trace that failed left)
        _source.traced_generators = {}


def next_seed() -> int:
    """The seed of the next random node: a deterministic function of the manual seed, or
    drawn from the `kn.Generator` of an enclosing `seeds_from`."""
    source = _source.generator
    if source is not None and _source.traces == 0:
        return source.next_seed()
    with _lock:  # (in a kn.compile trace, a generator gives each call's step instead)
        key = (_state["base"], _state["count"])
        _state["count"] += 1
    seed = int(np.random.SeedSequence(key).generate_state(1, np.uint64)[0] >> 1)
    if source is not None:
        _source.traced_generators[seed] = source
    return seed


def host_seed() -> int:
    """`next_seed()` for a draw made on the host with NumPy (kn.init's initializers, kiln's
    in-place `random_`): one made while a kn.compile trace runs is counted (`host_draws`), as
    its values would be constants of the program (the check refuses that trace: its function
    then runs eagerly, drawing afresh each call as eager code does).

    >>> import kiln as kn
    >>> kn.manual_seed(0); first = host_seed()
    >>> kn.manual_seed(0); host_seed() == first
    True
    """
    if _source.traces:
        _source.host_draws += 1
    return next_seed()


@contextlib.contextmanager
def seeds_from(generator):
    """Random draws inside take their seeds from `generator` (a `kn.Generator`, advancing its
    state) instead of the global stream; None leaves the global stream in place. This is how
    every `generator=` argument works.

    >>> import kiln as kn
    >>> g = kn.Generator().manual_seed(3)
    >>> with seeds_from(g):
    ...     a = next_seed()
    >>> a == kn.Generator().manual_seed(3).next_seed()
    True
    """
    if generator is None:
        yield
        return
    saved = _source.generator
    _source.generator = generator
    try:
        yield
    finally:
        _source.generator = saved


def generator(xp, key):
    """A generator for the stream `key = (seed, step)` on the array module `xp`."""
    if xp is np:
        return np.random.default_rng(key)
    return xp.random.default_rng(int(np.random.SeedSequence(key).generate_state(1)[0]))


def _shape_rule(**attrs):
    return attrs["shape"]


def _float_dtype(**attrs):
    d = dt.as_dtype(attrs["dtype"])
    if not dt.is_float(d):
        raise dt.DTypeError(f"random values need a float dtype, got {d}")
    return d


def _draw(xp, kind, out, key, shape, dtype):
    rng = generator(xp, key)
    native = dtype if dtype in (dt.float32, dt.float64) else dt.float32
    fn = rng.standard_normal if kind == "normal" else rng.random
    if out is not None and out.dtype == native and out.flags.c_contiguous:
        # NOTE: `shape` too: CuPy 13's `random(out=...)` without a size draws one value
        # and broadcasts it over `out`.
        return fn(shape, dtype=native, out=out)
    values = fn(shape, dtype=native)
    if out is None:
        return values.astype(dtype, copy=False)
    out[...] = values
    return out


def _normal(xp, out=None, *, key, shape, dtype, seed, mean, std):
    out = _draw(xp, "normal", out, key, shape, dtype)
    out *= std
    out += mean
    return out


def _uniform(xp, out=None, *, key, shape, dtype, seed, low, high):
    out = _draw(xp, "uniform", out, key, shape, dtype)
    out *= high - low
    out += low
    return out


def _bernoulli(xp, out=None, *, key, shape, dtype, seed, p):
    u = generator(xp, key).random(shape)
    if out is None:
        return (u < p).astype(dtype)
    xp.less(u, p, out=out, casting="unsafe")
    return out


random_normal = defop("random_normal", _shape_rule, _float_dtype, _normal, tags={"random"})
random_uniform = defop("random_uniform", _shape_rule, _float_dtype, _uniform, tags={"random"})
random_bernoulli = defop(
    "random_bernoulli", _shape_rule, lambda **a: dt.as_dtype(a["dtype"]), _bernoulli,
    tags={"random"},
)  # fmt: skip


def _same_float(*dtypes, **attrs):
    d = dtypes[0]
    if not dt.is_float(d) or any(o != d for o in dtypes):
        raise dt.DTypeError(
            f"random counts need one float dtype, got {', '.join(f'{d}' for d in dtypes)}"
        )
    return d


def _poisson(xp, rate, out=None, *, key, seed):
    draws = xp.asarray(generator(xp, key).poisson(xp.asarray(rate, dtype=np.float64)))
    if out is None:
        return draws.astype(rate.dtype)
    out[...] = draws
    return out


def _binomial(xp, count, prob, out=None, *, key, seed):
    shape = np.broadcast_shapes(count.shape, prob.shape)
    n = xp.broadcast_to(xp.rint(count).astype(np.int64), shape)
    p = xp.clip(xp.broadcast_to(prob.astype(np.float64), shape), 0.0, 1.0)
    draws = xp.asarray(generator(xp, key).binomial(n, p))
    if out is None:
        return draws.astype(count.dtype)
    out[...] = draws
    return out


# The counts are piecewise constant in their parameters: zero cotangents, as PyTorch's.
random_poisson = defop(
    "random_poisson", lambda s, **a: s, _same_float, _poisson,
    vjp=lambda ct, y, rate, **a: (ct * scalar(0, ct),), tags={"random"},
)  # fmt: skip
random_binomial = defop(
    "random_binomial", lambda a, b, **k: sh.broadcast_shapes(a, b), _same_float, _binomial,
    vjp=lambda ct, y, count, prob, **a: (None, None), tags={"random"},
)  # fmt: skip
