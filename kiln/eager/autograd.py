"""Tape autograd with PyTorch's semantics: `backward`, `grad`, and the tape entry `Node`.

Each op on tensors that require grad (with grad mode on) records one `Node`: the op, its
inputs and output as the op's vjp needs them (with their versions), and where each input's
cotangent goes. Backward runs nodes in reverse creation order (a topological order); one
place sums a cotangent back to its input's shape (`sum_to_shape`, shared with graph mode)
and one place accumulates it. Saved values that are gone or stale: see `saved`. On the CPU
without create_graph, the vjps of ops tagged "vjp_arrays" run on the bare arrays (the saved
data, cotangents that stay arrays between nodes): the same values as on tensors, without a
Tensor around each.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import weakref

import numpy as np

from .. import dtypes as dt
from ..errors import AutogradError, MissingDerivativeError, node_error
from ..graph.core import user_code_site, user_site
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..passes.differentiate import real_part_for, sum_to_shape
from ..runtime.backend import get_backend
from . import grad_mode, saved_hooks
from .grad_mode import is_anomaly_enabled, set_grad_enabled
from .hooks import (
    _HOOKS,
    RemovableHandle,  # noqa: F401 — kn.autograd.RemovableHandle, as before
    _apply_hooks,
    _hooks_of,
    apply_node_hooks,
    register_hook,
    register_post_accumulate_grad_hook,
)
from .nodes import (  # noqa: F401 — importable from here, as before
    FACE_HOOKS,
    AccumulateGrad,
    Node,
    _composite,
    backward_name,
    face_edges,
    hooked_accumulator,
    listed_inputs,
    name_history,
    node_class,
)
from .out import _dense
from .saved import SavedTensorError, Unavailable, array_args, unpack
from .sparse import SparseTensor, StridedGrad, add_grads, grad_of
from .sparse_compressed import SparseCompressedTensor
from .sparse_compressed import accumulate as accumulate_compressed
from .tensor import Meta, Tensor, describe, make, version_of

__all__ = ["Node", "backward", "grad", "register_hook", "register_post_accumulate_grad_hook"]

_seq = itertools.count()
_new = object.__new__

_STOP = REGISTRY["stop_gradient"]
# whether a forward-AD level is entered (kiln/eager/forward_ad.py sets it): backward then runs
# its vjps on the saved tensors themselves (their tangents: forward-over-reverse)
dual = False
_BFLOAT16 = dt.bfloat16
_CPU = "cpu"
_ndarray = np.ndarray
_add = np.add


def record(op, args, attrs, out: Tensor, skip: int = 2) -> None:
    """Records the tape entry of `out = op(*args)`; `out` then requires grad. `skip`: the
    frames above this one that are kiln's for sure (where `user_site` starts looking: each
    frame it looks at costs)."""
    data = out._data
    dtype = data.dtype
    if op is _STOP or (dtype.kind not in "fc" and dtype != _BFLOAT16):
        return
    # NOTE: every op on the tape passes here (the eager forward pass's per-op cost with grad):
    # ops of one or two inputs (nearly all) build their tuples directly, others by lists
    n = len(args)
    if n == 2:
        a, b = args
        # `_input` of each, inline
        if type(a) is Tensor and (meta := a._meta) is not None and meta.base is None:
            vc = meta.vc
            if meta.inference:
                _inference_error(op, 0, a)
            e0 = (meta.grad_fn or a) if meta.requires_grad else None
            v0, x0 = 0 if vc is None else vc.value, a._data
        else:
            e0, v0, x0 = _input(op, 0, a)
        if type(b) is Tensor and (meta := b._meta) is not None and meta.base is None:
            vc = meta.vc
            if meta.inference:
                _inference_error(op, 1, b)
            e1 = (meta.grad_fn or b) if meta.requires_grad else None
            v1, x1 = 0 if vc is None else vc.value, b._data
        elif type(b) is _ndarray:  # a constant (a lifted Python scalar)
            e1, v1, x1 = None, None, b
        else:
            e1, v1, x1 = _input(op, 1, b)
        edges = (e0, e1)
        versions = _ZEROS[2] if v0 == 0 and v1 == 0 else (v0, v1)
        shapes, dtypes = (x0.shape, x1.shape, data.shape), (x0.dtype, x1.dtype, dtype)
    elif n == 1:
        a = args[0]
        if type(a) is Tensor and (meta := a._meta) is not None and meta.base is None:
            vc = meta.vc
            if meta.inference:
                _inference_error(op, 0, a)
            e0 = (meta.grad_fn or a) if meta.requires_grad else None
            v0, x0 = 0 if vc is None else vc.value, a._data
        else:
            e0, v0, x0 = _input(op, 0, a)
        edges, versions = (e0,), _ZEROS[1] if v0 == 0 else (v0,)
        shapes, dtypes = (x0.shape, data.shape), (x0.dtype, dtype)
    else:
        edges, versions, shapes, dtypes = [], [], [], []
        for i, a in enumerate(args):
            e, v, x = _input(op, i, a)
            edges.append(e)
            versions.append(v)
            shapes.append(x.shape)
            dtypes.append(x.dtype)
        shapes.append(data.shape)
        dtypes.append(dtype)
        edges, versions, shapes, dtypes = (
            tuple(edges),
            tuple(versions),
            tuple(shapes),
            tuple(dtypes),
        )
        if versions in _ZEROS:
            versions = _ZEROS[n]  # every version 0 (the common case): one shared tuple
    meta = out._meta
    if meta is None:
        meta = out._meta = _new(Meta)  # as `Meta()`, without the call of __init__
        meta.device = _CPU
        meta.inference = False
        meta.grad = meta.vc = meta.base = meta.base_fn = None
        vc = None  # made when needed (`version_of` gives it to this node too)
    else:
        vc = meta.vc
        if vc is None and meta.base is not None:
            vc = version_of(out)  # a view's is its base's
    node = _new(Node)
    node.op = op
    node.attrs = attrs
    node.saved = args if type(args) is tuple else tuple(args)
    node.versions = versions
    node.edges = edges
    node.shapes = shapes
    node.dtypes = dtypes
    node.out = data
    node.out_vc = vc
    node.out_version = 0 if vc is None else vc.value
    node.device = meta.device
    node.seq = next(_seq)
    node.where = user_code_site(skip)
    node.retained = None
    meta.grad_fn = node
    meta.requires_grad = True
    if _SAVED_HOOKS:  # torch.autograd.graph.saved_tensors_hooks
        saved_hooks.pack(node, out)


_SAVED_HOOKS = saved_hooks.STACK
_PACKED = saved_hooks.PACKED
_PACKED_DATA = _PACKED.data  # its dict: tested per backward node, at a dict's cost
_ZEROS = ((), (0,), (0, 0), (0, 0, 0))
_SPARSE_GRADS = (SparseTensor, StridedGrad)  # cotangents that sum by `add_grads`


def _input(op, i: int, a) -> tuple:
    """(edge, version, array) of input `i` of an op being recorded."""
    if type(a) is Tensor or isinstance(a, Tensor):
        meta = a._meta
        if meta is None:  # a plain tensor: at version 0 (see `version_of`)
            return None, 0, a._data
        vc = meta.vc
        if vc is None and meta.base is not None:
            vc = version_of(a)  # a view's is its base's
        if meta.inference:
            _inference_error(op, i, a)
        edge = (meta.grad_fn or a) if meta.requires_grad else None
        return edge, 0 if vc is None else vc.value, a._data
    return None, None, a if type(a) is _ndarray else np.asarray(a)  # a constant


def _inference_error(op, i: int, a: Tensor):
    raise node_error(
        AutogradError,
        "Inference tensors cannot be saved for backward. To work around you can "
        "make a clone to get a normal tensor and use it in autograd (input "
        f"{i} of {op.name} was made in inference_mode)",
        op=op.name, site=user_site(), inputs=[describe(a)],
    )  # fmt: skip


def retain(t: Tensor) -> None:
    """`t.retain_grad()`: the next backward also fills `.grad` of this non-leaf tensor."""
    if t.grad_fn is not None:
        t.grad_fn.retained = weakref.ref(t)
    elif not t._requires_grad:
        raise node_error(AutogradError,
                         "can't retain_grad on Tensor that has requires_grad=False",
                         op="retain_grad", site=user_site(), called=True,
                         inputs=[describe(t)])  # fmt: skip


# -- hooks (kiln/eager/hooks.py) -------------------------------------------------------------


class _LeafWaits:
    """With hooks on leaves: how many tape entries still owe each such leaf a cotangent, so
    that backward can finish a leaf (accumulate, post-accumulate hooks) as soon as its
    gradient is complete rather than at the end."""

    def __init__(self, starts):
        self.owed: dict = {}
        for node in _reachable(starts):
            for e in node.edges:
                if isinstance(e, Tensor) and (id(e) in _HOOKS or hooked_accumulator(e)):
                    self.owed[id(e)] = self.owed.get(id(e), 0) + 1
        self.done: set = set()

    def paid(self, node, pending, create_graph) -> None:
        for e in node.edges:
            if isinstance(e, Tensor) and id(e) in self.owed:
                self.owed[id(e)] -= 1
                if self.owed[id(e)] == 0 and id(e) in pending:
                    self.done.add(id(e))
                    _finish_leaf(e, pending[id(e)], create_graph)


def _finish_leaf(leaf: Tensor, ct, create_graph: bool) -> None:
    """The leaf's hooks, its AccumulateGrad's prehooks, `.grad += ct`, its post-accumulate
    hooks and its AccumulateGrad's hooks, in PyTorch's order."""
    if leaf._requires_grad:
        ct = _tensor(ct)
        if type(leaf) is SparseTensor:
            ct = grad_of(leaf, ct)  # its values' cotangent, as its sparse gradient
        ct = _apply_hooks(leaf, ct)
        acc = hooked_accumulator(leaf) if _HOOKS else None
        if acc is not None:
            ct = _apply_hooks(acc, ct)  # its prehooks (`register_node_prehook`)
        _accumulate(leaf, ct, create_graph)
        for hook in _hooks_of(leaf, 2):
            hook(leaf)
        if acc is not None:
            for hook in _hooks_of(acc, 3):
                hook((), (ct,))


# -- the engine ----------------------------------------------------------------------------------


def _vjp(node: Node, ct: Tensor, create_graph: bool, wanted=None) -> tuple:
    # `wanted`: (needed, target ids) of an autograd.grad pass; inputs outside them are not
    # needed (PyTorch's output mask: a derivative it does not define is asked for only then)
    op = node.op
    if op.vjp is None:
        if "nondiff" in op.tags:  # PyTorch: zero gradients (floor, round, sign…)
            xp = get_backend(node.device).activate()  # allocates on the current device
            inputs = zip(node.edges, node.shapes, node.dtypes)
            return tuple(None if e is None else make(xp.zeros(shape, dtype), node.device)
                         for e, shape, dtype in inputs)  # fmt: skip
        raise node_error(MissingDerivativeError, f"derivative for {op.name} is not implemented",
                         op=op.name, site=node.site)  # fmt: skip
    # a primitive's vjp takes plain copies (see `unpack`)
    out, inputs = unpack(node, create_graph,
                         not create_graph and not dual and REGISTRY.get(op.name) is op)  # fmt: skip
    if dual:
        out = _dual_out(node, out)
    # NOTE: most vjps compute every input's cotangent, even those no one needs (the exponent's
    # of x ** 2 takes log(x)): their warnings are noise (`_run` silences them); anomaly mode
    # checks the needed ones. Those whose unneeded cotangents cost (matmul…) take `needs`.
    if "vjp_needs" in op.tags:
        if wanted is None:
            needs = tuple(e is not None for e in node.edges)
        else:
            needs = tuple(e is not None and (id(e) in wanted[0] or id(e) in wanted[1])
                          for e in node.edges)  # fmt: skip
        cts = op.vjp(ct, out, *inputs, needs=needs, **node.attrs)
    else:
        cts = op.vjp(ct, out, *inputs, **node.attrs)
    if is_anomaly_enabled():
        _check_nan(node, cts)
    return cts


def _dual_out(node: Node, out):
    """The saved output of `node` with its tangent (under a forward-AD level)."""
    from . import forward_ad  # NOTE: lazy: it builds on this module

    return forward_ad.saved_output(node, out)


def _check_nan(node: Node, cts) -> None:
    for i, (c, edge) in enumerate(zip(cts, node.edges)):
        needed = edge is not None and isinstance(c, Tensor) and not isinstance(c, Unavailable)
        if needed and dt.is_float(c.dtype) and np.isnan(c._host()).any():
            inputs = [describe(a) if isinstance(a, Tensor) else "constant"
                      for a in node.saved or ()]  # fmt: skip
            raise node_error(
                AutogradError,
                f"Function '{node.name()}' returned nan values in its {i}th output",
                op=node.op.name, site=node.site, inputs=inputs,
            )  # fmt: skip


def _fit(ct, meta, device: str) -> Tensor:
    """`ct` summed back to the input's shape (after broadcasting) and in its dtype."""
    if type(ct) is StridedGrad:  # of a sparse leaf: its full shape, not its values'
        return ct
    if type(ct) is SparseTensor and tuple(ct.shape) == tuple(meta[0]):  # a sparse gradient
        return ct if ct.dtype == meta[1] else bind(REGISTRY["cast"], ct, dtype=meta[1])
    if not isinstance(ct, Tensor):
        ct = make(get_backend(device).to_device(np.asarray(ct)), device)
    shape, dtype = meta
    ct = real_part_for(sum_to_shape(ct, shape), dtype)
    return ct if ct.dtype == dtype else bind(REGISTRY["cast"], ct, dtype=dtype)


