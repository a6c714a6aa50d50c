"""`optimizer.state` of a built-in optimizer as PyTorch shows it: keyed by the parameter, each
entry with PyTorch's names (`momentum_buffer`, `exp_avg`, ...) and value types (`step` a 0-d
float Tensor, or absent where PyTorch's optimizer keeps none), over kiln's own state.

kiln keeps a parameter's state as `{'step': int, slot: Tensor}` under its slot names, shared
with the parameter's kn.compile traces through boxes (`Optimizer._slots_of`) and with its
graph-mode Variables. Reads here take the values the last step left, eager or compiled
(`_from_traces`); writes go into the eager state, the boxes and the Variables at once, so the
next step, eager or compiled, starts from them."""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np

from .. import dtypes as dt
from ..checkpoint import as_numpy
from ..eager.tensor import Tensor, make
from ..errors import ShapeError
from ..graph.core import Variable
from ..nn.parameter import owner_of

__all__ = ["OptimizerState", "ParamState"]


def _step_dtype():
    """PyTorch's dtype of a `step` count: float64 under a float64 default dtype, else float32."""
    return np.float64 if dt.get_default_dtype() == np.float64 else np.float32


def _group_of(opt, p):
    for group in opt.param_groups:
        if any(q is p for q in group["params"]):
            return group
    return opt.param_groups[0]


def _is_param(opt, p) -> bool:
    return isinstance(p, Tensor) and any(q is p for g in opt.param_groups for q in g["params"])


class ParamState(MutableMapping):
    """`opt.state[p]`: parameter `p`'s state with PyTorch's keys, in PyTorch's order. Slots
    are the Tensors the next step reads, so `state['exp_avg'].zero_()` reaches it; a held
    Tensor follows later eager steps (they write in place), not compiled ones (read it
    again). `step` is a 0-d float Tensor made on each read: set it by assignment
    (`state['step'] = kn.tensor(0.0)`, or `+=`).

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> state = opt.state[w]
    >>> list(state), state["step"]
    (['step', 'exp_avg', 'exp_avg_sq'], tensor(1.))
    >>> _ = state["exp_avg"].zero_(); opt.state[w]["exp_avg"]
    tensor([0., 0.])
    """

    __slots__ = ("_opt", "_p")

    def __init__(self, opt, p):
        self._opt, self._p = opt, p

    def _raw(self) -> dict:
        """kiln's state of the parameter as its last step left it (an empty dict if none)."""
        self._opt._from_traces(self._p)
        return self._opt._state.get(self._p) or {}

    def _kiln_name(self, key):
        """kiln's name of PyTorch's state `key`; None where PyTorch's optimizer keeps no such
        state (SGD's `step`, or kiln's own name of a slot PyTorch names otherwise)."""
        opt = self._opt
        if key == "step":
            return "step" if opt.saves_step else None
        if key in opt.torch_slot_names:
            return None
        return {v: k for k, v in opt.torch_slot_names.items()}.get(key, key)

    def _keys(self, raw: dict) -> list:
        names, order = (
            self._opt.torch_slot_names,
            self._opt._slot_names(_group_of(self._opt, self._p)),
        )
        keys = ["step"] if self._opt.saves_step and "step" in raw else []
        slots = [k for k in order if k in raw] + [k for k in raw if k not in order and k != "step"]
        return keys + [names.get(k, k) for k in slots]

    def __iter__(self):
        return iter(self._keys(self._raw()))

    def __len__(self) -> int:
        return len(self._keys(self._raw()))

    def __contains__(self, key) -> bool:
        return key in self._keys(self._raw())

    def __getitem__(self, key):
        raw, name = self._raw(), self._kiln_name(key)
        if name is None or name not in raw:
            raise KeyError(key)
        if name == "step":
            return make(np.array(float(raw["step"]), _step_dtype()))
        return raw[name]

    def __setitem__(self, key, value) -> None:
        name = self._kiln_name(key)
        if name is None:
            raise KeyError(
                f"{type(self._opt).__name__}'s state has no {key!r} (PyTorch's has none either)"
            )
        if value is None:  # PyTorch's SGD: a None momentum_buffer starts afresh
            self.pop(key, None)
            return
        raw = self._opt._state.setdefault(self._p, self._raw())
        if name == "step":
            raw["step"] = int(round(float(as_numpy(value))))
        else:
            raw[name] = self._slot_value(name, key, value)
        self._push()

    def __delitem__(self, key) -> None:
        raw, name = self._raw(), self._kiln_name(key)
        if name is None or name not in raw:
            raise KeyError(key)
        del raw[name]
        if not self._opt.saves_step and "step" in raw:
            raw["step"] = 0  # SGD: a new buffer is the gradient itself, as at the first step
        self._push()

    def _slot_value(self, name: str, key, value):
        """`value` as slot `name` of the parameter: the Tensor itself where it fits (its
        later eager steps write into it), else a copy in the slot's dtype."""
        p = self._p
        layout = self._opt._slot_layout(name, tuple(p.shape), p.dtype)
        if layout is None:  # a value of the user's own: kept as it is, as PyTorch keeps it
            return value
        shape, dtype = layout
        if isinstance(value, Tensor) and not value.requires_grad:
            if (tuple(value.shape), value.dtype, value.device) == (shape, dtype, p.device):
                return value
        array = as_numpy(value)
        if tuple(array.shape) != shape:
            raise ShapeError(
                f"{type(self._opt).__name__}.state[p][{key!r}] = a value of shape "
                f"{tuple(array.shape)}: the parameter ({tuple(p.shape)}, {p.dtype}) keeps it "
                f"as {shape}"
            )
        return make(np.array(array, dtype, copy=True)).to(p.device)

    def _push(self) -> None:
        """The eager state into the boxes of the parameter's compiled steps and into its
        graph Variables (a slot not kept starts from its first value there)."""
        from .state import _graph_vars, _write_boxes, _write_vars

        opt, p = self._opt, self._p
        raw, group = opt._state.get(p, {}), _group_of(opt, p)
        step = int(raw.get("step", 0))
        slots = {k: as_numpy(v) for k, v in raw.items()
                 if k != "step" and isinstance(v, Tensor)}  # fmt: skip
        _write_boxes(opt, p, group, step, slots)
        if _graph_vars(opt, p):
            _write_vars(opt, p, group, step, slots)
        opt._from_traces(p)

    def clear(self) -> None:
        """No state: the next step starts afresh, as after PyTorch's `state[p].clear()`."""
        self._opt._state.pop(self._p, None)
        self._push()

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __eq__(self, other) -> bool:
        return dict(self.items()) == other

    __hash__ = None


