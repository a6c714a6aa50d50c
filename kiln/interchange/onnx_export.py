"""`export_onnx`: a kiln program as an ONNX model.

What is exported is the user-level program: the source graph pruned to the outputs (kiln's
`extract`, before any optimizing pass), so no `fused` node reaches the file and every node keeps
its user name and site. Placeholders become graph inputs, Variables and constants become
initializers, named dims stay symbolic (`dim_param`). Each kiln node becomes one or a few ONNX
nodes, written by its rule in `onnx_rules.RULES`; each ONNX node's `doc_string` names the kiln
op, node and site it came from.
"""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..checkpoint import write_atomic
from ..errors import ArgumentTypeError, GraphError, node_error
from ..graph.core import Graph, Symbol
from ..passes.program import extract
from ..runtime.function import Function
from ..tracing import CompiledFunction, Traced, trace
from . import onnx_kiln_ops as kiln_ops

# The default and the oldest opset kiln writes: Reduce* with axes as an input, Bitwise*.
DEFAULT_OPSET = 18


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - the extra is installed in the test venv
        raise ImportError("ONNX export needs the `onnx` package: pip install 'kiln[onnx]'") from e
    return onnx


def export_onnx(obj, path, opset: int | None = None, dynamic_dims: bool = True, args=None):
    """Writes the program of `obj` to `path` as an ONNX model (atomically) and returns the model.

    `obj` is a `kn.Function`, a traced function (`kn.trace`'s result, or a `kn.compile` function
    after a call: the signature it traced last), a Graph with `.inputs` and `.outputs`, or a
    Module (or any function) with example inputs `args` (a tuple), traced with them.
    Updates are not exported (ONNX models are pure functions). With `dynamic_dims`, named dims
    are written as `dim_param`s; without, symbolic dims are written as unknown. `cond`,
    `while_loop` and `scan` become If, Loop and Scan with their bodies as subgraphs. An op that
    ONNX cannot express raises GraphError naming the op, the node and its site.

    >>> import kiln as kn, numpy as np, tempfile, os
    >>> kn.manual_seed(0)
    >>> net = kn.nn.Sequential(kn.nn.Linear(4, 3), kn.nn.ReLU())
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "net.onnx")
    ...     model = export_onnx(net, path, args=(np.ones((2, 4), np.float32),))
    >>> [n.op_type for n in model.graph.node], [i.name for i in model.graph.initializer]
    (['Transpose', 'MatMul', 'Add', 'Relu'], ['0/weight', '0/bias'])
    """
    model = to_onnx(obj, opset, dynamic_dims, args)
    write_atomic(path, model.SerializeToString())
    return model


def program_of(obj) -> Graph:
    """The unoptimized program graph of what `export_onnx` takes."""
    if isinstance(obj, CompiledFunction):  # kn.compile: the signature it traced last
        if obj.last is None:
            raise GraphError(
                "export_onnx: this kn.compile function has not run yet: call it once (it traces "
                "on its first call), or export kn.trace(fn, *example_args)"
            )
        obj = obj.last
    if isinstance(obj, Traced):  # its outputs: not the values its gradient program reads
        return extract(list(obj.outputs), list(obj.inputs), {})
    if isinstance(getattr(obj, "function", None), Function):
        obj = obj.function
    if isinstance(obj, Function):
        return extract(obj.outputs, obj.inputs, {})
    if isinstance(obj, Graph):
        if not obj.outputs:
            raise GraphError("export_onnx: the graph has no .outputs to export")
        return extract(list(obj.outputs), list(obj.inputs or obj.placeholders), {})
    if callable(obj):
        raise ArgumentTypeError(
            f"export_onnx() needs example inputs to trace a {type(obj).__name__}: "
            "export_onnx(model, path, args=(x,))"
        )
    raise ArgumentTypeError(
        "export_onnx() takes a kn.Function, a traced function, a Graph with .inputs and "
        f".outputs, or a Module with args=; got {type(obj).__name__}"
    )


