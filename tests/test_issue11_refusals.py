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