def _needed(nodes: list, targets: set) -> set:
    """The nodes (ids) whose inputs lead to some target (a Node's or a leaf's id)."""
    found = set()
    for node in sorted(nodes, key=lambda n: n.seq):
        if any(id(e) in targets or id(e) in found for e in node.edges):
            found.add(id(node))
    return found


def _reachable(starts) -> list:
    seen, stack, out = set(), list(starts), []
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            out.append(node)
            stack.extend(e for e in node.edges if isinstance(e, Node))
    return out


def retaining() -> bool:
    """Whether the backward pass running on this thread keeps the saved values
    (`retain_graph`); a vjp that may hand its saved values over (a compiled call's, which
    frees each residual after its last read) asks this. True outside a backward pass."""
    return getattr(_BACKWARD, "retain", True)


_BACKWARD = threading.local()


def _run(roots, seeds, retain_graph: bool, create_graph: bool, targets=None) -> dict:
    """Propagates `seeds` back from `roots`. With `targets` (tensors) it returns
    {id(target): cotangent}; without, it accumulates into the leaves' `.grad`."""
    outer, outer_pass = retaining(), getattr(_BACKWARD, "pass_", None)
    _BACKWARD.retain, _BACKWARD.pass_ = retain_graph, (roots, targets)
    try:
        return _propagate(roots, seeds, retain_graph, create_graph, targets)
    finally:
        _BACKWARD.retain, _BACKWARD.pass_ = outer, outer_pass


