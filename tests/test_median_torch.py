"""`median` and `nanmedian` as PyTorch 2.13 computes them: a slice with a NaN has median NaN,
at the index of its first NaN (kiln gave the median of the other values); the gradient of
the median of all elements goes evenly to the elements equal to it (NaN: to the NaNs), that
of a median along a dim to its index. Expected values come from torch run on the same data,
in eager mode, under kn.compile and in graph mode."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

N = float("nan")
ROWS = [[1.0, N, N, 0.0], [3.0, 1.0, N, 2.0], [1.0, 2.0, 2.0, 3.0], [4.0, 1.0, 3.0, 2.0],
        [2.0, 2.0, 2.0, 2.0], [N, N, N, N]]  # fmt: skip


def _torch(fn, data):
    x = torch.tensor(data, requires_grad=True)
    out = fn(x)
    values = out if isinstance(out, torch.Tensor) else out.values
    values.sum().backward()
    indices = None if isinstance(out, torch.Tensor) else out.indices.numpy()
    return values.detach().numpy(), indices, x.grad.numpy()


def _eager(fn, data, compiled=False):
    x = kn.tensor(data, requires_grad=True)
    out = (kn.compile(fn) if compiled else fn)(x)
    values = out if isinstance(out, kn.Tensor) else out.values
    values.sum().backward()
    indices = None if isinstance(out, kn.Tensor) else out.indices.numpy()
    return values.detach().numpy(), indices, x.grad.numpy()


def _graph(fn, data):
    data = np.asarray(data, np.float32)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, data.shape)
        out = fn(x)
        values = out if isinstance(out, kn.Symbol) else out.values
        (g,) = kn.grad(values.sum(), [x])
        fetch = [values, g] if isinstance(out, kn.Symbol) else [values, g, out.indices]
        f = kn.function([x], fetch)
    got = f(data)
    return got[0], (got[2] if len(got) > 2 else None), got[1]


FUNCTIONS = {
    "median": lambda x: x.median(),
    "median_dim1": lambda x: x.median(1),
    "median_dim0_keep": lambda x: x.median(0, keepdim=True),
    "nanmedian": lambda x: x.nanmedian(),
}


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("mode", ["eager", "compiled", "graph"])
def test_median_as_torch(name, mode):
    fn = FUNCTIONS[name]
    for data in (ROWS, ROWS[1], ROWS[2], ROWS[5]):
        if np.ndim(data) == 1 and name == "median_dim1":
            continue
        want = _torch(fn, data)
        got = {"eager": lambda: _eager(fn, data), "compiled": lambda: _eager(fn, data, True),
               "graph": lambda: _graph(fn, data)}[mode]()  # fmt: skip
        for w, g in zip(want, got):
            if w is not None:
                np.testing.assert_array_equal(g, w, err_msg=f"{name} {mode} {data}")


def test_integer_median_is_unchanged():  # torch 2.13: 2 at index 2
    assert kn.tensor([3, 1, 2, 2]).median().item() == 2
    assert kn.tensor([[3, 1, 2, 2]]).median(1).indices.tolist() == [2]
