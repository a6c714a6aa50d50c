"""`kn.nn.utils.stateless`: PyTorch's deprecated home of `functional_call` (now
`kn.func.functional_call`, which it calls after PyTorch's FutureWarning)."""

from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):  # fmt: skip
    """`kn.func.functional_call`, under its deprecated name (a FutureWarning, as PyTorch's).

    >>> import kiln as kn, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     y = kn.nn.utils.stateless.functional_call(
    ...         kn.nn.Linear(1, 1), {"weight": kn.ones(1, 1), "bias": kn.zeros(1)}, (kn.ones(1),))
    >>> y.tolist()
    [1.0]
    """
    from ...tracing.func import functional_call as call  # NOTE: lazy: tracing builds on nn

    warnings.warn(
        "This API is deprecated as of PyTorch 2.0 and will be removed in a future version of "
        "PyTorch. Please use torch.func.functional_call instead which is a drop-in "
        "replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return call(module, parameters_and_buffers, () if args is None else args, kwargs,
                tie_weights=tie_weights, strict=strict)  # fmt: skip
