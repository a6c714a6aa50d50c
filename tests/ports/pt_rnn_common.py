"""What the ports of PyTorch's recurrent-network tests share (test_port_pt_rnn.py,
test_port_pt_rnn_packed.py): a module built on torch under a fixed seed and its kiln twin with
torch's initial weights, and the gradients of a sum of outputs."""

import pytest
from port_common import to_numpy

import kiln as kn


def module(lib, name, *args, **kwargs):
    """torch's `nn.<name>(*args, **kwargs)` under seed 0; on kiln its twin with torch's
    initial weights."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    dtype = kwargs.get("dtype")
    made = getattr(torch.nn, name)(*args, **{**kwargs, "dtype": dtype and torch.float64})
    if lib is torch:
        return made
    twin = getattr(kn.nn, name)(*args, **kwargs)
    twin.load_state_dict({k: kn.tensor(to_numpy(v).copy()) for k, v in made.state_dict().items()})
    return twin


def grads(lib, outputs, *wrt):
    """d(sum of every output's sum)/d wrt."""
    total = sum(o.sum() for o in outputs)
    return lib.autograd.grad(total, wrt)


def param_grads(lib, m, outputs):
    total = sum(o.sum() for o in outputs)
    total.backward()
    return [p.grad for p in m.parameters()]
