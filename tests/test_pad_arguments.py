"""`F.pad`'s bad arguments raise what torch 2.13 raises, with its message (and kiln's op and
call site after it): each argument's type a TypeError as torch's argument parser ("pad():
argument 'pad' (position 2) must be tuple of ints, ..."), then an unknown mode
NotImplementedError ("Unrecognised padding mode typo"; kiln said ShapeError), then the pad's
length and a value in a non-constant mode RuntimeError. A float width was truncated before
(torch refuses it). Expected: torch 2.13 itself on the same calls."""

import numpy as np
import pytest

import kiln as kn
import kiln.nn.functional as F

CASES = [
    dict(pad=(1, 1), mode="typo"),
    dict(pad=(1, 1), mode="Reflect"),
    dict(pad=(1, 1), mode=""),
    dict(pad=(1, 1, 1), mode="typo"),  # the mode before the pad's length
    dict(pad=(1, 1), mode="typo", value=1.0),
    dict(pad=(1, 1), mode=3),
    dict(pad=(1, 1), mode=None),
    dict(pad=(1.5, 1), mode="typo"),  # the pad's type before the mode
    dict(pad=(1, 1), mode="typo", value="a"),
    dict(pad=(True, 1)),
    dict(pad=1),
    dict(pad="ab"),
    dict(pad=(1, 1), value=1 + 2j),
    dict(pad=(1,), mode="constant"),
    dict(pad=(1,), mode="reflect"),
    dict(pad=(1,) * 10, mode="constant"),
    dict(pad=(1,) * 6, mode="reflect", value=2.0),
    # accepted: numpy and 0-d tensor widths, a bool or 0-d tensor value, a zero value
    dict(pad=(np.int64(1), 1)),
    dict(pad=("tensor", 1)),
    dict(pad=(1, 1), value=True),
    dict(pad=(1,) * 6, mode="reflect", value=0.0),
]


def _call(lib, case):
    x = lib.arange(24, dtype=lib.float32).reshape(1, 2, 3, 4)
    pad = tuple(lib.tensor(2) if p == "tensor" else p for p in case["pad"]) if isinstance(
        case["pad"], tuple) else case["pad"]  # fmt: skip
    return lib.nn.functional.pad(x, pad, **{k: v for k, v in case.items() if k != "pad"})


@pytest.mark.parametrize("case", CASES, ids=[repr(c) for c in CASES])
def test_pad_arguments_as_torch(case):
    torch = pytest.importorskip("torch")
    try:
        want = _call(torch, case)
    except Exception as error:  # noqa: BLE001 -- torch's error is what is compared
        with pytest.raises(type(error)) as got:
            _call(kn, case)
        assert isinstance(got.value, kn.errors.KilnError)
        assert str(got.value).startswith(str(error)), (str(got.value), str(error))
        return
    np.testing.assert_array_equal(_call(kn, case).numpy(), want.numpy())


def test_unknown_mode_is_still_a_value_error():
    """Code that caught kiln's earlier ShapeError (a ValueError) as ValueError still does."""
    with pytest.raises(ValueError, match="Unrecognised padding mode typo"):
        F.pad(kn.ones(2, 3), (1, 1), mode="typo")