def to_onnx(obj, opset: int | None = None, dynamic_dims: bool = True, args=None):
    """The ONNX ModelProto of `obj` (see `export_onnx`), checked by `onnx.checker`."""
    onnx = _onnx()
    if args is not None:
        obj = trace(obj, *(args if isinstance(args, tuple) else (args,)))

    opset = DEFAULT_OPSET if opset is None else int(opset)
    newest = onnx.defs.onnx_opset_version()
    if not DEFAULT_OPSET <= opset <= newest:
        raise GraphError(
            f"export_onnx: opset {opset} is not one kiln writes: {DEFAULT_OPSET} to {newest} "
            f"(the newest the installed onnx {onnx.__version__} knows)"
        )
    program = program_of(obj)
    ex = Exporter(onnx, opset, dynamic_dims)
    inputs = [ex.value_info(s, ex.bind(s, ex.unique(s.name))) for s in program.inputs]
    ex.export_nodes(program.nodes)
    outputs = []
    for k, s in enumerate(program.outputs):
        name = ex.names[id(s)]
        if name in outputs or name in ex.input_names or name in ex.initializer_names:
            name = ex.emit("Identity", [name], ex.unique(f"output_{k}"))  # ONNX: distinct names
        outputs.append(name)
    helper = onnx.helper
    graph = helper.make_graph(
        ex.nodes,
        "kiln",
        inputs,
        [ex.value_info(s, n) for s, n in zip(program.outputs, outputs)],
        ex.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln",
        ir_version=min(onnx.IR_VERSION, 10),
    )  # fmt: skip
    helper.set_model_props(model, {"kiln.exported": "user-level program (unoptimized)"})
    onnx.checker.check_model(model, full_check=True)
    return model


