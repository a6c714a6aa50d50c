"""The arguments of a compiled call: checks made before the program runs (their layout,
their memory shared with one another), the write-back of those it changed in place, and
the outputs that are an argument or a view of one, handed back as such (as PyTorch's
compiled functions return them), not as copies."""

from __future__ import annotations

import numpy as np

from ..eager.tensor import Tensor, version_of
from ..errors import KilnError, UsageError, call_error
from ..frontend.functionalize import is_select, strided_view, whole_in_order
from ..frontend.layouts import _layout
from ..ops.core import bind
from ..runtime.backend import get_backend

__all__ = ["add_select_indices", "add_view_bases", "argument_views", "check_arguments_apart",
           "module_outputs",
           "check_own_layout", "clear_grad", "hand_back_views", "output_views", "view_of_argument",
           "write_argument"]  # fmt: skip


def check_own_layout(name: str, path: str, x, offset: bool) -> None:
    """Refuses an argument whose layout the traced function read (`stride()`,
    `is_contiguous()`, `as_strided`) where it is not contiguous, or (`offset`: its storage
    offset read too) not from its storage's start: the compiled program holds only its
    elements, contiguous, so it would answer for that layout and differ from eager mode
    without a word."""
    if isinstance(x, Tensor):  # (a position past its elements fails the trace, loudly)
        own = x.is_contiguous() and (not offset or x.storage_offset() == 0)
    else:
        own = getattr(x, "flags", None) is not None and x.flags.c_contiguous
    if not own:
        where = " from its storage's start" if offset else ""
        raise UsageError(
            f"kn.compile: {name} reads the memory layout of its argument {path} (stride(), "
            "is_contiguous(), storage_offset() or as_strided on it), and this call passes a "
            f"view there ({type(x).__name__} of shape {tuple(x.shape)}, not contiguous{where}): "
            "a compiled function's argument holds only its own elements, contiguous, so the "
            "result would differ from eager mode. Pass a tensor of its own (x.clone()), or "
            "call the function uncompiled"
        )


def _share(xp, a, b) -> bool:
    """Whether arrays `a` and `b` of `xp` have an element in common (where that is too hard
    to tell, or on a GPU, whether their memory blocks meet)."""
    if xp is not np:
        return bool(xp.may_share_memory(a, b))
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True


def _writable(a) -> bool:
    flags = getattr(a, "flags", None)
    return flags is None or getattr(flags, "writeable", True)


def check_arguments_apart(fn_name: str, changed, leaves, paths, xp=np, reads=()) -> None:
    """Refuses a call of the compiled `fn_name`, which changes its arguments at positions
    `changed` in place, where one of those cannot be written (an expanded or read-only
    tensor: PyTorch's refusal, checked before anything changes) or shares memory with
    another argument (the same tensor passed twice, or a view of another): the program
    reads each argument as it was at the call, so it would not see the write through the
    other, as eager code does. `xp`: the array module of the arguments. `reads`: (name,
    Tensor) of the other tensors the program reads (parameters, captured tensors), which
    an argument must not share memory with either, for the same reason.

    >>> import kiln as kn
    >>> x = kn.zeros(2)
    >>> check_arguments_apart("f", [0], [x, x[1:]], ["a", "b"])
    Traceback (most recent call last):
    kiln.errors.UsageError: kn.compile: f changes its argument 'a' in place, and argument 'b' ...
    """
    arrays = [x._data if isinstance(x, Tensor) else x for x in leaves]
    for k in changed:
        a = arrays[k]
        if any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)) or not _writable(a):
            raise call_error(
                UsageError,
                f"kn.compile: {fn_name} changes its argument '{paths[k]}' in place, and "
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location (an expand()ed or read-only tensor). Please "
                "clone() the tensor before performing the operation.",
                "kn.compile", leaves[k],
            )  # fmt: skip
        for j, other in enumerate(arrays):
            if j != k and _share(xp, arrays[k], other):
                raise call_error(
                    UsageError,
                    f"kn.compile: {fn_name} changes its argument '{paths[k]}' in place, and "
                    f"argument '{paths[j]}' shares memory with it (the same tensor twice, or "
                    "a view of it): the compiled program reads each argument as it was at the "
                    "call and would miss the write that eager code sees through the other; "
                    "pass a clone() of one of them",
                    "kn.compile", leaves[k], leaves[j],
                )  # fmt: skip
        for name, t in reads:
            if t is not leaves[k] and _share(xp, arrays[k], t._data):  # (a captured tensor
                # taken as this argument is read through it)
                raise call_error(
                    UsageError,
                    f"kn.compile: {fn_name} changes its argument '{paths[k]}' in place, and "
                    f"it shares memory with '{name}', which the function reads: the compiled "
                    "program reads that as it was at the call and would miss the write that "
                    "eager code sees through the argument; pass a clone() of the argument",
                    "kn.compile", leaves[k], t,
                )  # fmt: skip


