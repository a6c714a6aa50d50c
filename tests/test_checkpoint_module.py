"""`kn.save` of a whole nn.Module and `kn.load(path, weights_only=False)`, as torch 2.13's:
`torch.save(model)` pickles the module, and `torch.load` (weights_only=True by default since
torch 2.6) refuses it with pickle.UnpicklingError ("Weights only load failed ... Re-running
`torch.load` with `weights_only` set to `False` will likely succeed"); with weights_only=False
it gives the module back. torch, where installed, is checked to answer the same way."""

import io
import os
import pickle

import numpy as np
import pytest

import kiln as kn
from kiln.checkpoint import CheckpointError


class Net(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = kn.nn.Linear(3, 2)
        self.register_buffer("scale", kn.tensor([2.0, 0.5]))
        self.note = "kept"

    def forward(self, x):
        return kn.relu(self.fc(x)) * self.scale


def _model():
    kn.manual_seed(0)
    return Net()


def test_a_whole_module_saves_and_loads_back_with_weights_only_false(tmp_path):
    model, path = _model(), tmp_path / "model.pt"
    kn.save(model, path)
    back = kn.load(path, weights_only=False)
    assert type(back) is Net and back is not model and back.note == "kept"
    x = kn.randn(4, 3)
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())
    assert [n for n, _ in back.named_parameters()] == ["fc.weight", "fc.bias"]
    assert isinstance(back.fc.weight, kn.nn.Parameter) and back.fc.weight.requires_grad
    assert back.scale.tolist() == [2.0, 0.5]
    assert os.listdir(tmp_path) == ["model.pt"]  # written atomically: no temporary left


def test_a_module_inside_a_checkpoint_dict_and_a_file_object():
    model, buffer = _model(), io.BytesIO()
    kn.save({"model": model, "epoch": 3, "w": kn.ones(2)}, buffer)
    buffer.seek(0)
    got = kn.load(buffer, weights_only=False)
    assert type(got["model"]) is Net and got["epoch"] == 3 and got["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("weights_only", [True, None])  # None: the default, as torch's
def test_the_default_load_refuses_a_whole_module_as_torch(tmp_path, weights_only):
    path = tmp_path / "model.pt"
    kn.save({"model": _model()}, path)
    kwargs = {} if weights_only is None else {"weights_only": weights_only}
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as info:
        kn.load(path, **kwargs)
    assert isinstance(info.value, CheckpointError)  # kiln's class, and torch's built-in one
    assert "weights_only" in str(info.value) and "Net" in str(info.value)
    kn.save({"w": kn.ones(1)}, path)  # a dict of tensors loads with the default, as torch's
    assert kn.load(path)["w"].tolist() == [1.0]


def test_a_module_that_cannot_be_pickled_is_refused_and_nothing_is_written(tmp_path):
    model = _model()
    model.act = lambda x: x  # torch.save raises there too (a lambda is not picklable)
    with pytest.raises(CheckpointError, match="cannot save the module: pickling it failed"):
        kn.save(model, tmp_path / "model.pt")
    assert not os.listdir(tmp_path)


def test_torch_answers_the_same_way(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(3, 2), path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path)
    assert type(torch.load(path, weights_only=False)) is torch.nn.Linear
