"""Views and copies under `kn.compile` (kiln/frontend/functionalize.py): which results share
memory with their base follows PyTorch's, so a change through one is seen through the other
exactly where PyTorch's is. The expected values are PyTorch 2.13's eager results on the same
programs (written out here; the last test runs them on torch too where it is installed)."""

import numpy as np
import pytest

import kiln as kn

A = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _base_then_result(op):
    """`r = op(y)`, then y changes in place: r sees it where r is a view of y."""

    def fn(m, x):
        y = x.clone()
        r = op(m, y)
        y.add_(1)
        return r

    return fn


def _result_then_base(op):
    """`op(y)` changes in place: y sees it where the result is a view of y."""

    def fn(m, x):
        y = x.clone()
        op(m, y).mul_(2)
        return y

    return fn


# (name, program, expected) -- expected from torch 2.13 eager on A
CASES = [
    # copies in PyTorch: flip, fliplr, rot90 and roll return fresh tensors
    ("flip/base", _base_then_result(lambda m, y: y.flip(0)), A[::-1]),
    ("flip/result", _result_then_base(lambda m, y: y.flip(0)), A),
    ("fliplr/base", _base_then_result(lambda m, y: m.fliplr(y)), A[:, ::-1]),
    ("rot90/result", _result_then_base(lambda m, y: m.rot90(y)), A),
    ("rot90_0/result", _result_then_base(lambda m, y: m.rot90(y, 0)), A),
    ("roll0/base", _base_then_result(lambda m, y: y.roll(0, 0)), A),
    ("roll0/result", _result_then_base(lambda m, y: y.roll(0, 0)), A),
    # views in PyTorch that only read: expand, broadcast_to, detach, a dtype view
    ("expand/base", _base_then_result(lambda m, y: y[:, :1].expand(3, 4)),
     np.repeat(A[:, :1] + 1, 4, 1)),
    ("expand_as/base", _base_then_result(lambda m, y: y[:1].expand_as(y)),
     np.repeat(A[:1] + 1, 3, 0)),
    ("broadcast_to/base", _base_then_result(lambda m, y: m.broadcast_to(y[0], (3, 4))),
     np.repeat(A[:1] + 1, 3, 0)),
    ("detach/base", _base_then_result(lambda m, y: y.detach()), A + 1),
    ("view_dtype/base", _base_then_result(lambda m, y: y.view(m.int32)),
     (A + 1).view(np.int32)),
    # detach shares its base's memory: a change through it is the base's
    ("detach/result", _result_then_base(lambda m, y: y.detach()), A * 2),
    # pieces of split and chunk are views
    ("split/base", _base_then_result(lambda m, y: y.split([1, 3], 1)[1]), A[:, 1:] + 1),
    ("split/result", _result_then_base(lambda m, y: y.split([1, 3], 1)[1]),
     np.concatenate([A[:, :1], A[:, 1:] * 2], 1)),
    ("chunk/base", _base_then_result(lambda m, y: y.chunk(3)[1]), A[1:2] + 1),
    ("chunk/result", _result_then_base(lambda m, y: y.chunk(3)[1]),
     np.concatenate([A[:1], A[1:2] * 2, A[2:]])),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,want", CASES, ids=[c[0] for c in CASES])
def test_compiled_views_and_copies_share_memory_as_pytorchs(name, fn, want):
    eager = fn(kn, kn.tensor(A))
    np.testing.assert_array_equal(eager.numpy(), want)
    compiled = kn.compile(lambda x: fn(kn, x))(kn.tensor(A))
    np.testing.assert_array_equal(compiled.numpy(), want)


def test_compiled_split_pieces_changed_then_base_read():
    """A split piece filled in place (PyTorch: the base's columns change); torch 2.13 gives
    [[0, 1, -1, -1], [4, 5, -1, -1], [8, 9, -1, -1]]."""

    def fn(x):
        y = x.clone()
        _, q = y.split(2, dim=1)
        q.fill_(-1)
        return y, q + 0

    want = A.copy()
    want[:, 2:] = -1
    y, q = kn.compile(fn)(kn.tensor(A))
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(q.numpy(), -np.ones((3, 2), np.float32))


def test_compiled_detach_of_an_argument_changes_the_callers_tensor():
    """`x.detach().mul_(2)` changes x (one memory in PyTorch): the compiled call writes it
    back into the caller's tensor and reads the new value after."""

    def fn(x):
        x.detach().mul_(2)
        return x + 0

    x = kn.tensor(A)
    out = kn.compile(fn)(x)
    np.testing.assert_array_equal(out.numpy(), A * 2)
    np.testing.assert_array_equal(x.numpy(), A * 2)


def test_compiled_change_through_detach_keeps_the_bases_gradient():
    """PyTorch: `y = a * 2; y.detach().zero_(); (y * 3).sum().backward()` leaves y's
    gradient path as it was, so a.grad is 6 everywhere (torch 2.13)."""

    def fn(a):
        y = a * 2
        y.detach().zero_()
        return (y * 3).sum()

    a = kn.tensor(A, requires_grad=True)
    loss = kn.compile(fn)(a)
    loss.backward()
    assert float(loss) == 0.0
    np.testing.assert_array_equal(a.grad.numpy(), np.full_like(A, 6.0))


def test_the_cases_match_torch():
    torch = pytest.importorskip("torch")
    for name, fn, want in CASES:
        got = fn(torch, torch.tensor(A)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    a = torch.tensor(A, requires_grad=True)
    y = a * 2
    y.detach().zero_()
    (y * 3).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full_like(A, 6.0))


def test_compiled_copy_of_a_tensor_made_inside_into_a_view():
    """`y[0].copy_(kn.arange(4.0))` in a compiled function (kiln raised an AttributeError on
    the device check of a Symbol target); the row becomes 0, 1, 2, 3 (torch 2.13)."""

    def fn(x):
        y = x.clone()
        y[0].copy_(kn.arange(4.0))
        return y

    want = A.copy()
    want[0] = np.arange(4.0)
    np.testing.assert_array_equal(kn.compile(fn)(kn.tensor(A)).numpy(), want)


# x //= y, x %= y, x **= y, x &= y, x |= y, x ^= y, x <<= y, x >>= y change x in place in
# PyTorch (its views and a compiled function's argument see it); kiln had no such methods, so
# Python rebound x to a new tensor. Expected values from the operators on NumPy arrays.
INT = np.array([[-7, -2, 0], [3, 5, 9]], np.int64)
AUGMENTED = {
    "floordiv": (lambda y: y.__ifloordiv__(2), lambda a: a // 2),
    "mod": (lambda y: y.__imod__(4), lambda a: a % 4),
    "pow": (lambda y: y.__ipow__(2), lambda a: a**2),
    "and": (lambda y: y.__iand__(6), lambda a: a & 6),
    "or": (lambda y: y.__ior__(1), lambda a: a | 1),
    "xor": (lambda y: y.__ixor__(3), lambda a: a ^ 3),
    "lshift": (lambda y: y.__ilshift__(1), lambda a: a << 1),
    "rshift": (lambda y: y.__irshift__(1), lambda a: a >> 1),
}


@pytest.mark.parametrize("name", sorted(AUGMENTED))
def test_augmented_assignment_changes_the_tensor_in_place(name):
    op, ref = AUGMENTED[name]
    want = INT.copy()
    want[1] = ref(INT[1])

    def fn(x):
        row = x[1]  # a view: x changes with it
        op(row)
        return x + 0

    x = kn.tensor(INT)
    np.testing.assert_array_equal(fn(x).numpy(), want)
    np.testing.assert_array_equal(x.numpy(), want)
    x = kn.tensor(INT)
    np.testing.assert_array_equal(kn.compile(fn)(x).numpy(), want)
    np.testing.assert_array_equal(x.numpy(), want)  # the argument, written back


def test_augmented_assignment_on_a_bool_mask():
    """`mask |= other` in a compiled function changes the caller's mask (torch 2.13)."""

    def fn(mask, other):
        mask |= other
        return mask.sum()

    mask = kn.tensor([True, False, False])
    total = kn.compile(fn)(mask, kn.tensor([False, False, True]))
    assert int(total) == 2
    np.testing.assert_array_equal(mask.numpy(), [True, False, True])
