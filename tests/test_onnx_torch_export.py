"""`kn.onnx.export`, torch.onnx.export's call: a model exported with its example arguments,
names and dynamic axes runs in onnxruntime on other batch sizes with the eager model's
values (the expected values: kiln's eager outputs in eval mode)."""

import io

import numpy as np
import pytest

import kiln as kn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _net():
    kn.manual_seed(0)
    return kn.nn.Sequential(
        kn.nn.Conv2d(1, 4, 3, padding=1), kn.nn.BatchNorm2d(4), kn.nn.ReLU(),
        kn.nn.Dropout(0.5), kn.nn.Flatten(), kn.nn.Linear(4 * 6 * 6, 3),
    )  # fmt: skip


def _run(data: bytes, feeds: dict) -> list:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_export_with_names_and_dynamic_batch_runs_as_eager(tmp_path):
    net = _net()
    net.train()
    net(kn.randn(8, 1, 6, 6))  # running statistics that eval mode uses
    path = tmp_path / "net.onnx"
    program = kn.onnx.export(net, (kn.randn(2, 1, 6, 6),), str(path), input_names=["images"],
                             output_names=["logits"],
                             dynamic_axes={"images": {0: "batch"}, "logits": [0]})  # fmt: skip
    assert net.training  # put back as it was
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["images"]
    assert [o.name for o in model.graph.output] == ["logits"]
    dims = model.graph.output[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "logits_dynamic_axes_1" and dims[1].dim_value == 3
    assert program.model_proto.graph.input[0].name == "images"
    x = np.random.default_rng(1).standard_normal((5, 1, 6, 6)).astype(np.float32)
    (got,) = _run(path.read_bytes(), {"images": x})
    net.eval()
    want = net(kn.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_export_to_a_file_object_with_kwargs_and_one_tensor():
    kn.manual_seed(3)
    lin = kn.nn.Linear(3, 2)

    def f(x, scale=1.0):
        return lin(x) * scale

    buffer = io.BytesIO()
    kn.onnx.export(f, kn.ones(4, 3), buffer, kwargs={"scale": 3.0})
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    model = onnx.load_from_string(buffer.getvalue())
    (got,) = _run(buffer.getvalue(), {model.graph.input[0].name: x})
    np.testing.assert_allclose(got, f(kn.from_numpy(x), 3.0).detach().numpy(), rtol=1e-6)
    saved = io.BytesIO()
    kn.onnx.export(lin, (kn.ones(1, 3),)).save(saved)
    assert onnx.load_from_string(saved.getvalue()).graph.node


def test_export_refuses_names_it_cannot_place():
    lin = kn.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="2 input_names for the model's 1 inputs"):
        kn.onnx.export(lin, (kn.ones(1, 3),), input_names=["a", "b"])
    with pytest.raises(ValueError, match="dynamic_axes names 'z'"):
        kn.onnx.export(lin, (kn.ones(1, 3),), dynamic_axes={"z": [0]})
    assert not kn.onnx.is_in_onnx_export()
    program = kn.onnx.export(lambda x: x * 2 if kn.onnx.is_in_onnx_export() else x * 3,
                             (kn.ones(2),))  # fmt: skip
    data = program.model_proto.SerializeToString()
    (got,) = _run(data, {program.model_proto.graph.input[0].name: np.ones(2, np.float32)})
    assert got.tolist() == [2.0, 2.0]  # traced while exporting
