"""Quantized tensors against PyTorch: the integers (PyTorch's rounding bit for bit, halfway
cases and clamping included), dequantized values, parameters, dtypes, printing, errors."""

import re

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize:UserWarning")

QDTYPES = ["quint8", "qint8", "qint32"]


def values(scale, n=300, shape=None, seed=0):
    """Random values, values far out of range, and values exactly halfway between two steps
    of `scale` (where rounding shows), float32."""
    rng = np.random.default_rng(seed)
    halfway = (np.arange(-40, 40) + 0.5) * np.asarray(scale, np.float64).reshape(-1)[:1]
    x = np.concatenate([rng.normal(0, 3, n), rng.normal(0, 1e3, 20), halfway])
    return x.astype(np.float32) if shape is None else x[: np.prod(shape)].reshape(shape)


def same(k, t):
    np.testing.assert_array_equal(k.int_repr().numpy(), t.int_repr().numpy())
    assert k.int_repr().numpy().dtype == t.int_repr().numpy().dtype
    np.testing.assert_array_equal(k.dequantize().numpy(), t.dequantize().numpy())
    assert repr(k.dtype) == repr(t.dtype).replace("torch.", "kiln.")
    assert repr(k.qscheme()) == repr(t.qscheme()).replace("torch.", "kiln.")
    assert tuple(k.shape) == tuple(t.shape)


@pytest.mark.parametrize("name", QDTYPES)
@pytest.mark.parametrize("scale,zero_point", [(0.1, 10), (0.02, 3), (1.0, 1), (0.3, 7),
                                              (0.00214854861, 0), (0.5, 0)])  # fmt: skip
def test_quantize_per_tensor_matches_pytorch(name, scale, zero_point):
    for n in (1, 5, 33, 300):  # PyTorch's vectorized body and scalar tail
        x = values(scale, n)[-n - 80 :]
        k = kn.quantize_per_tensor(kn.tensor(x), scale, zero_point, getattr(kn, name))
        t = torch.quantize_per_tensor(torch.tensor(x), scale, zero_point, getattr(torch, name))
        same(k, t)
        assert k.q_scale() == t.q_scale() and k.q_zero_point() == t.q_zero_point()


@pytest.mark.parametrize("name", QDTYPES)
def test_quantize_per_channel_matches_pytorch(name):
    rng = np.random.default_rng(1)
    for shape, axis in [((4, 40), 0), ((40, 3), 1), ((3, 5, 16), 1), ((2, 3, 17), 2)]:
        c = shape[axis]
        scales = np.concatenate([[0.1, 0.02, 1.0, 0.3], rng.uniform(0.01, 0.5, c)])[:c]
        zeros = np.concatenate([[10, 3, 1, 7], rng.integers(1, 20, c)])[:c]
        steps = [1] * len(shape)
        steps[axis] = c
        # halfway between steps of each channel's scale, and random values
        x = ((rng.integers(-20, 20, shape) + 0.5) * scales.reshape(steps)).astype(np.float32)
        x.reshape(-1)[::3] = rng.normal(0, 3, x.size)[::3]
        k = kn.quantize_per_channel(kn.tensor(x), kn.tensor(scales), kn.tensor(zeros), axis,
                                    getattr(kn, name))  # fmt: skip
        t = torch.quantize_per_channel(torch.tensor(x), torch.tensor(scales), torch.tensor(zeros),
                                       axis, getattr(torch, name))  # fmt: skip
        same(k, t)
        np.testing.assert_array_equal(k.q_per_channel_scales().numpy(), t.q_per_channel_scales())
        np.testing.assert_array_equal(
            k.q_per_channel_zero_points().numpy(), t.q_per_channel_zero_points()
        )
        assert k.q_per_channel_axis() == t.q_per_channel_axis()


def test_quantized_repr_and_dtypes():
    x = [-1.0, 0.0, 0.25, 0.5, 1.0, 100.0, 2.55]
    cases = [
        (kn.quantize_per_tensor(kn.tensor(x), 0.1, 0, kn.qint8),
         torch.quantize_per_tensor(torch.tensor(x), 0.1, 0, torch.qint8)),
        (kn.quantize_per_tensor(kn.tensor(1.5), kn.tensor(0.1), kn.tensor(2), kn.quint8),
         torch.quantize_per_tensor(torch.tensor(1.5), torch.tensor(0.1), torch.tensor(2),
                                   torch.quint8)),
        (kn.quantize_per_channel(kn.arange(6.0).reshape(2, 3), kn.tensor([0.1, 0.2],
                                 dtype=kn.float64), kn.tensor([0, 5]), 0, kn.quint8),
         torch.quantize_per_channel(torch.arange(6.0).reshape(2, 3), torch.tensor([0.1, 0.2],
                                    dtype=torch.float64), torch.tensor([0, 5]), 0, torch.quint8)),
    ]  # fmt: skip
    for k, t in cases:
        assert repr(k) == repr(t).replace("torch.", "kiln.")
    # the same suffixes, laid out by the same rule on kiln's shorter names
    k = kn.quantize_per_tensor(kn.tensor(x), 0.1, 10, kn.quint8)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.1, 10, torch.quint8)
    assert repr(k).split() == repr(t).replace("torch.", "kiln.").split()
    for name in QDTYPES:
        k, t = getattr(kn, name), getattr(torch, name)
        assert (k.itemsize, k.is_floating_point, k.is_complex) == (
            t.itemsize, t.is_floating_point, t.is_complex
        )  # fmt: skip
    assert cases[0][0].is_quantized is True and kn.ones(1).is_quantized is False
    # lists of tensors, as PyTorch's
    got = kn.quantize_per_tensor([kn.tensor(x)] * 2, kn.tensor([0.1, 0.2]), kn.tensor([1, 2]),
                                 kn.quint8)  # fmt: skip
    want = torch.quantize_per_tensor([torch.tensor(x)] * 2, torch.tensor([0.1, 0.2]),
                                     torch.tensor([1, 2]), torch.quint8)  # fmt: skip
    for k, t in zip(got, want):
        same(k, t)
        assert k.q_scale() == t.q_scale()
    assert [d.numpy().tolist() for d in kn.dequantize(got)] == [
        d.tolist() for d in torch.dequantize(want)
    ]
    np.testing.assert_array_equal(kn.ones(2).dequantize().numpy(), np.ones(2, np.float32))


