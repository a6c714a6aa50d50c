"""Forward-mode AD on eager tensors: `kn.autograd.forward_ad`, PyTorch's
`torch.autograd.forward_ad` (`dual_level`, `make_dual`, `unpack_dual`).

A dual tensor is a tensor with a tangent at the current level (one level at a time, as
PyTorch's). Each op on dual tensors gives its result the tangent graph mode's forward pass
gives its node (kiln/passes/forward.py): the op's `jvp` rule where it has one, else its vjp
transposed (the vjp is linear in its cotangent u: differentiating it with respect to u,
seeded with the inputs' tangents, gives the Jacobian-vector product). So every op with a vjp
has exact tangents, with one rule per op. Where no tangent op need be recorded, that `jvp`
of the op's one node runs compiled (once per signature: `_program`); where the tangent's ops
must be recorded on the tape (grad mode on and a primal or a tangent requiring grad:
backward through tangents), the same rules run eagerly, the transposition by
`autograd.grad` with respect to u. A view op's tangent is the same view of the input's
tangent (as PyTorch's), so that an in-place change of a view reaches its base's tangent.
Under a level, backward runs its vjps on the saved dual tensors themselves, so a gradient
carries its tangent (forward-over-reverse).

While no level is entered nothing here runs: entering one switches the eager paths that do
not go through `bind` (the short paths, the fused linear, cross_entropy and batched matmul)
to `bind`'s, and `bind`'s eager path to `_dual_eager`; leaving switches them back.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from .. import dtypes as dt
from ..array_types import contiguous_format
from ..errors import (
    ArgumentError,
    AutogradError,
    ShapeMismatchError,
    UsageError,
    node_error,
)
from ..graph.core import user_site
from ..ops import core as ops_core
from ..passes.differentiate import real_part_for, sum_to_shape
from . import autograd, batched, dispatch, fused, grad_mode
from .grad_mode import enable_grad, state
from .tensor import Tensor, describe, make, meta_of

__all__ = [
    "UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
    "unpack_dual",
]  # fmt: skip

_level = -1  # the current level; -1: none
_duals: list = []  # weak references to the tensors given a tangent at this level
_busy = False  # while a tangent is computed: its ops give no tangents
_NOT_DUAL = "not dual"  # meta.tangent of a tensor that is not dual although its base is
_saved: dict = {}  # what entering a level replaced, put back when leaving it
_out_tangents = weakref.WeakKeyDictionary()  # tape node -> its output's tangent


class UnpackedDualTensor(NamedTuple):
    """`unpack_dual`'s result: the primal (a view of the tensor, without its tangent) and
    the tangent (None where the tensor is not dual at the level).

    >>> import kiln as kn
    >>> UnpackedDualTensor(kn.ones(1), None).tangent is None
    True
    """

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enters a new forward-AD level (the one `make_dual` and `unpack_dual` use by
    default) and returns it. Only one level at a time, as PyTorch's.

    >>> import kiln as kn
    >>> fwAD = kn.autograd.forward_ad
    >>> level = fwAD.enter_dual_level(); fwAD.exit_dual_level(); level
    0
    """
    global _level
    if _level >= 0:
        raise UsageError("Nested forward mode AD is not supported at the moment")
    _level = 0
    _switch(True)
    return _level


def exit_dual_level(*, level=None) -> None:
    """Leaves the forward-AD level `level` (the current one by default): every tangent of
    that level is gone.

    >>> import kiln as kn
    >>> fwAD = kn.autograd.forward_ad
    >>> _ = fwAD.enter_dual_level()
    >>> x = fwAD.make_dual(kn.ones(2), kn.ones(2))
    >>> fwAD.exit_dual_level(); fwAD.unpack_dual(x).tangent is None
    True
    """
    global _level
    if _level < 0 and level is None:
        raise UsageError("Dual level must be a positive number.")
    if level is not None and level != _level:
        raise UsageError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    for ref in _duals:
        t = ref()
        if t is not None and t._meta is not None:
            t._meta.tangent = None
    _duals.clear()
    _out_tangents.clear()
    _level = -1
    _switch(False)