def current_pass():
    """(roots, targets) of the backward pass running on this thread (a new tuple for each
    pass), or None: what a multi-grad hook asks to know which of its tensors it reaches."""
    return getattr(_BACKWARD, "pass_", None)


def reached(backward_pass, tensors) -> list:
    """Whether the backward pass `current_pass()` computes a gradient for each tensor."""
    roots, targets = backward_pass
    nodes = _reachable([r._grad_fn for r in roots if r._grad_fn is not None])
    if targets is None:
        ids = {id(n) for n in nodes} | {id(e) for n in nodes for e in n.edges
                                        if isinstance(e, Tensor)}  # fmt: skip
    else:
        target_ids = {id(t._grad_fn or t) for t in targets}
        ids = _needed(nodes, target_ids) | target_ids
    return [id(t._grad_fn or t) in ids for t in tensors]


def _propagate(roots, seeds, retain_graph: bool, create_graph: bool, targets=None,
               raw: bool = False) -> dict:  # fmt: skip
    # `raw`: the targets' cotangents as they arrive, before their hooks (`_composite_hooked`)
    # id(node or leaf) -> its summed cotangent (the heap and `leaves` hold them): a Tensor, or
    # on the CPU without create_graph a bare array (`_ARRAY_VJP`; `_tensor` wraps it)
    pending: dict = {}
    heap: list = []  # (-seq, node): the latest node first
    leaves: list = []
    target_ids = None if targets is None else {id(t._grad_fn or t) for t in targets}
    starts = [r._grad_fn for r in roots if r._grad_fn is not None]
    needed = None if targets is None else _needed(_reachable(starts), target_ids)
    captured: dict = {}
    waits = _LeafWaits(starts) if _HOOKS and targets is None else None
    quiet = np.errstate(divide="ignore", invalid="ignore", over="ignore")  # see `_vjp`
    # NOTE: the loop below runs once per tape entry (the backward pass's per-op cost): the
    # common case (a vjp on CPU tensors whose cotangents need no summing or cast) is inline
    pop, push, pushpop, registered = heapq.heappop, heapq.heappush, heapq.heappushpop, REGISTRY.get
    # The ids in `pending` whose sum this loop made itself (without create_graph, on the CPU):
    # no one else holds it, so later cotangents are added into it. (Others may be shared: add's
    # vjp gives one tensor to both inputs.)
    owned: set = set()
    anomaly, plain = is_anomaly_enabled(), not create_graph and not dual
    arrays = plain and not anomaly and not grad_mode.inference_threads
    with set_grad_enabled(create_graph), quiet:
        for root, seed in zip(roots, seeds):
            _send(root._grad_fn or root, seed, pending, heap, leaves)
        nxt = None  # the latest node sent last, not yet on the heap (`heappushpop` below)
        while heap or nxt is not None:
            if nxt is None:
                node = pop(heap)[1]
            else:  # a chain's next node never touches the heap
                node, nxt = pushpop(heap, nxt)[1], None
            ct = pending.pop(id(node))
            owned.discard(id(node))
            if _PACKED_DATA and node in _PACKED:  # saved through saved_tensors_hooks
                saved_hooks.unpack(node)
            retained = node.retained
            if _HOOKS or retained is not None or target_ids is not None:
                if type(ct) is _ndarray:
                    ct = _tensor(ct)
                hooked = False
                if target_ids is not None and id(node) in target_ids:
                    # a target's gradient as it arrives, before its tensor's hooks (PyTorch's
                    # capture of a non-leaf input; the hooks still run for what flows on),
                    # unless the backward goes no further: then after them (PyTorch's too)
                    if _HOOKS and not raw and id(node) not in needed:
                        ct, hooked = _apply_hooks(node, ct, "tensor"), True
                    captured[id(node)] = ct
                    if raw:
                        continue
                if _HOOKS and not hooked:  # the tensor's hooks, retain_grad's capture, the
                    ct = _apply_hooks(node, ct, "tensor")  # node's prehooks
                if retained is not None and retained() is not None:
                    _accumulate(retained(), ct, create_graph)
                if _HOOKS:
                    ct = _apply_hooks(node, ct, "node")
                if target_ids is not None and id(node) not in needed:
                    continue
            op = node.op
            vjp = op.vjp
            post = _hooks_of(node, 3) if _HOOKS else ()  # `Node.register_hook`'s
            if (
                arrays
                and not post
                and op in _ARRAY_VJP
                and (args := array_args(node, ct)) is not None
            ):
                vjp = _ARRAY_VJP[op]
                # on bare arrays: so are the cotangents, summed back to shape if need be
                attrs = node.attrs
                cts = vjp(*args, **attrs) if attrs else vjp(*args)
                for edge, c, shape, dtype in zip(node.edges, cts, node.shapes, node.dtypes):
                    if edge is None or c is None:
                        continue
                    if needed is not None and id(edge) not in needed and id(edge) not in target_ids:
                        continue
                    if type(c) is not _ndarray:
                        c = _asarray(c)  # 0-d: NumPy's operators give scalars
                    if c.shape != shape or c.dtype is not dtype:
                        c = _fit(_tensor(c), (shape, dtype), _CPU)._data
                    key = id(edge)
                    if key in pending:
                        total = pending[key]
                        if type(total) in _SPARSE_GRADS:
                            leaf = edge if type(edge) is SparseTensor else None
                            pending[key] = add_grads(total, _tensor(c), leaf)
                            continue
                        if key in owned:  # a sum made here: add in place (see `owned`)
                            t = total if type(total) is _ndarray else total._data
                            _add(t, c, out=t)
                        else:  # CPU arrays, or plain CPU tensors: a new array
                            t = _add(total if type(total) is _ndarray else total._data, c)
                            pending[key] = t if type(t) is _ndarray else _asarray(t)
                            owned.add(key)
                        continue
                    pending[key] = c
                    if isinstance(edge, Node):
                        if nxt is not None:
                            push(heap, nxt)
                        nxt = (-edge.seq, edge)
                    else:
                        leaves.append(edge)
                if waits is not None:
                    waits.paid(node, pending, create_graph)
                if not retain_graph:
                    node.saved = node.out = None
                continue
            if type(ct) is _ndarray:
                ct = _tensor(ct)
            if vjp is None or anomaly or dual or "vjp_needs" in op.tags:
                cts = _vjp(node, ct, create_graph,
                           None if needed is None else (needed, target_ids))  # fmt: skip
            else:  # `_vjp`, inline
                out, inputs = unpack(node, create_graph, plain and registered(op.name) is op)
                attrs = node.attrs
                cts = vjp(ct, out, *inputs, **attrs) if attrs else vjp(ct, out, *inputs)
            if post:
                if _composite(node):  # hooks see its own inputs' gradients: past its steps
                    _composite_hooked(node, post, cts, ct, create_graph, pending, heap, leaves)
                    if not retain_graph:
                        node.saved = node.out = None
                    continue
                if needed is not None:  # autograd.grad: None for the inputs it skips
                    cts = tuple(c if e is not None and (id(e) in needed or id(e) in target_ids)
                                else None for c, e in zip(cts, node.edges))  # fmt: skip
                cts = _node_hooked(node, post, cts, ct)
            for edge, c, shape, dtype in zip(node.edges, cts, node.shapes, node.dtypes):
                if edge is None or c is None:
                    continue
                if needed is not None and id(edge) not in needed and id(edge) not in target_ids:
                    continue
                if (
                    type(c) is not Tensor
                    or (d := c._data).shape != shape
                    or (d.dtype is not dtype and d.dtype != dtype)
                ):
                    if isinstance(c, Unavailable):
                        raise SavedTensorError(c._reason)
                    c = _fit(c, (shape, dtype), node.device)
                key = id(edge)
                if key in pending:
                    total = pending[key]
                    if type(c) in _SPARSE_GRADS or type(total) in _SPARSE_GRADS:
                        leaf = edge if type(edge) is SparseTensor else None
                        pending[key] = add_grads(_tensor(total), c, leaf)  # out of place
                        owned.discard(key)
                    elif key in owned:  # a sum made here: add in place (see `owned`)
                        t = total if type(total) is _ndarray else total._data
                        _add(t, c._data, out=t)
                    elif type(total) is _ndarray:  # an array path's (so on the CPU, plain)
                        pending[key] = _tensor(_asarray(_add(total, c._data)))
                        owned.add(key)
                    else:
                        pending[key] = total + c
                        if plain and type(d := pending[key]._data) is _ndarray and d.base is None:
                            owned.add(key)
                    continue
                pending[key] = c
                if isinstance(edge, Node):
                    if nxt is not None:
                        push(heap, nxt)
                    nxt = (-edge.seq, edge)
                else:
                    leaves.append(edge)
            if waits is not None:
                waits.paid(node, pending, create_graph)
            if not retain_graph:
                node.saved = node.out = None
    if targets is not None:  # a leaf target's gradient after its tensor hooks, as PyTorch's
        captured.update((id(leaf), _apply_hooks(leaf, _tensor(pending[id(leaf)])) if _HOOKS
                         else _tensor(pending[id(leaf)])) for leaf in leaves)  # fmt: skip
        found = {id(t): captured.get(id(t._grad_fn or t)) for t in targets}
        for t in targets:  # a sparse tensor's gradient is sparse (its values' cotangent)
            if type(t) is SparseTensor and found[id(t)] is not None:
                g = grad_of(t, found[id(t)])
                found[id(t)] = make(g._data, g._device) if type(g) is StridedGrad else g
        return found
    for leaf in leaves:
        if waits is None or id(leaf) not in waits.done:
            _finish_leaf(leaf, pending[id(leaf)], create_graph)
    return {}


