"""`Module.to` / `half()` / `type()` and `state_dict()` as PyTorch's: call forms, which values a
cast changes, Tensors sharing memory in PyTorch's key order. Expected dtypes, keys and types
come from torch itself where it is importable; the rest from PyTorch's documented rules."""

import copy

import numpy as np
import pytest

import kiln as kn


def pair():
    """The same model in kiln and (if importable) torch: parameters, float and int buffers,
    a non-persistent buffer, nesting."""

    def build(nn):
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(nn.Linear(4, 2)))
        return model

    ours = build(kn.nn)
    ours[0].register_buffer("scratch", kn.zeros(2), persistent=False)
    return ours, build


def dtypes_of(state) -> dict:
    return {k: str(v.dtype).replace("torch.", "").replace("kiln.", "") for k, v in state.items()}


CALLS = {
    "to(float16)": lambda m, lib: m.to(lib.float16),
    "to(cpu, float64)": lambda m, lib: m.to("cpu", lib.float64),
    "to(device=, dtype=)": lambda m, lib: m.to(device="cpu", dtype=lib.float16),
    "to(dtype, non_blocking)": lambda m, lib: m.to(lib.float64, non_blocking=True),
    "to(tensor)": lambda m, lib: m.to(lib.ones(1, dtype=lib.float64)),
    "half()": lambda m, lib: m.half(),
    "double()": lambda m, lib: m.double(),
    "bfloat16()": lambda m, lib: m.bfloat16(),
    "half().float()": lambda m, lib: m.half().float(),
    "type(float16)": lambda m, lib: m.type(lib.float16),
}


@pytest.mark.parametrize("name", CALLS)
def test_casts_change_the_dtypes_torch_changes(name):
    torch = pytest.importorskip("torch")
    ours, build = pair()
    theirs = build(torch.nn)
    assert CALLS[name](ours, kn) is ours
    assert CALLS[name](theirs, torch) is theirs
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert dtypes_of(ours.state_dict()) == dtypes_of(theirs.state_dict())
    assert (
        dtypes_of({0: ours[0].scratch})[0] == dtypes_of({0: theirs[0].weight})[0]
    )  # non-persistent too


def test_a_cast_keeps_the_parameter_objects_values_and_grads():
    model = kn.nn.Linear(3, 2)
    weight, before = model.weight, model.weight.detach().clone()
    model(kn.ones(1, 3)).sum().backward()
    model.double()
    assert model.weight is weight and weight.dtype == np.float64 and weight.requires_grad
    assert weight.grad.dtype == np.float64  # PyTorch casts .grad with its parameter
    np.testing.assert_array_equal(weight.numpy(), before.numpy().astype(np.float64))
    out = model(kn.ones(1, 3, dtype=kn.float64))
    assert out.dtype == np.float64
    out.sum().backward()  # trains in float64
    assert weight.grad.dtype == np.float64


def test_to_rejects_what_torch_rejects():
    model = kn.nn.BatchNorm1d(2)
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(kn.int64)
    with pytest.raises(TypeError):
        model.to("cpu", "cpu")
    with pytest.raises(TypeError):
        model.to(kn.float16, unknown=1)
    with pytest.raises(kn.DeviceError):
        model.to("tpu")
    assert model.weight.dtype == np.float32  # nothing changed


def test_cuda_checks_the_device_and_values_stay_in_host_memory(monkeypatch):
    """NOTE: kiln keeps module values on the host; the program running them copies them."""
    model = kn.nn.Linear(2, 2)
    if kn.cuda.why_unavailable() is not None:
        with pytest.raises(kn.DeviceError):
            model.cuda()
    import fake_cupy

    fake_cupy.install(monkeypatch)
    fake_cupy.reset_kiln()
    try:
        assert model.cuda() is model and model.to("cuda:1", kn.float16) is model
        assert model.weight.device == kn.device("cpu") and model.weight.dtype == np.float16
        assert model.cpu() is model
    finally:
        fake_cupy.reset_kiln()


