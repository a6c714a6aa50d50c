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
]  # fmt: skip


@pytest.mark.parametrize("name,fn,want", CASES, ids=[c[0] for c in CASES])
def test_compiled_views_and_copies_share_memory_as_pytorchs(name, fn, want):
    eager = fn(kn, kn.tensor(A))
    np.testing.assert_array_equal(eager.numpy(), want)
    compiled = kn.compile(lambda x: fn(kn, x))(kn.tensor(A))
    np.testing.assert_array_equal(compiled.numpy(), want)


def test_the_cases_match_torch():
    torch = pytest.importorskip("torch")
    for name, fn, want in CASES:
        got = fn(torch, torch.tensor(A)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
