"""Module state against PyTorch's: a state dict without `num_batches_tracked` loads into a norm
layer (torch fills it from the module when the dict has no version, as plain dicts and
converted checkpoints do; kiln raised "Missing key"), `param.data = t` (kiln: AttributeError)
and `load_state_dict(assign=True)` (kiln: TypeError). Expected values are torch's."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm1d"])
def test_norm_loads_state_without_num_batches_tracked_like_torch(cls):
    kw = {"track_running_stats": True} if cls.startswith("Instance") else {}
    out = []
    for lib in (torch, kn):
        m = getattr(lib.nn, cls)(3, **kw)
        m.train()
        x = lib.tensor(np.random.default_rng(0).standard_normal((4, 3, 5)).astype(np.float32))
        m(x if cls != "BatchNorm2d" else x[..., None])
        state = {k: v.clone() * 2 for k, v in m.state_dict().items()
                 if k != "num_batches_tracked"}  # fmt: skip
        keys = m.load_state_dict(state)
        out.append((list(keys.missing_keys), list(keys.unexpected_keys),
                    m.num_batches_tracked.item(), np.asarray(m.running_var.tolist())))  # fmt: skip
    (tm, tu, tn, tv), (km, ku, kn_, kv) = out
    counted = 0 if cls.startswith("Instance") else 1  # torch's instance norm counts no batches
    assert (km, ku, kn_) == (tm, tu, tn) == ([], [], counted)  # the module's own count stays
    np.testing.assert_allclose(kv, tv, rtol=1e-6)
    with pytest.raises(RuntimeError, match="Missing key.*0.bias"):  # other keys still count
        kn.nn.Sequential(kn.nn.BatchNorm1d(3)).load_state_dict({"0.weight": kn.ones(3)})


def test_parameter_data_assignment_like_torch():
    out = []
    for lib in (torch, kn):
        lin = lib.nn.Linear(2, 3)
        w = lin.weight
        lin.weight.data = lib.ones(4, 2, dtype=lib.float64)  # any shape and dtype, as torch
        same = lin.weight is w
        names = list(dict(lin.named_parameters()))
        out.append((same, type(w).__name__, tuple(w.shape), str(w.dtype).split(".")[-1],
                    w.requires_grad, names == ["weight", "bias"]))  # fmt: skip
        lin.weight.data = lib.full((3, 2), 0.5)
        y = lin(lib.ones(1, 2))
        y.sum().backward()
        out.append((y.tolist() == (lin.bias + 1.0).detach().reshape(1, 3).tolist(),
                    lin.weight.grad.tolist()))  # fmt: skip
    assert out[0] == out[2] and out[1] == out[3]


def test_load_state_dict_assign_like_torch():
    out = []
    for lib in (torch, kn):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        m[0].bias.requires_grad_(False)
        old = m[0].weight
        state = {k: v.double() if v.is_floating_point() else v for k, v in m.state_dict().items()}
        state["0.weight"] = lib.full((2, 2), 3.0, dtype=lib.float64)
        m.load_state_dict(state, assign=True)
        w, mean = m[0].weight, m[1].running_mean
        out.append((w is old, type(w).__name__, str(w.dtype)[-7:], w.requires_grad,
                    m[0].bias.requires_grad, w.sum().item(), str(mean.dtype)[-7:],
                    type(mean).__name__))  # fmt: skip
    assert out[0][:7] == out[1][:7]
    assert out[1][7] == "Buffer"  # torch: a plain Tensor; kiln's buffers are Buffers


def test_load_state_dict_assign_keeps_tied_weights():
    emb, head = kn.nn.Embedding(4, 3), kn.nn.Linear(3, 4, bias=False)
    m = kn.nn.ModuleDict({"emb": emb, "head": head})
    head.weight = emb.weight
    m.load_state_dict({k: v * 0 + 1 for k, v in m.state_dict().items()}, assign=True)
    assert m["head"].weight is m["emb"].weight and m["emb"].weight.sum().item() == 12
