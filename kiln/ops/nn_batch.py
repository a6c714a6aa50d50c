"""`kn.vmap`'s batching rules of the image ops (conv2d, the pools, their gradients): the vmap
batch merges into the examples dim N where the op works per example, and where it does not
(a batched weight, a weight gradient summed over the examples) the op runs once per batch
element and the results stack. `vmap(grad(loss))` over a CNN (per-sample gradients) needs both.
"""

from __future__ import annotations

from .core import apply, unbatched_to

__all__ = ["batch_per_example"]


def _size(args, batched) -> int:
    return next(a.shape[0] for a, b in zip(args, batched) if b)


def _by_loop(name, args, batched, attrs):
    """`name` once per batch element (the batched args indexed), stacked along a new dim 0."""
    outs = []
    for i in range(_size(args, batched)):
        sliced = [apply("index", a, spec=(("int", i),)) if b else a for a, b in zip(args, batched)]
        y = apply(name, *sliced, **attrs)
        outs.append(apply("reshape", y, shape=(1, *y.shape)))
    return outs[0] if len(outs) == 1 else apply("concat", *outs, axis=0)


def batch_per_example(name: str, examples=(0,), per_example_result: bool = True):
    """The batching rule of op `name`: its args at `examples` (and its result) lead with the
    examples dim N, so a vmap batch B merges into it, (B, N, ...) -> (B * N, ...), and the
    result splits back (an `x_shape` attr is scaled too); a batched other arg (a weight), or
    a result that is not per example (`per_example_result=False`), runs the op per element.

    >>> import kiln as kn, numpy as np
    >>> f = kn.vmap(lambda x: kn.nn.functional.max_pool2d(x, 2))
    >>> f(np.arange(32.0, dtype=np.float32).reshape(2, 1, 1, 4, 4)).shape
    (2, 1, 1, 2, 2)
    """

    def rule(args, batched, **attrs):
        others = [b for i, b in enumerate(batched) if i not in examples]
        if any(others) or not per_example_result:
            return _by_loop(name, args, batched, attrs)
        n = _size(args, batched)
        merged = list(args)
        for i in examples:
            a = args[i] if batched[i] else unbatched_to(args[i], n)
            merged[i] = apply("reshape", a, shape=(n * a.shape[1], *a.shape[2:]))
        if "x_shape" in attrs:
            first, *rest = attrs["x_shape"]
            attrs = {**attrs, "x_shape": (n * first, *rest)}
        y = apply(name, *merged, **attrs)
        return apply("reshape", y, shape=(n, y.shape[0] // n, *y.shape[1:]))

    return rule