class OptimizerState(MutableMapping):
    """`opt.state` of a built-in optimizer: {parameter: ParamState}, as PyTorch's
    `defaultdict(dict)` (a key that is none of the optimizer's parameters gets a plain dict).
    `del opt.state[p]` or `opt.state.clear()` start the state afresh.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = kn.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step()
    >>> opt.state[w]
    {'momentum_buffer': tensor([ 2., -4.])}
    """

    __slots__ = ("_opt",)

    def __init__(self, opt):
        self._opt = opt

    def __getitem__(self, p):
        if _is_param(self._opt, p):
            return ParamState(self._opt, p)
        return self._opt._state[p]  # a graph Variable's, or a key of the user's own

    def __setitem__(self, p, entry) -> None:
        if not _is_param(self._opt, p):
            self._opt._state[p] = entry
            return
        view = ParamState(self._opt, p)
        self._opt._state.pop(p, None)
        entry = dict(entry)
        if "step" in entry and self._opt.saves_step:  # first: a slot's push reads it
            view["step"] = entry.pop("step")
        for key, value in entry.items():
            view[key] = value
        if not entry:
            view.clear()

    def __delitem__(self, p) -> None:
        if _is_param(self._opt, p):
            if p not in self._opt._state:
                raise KeyError(p)
            ParamState(self._opt, p).clear()
            return
        del self._opt._state[p]

    def _keys(self) -> list:
        """The keys of `opt._state` but the Variables of the parameters' traces and graphs
        (their state is the parameter's)."""
        return [
            k for k in self._opt._state if not (isinstance(k, Variable) and owner_of(k) is not None)
        ]

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __contains__(self, p) -> bool:
        return p in self._opt._state

    def __repr__(self) -> str:
        return repr(dict(self.items()))