# The ops whose vjp, given bare NumPy arrays of one float dtype (the cotangent, output and
# inputs), computes what it computes on plain tensors of that dtype, bit for bit ("vjp_arrays":
# tests/test_autograd_arrays.py holds each to it): backward on the CPU without create_graph
# runs them so, without a Tensor around each value of the vjp (the per-op cost of backward).
# op -> its vjp for real values (a complex op's, without the conjugating wrapper: kiln/ops/core.py),
# or the form for arrays it gives as `vjp.arrays` (relu's: its kernel, without a dispatch)
_ARRAY_VJP = {
    op: getattr(op.vjp, "arrays", None) or getattr(op.vjp, "for_real", op.vjp)
    for op in REGISTRY.values()
    if "vjp_arrays" in op.tags
}
_asarray = np.asarray


def _tensor(ct):
    """A cotangent as a Tensor: a bare array (on the CPU, outside inference mode: see
    `_propagate`) becomes a plain tensor."""
    if type(ct) is not _ndarray:
        return ct
    t = _new(Tensor)
    t._data = ct
    t._meta = None
    return t


def _node_hooked(node, hooks, cts, ct) -> tuple:
    """The inputs' cotangents of `node` after its hooks (`Node.register_hook`): they see them
    summed back to the inputs' shapes, None where no gradient flows, as PyTorch's do."""
    grad_inputs = tuple(
        None if edge is None or c is None else _fit(c, (shape, dtype), node.device)
        for edge, c, shape, dtype in zip(node.edges, cts, node.shapes, node.dtypes)
    )
    hooked = FACE_HOOKS.get(node.op)
    if hooked is not None:
        return hooked(node, hooks, grad_inputs, ct)
    listed = listed_inputs(node)
    if len(listed) == len(grad_inputs):
        return apply_node_hooks(node, hooks, grad_inputs, (ct,))
    # the hooks see those of the inputs PyTorch's node lists (not a constant or an index)
    shown = apply_node_hooks(node, hooks, tuple(grad_inputs[i] for i in listed), (ct,))
    grad_inputs = list(grad_inputs)
    for i, g in zip(listed, shown):
        grad_inputs[i] = g
    return tuple(grad_inputs)


