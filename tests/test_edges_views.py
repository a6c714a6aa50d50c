"""Views whose layout or aliasing differed from PyTorch's without an error: `stride()` after
`expand` and `unfold` as a view. Expected values are torch 2.13's (written out; the torch
tests rerun them where torch is installed)."""

import numpy as np
import pytest

import kiln as kn

# (make the base, expand it): torch 2.13's strides, in elements
EXPAND_CASES = {
    "expand": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 4), (1, 0)),
    "expand-keeps-1": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 1), (1, 1)),
    "expand-minus-1": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(-1, 4), (1, 0)),
    "broadcast_to": (lambda m: m.arange(3.0).reshape(3, 1),
                     lambda t: t.broadcast_to((2, 3, 4)), (0, 1, 0)),
    "expand_as": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand_as(t.new_zeros(3, 4)),
                  (1, 0)),
    "row": (lambda m: m.ones(1, 3), lambda t: t.expand(2, 3), (0, 1)),
    "size-1-to-1": (lambda m: m.ones(1, 1), lambda t: t.expand(1, 5), (1, 0)),
    "new-leading-1": (lambda m: m.ones(3), lambda t: t.expand(1, 1, 3), (3, 3, 1)),
    "strided-base": (lambda m: m.ones(3)[::2], lambda t: t.expand(1, 1, 2), (4, 4, 2)),
    "column-slice": (lambda m: m.ones(2, 3)[:, :1], lambda t: t.expand(1, 2, 1), (6, 3, 1)),
    "0-d": (lambda m: m.tensor(2.0), lambda t: t.expand(3, 1), (0, 0)),
    "transposed": (lambda m: m.arange(3.0).reshape(3, 1), lambda t: t.expand(3, 4).t(), (0, 1)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPAND_CASES))
def test_expand_strides_are_torchs(name):
    make, expand, want = EXPAND_CASES[name]
    base = make(kn)
    y = expand(base)
    assert y.stride() == want
    # the same elements (size-1 dims address nothing), a view of the base
    np.testing.assert_array_equal(y.numpy(), expand(kn.tensor(base.numpy().copy())).numpy())
    assert np.shares_memory(y.numpy(), base.numpy())
    assert y.storage_offset() == base.storage_offset()


def test_the_expand_strides_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (make, expand, want) in EXPAND_CASES.items():
        assert expand(make(torch)).stride() == want, name
