"""The optimizer base: param groups, PyTorch's `state_dict`, eager `step()` and graph-mode
`minimize()`. Each algorithm's math is one `_update` (kiln/optim/algorithms.py).

`_update(param, grad, slots, step, group)` is the one definition of an optimizer's math: given
Symbols it builds graph nodes (graph mode: `minimize` turns them into declared updates), given
arrays or eager Tensors it computes values at once (eager mode: `zero_grad()` and `step()`).
In graph mode a group's `lr`, `momentum` and `betas` are read from Variables that setting
`group['lr']` (a scheduler, or the user) assigns, so a compiled step never needs recompiling.
"""

from __future__ import annotations

import warnings
import weakref
from collections import defaultdict

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from ..eager import Tensor, enable_grad, no_grad, zeros_like
from ..eager.tensor import describe, make
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    GraphError,
    ShapeError,
    UsageError,
)
from ..frontend.inplace import overwrite
from ..graph.core import Symbol, Variable, get_default_graph, user_site
from ..graph.opdef import REGISTRY
from ..nn.module import Parameter, pending_updates
from ..nn.parameter import share
from ..ops.core import apply as _apply
from ..ops.core import bind_graph
from . import differentiable, graph_step
from .complex_slots import as_real as _as_real
from .complex_slots import complex_of as _complex_of
from .complex_slots import real_pairs as _real_pairs
from .hooks import OptimizerHooks
from .options import (  # noqa: F401 -- (implementation_flags, _check_betas: imported from here too)
    _check,
    _check_betas,
    implementation_flags,
    like,
    nonzero,
    tensor_option,
)

__all__ = ["Optimizer", "ParamGroup"]

# Options a graph-mode train op reads from a Variable (schedulers change them between runs).
GRAPH_OPTIONS = ("lr", "momentum", "betas")
_SET_MESSAGE = (
    "optimizer parameters need to be organized in ordered collections, but the ordering of "
    "tensors in sets will change between runs. Please use a list instead."
)


def _trainable_ancestors(loss) -> tuple[list, set]:
    """Trainable Variables that `loss` depends on, in graph order, and the ids of every node
    `loss` depends on."""
    seen, stack, found = set(), [loss.node], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.out, Variable) and node.out.trainable:
            found.add(id(node.out))
        stack.extend(i.node for i in node.inputs)
    return [v for v in loss.graph.variables if id(v) in found], seen