def _composite_hooked(node, hooks, cts, ct, create_graph, pending, heap, leaves) -> None:
    """A composite's node with hooks (`Node.register_hook`): they see PyTorch's grad_inputs,
    the gradients of the composite's own inputs (`face_edges`). Those are taken here from its
    step's (`cts`) back through the composite's other steps, and sent on to the inputs past
    them (the steps lead nowhere else)."""
    face = face_edges(node)
    hooked = (getattr(node, "composite", None) or {}).get("_hooked")
    if hooked is not None:  # its virtual nodes' inputs, past them
        face = tuple(e.edges[0] if getattr(e, "host", None) is node else e for e in face)
    targets = [None if e is None else _stub(e) for e in face]
    starts, seeds = [], []
    for edge, c, shape, dtype in zip(node.edges, cts, node.shapes, node.dtypes):
        if edge is not None and c is not None:
            starts.append(_stub(edge))
            seeds.append(_fit(c, (shape, dtype), node.device))
    found = _propagate(starts, seeds, True, create_graph, [t for t in targets if t is not None],
                       raw=True)  # fmt: skip
    grad_inputs = tuple(None if t is None else found.get(id(t)) for t in targets)
    if hooked is not None:
        grad_inputs = hooked(node, hooks, grad_inputs, ct)
    else:
        grad_inputs = apply_node_hooks(node, hooks, grad_inputs, (ct,))
    for edge, g in zip(face, grad_inputs):
        if edge is not None and g is not None:
            _send(edge, g, pending, heap, leaves)


