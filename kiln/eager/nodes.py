"""The tape entry `Node` (a tensor's `grad_fn`) and the graph user code sees through it, as
PyTorch's: each node is an instance of its name's class (`MulBackward0`), `next_functions`
lists the inputs PyTorch's node lists (a composite's own inputs; for the ops that stand for
several of PyTorch's nodes, `virtual_node`s between), and `_saved_*` are the saved values
under PyTorch's names. The engine (`autograd`) reads `Node`'s slots, and the rest only where
hooks are on a node (they see the gradients of the inputs `next_functions` lists)."""

from __future__ import annotations

import weakref

from ..errors import AutogradError
from ..graph.core import format_code_site
from . import saved_hooks
from .hooks import register_node_hook, register_node_prehook
from .node_saved import saved_properties
from .tensor import Tensor, make

# node -> its `metadata` dict, made on first read (most nodes never have one)
_METADATA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

__all__ = ["AccumulateGrad", "Node", "accumulator", "backward_name", "name_history", "node_class"]

_new = object.__new__


class Node:
    """The tape entry of one op, a tensor's `grad_fn`: what the op's vjp needs, and where each
    input's cotangent goes (`edges`: the input's Node, the leaf tensor itself, or None).

    `saved` are the inputs and `versions` their versions then (None for a constant); `shapes`
    and `dtypes` those of the inputs and, last, the output; `out` is the output's data,
    `out_vc` its version counter (None until it has one: see `version_of`) and `out_version`
    its version then; `where` the user's line that ran it (`site` formats it). Backward without
    retain_graph sets `saved` and `out` to None. Set only where needed: `_label` (the name a
    composite gave it), `face` (the edges `next_functions` lists), `host` (of a virtual node:
    the node that computes its gradient), `composite` (a composite's `_saved_*`) and
    `output_nr` (of a piece of split/chunk/unbind: its number among the pieces, which
    PyTorch's one node of them all lists it by).
    """

    # NOTE: every op on the tape makes one, and each object the tape keeps costs the cyclic
    # garbage collector's passes too (a fifth of the forward pass's time with grad, measured):
    # so flat tuples and slots here rather than lists of pairs
    __slots__ = ("op", "attrs", "saved", "versions", "edges", "shapes", "dtypes", "out",
                 "out_vc", "out_version", "device", "seq", "where", "retained", "_label",
                 "face", "host", "composite", "output_nr", "__weakref__")  # fmt: skip

    # NOTE: the tape makes every node of this class (no name is worked out on the tape's hot
    # path); the node user code reaches (`t.grad_fn`, `next_functions`) becomes, on first
    # sight, an instance of its name's subclass (`MulBackward0`: `node_class`), as PyTorch's
    # are. The engine tests nodes with isinstance.
    _plain = True

    @property
    def label(self) -> str | None:
        """The name a composite gave this node (see `name_history`), or None."""
        return getattr(self, "_label", None)

    @label.setter
    def label(self, name: str) -> None:
        self._label = name
        if not self._plain:  # seen already under its op's name
            self.__class__ = node_class(name)

    def _seen(self):
        """This node as user code sees it: an instance of its name's class."""
        if self._plain:
            self.__class__ = node_class(self.name())
        return self

    @property
    def metadata(self) -> dict:
        """PyTorch's `Node.metadata`: a dict for the user's own data, kept with the node."""
        data = _METADATA.get(self)
        if data is None:
            data = _METADATA[self] = {}
        return data

    @property
    def site(self) -> str | None:
        """`file.py:12`: the user's line that ran the op (kept as `where`, unformatted)."""
        where = self.where
        return where if where is None or type(where) is str else format_code_site(where)

    @property
    def metas(self) -> list:
        """[(shape, dtype)] of the inputs and, last, the output."""
        return list(zip(self.shapes, self.dtypes))

    def name(self) -> str:
        """PyTorch's name for the backward of this op (`MulBackward0`, `SumBackward0`,
        `MmBackward0`): see `backward_name`; `label` when a composite set it (the values of
        `max(x, dim)` are MaxBackward0 there, a gather and a view here)."""
        label = getattr(self, "_label", None)
        if label is not None:
            return label
        if self.op.name == "pow" and self.versions[:1] == (None,):  # of a number: `2 ** x`
            return "PowBackward2"
        return backward_name(self.op.name, self.attrs, list(self.shapes[:-1]))

    def register_hook(self, hook):
        """`hook(grad_inputs, grad_outputs)` runs when backward has computed this op's
        inputs' gradients (one per input, None where none flows) from its output's; a tuple
        it returns replaces them. As PyTorch's `grad_fn.register_hook`.

        >>> import kiln as kn
        >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3
        >>> h = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
        >>> y.sum().backward(); x.grad
        tensor([30., 30.])
        """
        _mark_host(self)
        return register_node_hook(self, hook)

    @property
    def next_functions(self) -> tuple:
        """((node, 0), ...) for the inputs PyTorch's node of this name lists: the node that
        made each (its `grad_fn`), an `AccumulateGrad` for a leaf that requires grad, None for
        one that does not. A composite lists its own inputs (`face`), not its steps';
        integer inputs (indices, targets) and Python numbers an op takes as options (`x **
        2`, `clamp(x, 0)`) are not listed, as in PyTorch.

        >>> import kiln as kn
        >>> x = kn.ones(2, requires_grad=True)
        >>> (x * 2).grad_fn.next_functions
        ((<AccumulateGrad>, 0), (None, 0))
        """
        return tuple(
            (accumulator(e), 0)
            if isinstance(e, Tensor)
            else (None, 0)
            if e is None
            else (e._seen(), getattr(e, "output_nr", 0))
            for e in face_edges(self)
        )

    def register_prehook(self, hook):
        """`hook(grad_outputs)` runs before backward computes this op's inputs' gradients; a
        tuple it returns replaces `grad_outputs`. As PyTorch's `grad_fn.register_prehook`.

        >>> import kiln as kn
        >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3
        >>> h = y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        >>> y.sum().backward(); x.grad
        tensor([6., 6.])
        """
        _mark_host(self)
        return register_node_prehook(self, hook)

    # The values saved for backward, under PyTorch's names (the Autograd mechanics notes
    # print them): the first and second input, and the output as a new tensor object
    _saved_self = property(lambda self: self._saved(0))
    _saved_other = property(lambda self: self._saved(1))
    _saved_result = property(lambda self: self._saved(None))
    # the same values as objects whose `register_hooks(pack, unpack)` packs them
    _raw_saved_self = property(lambda self: saved_hooks.SavedTensor(self, 0))
    _raw_saved_other = property(lambda self: saved_hooks.SavedTensor(self, 1))
    _raw_saved_result = property(lambda self: saved_hooks.SavedTensor(self, None))

    def _saved(self, i: int | None, own: bool = False):
        """Saved input `i` (the output for None) as a tensor; of a composite's node (see
        `name_history`) only with `own` (node_saved.py's, which know which op made it)."""
        if self in saved_hooks.PACKED:
            return saved_hooks.unpacked(self, i)
        if self.saved is None:
            raise AutogradError(
                "Trying to backward through the graph a second time (or directly access "
                "saved tensors after they have already been freed). Saved intermediate values "
                "of the graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                f"if you need to access saved tensors after calling backward ({self.name()})"
            )
        if i is not None and not own and (getattr(self, "composite", None) or _composite(self)):
            which = ("_saved_self", "_saved_other")[i] if i < 2 else f"saved input {i}"
            raise AttributeError(f"'{self.name()}' object has no attribute '{which}'")
        if i is None:
            return make(self.out, self.device)
        if i >= len(self.saved):
            raise AttributeError(f"'{self.name()}' object has no attribute saved input {i}")
        value = self.saved[i]
        return value if isinstance(value, Tensor) else make(value, self.device)

    def release(self) -> None:
        self.saved = self.out = None

    def __repr__(self):
        return f"<{self.name()} from {self.site}>"


