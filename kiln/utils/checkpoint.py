"""`kiln.utils.checkpoint`: `torch.utils.checkpoint`'s names for activation checkpointing,
`kn.checkpoint` (kiln/eager/recompute.py): `checkpoint(function, *args)` and
`checkpoint_sequential(functions, segments, input)`.

>>> import kiln as kn
>>> from kiln.utils.checkpoint import checkpoint
>>> x = kn.tensor([1.0, 2.0], requires_grad=True)
>>> checkpoint(lambda v: (v * v).sum(), x, use_reentrant=False).backward()
>>> x.grad
tensor([2., 4.])
"""

from __future__ import annotations

from ..eager.recompute import checkpoint as _checkpoint

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None,
               determinism_check: str = "default", debug: bool = False,
               preserve_rng_state: bool = True, **kwargs):  # fmt: skip
    """`function(*args, **kwargs)` whose activations the backward pass recomputes
    (`kn.checkpoint`). PyTorch's switches between its implementations and debugging aids
    (`use_reentrant`, `context_fn`, `determinism_check`, `debug`) are taken and change
    nothing; random ops in `function` draw again when recomputed eagerly
    (`preserve_rng_state` is not kept, see `kn.checkpoint`)."""
    return _checkpoint(function, *args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant=None, **kwargs):  # noqa: A002
    """`functions` (a Sequential, or a list of modules or functions) applied in order to
    `input`, in `segments` chunks: each chunk but the last is checkpointed, as PyTorch's.

    >>> import kiln as kn
    >>> net = kn.nn.Sequential(kn.nn.Linear(2, 3), kn.nn.Tanh(), kn.nn.Linear(3, 1))
    >>> checkpoint_sequential(net, 2, kn.ones(4, 2)).shape
    kiln.Size([4, 1])
    """
    from ..nn.module import Module  # NOTE: lazy: kiln.nn imports kiln.utils

    if isinstance(functions, Module):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)  # noqa: A001
    return run(end + 1, len(functions) - 1)(input)
