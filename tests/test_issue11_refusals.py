"""Inputs PyTorch refuses are refused by kiln too, in eager mode, graph mode and under
`kn.compile`, with PyTorch's exception type and the gist of its message (issue 11). Expected
errors are torch 2.13's (the oracle) where torch is installed; the kiln side runs without it."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn


def _modes(fn, *arrays):
    """fn on eager tensors, on placeholders (built only: the refusals happen while building)
    and under kn.compile."""
    yield "eager", lambda: fn(*[kn.tensor(a) for a in arrays])

    def graph():
        with kn.Graph().as_default():
            fn(*[kn.placeholder(kn.dtypes.as_dtype(a.dtype), a.shape) for a in arrays])

    yield "graph", graph
    yield "compile", lambda: kn.compile(fn)(*[kn.tensor(a) for a in arrays])


def _torch_error(fn, *arrays):
    torch = pytest.importorskip("torch")
    try:
        fn(*[torch.from_numpy(np.array(a)) for a in arrays])
    except Exception as e:  # noqa: BLE001 -- the oracle's error, whatever it is
        return e
    raise AssertionError("torch accepted it")


# -- negative slice steps ------------------------------------------------------------------------

A = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _setitem(x):
    y = x * 1  # (a placeholder itself cannot change in place)
    y[:, ::-1] = 1.0
    return y


@pytest.mark.parametrize(
    "fn",
    [lambda x: x[::-1], lambda x: x[:, 3:0:-2], lambda x: x[1, ::-1], _setitem],
    ids=["reverse", "neg-step-bounds", "int-then-reverse", "setitem"],
)
def test_negative_slice_steps_raise_as_pytorch(fn):
    # Regression: kiln read x[::-1] as NumPy does; torch 2.13 raises ValueError there
    want = _torch_error(fn, A)
    assert type(want) is ValueError and "step must be greater than zero" in str(want)
    for mode, run in _modes(fn, A):
        with pytest.raises(ValueError, match="step must be greater than zero"):
            run()


def test_positive_and_zero_steps_still_work_or_raise_as_pytorch():
    x = kn.tensor(A)
    assert x[::2, 1::2].tolist() == A[::2, 1::2].tolist()
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    assert x.flip(1).tolist() == A[:, ::-1].tolist()  # what x[:, ::-1] meant


# -- F.pad's modes and ranks -----------------------------------------------------------------------


def _pad_cases():
    for ndim in range(6):
        for mode in ("constant", "reflect", "replicate", "circular"):
            for n in range(0, 12):
                yield ndim, mode, n


def _outcome(fn):
    try:
        return tuple(fn().shape)
    except Exception as e:  # noqa: BLE001 -- compared with the oracle's
        return e


def test_pad_takes_the_widths_and_ranks_pytorch_takes():
    # Regression: reflect/replicate/circular padded any trailing dims of any input; torch 2.13
    # refuses other combinations with NotImplementedError ("Padding size 8 is not supported
    # for 4D input tensor"), and constant pads with RuntimeError past 2 * ndim widths
    torch = pytest.importorskip("torch")
    shape = (2, 3, 4, 5, 3)
    for ndim, mode, n in _pad_cases():
        x = np.ones(shape[:ndim], np.float32)
        widths = (1,) * n
        want = _outcome(lambda: torch.nn.functional.pad(torch.from_numpy(x), widths, mode=mode))
        got = _outcome(lambda: kn.nn.functional.pad(kn.tensor(x), widths, mode=mode))
        case = (ndim, mode, n, want, got)
        if isinstance(want, tuple):
            assert got == want, case
            continue
        builtin = next(c for c in type(want).__mro__ if c.__module__ == "builtins")
        assert isinstance(got, builtin), case
        gist = str(want).splitlines()[0]
        assert gist in str(got), case


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_of_one_pair_on_4d_raises_in_every_mode(mode):
    def fn(x):
        return kn.nn.functional.pad(x, (1, 1), mode=mode)

    x4 = np.ones((1, 2, 3, 4), np.float32)
    for _, run in _modes(fn, x4):
        with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
            run()
    assert kn.nn.functional.pad(kn.tensor(x4), (1, 1, 1, 1), mode=mode).shape == (1, 2, 5, 6)


# -- squeeze(d) of a symbolic dim ----------------------------------------------------------------


def test_squeeze_of_a_symbolic_dim_raises_naming_the_input():
    # Regression: squeeze(0) of a None dim kept it silently, so a run fed a batch of 1 gave
    # shape (1, 3) where PyTorch's squeeze(0) gives (3,)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, shape=(None, 3), name="p")
        for squeeze in (lambda: p.squeeze(0), lambda: kn.squeeze(p, (0, 1)),
                        lambda: kn.squeeze_copy(p, -2), lambda: (p * 1).squeeze_(0)):  # fmt: skip
            with pytest.raises(kn.ShapeError, match=r"squeeze\(.*symbolic size.*p:f32\[_,3\]|"
                               r"squeeze\(.*symbolic size.*mul:f32\[_,3\]"):  # fmt: skip
                squeeze()
        # a known dim squeezes as PyTorch's; squeeze() keeps the symbolic dim
        assert p.squeeze(1).shape == (p.shape[0], 3) and p.squeeze().shape == p.shape
        q = kn.placeholder(kn.float32, shape=("batch", 1, 3), name="q")
        assert kn.function([q], q.squeeze(1))(np.ones((1, 1, 3), np.float32)).shape == (1, 3)


def test_squeeze_under_compile_follows_the_sizes_of_the_call():
    f = kn.compile(lambda t: t.squeeze(0))
    assert f(kn.ones(1, 3)).shape == (3,) and f(kn.ones(2, 3)).shape == (2, 3)


# -- resize_ past the storage ----------------------------------------------------------------------


def _grown_views(L):
    x = L.arange(6.0)
    v, alias, wide = x[2:].view(2, 2), x.detach(), x[None].expand(3, 6)
    x.resize_(20)
    x[3] = 33.0
    v[0, 0] = -2.0
    return v.tolist(), alias.shape, alias[3].item(), wide[1, 3].item(), x[:6].tolist()


def test_resize_past_the_storage_moves_the_earlier_views_as_pytorch():
    # Regression: the views taken before a growing resize_ kept the old memory (writes through
    # x no longer reached them); PyTorch reallocates the storage under all of them (torch 2.13)
    torch = pytest.importorskip("torch")
    assert _grown_views(kn) == _grown_views(torch)


def test_resize_of_a_view_past_its_storage_grows_it_as_pytorch():
    torch = pytest.importorskip("torch")

    def grow(L):
        base = L.arange(10.0)
        x = base[4:]
        x.resize_(20)
        x[0] = -1.0
        return x.storage_offset(), base.shape, base[4].item(), x.shape

    assert grow(kn) == grow(torch)


def test_resize_without_other_tensors_on_the_memory_does_not_scan(monkeypatch):
    # the search for views runs only when something besides the tensor refers to its memory
    import gc

    monkeypatch.setattr(gc, "get_objects", lambda *a: pytest.fail("scanned"))
    assert kn.arange(4.0).resize_(10)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert kn.arange(4.0).resize_(2).resize_(3, 5).shape == (3, 5)