class ParamGroup(dict):
    """One param group: `'params'` and the options of its parameters, as PyTorch's dicts.

    Setting `lr`, `momentum` or `betas` also sets the graph Variables made for it, which the
    train ops read, so a new learning rate takes effect at the next run without a recompile.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.variables = weakref.WeakValueDictionary()  # (graph id, option) -> Variable

    def __setitem__(self, key, value):
        if key in GRAPH_OPTIONS and not isinstance(value, Symbol):
            graphs = {gid for gid, _ in self.variables.keys()}
            for (gid, option), var in list(self.variables.items()):
                if option == key:
                    var.assign(np.asarray(value, np.float64))
                    graphs.discard(gid)
            if key == "momentum" and value != 0 and graphs:
                warnings.warn(
                    "momentum was 0 when this group's graph-mode train ops were built, so they "
                    "take no momentum steps; build them (minimize) after setting it, or after "
                    "making the scheduler that sets it",
                    stacklevel=2,
                )
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


class Optimizer(OptimizerHooks):
    """Base class, as PyTorch's: `param_groups`, `add_param_group`, `state_dict`,
    `load_state_dict`, eager `zero_grad`/`step`; graph mode `minimize`, `compute_gradients`,
    `apply_gradients`.

    Subclasses define `_slot_names(group)` and `_update`. State (slot Variables such as Adam's
    moments, named `<var>/<optimizer>_<slot>`, and a step count `<var>/step`) is made per
    Variable on first use and shared by every train op of this optimizer.
    """

    slot_prefix = ""
    torch_slot_names: dict = {}  # kiln slot name -> the name in PyTorch's state_dict
    saves_step = True  # whether state_dict holds the step count (PyTorch's SGD: no)
    # Slots that are 0-d float32 values, not of the parameter's shape and dtype: PyTorch's
    # scalar state (NAdam's mu_product, ASGD's eta and mu), kept and saved as it keeps them.
    scalar_slots: tuple = ()

    def __init__(self, params, defaults: dict):
        self.__dict__.update(defaults=dict(defaults), param_groups=[], _state=defaultdict(dict))
        self._init_hooks()
        self._adopt = params is None  # graph mode: minimize adopts the Variables it finds
        if params is None:
            groups = [{"params": []}]
        else:
            if isinstance(params, Tensor):
                raise ArgumentTypeError(
                    "params argument given to the optimizer should be an iterable of Tensors "
                    f"or dicts, but got {describe(params)}"
                )
            # (a set of params is taken here, as PyTorch takes it; a group's set is refused)
            params = [params] if isinstance(params, Variable) else list(params)
            if not params:
                raise ArgumentError("optimizer got an empty parameter list")
            groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    # Options as attributes (`opt.lr`): group 0's; setting one sets it in every group.
    def __getattr__(self, name):
        defaults = self.__dict__.get("defaults", {})
        if name in defaults:
            groups = self.__dict__["param_groups"]
            return groups[0][name] if groups else defaults[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name in self.__dict__.get("defaults", {}):
            self.defaults[name] = value
            for group in self.param_groups:
                group[name] = value
        else:
            super().__setattr__(name, value)

    @property
    def state(self):
        """Per-parameter state, as PyTorch's `optimizer.state`, keyed by the parameter.

        A built-in optimizer's shows PyTorch's names and types over kiln's state
        (kiln/optim/state_view.py): `opt.state[p]['exp_avg']` is the Tensor the next step
        reads, eager or compiled, `step` a 0-d float Tensor (absent for SGD and Muon, as in
        PyTorch), and writes (`.zero_()`, assignment, `del`) reach that step. A complex
        parameter's slots are complex values of its shape and dtype, as PyTorch keeps them;
        scalar slots stay real. An optimizer with a PyTorch-style `step()` of its own gets
        the `defaultdict(dict)` that step fills (`state = self.state[p]`).

        >>> import kiln as kn
        >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = kn.optim.RMSprop([w], lr=0.01, momentum=0.9)
        >>> (w * w).sum().backward(); opt.step()
        >>> list(opt.state[w]), opt.state[w]["step"].dtype
        (['step', 'square_avg', 'momentum_buffer'], kiln.float32)
        """
        for key in list(self.__dict__.get("_boxes", {})):  # steps taken under kn.compile
            self._from_traces(key)
        if self.custom:
            return self._state
        from .state_view import OptimizerState

        return OptimizerState(self)

    @state.setter
    def state(self, value) -> None:
        """`opt.state = defaultdict(dict)` (PyTorch's reset) or any {param: state}: the
        state is that, and every step after starts from it."""
        if self.custom:
            self.__dict__["_state"] = defaultdict(dict, value)
            return
        view = self.state
        for p in list(view):
            del view[p]
        for p, entry in dict(value).items():
            view[p] = entry

    @property
    def custom(self) -> bool:
        """Whether this optimizer's math is a PyTorch-style `step()` of its own (no
        `_update`): its state is whatever that step keeps in `self.state`."""
        return type(self)._update is Optimizer._update

    @property
    def params(self) -> list | None:
        """Every group's params in order; None for an optimizer made without params."""
        return None if self._adopt else [p for g in self.param_groups for p in g["params"]]

    def _compile_key(self) -> tuple:
        """What a compiled step bakes in of the param groups, which `kn.compile` adds to its
        cache key (kiln/tracing/guards.py): each group's parameter count and its options but
        those the step reads from Variables (`lr`, `betas`; of `momentum` whether it is on).
        So a weight decay set between calls, or a group added, retraces, as the next torch
        step would use them; a scheduler's lr does not.

        >>> import kiln as kn
        >>> opt = kn.optim.SGD([kn.zeros(2, requires_grad=True)], lr=0.1, weight_decay=0.01)
        >>> key = opt._compile_key()
        >>> opt.param_groups[0]["lr"] = 0.05
        >>> opt._compile_key() == key
        True
        >>> opt.param_groups[0]["weight_decay"] = 0.0
        >>> opt._compile_key() == key
        False
        """
        key = []
        for group in self.param_groups:
            options = []
            for name in self.defaults:
                value = group.get(name)
                if name in ("lr", "betas"):
                    continue
                if name == "momentum":
                    value = nonzero(value)
                elif not isinstance(value, (bool, int, float, str, type(None))):
                    value = (type(value).__name__, id(value))  # a graph value: by identity
                options.append((name, value))
            key.append((len(group["params"]), tuple(options)))
        return tuple(key)

    @property
    def slot_names(self) -> tuple:
        return self._slot_names(self.param_groups[0])

    def _slot_names(self, group) -> tuple:
        return ()

    def _slot_init(self, group, slot: str) -> float:
        """The value a slot starts from (Adagrad's `initial_accumulator_value`)."""
        return 0.0

    def _slot_layout(self, slot: str, shape: tuple, dtype) -> tuple | None:
        """(shape, dtype) of `slot` for a parameter whose slots have `shape` and `dtype`;
        None if such a parameter keeps no such slot (Adafactor's by the parameter's rank)."""
        return ((), np.dtype(np.float32)) if slot in self.scalar_slots else (shape, dtype)

    def _slots_for(self, group, shape: tuple, dtype) -> list:
        """The slots of a parameter whose slots have `shape` and `dtype`, in order."""
        return [s for s in self._slot_names(group) if self._slot_layout(s, shape, dtype)]

    def _update(self, param, grad, slots: dict, step, group=None):
        """(new_param, new_slots) from the current values; `step` counts this update (1…);
        `group` holds the options (numbers, or graph values in graph mode)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no _update(param, grad, slots, step, group), the math "
            "that the built-in step() and graph-mode minimize() are made from; an optimizer "
            "with a PyTorch-style step() of its own runs eagerly only"
        )

    def add_param_group(self, param_group: dict) -> None:
        """Adds a group of params with options of its own; missing options take the defaults.

        >>> import kiln as kn
        >>> a, b = kn.zeros(2, requires_grad=True), kn.zeros(3, requires_grad=True)
        >>> opt = kn.optim.SGD([a], lr=0.1)
        >>> opt.add_param_group({"params": [b], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        if not isinstance(param_group, dict):
            raise ArgumentTypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, (Tensor, Variable)):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise ArgumentTypeError(_SET_MESSAGE)
        params = list(params)
        for p in params:
            if not isinstance(p, (Parameter, Variable, Tensor)):
                raise ArgumentTypeError(
                    f"optimizer params must be Parameters, Variables or Tensors, got {p!r}"
                )
            if isinstance(p, Tensor) and not p.is_leaf and not self.defaults.get("differentiable"):
                raise ArgumentError("can't optimize a non-leaf Tensor")
        group = ParamGroup(param_group, params=params)
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in taken for p in params) or len({id(p) for p in params}) < len(params):
            raise ArgumentError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # -- eager mode --------------------------------------------------------------------------

    def _tensors(self) -> list:
        """(index, Tensor, group) of every eager parameter, index counting over all groups."""
        if self._adopt:
            raise ArgumentError(
                "eager zero_grad()/step() need the params: Optimizer(model.parameters())"
            )
        found, index = [], 0
        for group in self.param_groups:
            for p in group["params"]:
                if not isinstance(p, Symbol):  # (a Variable, or a trace's placeholder)
                    found.append((index, p.tensor() if isinstance(p, Parameter) else p, group))
                index += 1
        return found

    def _graph_variables(self) -> list:
        """The Variables of this optimizer's parameters in the default graph (None for a
        parameter that has none there; in a kn.compile trace, one that has a `.grad` has)."""
        graph = get_default_graph()
        found = []
        for group in self.param_groups:
            for p in group["params"]:
                if isinstance(p, Parameter):
                    found.append(graph_step.variable_of(p, graph))
                elif isinstance(p, Variable):
                    found.append(p if p.graph is graph else None)
                elif type(p) is Tensor:  # a captured plain leaf: its placeholder, else None
                    found.append(graph_step.captured_placeholder(p, graph))
                elif isinstance(p, Symbol):  # the placeholder a trace reads in its place
                    found.append(p if graph_step.captured_leaf(p) is not None else None)
        return found

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's `.grad` (PyTorch's default: to None), before a backward;
        in a graph (kn.compile, graph mode), also the gradients `loss.backward()` left there."""
        graph = get_default_graph()
        if not graph_step.idle(graph):
            params = [p for group in self.param_groups for p in group["params"]]
            variables = [p for p in params if isinstance(p, Variable)]  # graph mode's own
            graph_step.clear_grads([v for v in variables if v.graph is graph], set_to_none)
            parameters = [p for p in params if isinstance(p, Parameter)]
            plain = [p for p in params if type(p) is Tensor  # (an image LBFGS optimizes)
                     or graph_step.grad_leaf(p) is not None]  # fmt: skip
            graph_step.zero_leaf_grads(plain, set_to_none)  # each compiled call clears them
            if graph_step.zero_grads(parameters, set_to_none):
                return  # kn.compile: each call clears the `.grad`s (kiln/tracing/traced.py)
        for _, t, _ in self._tensors():
            grad = t.grad
            if grad is None:
                continue
            if set_to_none or grad.requires_grad:
                t.grad = None if set_to_none else zeros_like(grad)
            else:
                with no_grad():
                    grad.zero_()  # in place, as PyTorch: references to it see the zeros

    def step(self, closure=None):
        """One update of every parameter that has a `.grad`, in place, with `_update`: the
        same math as the graph-mode train op. `closure` (re-evaluates the loss) is called
        first, with grad enabled, and its result returned.

        All or nothing: every new value, slot and step count is computed and checked first,
        then written, so a step that raises leaves parameters and state as they were.
        Floating-point errors are ignored whatever `np.seterr` says (PyTorch's inf and nan).

        >>> import kiln as kn
        >>> w = kn.tensor(3.0, requires_grad=True)
        >>> opt = kn.optim.SGD([w], lr=0.25)
        >>> (w * w).backward(); opt.step(); w
        tensor(1.5000, requires_grad=True)
        """
        graph = get_default_graph()
        if not graph_step.idle(graph):
            params = [p for group in self.param_groups for p in group["params"]]
            graph_step.refuse_inputs(self, params, "step")
        grads = None if graph_step.idle(graph) else graph_step.take_grads(self._graph_variables())
        if grads is not None:  # `loss.backward()` on a Symbol: the graph's train op
            differentiable.check_traced_step(self, grads)
            if closure is not None:
                raise graph_step.refuse_closure()
            train_op = self.apply_gradients(_average_over_ranks(grads))
            graph_step.record_step(train_op)
            return train_op
        if not graph_step.idle(graph):
            graph_step.refuse_untraced(self, [t for _, t, _ in self._tensors()])
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            symbolic = [k for k, v in group.items() if isinstance(v, Symbol)]
            if symbolic:
                raise ArgumentError(f"eager step() needs numbers, but {symbolic} are graph values")
        with no_grad(), np.errstate(all="ignore"):
            params = [(i, t, g) for i, t, g in self._tensors() if t.grad is not None]
            for _, t, _ in params:
                self._from_traces(t)
            updates = [self._new_values(i, t, g) for i, t, g in params]
            # NOTE: from here on nothing can fail: same shapes, same dtypes, plain writes.
            site = user_site() if updates else None  # the step's line, for every write
            for t, count, new_param, new_slots in updates:
                overwrite(t, new_param, site=site)  # t.copy_(new_param): `_new_values` checked
                _write_slots(self._state.setdefault(t, {}), count, new_slots, site)
                self._to_traces(t)
        return loss

    # A Parameter stepped under kn.compile keeps its slots in the traces' Variables, which share
    # their values through boxes (`_slots_of`): eager steps read them from there and leave
    # theirs there, so compiled and eager steps continue one state (SGD's momentum after three
    # compiled steps, then eager ones, was restarted from zero: a silently different result).

    def _from_traces(self, t) -> None:
        """Parameter `t`'s eager state as its compiled steps left it (CPU)."""
        boxes = self.__dict__.get("_boxes", {}).get(t)
        if not boxes or t.device != "cpu":
            return
        if t not in self._state and "step" in boxes and int(boxes["step"][0]) == 0:
            return  # no step since its state was cleared (`del opt.state[p]`): none to show
        state = self._state.setdefault(t, {})
        for key, box in boxes.items():
            value = box[0]
            if key == "step":
                state["step"] = int(value)
                continue
            tensor = make(value)
            complex_pairs = t.dtype.kind == "c" and tuple(value.shape) == (*t.shape, 2)
            state[key] = _complex_of(tensor) if complex_pairs else tensor

    def _to_traces(self, t) -> None:
        """Parameter `t`'s eager state into its traces' boxes, in place (the Variable a trace
        ran last holds the box's array), so its next compiled step continues from it."""
        boxes = self.__dict__.get("_boxes", {}).get(t)
        if not boxes or t.device != "cpu":
            return
        state = self._state[t]
        for key, box in boxes.items():
            if key == "step":
                box[0][...] = state["step"]
            elif key in state:
                box[0][...] = _real_pairs(state[key]._data)
        self._from_traces(t)  # the eager state is the boxes' arrays again

    def _fresh_slot(self, group, slot: str, data):
        """A slot's first value for a parameter whose (real) values are `data`: an array for
        an array, a Tensor on its device for a Tensor."""
        shape, dtype = self._slot_layout(slot, tuple(data.shape), data.dtype)
        value = np.full(shape, self._slot_init(group, slot), dtype)
        return value if isinstance(data, np.ndarray) else make(value).to(data.device)

    # Whether this optimizer takes sparse gradients, as PyTorch's SGD and Adagrad do (without
    # weight decay): their update of the gradient made dense is PyTorch's sparse one, as a zero
    # of the gradient leaves its element (and slots) as they were. The others refuse them.
    sparse_grads = False

    def _grad(self, t, group):
        """The gradient `_new_values` reads: a sparse one made dense where this optimizer takes
        sparse gradients, else refused with PyTorch's RuntimeError (its step would read only
        the stored values and update the wrong elements)."""
        if group.get("differentiable"):
            differentiable.check_step(type(self).__name__, t)
        grad = t.grad
        if not getattr(grad, "is_sparse", False):
            return grad
        name = type(self).__name__
        if not self.sparse_grads:
            if isinstance(self, _adam_family()):
                raise UsageError(
                    "Adam does not support sparse gradients, please consider SparseAdam instead"
                )  # (PyTorch says Adam for AdamW too)
            raise UsageError(f"{name} does not support sparse gradients")
        if group.get("weight_decay", 0) != 0:
            raise UsageError(f"{name}: weight_decay option is not compatible with sparse gradients")
        with no_grad():
            return grad.to_dense()

    def _new_values(self, i: int, t, group) -> tuple:
        """(t, step count, new value, new slots) of parameter `i`, computed and checked
        without writing anything."""
        grad_tensor = self._grad(t, group)
        state = self._state.get(t) or {}
        count = state.get("step", 0) + 1
        step = np.array(count, np.int64)
        if t._device == "cpu":  # the same ops on the arrays: NumPy's operators, no Tensors
            data, grad = t._data, grad_tensor._data
            if data.dtype.kind == "c":  # PyTorch's: a complex parameter is a pair of reals
                data, grad = _as_real(data), _as_real(grad)
            names = self._slots_for(group, tuple(data.shape), data.dtype)
            slots = {s: _real_pairs(state[s].numpy()) if s in state
                     else self._fresh_slot(group, s, data) for s in names}  # fmt: skip
            new_param, new_slots = self._update(data, grad, slots, step, group)
            new_param = np.asarray(new_param)
            if t.dtype.kind == "c":
                new_param = np.ascontiguousarray(new_param, data.dtype).view(t.dtype)[..., 0]
            new_param = make(new_param)
            new_slots = {k: make(np.asarray(v)) for k, v in new_slots.items()}
        else:
            data, grad = t.detach(), grad_tensor.detach()
            if data.dtype.kind == "c":  # a pair of reals, as on the CPU
                data, grad = F.view_as_real(data), F.view_as_real(grad)
            names = self._slots_for(group, tuple(data.shape), data.dtype)
            slots = {s: _real_pairs(state[s]) if s in state else self._fresh_slot(group, s, data)
                     for s in names}  # fmt: skip
            new_param, new_slots = self._update(data, grad, slots, step, group)
            if t.dtype.kind == "c":
                new_param = F.view_as_complex(new_param)
        for what, value in (("value", new_param), *new_slots.items()):
            self._check_fits(i, t, what, value)
        if t.dtype.kind == "c":  # PyTorch's state: complex values of the parameter's shape
            pairs = (tuple(data.shape), data.dtype)
            new_slots = {k: _complex_of(v) if self._slot_layout(k, *pairs) == pairs else v
                         for k, v in new_slots.items()}  # fmt: skip
        if new_param.dtype != t.dtype:
            new_param = F.cast(new_param, t.dtype)
        return t, count, new_param, new_slots

    def _check_fits(self, i: int, t, what: str, value) -> None:
        """A new value or slot must have the parameter's shape, and a dtype that casts to
        the parameter's within its kind (PyTorch refuses float updates of an int tensor); the
        slots of a complex parameter are those of its pairs of reals."""
        data = t._data
        if type(value) is Tensor and data.dtype.kind != "c":  # NOTE: the common case, cheaply
            v, layout = value._data, (data.shape, data.dtype)
            if what != "value":
                layout = self._slot_layout(what, data.shape, data.dtype)
            if layout is not None and v.shape == layout[0] and v.dtype == layout[1]:
                return
        shape, dtype = tuple(t.shape), t.dtype
        if dtype.kind == "c" and what != "value":
            shape, dtype = (*shape, 2), dt.to_real(dtype)
        if what != "value":
            shape, dtype = self._slot_layout(what, shape, dtype)
        bad_shape = tuple(value.shape) != shape
        if bad_shape or not np.can_cast(value.dtype, dtype, "same_kind"):
            where = (
                f"{type(self).__name__}.step: parameter {i} ({describe(t)}, its grad "
                f"{describe(t.grad)}): the new {what} is {describe(value)}; nothing was updated"
            )
            raise (ShapeError if bad_shape else DTypeError)(where)

    # -- graph mode --------------------------------------------------------------------------

    def _var_list(self, loss, var_list) -> list:
        reachable, seen = _trainable_ancestors(loss)
        candidates = var_list if var_list is not None else self.params
        if candidates is None:
            chosen = reachable
        else:
            chosen, ids = [], set()
            for p in candidates:
                if isinstance(p, Tensor) and not isinstance(p, Parameter):
                    raise GraphError("minimize takes Parameters or Variables, not eager Tensors")
                var = p.variable_in(loss.graph) if isinstance(p, Parameter) else p
                frozen = var is not None and not var.trainable  # requires_grad=False
                if var is not None and not frozen and id(var.node) in seen and id(var) not in ids:
                    ids.add(id(var))
                    chosen.append(var)
        if not chosen:
            which = (
                "none of the given parameters"
                if candidates is not None
                else "no trainable Variable"
            )
            raise GraphError(
                f"loss '{loss.name}' ({loss.op.name}, created at {loss.site}) depends on "
                f"{which}: nothing to optimize (were the model's modules called in this graph?)"
            )
        return chosen

    def compute_gradients(self, loss, var_list=None) -> list:
        """[(gradient, Variable)] of a scalar `loss`; `var_list` (Parameters or Variables)
        defaults to the optimizer's params, else every trainable Variable `loss` uses.
        Parameters that `loss` does not use are left out (PyTorch: no gradient, no update)."""
        if not isinstance(loss, Symbol):
            raise GraphError(f"minimize needs a loss Symbol, got {type(loss).__name__}")
        variables = self._var_list(loss, var_list)
        return list(zip(F.grad(loss, variables), variables))

    def _group_of(self, var) -> tuple[int, ParamGroup]:
        """(index, group) of the group that holds `var` or the Parameter (or captured plain
        leaf) it was made from. An optimizer made without params adopts it into group 0."""
        owner = graph_step.owner_of_value(var)
        for index, group in enumerate(self.param_groups):
            if any(p is var or p is owner for p in group["params"]):
                return index, group
        if self._adopt:
            self.param_groups[0]["params"].append(var)
        return 0, self.param_groups[0]

    def _graph_options(self, index: int, group: ParamGroup, graph) -> dict:
        """The group's options for a train op in `graph`: `lr`, `momentum` (when on) and
        `betas` as Variables (made once per graph), the others as they are."""
        options = dict(group)
        for key in GRAPH_OPTIONS:
            value = group.get(key)
            if value is None or isinstance(value, Symbol) or (key == "momentum" and value == 0):
                continue
            var = group.variables.get((id(graph), key))
            if var is None or var.graph is not graph:
                name = self.slot_prefix.rstrip("_") or type(self).__name__.lower()
                suffix = f"_{index}" if index else ""
                var = Variable(np.asarray(value, np.float64), name=f"{name}/{key}{suffix}",
                               trainable=False, graph=graph)  # fmt: skip
                group.variables[(id(graph), key)] = var
            options[key] = (var[0], var[1]) if key == "betas" else var
        return options

    def _slots_of(self, var, group=None) -> dict:
        state = self._state.get(var)
        if state is None:
            group = self.param_groups[0] if group is None else group
            # A Parameter with eager state (trained eagerly, or loaded) continues from it.
            owner = graph_step.owner_of_value(var)
            start = self._state.get(owner, {}) if owner is not None else {}
            graph = var.graph
            state = {
                "step": Variable(np.array(start.get("step", 0), np.int64),
                                 name=f"{var.name}/step", trainable=False, graph=graph)
            }  # fmt: skip
            shape, dtype = var.shape, var.dtype
            if dtype.kind == "c":  # the slots of its pairs of reals (as the eager step's)
                shape, dtype = (*shape, 2), dt.to_real(dtype)
            for slot in self._slots_for(group, shape, dtype):
                slot_shape, slot_dtype = self._slot_layout(slot, shape, dtype)
                if slot in start:  # a complex parameter's eager slot: its pairs of reals
                    value = np.asarray(_real_pairs(start[slot].numpy()), slot_dtype)
                else:
                    value = np.full(slot_shape, self._slot_init(group, slot), slot_dtype)
                state[slot] = Variable(value, trainable=False, graph=graph,
                                       name=f"{var.name}/{self.slot_prefix}{slot}")  # fmt: skip
            if owner is not None:  # every graph of this Parameter (each kn.compile trace)
                boxes = self.__dict__.setdefault("_boxes", {}).setdefault(owner, {})
                for key, slot_var in state.items():  # goes on from the same slot values
                    box = boxes.get(key)
                    fits = box is not None and np.shape(box[0]) == tuple(slot_var.shape)
                    share(slot_var, box if fits else boxes.setdefault(key, [slot_var._value]))
            self._state[var] = state
        return state

    def apply_gradients(self, grads_and_vars, extra_updates=(), skip=None) -> Symbol:
        """A train op: fetching it applies every update (parameters, slots, step counts and
        `extra_updates`) after the run's outputs, all or nothing; the fetch returns None.
        `skip` (a bool Symbol): where it is true at run time, every value this step would
        change keeps its value (GradScaler's step skipped after an inf or NaN gradient)."""
        self._opt_called = True  # the step a scheduler's step() should follow
        assigns = []

        def apply(op, target, value, kept=None):
            if skip is not None:
                value = F.where(skip, target if kept is None else kept, value)
            return _apply(op, target, value)

        for g, var in grads_and_vars:
            if g is None:
                continue
            index, group = self._group_of(var)
            options = self._graph_options(index, group, var.graph)
            state = self._slots_of(var, group)
            step = state["step"] + 1
            slots = {name: state[name] for name in self._slot_names(group) if name in state}
            now = graph_step.current(var)  # as traced code left it (`p.data.clamp_` first)
            if var.dtype.kind == "c":  # PyTorch's: a complex parameter is a pair of reals
                pair, pair_g = F.view_as_real(now), F.view_as_real(g)
                new_pair, new_slots = self._update(pair, pair_g, slots, step, options)
                new_param = F.view_as_complex(new_pair)
            else:
                new_param, new_slots = self._update(now, g, slots, step, options)
            if isinstance(var, Variable):
                assigns.append(apply("assign", var, new_param, now))
            else:  # a captured plain leaf's placeholder: changed in place, written back
                if skip is not None:
                    new_param = F.where(skip, now, new_param)
                graph_step.step_leaf(var, new_param)
            assigns.extend(apply("assign", state[k], v) for k, v in new_slots.items())
            assigns.append(apply("assign", state["step"], step))
        if not assigns:
            raise GraphError("apply_gradients: no gradients provided for any variable")
        assigns.extend(extra_updates)
        return bind_graph(REGISTRY["group"], tuple(assigns), {}, name="train_op")

    def minimize(self, loss, var_list=None) -> Symbol:
        """The train op that takes one step on `loss`: `sess.run([loss, train_op], feed)`.

        Inside a `kiln.distributed` process group, the gradients are averaged over the ranks
        first (bucketed all-reduce nodes, see `kiln.distributed.graph`). It also applies the
        buffer updates (BatchNorm running statistics) of the module calls that `loss` depends
        on."""
        grads_and_vars = _average_over_ranks(self.compute_gradients(loss, var_list))
        return self.apply_gradients(grads_and_vars, pending_updates(loss))

    # -- state_dict --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """PyTorch's structure: `{'state': {index: {'step': tensor, slot: tensor}},
        'param_groups': [{option: value, 'params': [index, ...]}]}`, indices counting the
        params of every group in order. The tensors are copies.

        >>> import kiln as kn
        >>> w = kn.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = kn.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward(); opt.step()
        >>> sd = opt.state_dict()
        >>> sd["state"]  # PyTorch's SGD keeps no step count
        {0: {'momentum_buffer': tensor([2., 4.])}}
        >>> sd["param_groups"][0]["params"], sd["param_groups"][0]["lr"]
        ([0], 0.1)
        """
        from .state import export_state

        return self._state_dict_with_hooks(lambda: export_state(self))

    def load_state_dict(self, state_dict: dict) -> None:
        """Sets the state and the groups' options from `state_dict` (from `state_dict()`,
        here or in another process). Checked first: on error nothing changes."""
        from .state import import_state

        self._load_with_hooks(state_dict, lambda state: import_state(self, state))

    def __repr__(self):
        """PyTorch's: each group's options, sorted by name.

        >>> import kiln as kn
        >>> print(kn.optim.Adagrad([kn.zeros(2, requires_grad=True)], lr=0.5, foreach=False))
        Adagrad (
        Parameter Group 0
            differentiable: False
            eps: 1e-10
            foreach: False
            fused: None
            initial_accumulator_value: 0
            lr: 0.5
            lr_decay: 0
            maximize: False
            weight_decay: 0
        )
        """
        text = f"{type(self).__name__} ("
        for i, group in enumerate(self.param_groups):  # (a blank line between groups)
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
        return text + ")"


def _write_slots(state: dict, count: int, new_slots: dict, site: str | None = None) -> None:
    """A step's new slots into `state`: into its Tensors in place where they fit (on the
    CPU), as PyTorch's steps write theirs, so a Tensor of `opt.state[p]` held across steps
    follows them; else as new Tensors. `site`: the step's line (`overwrite`'s)."""
    state["step"] = count
    for key, value in new_slots.items():
        old = state.get(key)
        if (
            type(old) is Tensor
            and type(value) is Tensor
            and old._device == "cpu"
            and value._device == "cpu"
            and old._data.shape == value._data.shape
            and old._data.dtype == value._data.dtype
        ):
            overwrite(old, value, site=site)
        else:
            state[key] = value


def _average_over_ranks(grads_and_vars) -> list:
    """The one distributed hook of graph-mode training: `kiln.distributed.graph`."""
    from ..distributed.graph import average_gradients  # NOTE: lazy, distributed sits above

    return average_gradients(grads_and_vars)


def _adam_family() -> tuple:
    from .algorithms import Adam

    return (Adam,)