def test_compile_retraces_after_a_cast():
    """The inputs (indices) keep their signature: only the parameters' dtype changed."""
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Embedding(5, 3), kn.nn.Linear(3, 2))
    step = kn.compile(lambda i: model(i))
    idx = kn.tensor([0, 3, 4])
    assert step(idx).dtype == np.float32
    model.double()
    with kn.no_grad():
        model[1].weight.mul_(2.0)  # a new value too: the trace must read it
        want = model(idx)
    got = step(idx)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.detach().numpy(), want.numpy())


def test_a_graph_built_before_a_cast_refuses_the_cast_module():
    with kn.Graph().as_default():
        model = kn.nn.Linear(2, 2)
        model(kn.placeholder(kn.float32, (1, 2), name="x"))
        model.double()
        with pytest.raises(kn.GraphError, match="was cast .* build the graph again"):
            model(kn.placeholder(kn.float64, (1, 2), name="x64"))
    with kn.Graph().as_default():  # a new graph takes the new dtype
        y = model(kn.placeholder(kn.float64, (1, 2), name="x"))
        assert y.dtype == np.float64


def test_state_dict_is_tensors_in_torch_order_sharing_memory():
    ours, build = pair()
    state = ours.state_dict()
    assert all(type(v) is kn.Tensor and not v.requires_grad for v in state.values())
    assert "0.scratch" not in state
    # shares memory, as PyTorch's: an optimizer step shows in a state_dict taken before it
    before = {k: v.clone() for k, v in state.items()}
    opt = kn.optim.SGD(ours.parameters(), lr=0.1)
    ours(kn.randn(4, 3)).sum().backward()
    opt.step()
    assert not np.array_equal(state["0.weight"].numpy(), before["0.weight"].numpy())
    np.testing.assert_array_equal(state["0.weight"].numpy(), ours[0].weight.numpy())
    # copy.deepcopy is PyTorch's way to keep a snapshot
    snapshot = copy.deepcopy(ours.state_dict())
    with kn.no_grad():
        ours[0].weight.zero_()
    assert np.any(snapshot["0.weight"].numpy() != 0)


def test_state_dict_arguments_match_torch():
    torch = pytest.importorskip("torch")
    ours, build = pair()
    theirs = build(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict(prefix="m.")) == list(theirs.state_dict(prefix="m."))
    kept = ours.state_dict(keep_vars=True)
    assert kept["0.weight"] is ours[0].weight and kept["1.running_mean"] is ours[1].running_mean
    destination = {"other": 1}
    assert ours.state_dict(destination=destination) is destination
    assert list(destination)[:2] == ["other", "0.weight"]
    assert type(ours.state_dict()) is type(theirs.state_dict())  # OrderedDict


def test_load_state_dict_takes_tensors_arrays_and_torch_state():
    torch = pytest.importorskip("torch")
    ours, build = pair()
    theirs = build(torch.nn)
    state = {k: v.numpy() for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == repr(theirs.load_state_dict(theirs.state_dict()))  # all matched
    np.testing.assert_array_equal(ours[0].weight.numpy(), theirs[0].weight.detach().numpy())
    other, _ = pair()
    other.load_state_dict(ours.state_dict())  # kiln Tensors
    np.testing.assert_array_equal(other[2][0].bias.numpy(), theirs[2][0].bias.detach().numpy())
    other.half().load_state_dict(ours.state_dict())  # cast to the module's dtype
    assert other[0].weight.dtype == np.float16
    direct, _ = pair()
    direct.load_state_dict(theirs.state_dict())  # torch's own Tensors
    np.testing.assert_array_equal(direct[0].weight.numpy(), theirs[0].weight.detach().numpy())


def test_save_and_load_a_state_dict_of_tensors(tmp_path):
    ours, _ = pair()
    kn.save({"model": ours.state_dict(), "epoch": 3}, tmp_path / "c.safetensors")
    loaded = kn.load(tmp_path / "c.safetensors")
    assert list(loaded["model"]) == list(ours.state_dict())
    assert all(type(v) is kn.Tensor for v in loaded["model"].values())
    fresh, _ = pair()
    fresh.load_state_dict(loaded["model"])
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), ours.state_dict()[k].numpy())