# PyTorch's names where they are not the op's name in CamelCase (`exp` -> `ExpBackward0`).
# NOTE: a display name for `grad_fn`, read by nothing else; it lives here, not on the OpDef,
# because it is eager's PyTorch-facing vocabulary and some names depend on the call (a full
# reduction or one along dims, a matrix product's ranks), which the op record cannot know.
_NAMES = {
    "cast": "ToCopyBackward0", "broadcast_to": "ExpandBackward0", "reshape": "ViewBackward0",
    "square": "PowBackward0", "log1p": "Log1PBackward0", "clip": "ClampBackward1",
    "concat": "CatBackward0", "pad": "ConstantPadNdBackward0", "tile": "RepeatBackward0",
    "gather": "IndexBackward0", "take_along_axis": "GatherBackward0",
    "conv2d": "ConvolutionBackward0", "max_pool2d": "MaxPool2DWithIndicesBackward0",
    "avg_pool2d": "AvgPool2DBackward0", "floordiv": "FloorDivideBackward0",
    "mod": "RemainderBackward0", "exp2": "Exp2Backward0", "log2": "Log2Backward0",
    "log10": "Log10Backward0", "advanced_index": "IndexBackward0",
}  # fmt: skip
_REDUCTIONS = {"reduce_sum": "Sum", "reduce_mean": "Mean", "reduce_prod": "Prod",
               "reduce_max": "Max", "reduce_min": "Min"}  # fmt: skip


