"""Complex values where PyTorch refuses them or takes their real part: `abs_` on a complex
tensor (kiln wrote |x| back as a complex number), `arange` with complex bounds or step
(kiln's comparisons of them raised TypeError) or a complex dtype; and `get_autocast_dtype`,
which gave a NumPy dtype where kiln's other functions give a `kn.dtype`. What torch 2.13 does
is written out; the torch tests rerun it."""

import numpy as np
import pytest

import kiln as kn


def _abs_(m, x, mode):
    if mode == "eager":
        return x.abs_()
    if mode == "compiled":
        return kn.compile(lambda t: t.clone().abs_())(x)
    with kn.Graph().as_default():
        p = kn.placeholder(x.dtype, tuple(x.shape))
        y = p + 0  # a feed cannot change in place, a value computed from it can
        y.abs_()
        return kn.tensor(kn.function([p], y)(x.numpy()))


MODES = ["eager", "graph", "compiled"]


@pytest.mark.parametrize("mode", MODES)
def test_in_place_abs_refuses_complex(mode):
    x = kn.tensor([3 + 4j, -1j])
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        _abs_(kn, x, mode)
    np.testing.assert_array_equal(x.numpy(), [3 + 4j, -1j])  # unchanged
    np.testing.assert_array_equal(_abs_(kn, kn.tensor([-3.0, 2.0]), mode).numpy(), [3.0, 2.0])


@pytest.mark.parametrize("name", ["absolute_", "kn.abs_"])
def test_the_other_spellings_refuse_too(name):
    x = kn.tensor([3 + 4j])
    with pytest.raises(kn.errors.UsageError, match="In-place abs"):
        x.absolute_() if name == "absolute_" else kn.abs_(x)


# args -> torch 2.13's result (dtype name, values), or the exception type it raises
ARANGE = {
    "end 2+0j": ((2 + 0j,), {}, ("float32", [0.0, 1.0])),
    "end 2.5+0j": ((2.5 + 0j,), {}, ("float32", [0.0, 1.0, 2.0])),
    "step 1+0j": ((0, 3, 1 + 0j), {}, ("float32", [0.0, 1.0, 2.0])),
    "step 2-0j": ((0, 3, 2 - 0j), {}, ("float32", [0.0, 2.0])),
    "int64 dtype": ((0, 3 + 0j), {"dtype": "int64"}, ("int64", [0, 1, 2])),
    "float64 dtype": ((2 + 0j,), {"dtype": "float64"}, ("float64", [0.0, 1.0])),
    "end 1j": ((1j,), {}, RuntimeError),
    "step 1j": ((0, 3, 1j), {}, RuntimeError),
    "complex64 dtype": ((3,), {"dtype": "complex64"}, NotImplementedError),
    "complex128 dtype": ((0, 3, 0.5), {"dtype": "complex128"}, NotImplementedError),
}


def _arange(m, name):
    args, kwargs, _ = ARANGE[name]
    return m.arange(*args, **{k: getattr(m, v) for k, v in kwargs.items()})


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(ARANGE))
def test_arange_takes_the_real_part_of_complex_bounds(name, compiled):
    want = ARANGE[name][2]
    run = kn.compile(lambda: _arange(kn, name)) if compiled else (lambda: _arange(kn, name))
    if isinstance(want, type):
        with pytest.raises(want):
            run()
        return
    got = run()
    assert got.dtype == getattr(kn, want[0]), got.dtype
    np.testing.assert_array_equal(got.numpy(), want[1])


def test_arange_takes_a_0d_complex_tensor():
    np.testing.assert_array_equal(kn.arange(kn.tensor(2 + 0j)).numpy(), [0.0, 1.0])
    with pytest.raises(RuntimeError, match="imaginary part"):
        kn.arange(kn.tensor(1j))


def test_get_autocast_dtype_is_a_kiln_dtype():
    assert kn.get_autocast_dtype("cpu") is kn.bfloat16
    assert kn.get_autocast_dtype("cuda") is kn.float16
    assert isinstance(kn.get_autocast_dtype("cpu"), kn.dtype)
    with kn.autocast("cpu", dtype=kn.float16):
        assert kn.get_autocast_dtype("cpu") is kn.float16
        assert kn.amp.get_autocast_dtype("cpu") is kn.float16
    assert kn.get_autocast_dtype("cpu").is_floating_point
    with pytest.raises(RuntimeError, match="device type"):
        kn.get_autocast_dtype("foo")


def test_what_torch_does():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
        torch.tensor([3 + 4j]).abs_()
    for name, (_, _, want) in ARANGE.items():
        if isinstance(want, type):
            with pytest.raises(want):
                _arange(torch, name)
            continue
        got = _arange(torch, name)
        assert got.dtype == getattr(torch, want[0]) and got.tolist() == want[1], name
    assert isinstance(torch.get_autocast_dtype("cpu"), torch.dtype)
    with pytest.raises(RuntimeError):
        torch.get_autocast_dtype("foo")
