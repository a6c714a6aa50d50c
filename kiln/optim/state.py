"""An optimizer's `state_dict` and `load_state_dict`, in PyTorch's structure, for eager state
(Tensors keyed by the parameter) and graph state (Variables keyed by the graph Variable)."""

from __future__ import annotations

import contextlib
from collections import defaultdict

import numpy as np

from .. import dtypes as dt
from ..checkpoint import as_numpy
from ..eager import no_grad
from ..eager.tensor import Tensor, make
from ..errors import ArgumentError, ArgumentTypeError, UsageError
from ..graph.core import Symbol, Variable
from ..nn.module import Parameter

__all__ = ["export_state", "import_state", "swap_in_optimizer_params_and_state"]


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
        state = {k: (int(v.numpy()) if k == "step" else v.numpy()) for k, v in graph.items()}
        if p.dtype.kind == "c":  # slots of its pairs of reals: PyTorch's complex layout
            pairs = ((*p.shape, 2), dt.to_real(p.dtype))
            for k, v in state.items():
                if k != "step" and (v.shape, v.dtype) == pairs:
                    state[k] = np.ascontiguousarray(v).view(np.dtype(p.dtype))[..., 0]
        return state
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
        if dtype.kind == "c" and array.dtype.kind == "f" and array.shape == (*shape, 2):
            # kiln's earlier layout of a complex parameter's slot: its pairs of reals
            array = np.ascontiguousarray(array, dt.to_real(dtype)).view(dtype)[..., 0]
        if array.shape != shape:
            raise ArgumentError(
                f"{type(opt).__name__}.load_state_dict: state {key!r} of parameter {index} has "
                f"shape {array.shape}, it needs {shape} (the parameter has {tuple(p.shape)}); "
                "nothing was changed"
            )
        if name in opt.scalar_slots and np.dtype(p.dtype).kind == "f":
            dtype = np.dtype(p.dtype)  # PyTorch's load: a float parameter's dtype
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
        _write_boxes(opt, t, group, step, slots)
    _write_vars(opt, p, group, step, slots)


def _write_vars(opt, p, group, step: int, slots: dict) -> None:
    """Sets the state of `p`'s graph Variables (a slot not in `slots`: its first value)."""
    for var in _graph_vars(opt, p):
        state = opt._slots_of(var, group)
        state["step"].assign(np.int64(step))
        pairs = tuple(var.shape), var.dtype
        if var.dtype.kind == "c":  # its slots are those of its pairs of reals
            pairs = (*var.shape, 2), dt.to_real(var.dtype)
        for name in opt._slots_for(group, *pairs):
            shape, dtype = opt._slot_layout(name, *pairs)
            value = slots.get(name, np.full(shape, opt._slot_init(group, name), dtype))
            if name in opt.scalar_slots:  # a graph step keeps its float32 layout
                value = np.asarray(value, dtype)
            if value.dtype.kind == "c":  # PyTorch's layout: the pairs of reals it holds
                value = np.ascontiguousarray(value)[..., None].view(dtype)
            state[name].assign(value)


def _write_boxes(opt, t, group, step: int, slots: dict) -> None:
    """The values the kn.compile traces of Parameter `t` share (`Optimizer._slots_of`), in
    place: its next compiled step continues from the loaded state too."""
    boxes = opt.__dict__.get("_boxes", {}).get(t)
    if not boxes or t.device != "cpu":
        return
    for key, box in boxes.items():
        if key == "step":
            box[0][...] = step
            continue
        value = slots.get(key)
        if value is None:  # not saved: it starts afresh
            value = np.full(box[0].shape, opt._slot_init(group, key), box[0].dtype)
        value = np.asarray(value)
        box[0][...] = value if value.dtype.kind != "c" else _pairs(value)