def backward_name(op_name: str, attrs, shapes) -> str:
    """PyTorch's `grad_fn` name for an op on inputs of `shapes`: a table entry, one that
    depends on the call, or the op's name in CamelCase.

    >>> backward_name("reduce_sum", {"axes": (0, 1), "keepdims": False}, [(2, 3)])
    'SumBackward0'
    >>> backward_name("matmul", {}, [(2, 3), (3, 4)]), backward_name("log", {}, [(2,)])
    ('MmBackward0', 'LogBackward0')
    """
    if op_name in _REDUCTIONS:
        full = len(attrs["axes"]) == len(shapes[0]) and not attrs["keepdims"]
        base = _REDUCTIONS[op_name]
        if base in ("Max", "Min"):  # PyTorch: max() is MaxBackward1, max(dim) MaxBackward0
            return f"{base}Backward{1 if full else 0}"
        return f"{base}Backward{0 if full else 1}"
    if op_name == "matmul":
        ranks = tuple(len(s) for s in shapes)
        return {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0"}.get(
            ranks, "BmmBackward0"
        )
    if op_name == "transpose":
        perm = attrs["perm"]
        moved = [i for i, p in enumerate(perm) if i != p]
        if len(moved) == 2:
            return "TBackward0" if len(perm) == 2 else "TransposeBackward0"
        return "PermuteBackward0"
    if op_name == "index":
        return (
            "SelectBackward0"
            if any(item[0] == "int" for item in attrs["spec"])
            else ("SliceBackward0")
        )
    if op_name == "pow":
        return "PowBackward0" if len(shapes[1]) == 0 else "PowBackward1"
    if op_name in _NAMES:
        return _NAMES[op_name]
    return "".join(w.capitalize() for w in op_name.split("_")) + "Backward0"


def name_history(out, name: str, *inputs, saved: dict | None = None):
    """`out`, its `grad_fn` named `name`: PyTorch's name for the function that made it (a
    composite's history is otherwise named after its last primitive: softmax's a division).
    `print(loss)` and `loss.grad_fn` then show `NllLossBackward0`, as in PyTorch's tutorials.
    Only a node this call made is named, not one of `inputs`' own (a call that returns its
    input as it is); graph values pass through. Its `next_functions` list `inputs`' nodes;
    `saved` are its `_saved_*` attributes (PyTorch's names and values for that node).

    >>> import kiln as kn
    >>> x = kn.ones(2, requires_grad=True)
    >>> y = name_history(x * 2, "MyBackward0", x, saved={"_saved_scale": 2})
    >>> y.grad_fn.name(), y.grad_fn._saved_scale
    ('MyBackward0', 2)
    """
    meta = out._meta if type(out) is Tensor else None
    node = None if meta is None else meta.grad_fn
    if node is None:
        return out
    # the edges `next_functions` lists: each tensor's node, the leaf itself or None (None for an
    # optional tensor not given too); integer tensors and other values are not listed.
    # NOTE: composites run this per call (a transpose, softmax...): kept short
    face = []
    for x in inputs:
        if x is None:
            face.append(None)
        elif type(x) is Tensor or isinstance(x, Tensor):
            meta = x._meta
            edge = None if meta is None else meta.grad_fn
            if edge is node:
                return out  # the call returned its input as it is
            if x._data.dtype.kind in "fcV":
                face.append((edge or x) if meta is not None and meta.requires_grad else None)
    if node._plain:
        node._label = name
    else:
        node.label = name
    node.face = tuple(face)
    if saved is not None:
        node.composite = saved
    return out


