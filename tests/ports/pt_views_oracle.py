"""Running one scenario on PyTorch and on kiln and comparing what each gives.

A scenario is a function of `lib` (torch, or kiln in its place) that returns nested tuples,
lists and dicts of tensors and Python values. `assert_same` compares them: values, dtype, shape
and, for eager tensors, strides, contiguity and storage offset. Aliasing is read from the
values: a scenario writes through a view and returns its base. `assert_same_error` runs a call
that PyTorch refuses and checks that kiln refuses it with an exception of the same type
(kiln's errors subclass the built-in PyTorch raises).
"""

import numpy as np
import pytest
from port_common import to_numpy


class values:  # noqa: N801 - reads as a marker in a scenario's result
    """A result whose values, dtype and shape are compared, not its layout: PyTorch's
    `nonzero(as_tuple=True)` gives views of one index matrix (storage offsets 0, n, 2n...)
    where kiln gives separate vectors; no program can tell them apart but by their offsets."""

    def __init__(self, result):
        self.result = result


def arange(lib, *shape, dtype=None):
    """0, 1, 2... in `shape` (float32 unless `dtype`)."""
    n = int(np.prod(shape)) if shape else 1
    return lib.arange(n, dtype=dtype or lib.float32).reshape(shape)


def is_tensor(x):
    return hasattr(x, "dtype") and hasattr(x, "shape") and hasattr(x, "stride")


def describe(x, layout=True):
    """What the comparison reads from one result."""
    if isinstance(x, values):
        return describe(x.result, layout=False)
    if is_tensor(x):
        d = {
            "dtype": str(x.dtype).split(".")[-1],
            "shape": tuple(x.shape),
            "values": to_numpy(x).copy(),
        }
        # NOTE: the layout of a tensor without elements is left out: NumPy gives a new empty
        # array zero strides and keeps an empty slice's pointer at its base's start, so kiln
        # reports other strides and offsets there than PyTorch's history-dependent ones
        if layout and x.numel():
            d["stride"] = tuple(x.stride())
            d["contiguous"] = x.is_contiguous()
            d["offset"] = x.storage_offset()
        return d
    if isinstance(x, dict):
        return {k: describe(v, layout) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [describe(v, layout) for v in x]
    if type(x).__name__ in ("dtype", "DType"):
        return ("dtype", str(x).split(".")[-1])
    if hasattr(x, "__index__") and not isinstance(x, (bool, int)):
        return ("size-like", tuple(x))
    return x


def _compare(k, t, path):
    if isinstance(t, dict) and "values" in t and "dtype" in t:
        assert isinstance(k, dict) and "values" in k, f"{path}: kiln gave {k!r}, torch a tensor"
        for key in t:
            if key == "values":
                np.testing.assert_array_equal(k[key], t[key], err_msg=path)
            else:
                assert k[key] == t[key], f"{path} {key}: kiln {k[key]!r}, torch {t[key]!r}"
        return
    if isinstance(t, dict):
        assert isinstance(k, dict) and list(k) == list(t), f"{path}: kiln {k!r}, torch {t!r}"
        for key in t:
            _compare(k[key], t[key], f"{path}.{key}")
        return
    if isinstance(t, list):
        assert isinstance(k, list) and len(k) == len(t), f"{path}: kiln {k!r}, torch {t!r}"
        for i, (kv, tv) in enumerate(zip(k, t)):
            _compare(kv, tv, f"{path}[{i}]")
        return
    assert type(k) is type(t) and k == t, f"{path}: kiln {k!r}, torch {t!r}"


def assert_same(kiln_out, torch_out, layout=True):
    _compare(describe(kiln_out, layout), describe(torch_out, layout), "result")


def builtin_type(exc):
    """The first built-in exception class of `exc`'s type (torch's own errors subclass them)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    raise AssertionError(exc)


def assert_same_error(call, torch, kiln):
    """`call(torch)` raises; `call(kiln)` raises an instance of the same built-in type."""
    with pytest.raises(Exception) as t_info:
        call(torch)
    expected = builtin_type(t_info.value)
    try:
        call(kiln)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        assert isinstance(exc, expected), f"torch raised {expected.__name__}, kiln {exc!r}"
        return
    raise AssertionError(f"torch raised {expected.__name__}: {t_info.value}; kiln did not")


def cases(items, gaps):
    """pytest parameters of scenarios (functions) or named calls (a dict), those in `gaps`
    (name -> reason) marked as strict expected failures: kiln differs from PyTorch there."""
    named = items.items() if isinstance(items, dict) else [(f.__name__, f) for f in items]
    return [
        pytest.param(item, id=name, marks=[pytest.mark.xfail(strict=True, reason=gaps[name])])
        if name in gaps
        else pytest.param(item, id=name)
        for name, item in named
    ]
