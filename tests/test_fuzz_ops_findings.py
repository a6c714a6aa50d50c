"""Differences from PyTorch 2.13 that the random programs' op steps (tests/fuzz_ops.py, run by
test_compile_fuzz.py and test_torch_fuzz.py) found, each fixed. Expected values and refusals
are torch 2.13's on the same inputs (pinned here, so the tests run without torch)."""

import pytest

import kiln as kn

X, N, M = kn.tensor([1.5, 2.0]), kn.tensor([1, 2]), kn.tensor([True, False])
SUBTRACTIONS = {
    "x - True": lambda: X - True,
    "True - x": lambda: True - X,
    "x.sub(False)": lambda: X.sub(False),
    "sub(x, True, alpha=2)": lambda: kn.sub(X, True, alpha=2),
    "x - mask": lambda: X - M,
    "mask - x": lambda: M - X,
    "int - True": lambda: N - True,
    "False - int": lambda: False - N,
    "mask - 1": lambda: M - 1,
    "1.5 - mask": lambda: 1.5 - M,
    "rsub(x, True)": lambda: kn.rsub(X, True),
}


@pytest.mark.parametrize("expr", sorted(SUBTRACTIONS))
def test_subtraction_with_a_bool_is_refused(expr):
    # torch 2.13 refuses each: "Subtraction, the `-` operator, with a bool tensor is not
    # supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator
    # instead."; kiln computed `x - 1`, `1 - x`...
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        SUBTRACTIONS[expr]()


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


@pytest.mark.parametrize(
    ("equation", "dtypes"),
    [("ij,j->i", ("float32", "float64")), ("i,i->", ("float64", "int64")),
     ("i,j->ij", ("int32", "int64"))],
)  # fmt: skip
def test_einsum_refuses_operands_of_two_dtypes(equation, dtypes):
    # torch 2.13 refuses each ("expected scalar type Float but found Double"), as its matrix
    # products do; kiln promoted them (float32 and float64 gave float64)
    x = kn.ones(3, 3, dtype=dtypes[0])[0] if equation[1] == "," else kn.ones(3, 3, dtype=dtypes[0])
    y = kn.ones(3, dtype=dtypes[1])
    with pytest.raises(RuntimeError, match="einsum.*expected scalar type"):
        kn.einsum(equation, x, y)
    with pytest.raises(RuntimeError, match="einsum.*expected scalar type"):
        kn.compile(lambda a, b: kn.einsum(equation, a, b))(x, y)


def test_the_output_of_a_division_changes_in_place_before_backward():
    # torch 2.13: x.grad [0.25, 0.375], b.grad [-0.0625, -0.09375] (its gradient of x / b
    # reads x and b, not the quotient); kiln's read the quotient and refused backward
    x = kn.tensor([1.0, 2.0], requires_grad=True)
    b = kn.tensor([4.0, 8.0], requires_grad=True)
    y = x / b
    y.clamp_(0, 0.3)
    (y * kn.tensor([1.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [0.25, 0.375]
    assert b.grad.tolist() == [-0.0625, -0.09375]


def test_a_division_refuses_backward_when_an_input_it_reads_changed():
    # torch 2.13 refuses: b's gradient reads x, which changed in place
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    x = w * 1
    b = kn.tensor([4.0, 8.0], requires_grad=True)
    y = x / b
    x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