class Exporter:
    """The ONNX graph being written: nodes, initializers, value names, and where each symbolic
    dim can be read at run time (`Shape` of a value that has it)."""

    def __init__(self, onnx, opset, dynamic_dims):
        self.onnx, self.opset, self.dynamic_dims = onnx, opset, dynamic_dims
        self.nodes, self.initializers = [], []
        self.names: dict[int, str] = {}  # id(Symbol) -> ONNX value name
        self.taken: set[str] = set()
        self.input_names: set[str] = set()
        self.initializer_names: set[str] = set()
        self.dim_sources: dict = {}  # dim atom -> (ONNX value name, axis)
        self.node = None  # the kiln node being exported

    def export_nodes(self, nodes) -> None:
        """Writes kiln `nodes` (a program's, or a region body's) as ONNX nodes; their operands
        must be bound. A node of several outputs (a region op) binds the list of its ONNX
        outputs, which `get` nodes read."""
        from .onnx_rules import RULES

        reads: dict = {}  # id(tuple) -> the indices of its elements that `get` nodes read
        for node in nodes:
            if node.op.name == "get":
                reads.setdefault(id(node.inputs[0]), set()).add(node.attrs["index"])
        for node in nodes:
            if node.op.name == "placeholder":
                continue
            if node.op.name in ("variable", "constant"):
                value = (
                    node.ref.numpy() if node.op.name == "variable" else node.attrs["value"].array
                )
                self.bind(node.out, self.initializer(value, node.name))
                continue
            if node.op.name == "get" and isinstance(self.names.get(id(node.inputs[0])), list):
                self.bind(node.out, self.names[id(node.inputs[0])][node.attrs["index"]])
                continue
            if node.out.dtype.kind == "c" or any(i.dtype.kind == "c" for i in node.inputs):
                raise node_error(
                    GraphError, f"op {node.op.name} on a complex value has no ONNX form (ONNX's "
                    "operators take no complex tensors)", op=node.op.name, name=node.name,
                    site=node.site, inputs=node.inputs,
                )  # fmt: skip
            rule = RULES.get(node.op.name)
            if rule is None:
                raise node_error(
                    GraphError, f"op {node.op.name} has no ONNX form (kiln's ONNX export covers "
                    "kiln.interchange.onnx_rules.RULES)", op=node.op.name, name=node.name,
                    site=node.site, inputs=node.inputs,
                )  # fmt: skip
            self.node = node
            xs = [self.names[id(i)] for i in node.inputs]
            out = self.unique(node.name)
            first = len(self.nodes)
            result = rule(self, node, xs, out)
            if isinstance(result, list):  # several outputs: `get` nodes read them
                read = reads.get(id(node.out), ())
                kiln_ops.tag(self, node, xs, [n if k in read else "" for k, n in enumerate(result)],
                             first)  # fmt: skip
                self.names[id(node.out)] = result
                self.node = None
                continue
            if result != out:
                self.emit("Identity", [result], out)
            kiln_ops.tag(self, node, xs, out, first)
            self.bind(node.out, out)
            self.node = None

    def child(self) -> Exporter:
        """An exporter for a subgraph (a region's body) of this graph, with initializers of its
        own (its constants): names stay unique across the model, and dims are read from values
        of the graphs around too."""
        sub = Exporter(self.onnx, self.opset, self.dynamic_dims)
        sub.taken = self.taken
        sub.dim_sources = dict(self.dim_sources)
        sub.names = dict(self.names)  # values of the graphs around, read by name
        return sub

    def unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def bind(self, sym: Symbol, name: str) -> str:
        self.names[id(sym)] = name
        for axis, d in enumerate(sym.shape):
            if isinstance(d, sh.Dim) and d.is_atom and d.atoms[0] not in self.dim_sources:
                self.dim_sources[d.atoms[0]] = (name, axis)
        if sym.node.op.name == "placeholder":
            self.input_names.add(name)
        return name

    def emit(self, op_type: str, inputs, out=None, n_outputs: int = 1, **attrs):
        """Adds one ONNX node computing `out` (a fresh name when None); returns `out`, or the
        list of its `n_outputs` output names when it has several."""
        node = self.node
        base = node.name if node is not None else op_type.lower()
        outs = [out or self.unique(f"{base}/{op_type}")]
        outs += [self.unique(f"{base}/{op_type}") for _ in range(n_outputs - 1)]
        doc = f"kiln op {node.op.name}, node '{node.name}', created at {node.site}" if node else ""
        self.nodes.append(
            self.onnx.helper.make_node(
                op_type, list(inputs), outs, name=self.unique(f"{base}:{op_type}"),
                doc_string=doc, **attrs,
            )
        )  # fmt: skip
        return outs[0] if n_outputs == 1 else outs

    def initializer(self, value, base: str) -> str:
        name = self.unique(base)
        array = np.asarray(value)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        self.initializer_names.add(name)
        return name

    def const(self, value, dtype) -> str:
        """An initializer holding `value` as `dtype` (a 0-d scalar for a Python number)."""
        base = self.node.name if self.node is not None else "const"
        return self.initializer(np.asarray(value, dtype=dtype), f"{base}/const")

    def ints(self, values) -> str:
        """A 1-d int64 initializer (axes, pads, reps)."""
        return self.const(np.asarray(list(values), np.int64).reshape(-1), np.int64)

    def dim(self, d) -> str:
        """A 1-element int64 tensor holding dim `d` at run time."""
        if isinstance(d, int):
            return self.ints([d])
        parts = []
        for atom in d.atoms:
            source = self.dim_sources.get(atom)
            if source is None:  # pragma: no cover - every atom appears on some value first
                node = self.node
                raise node_error(GraphError, f"dim {d} is not read from any value",
                                 op=node.op.name, name=node.name, site=node.site)  # fmt: skip
            name, axis = source
            parts.append(self.emit("Shape", [name], start=axis, end=axis + 1))
        if d.coeff != 1:
            parts.append(self.ints([d.coeff]))
        value = parts[0]
        for p in parts[1:]:
            value = self.emit("Mul", [value, p])
        return value

    def shape(self, shape) -> str:
        """A 1-d int64 tensor holding `shape` at run time (an initializer when static)."""
        if sh.is_static(shape):
            return self.ints(shape)
        return self.emit("Concat", [self.dim(d) for d in shape], axis=0)

    def cast(self, name: str, have, want) -> str:
        if np.dtype(have) == np.dtype(want):
            return name
        return self.emit("Cast", [name], to=self.elem_type(want))

    def elem_type(self, dtype) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def value_info(self, sym: Symbol, name: str):
        dims = []
        for d in sym.shape:
            if isinstance(d, int):
                dims.append(d)
            elif self.dynamic_dims and all(isinstance(a, str) for a in d.atoms):
                dims.append(str(d))
            else:
                dims.append(None)
        return self.onnx.helper.make_tensor_value_info(name, self.elem_type(sym.dtype), dims)
