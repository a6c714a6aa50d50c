"""`import_onnx`: an ONNX model as a kiln Graph with `.inputs` and `.outputs`.

Graph inputs become placeholders (a `dim_param` becomes a named dim), initializers become
Variables, and each ONNX node becomes kiln ops through its row in `onnx_import_rules.RULES`.
kiln's attrs are static (shapes, axes, pads), so the ONNX values that give them must be known
when importing: initializers, `Constant`s, and shape arithmetic on them and on `Shape` of any
value (computed here, with symbolic dims as `Dim`s). Such known values are `Known` arrays;
they become graph constants only where an op takes them as data.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import GraphError, KilnError
from ..graph.core import Graph, Symbol, Variable
from ..graph.opdef import REGISTRY, ArrayValue
from ..ops.core import bind_graph
from ..ops.multi import element_types
from . import onnx_kiln_ops
from .onnx_export import _onnx


class Known:
    """An ONNX value known while importing: an array (of ints, or objects holding `Dim`s for
    shapes with symbolic dims). `initializer` names the ONNX initializer it came from."""

    __slots__ = ("array", "initializer")

    def __init__(self, array, initializer=None):
        self.array = np.asarray(array)
        self.initializer = initializer


class Importer:
    """The kiln graph being built and the ONNX values seen so far (Symbols or `Known`s)."""

    def __init__(self, graph: Graph, opset: int):
        self.graph, self.opset = graph, opset
        self.values: dict = {}
        self.variables: dict[str, Variable] = {}
        self.node = None  # the ONNX node being imported
        self.kiln_ops = True  # restore the kiln ops kiln's exporter tagged

    def symbol(self, value) -> Symbol:
        """`value` as a graph value: a Known becomes a Variable (an initializer) or a constant."""
        if isinstance(value, Symbol):
            return value
        array = value.array
        if array.dtype == object:
            raise self.error("needs a shape value with symbolic dims as data, which kiln's "
                             "graphs cannot compute")  # fmt: skip
        if value.initializer is not None:
            var = self.variables.get(value.initializer)
            if var is None:
                var = Variable(array, name=_name(value.initializer), graph=self.graph)
                self.variables[value.initializer] = var
            return var
        node = self.graph.add_node(REGISTRY["constant"], (), {"value": ArrayValue(array)},
                                   "constant", shape=array.shape, dtype=array.dtype)  # fmt: skip
        return node.out

    def known(self, value, what: str) -> np.ndarray:
        """The array of a value that must be known when importing (a shape, axes, pads)."""
        if isinstance(value, Known):
            return value.array
        raise self.error(f"needs its {what} ({value.name!r}) as a constant (an initializer, a "
                         "Constant, shape arithmetic or import_onnx's constants=): kiln's graphs "
                         "have static shapes and attrs")  # fmt: skip

    def apply(self, op: str, *args, **attrs) -> Symbol:
        return bind_graph(REGISTRY[op], [self.symbol(a) for a in args], attrs, graph=self.graph)

    def scalar(self, value, dtype) -> Symbol:
        return self.symbol(Known(np.asarray(value, dtype)))

    def error(self, message: str) -> GraphError:
        node = self.node
        where = f"ONNX node '{node.name}' ({node.op_type})" if node is not None else "ONNX model"
        return GraphError(f"import_onnx: {where} {message}")


def norm_axis(axis, ndim) -> int:
    """An ONNX axis (negative counts from the end) as a non-negative one."""
    return int(axis) + ndim if int(axis) < 0 else int(axis)


def axes_of(imp, inputs, attrs, k=1, ndim=None):
    """Axes from the input `k` (newer opsets) or the `axes` attr; None when neither is given."""
    if len(inputs) > k and inputs[k] is not None:
        axes = [int(a) for a in imp.known(inputs[k], "axes").reshape(-1)]
    elif "axes" in attrs:
        axes = [int(a) for a in attrs["axes"]]
    else:
        return None
    return sorted(norm_axis(a, ndim) for a in axes) if ndim is not None else axes


def _name(text: str) -> str:
    """A kiln node name for an ONNX value name."""
    return re.sub(r"[^A-Za-z0-9_./\-]+", "_", text).strip("_") or "value"


def _site(node) -> str:
    """The kiln site a node came from (kiln's exporter writes it into the doc string), else the
    ONNX node's own name."""
    found = re.search(r"created at (\S+)$", node.doc_string or "")
    if found and found.group(1) != "None":
        return found.group(1)
    return f"onnx:{node.name or node.op_type}"


def _load(model_or_path):
    onnx = _onnx()
    if isinstance(model_or_path, onnx.ModelProto):
        return onnx, model_or_path
    try:
        return onnx, onnx.load(model_or_path)
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds for a bad file
        raise GraphError(
            f"import_onnx: cannot read an ONNX model from {model_or_path!r}: {e}"
        ) from e


def _placeholder(graph, value_info, onnx):
    from ..frontend.core import placeholder

    tensor = value_info.type.tensor_type
    dims = []
    for d in tensor.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.dim_param.isidentifier():
            dims.append(d.dim_param)
        else:
            dims.append(None)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    with graph.as_default():
        return placeholder(dtype, tuple(dims), _name(value_info.name))


def import_onnx(model_or_path, constants=None, kiln_ops: bool = True) -> Graph:
    """A kiln Graph computing an ONNX model: `.inputs` (placeholders, in the model's order) and
    `.outputs`; run it with `kn.function(g.inputs, g.outputs)`. Initializers become Variables.

    `constants` maps graph input names to values fixed at import: an input that gives a shape,
    axes or pads must be known then (kiln's shapes and attrs are static). An ONNX op kiln has no
    rule for, or such a value only known at run time, raises GraphError naming the ONNX node.
    `kiln.interchange.SUPPORTED` lists the ONNX ops it imports.

    A model kiln exported carries each kiln node's op and attrs as metadata: with `kiln_ops`
    (the default) its nodes come back as those kiln ops (identical values and gradients, where
    ONNX spells an op as a composition); `kiln_ops=False` imports the ONNX nodes themselves.
    """
    onnx, model = _load(model_or_path)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    graph = Graph()
    imp = Importer(graph, opset)
    numpy_helper = onnx.numpy_helper
    for init in model.graph.initializer:
        imp.values[init.name] = Known(numpy_helper.to_array(init), init.name)
    for name, value in (constants or {}).items():
        imp.values[name] = Known(np.asarray(value))
    for vi in [*model.graph.input, *model.graph.output]:
        if not vi.type.HasField("tensor_type"):
            raise imp.error(f"has value {vi.name!r} of a non-tensor type (sequence, map or "
                            "optional), which kiln's graphs do not have")  # fmt: skip
    fixed = {i.name for i in model.graph.initializer} | set(constants or ())
    for vi in model.graph.input:
        if vi.name not in fixed:
            imp.values[vi.name] = _placeholder(graph, vi, onnx)
    graph.inputs = [imp.values[vi.name] for vi in model.graph.input if vi.name not in fixed]
    imp.kiln_ops = kiln_ops
    import_nodes(imp, model.graph)
    graph.outputs = [imp.symbol(imp.values[vi.name]) for vi in model.graph.output]
    from .onnx_import_control import drop_unread_gets

    drop_unread_gets(graph)
    return graph


def import_nodes(imp, graph_proto) -> None:
    """Imports the nodes of an ONNX graph (the model's, or a subgraph's) into `imp.graph`,
    binding their outputs' names in `imp.values`."""
    from .onnx_import_fold import FOLD
    from .onnx_import_rules import RULES

    onnx = _onnx()
    restorable = onnx_kiln_ops.groups(graph_proto) if imp.kiln_ops else {}
    nodes, k = list(graph_proto.node), 0
    while k < len(nodes):
        node = imp.node = nodes[k]
        if k in restorable:  # a kiln op kiln exported: the op itself, not its ONNX spelling
            last = _restore(imp, nodes, restorable[k])
            if last is not None:
                k = last + 1
                continue
        k += 1
        if node.domain not in ("", "ai.onnx"):
            raise imp.error(f"is in domain {node.domain!r}; kiln imports the default domain only")
        rule = RULES.get(node.op_type)
        if rule is None:
            raise imp.error("has no kiln form (kiln.interchange.SUPPORTED lists the ONNX ops "
                            "kiln imports)")  # fmt: skip
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        inputs = [imp.values[n] if n else None for n in node.input]
        fold = FOLD.get(node.op_type)
        with imp.graph.site(_site(node)):
            results = None
            if fold is not None and all(isinstance(v, Known) or v is None for v in inputs):
                results = _fold(fold, inputs, attrs, imp)
            if results is None:
                results = rule(imp, inputs, attrs)
        if not isinstance(results, (list, tuple)):
            results = [results]
        extra = [n for n in node.output[len(results) :] if n]
        if extra:
            raise imp.error(f"output {extra[0]!r} has no kiln form")
        for name, value in zip(node.output, results):
            if name:
                imp.values[name] = value
    imp.node = None


def _restore(imp, nodes, group):
    """Builds a tagged group's kiln op; returns the index of its last node, or None (then its
    ONNX nodes import through the rules)."""
    from .onnx_import_control import RESTORE  # region ops: rebuilt with their subgraphs
    from .onnx_rules import RULES as EXPORTED  # the ops kiln writes: no source, no random op

    last, op, names, attrs, elements = group
    if op not in EXPORTED or not all(n in imp.values for n in names):
        return None
    produced = {o for n in nodes[: last + 1] for o in n.output}
    if elements is not None and not all(e in produced for e in elements if e):
        return None
    if op in RESTORE:
        try:
            with imp.graph.site(_site(nodes[last])):
                values = RESTORE[op](imp, nodes[last], names, attrs)
        except (KilnError, TypeError, ValueError, KeyError):
            return None
        for out, value in zip(nodes[last].output, values, strict=True):
            imp.values[out] = value
        return last
    found = re.search(r"node '([^']*)'", nodes[last].doc_string)
    name = _name(found.group(1)) if found else None  # the kiln node's own name
    try:
        with imp.graph.site(_site(nodes[last])):
            args = [imp.symbol(imp.values[n]) for n in names]
            value = bind_graph(REGISTRY[op], args, attrs, name=name, graph=imp.graph)
        if elements is not None:  # a multi-result op: the elements that get nodes read
            types = (fused_results(args, attrs) if op == "fused" else
                     element_types(op, args[0].shape, args[0].dtype, **attrs))  # fmt: skip
            gets = [bind_graph(REGISTRY["get"], [value], {"index": k, "shape": s, "dtype": d},
                               graph=imp.graph) if e else None
                    for k, ((s, d), e) in enumerate(zip(types, elements))]  # fmt: skip
    except (KilnError, TypeError, ValueError, KeyError):
        return None
    if elements is not None:
        imp.values.update({e: g for e, g in zip(elements, gets) if e})
        return last
    imp.values[nodes[last].output[0]] = value
    return last


def fused_results(args, attrs) -> list:
    """(shape, dtype) of each result of a fused node with several (kiln/ops/fused.py)."""
    from ..ops.fused import compiled, result_shapes

    prog = compiled(attrs["program"], attrs["outputs"])
    dtypes = prog.signature(tuple(a.dtype for a in args)).out_dtypes
    return list(zip(result_shapes(prog, [a.shape for a in args]), dtypes))


def _fold(fold, inputs, attrs, imp):
    """Computes a node on known values now (shape arithmetic), or None to build it instead."""
    arrays = [v.array if v is not None else None for v in inputs]
    symbolic = any(a is not None and a.dtype == object for a in arrays)
    if symbolic and not getattr(fold, "dims_ok", False):
        return None  # comparisons of a Dim with an int are unknown until run time
    small = all(a is None or a.dtype == object or (a.dtype.kind in "iub" and a.size <= 64)
                for a in arrays)  # fmt: skip
    if not small:
        return None
    try:
        value = fold(imp, arrays, attrs)
    except TypeError:  # arithmetic kiln's Dims do not have (a sum of dims)
        return None
    if isinstance(value, list):  # several outputs (Split)
        return [Known(v) for v in value]
    return None if value is None else Known(value)
