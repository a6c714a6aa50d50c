"""`grad_fn._saved_*`: what PyTorch's node of each name saved for its backward, under its
names (`_saved_self_sym_sizes` of a `SumBackward0`, `_saved_dim` of a `CatBackward0`, the
`_saved_mat1` of an `AddmmBackward0`), read off kiln's tape entry. Each entry holds for the
nodes of one kiln op only (a node of that name made by another op, a composite's, lacks
them). Every node also has `_saved_self`, `_saved_other` and `_saved_result` (`Node`)."""

from __future__ import annotations

import numpy as np

from .tensor import make

__all__ = ["saved_properties"]

_INT64_MAX = 2**63 - 1  # PyTorch's end of an open slice (`x[1:]`)


def _input(i: int):
    return lambda node: node._saved(i, True)


def _sizes(i: int):
    return lambda node: tuple(node.shapes[i])


def _attr(name: str, convert=lambda v: v):
    return lambda node: convert(node.attrs[name])


def _constant(node, i: int):
    """Input `i` as PyTorch keeps a Scalar argument: a Python number (None for an infinite
    clamp bound, as an omitted one)."""
    value = node.saved[i].item() if node.saved is not None else None
    return None if value in (float("inf"), float("-inf")) else value


def _if_edge(i: int, j: int):
    """Input `i` where input `j` requires grad (its gradient reads it), else None."""
    return lambda node: node._saved(i, True) if node.edges[j] is not None else None


def _numel(node) -> int:
    n = 1
    for d in node.shapes[0]:
        n *= d
    return n


def _moved(node) -> tuple:
    return tuple(i for i, p in enumerate(node.attrs["perm"]) if i != p)


def _index_item(node):
    """(dim, item) of the one index item of `x[...]` that is not `:`."""
    for dim, item in enumerate(node.attrs["spec"]):
        if item[0] == "int" or item[1:] != (None, None, None):
            return dim, item
    raise AttributeError("no index item")


def _slice_part(k: int, default):
    def get(node):
        dim, item = _index_item(node)
        value = item[k]
        if value is None:
            return default(node, dim) if callable(default) else default
        return value

    return get


def _select_part(k: int):
    def get(node):
        dim, item = _index_item(node)
        return dim if k == 0 else item[1]

    return get


def _log_softmax(node):
    """log_softmax of the logits the fused cross-entropy saved (what PyTorch's nodes keep)."""
    from ..nn import functional as F

    host = getattr(node, "host", None) or node
    return F.log_softmax(host._saved(0, True), 1)


def _bmm_sizes(node) -> tuple:
    """A batched matmul's UnsafeViewBackward0 (its own node): its product's shape; one of
    its operands' (virtual): the input's."""
    if getattr(node, "host", None) is not None:
        return tuple(node.shapes[0])
    from .batched import product_shape

    return product_shape(node)


def _one(node) -> int:
    return 1


def _strides(i: int):
    """The strides of input `i` where its gradient is needed (PyTorch's mm and addmm save
    them for it), else ()."""

    def get(node):
        if node.edges[i] is None:
            return ()
        return tuple(node._saved(i, True).stride())

    return get


def _indices(node) -> tuple:
    """PyTorch's index list of `x[idx]` (an index along `axis` of a gather): None for each
    dim before it."""
    return (None,) * node.attrs["axis"] + (node._saved(1, True),)


def _total_weight(node):
    """The summed weights of the fused cross-entropy's targets: their count."""
    return make(np.asarray(node.attrs["n"], node.dtypes[0]), node.device)


_SHAPE = {"_saved_self_sym_sizes": _sizes(0)}
_DIMS = {"_saved_dim": _attr("axes"), "_saved_keepdim": _attr("keepdims"), **_SHAPE}
_ALPHA = {"_saved_alpha": _one}

