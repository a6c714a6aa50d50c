"""The in-place samplers `uniform_`, `cauchy_`, `exponential_`, `geometric_`, `log_normal_`
take PyTorch's arguments and dtype rules (torch 2.13, the oracle): which dtypes they fill,
which calls raise and with what built-in, and the range of their values, eagerly and under
kn.compile. (Their values are random: PyTorch's OpInfo sweep compares dtypes and shapes.)"""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "int64", "uint8", "bool")
CALLS = [
    ("uniform_", (-2, 3), {}), ("uniform_", (), {"from": 1, "to": 2}), ("uniform_", (3, 2), {}),
    ("uniform_", (2, 2), {}), ("cauchy_", (0, 0.5), {}), ("cauchy_", (0, -1), {}),
    ("exponential_", (0.5,), {}), ("exponential_", (), {"lambd": 2}),
    ("exponential_", (-1,), {}), ("geometric_", (0.3,), {}), ("geometric_", (), {"p": 0.8}),
    ("geometric_", (1.5,), {}), ("log_normal_", (0, 0.25), {}),
    ("log_normal_", (), {"mean": 1, "std": 2}), ("log_normal_", (0, -1), {}),
]  # fmt: skip


def _run(lib, dtype, name, args, kwargs, compiled=False):
    x = lib.zeros(2000, dtype=getattr(lib, dtype))
    if compiled:
        return kn.compile(lambda t: getattr(t, name)(*args, **kwargs))(x)
    return getattr(x, name)(*args, **kwargs)


def _values(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.float() if t.dtype == torch.bfloat16 else t
    return t.numpy().astype(np.complex128)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
def test_samplers_follow_pytorchs_dtype_rules_and_ranges(name, args, kwargs, compiled):
    for dtype in DTYPES:
        try:
            want = _run(torch, dtype, name, args, kwargs)
        except Exception as e:  # noqa: BLE001 -- the built-in PyTorch raises is the oracle
            with pytest.raises(type(e)):
                _run(kn, dtype, name, args, kwargs, compiled)
            continue
        got = _run(kn, dtype, name, args, kwargs, compiled)
        assert str(got.dtype).split(".")[-1] == dtype and tuple(got.shape) == (2000,)
        k = _values(got)
        assert (_values(want).imag != 0).any() == (k.imag != 0).any()  # complex: both parts
        k = np.concatenate([k.real, k.imag]) if "complex" in dtype else k.real
        if name == "uniform_":  # the support, as the distribution's (rounded to the dtype)
            low, high = args or (kwargs["from"], kwargs["to"])
            assert low <= k.min() and k.max() <= high, dtype
        elif name == "cauchy_":  # unbounded: the median's side of half the draws
            assert abs((k < args[0]).mean() - 0.5) < 0.06, dtype
        else:
            assert k.min() >= (1 if name == "geometric_" else 0), dtype
        if name == "geometric_":
            assert (k == np.round(k)).all(), dtype


def test_uniform_of_a_complex_tensor_draws_both_parts():
    x = kn.zeros(1000, dtype=kn.complex64).uniform_(2, 3)
    for part in (x.real, x.imag):
        assert 2 <= float(part.min()) and float(part.max()) < 3 and float(part.std()) > 0.2
