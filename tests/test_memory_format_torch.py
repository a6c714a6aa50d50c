"""`kn.channels_last` and `kn.channels_last_3d` against PyTorch 2.13 itself (skipped without
torch): `contiguous`, `clone`, `to` and `is_contiguous` with a memory format, and the `*_like`
factories', in eager mode and under kn.compile; the refusal of a rank the format does not
take. Every expected value is torch's, computed in the test.
"""

# ruff: noqa: E731

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
from torch_threads import two_torch_threads  # noqa: E402, F401 (autouse)


def _memory(shape):
    n = int(np.prod(shape))
    return np.random.default_rng(n).standard_normal(n).reshape(shape).astype(np.float32)


# input -> fn(L): a tensor laid out in one way
INPUTS = {
    "c4": lambda L: L.tensor(_memory((2, 3, 4, 5))),
    "cl4": lambda L: L.tensor(_memory((2, 4, 5, 3))).permute(0, 3, 1, 2),
    "hw_t4": lambda L: L.tensor(_memory((2, 3, 5, 4))).transpose(2, 3),
    "batch1_c4": lambda L: L.tensor(_memory((1, 3, 1, 1))),
    "c5": lambda L: L.tensor(_memory((2, 3, 2, 4, 5))),
    "cl5": lambda L: L.tensor(_memory((2, 2, 4, 5, 3))).permute(0, 4, 1, 2, 3),
}

# op -> fn(L, x, fmt): fmt is L's memory format of x's rank
OPS = {
    "contiguous": lambda L, x, f: x.contiguous(memory_format=f),
    "contiguous_c": lambda L, x, f: x.contiguous(memory_format=f).contiguous(),
    "clone": lambda L, x, f: x.clone(memory_format=f),
    "to": lambda L, x, f: x.to(memory_format=f),
    "to_contiguous_format": lambda L, x, f: x.to(memory_format=L.contiguous_format),
    "to_double": lambda L, x, f: x.to(L.float64, memory_format=f),
    "zeros_like": lambda L, x, f: L.zeros_like(x, memory_format=f),
    "empty_like": lambda L, x, f: L.empty_like(x, memory_format=f).fill_(1.0),
    "full_like": lambda L, x, f: L.full_like(x, 2.0, memory_format=f),
    "empty": lambda L, x, f: L.empty(*x.shape, memory_format=f).fill_(3.0),
    "then_add": lambda L, x, f: x.contiguous(memory_format=f) + 1,
    "then_conv": lambda L, x, f: (
        L.nn.functional.conv2d(x.contiguous(memory_format=f), L.ones(2, x.shape[1], 1, 1))
        if x.ndim == 4
        else L.nn.functional.conv3d(x.contiguous(memory_format=f), L.ones(2, x.shape[1], 1, 1, 1))
    ),
}


def _format(L, x):
    return L.channels_last if x.ndim == 4 else L.channels_last_3d


def _facts(L, y, x):
    fmt = _format(L, x)
    return (tuple(y.stride()), y.is_contiguous(), y.is_contiguous(memory_format=fmt),
            x.is_contiguous(memory_format=fmt))  # fmt: skip


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("op", OPS)
def test_eager_memory_format_matches_torch(op, name):
    results = {}
    for L in (torch, kn):
        x = INPUTS[name](L)
        y = OPS[op](L, x, _format(L, x))
        results[L] = (_facts(L, y, x), y.detach().numpy(), y is x)
    assert results[kn][0] == results[torch][0]
    assert results[kn][2] == results[torch][2]  # itself where torch's is
    np.testing.assert_allclose(results[kn][1], results[torch][1], rtol=1e-6)


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("op", OPS)
def test_compiled_memory_format_matches_torch(op, name):
    x = INPUTS[name](torch)
    y = OPS[op](torch, x, _format(torch, x))
    want = _facts(torch, y, x)
    seen = {}

    def program(base):
        x = _view(name, base)
        y = OPS[op](kn, x, _format(kn, x))
        seen["facts"] = _facts(kn, y, x)
        return y

    memory = INPUTS[name](kn)
    base = memory._base if memory._base is not None else memory
    got = kn.compile(program)(base.contiguous())
    assert seen["facts"] == want
    np.testing.assert_allclose(got.numpy(), y.detach().numpy(), rtol=1e-6)


def _view(name, base):
    """INPUTS[name]'s view of its memory `base` (a traced value)."""
    if name.startswith("cl"):
        return base.permute(0, base.ndim - 1, *range(1, base.ndim - 1))
    if name == "hw_t4":
        return base.transpose(2, 3)
    return base


def test_requires_grad_copy_is_a_clone():
    """torch names the copy's node CloneBackward0; its gradient is the incoming one."""
    for L in (torch, kn):
        x = L.ones(2, 3, 4, 5, requires_grad=True)
        y = x.contiguous(memory_format=L.channels_last)
        assert y.grad_fn.name() == "CloneBackward0"
        (y * 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3, 4, 5), 2.0))


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.ones(2, 3).contiguous(memory_format=L.channels_last),
        lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last_3d),
        lambda L: L.ones(2, 3).clone(memory_format=L.channels_last),
        lambda L: L.ones(2, 3).to(memory_format=L.channels_last),
        lambda L: L.zeros_like(L.ones(2, 3), memory_format=L.channels_last),
        lambda L: L.empty(2, 3, memory_format=L.channels_last),
    ],
)
def test_wrong_rank_raises_as_torch(call):
    with pytest.raises(RuntimeError, match="required rank") as want:
        call(torch)
    with pytest.raises(RuntimeError, match="required rank") as got:
        call(kn)
    assert str(want.value).split("required")[1] in str(got.value)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_module_to_memory_format_matches_torch(nd, mode):
    """Module.to(memory_format=) lays out the module's 4-D (5-D) values channels-last, in
    place: the conv's result is then channels-last, as torch's (values: the same weights)."""
    seen = {}
    for L in (torch, kn):
        conv = getattr(L.nn, f"Conv{nd}d")(3, 4, 3, padding=1)
        norm = getattr(L.nn, f"BatchNorm{nd}d")(4)
        model = L.nn.Sequential(conv, norm)
        if L is kn:
            with kn.no_grad():
                for mine, theirs in zip(model.parameters(), seen[torch][2]):
                    mine.copy_(kn.tensor(theirs))
        weight = conv.weight
        fmt = L.channels_last if nd == 2 else L.channels_last_3d
        assert model.to(memory_format=fmt) is model and conv.weight is weight
        x = L.tensor(_memory((2, 3) + (5,) * nd))
        if L is kn and mode == "compile":
            strides = {}

            def run(x):
                y = model(x)
                strides["y"] = tuple(y.stride())
                return y

            y = kn.compile(run)(x)
            y_stride = strides["y"]
        else:
            y = model(x)
            y_stride = tuple(y.stride())
        params = [p.detach().numpy().copy() for p in model.parameters()]
        seen[L] = ((tuple(conv.weight.stride()), y_stride), y.detach().numpy(), params)
    assert seen[kn][0] == seen[torch][0]
    np.testing.assert_allclose(seen[kn][1], seen[torch][1], rtol=1e-4, atol=1e-5)