def write_argument(target, value) -> None:
    """The new value of an argument the compiled function changed in place, written into
    the caller's tensor (or array), whose version counter then counts the change."""
    if isinstance(target, Tensor):
        xp = get_backend(target._device).xp
        xp.copyto(target._data, value, casting="unsafe")
        version_of(target).value += 1
    else:
        np.copyto(target, value, casting="unsafe")


def clear_grad(target, set_to_none: bool) -> None:
    """The `.grad` of an argument that the traced code's `zero_grad()` cleared, cleared by
    the call as that eager zero_grad() does: set to None, or zeros written into it."""
    if not isinstance(target, Tensor) or target.grad is None:
        return
    if set_to_none:
        target.grad = None
    else:
        target.grad._data[...] = 0
        version_of(target.grad).value += 1


def argument_views(outputs, arguments: dict) -> list:
    """(output index, argument index, the view nodes from the argument to the output, in
    order) for each output that is an argument itself or a chain of single-input view nodes
    (reshape, transpose, basic indexing, detach…) of one. `arguments`: id of a Symbol ->
    its argument's index (an argument changed in place: the Symbol of its new value)."""
    found = []
    for i, out in enumerate(outputs):
        chain, s = [], out
        while id(s) not in arguments and (base := _viewed(s)) is not None:
            chain.append(s.node)
            s = base
        if id(s) in arguments:
            found.append((i, arguments[id(s)], chain[::-1]))
    return found


def add_view_bases(outputs: list, arguments: dict) -> set:
    """Adds to `outputs` (after the returned ones) each value that an output is a chain of
    views of (`_viewed`) and that is neither returned nor an argument: `return y[:, 1],
    y.detach()` hands back two views of one y, as eager code does, not two copies, and
    `return y.expand(4, 3)` a view with y's strides (`output_views` takes them of y).
    Returns the indices of the added values whose every view passes a `detach()`: they need
    no gradient (one would reach the function's inputs, where eager's reaches none)."""
    found, returned = {}, {id(s) for s in outputs}
    for out in list(outputs):
        s, detached, selected = out, False, False
        while id(s) not in arguments and id(s) not in returned - {id(out)}:
            base = _viewed(s)
            if base is None:
                break
            detached = detached or s.node.op.name == "stop_gradient"
            selected = selected or is_select(s)  # (x[i]: one index, not the whole value)
            s = base
        if s is not out and id(s) not in arguments and id(s) not in returned:
            entry = found.setdefault(id(s), [s, True, [], False])
            entry[1] = entry[1] and detached
            entry[2].append(out)
            entry[3] = entry[3] or selected
    # NOTE: one view holding all of its value in order (`return logits.view(n, -1)`) is
    # what a fresh copy is: that value is not added (a call then takes no view, ~6 us)
    found = [(s, detached) for s, detached, views, selected in found.values()
             if len(views) > 1 or selected or not whole_in_order(views[0])]  # fmt: skip
    start = len(outputs)
    outputs.extend(s for s, _ in found)
    return {start + k for k, (_, detached) in enumerate(found) if detached}


def _viewed(s):
    """The value the view s shares its elements with: the input of a single-input view node,
    the input of the `split` that s is a piece of, or the base of an `as_strided` view;
    None for any other value."""
    strided = strided_view(s)
    if strided is not None:
        return strided[0]
    if is_select(s):  # x[i] by a 0-d integer the program computes: its index is an output
        return s.node.inputs[0]
    node = s.node
    if node.op.name == "get":  # a piece of a split; a result of another multi-output op is
        split = node.inputs[0].node  # a value of its own
        return split.inputs[0] if split.op.name == "split" else None
    if node.op.views == (0,) and len(node.inputs) == 1:
        return node.inputs[0]
    return None


def output_views(outputs, arguments: dict) -> list:
    """(output index, index of the earlier-resolved output it views, the view nodes between)
    for each output that is another output or a chain of single-input view nodes of one (and
    not of an argument: `argument_views`), ordered so that an output's base comes before
    it: `return y, y[0]` hands back y[0] as a view of the y it returns, as eager code does."""
    first = {}
    for i, out in enumerate(outputs):
        first.setdefault(id(out), i)
    bases = {}
    for i, out in enumerate(outputs):
        chain, s = [], out
        while True:
            j = first.get(id(s))
            if j is not None and j != i:
                bases[i] = (j, chain[::-1])
                break
            base = _viewed(s)
            if id(s) in arguments or base is None:
                break
            chain.append(s.node)
            s = base
    ordered, done = [], set()

    def resolve(i):
        if i in done or i not in bases:
            return
        done.add(i)
        resolve(bases[i][0])
        ordered.append((i, *bases[i]))

    for i in sorted(bases):
        resolve(i)
    return ordered


