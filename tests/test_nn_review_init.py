"""kn.nn.init against torch.nn.init: the distributions of every initializer (statistics on
large draws, not bits), `dirac_` exactly, `sparse_`'s zeros per column, and the deprecated
names without the underscore (kiln lacked dirac_, sparse_ and those names)."""

import math

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

SHAPE = (256, 128, 3, 3)


def _draw(lib, name, shape, *args, **kwargs):
    w = lib.empty(*shape)
    out = getattr(lib.nn.init, name)(w, *args, **kwargs)
    assert out is w
    return w.detach().numpy().astype(np.float64)


@pytest.mark.parametrize(
    "name, args, kwargs, bound",
    [
        ("uniform_", (), {"a": -2, "b": 3}, (-2, 3)),
        ("normal_", (), {"mean": 1, "std": 0.5}, None),
        ("trunc_normal_", (), {"mean": 0.5, "std": 2, "a": -1, "b": 1.5}, (-1, 1.5)),
        ("xavier_uniform_", (), {"gain": 2.0}, None),
        ("xavier_normal_", (), {"gain": 0.5}, None),
        ("kaiming_uniform_", (), {"a": 0.1, "mode": "fan_out"}, None),
        ("kaiming_uniform_", (), {"nonlinearity": "selu"}, None),
        ("kaiming_normal_", (), {"mode": "fan_out", "nonlinearity": "tanh"}, None),
        ("kaiming_normal_", (), {"nonlinearity": "relu"}, None),
    ],
)
def test_init_distributions_match_torch(name, args, kwargs, bound):
    t = _draw(torch, name, SHAPE, *args, **kwargs)
    k = _draw(kn, name, SHAPE, *args, **kwargs)
    # 295k draws: the mean and std agree to well under 1% of the std
    assert abs(t.mean() - k.mean()) < 0.01 * t.std()
    assert abs(t.std() - k.std()) < 0.01 * t.std()
    if bound is not None:
        assert bound[0] <= k.min() and k.max() <= bound[1]


@pytest.mark.parametrize("shape, groups", [((4, 2, 3), 1), ((4, 4, 3, 3), 1),
                                           ((6, 2, 3, 3), 2), ((4, 6, 2, 3, 5), 2)])  # fmt: skip
def test_dirac_like_torch(shape, groups):
    np.testing.assert_array_equal(_draw(kn, "dirac_", shape, groups=groups),
                                  _draw(torch, "dirac_", shape, groups=groups))  # fmt: skip


def test_dirac_conv_passes_input_through():
    conv = kn.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    kn.nn.init.dirac_(conv.weight)
    x = kn.randn(2, 3, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(kn.errors.ArgumentError, match="divisible by groups"):
        kn.nn.init.dirac_(kn.empty(5, 2, 3), groups=2)


def test_sparse_like_torch():
    rows, sparsity, std = 300, 0.3, 0.1
    t = _draw(torch, "sparse_", (rows, 400), sparsity, std=std)
    k = _draw(kn, "sparse_", (rows, 400), sparsity, std=std)
    zeros = math.ceil(sparsity * rows)
    assert ((t == 0).sum(0) == zeros).all() and ((k == 0).sum(0) == zeros).all()
    assert abs(k[k != 0].std() - std) < 0.01 * std * 10  # 84k draws of N(0, std^2)
    assert abs(k[k != 0].std() - t[t != 0].std()) < 0.02 * std
    with pytest.raises(kn.errors.ArgumentError, match="2 dimensions"):
        kn.nn.init.sparse_(kn.empty(2, 2, 2), 0.5)


@pytest.mark.parametrize("name", ["normal", "uniform", "constant", "xavier_uniform",
                                  "kaiming_normal", "orthogonal", "eye"])  # fmt: skip
def test_deprecated_names_warn_and_fill(name):
    args = (0.25,) if name == "constant" else ()
    for lib in (torch, kn):
        w = lib.zeros(8, 8)
        with pytest.warns(FutureWarning, match=f"nn.init.{name}_"):
            out = getattr(lib.nn.init, name)(w, *args)
        assert out is w and float(w.abs().sum()) > 0