def test_quantized_errors():
    x = [1.0, 2.0]
    q = kn.quantize_per_tensor(kn.tensor(x), 0.1, 10, kn.quint8)
    for fn in (kn.exp, lambda a: a + a, lambda a: a * 2, lambda a: a.sum(), lambda a: a[0]):
        with pytest.raises(NotImplementedError, match="quantized"):
            fn(q)
    with pytest.raises(TypeError, match="Got unsupported ScalarType QUInt8"):
        q.numpy()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require"):
        q.requires_grad_()
    messages = [
        (lambda lib: lib.quantize_per_tensor(lib.tensor(x, dtype=lib.float64), 0.1, 10,
                                             lib.quint8),
         "Quantize only works on Float Tensor, got Double"),
        (lambda lib: lib.quantize_per_tensor(lib.tensor(x), 0.1, 300, lib.quint8),
         "quantize_tensor_per_tensor_affine zero_point 300 is above upper bound."),
        (lambda lib: lib.quantize_per_channel(lib.tensor(x), lib.tensor([0.1]), lib.tensor([0]),
                                              0, lib.quint8),
         "length of scales must equal to channel, expected 2 got, 1"),
        (lambda lib: lib.quantize_per_channel(lib.tensor([x]), lib.tensor([0.1]),
                                              lib.tensor([0]), 2, lib.quint8),
         "Channel axis out of range in per channel affine quantization. Got: 2Expected: [0, 2)"),
    ]  # fmt: skip
    for make, message in messages:
        for lib in (torch, kn):
            with pytest.raises(RuntimeError, match=re.escape(message)):
                make(lib)
    f = kn.compile(lambda a: a * 2)
    with pytest.raises(kn.KilnError, match="dequantize"):
        f(q)


def test_quantized_functions_and_strided_tensors():
    x = np.array([0.5, -1.25, 3.0], np.float32)
    k = kn.quantize_per_tensor(kn.tensor(x), 0.25, 4, kn.qint8)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.25, 4, torch.qint8)
    for name in ("int_repr", "q_scale", "q_zero_point"):
        got, want = getattr(kn, name)(k), getattr(torch, name)(t)
        assert np.asarray(got).tolist() == np.asarray(want).tolist()
    for name in ("int_repr", "q_scale", "qscheme"):
        with pytest.raises(NotImplementedError):
            getattr(torch.ones(2), name)()
        with pytest.raises(NotImplementedError, match=f"{name} needs a quantized tensor"):
            getattr(kn.ones(2), name)()
    assert kn.ones(2).dequantize().numpy().tolist() == torch.ones(2).dequantize().tolist()


def test_quantized_copies_and_devices():
    import copy

    q = kn.quantize_per_channel(kn.tensor([[1.0, 2.0]]), kn.tensor([0.5]), kn.tensor([1]), 0,
                                kn.qint8)  # fmt: skip
    for c in (copy.deepcopy(q), q.clone(), q.detach()):
        assert c.is_quantized and repr(c) == repr(q)
    from kiln.eager.devices import _move

    with pytest.raises(kn.DeviceError, match="CPU-only"):
        _move(q, "cuda:0")


def test_dequantize_takes_torchs_names_and_list_overload():
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 2.13 deprecates its quantized dtypes
        qt = torch.quantize_per_tensor(torch.tensor([0.26, -1.0]), 0.1, 0, torch.qint8)
    qk = kn.quantize_per_tensor(kn.tensor([0.26, -1.0]), 0.1, 0, kn.qint8)
    for call in (lambda L, q: L.dequantize(input=q), lambda L, q: L.dequantize([q, q])[1],
                 lambda L, q: L.dequantize(tensors=(q,))[0]):  # fmt: skip
        np.testing.assert_array_equal(call(kn, qk).numpy(), call(torch, qt).numpy())
    assert type(kn.dequantize([qk])) is type(torch.dequantize([qt])) is tuple
