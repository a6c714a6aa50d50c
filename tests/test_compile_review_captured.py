"""A compiled function that changes a tensor it captures in place: that eager code once ran
once, while tracing, so the compiled calls silently skipped it (kn.compile returned
[1, 1, 1] where eager code and PyTorch give [1, 2, 3]). Then it was refused; now the trace
takes the tensor as an input and each call writes it back."""

import numpy as np

import kiln as kn


def test_captured_counter_changed_in_place_counts_each_call():
    counter = kn.tensor([0.0])

    def bump(x):
        counter.add_(1)
        return x + counter

    eager = [bump(kn.zeros(1)).item() for _ in range(3)]
    assert eager == [1.0, 2.0, 3.0] and counter.item() == 3.0  # by hand: 1, 2, 3
    counter = kn.tensor([0.0])
    compiled = kn.compile(bump)
    assert [compiled(kn.zeros(1)).item() for _ in range(3)] == eager
    assert counter.item() == 3.0


def test_backward_of_captured_values_adds_to_their_grad_each_call():
    # (once refused; a captured leaf that requires grad is now an input of the program:
    # tests/test_compile_captured_grad.py)
    w = kn.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def step(x):
        (w * w).sum().backward()  # eager: adds 2w to w.grad on every call
        return x * 2

    compiled = kn.compile(step)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(kn.ones(1)).numpy(), [2.0])
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 8.0, 12.0])  # 2w, twice


def test_captured_tensors_that_are_only_read_still_compile():
    table = kn.tensor([1.0, 2.0])
    f = kn.compile(lambda x: x * table)
    np.testing.assert_array_equal(f(kn.ones(2)).numpy(), [1.0, 2.0])
    table.mul_(3)  # changed between calls: retraces (the guard), as before
    np.testing.assert_array_equal(f(kn.ones(2)).numpy(), [3.0, 6.0])
    made = kn.compile(lambda x: x + kn.zeros(2).add_(1))  # a tensor made while tracing
    np.testing.assert_array_equal(made(kn.ones(2)).numpy(), [2.0, 2.0])
