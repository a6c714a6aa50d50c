"""PyTorch's `out=` argument on the frontend's functions: `takes_out` adds it, and
`kiln.eager.out.write_out` writes the result (the elementwise functions take `out` in their
own signature, kiln/eager/dispatch.py, so their short path stays one call)."""

from __future__ import annotations

import functools

from ..eager.out import write_out

__all__ = ["takes_out"]


def takes_out(fn):
    """`fn` with PyTorch's keyword `out=`, written by `write_out`. `.without_out` is `fn`
    itself: the Tensor methods, which take no `out`, call it without the extra frame."""

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        inputs = [a for a in (*args, *kwargs.values()) if not isinstance(a, (list, tuple))]
        inputs += [b for a in args if isinstance(a, (list, tuple)) for b in a]  # cat's list
        return write_out(fn.__name__, out, lambda: fn(*args, **kwargs), inputs)

    with_out.without_out = fn
    return with_out