def _stub(edge):
    """A tensor whose `grad_fn` is node `edge` (a leaf: itself), as `_propagate` takes them."""
    if not isinstance(edge, Node):
        return edge
    t = _new(Tensor)
    t._data = None
    meta = t._meta = _new(Meta)
    meta.grad_fn = edge
    return t


def _send(edge, ct, pending: dict, heap: list, leaves: list) -> None:
    key = id(edge)
    if key in pending:
        pending[key] = pending[key] + ct
        return
    pending[key] = ct
    if isinstance(edge, Node):
        heapq.heappush(heap, (-edge.seq, edge))
    else:
        leaves.append(edge)


def _accumulate(t: Tensor, ct: Tensor, create_graph: bool) -> None:
    """`t.grad += ct`: in place as PyTorch does, unless recording (create_graph)."""
    if type(t) is SparseTensor or type(ct) is SparseTensor or type(t._grad) is SparseTensor:
        _accumulate_sparse(t, ct)
        return
    if type(t) is SparseCompressedTensor:
        t._grad = accumulate_compressed(t, t._grad, ct, create_graph)
        return
    if t._grad is None:  # NOTE: a copy unless recorded: cotangents may be shared (add's)
        if create_graph and ct._requires_grad:
            t._grad = ct
        else:  # laid out as the leaf where it is dense, else in C order (PyTorch's contract)
            data, own = ct._data, t._data
            if own.flags.c_contiguous or own.shape != data.shape or not _dense(own):
                t._grad = make(data.copy(), ct._device)
            else:
                t._grad = make(_laid_out_as(own, data, ct._device), ct._device)
    elif create_graph or t._grad._requires_grad:
        t._grad = t._grad + ct
    else:
        t._grad._data += ct._data


def _laid_out_as(like, data, device: str):
    """A copy of `data` with the strides of `like`, a dense array of its shape."""
    out = get_backend(device).activate().empty_like(like)  # (order "K": like's strides)
    out[...] = data
    return out


def _accumulate_sparse(t: Tensor, ct: Tensor) -> None:
    """`t.grad += ct` where a sparse tensor is involved: a sparse leaf's gradient is sparse (its
    values' cotangent on its pattern, `grad_of`) unless an op gave it a strided one
    (`StridedGrad`), and sums stay sparse while both are."""
    if type(t) is SparseTensor:
        ct = grad_of(t, ct)
    if type(ct) is StridedGrad:
        ct = make(ct._data, ct._device) if not ct._requires_grad else ct.view_as(ct)
    if t._grad is None:
        t._grad = ct.detach().clone() if not ct._requires_grad else ct
    else:
        t._grad = add_grads(t._grad, ct)


# -- the API (kiln/eager/autograd_api.py: backward, grad), importable from here too ------------

from .autograd_api import _roots, backward, grad  # noqa: E402, F401
