"""The IR: Graph (nodes in creation order), Node, Symbol (a node's value), Variable."""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import threading

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import Size, size_attribute
from ..errors import ArgumentTypeError, GraphError
from .opdef import REGISTRY, Attrs

_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# kiln's own example programs: their lines are the user's lines.
_USER_FILES = {os.path.join(_KILN_DIR, "demo.py")}
# the standard library's frames between a user's call and kiln's (`copy.deepcopy(t)` calls
# `Tensor.__deepcopy__`) are not the user's line either
_PASSED_THROUGH = {os.path.abspath(copy.__file__)}


_FILE_NAMES: dict = {}  # a code object's file -> its base name, or None for library files


def _file_name(filename: str) -> str | None:
    library = filename.startswith(_KILN_DIR) and filename not in _USER_FILES
    if (
        library
        or "contextlib" in filename
        or filename.startswith("<frozen")
        or filename in _PASSED_THROUGH
    ):
        name = None
    else:
        name = os.path.basename(filename)
    _FILE_NAMES[filename] = name
    return name


# What `.item()`/`.tolist()` of a Symbol give where a trace wants them deferred: set by
# kn.compile's tracing (`kiln.tracing.scalars`), which sits above this layer; it answers None
# where this thread does not trace, and then they raise.
value_hook = None


def user_site(skip: int = 1) -> str | None:
    """`file.py:12` of the innermost caller outside kiln (kiln's own frames are filtered out).

    Every eager op that records the tape asks, so each file's verdict is cached.
    """
    f = sys._getframe(skip)
    names = _FILE_NAMES
    while f is not None:
        filename = f.f_code.co_filename
        try:
            name = names[filename]
        except KeyError:
            name = _file_name(filename)
        if name is not None:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return None


def user_code_site(skip: int = 1) -> tuple | None:
    """`user_site`, unformatted: (code, instruction offset) of the innermost caller outside
    kiln, which `format_code_site` turns into `file.py:12` when someone asks (the eager tape
    keeps one per op: a frame's line number costs more to find than its offset)."""
    f = sys._getframe(skip)
    names = _FILE_NAMES
    while f is not None:
        code = f.f_code
        try:
            name = names[code.co_filename]
        except KeyError:
            name = _file_name(code.co_filename)
        if name is not None:
            return code, f.f_lasti
        f = f.f_back
    return None


def format_code_site(where: tuple | None) -> str | None:
    """`file.py:12` of a `user_code_site` (None stays None).

    >>> format_code_site(None) is None
    True
    """
    if where is None:
        return None
    code, offset = where
    line = code.co_firstlineno
    for start, end, at in code.co_lines():  # as a frame's f_lineno finds it
        if start <= offset < end:
            line = at if at is not None else line
            break
    return f"{_FILE_NAMES[code.co_filename]}:{line}"