def _pairs(value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(value)[..., None].view(dt.to_real(value.dtype))


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


def _reorder(group: dict, saved_group: dict) -> None:
    """`group`'s keys in `saved_group`'s order (`'params'` last, as state_dict saves it), its
    other keys after them: PyTorch's group after a load is the saved one, its params put in.
    In place, past the group's option hooks (the values are already set)."""
    order = [k for k in saved_group if k in group] + [k for k in group if k not in saved_group]
    items = [(k, dict.__getitem__(group, k)) for k in order]
    dict.clear(group)
    for key, value in items:
        dict.__setitem__(group, key, value)


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
        _reorder(group, saved_group)
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


def _swap_error(message: str) -> UsageError:
    return UsageError(f"swap_in_optimizer_params_and_state requires {message}")


def _swap_groups(optimizer, parameters: dict, state_dict) -> tuple[dict, list]:
    """(the swap-in state by packed id, [(live group, swap-in group, its params)]), with
    PyTorch's checks."""
    if not optimizer.state:
        raise _swap_error("initialized optimizer state.")
    if not isinstance(state_dict, dict):
        raise _swap_error("a DCP-style optimizer state_dict.")
    state, groups = state_dict.get("state"), state_dict.get("param_groups")
    if not isinstance(state, dict) or any(not isinstance(v, dict) for v in state.values()):
        raise _swap_error("swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                          "to per-param state dicts.")  # fmt: skip
    if not isinstance(groups, list) or len(groups) != len(optimizer.param_groups):
        raise _swap_error("swapin_optim_state['param_groups'] to be a list of one param-group "
                          "dict per group of the live optimizer.")  # fmt: skip
    flat, offset, seen, found = list(parameters.values()), 0, set(), []
    for index, (group, saved) in enumerate(zip(optimizer.param_groups, groups)):
        ids = saved.get("params") if isinstance(saved, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise _swap_error("optimizer.state_dict()-style param_groups[*]['params'] entries "
                              "keyed by packed parameter ids.")  # fmt: skip
        if len(ids) != len(group["params"]) or offset + len(ids) > len(flat):
            raise _swap_error(f"param group {index} to have as many params as the live one.")
        if set(saved) != set(group):
            raise _swap_error(f"the param group keys of group {index} to match the live "
                              f"group's: {sorted(set(saved) ^ set(group))} differ.")  # fmt: skip
        seen.update(ids)
        found.append((group, saved, flat[offset : offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise _swap_error(f"swapin_optim_state['state'] keyed only by packed parameter ids "
                          f"from param_groups[*]['params']; got extra keys {extra!r}.")  # fmt: skip
    return state, found


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state):
    """Within the block, `optimizer` works on `swapin_parameters` (tensors in the order of
    its params, as `model.named_parameters()` gives them) and the state and group options of
    `swapin_optim_state` (a `state_dict()`-shaped dict); on leaving, the optimizer's own
    params, options and state are back, as PyTorch's context manager of that name. A
    `step()` inside changes the swap-in parameters in place, and the state's tensors too
    (their new values are written into them on leaving, 'step' counts included).

    >>> import kiln as kn
    >>> w = kn.tensor([1.0], requires_grad=True)
    >>> opt = kn.optim.SGD([w], lr=0.5, momentum=0.9)
    >>> (w * w).sum().backward(); opt.step()
    >>> other = kn.tensor([4.0], requires_grad=True)
    >>> other.grad = kn.tensor([1.0])
    >>> sd = opt.state_dict()
    >>> with kn.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, sd):
    ...     opt.step()
    >>> other, sd["state"][0]["momentum_buffer"], w  # 0.9 * 2 + 1; w as it was
    (tensor([2.6000], requires_grad=True), tensor([2.8000]), tensor([0.], requires_grad=True))
    """
    state, groups = _swap_groups(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer._state
    snapshots = [dict(group) for group in optimizer.param_groups]
    swapped, where = defaultdict(dict), []
    for group, saved, params in groups:
        group["params"] = params
        group.update((k, v) for k, v in saved.items() if k != "params")
        for p, pid in zip(params, saved["params"]):
            entry = state.get(pid, {})
            if optimizer.custom:
                swapped[p] = dict(entry)
            elif entry:
                step, slots = _checked_entry(optimizer, pid, p, entry)
                swapped[p] = {"step": step, **{k: make(v) for k, v in slots.items()}}
            where.append((p, entry))
    optimizer.__dict__["_state"] = swapped
    try:
        yield
    finally:
        if not optimizer.custom:  # the new values into the swap-in state's tensors
            kiln_names = {v: k for k, v in optimizer.torch_slot_names.items()}
            for p, entry in where:
                new = swapped.get(p, {})
                for key, value in entry.items():
                    name = "step" if key == "step" else kiln_names.get(key, key)
                    if isinstance(value, Tensor) and name in new:
                        with no_grad():
                            value.copy_(make(np.asarray(as_numpy(new[name]), value.dtype)))
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)  # graph-mode options' Variables too
        optimizer.__dict__["_state"] = original_state
