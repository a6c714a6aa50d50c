"""Differences from PyTorch 2.13 that the random programs' op steps (tests/fuzz_ops.py, run by
test_compile_fuzz.py and test_torch_fuzz.py) found, each fixed. Expected values and refusals
are torch 2.13's on the same inputs (pinned here, so the tests run without torch)."""

import pytest

import kiln as kn


@pytest.mark.parametrize(
    "expr",
    ["x - True", "True - x", "x.sub(False)", "kn.sub(x, True, alpha=2)", "x - m", "m - x",
     "i - True", "False - i", "m - 1", "1.5 - m", "m - m", "kn.rsub(x, True)"],
)  # fmt: skip
def test_subtraction_with_a_bool_is_refused(expr):
    # torch 2.13 refuses each: "Subtraction, the `-` operator, with a bool tensor is not
    # supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator
    # instead." (two bools: "with two bool tensors is not supported. Use the `^` or
    # `logical_xor()` operator instead."); kiln computed `x - 1`, `1 - x`...
    x, i, m = kn.tensor([1.5, 2.0]), kn.tensor([1, 2]), kn.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with"):
        eval(expr)


def test_subtraction_with_a_bool_is_refused_in_place_and_compiled():
    x = kn.tensor([1.5, 2.0])
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        x.sub_(True)  # torch 2.13 refuses it
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        kn.compile(lambda a: 1 - (a > 0))(x)


def test_subtraction_of_two_bools_names_xor():
    m = kn.tensor([True, False])
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported. Use the `"):
        m - m  # torch 2.13's message