# name -> (the kiln ops whose nodes of that name hold them, {attribute: its value of a node})
_SAVED = {
    # (a batched matmul's virtual nodes: kiln/eager/batched.py; its own node's, of the bmm)
    "ViewBackward0": (("reshape", "batched_matmul"), _SHAPE),
    "ReshapeAliasBackward0": (("batched_matmul",), _SHAPE),
    "UnsafeViewBackward0": (("batched_matmul",), {"_saved_self_sym_sizes": _bmm_sizes}),
    "ExpandBackward0": (("broadcast_to", "batched_matmul"), _SHAPE),
    "SumBackward0": (("reduce_sum",), _SHAPE),
    "SumBackward1": (("reduce_sum",), _DIMS),
    "MeanBackward0": (("reduce_mean",), {"_saved_self_sym_numel": _numel, **_SHAPE}),
    "MeanBackward1": (("reduce_mean",), {"_saved_self_sym_numel": _numel, **_DIMS}),
    "CatBackward0": (("concat",), {"_saved_dim": _attr("axis")}),
    "CumsumBackward0": (("cumsum",), {"_saved_dim": _attr("axis")}),
    "GatherBackward0": (("take_along_axis",), {
        "_saved_dim": _attr("axis"), "_saved_index": _input(1), "_saved_self": _input(0),
        "_saved_sparse_grad": lambda node: False}),
    "IndexBackward0": (("gather",), {"_saved_indices": _indices, **_SHAPE}),
    "IndexSelectBackward0": (("gather",), {
        "_saved_dim": _attr("axis"), "_saved_index": _input(1), **_SHAPE}),
    "TransposeBackward0": (("transpose",), {
        "_saved_dim0": lambda node: _moved(node)[0], "_saved_dim1": lambda node: _moved(node)[1]}),
    "PermuteBackward0": (("transpose",), {"_saved_dims": _attr("perm")}),
    "SelectBackward0": (("index",), {
        "_saved_dim": _select_part(0), "_saved_index": _select_part(1), **_SHAPE}),
    "SliceBackward0": (("index",), {
        "_saved_dim": lambda node: _index_item(node)[0],
        "_saved_start": _slice_part(1, 0),
        "_saved_end": _slice_part(2, _INT64_MAX),
        "_saved_step": _slice_part(3, 1), **_SHAPE}),
    "PowBackward0": (("pow", "square"), {
        "_saved_self": _input(0),
        "_saved_exponent": lambda node: 2 if node.op.name == "square" else _constant(node, 1)}),
    "PowBackward1": (("pow",), {
        "_saved_self": _input(0), "_saved_exponent": _input(1),
        "_saved_result": lambda node: node._saved(None)}),
    "PowBackward2": (("pow",), {
        "_saved_self": lambda node: _constant(node, 0), "_saved_exponent": _input(1),
        "_saved_result": lambda node: node._saved(None)}),
    "ClampBackward1": (("clip",), {
        "_saved_self": _input(0), "_saved_min": lambda node: _constant(node, 1),
        "_saved_max": lambda node: _constant(node, 2)}),
    # PyTorch's mul and div save an input where the other's gradient reads it
    "MulBackward0": (("mul",), {"_saved_self": _if_edge(0, 1), "_saved_other": _if_edge(1, 0)}),
    "DivBackward0": (("div",), {"_saved_self": _if_edge(0, 1), "_saved_other": _input(1)}),
    "AddBackward0": (("add",), _ALPHA),
    "SubBackward0": (("sub",), _ALPHA),
    "RsubBackward1": (("sub",), _ALPHA),
    "WhereBackward0": (("where",), {"_saved_condition": _input(0)}),
    "MaskedFillBackward0": (("where",), {"_saved_mask": _input(0)}),
    "MmBackward0": (("matmul",), {
        "_saved_self": _if_edge(0, 1), "_saved_mat2": _if_edge(1, 0),
        "_saved_self_sym_sizes": _sizes(0), "_saved_mat2_sym_sizes": _sizes(1),
        "_saved_self_sym_strides": _strides(0), "_saved_mat2_sym_strides": _strides(1)}),
    "MvBackward0": (("matmul",), {"_saved_self": _if_edge(0, 1), "_saved_vec": _if_edge(1, 0)}),
    "DotBackward0": (("matmul",), {
        "_saved_self": _if_edge(0, 1), "_saved_tensor": _if_edge(1, 0)}),
    "BmmBackward0": (("matmul",), {"_saved_self": _if_edge(0, 1), "_saved_mat2": _if_edge(1, 0)}),
    # the fused F.linear, addmm(bias, input, weight.t()), and cross_entropy (kiln/eager/fused.py)
    "AddmmBackward0": (("linear",), {
        "_saved_mat1": _if_edge(1, 2),
        "_saved_mat2": lambda node: node._saved(2, True).t() if node.edges[1] is not None else None,
        "_saved_alpha": _one, "_saved_beta": _one, "_saved_mat1_sym_sizes": _sizes(1),
        "_saved_mat2_sym_sizes": lambda node: tuple(node.shapes[2][::-1]),
        "_saved_mat1_sym_strides": _strides(1),
        "_saved_mat2_sym_strides": lambda node: _strides(2)(node)[::-1]}),
    "NllLossBackward0": (("cross_entropy",), {
        "_saved_self": _log_softmax, "_saved_target": _input(1),
        "_saved_weight": lambda node: None, "_saved_reduction": _one,
        "_saved_ignore_index": lambda node: -100, "_saved_total_weight": _total_weight}),
    "LogSoftmaxBackward0": (("cross_entropy",), {
        "_saved_dim": _one, "_saved_result": _log_softmax}),
}  # fmt: skip


# what every node has (`Node`), for a node of a name whose entry is another op's
_EVERY_NODE = {"_saved_self": lambda node: node._saved(0),
               "_saved_other": lambda node: node._saved(1),
               "_saved_result": lambda node: node._saved(None)}  # fmt: skip


def saved_properties(name: str) -> dict:
    """{attribute: property} of the nodes named `name` (see `_SAVED`)."""
    ops, attrs = _SAVED.get(name, ((), {}))

    def prop(attr, get):
        def read(node):
            if node.op.name not in ops:  # a node of this name made by another op
                if attr in _EVERY_NODE and getattr(node, "host", None) is None:
                    return _EVERY_NODE[attr](node)
                raise AttributeError(f"'{name}' object has no attribute '{attr}'")
            return get(node)

        return property(read)

    return {attr: prop(attr, get) for attr, get in attrs.items()}