class dual_level:  # noqa: N801 (PyTorch's name)
    """Context manager (and decorator) of one forward-AD level: tangents exist inside it.

    >>> import kiln as kn
    >>> fwAD = kn.autograd.forward_ad
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(kn.tensor([1.0, 2.0]), kn.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x * x).tangent
    tensor([2., 0.])
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapped


def make_dual(tensor, tangent, *, level=None) -> Tensor:
    """A dual tensor: a view of `tensor` with `tangent` as its tangent at `level` (the
    current one by default); `tangent` is kept as it is where it is laid out as `tensor`,
    else copied so. Backward flows through it to `tensor` (and to the tangent's history from
    its tangent's uses).

    >>> import kiln as kn
    >>> fwAD = kn.autograd.forward_ad
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(kn.tensor(2.0), kn.tensor(1.0))
    ...     fwAD.unpack_dual(x ** 3)
    UnpackedDualTensor(primal=tensor(8.), tangent=tensor(12.))
    """
    global _busy
    if level is None:
        level = _level
    if level < 0:
        raise UsageError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if level != _level:
        raise UsageError("Invalid level given to _make_dual")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"make_dual: the {what} must be a Tensor, got {type(t).__name__}")
        if not dt.is_differentiable(dt.as_dtype(t.dtype)) or t.dtype == dt.bool_:
            raise ArgumentError(
                f"Expected {what} to be floating point or complex, but got: {t.dtype}"
            )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise node_error(
            ShapeMismatchError,
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.",
            op="make_dual", site=user_site(), inputs=[describe(tensor), describe(tangent)],
        )  # fmt: skip
    if _tangent_of(tangent) is not None:
        raise UsageError(
            f"Setting a forward grad that itself has a forward gradient at the same level"
            f"{level} is not supported."
        )
    if _tangent_of(tensor) is not None:
        raise UsageError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at "
            f"the same level {level} is not supported."
        )
    _busy = True
    try:
        dual = tensor.view(tensor.shape)  # a view, with its history (backward reaches tensor)
        if tangent._data.strides != tensor._data.strides and tensor._data.size > 1:
            tangent = _laid_out(tangent, tensor)
    finally:
        _busy = False
    _set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """(primal, tangent) of `tensor` at `level` (the current one by default): the primal is a
    view of it without the tangent, the tangent the one it has as it is (None where it is
    not dual, or outside any level, where the primal is `tensor` itself).

    >>> import kiln as kn
    >>> kn.autograd.forward_ad.unpack_dual(kn.ones(1)).tangent is None
    True
    """
    global _busy
    if level is None:
        level = _level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if level != _level:
        raise UsageError("Invalid level given to _unpack_dual")
    tangent = _tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    _busy = True
    try:
        primal = tensor.view(tensor.shape)
    finally:
        _busy = False
    _set_tangent(primal, _NOT_DUAL)  # (a view of a dual tensor, not dual itself)
    return UnpackedDualTensor(primal, tangent)


# -- tangents of tensors -------------------------------------------------------------------------


def _tangent_of(t):
    """t's tangent at the current level, or None: its own, or for a view of a dual base that
    has none of its own (made before its base became dual), its elements of the base's."""
    meta = t._meta if isinstance(t, Tensor) else None
    if meta is None:
        return None
    tangent = getattr(meta, "tangent", None)
    if tangent is not None:
        return None if tangent is _NOT_DUAL else tangent
    base = meta.base
    if base is None or base._meta is None:
        return None
    whole = getattr(base._meta, "tangent", None)
    if whole is None or whole is _NOT_DUAL:
        return None
    return _read(t, base, whole)


def _set_tangent(t: Tensor, tangent) -> None:
    meta_of(t).tangent = tangent
    _duals.append(weakref.ref(t))


def _read(t: Tensor, base: Tensor, whole: Tensor) -> Tensor:
    """The view t's elements of `whole`, its base's tangent (a copy)."""
    from ..frontend import inplace  # NOTE: lazy: the frontend builds on eager

    positions = inplace._positions(t, base)
    if positions is None:
        raise node_error(
            AutogradError,
            "forward AD: the tangent of a view taken before its base became dual cannot be "
            "read from a base that is not contiguous; take the view after make_dual",
            op="unpack_dual", site=user_site(), inputs=[describe(t), f"base {describe(base)}"],
        )  # fmt: skip
    return _quiet(lambda: inplace._read_view(t, whole, positions))


def _laid_out(tangent: Tensor, like: Tensor) -> Tensor:
    """A copy of `tangent` laid out as `like` (a dual's tangent is laid out as its primal,
    so the views of both agree)."""
    out = make(np.zeros_like(like._data), like._device)  # (like's strides)
    out.copy_(tangent)
    return out


def _quiet(fn):
    """`fn()` with no tangents given to the ops it runs."""
    global _busy
    before, _busy = _busy, True
    try:
        return fn()
    finally:
        _busy = before


def write_tangent(t: Tensor, tangent) -> None:
    """After an in-place change of t whose new value has `tangent` (None: zero): t's tangent
    becomes it, written into the one t has (in place: its views' and its base's see it), or
    into its base's elements (the base given a zero tangent first), or given to t."""
    own = getattr(t._meta, "tangent", None) if t._meta is not None else None
    if own is _NOT_DUAL:
        return
    base = t._meta.base if t._meta is not None else None
    whole = getattr(base._meta, "tangent", None) if base is not None and base._meta else None
    if whole is _NOT_DUAL:
        whole = None
    if own is None and whole is None and tangent is None:
        return
    if tangent is not None and tangent.dtype != t.dtype:
        tangent = _quiet(lambda: tangent.to(t.dtype))
    if own is not None:
        _quiet(lambda: own.copy_(0 if tangent is None else tangent))
        return
    if base is None:
        _set_tangent(t, _quiet(lambda: _laid_out(tangent, t)))
        return
    from ..frontend import inplace

    positions = inplace._positions(t, base)
    if positions is None:
        raise node_error(
            AutogradError,
            "forward AD: an in-place change of a view gives its base a tangent, which kiln "
            "cannot place in a base that is not contiguous; clone() the view first",
            op="inplace", site=user_site(), inputs=[describe(t), f"base {describe(base)}"],
        )  # fmt: skip
    if whole is None:
        whole = _quiet(lambda: _laid_out(_zeros(base), base))
        _set_tangent(base, whole)

    def write():
        from ..frontend import complex_numbers as cn
        from ..frontend import indexing
        from ..frontend import shape as s

        value = tangent if tangent is not None else _zeros(t)
        old = inplace._reals(whole)
        flat = s.reshape(old, (-1,))
        new = s.reshape(indexing.index_put(flat, (positions,), inplace._reals(value), False),
                        old.shape)  # fmt: skip
        whole.copy_(cn.view_as_complex(new) if whole.dtype.kind == "c" else new)

    _quiet(write)


def _zeros(like) -> Tensor:
    from .factories import zeros

    return zeros(tuple(like.shape), dtype=like.dtype, device=like.device)


def carry(t: Tensor, source: Tensor) -> None:
    """Gives `source`, the copy of t an in-place method computes its new value from, t's
    tangent."""
    tangent = _tangent_of(t)
    if tangent is not None:
        _set_tangent(source, tangent)


def commit(t: Tensor, result, write, *args):
    """An in-place method's `write(t, result, *args)` of its new value `result` into t, then
    t's tangent (`write_tangent`)."""
    tangent = _tangent_of(result) if isinstance(result, Tensor) else None
    out = _quiet(lambda: write(t, result, *args))
    write_tangent(t, tangent)
    return out


def setitem(t: Tensor, index, value, write) -> bool:
    """`t[index] = value` (`write(t, index, value)`) where t or value is dual: t's tangent
    gets value's (zero where it has none) at `index`; False (nothing done) where neither is,
    or where `write` itself asks (it calls this first)."""
    if _busy:
        return False
    given = _tangent_of(value) if isinstance(value, Tensor) else None
    tangent = _tangent_of(t)
    if given is None and tangent is None and (t._meta is None or t._meta.base is None or
                                              _tangent_of(t._meta.base) is None):  # fmt: skip
        return False

    def new_tangent():
        from ..frontend import indexing

        old = tangent if tangent is not None else _zeros(t)
        part = given if given is not None else np.zeros((), t.dtype)
        if isinstance(part, Tensor) and part.dtype != t.dtype:
            part = part.to(t.dtype)
        return indexing.put(old, index, part, False)

    new = _quiet(new_tangent)
    _quiet(lambda: write(t, index, value))
    write_tangent(t, new)
    return True


# -- the op path -----------------------------------------------------------------------------------

_eager_dispatch = dispatch.eager_dispatch
# view ops whose tangent is the same view of their first input's tangent (linear in it)
_VIEW_RULE = frozenset(
    ops_core.REGISTRY[name]
    for name in (
        "reshape transpose unfold broadcast_to index real imag view_as_real view_as_complex rows"
    ).split()  # fmt: skip
    if name in ops_core.REGISTRY
)
_NO_TANGENT = frozenset(
    ops_core.REGISTRY[name] for name in ("stop_gradient",) if name in ops_core.REGISTRY
)


def _dual_eager(op, args, attrs):
    """`bind`'s eager path under a level: the op, then its result's tangent where an input
    is dual."""
    out = _eager_dispatch(op, args, attrs)
    if _busy:
        return out
    ins = None
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            tangent = _tangent_of(a)
            if tangent is not None:
                if ins is None:
                    ins = [None] * len(args)
                ins[i] = tangent
    if ins is None or op in _NO_TANGENT:
        return out
    outs = out if type(out) is tuple else (out,)
    if not any(isinstance(o, Tensor) and dt.is_differentiable(dt.as_dtype(o.dtype))
               and o.dtype != dt.bool_ for o in outs):  # fmt: skip
        return out
    tangents = _quiet(lambda: _tangent(op, args, attrs, out, ins))
    if type(out) is not tuple:
        tangents = (tangents,)
    if op not in _VIEW_RULE:  # a tangent of its own, not an input's (which a rule may give)
        tangents = [_own(t, ins) for t in tangents]
    for o, tangent in zip(outs, tangents):
        if (
            isinstance(o, Tensor)
            and tangent is not None
            and dt.is_differentiable(dt.as_dtype(o.dtype))
        ):
            _set_tangent(o, tangent)
            node = o._meta.grad_fn
            if node is not None and node.out is o._data:
                _out_tangents[node] = tangent  # for backward's vjps (`saved_output`)
    return out


def _own(tangent, ins):
    """`tangent`, or a copy of it where it shares memory with one of the tangents `ins`
    (the transposed vjp of `x + 1` gives x's tangent itself): an in-place change of the
    result must not change an input's tangent."""
    if not isinstance(tangent, Tensor):
        return tangent
    data = tangent._data
    for t in ins:
        if t is not None and np.may_share_memory(data, t._data):
            return _quiet(lambda: tangent.clone())
    return tangent


def view_tangent(t: Tensor, view, args, kwargs) -> None:
    """After t became `view(t, *args, **kwargs)` in place (`t.transpose_(0, 1)`): its own
    tangent becomes the same view of it; `view` None (`detach_`): t is no longer dual."""
    tangent = getattr(t._meta, "tangent", None) if t._meta is not None else None
    if isinstance(tangent, Tensor):
        t._meta.tangent = None if view is None else _quiet(lambda: view(tangent, *args, **kwargs))


def any_dual(values) -> bool:
    """Whether one of `values` is a dual tensor (at the current level)."""
    return any(isinstance(v, Tensor) and _tangent_of(v) is not None for v in values)


def tangents_of(args):
    """The tangents a custom Function's `jvp` takes for `args` (zeros for a tensor that is
    not dual, None for anything else, as PyTorch's), or None where no argument is dual."""
    tangents = [_tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if _busy or all(t is None for t in tangents):
        return None
    return [
        t if t is not None or not isinstance(a, Tensor) else _quiet(lambda a=a: _zeros(a))
        for a, t in zip(args, tangents)
    ]


def custom_function(apply, jvp, ins):
    """A custom Function's `apply()` on dual arguments (whose tangents are `ins`): its ops
    give no tangents; its outputs get those of `jvp()` (one per output)."""
    out = _quiet(apply)
    tangents = _quiet(jvp)
    outs, tangents = (out, tangents) if type(out) is tuple else ((out,), (tangents,))
    if type(tangents) is not tuple or len(tangents) != len(outs):
        raise UsageError(
            f"custom Function's jvp returned {len(tangents) if type(tangents) is tuple else 1} "
            f"tangents for {len(outs)} outputs"
        )
    for o, t in zip(outs, tangents):
        if isinstance(o, Tensor) and isinstance(t, Tensor):
            _set_tangent(o, _own(t, [a for a in ins if isinstance(a, Tensor)]))
    return out


def saved_output(node, out):
    """The output `node` saved (as backward unpacks it), with its tangent."""
    tangent = _out_tangents.get(node)
    if tangent is not None and isinstance(out, Tensor):
        _set_tangent(out, tangent)
    return out


def _tangent(op, args, attrs, out, ins):
    """The tangent of `out = op(*args, **attrs)` for the inputs' tangents `ins` (None:
    zero), as graph mode's `jvp` finds a node's (kiln/passes/forward.py): by that `jvp`
    itself, compiled once per signature (`_program`), where nothing need be recorded, else
    by the same rules on the tape."""
    if op in _VIEW_RULE and ins[0] is not None and all(t is None for t in ins[1:]):
        return ops_core.bind(op, ins[0], *args[1:], **attrs)  # a view of the tangent
    ins = [t if t is None or t.dtype == a.dtype else t.to(a.dtype) for t, a in zip(ins, args)]
    if op.jvp is None and op.vjp is None:
        if "nondiff" in op.tags:  # zero, as PyTorch's (floor, round, sign...)
            return _zeros(out)
        raise node_error(
            AutogradError,
            f"Trying to use forward AD with {op.name} that does not support it",
            op=op.name, site=user_site(), inputs=[describe(a) for a in args
                                                  if isinstance(a, Tensor)],
        )  # fmt: skip
    record = state.grad and any(isinstance(a, Tensor) and a._requires_grad for a in (*args, *ins))
    if not record and type(out) is Tensor:
        program = _program(op, args, attrs, ins)
        if program is not None:
            if program is _ZERO:
                return _zeros(out)
            arrays = [a._data if isinstance(a, Tensor) else a for a in args]
            return make(program(*arrays, *[t._data for t in ins if t is not None]))
    if op.jvp is not None:
        return op.jvp(ins, out, *args, **attrs)
    return _transposed_vjp(op, args, attrs, out, ins, record)


_programs: dict = {}  # signature -> its compiled tangent, _ZERO, or None (on the tape)
_PROGRAMS_MAX = 4096
_ZERO = "zero"
_MISSING = object()


def _program(op, args, attrs, ins):
    """The compiled function `(*args, *tangents) -> tangent` of graph mode's `jvp` of one
    node of `op` on CPU arrays of these shapes and dtypes (made once per signature); _ZERO
    where the tangent is zero; None where it cannot be made (a random op, an argument that
    is not an array, an op that refuses Symbols): the tape's rules then."""
    try:
        key = (op, tuple(t is not None for t in ins), *attrs.items(),
               *[(a._data.shape, a._data.dtype, a._device) if isinstance(a, Tensor)
                 else (type(a), getattr(a, "shape", None), getattr(a, "dtype", None))
                 for a in args])  # fmt: skip
        found = _programs.get(key, _MISSING)
    except TypeError:  # an unhashable attr
        return None
    if found is _MISSING:
        if len(_programs) >= _PROGRAMS_MAX:
            _programs.clear()
        found = _programs[key] = _build(op, args, attrs, ins)
    return found


def _build(op, args, attrs, ins):
    from ..frontend.core import placeholder  # NOTE: lazy: the frontend builds on eager
    from ..graph import Graph
    from ..passes.forward import jvp
    from ..runtime import function

    if "random" in op.tags or "key" in attrs or "region" in op.tags:
        return None
    if not all(type(a) is np.ndarray or isinstance(a, Tensor) and a._device == "cpu"
               and type(a._data) is np.ndarray for a in args):  # fmt: skip
        return None
    try:
        with Graph().as_default():
            xs = [placeholder(a.dtype, tuple(a.shape)) for a in args]
            y = ops_core.bind(op, *xs, **attrs)
            pairs = [(x, placeholder(x.dtype, x.shape)) for x, t in zip(xs, ins) if t is not None]
            (dy,) = jvp([y], [x for x, _ in pairs], [t for _, t in pairs])
            if dy is None:
                return _ZERO
            return function([*xs, *[t for _, t in pairs]], dy)
    except Exception:  # noqa: BLE001 — any refusal: the tape's rules give the tangent
        return None


def _transposed_vjp(op, args, attrs, out, ins, record):
    """The tangent from the op's vjp, transposed on the tape (see the module's docstring)."""
    u = _zeros(out).requires_grad_(True)
    with enable_grad():
        if "vjp_needs" in op.tags:
            cts = op.vjp(u, out, *args, needs=tuple(t is not None for t in ins), **attrs)
        else:
            cts = op.vjp(u, out, *args, **attrs)
        pieces, seeds = [], []
        for x, ct, t in zip(args, cts, ins):
            if t is None or ct is None or not isinstance(ct, Tensor):
                continue
            ct = real_part_for(sum_to_shape(ct, tuple(x.shape)), x.dtype)
            if ct.dtype != x.dtype:
                ct = ct.to(x.dtype)
            if ct._requires_grad and dt.is_differentiable(dt.as_dtype(ct.dtype)):
                pieces.append(ct)
                seeds.append(t)
    if not pieces:
        return _zeros(out)
    (tangent,) = autograd.grad(pieces, [u], seeds, create_graph=record, allow_unused=True)
    return _zeros(out) if tangent is None else tangent


# -- entering and leaving a level ------------------------------------------------------------------


def _none(*args, **kwargs):
    return None


def _contiguous(self, memory_format=None):
    """`Tensor.contiguous` under a level: a copy of a dual tensor that is not C-ordered is
    made by `bind` (its tangent follows)."""
    if (
        memory_format is None
        and not self._data.flags.c_contiguous
        and _tangent_of(self) is not None
    ):
        return self.clone(memory_format=contiguous_format)
    return _saved["contiguous"](self, memory_format)


def _switch(on: bool) -> None:
    """Switches the eager paths for a level (see the module's docstring)."""
    if on:
        _saved.update(eager=ops_core._eager, linear=fused.linear,
                      cross_entropy=fused.cross_entropy, matmul=batched.matmul,
                      contiguous=Tensor.contiguous)  # fmt: skip
        ops_core.use_eager(_dual_eager, grad_mode.state)
        fused.linear = fused.cross_entropy = batched.matmul = _none
        Tensor.contiguous = _contiguous
    else:
        ops_core.use_eager(_saved["eager"], grad_mode.state)
        fused.linear, fused.cross_entropy = _saved["linear"], _saved["cross_entropy"]
        batched.matmul = _saved["matmul"]
        Tensor.contiguous = _saved["contiguous"]
        _saved.clear()
    dispatch.dual = autograd.dual = on
    dispatch._short_paths()