class Symbol:
    """A typed value of the graph: the output of one node. Hashes by identity.

    Operators (`+`, `@`, `<`, indexing…) are installed by the frontend.
    """

    __slots__ = ("node", "shape", "_dtype", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray + Symbol` to Symbol.__radd__

    def __init__(self, node: Node, shape: tuple, dtype):
        self.node = node
        self.shape = shape if type(shape) is Size else Size(shape)  # PyTorch's `x.shape`
        self.dtype = dtype

    __hash__ = object.__hash__

    @property
    def dtype(self) -> dt.DType:
        """The value's dtype (a `kn.dtype`; kiln keeps its NumPy dtype inside)."""
        return dt._PUBLIC[self._dtype]

    @dtype.setter
    def dtype(self, value) -> None:
        self._dtype = value if type(value) is not dt.DType else value.dtype

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def op(self):
        return self.node.op

    @property
    def graph(self) -> Graph:
        return self.node.graph

    @property
    def site(self) -> str | None:
        return self.node.site

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self):
        """The number of elements (NumPy's `size`), and callable as PyTorch's `size()` (a
        `kn.Size`) and `size(dim)`."""
        return size_attribute(self.shape)

    def type_str(self) -> str:
        return f"{dt.short_name(self.dtype)}{sh.format_shape(self.shape)}"

    def __repr__(self):
        return f"<Symbol {self.name}:{self.type_str()} = {self.op.name}>"

    def __bool__(self):
        raise GraphError(
            f"the truth value of Symbol '{self.name}' ({self.op.name}, created at {self.site}) "
            f"is not known while building a graph (branching on it at {user_site()}): Python "
            "control flow (if, while, and, or, not) on a traced value cannot be compiled. Use "
            "kn.cond(pred, true_fn, false_fn, *operands) or kn.while_loop(cond_fn, body_fn, "
            "init) (kn.fori_loop, kn.scan for loops), kn.where(cond, a, b) to choose values, "
            "or (under kn.compile) pass the value as a static Python argument (a number: each "
            "value compiles its own program)"
        )

    def __len__(self):
        if not self.shape:
            raise ArgumentTypeError(f"len() of a 0-d Symbol '{self.name}'")  # PyTorch: TypeError
        if not isinstance(self.shape[0], int):
            raise GraphError(f"len() of Symbol '{self.name}' with shape {self.shape} is unknown")
        return self.shape[0]

    def __iter__(self):
        """PyTorch's iteration: `x[0], x[1], ...` along the first dim (`q, k, v = qkv`), when
        the graph knows its length."""
        if not self.shape:
            raise ArgumentTypeError(f"iteration over a 0-d Symbol '{self.name}'")
        if not isinstance(self.shape[0], int):
            raise GraphError(
                f"cannot iterate over Symbol '{self.name}' ({self.type_str()}): the length of "
                "its first dim is known only when the program runs; index it, or use "
                "kn.split / kn.unbind with a static count"
            )
        return (self[i] for i in range(self.shape[0]))

    def _no_value(self, what: str):
        raise GraphError(
            f"{what} of Symbol '{self.name}' ({self.op.name}, created at {self.site}) is not "
            f"known while building a graph (asked at {user_site()}): a traced value has no "
            "value until the program runs. Return it from the function (under kn.compile) or "
            "fetch it (in graph mode), and read it from the result"
        )

    def __array__(self, dtype=None, copy=None):
        self._no_value("the array")

    def item(self):
        deferred = value_hook and value_hook(self, "item")
        return deferred if deferred is not None else self._no_value(".item()")

    def tolist(self):
        deferred = value_hook and value_hook(self, "tolist")
        return deferred if deferred is not None else self._no_value(".tolist()")

    def numpy(self, *, force=False):
        self._no_value(".numpy()")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __index__(self):
        self._no_value("the index value")

    def __complex__(self):
        self._no_value("complex()")


class Node:
    """One equation of the IR: `outputs = op[attrs](*inputs)`, created at `site`."""

    __slots__ = ("op", "inputs", "attrs", "name", "site", "graph", "out", "ref", "__weakref__")

    def __init__(self, graph, op, inputs, attrs, name, site):
        self.graph = graph
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.name = name
        self.site = site
        self.out = None
        self.ref = None  # a variable node: the Variable that owns the value it reads

    @property
    def outputs(self) -> tuple:
        return (self.out,)

    def __repr__(self):
        return f"<Node {self.name} = {self.op.name}>"


class Variable(Symbol):
    """A graph value with state: it owns its value from creation (no init step).

    Every Function and Session that uses it reads and writes the same value. It changes
    only through declared updates (applied after a run's outputs, all or nothing) or
    `assign` between runs.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     w = kn.Variable(np.ones((2, 3), np.float32), name="w")
    >>> w.numpy().sum(), w.type_str()
    (np.float32(6.0), 'f32[2,3]')
    """

    __slots__ = ("_value", "_initial", "trainable", "device")

    def __init__(self, value, shape=None, dtype=None, name=None, trainable=True, graph=None):
        if callable(value):
            if shape is None:
                raise GraphError("a Variable made from an initializer needs shape=")
            shape_ = sh.as_shape(shape)
            if not sh.is_static(shape_):
                raise GraphError(f"a Variable's shape must be static, got {shape!r}")
            dtype_ = dt.as_dtype(dtype) if dtype is not None else dt.DEFAULT_FLOAT
            value = value(shape_, dtype_)
        array = np.array(value, dtype=None if dtype is None else dt.as_dtype(dtype))
        if dtype is None and array.dtype == np.float64 and not isinstance(value, np.ndarray):
            array = array.astype(dt.DEFAULT_FLOAT)  # Python floats: kiln's default float
        dtype_ = dt.as_dtype(array.dtype)
        if shape is not None and sh.as_shape(shape) != array.shape:
            raise GraphError(f"Variable {name!r}: value has shape {array.shape}, not {shape}")
        graph = graph or get_default_graph()
        node = graph.add_node(
            REGISTRY["variable"], (), {"shape": array.shape, "dtype": dtype_}, name or "variable"
        )
        super().__init__(node, array.shape, dtype_)
        if graph.symbol_class is not Symbol:  # (a kn.compile trace's graph)
            self.__class__ = TracedVariable
        node.out = self
        node.ref = self
        self._initial = array.copy()
        self._value = array
        self.trainable = trainable
        self.device = "cpu"
        graph.variables.append(self)

    @property
    def value(self) -> np.ndarray:
        """The current value as a NumPy array: the value itself on the cpu, a copy when it
        lives on a GPU (`device` says where: a run moves it to its own device)."""
        if self.device == "cpu":
            return self._value
        return self._value.get()  # NOTE: a CuPy array; the graph layer does not import CuPy

    def numpy(self) -> np.ndarray:
        """A copy of the current value, on the host."""
        return np.array(self._value, copy=True) if self.device == "cpu" else self.value

    def assign(self, value) -> None:
        """Sets the value between runs (on the host: the next run moves it to its device);
        shape must match and the dtype cast safely."""
        cuda = hasattr(value, "__cuda_array_interface__") and hasattr(value, "get")
        array = value.get() if cuda else np.asarray(value)
        if array.shape != self.shape:
            raise GraphError(
                f"cannot assign shape {array.shape} to Variable '{self.name}' "
                f"of shape {self.shape} (created at {self.site})"
            )
        if not np.can_cast(array.dtype, self.dtype, "same_kind"):
            raise GraphError(
                f"cannot assign {array.dtype} to Variable '{self.name}' of dtype {self.dtype}"
            )
        self._value = np.array(array, dtype=self.dtype, copy=True)
        self.device = "cpu"

    def reset(self) -> None:
        self._value = self._initial.copy()
        self.device = "cpu"

    def __repr__(self):
        return f"<Variable {self.name}:{self.type_str()}>"


# While a kn.compile trace runs the traced function: a function symbol -> the eager class
# that the function's code sees for it (kiln/tracing/user_class.py); None otherwise.
USER_CLASS: list = [None]
_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_OWN_FILES: dict[str, bool] = {}  # a code's file name -> whether it is one of kiln's modules


def _seen_class(self):
    # NOTE: `isinstance(v, C)` reads `v.__class__` when `type(v)` is no subclass of C
    seen = USER_CLASS[0]
    if seen is None:
        return type(self)
    file = sys._getframe(1).f_code.co_filename  # (the code asking)
    own = _OWN_FILES.get(file)
    if own is None:
        own = _OWN_FILES[file] = os.path.abspath(file).startswith(_KILN_DIR)
    return type(self) if own else seen(self)


class TracedSymbol(Symbol):
    """A Symbol of a kn.compile trace's graph: while the traced function runs, its code sees
    the eager class the value stands for (`isinstance(x, kn.Tensor)` is True, as eagerly);
    kiln's own code sees the Symbol. Graph mode's Symbols pay nothing for this."""

    __slots__ = ()
    __class__ = property(_seen_class)  # type: ignore[assignment]


class TracedVariable(Variable):
    """A Variable of a kn.compile trace's graph (a module's Parameter or Buffer there), seen
    by the traced function's code as that Parameter's or Buffer's class (TracedSymbol)."""

    __slots__ = ()
    __class__ = property(_seen_class)  # type: ignore[assignment]


class Graph:
    """Nodes in creation order (always a topological order), with unique deterministic names.

    >>> g = Graph()
    >>> with g.as_default(), name_scope("layer1"):
    ...     import kiln as kn
    ...     x = kn.placeholder(kn.float32, (None, 3), name="x")
    >>> x.name
    'layer1/x'
    """

    symbol_class = Symbol  # (a kn.compile trace's graph: TracedSymbol)

    def __init__(self):
        self.nodes: list[Node] = []
        self.variables: list[Variable] = []
        self.inputs: list[Symbol] = []
        self.outputs: list[Symbol] = []
        self.updates: dict = {}  # Variable -> Symbol, for a loaded program that declares some
        self.constraints: list[tuple] = []  # (dim, dim, why, node): checked when feeds bind
        self._names: set[str] = set()
        self._next_suffix: dict[str, int] = {}
        self._scopes: list[str] = []
        self._frozen_because: str | None = None
        self._site: str | None = None  # while set, new nodes get this site (gradients)
        self._lock = threading.RLock()
        self.rng_steps: dict[str, int] = {}  # random node name -> runs so far
        self.source: Graph | None = None  # a program graph: the user graph it was taken from
        # The passes that made this program graph, in order: such a graph computes the same
        # values, but not the same gradients (stop_gradient is gone, fused ops have no vjp).
        self.optimized: tuple[str, ...] = ()
        # kn.checkpoint regions: the ids of the nodes each made, recomputed by kn.grad
        self.checkpoints: list[frozenset] = []
        # id(Symbol) -> {handle id: hook(gradient)}: Symbol.register_hook's hooks, which
        # differentiate runs on that value's whole gradient
        self.grad_hooks: dict[int, dict] = {}

    # -- building --------------------------------------------------------------------------

    def add_node(self, op, inputs, attrs, name, site=None, shape=None, dtype=None) -> Node:
        """Appends a node (the caller gives its output's shape and dtype, or sets `out`)."""
        with self._lock:
            if self._frozen_because is not None:
                raise GraphError(
                    f"cannot add {op.name} to a frozen graph (frozen {self._frozen_because}); "
                    "build into a new kn.Graph() instead"
                )
            node = Node(self, op, inputs, Attrs(attrs), self.unique_name(name), site)
            node.site = self._site or (site if site is not None else user_site(2))
            if shape is not None:
                node.out = self.symbol_class(node, shape, dtype)
            self.nodes.append(node)
            return node

    def unique_name(self, base: str) -> str:
        name = "/".join([*self._scopes, base]) if self._scopes else base
        if name not in self._names:
            self._names.add(name)
            return name
        i = self._next_suffix.get(name, 1)  # NOTE: per-name counters keep naming linear
        while f"{name}_{i}" in self._names:
            i += 1
        self._next_suffix[name] = i + 1
        self._names.add(f"{name}_{i}")
        return f"{name}_{i}"

    def freeze(self, reason: str = "by Graph.freeze()") -> Graph:
        """Makes adding nodes an error that says `reason`."""
        self._frozen_because = reason
        return self

    @property
    def frozen(self) -> bool:
        return self._frozen_because is not None

    @contextlib.contextmanager
    def as_default(self):
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    @contextlib.contextmanager
    def site(self, site: str | None):
        """Nodes added inside get `site`: gradient nodes point at their forward op's line."""
        previous, self._site = self._site, site
        try:
            yield
        finally:
            self._site = previous

    @contextlib.contextmanager
    def name_scope(self, name: str):
        if not name or "/" in name:
            raise GraphError(f"a name scope must be a non-empty name without '/', got {name!r}")
        self._scopes.append(name)
        try:
            yield "/".join(self._scopes)
        finally:
            self._scopes.pop()

    # -- reading ---------------------------------------------------------------------------

    @property
    def placeholders(self) -> list[Symbol]:
        return [n.out for n in self.nodes if n.op.name == "placeholder"]

    def __str__(self):
        from .printer import format_graph

        return format_graph(self)

    def __repr__(self):
        return f"<Graph with {len(self.nodes)} nodes>"


_local = threading.local()
_global_default = [Graph()]


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph() -> Graph:
    """The innermost `as_default()` graph of this thread, else the global default graph."""
    stack = _stack()
    return stack[-1] if stack else _global_default[0]


def reset_default_graph() -> Graph:
    """Replaces the global default graph with a new, empty one."""
    if _stack():
        raise GraphError("reset_default_graph() inside a `with graph.as_default()` block")
    _global_default[0] = Graph()
    return _global_default[0]


def name_scope(name: str):
    """A name scope on the default graph: nodes made inside are named `name/...`."""
    return get_default_graph().name_scope(name)
