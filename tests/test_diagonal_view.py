"""`diagonal()` of a tensor whose memory is not in C order is a view, as PyTorch's.

kiln built the diagonal as a transpose, a reshape and a strided slice; the reshape copies
a non-contiguous input, so the "view" was a copy and writes through it were lost:
`x.t().diagonal().add_(1)` left x as it was (found by running random programs on kiln and
on torch 2.13). Expected values: torch 2.13's, written out and rerun by the last test.
"""

import numpy as np
import pytest

import kiln as kn


def _writes(lib):
    x = lib.zeros(4, 4).t()
    x.diagonal().add_(1)
    y = lib.zeros(8, 4)[::2]
    y.diagonal(1).fill_(2)
    return x.sum().item(), y.sum().item(), y.diagonal(1).stride()


def _graded(lib, x):
    y = x * 1
    y.t().diagonal(1).mul_(3)  # through a view of a transposed view
    return (y * lib.arange(16.0).reshape(4, 4)).sum(), x.t().diagonal(-1) * 2


WRITES = (4.0, 6.0, (9,))  # (y's rows are 8 apart, its columns 1: the diagonal steps 9)
LOSS, DIAGONAL, GRAD_ROW_1 = 1826.0, [2.0, 12.0, 22.0], [12.0, 5.0, 6.0, 7.0]


def test_writes_through_the_diagonal_of_a_non_contiguous_tensor():
    assert _writes(kn) == WRITES


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_values_and_gradients_through_such_a_diagonal(compiled):
    f = kn.compile(lambda x: _graded(kn, x)) if compiled else (lambda x: _graded(kn, x))
    for _ in range(2):
        x = kn.arange(16.0).reshape(4, 4).requires_grad_(True)
        loss, d = f(x)
        loss.backward()
        assert loss.item() == LOSS and d.tolist() == DIAGONAL
        np.testing.assert_array_equal(x.grad.numpy()[1], GRAD_ROW_1)


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    assert _writes(torch) == WRITES
    x = torch.arange(16.0).reshape(4, 4).requires_grad_(True)
    loss, d = _graded(torch, x)
    loss.backward()
    assert loss.item() == LOSS and d.tolist() == DIAGONAL
    assert x.grad[1].tolist() == GRAD_ROW_1