def _composite(node) -> bool:
    """Whether `node` is a composite's whose inputs are not the composite's (a step's, whose
    saved inputs are not those PyTorch's node keeps)."""
    face = getattr(node, "face", None)
    if face is None or node.op in FACES:  # (a fused op's: its vjp gives what its hooks see)
        return False
    own = _listed(node)
    return len(face) != len(own) or any(x is not y for x, y in zip(face, own))


_CLASSES: dict = {}


def _saved_getattr(self, name: str):
    """A named node class's `__getattr__` (only for a name not found otherwise): a
    composite's `_saved_*` (`name_history`). NOTE: on the named classes only, which user code
    sees: a `__getattr__` on `Node` itself slows every attribute read of the engine's hot
    path (CPython's lookup then goes through a Python-level hook: ~0.4 us a node)."""
    if name.startswith("_saved_"):
        try:
            kept = object.__getattribute__(self, "composite")
        except AttributeError:
            kept = None
        if kept is not None and name in kept:
            value = kept[name]
            if isinstance(value, Tensor) and self.saved is None:
                self._saved(0)  # raises: freed by backward
            return value
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def node_class(name: str) -> type:
    """The subclass of `Node` named `name` (`MulBackward0`), made on first use: the type of
    the `grad_fn`s of that name, as PyTorch's.

    >>> import kiln as kn
    >>> type((kn.ones(2, requires_grad=True) * 2).grad_fn).__name__
    'MulBackward0'
    """
    cls = _CLASSES.get(name)
    if cls is None:
        namespace = {"__slots__": (), "_plain": False, "__module__": Node.__module__,
                     "__getattr__": _saved_getattr}  # fmt: skip
        cls = _CLASSES[name] = type(name, (Node,), {**namespace, **saved_properties(name)})
    return cls


# Ops whose Python-number inputs PyTorch's node of the same name does not list (its overload
# takes them as Scalar options: `x ** 2`, `x.clamp(0, 1)`, `x.masked_fill(m, 0.)`)
_SCALAR_OPTIONS = frozenset({"pow", "square", "clip", "masked_fill", "leaky_relu", "lerp"})


def _listed(node) -> tuple:
    """The edges of `node`'s inputs that PyTorch's node lists (see `next_functions`)."""
    edges = node.edges
    return tuple(edges[i] for i in listed_inputs(node))


def listed_inputs(node) -> tuple:
    """The positions of the inputs PyTorch's node lists (see `next_functions`)."""
    options = node.op.name in _SCALAR_OPTIONS
    return tuple(
        i
        for i, (dtype, version) in enumerate(zip(node.dtypes, node.versions))
        if dtype.kind in "fcV" and not (options and version is None)
    )


# op -> face(node): the edges `next_functions` lists for the nodes of an op that stands for
# several of PyTorch's (kiln/eager/fused.py), with `virtual_node`s between; and op ->
# hooked(node, hooks, grad_inputs, ct): its inputs' gradients after its hooks and those of
# its virtual nodes (`_node_hooked`), each seeing PyTorch's gradients
# A composite's `saved` (`name_history`) may also hold "_face": face(node), the edges
# `next_functions` lists (with virtual nodes between: made on first use), and "_hooked":
# hooked(node, hooks, grad_inputs, ct), the gradients of the virtual nodes' inputs
# (`grad_inputs`, past the composite's steps) after its hooks and theirs (kiln/eager/fused.py's
# `nll_of_logits`)
FACES: dict = {}
FACE_HOOKS: dict = {}


def face_edges(node) -> tuple:
    """The edges `node.next_functions` lists (kept as `node.face`, made on first use)."""
    face = getattr(node, "face", None)
    if face is None:
        maker = FACES.get(node.op)
        face = node.face = _listed(node) if maker is None else maker(node)
    else:
        kept = getattr(node, "composite", None)
        if kept and "_face" in kept:
            face = node.face = kept.pop("_face")(node)
    return face


