"""Regression tests for silent differences from PyTorch (wrong values, no error) that an
outside review found. Each expected value is PyTorch's documented behaviour, worked out by
hand in the comment beside it; none needs PyTorch installed."""

import numpy as np
import pytest

import kiln as kn
from kiln.frontend.nn_functional import pad as torch_pad


def in_three_modes(fn, *arrays):
    """fn's results (a list of arrays) eagerly, in graph mode and under kn.compile."""

    def as_list(out):
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def host(v):
        return v.detach().numpy() if isinstance(v, kn.Tensor) else np.asarray(v)

    eager = [host(v) for v in as_list(fn(*[kn.tensor(a) for a in arrays]))]
    with kn.Graph().as_default():
        ins = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        graph = kn.function(ins, as_list(fn(*ins)))(*arrays)
    compiled = [host(v) for v in as_list(kn.compile(fn)(*[kn.tensor(a) for a in arrays]))]
    return {"eager": eager, "graph": list(graph), "compile": compiled}


def check(fn, arrays, *expected):
    for mode, got in in_three_modes(fn, *arrays).items():
        assert len(got) == len(expected), mode
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert g.dtype == e.dtype and g.shape == e.shape, (mode, g, e)
            np.testing.assert_allclose(g, e, rtol=1e-6, err_msg=mode)


# --- 1. nn.functional.pad takes PyTorch's pad tuple (last dim first) -------------------------

ROW = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)


def test_pad_tuple_pads_the_last_dim_first():
    # PyTorch: pad=(1, 1) pads only the last dim, (2, 3) -> (2, 5); NumPy's pad_width would
    # pad every dim, (4, 5).
    assert torch_pad(np.ones((2, 3), np.float32), (1, 1)).shape == (2, 5)
    # (left, right, top, bottom) on NCHW pads W by 1+1 and H by 1+1: (1, 2, 3, 4) -> (1, 2, 5, 6)
    assert torch_pad(np.ones((1, 2, 3, 4), np.float32), (1, 1, 1, 1)).shape == (1, 2, 5, 6)
    # (0, 1, 2, 0) on (1, 1, 3): W gets 1 on the right, H 2 on top, (1, 3, 4); 7 fills
    want = np.full((1, 3, 4), 7, np.float32)
    want[0, 2:, :3] = ROW
    check(lambda x: torch_pad(x, (0, 1, 2, 0), value=7), [ROW[None]], want)


@pytest.mark.parametrize(
    ("mode", "widths", "want"),
    [
        # reflect mirrors without repeating the edge: 3 2 | 1 2 3 | 2 1 (by hand)
        ("reflect", (2, 2), [[3, 2, 1, 2, 3, 2, 1]]),
        # replicate repeats the edge: 1 1 | 1 2 3 | 3
        ("replicate", (2, 1), [[1, 1, 1, 2, 3, 3]]),
        # circular wraps around: 2 3 | 1 2 3 | 1
        ("circular", (2, 1), [[2, 3, 1, 2, 3, 1]]),
        # a negative constant width crops: drop 1 on the left, add 0 twice on the right
        ("constant", (-1, 2), [[2, 3, 0, 0]]),
    ],
)
def test_pad_modes(mode, widths, want):
    check(lambda x: torch_pad(x, widths, mode=mode), [ROW], np.array(want, np.float32))


def test_pad_reflect_gradient_sums_the_mirrored_copies():
    # reflect (2, 2) of [1 2 3] is 3 2 1 2 3 2 1: x0 read twice, x1 three times, x2 twice
    x = kn.tensor(ROW, requires_grad=True)
    torch_pad(x, (2, 2), mode="reflect").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 3, 2]])


def test_pad_rejects_what_pytorch_rejects():
    with pytest.raises(kn.ShapeError, match="pad"):
        torch_pad(np.ones((2, 3)), (1, 1, 1))  # odd length
    with pytest.raises(kn.ShapeError, match="pad"):
        torch_pad(np.ones(3), (1, 1, 1, 1))  # more pairs than dims
    with pytest.raises(kn.ShapeError, match="reflect"):
        torch_pad(ROW, (3, 0), mode="reflect")  # a reflect width must be < the dim's size


def test_kn_pad_keeps_numpy_pad_width():
    # kn.pad is NumPy's pad (PyTorch has no torch.pad): an int pads every dim on both sides
    assert kn.pad(np.ones((2, 3)), 1).shape == (4, 5)
