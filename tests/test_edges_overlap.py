"""In-place writes that read a tensor sharing part of the written memory: PyTorch refuses
them ("unsupported operation: some elements of the input tensor and the written-to tensor
refer to a single memory location"), also under torch.compile, where kiln computed NumPy's
buffered result. The same tensor (`y.add_(y)`), disjoint views, and views that are not one
dense block (PyTorch's "too hard" to check) are allowed. Expected outcomes are torch 2.13's,
written out (the last test reruns them): REFUSED, or y's values after the write."""

import numpy as np
import pytest

import kiln as kn

REFUSED = "refused"

# name: (write(module, y) into y = arange(6.0), torch 2.13's outcome)
CASES = {
    "y[1:] += y[:-1]": (lambda m, y: y[1:].__iadd__(y[:-1]), REFUSED),
    "y[1:].add_(y[:-1])": (lambda m, y: y[1:].add_(y[:-1]), REFUSED),
    "y[:-1].add_(y[1:])": (lambda m, y: y[:-1].add_(y[1:]), REFUSED),
    "y[1:].copy_(y[:-1])": (lambda m, y: y[1:].copy_(y[:-1]), REFUSED),
    "y[1:] = y[:-1]": (lambda m, y: y.__setitem__(slice(1, None), y[:-1]), REFUSED),
    "y.mul_(y[0])": (lambda m, y: y.mul_(y[0]), REFUSED),
    "y[1:].sub_(y[:-1])": (lambda m, y: y[1:].sub_(y[:-1]), REFUSED),
    "y4.add_(y4.t())": (lambda m, y: y[:4].view(2, 2).add_(y[:4].view(2, 2).t()), REFUSED),
    "y[1:].clamp_(max=y[:-1])": (lambda m, y: y[1:].clamp_(max=y[:-1]), REFUSED),
    "y[1:].addcmul_": (lambda m, y: y[1:].addcmul_(y[:-1], y[:-1]), REFUSED),
    "y[1:].lerp_": (lambda m, y: y[1:].lerp_(y[:-1], 0.5), REFUSED),
    "y[1:].pow_(y[:-1])": (lambda m, y: y[1:].pow_(y[:-1]), REFUSED),
    "y[1:].index_copy_": (lambda m, y: y[1:].index_copy_(0, m.tensor([0, 1]), y[:2]), REFUSED),
    "y[[1, 2]] = y[:2]": (lambda m, y: y.__setitem__(m.tensor([1, 2]), y[:2]), REFUSED),
    "y.add_(y)": (lambda m, y: y.add_(y), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "y += y": (lambda m, y: y.__iadd__(y), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "y.copy_(y)": (lambda m, y: y.copy_(y), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    "y[:3].copy_(y[3:])": (lambda m, y: y[:3].copy_(y[3:]), [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]),
    "y[1] = y[0]": (lambda m, y: y.__setitem__(1, y[0]), [0.0, 0.0, 2.0, 3.0, 4.0, 5.0]),
    "y[::2].add_(y[1::2])": (lambda m, y: y[::2].add_(y[1::2]), [1.0, 1.0, 5.0, 3.0, 9.0, 5.0]),
    "y[1:].masked_fill_": (lambda m, y: y[1:].masked_fill_(y[:-1] > 2, 0.0),
                           [0.0, 1.0, 2.0, 3.0, 0.0, 0.0]),
    "y[1:].fill_(y[0])": (lambda m, y: y[1:].fill_(y[0]), [0.0] * 6),
    "y[1:].neg_()": (lambda m, y: y[1:].neg_(), [0.0, -1.0, -2.0, -3.0, -4.0, -5.0]),
}  # fmt: skip


def _outcome(m, name, compiled=False):
    write, _ = CASES[name]

    def f(x):
        y = x * 1
        write(m, y)
        return y

    try:
        return (kn.compile(f) if compiled else f)(m.arange(6.0)).tolist()
    except RuntimeError as e:
        assert "some elements of the input tensor and the written-to tensor" in str(e)
        return REFUSED


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_overlapping_in_place_writes_are_refused_as_pytorch_does(name, compiled):
    assert _outcome(kn, name, compiled) == CASES[name][1]


def test_the_error_is_a_kiln_error_naming_the_op():
    y = kn.arange(6.0)
    with pytest.raises(kn.errors.UsageError, match=r"\(op add_, called at .*test_edges_overlap"):
        y[1:] += y[:-1]
    np.testing.assert_array_equal(y.numpy(), np.arange(6.0))  # nothing written
    with pytest.raises(RuntimeError, match="op add"):
        kn.add(y[:-1], 1, out=y[1:])  # out= too (PyTorch's)
    kn.add(y, 1, out=y)  # the same tensor: allowed
    np.testing.assert_array_equal(y.numpy(), np.arange(1.0, 7.0))


def test_graph_mode_refuses_too():
    with kn.Graph().as_default():
        y = kn.placeholder(kn.float32, (6,), name="a") * 1
        with pytest.raises(kn.errors.UsageError, match="op setitem"):
            y[1:] = y[:-1]


def test_the_expected_outcomes_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (_, want) in CASES.items():
        assert _outcome(torch, name) == want, name
    y = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        torch.add(y[:-1], 1, out=y[1:])