def virtual_node(name: str, host, edges: tuple, metas: tuple) -> Node:
    """A node of PyTorch's graph that kiln's tape computes inside `host` (the `TBackward0` of
    a weight inside the node of `F.linear`): `next_functions` shows it, with `edges` (the
    inputs' nodes); `metas` are its input's and output's (shape, dtype). Hooks on it run
    when `host` runs (`FACE_HOOKS`)."""
    node = _new(node_class(name))
    node.op, node.attrs, node.saved, node.versions, node.edges = host.op, {}, None, (), edges
    node.shapes, node.dtypes = tuple(m[0] for m in metas), tuple(m[1] for m in metas)
    node.out = node.out_vc = node.retained = None
    node.out_version, node.device, node.seq, node.where = 0, host.device, host.seq, host.where
    node._label, node.face, node.host = name, edges, host
    return node


def _mark_host(node) -> None:
    """A hook on a virtual node: its host takes the hooked path (`_node_hooked`)."""
    host = getattr(node, "host", None)
    if host is not None:
        register_node_hook(host, _virtual_hooks)


def _virtual_hooks(grad_inputs, grad_outputs):
    """(A mark: the hooks of a host's virtual nodes run in its `FACE_HOOKS` entry.)"""


class AccumulateGrad:
    """Where the cotangent of a leaf goes (its `.grad`); `next_functions` shows it, `variable`
    is the leaf. It leads nowhere further (`next_functions` is empty), as PyTorch's. One object
    per leaf while it is held (`accumulator`); hooks keep it for as long as the leaf lives.
    Its prehooks see the leaf's gradient after the leaf's own hooks, before it reaches
    `.grad`; its hooks, `hook((), (grad,))`, run after (and after the post-accumulate
    hooks), as PyTorch's.

    >>> import kiln as kn
    >>> x = kn.ones(2, requires_grad=True)
    >>> acc = (x * 2).grad_fn.next_functions[0][0]
    >>> acc.name(), acc.variable is x, acc is (x + 1).grad_fn.next_functions[0][0]
    ('torch::autograd::AccumulateGrad', True, True)
    """

    __slots__ = ("variable", "metadata", "__weakref__")
    next_functions = ()

    def __init__(self, variable: Tensor):
        self.variable = variable
        self.metadata: dict = {}

    def name(self) -> str:
        """PyTorch's name of this node (its C++ class's)."""
        return "torch::autograd::AccumulateGrad"

    def register_hook(self, hook):
        """`hook((), (grad,))` runs once the leaf's gradient is in its `.grad`."""
        _pin(self)
        return register_node_hook(self, hook)

    def register_prehook(self, hook):
        """`hook((grad,))` runs before the leaf's gradient goes into its `.grad`; a tuple it
        returns replaces it."""
        _pin(self)
        return register_node_prehook(self, hook)

    def __repr__(self):
        return "<AccumulateGrad>"


def accumulator(leaf: Tensor) -> AccumulateGrad:
    """The `AccumulateGrad` node of `leaf` (a tensor that requires grad and has no
    `grad_fn`): the same object each time while one is held, as PyTorch keeps it (weakly, on
    the leaf: see `Meta.accumulator`).

    >>> import kiln as kn
    >>> w = kn.zeros(3, requires_grad=True)
    >>> accumulator(w).variable is w
    True
    """
    meta = leaf._meta
    kept = getattr(meta, "accumulator", None)
    acc = kept() if type(kept) is weakref.ref else kept
    if acc is None:
        acc = AccumulateGrad(leaf)
        meta.accumulator = weakref.ref(acc)
    return acc


def hooked_accumulator(leaf: Tensor) -> AccumulateGrad | None:
    """The `AccumulateGrad` of `leaf` where hooks were registered on it, else None."""
    meta = leaf._meta
    kept = None if meta is None else getattr(meta, "accumulator", None)
    return kept if type(kept) is AccumulateGrad else None


def _pin(acc: AccumulateGrad) -> None:
    """The leaf holds its accumulator once it has hooks (PyTorch's graph holds it while it
    refers to the leaf; kiln's refers to the leaf itself). NOTE: a cycle through the leaf
    (`variable`), which the cyclic garbage collector frees with it."""
    meta = acc.variable._meta
    if meta is not None:
        meta.accumulator = acc


saved_hooks.Node.register(Node)  # kn.autograd.graph.Node
saved_hooks.Node.register(AccumulateGrad)
