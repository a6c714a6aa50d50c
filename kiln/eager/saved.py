"""The values a node saved for its vjp, as backward hands them over: a value that is gone
(freed by a backward without `retain_graph`) or stale (changed in place since it was saved)
becomes `Unavailable`. Ops on it give another Unavailable, typed by the op's rules, and only
reading its data raises: backward fails only when a needed cotangent depends on it, as in
PyTorch, where only the values a gradient formula uses are saved."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import SavedTensorError, node_message
from . import grad_mode
from .sparse import SparseTensor, on_values
from .tensor import Tensor, describe, make, meta_of

__all__ = ["SavedTensorError", "Unavailable", "array_args", "unpack"]


class Unavailable(Tensor):
    """A saved value backward may not read: ops on it give another Unavailable (typed by the
    op's rules), and reading its data raises the reason."""

    __slots__ = ("_shape", "_dtype", "_reason")

    def __init__(self, shape, dtype, device, reason: str):
        self._meta = None
        self._device = device
        self._shape, self._dtype, self._reason = tuple(shape), dt.as_dtype(dtype), reason

    @property
    def _data(self):
        raise SavedTensorError(self._reason)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))

    def __repr__(self):
        return f"<unavailable {describe(self)}>"


def _reason(message: str, node, i: int | None, meta, device) -> str:
    """The message in kiln's one format: the value (which input or the output of which op),
    the op and where it was created, and the value's type."""
    what = "the output" if i is None else f"input {i}"
    shape, dtype = meta
    value = f"{dt.short_name(dt.as_dtype(dtype))}{sh.format_shape(shape)} on {device}"
    message = f"{message}; it is {what} of {node.op.name}"
    return node_message(message, op=node.op.name, site=node.site, inputs=[value])


_new = object.__new__
_ndarray = np.ndarray


def unpack(node, create_graph: bool, plain: bool = False):
    """(output, inputs) for the vjp; Unavailable for values that are gone or stale. With
    `plain` (a primitive's vjp, without create_graph) the inputs come as plain copies: the same
    data without history or version counter, so that the vjp's ops take eager's shortest path
    (a custom vjp, as checkpoint's, may read their `requires_grad`)."""
    device = node.device
    if node.saved is None:

        def gone(i, meta):
            return Unavailable(*meta, device, _reason(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward",
                node, i, meta, device,
            ))  # fmt: skip

        metas = node.metas
        inputs = [gone(i, meta) for i, meta in enumerate(metas[:-1])]
        return gone(None, metas[-1]), inputs
    # NOTE: a constant the forward op kept as an array (a lifted Python scalar) comes as a
    # tensor, for the same reason. This runs once per tape entry in backward: plain CPU tensors
    # are made inline, as `make` makes them while no thread is in inference mode
    inputs = []
    data, vc, made = node.out, node.out_vc, node.out_version
    if plain and device == "cpu" and not grad_mode.inference_threads:
        for a, version in zip(node.saved, node.versions):
            if version is not None:
                meta = a._meta  # no Meta or no counter: at version 0 (see `version_of`)
                if version != (0 if meta is None or meta.vc is None else meta.vc.value):
                    i = len(inputs)
                    inputs.append(
                        _stale(node, i, a._vc, version, (node.shapes[i], node.dtypes[i]), device)
                    )
                    continue
                a = a._data
            elif type(a) is not _ndarray:
                inputs.append(a)
                continue
            t = _new(Tensor)
            t._data = a
            t._meta = None
            inputs.append(t)
        if vc is None or vc.value == made:
            out = _new(Tensor)
            out._data = data
            out._meta = None
            return out, inputs
    else:
        for a, version in zip(node.saved, node.versions):
            if version is None:
                inputs.append(a)  # a constant: as the op had it (a host array on a GPU too)
            elif version != (0 if a._meta is None or a._meta.vc is None else a._meta.vc.value):
                i = len(inputs)
                inputs.append(
                    _stale(node, i, a._vc, version, (node.shapes[i], node.dtypes[i]), device)
                )
            elif plain:
                inputs.append(make(a._data, device))
            else:
                inputs.append(values_of(a) if type(a) is SparseTensor else a)
    if vc is not None and vc.value != made:
        return _stale(node, None, vc, made, (node.shapes[-1], node.dtypes[-1]), device), inputs
    out = make(data, device)
    if create_graph:
        meta = meta_of(out)
        meta.vc, meta.grad_fn, meta.requires_grad = vc, node, True
    return out, inputs


def values_of(s: SparseTensor) -> Tensor:
    """A sparse tensor's values as a strided tensor whose history leads to it: what a vjp that
    records its own ops (create_graph) reads of a sparse input."""
    from ..graph.opdef import REGISTRY
    from ..ops.core import bind

    with on_values():
        return bind(REGISTRY["reshape"], s, shape=tuple(s._data.shape))


def array_args(node, ct):
    """(ct, output, *inputs) for a vjp on bare arrays (a CPU node, without create_graph): the
    saved data itself, when the cotangent (a plain tensor or an array) and every value have
    one dtype of `ARRAY_DTYPES` (integer inputs too, for an op tagged "vjp_arrays_index");
    None otherwise, or when a value is gone, stale or not an array (then `unpack` says which)."""
    ct = ct if type(ct) is _ndarray else ct._data if type(ct) is Tensor else None
    saved, dtypes = node.saved, node.dtypes
    if (
        ct is None
        or saved is None
        or ct.dtype is not (dtype := dtypes[-1])
        or dtype not in ARRAY_DTYPES
        or node.device != "cpu"
    ):
        return None
    if dtypes.count(dtype) != len(dtypes) and not (
        "vjp_arrays_index" in node.op.tags and all(d is dtype or d.kind in "iu" for d in dtypes)
    ):  # (an op tagged so takes integer indices beside its float values)
        return None
    vc = node.out_vc
    if vc is not None and vc.value != node.out_version:
        return None
    args = [ct, node.out]
    for a, version in zip(saved, node.versions):
        if version is None:  # a constant: the op's own array (a lifted Python scalar)
            if type(a) is not _ndarray:
                return None
            args.append(a)
            continue
        meta = a._meta  # no Meta or no counter: at version 0 (see `version_of`)
        if version != (0 if meta is None or meta.vc is None else meta.vc.value):
            return None
        args.append(a._data)
    return args


# float16 and bfloat16 are not among them: their ops with Python floats compute in float32
ARRAY_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _stale(node, i, vc, version, meta, device) -> Unavailable:
    changed = f"; it was changed by {vc.op} at {vc.site}" if vc.op else ""
    return Unavailable(*meta, device, _reason(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: it is at version {vc.value}; expected version {version} instead{changed}. "
        "Hint: change it out of place (x = x + 1), or clone() it before the change",
        node, i, meta, device,
    ))  # fmt: skip
