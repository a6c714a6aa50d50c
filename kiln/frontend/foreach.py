"""PyTorch's `torch._foreach_*` functions: one op applied to each tensor of a list (and the
matching element of each list argument), as weight-averaging and optimizer code calls them
(`torch._foreach_lerp_(ema_params, params, 1 - decay)`). kiln runs them as a loop of the
tensors' own methods: the same values, eagerly and under `kn.compile`.

>>> import kiln as kn
>>> ema, params = [kn.zeros(2)], [kn.ones(2)]
>>> kn._foreach_lerp_(ema, params, 0.25)[0]
tensor([0.2500, 0.2500])
>>> kn._foreach_add([kn.ones(1), kn.ones(2)], [1.0, 2.0])
(tensor([2.]), tensor([3., 3.]))
"""

from __future__ import annotations

from .linalg import vector_norm

_UNARY = (
    "abs acos asin atan ceil clone cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
    "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc"
).split()
_BINARY = "add addcdiv addcmul clamp_max clamp_min div lerp maximum minimum mul pow sub".split()
_INPLACE_ONLY = ("copy_", "zero_")


def _element(value, i: int):
    """The `i`th of a list argument (one per tensor); a scalar or a tensor goes to each."""
    return value[i] if isinstance(value, (list, tuple)) else value


def _foreach(method: str):
    inplace = method.endswith("_")

    def apply(self, *args, **kwargs):
        if method.startswith(("addcdiv", "addcmul")) and len(args) == 3:
            *args, kwargs["value"] = args  # (PyTorch's positional `scalars`: the methods' value)
        results = tuple(
            getattr(t, method)(
                *(_element(a, i) for a in args), **{k: _element(v, i) for k, v in kwargs.items()}
            )
            for i, t in enumerate(self)
        )
        return self if inplace else results  # (PyTorch's: the list itself, or a tuple)

    apply.__name__ = apply.__qualname__ = f"_foreach_{method}"
    apply.__doc__ = (
        f"`t.{method}(...)` for each tensor `t` of a list (PyTorch's `_foreach_{method}`)."
    )
    return apply


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002
    """The vector norm of each tensor of a list (PyTorch's `_foreach_norm`).

    >>> import kiln as kn
    >>> kn._foreach_norm([kn.tensor([3.0, 4.0])])
    (tensor(5.),)
    """
    return tuple(vector_norm(t, ord, dtype=dtype) for t in self)


def _foreach_max(self):
    """The largest element of each tensor of a list (PyTorch's `_foreach_max`)."""
    return tuple(t.max() for t in self)


_names = [f"{m}{s}" for m in _UNARY + _BINARY for s in ("", "_")] + list(_INPLACE_ONLY)
globals().update({f"_foreach_{m}": _foreach(m) for m in _names})
__all__ = [f"_foreach_{m}" for m in _names] + ["_foreach_norm", "_foreach_max"]
