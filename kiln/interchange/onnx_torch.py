"""`kn.onnx.export`: torch.onnx.export's call (model, example args, file, input and output
names, dynamic axes) on kiln's one exporter, `export_onnx`."""

from __future__ import annotations

import enum
import inspect
import os
import threading
import types

import numpy as np

from ..checkpoint import write_atomic
from ..eager.tensor import Tensor
from ..errors import ArgumentError
from ..frontend.core import placeholder
from ..graph.core import Graph, Symbol
from ..nn.module import Module
from .onnx_export import to_onnx

__all__ = ["ONNXProgram", "TrainingMode", "export", "is_in_onnx_export", "onnx"]

_state = threading.local()


def is_in_onnx_export() -> bool:
    """Whether `kn.onnx.export` is tracing a model now (torch.onnx.is_in_onnx_export)."""
    return getattr(_state, "exporting", 0) > 0


class ONNXProgram:
    """What `export` returns, as torch.onnx's: the model (`model_proto`) and `save(f)`."""

    def __init__(self, model_proto):
        self.model_proto = model_proto

    @property
    def model(self):
        return self.model_proto

    def save(self, destination) -> None:
        """Writes the model to a path (atomically) or a binary file object."""
        _write(destination, self.model_proto.SerializeToString())

    def __repr__(self) -> str:
        graph = self.model_proto.graph
        names = [i.name for i in graph.input], [o.name for o in graph.output]
        return f"ONNXProgram(inputs={names[0]}, outputs={names[1]})"


def _write(destination, data: bytes) -> None:
    if isinstance(destination, (str, os.PathLike)):
        write_atomic(destination, data)
    else:
        destination.write(data)


def _rename(graph, old: str, new: str) -> None:
    """Renames the value `old` of `graph` (inputs, outputs, nodes, value_info) to `new`."""
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.name == old:
            value.name = new
    for node in graph.node:
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]


def _names(kind: str, given, values) -> None:
    if given is None:
        return
    given = list(given)
    if len(given) > len(values):
        raise ArgumentError(f"kn.onnx.export: {len(given)} {kind}_names for the model's "
                            f"{len(values)} {kind}s")  # fmt: skip


def _input_names(model, args, given) -> list:
    """The graph input name of each example argument that is an array (None for the others):
    `given` in order, else the parameter names of `model`'s forward, else `input_{k}`."""
    try:
        target = model.forward if isinstance(model, Module) else model
        params = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        params = []
    names, k = [], 0
    for i, a in enumerate(args):
        if not isinstance(a, (Tensor, np.ndarray)):
            names.append(None)
            continue
        if given is not None and k < len(given):
            names.append(str(given[k]))
        else:
            names.append(params[i] if i < len(params) else f"input_{k}")
        k += 1
    return names


def _symbolic(fn, args, names, axes) -> Graph:
    """`fn` built in graph mode on placeholders of the example arguments' shapes and dtypes,
    with the dims `axes` names ({input name: {axis: dim name}}) symbolic: a program whose
    reshapes and the like follow the bound dims, as a dynamic ONNX model must."""
    graph = Graph()
    with graph.as_default():
        call = []
        for a, name in zip(args, names):
            if name is None:
                call.append(a)
                continue
            named = axes.get(name, {})
            shape = tuple(named.get(k, d) for k, d in enumerate(a.shape))
            call.append(placeholder(a.dtype, shape, name=name))
        out = fn(*call)
    graph.inputs = [s for s in call if isinstance(s, Symbol)]
    graph.outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    return graph


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamic_axes=None, export_params=True,
           training=None, **options) -> ONNXProgram:  # fmt: skip
    """Exports `model` (a Module or function) called on the example `args` (a tuple, or one
    tensor) and `kwargs` as an ONNX model, as `torch.onnx.export`: written to `f` (a path,
    atomically, or a binary file) when given, and returned as an `ONNXProgram`. Graph inputs
    and outputs take `input_names`/`output_names` (in order); `dynamic_axes` ({name: {axis:
    dim name}} or {name: [axis, ...]}) makes those dims symbolic. A Module is exported in
    eval mode (PyTorch's default `training=TrainingMode.EVAL`; `TRAINING`, `PRESERVE`) and
    put back as it was. The other
    options of PyTorch's exporters (`dynamo`, `do_constant_folding`, ...) change nothing:
    kiln writes its user-level program, one ONNX node group per kiln node. Without dynamic
    input axes the model is traced as `kn.compile` traces it; with them it is built in graph
    mode on placeholders whose named dims are symbolic, so its reshapes follow them.

    >>> import kiln as kn, io, onnx
    >>> kn.manual_seed(0)
    >>> buffer = io.BytesIO()
    >>> program = kn.onnx.export(kn.nn.Linear(4, 3), (kn.ones(2, 4),), buffer,
    ...                          input_names=["x"], output_names=["y"],
    ...                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    >>> model = onnx.load_from_string(buffer.getvalue())
    >>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
    (['x'], ['y'])
    >>> model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    'batch'
    """
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if isinstance(args[-1:] and args[-1], dict) and not kwargs:  # torch's trailing kwargs dict
        args, kwargs = args[:-1], args[-1]
    fn = model
    if kwargs:

        def fn(*a):
            return model(*a, **kwargs)

    mode = str(getattr(training, "name", training or "EVAL")).upper()
    was_training = model.training if isinstance(model, Module) else None
    train = was_training if mode == "PRESERVE" else mode == "TRAINING"
    axes = {name: dict(a) if isinstance(a, dict) else
            {int(k): f"{name}_dynamic_axes_{j + 1}" for j, k in enumerate(a)}
            for name, a in (dynamic_axes or {}).items()}  # fmt: skip
    _state.exporting = getattr(_state, "exporting", 0) + 1
    try:
        if was_training is not None:
            model.train(train)
        names = _input_names(model, args, input_names)
        if any(name in axes for name in names if name is not None):  # symbolic dims
            proto = to_onnx(_symbolic(fn, args, names, axes), opset_version, True)
        else:
            proto = to_onnx(fn, opset_version, False, args)
    finally:
        _state.exporting -= 1
        if was_training is not None:
            model.train(was_training)
    graph = proto.graph
    _names("input", input_names, graph.input)
    _names("output", output_names, graph.output)
    for values, names in ((graph.input, input_names), (graph.output, output_names)):
        for value, name in zip(list(values), names or ()):
            _rename(graph, value.name, name)
    for name, named in axes.items():
        value = next((v for v in (*graph.input, *graph.output) if v.name == name), None)
        if value is None:
            raise ArgumentError(f"kn.onnx.export: dynamic_axes names {name!r}, which is not an "
                                "input or output name of the model")  # fmt: skip
        dims = value.type.tensor_type.shape.dim
        for axis, dim_name in named.items():
            dims[int(axis)].ClearField("dim_value")
            dims[int(axis)].dim_param = str(dim_name)
    if f is not None:
        _write(f, proto.SerializeToString())
    return ONNXProgram(proto)


TrainingMode = enum.Enum("TrainingMode", ["EVAL", "PRESERVE", "TRAINING"])  # torch.onnx's

onnx = types.ModuleType("kiln.onnx", "torch.onnx's export, on kiln's ONNX exporter")
onnx.export, onnx.is_in_onnx_export, onnx.ONNXProgram = export, is_in_onnx_export, ONNXProgram
onnx.TrainingMode = TrainingMode
