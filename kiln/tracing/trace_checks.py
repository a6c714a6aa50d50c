"""What `kn.compile` checks and puts back around a trace of a function: the tensors it
captures that the trace changed (`check_untouched`), the host random generators it drew from
(`check_no_host_draws`), the optimizer options a scheduler it steps changed (`group_changes`),
new entries of its Python state that keep traced tensors (`check_new_entries`), and, when a
trace fails, what it changed of all that (`undo`). `Captures` (guards.py) finds the sources.
"""

from __future__ import annotations

import random

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..eager.tensor import Tensor, describe
from ..errors import GraphError
from ..frontend.functionalize import keeps_history
from ..generator import default_generator
from ..ops.random import _source, _state
from ..optim.graph_step import LeafAt
from .guards import _EMPTY, Captures, put

__all__ = ["check_changed_grads", "check_grad_leaf", "check_new_entries", "check_no_host_draws",
           "check_untouched", "grad_owner", "group_changes", "host_random_states",
           "restore_seed_stream",
           "tensor_versions", "undo"]  # fmt: skip


def tensor_versions(captures: Captures, stored: bool = False) -> list:
    """(label, tensor, version, its `.grad`, a copy of each value) of each captured tensor
    (`stored`: and of those in the places the traces store in): what `check_untouched`
    compares after tracing (and restores), and `undo` puts back after a failed trace."""
    found = []
    for label, get in (*captures.tensors, *(captures.stored if stored else ())):
        t = get()
        if isinstance(t, Tensor):
            grad = t._grad
            saved = (t._data.copy(), None if grad is None else (grad._version, grad._data.copy()))
            found.append((label, t, t._version, grad, saved))
    return found


def group_changes(groups: list) -> list:
    """(label, place, value before, value now) of each param group option that changed
    since `Captures.group_options` gave `groups`, as `Captures.changes` gives them."""
    found = []
    for group, old in groups:
        for k, v in group.items():
            was = old.get(k, _EMPTY)
            if k != "params" and was is not v and (type(was) is not type(v) or was != v):
                found.append((f"param_groups[...][{k!r}]", (group, k), was, v))
    return found


def undo(captures: Captures, values: tuple, tensors: list, keys: list = ()) -> None:
    """Puts back what a trace that failed changed of the Python values and the tensors that
    `fn` captures (`values`: `captures.values()` before it; `tensors`: `tensor_versions`;
    `keys`: `Captures.container_keys`, whose new entries go), so a call that raises leaves
    them as they were."""
    for _, place, old, _ in captures.changes(values):
        put(place, old)
    for _, t, version, grad, (data, grad_saved) in tensors:
        if t._version != version and t._data.shape == data.shape:
            t._data[...] = data
        if t._grad is not grad or grad is not None and grad._version != grad_saved[0]:
            t._grad = grad
            if grad is not None and grad._data.shape == grad_saved[1].shape:
                grad._data[...] = grad_saved[1]
    for container, old in keys:
        if isinstance(container, dict):
            for k in [k for k in container if k not in old]:
                del container[k]
        elif isinstance(container, list):
            del container[old:]


def check_new_entries(before, after, values, tensors, keys) -> str | None:
    """The label of a new entry of containers the function captures (`after`: what it
    reaches after the trace; `before`: before it) that holds a tensor the trace made and
    changed in place with traced values (a hand-written optimizer's `self.state[p]["buf"]`),
    or None. No compiled call would store that buffer's values there, where eager code keeps
    them: such a call runs eagerly instead (as torch.compile breaks its graph there), so what
    the trace changed is put back first (`undo`; the new entries removed)."""
    known = {id(get()) for _, get in (*before.tensors, *before.stored)}
    for label, get in (*after.tensors, *after.stored):
        t = get()
        if isinstance(t, Tensor) and id(t) not in known and t._version > 0:
            undo(before, values, tensors, keys)
            return label
    return None


def check_untouched(fn_name: str, before: list) -> None:
    """Refuses a trace during which `fn_name` changed a tensor it captured (in place, or its
    `.grad` by a backward() on eager values): that eager code ran once, while tracing, and
    the compiled calls would not repeat it, where eager code changes the tensor each call.

    >>> import kiln as kn
    >>> c = kn.zeros(1)
    >>> before = [("c", c, c._version, None, (c._data.copy(), None))]
    >>> _ = c.add_(1)
    >>> check_untouched("f", before)
    Traceback (most recent call last):
    kiln.errors.GraphError: kn.compile: f changed the tensor 'c' it captures in place ...
    >>> c.tolist()  # as it was: the refused trace changed nothing
    [0.0]
    """
    for label, changed, version, grad, (data, grad_saved) in before:
        now = changed._grad
        if changed._version != version:
            what = "in place"
        elif now is not grad or (now is not None and now._version != grad_saved[0]):
            what = "through its .grad (a backward() of values computed from captured tensors)"
        else:
            continue
        for _, t, _, grad, (data, grad_saved) in before:  # as before the trace
            t._data[...] = data
            t.grad = grad
            if grad is not None:
                grad._data[...] = grad_saved[1]
        error = GraphError(
            f"kn.compile: {fn_name} changed the tensor '{label}' it captures {what} while it "
            "was traced: that ran once, when tracing, and the compiled calls would not do it "
            "again as each eager call does. Pass the tensor as an argument (a compiled call "
            "writes the changes of its arguments back), keep it as a Module buffer or "
            "parameter, or call the function uncompiled"
        )
        if what == "in place":
            error.written = changed  # (kn.compile takes it as an input and traces again)
        raise error


