"""What the ports of PyTorch's own tests share (test_port_pt_reductions.py,
test_port_pt_sort_select.py): a registry of scenarios, each a function of the module (`torch`
or `kiln`) run on NumPy inputs made tensors of that module, and their comparison: torch's result
or exception against kiln's, eagerly and under `kn.compile` (where torch raises, kiln must
raise an exception of the same type, compiled too).
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

MODES = ("eager", "compiled")


class Scenarios:
    """Scenarios by name; `xfail` (name: why kiln still differs) and `eager_only` (name: why
    it does not run compiled) are filled by the test module."""

    def __init__(self):
        self.cases, self.xfail, self.eager_only = {}, {}, {}

    def case(self, name, *inputs):
        """Registers the scenario below it under `name`, run on `inputs` (NumPy arrays)."""

        def register(fn):
            assert name not in self.cases, name
            self.cases[name] = (fn, inputs)
            return fn

        return register

    def names(self):
        """The names as pytest parameters, the `xfail` ones marked (strict)."""
        return [
            pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=self.xfail[n]))
            if n in self.xfail
            else n
            for n in sorted(self.cases)
        ]

    def check(self, torch, name, mode):
        """kiln's outcome of scenario `name` in `mode` is torch's."""
        fn, inputs = self.cases[name]
        if mode == "compiled" and name in self.eager_only:
            pytest.skip(self.eager_only[name])
        want, torch_error = outcome(torch, fn, inputs)
        got, kiln_error = outcome(kn, fn, inputs, kn.compile if mode == "compiled" else None)
        if torch_error is not None:
            assert isinstance(kiln_error, type(torch_error)), (
                f"torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
                f"{type(kiln_error).__name__ if kiln_error else got}"
            )
            return
        if kiln_error is not None:
            raise kiln_error
        assert_same(got, want)


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def assert_same(k, t, where="result"):
    """kiln's result `k` is torch's `t`: structure, shapes, dtypes and values (NaN where
    torch has NaN; floats within rtol 1e-5), Python numbers of the same type."""
    if isinstance(t, (tuple, list)):
        assert isinstance(k, (tuple, list)) and len(k) == len(t), (where, k, t)
        for i, (a, b) in enumerate(zip(k, t)):
            assert_same(a, b, f"{where}[{i}]")
        return
    if hasattr(t, "shape"):
        assert isinstance(k, kn.Tensor), (where, type(k))
        assert tuple(k.shape) == tuple(t.shape), (where, tuple(k.shape), tuple(t.shape))
        assert _dtype_name(k.dtype) == _dtype_name(t.dtype), (where, k.dtype, t.dtype)
        kv, tv = to_numpy(k), to_numpy(t)
        if tv.dtype.kind in "fc":
            np.testing.assert_allclose(kv, tv, rtol=1e-5, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(kv, tv, err_msg=where)
        return
    if hasattr(t, "is_floating_point") or type(t).__name__ == "dtype":
        assert _dtype_name(k) == _dtype_name(t), (where, k, t)
        return
    assert type(k) is type(t), (where, k, t)
    assert k == t or (k != k and t != t), (where, k, t)


class Leaf(np.ndarray):
    """An input that requires grad (`Leaf.of(array)`): the scenario differentiates by it."""

    @classmethod
    def of(cls, array):
        return np.asarray(array).view(cls)


def _tensor(lib, x):
    if isinstance(x, Leaf):
        return lib.tensor(np.asarray(x), requires_grad=True)
    return lib.tensor(x)


def outcome(lib, fn, inputs, wrap=None):
    """(result, None) or (None, the exception) of `fn` on `lib`'s tensors of `inputs`."""
    try:
        args = [_tensor(lib, x) for x in inputs]
        return (wrap(lambda *a: fn(lib, *a)) if wrap else lambda *a: fn(lib, *a))(*args), None
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return None, error
