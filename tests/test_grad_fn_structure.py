"""The autograd graph as user code sees it, against torch 2.13's (the oracle, run here): for
each idiom, the tree of `grad_fn` nodes reached through `next_functions` (names, the class
names `type(fn).__name__`, input numbers, `(None, 0)` entries and `AccumulateGrad` leaves whose
`.variable` is the leaf tensor itself), and `_saved_*` attributes of common nodes."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
_DATA = {
    "x": _RNG.standard_normal((3, 4)),
    "y": _RNG.standard_normal((3, 4)),
    "v": _RNG.standard_normal(4),
    "b": _RNG.standard_normal(5),
    "W": _RNG.standard_normal((5, 4)),
    "a": _RNG.standard_normal((4, 5)),
    "x3": _RNG.standard_normal((2, 3, 4)),
    "a3": _RNG.standard_normal((2, 4, 5)),
    "p": _RNG.uniform(0.1, 0.9, (3, 4)),
    "img": _RNG.standard_normal((1, 2, 5, 5)),
    "k": _RNG.standard_normal((3, 2, 3, 3)),
    "kb": _RNG.standard_normal(3),
    "g": _RNG.standard_normal(4),
}


def _leaves(lib, names: str, grad: str):
    """Tensors of `_DATA` (float32); those named in `grad` require grad."""
    return {
        n: lib.tensor(_DATA[n].astype(np.float32), requires_grad=n in grad) for n in names.split()
    }


def _idioms():
    """name -> (data names, those requiring grad, f(lib, F, leaves) -> the output)."""
    return {
        "x * 2": ("x", "x", lambda lib, F, t: t["x"] * 2),
        "2 * x": ("x", "x", lambda lib, F, t: 2 * t["x"]),
        "x * y": ("x y", "x y", lambda lib, F, t: t["x"] * t["y"]),
        "x * y, y const": ("x y", "x", lambda lib, F, t: t["x"] * t["y"]),
        "x + y": ("x y", "x y", lambda lib, F, t: t["x"] + t["y"]),
        "x + 1": ("x", "x", lambda lib, F, t: t["x"] + 1),
        "1 - x": ("x", "x", lambda lib, F, t: 1 - t["x"]),
        "x - y": ("x y", "x y", lambda lib, F, t: t["x"] - t["y"]),
        "x / y": ("x y", "x y", lambda lib, F, t: t["x"] / t["y"]),
        "x / 2": ("x", "x", lambda lib, F, t: t["x"] / 2),
        "-x": ("x", "x", lambda lib, F, t: -t["x"]),
        "x.mean()": ("x", "x", lambda lib, F, t: t["x"].mean()),
        "x.sum()": ("x", "x", lambda lib, F, t: t["x"].sum()),
        "x.sum(0)": ("x", "x", lambda lib, F, t: t["x"].sum(0)),
        "x.mean(1, keepdim)": ("x", "x", lambda lib, F, t: t["x"].mean(1, keepdim=True)),
        "x.t()": ("x", "x", lambda lib, F, t: t["x"].t()),
        "x.T": ("x", "x", lambda lib, F, t: t["x"].T),
        "x.transpose(0, 1)": ("x", "x", lambda lib, F, t: t["x"].transpose(0, 1)),
        "x3.permute": ("x3", "x3", lambda lib, F, t: t["x3"].permute(2, 0, 1)),
        "x.view(-1)": ("x", "x", lambda lib, F, t: t["x"].view(-1)),
        "x.reshape(4, 3)": ("x", "x", lambda lib, F, t: t["x"].reshape(4, 3)),
        "x.flatten()": ("x", "x", lambda lib, F, t: t["x"].flatten()),
        "x.unsqueeze(0)": ("x", "x", lambda lib, F, t: t["x"].unsqueeze(0)),
        "x[0]": ("x", "x", lambda lib, F, t: t["x"][0]),
        "x[:, 1:]": ("x", "x", lambda lib, F, t: t["x"][:, 1:]),
        "x[[0, 2]]": ("x", "x", lambda lib, F, t: t["x"][[0, 2]]),
        "x.expand": ("v", "v", lambda lib, F, t: t["v"].expand(3, 4)),
        "torch.relu": ("x", "x", lambda lib, F, t: lib.relu(t["x"])),
        "F.relu": ("x", "x", lambda lib, F, t: F.relu(t["x"])),
        "x.exp()": ("x", "x", lambda lib, F, t: t["x"].exp()),
        "x.log()": ("p", "p", lambda lib, F, t: t["p"].log()),
        "x.sqrt()": ("p", "p", lambda lib, F, t: t["p"].sqrt()),
        "x.abs()": ("x", "x", lambda lib, F, t: t["x"].abs()),
        "x.sigmoid()": ("x", "x", lambda lib, F, t: t["x"].sigmoid()),
        "x.tanh()": ("x", "x", lambda lib, F, t: t["x"].tanh()),
        "x.pow(2)": ("x", "x", lambda lib, F, t: t["x"].pow(2)),
        "x ** 2": ("x", "x", lambda lib, F, t: t["x"] ** 2),
        "x.clamp(min=0)": ("x", "x", lambda lib, F, t: t["x"].clamp(min=0)),
        "where": ("x y", "x y", lambda lib, F, t: lib.where(t["x"] > 0, t["x"], t["y"])),
        "a @ b": ("x a", "x a", lambda lib, F, t: t["x"] @ t["a"]),
        "x @ v": ("x v", "x v", lambda lib, F, t: t["x"] @ t["v"]),
        "v @ v": ("v", "v", lambda lib, F, t: t["v"] @ t["v"]),
        "bmm": ("x3 a3", "x3 a3", lambda lib, F, t: t["x3"] @ t["a3"]),
        "cat": ("x y", "x y", lambda lib, F, t: lib.cat([t["x"], t["y"]])),
        "stack": ("x y", "x y", lambda lib, F, t: lib.stack([t["x"], t["y"]])),
        "x.max()": ("x", "x", lambda lib, F, t: t["x"].max()),
        "x.max(0).values": ("x", "x", lambda lib, F, t: t["x"].max(0).values),
        "x.clone()": ("x", "x", lambda lib, F, t: t["x"].clone()),
        "x.norm()": ("x", "x", lambda lib, F, t: t["x"].norm()),
        "x.var()": ("x", "x", lambda lib, F, t: t["x"].var()),
        "x.cumsum(0)": ("x", "x", lambda lib, F, t: t["x"].cumsum(0)),
        "F.linear": ("x W b", "x W b", lambda lib, F, t: F.linear(t["x"], t["W"], t["b"])),
        "F.linear, x const": ("x W b", "W b", lambda lib, F, t: F.linear(t["x"], t["W"], t["b"])),
        "F.linear, no bias": ("x W", "x W", lambda lib, F, t: F.linear(t["x"], t["W"])),
        "F.linear of 3-d": (
            "x3 W b",
            "x3 W b",
            lambda lib, F, t: F.linear(t["x3"], t["W"], t["b"]),
        ),
        "F.softmax": ("x", "x", lambda lib, F, t: F.softmax(t["x"], dim=1)),
        "F.log_softmax": ("x", "x", lambda lib, F, t: F.log_softmax(t["x"], dim=1)),
        "F.cross_entropy": (
            "x",
            "x",
            lambda lib, F, t: F.cross_entropy(t["x"], lib.tensor([0, 3, 1])),
        ),
        "F.mse_loss": ("x y", "x", lambda lib, F, t: F.mse_loss(t["x"], t["y"])),
        "F.binary_cross_entropy": (
            "p y",
            "p",
            lambda lib, F, t: F.binary_cross_entropy(t["p"], t["y"].sigmoid()),
        ),
        "F.gelu": ("x", "x", lambda lib, F, t: F.gelu(t["x"])),
        "F.silu": ("x", "x", lambda lib, F, t: F.silu(t["x"])),
        "F.leaky_relu": ("x", "x", lambda lib, F, t: F.leaky_relu(t["x"], 0.1)),
        "F.layer_norm": (
            "x g v",
            "x g v",
            lambda lib, F, t: F.layer_norm(t["x"], (4,), t["g"], t["v"]),
        ),
        "F.conv2d": (
            "img k kb",
            "img k kb",
            lambda lib, F, t: F.conv2d(t["img"], t["k"], t["kb"]),
        ),
        "MLP": (
            "x W b a",
            "W b a",
            lambda lib, F, t: F.cross_entropy(
                F.relu(F.linear(t["x"], t["W"], t["b"])) @ t["a"].T,
                lib.tensor([0, 2, 1]),
            ),
        ),
    }


def _tree(fn, leaves: list):
    """(name, class name, children) of a node; ("AccumulateGrad", index of its variable among
    `leaves`) of a leaf; None for no node."""
    if fn is None:
        return None
    if hasattr(fn, "variable"):  # (torch names it torch::autograd::AccumulateGrad)
        index = [i for i, t in enumerate(leaves) if t is fn.variable]
        return ("AccumulateGrad", type(fn).__name__, index)
    children = tuple((_tree(f, leaves), nr) for f, nr in fn.next_functions)
    return (fn.name(), type(fn).__name__, children)


def _build(lib, case):
    names, grad, f = case
    t = _leaves(lib, names, grad)
    out = f(lib, lib.nn.functional, t)
    return out, [t[n] for n in names.split()]


IDIOMS = _idioms()


@pytest.mark.parametrize("name", list(IDIOMS))
def test_grad_fn_tree_matches_torch(name):
    ours, leaves = _build(kn, IDIOMS[name])
    theirs, torch_leaves = _build(torch, IDIOMS[name])
    assert _tree(ours.grad_fn, leaves) == _tree(theirs.grad_fn, torch_leaves)