def _generator_state(g):
    if isinstance(g, random.Random):
        return g.getstate()
    if isinstance(g, np.random.Generator):
        return g.bit_generator.state
    return g.get_state(legacy=False)


def _set_generator_state(g, state) -> None:
    if isinstance(g, random.Random):
        g.setstate(state)
    elif isinstance(g, np.random.Generator):
        g.bit_generator.state = state
    else:
        g.set_state(state)


def _same_state(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def host_random_states(captures=None) -> tuple:
    """Python's and NumPy's global random states, and those of the generators `captures`
    (a `Captures`) found (`random.Random`, NumPy's `Generator` and `RandomState`), before a
    trace (see `check_no_host_draws`)."""
    found = [] if captures is None else captures.generators
    return (random.getstate(), np.random.get_state(),
            [(label, g, _generator_state(g)) for label, g in found],
            (_source.host_draws, dict(_state), default_generator.get_state()))  # fmt: skip


def restore_seed_stream(before: tuple) -> None:
    """Puts kiln's seed stream back as `host_random_states` found it (`before`): the seeds
    a discarded trace took are taken again by what runs instead.

    >>> import kiln as kn
    >>> from kiln.ops.random import next_seed
    >>> before = host_random_states(); first = next_seed()
    >>> restore_seed_stream(before); next_seed() == first
    True
    """
    _state.update(before[3][1])
    default_generator.set_state(before[3][2])


def check_no_host_draws(fn_name: str, before: tuple) -> None:
    """Refuses a trace during which `fn_name` drew from Python's `random` module, NumPy's
    global generator or on the host from kiln's seed stream (kn.nn.init: `host_seed`): the
    draws ran once, when tracing, and would be constants of the compiled program, the same
    every call, where eager code draws afresh (torch.compile replays them). The generators
    (and kiln's seed stream) are put back as they were before the trace.

    >>> import random
    >>> before = host_random_states()
    >>> _ = random.random()
    >>> check_no_host_draws("f", before)
    Traceback (most recent call last):
    kiln.errors.GraphError: kn.compile: f drew from Python's random module while it was ...
    >>> random.getstate() == before[0]
    True
    """
    python, numpy, generators, host_draws = before
    now = np.random.get_state()
    drew = [name for name, changed in (
        ("Python's random module", random.getstate() != python),
        ("NumPy's global random generator",
         now[2:] != numpy[2:] or not np.array_equal(now[1], numpy[1])),
        ("kiln's host draws or seeding (kn.nn.init, Tensor.random_, kn.manual_seed, a "
         "module made inside the function)",
         _source.host_draws != host_draws[0]),
    ) if changed]  # fmt: skip
    drew += [f"the generator '{label}' ({type(g).__name__})" for label, g, state in generators
             if not _same_state(_generator_state(g), state)]  # fmt: skip
    if not drew:
        return
    random.setstate(python)
    np.random.set_state(numpy)
    for _, g, state in generators:
        _set_generator_state(g, state)
    restore_seed_stream(before)  # (as eager code finds it)
    raise GraphError(
        f"kn.compile: {fn_name} drew from {' and '.join(drew)} while it was traced "
        "(random.randint, random.random, np.random.rand, ...): a compiled program would "
        "repeat those numbers every call, where eager code draws new ones each call. To "
        "compile it, draw them outside the function and pass them in (a Python number "
        "argument is static: one trace per value; a tensor argument is not), or use kiln's "
        "random functions (kn.rand, kn.randint, kn.randn: drawn afresh each call)."
    )


def check_changed_grads(fn_name: str, changed, marked: set) -> None:
    """Refuses a trace that changed an argument, a captured tensor it takes as an input or a
    module's buffer (`changed`: (name, new value, the placeholder or None)) in place with a
    value that requires grad (`marked`: the ids of such values): eager code gives the tensor
    that value's history (its grad_fn), which a compiled call cannot give a tensor it
    writes. A tensor changed only under no_grad (`img.clamp_(0, 1)`: `keeps_history`)
    keeps its own history, as in eager code, and is taken."""
    for path, value, placeholder in changed:
        if placeholder is not None and keeps_history(value, placeholder):
            continue  # (changes under no_grad: the tensor keeps its own history)
        if id(value) in marked:
            raise GraphError(
                f"kn.compile: {fn_name} changes '{path}' "
                f"({dt.short_name(value.dtype)}{sh.format_shape(value.shape)}) in "
                f"place at {value.site} with a value that requires grad: eager code gives "
                "the tensor that value's history (its grad_fn), which a compiled call "
                "cannot give a tensor it writes into; return the value instead, or change "
                "the tensor under kn.no_grad()"
            )


def grad_owner(owner, leaves):
    """The tensor whose `.grad` a call reads or sets: a Parameter, or the call's own input
    tensor at a `LeafAt` place."""
    return owner.of(leaves) if isinstance(owner, LeafAt) else owner


def check_grad_leaf(name: str, path: str, x) -> None:
    """Refuses a call whose input `x` at `path` is no leaf tensor that requires grad, where
    the program reads and sets its `.grad` (the traced one was)."""
    if not (isinstance(x, Tensor) and x.is_leaf and x._requires_grad):
        raise GraphError(
            f"kn.compile: {name} uses the .grad of its input '{path}', which this call gives "
            f"as {describe(x) if isinstance(x, Tensor) else type(x).__name__}: not a leaf "
            "tensor that requires grad, as when it was traced"
        )
