"""kn.save / kn.load of nested training state, as PyTorch scripts save it: the structure as
typed JSON in the safetensors header, one entry per tensor, no pickle; and a run resumed from
a checkpoint that ends bit-identical to the uninterrupted run."""

import io
import json
import os
import pickle
from collections import Counter, OrderedDict

import numpy as np
import pytest

import kiln as kn
from kiln import checkpoint
from kiln.checkpoint import CheckpointError
from kiln.optim import lr_scheduler


def test_nested_state_round_trips_with_its_types(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    state = {
        "model": {"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.zeros(2, np.float32)},
        "optimizer": {"state": {0: {"step": kn.tensor(3.0), "exp_avg": kn.ones(2)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
        "scheduler": {"milestones": Counter({3: 1, 6: 2}), "best": float("inf"), "mode": "min"},
        "epoch": 7, "done": False, "note": None, "blob": b"\x00\x01",
        "metrics": OrderedDict(loss=0.25, acc=np.float32(0.875)),
        "pairs": {(1, "a"): [1, 2.5]}, "grad": kn.tensor([1.0, 2.0], requires_grad=True),
        "param": kn.nn.Parameter(np.arange(3.0)),
    }  # fmt: skip
    kn.save(state, path)
    got = kn.load(path)
    assert list(got) == list(state)
    assert got["epoch"] == 7 and got["done"] is False and got["note"] is None
    assert got["blob"] == b"\x00\x01" and got["pairs"] == {(1, "a"): [1, 2.5]}
    assert type(got["metrics"]) is OrderedDict and type(got["metrics"]["acc"]) is np.float32
    assert type(got["scheduler"]["milestones"]) is Counter and got["scheduler"]["best"] == np.inf
    group = got["optimizer"]["param_groups"][0]
    assert group == {"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}
    assert list(got["optimizer"]["state"]) == [0]  # int keys stay ints (PyTorch's state)
    exp_avg = got["optimizer"]["state"][0]["exp_avg"]
    assert isinstance(exp_avg, kn.Tensor) and exp_avg.tolist() == [1.0, 1.0]
    assert isinstance(got["model"]["fc.weight"], np.ndarray)
    assert got["model"]["fc.weight"].dtype == np.float32
    assert got["grad"].requires_grad and not exp_avg.requires_grad
    assert isinstance(got["param"], kn.nn.Parameter) and got["param"].tolist() == [0.0, 1.0, 2.0]


def test_entries_are_named_by_their_path_and_readable_by_safetensors(tmp_path):
    from safetensors.numpy import load_file

    path = tmp_path / "ckpt.safetensors"
    kn.save({"model": {"fc.weight": np.ones(2)}, "optimizer": {"state": {0: {"m": kn.ones(2)}}},
             "a.b": np.zeros(1), "a": {"b": np.ones(1)}}, path)  # fmt: skip
    names = sorted(load_file(path))
    assert names == ["a.b", "a.b#1", "model.fc.weight", "optimizer.state.0.m"]
    got = kn.load(path)
    assert got["a.b"].tolist() == [0.0] and got["a"]["b"].tolist() == [1.0]
    assert checkpoint.load_metadata(path) == {}  # the structure is kiln's, not user metadata


def test_file_objects_and_a_single_tensor():
    buffer = io.BytesIO()
    kn.save(kn.arange(3), buffer)
    buffer.seek(0)
    assert kn.load(buffer).tolist() == [0, 1, 2]


def test_unsupported_objects_are_refused_by_path(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(
        CheckpointError, match=r"cannot save model\.act: it is a builtin_function_or_method"
    ):
        kn.save({"model": {"act": len}}, path)
    with pytest.raises(CheckpointError, match="its key"):
        kn.save({frozenset(): 1}, path)
    assert not os.listdir(tmp_path)


def test_pytorch_pickles_get_a_not_a_safetensors_file_error(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps({"w": [1.0]}, protocol=2))
    with pytest.raises(CheckpointError, match="is not a safetensors file: it is a pickle") as e:
        kn.load(path)
    assert "never unpickles" in str(e.value) and str(path) in str(e.value)
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(CheckpointError, match="is not a safetensors file: it is a zip archive"):
        kn.load(path)


def test_a_real_torch_save_file_is_refused():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(CheckpointError, match="not a safetensors file"):
        kn.load(buffer)


def _with_tree(tmp_path, tree, arrays=None):
    path = tmp_path / "crafted.safetensors"
    checkpoint.save_arrays(arrays or {"x": np.zeros(2, np.float32)}, path,
                           metadata={"kiln.tree": json.dumps(tree)})  # fmt: skip
    return path


def test_map_location_and_a_device_this_machine_lacks(tmp_path, monkeypatch):
    monkeypatch.setattr(kn.cuda, "is_available", lambda: False)
    path = _with_tree(tmp_path, {"t": "tensor", "k": "x", "dev": "cuda:0"})
    if "cuda:0" not in kn.devices():
        with pytest.raises(RuntimeError, match="map_location='cpu'"):
            kn.load(path)
    for where in ("cpu", kn.device("cpu"), {"cuda:0": "cpu"}):
        t = kn.load(path, map_location=where)
        assert t.device == kn.device("cpu") and t.tolist() == [0.0, 0.0]
    assert kn.load(path, "cpu", weights_only=False, mmap=None).tolist() == [0.0, 0.0]
    # PyTorch's default pickle module is accepted (kiln still never unpickles), but not with
    # weights_only=True (torch 2.13's RuntimeError); another module is refused
    assert kn.load(path, "cpu", pickle_module=pickle).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        kn.load(path, "cpu", pickle_module=pickle, weights_only=True)
    with pytest.raises(TypeError, match="never pickles"):
        kn.load(path, pickle_module=json)


@pytest.mark.parametrize(
    "tree, message",
    [
        ({"t": "tensor", "k": "missing"}, "names tensor 'missing'"),
        ({"t": "list", "items": [{"t": "ndarray", "k": "x"}] * 2}, "names tensor 'x' twice"),
        ({"t": "pickle", "v": "os.system"}, "unknown type 'pickle'"),
        ({"t": "int", "v": "7"}, "int node"),
        ({"t": "dict", "items": [[{"t": "int", "v": 1}]]}, "not a \\[key, value\\] pair"),
        ([1], "not a typed object"),
    ],
)
def test_malformed_structures_are_refused(tmp_path, tree, message):
    with pytest.raises(CheckpointError, match=message):
        kn.load(_with_tree(tmp_path, tree))


def test_deep_nesting_is_refused(tmp_path):
    tree = {"t": "none"}
    for _ in range(250):
        tree = {"t": "list", "items": [tree]}
    with pytest.raises(CheckpointError, match="nests deeper"):
        kn.load(_with_tree(tmp_path, tree))


# -- resuming mid-run -----------------------------------------------------------------------


def _setup():
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(4, 8), kn.nn.ReLU(), kn.nn.Linear(8, 3))
    opt = kn.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
    sched = lr_scheduler.SequentialLR(
        opt, [lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=3),
              lr_scheduler.CosineAnnealingLR(opt, T_max=10)], milestones=[3])  # fmt: skip
    rng = np.random.default_rng(0)
    x = kn.tensor(rng.standard_normal((40, 4)).astype(np.float32))
    y = kn.tensor(rng.integers(0, 3, 40))
    gen = kn.Generator().manual_seed(7)
    loader = kn.utils.data.DataLoader(kn.utils.data.TensorDataset(x, y), batch_size=8,
                                      shuffle=True, generator=gen)  # fmt: skip
    return model, opt, sched, loader, gen


def _epochs(model, opt, sched, loader, epochs):
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            kn.cross_entropy(model(xb), yb).backward()
            opt.step()
        sched.step()


def test_resuming_from_a_checkpoint_is_bit_identical(tmp_path):
    path = tmp_path / "resume.safetensors"
    model, opt, sched, loader, gen = _setup()
    _epochs(model, opt, sched, loader, 3)
    state = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    state.update(scheduler=sched.state_dict(), generator=gen.get_state(), epoch=3)
    kn.save(state, path)
    _epochs(model, opt, sched, loader, 4)  # uninterrupted: 7 epochs

    model2, opt2, sched2, loader2, gen2 = _setup()  # a fresh process would do just this
    ckpt = kn.load(path)
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    gen2.set_state(ckpt["generator"])
    assert ckpt["epoch"] == 3
    _epochs(model2, opt2, sched2, loader2, 4)
    for (name, a), b in zip(model.named_parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert (
        opt2.state_dict()["state"][0]["step"].item() == opt.state_dict()["state"][0]["step"].item()
    )