def add_select_indices(outputs: list) -> dict:
    """Adds to `outputs` the index of each `x[i]` by a 0-d integer Symbol (`is_select`) that
    an output is a chain of views through: the call then takes that view again, eagerly,
    at the index this call computed. Returns {id of the select's node: its index's place}."""
    places, first = {}, {id(s): k for k, s in enumerate(outputs)}
    for out in list(outputs):
        s = out
        while (base := _viewed(s)) is not None:
            if is_select(s) and id(s.node) not in places:
                index = s.node.inputs[1]
                if id(index) not in first:
                    first[id(index)] = len(outputs)
                    outputs.append(index)
                places[id(s.node)] = first[id(index)]
            s = base
    return places


def view_of_argument(leaf, chain, like, selects=None):
    """The argument Tensor `leaf` through the view nodes `chain`, run eagerly (so the result
    is `leaf` itself or a view of it, as eager code returns); `like`, the program's copy,
    where the views cannot be taken again on this call (a symbolic attribute). `selects`:
    {id of a select node: the index this call computed} (`add_select_indices`)."""
    t = leaf
    try:
        for node in chain:
            if selects and id(node) in selects:
                t = t.select(node.attrs["axis"], selects[id(node)])
                continue
            strided = strided_view(node.out)
            if strided is not None:  # as_strided of the base, eagerly (the trace's offset
                size, stride, offset = strided[1:]  # counts from the argument's own start)
                t = t.as_strided(size, stride, t.storage_offset() + offset)
                if node.op.name == "stop_gradient":  # of a detach()ed view of the base
                    t = t.detach()
            elif node.op.name == "get":  # a piece of a split: split again, eagerly
                split = node.inputs[0].node
                t = t.split(list(split.attrs["sizes"]), split.attrs["axis"])[node.attrs["index"]]
            else:
                t = bind(node.op, t, **node.attrs)
    except (KilnError, TypeError, ValueError):  # an attribute of symbolic dims: the copy
        return like
    ok = isinstance(t, Tensor) and t.shape == like.shape and t.dtype == like.dtype
    return t if ok else like


def hand_back_views(outs: list, leaves, views, results) -> None:
    """Replaces the outputs of a call that are views of its arguments or of other outputs
    by those views, taken eagerly (`views`: the trace's `argument_views`, `output_views` and
    `add_select_indices`; `results`: the program's, where the selects' indices are)."""
    argument_chains, output_chains, select_places = views
    picked = {k: int(results[p]) for k, p in select_places.items()}
    for i, k, chain in argument_chains:
        if isinstance(leaves[k], Tensor):
            outs[i] = view_of_argument(leaves[k], chain, outs[i], picked)
    for i, j, chain in output_chains:
        outs[i] = view_of_argument(outs[j], chain, outs[i], picked)


def output_orders(outputs) -> list:
    """For each output (a Symbol), the order of its dims in memory, outermost first, where
    eager code lays it out densely in another order than C (`x.t() * 2`: column-major, as
    PyTorch's elementwise results follow their inputs); else None. The program computes
    every value in C order, so such an output is laid out again before it is returned
    (`laid_out`): its `stride()`, `view()` and the views taken of it (`as_strided`) are then
    eager's."""
    orders = []
    for out in outputs:
        try:
            probe = _layout(out, True)
        except KilnError:
            probe = None
        order = None
        if probe is not None and probe.ndim > 1 and not probe.flags.c_contiguous:
            steps = probe.strides
            candidate = sorted(range(probe.ndim), key=lambda d: (-steps[d], d))
            if probe.transpose(candidate).flags.c_contiguous:  # dense: a permutation
                order = tuple(candidate)
        orders.append(order)
    return orders


def laid_out(array, order):
    """`array` (C-ordered) with the same values laid out in memory in `order` (outermost dim
    first, `output_orders`); for None, `array` in C order (itself where it is: a kernel may
    give another order, as cummax's indices of a transposed value)."""
    if order is None:
        return array if array.ndim < 2 or array.flags.c_contiguous else array.copy()
    return array.transpose(order).copy().transpose(np.argsort(order))


def module_outputs(result) -> dict:
    """id(value) -> the module Parameter or Buffer it is, of each graph value in `result`
    (what a function being traced returned, asked before its trace ends) that is a module's
    value as the function left it (`self.weight`, `self.n` after `self.n += 1`): a compiled
    call returns that tensor itself, as eager code and torch.compile do.

    >>> import kiln as kn
    >>> lin = kn.nn.Linear(2, 2)
    >>> f = kn.compile(lambda x: (lin(x), lin.weight))
    >>> f(kn.ones(2))[1] is lin.weight
    True
    """
    from ..graph.core import Symbol
    from ..nn.parameter import module_value_of  # NOTE: lazy: kiln.nn builds on the frontend
    from .structure import flatten

    leaves: list = []
    flatten(result, "", leaves, [], [])
    found = {}
    for leaf in leaves:
        owner = module_value_of(leaf) if isinstance(leaf, Symbol) else None
        if owner is not None:
            found[id(leaf)] = owner.tensor()
    return found
