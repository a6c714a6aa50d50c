"""An optimizer's `state_dict` and `load_state_dict`, in PyTorch's structure, for eager state
(Tensors keyed by the parameter) and graph state (Variables keyed by the graph Variable)."""

from __future__ import annotations

import numpy as np

from ..checkpoint import as_numpy
from ..eager.tensor import Tensor, make
from ..errors import ArgumentError, ArgumentTypeError
from ..graph.core import Symbol, Variable
from ..nn.module import Parameter

__all__ = ["export_state", "import_state"]


def _graph_state(opt, p):
    """The state of `p`'s graph Variable: the one used last, else any; None if none."""
    if isinstance(p, Variable):
        return opt._state.get(p)
    if isinstance(p, Parameter):
        last = p.__dict__.get("_last")
        for var in [last, *p._vars.values()]:
            if var is not None and var in opt._state:
                return opt._state[var]
    return None


def _state_of(opt, p) -> dict | None:
    """{'step': int, slot: array} of parameter `p`, or None if it has no state yet."""
    graph = _graph_state(opt, p)
    if graph is not None:
        return {k: (int(v.numpy()) if k == "step" else v.numpy()) for k, v in graph.items()}
    eager = opt._state.get(p)
    if eager is None:
        return None
    return {k: (v if k == "step" else as_numpy(v)) for k, v in eager.items()}


def _copy(value):
    """A state value as `state_dict` gives it: Tensors copied, the rest as they are."""
    return value.detach().clone() if isinstance(value, Tensor) else value


def export_state(opt) -> dict:
    names = opt.torch_slot_names
    state, groups, index = {}, [], 0
    for group in opt.param_groups:
        ids = []
        for p in group["params"]:
            if opt.custom:  # a PyTorch-style step(): its state as it keeps it
                if opt._state.get(p):
                    state[index] = {k: _copy(v) for k, v in opt._state[p].items()}
                ids.append(index)
                index += 1
                continue
            entry = _state_of(opt, p)
            if entry is not None:
                step = entry.pop("step")
                out = {"step": make(np.array(float(step), np.float32))} if opt.saves_step else {}
                order = [k for k in opt._slot_names(group) if k in entry]  # PyTorch's order
                out.update((names.get(k, k), make(np.array(entry[k], copy=True)))
                           for k in order + [k for k in entry if k not in order])  # fmt: skip
                if out:  # an SGD without momentum keeps nothing
                    state[index] = out
            ids.append(index)
            index += 1
        options = {k: v for k, v in group.items() if k != "params"}
        symbolic = [k for k, v in options.items() if isinstance(v, Symbol)]
        if symbolic:
            raise ArgumentTypeError(
                f"{type(opt).__name__}.state_dict: options {symbolic} are graph values (Symbols), "
                "which have no value to save; give numbers (a scheduler can change them)"
            )
        groups.append({**options, "params": ids})
    return {"state": state, "param_groups": groups}


def _params_by_index(opt, groups) -> dict:
    """{saved index: (parameter, its group)}, the groups matched by position."""
    if len(groups) != len(opt.param_groups):
        raise ArgumentError("loaded state dict has a different number of parameter groups")
    by_index = {}
    for saved, group in zip(groups, opt.param_groups):
        if len(saved["params"]) != len(group["params"]):
            raise ArgumentError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        by_index.update((int(i), (p, group)) for i, p in zip(saved["params"], group["params"]))
    return by_index


def _checked_entry(opt, index: int, p, entry: dict) -> tuple[int, dict]:
    """(step count, {kiln slot name: array in p's dtype}), shapes checked."""
    kiln_names = {v: k for k, v in opt.torch_slot_names.items()}
    slots, step = {}, None
    for key, value in entry.items():
        if value is None:
            continue
        array = as_numpy(value)
        if key == "step":
            step = int(round(float(array)))
            continue
        name = kiln_names.get(key, key)
        layout = opt._slot_layout(name, tuple(p.shape), p.dtype)
        if layout is None:
            raise ArgumentError(
                f"{type(opt).__name__}.load_state_dict: parameter {index} "
                f"({tuple(p.shape)}) keeps no state {key!r}; nothing was changed"
            )
        shape, dtype = layout
        if array.shape != shape:
            raise ArgumentError(
                f"{type(opt).__name__}.load_state_dict: state {key!r} of parameter {index} has "
                f"shape {array.shape}, it needs {shape} (the parameter has {tuple(p.shape)}); "
                "nothing was changed"
            )
        slots[name] = np.asarray(array, dtype=dtype)
    if step is None:  # PyTorch's SGD keeps no step: a saved buffer means steps were taken
        step = 1 if slots else 0
    return step, slots


def _graph_vars(opt, p) -> list:
    if isinstance(p, Variable):
        return [p]
    if isinstance(p, Parameter):
        return [v for v in p._vars.values() if v in opt._state]
    return []


def _write(opt, p, group, step: int, slots: dict) -> None:
    """Sets `p`'s eager state (Tensors, Parameters) and its graph state (Variables)."""
    if not isinstance(p, Variable):
        t = p.tensor() if isinstance(p, Parameter) else p
        tensors = {k: make(np.array(v, copy=True)) for k, v in slots.items()}
        if t.device != "cpu":
            tensors = {k: v.to(t.device) for k, v in tensors.items()}
        opt._state[t] = {"step": step, **tensors}
    for var in _graph_vars(opt, p):
        state = opt._slots_of(var, group)
        state["step"].assign(np.int64(step))
        for name in opt._slots_for(group, tuple(var.shape), var.dtype):
            shape, dtype = opt._slot_layout(name, tuple(var.shape), var.dtype)
            init = np.full(shape, opt._slot_init(group, name), dtype)
            state[name].assign(slots.get(name, init))


def _custom_entry(p, entry: dict) -> dict:
    """PyTorch's rule for a loaded state value: Tensors are copied to the parameter's
    device, and floating ones (but 'step') to its dtype; other values stay as they are."""
    out = {}
    for key, value in entry.items():
        if isinstance(value, Tensor):
            value = value.detach().clone().to(p.device)
            if key != "step" and value.is_floating_point() and p.is_floating_point():
                value = value.to(p.dtype)
        out[key] = value
    return out


def import_state(opt, state_dict: dict) -> None:
    groups, saved = state_dict["param_groups"], state_dict["state"]
    by_index = _params_by_index(opt, groups)
    entries = {}
    for key, entry in saved.items():
        index = int(key)
        if index not in by_index:
            raise ArgumentError(
                f"loaded state dict has state for parameter {index}, which no group has"
            )
        if opt.custom:
            entries[index] = _custom_entry(by_index[index][0], entry)
        else:
            entries[index] = _checked_entry(opt, index, by_index[index][0], entry)
    # NOTE: everything is checked; from here on plain writes.
    for saved_group, group in zip(groups, opt.param_groups):
        for key, value in saved_group.items():
            if key != "params":
                default = opt.defaults.get(key)
                group[key] = tuple(value) if isinstance(default, tuple) else value
    for index, (p, group) in by_index.items():
        if opt.custom:
            opt._state.pop(p, None)
            if index in entries:
                opt._state[p] = entries[index]
        elif index in entries:
            _write(opt, p, group, *entries[index])
        else:  # no state saved: it starts afresh, as in PyTorch
            opt._state.pop(p, None)
            if _graph_vars(opt, p):
                _write(opt, p, group, 0, {})
                opt._state.pop(p, None)
