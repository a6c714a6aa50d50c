"""In-place tensor methods (`add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_ index_put_`, `+=`…,
item assignment `t[index] = v`), with PyTorch's rules.

An in-place op computes its result with the ordinary ops (so the tape records it), writes it
into the tensor's data, bumps the version counter shared with every view, and makes the
result's history the tensor's own.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager import dispatch, forward_ad
from ..eager.grad_mode import enable_grad, no_grad, state
from ..eager.out import check_no_overlap
from ..eager.sampling import on_traced
from ..eager.sparse import SparseTensor, layout_error, replace
from ..eager.sparse import zeros_like as sparse_zeros_like
from ..eager.sparse_compressed import SparseCompressedTensor
from ..eager.sparse_compressed import like as compressed_like
from ..eager.tensor import (
    Tensor,
    check_view,
    describe,
    make,
    meta_of,
    retake_views_by,
    version_of,
)
from ..errors import (
    AutogradError,
    DTypeMismatchError,
    GraphError,
    ShapeMismatchError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import Symbol, user_site
from ..graph.opdef import REGISTRY
from ..ops.core import bind, check_rules
from ..ops.index import write_index
from ..runtime.backend import get_backend
from . import complex_numbers as cn
from . import core, indexing, trace_locals
from . import math as m
from . import shape as s
from . import torch_extra_math as tem
from . import torch_math as tm
from . import torch_more as tmore
from .functionalize import is_basic_index

__all__ = ["install"]

_INDEX_PUT = REGISTRY["index_put"]


def _check(t: Tensor, op: str, value_grad: bool) -> bool:
    """PyTorch's refusals of an in-place op; returns whether the tape records it."""
    if t._inference and not state.inference:
        raise node_error(
            AutogradError,
            "Inplace update to inference tensor outside InferenceMode is not allowed. You can "
            "make a clone to get a normal tensor before doing inplace update",
            op=op, site=user_site(), inputs=[describe(t)],
        )  # fmt: skip
    if not state.grad:
        return False
    multi = getattr(t._meta, "multi", None)
    if multi is not None and t._requires_grad:
        raise node_error(
            AutogradError,
            f"Output {multi[0]} of {multi[1]} is a view and is being modified inplace. This "
            "view is the output of a function that returns multiple views. Such functions do "
            "not allow the output views to be modified inplace. You should replace the inplace "
            "operation by an out-of-place one.",
            op=op, site=user_site(), inputs=[describe(t)],
        )  # fmt: skip
    base = t._base
    if base is not None and (base._requires_grad or value_grad) and t._meta.no_grad_view:
        raise node_error(
            AutogradError,
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled: move both the view and the in-place op inside the no_grad block (not "
            "recorded) or both outside (recorded)", op=op, site=user_site(),
            inputs=[describe(t), f"base {describe(base)}"],
        )  # fmt: skip
    if t._requires_grad and t.grad_fn is None:
        raise node_error(
            AutogradError,
            "a leaf Variable that requires grad is being used in an in-place operation: update "
            "it under kn.no_grad(), as optimizers do, or compute a new tensor",
            op=op, site=user_site(), inputs=[describe(t)],
        )  # fmt: skip
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise node_error(
            AutogradError,
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation", op=op, site=user_site(), inputs=[describe(t), f"base {describe(base)}"],
        )  # fmt: skip
    recording = t._requires_grad or value_grad
    if recording and base is not None and _positions(t, base) is None:
        raise node_error(
            AutogradError,
            "an in-place op on a view that autograd would have to record needs the view's "
            "elements as positions in its base's memory, and this base is not contiguous: "
            "clone() the view first, or compute the new value out of place",
            op=op, site=user_site(), inputs=[describe(t), f"base {describe(base)}"],
        )  # fmt: skip
    return recording


def shares_elements(data) -> bool:
    """Whether more than one element of the array `data` lies at one memory location: a dim
    of stride 0 and size above 1 (`expand`'s, `as_strided`'s), which PyTorch refuses to write
    into, whether or not autograd records the write, or steps that land on each other
    (`unfold`'s overlapping windows), which PyTorch writes element by element in its loop's
    order and kiln refuses too (its in-place ops compute the new values first).

    >>> import numpy as np
    >>> x = np.zeros(5)
    >>> shares_elements(np.lib.stride_tricks.sliding_window_view(x, 2)), shares_elements(x[::2])
    (True, False)
    """
    flags = getattr(data, "flags", None)
    if flags is not None and (flags.c_contiguous or flags.f_contiguous):
        return False  # (the common case, kept short: every in-place method asks)
    dims = sorted((abs(st), n) for n, st in zip(data.shape, data.strides) if n > 1)
    extent = data.itemsize  # bytes spanned by the dims of smaller steps
    for step, n in dims:
        if step == 0:
            return True
        if step < extent:  # interleaved steps: the positions themselves tell
            offsets = np.zeros((), np.int64)
            for st, m in dims:
                offsets = np.add.outer(offsets, np.arange(m, dtype=np.int64) * st)
            return np.unique(offsets).size < offsets.size
        extent = step * (n - 1) + extent
    return False


def _expanded(data) -> bool:
    """Whether a dim of several elements has stride 0 (PyTorch's certain overlap)."""
    return any(n > 1 and not st for n, st in zip(data.shape, data.strides))


def _check_shared(t: Tensor, op: str) -> None:
    data = t._data
    if shares_elements(data):
        writeable = getattr(data, "flags", None) is None or data.flags.writeable
        why = f"strides {t.stride()}" if writeable else "assignment destination is read-only"
        raise _shared_memory_error(op, t, ValueError(why))


def _commit(t: Tensor, result, op: str, recording: bool) -> Tensor:
    """Writes `result` into `t` and makes its history t's own. A module's value (or its
    `.data`) changed inside a kn.compile trace changes in the compiled program instead."""
    if dispatch.traced_value is not None and type(t) is not Tensor:
        if _commit_traced(t, result, op):
            return t
    if not isinstance(result, Tensor):
        result = make(get_backend(t._device).to_device(np.asarray(result)), t._device)
    if result.shape != t.shape:
        raise node_error(
            ShapeMismatchError,
            f"output with shape {list(t.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}",
            op=op,
            site=user_site(),
            inputs=[describe(t)],
        )
    if not dt.can_cast(result.dtype, t.dtype):
        raise node_error(
            DTypeMismatchError,
            f"result type {result.dtype} can't be cast to the desired output type {t.dtype}",
            op=op,
            site=user_site(),
            inputs=[describe(t)],
        )
    if recording and t._base is not None:
        return _commit_view(t, result, op)
    if (type(t) is not Tensor or type(result) is not Tensor) and (
        type(t) in _SPARSE or type(result) in _SPARSE
    ):
        return _commit_sparse(t, result, op, recording)
    try:
        xp = np if t._device == "cpu" else get_backend(t._device).activate()
        xp.copyto(t._data, result._data, casting="unsafe")
    except ValueError as e:  # a read-only view (broadcast_to)
        raise _shared_memory_error(op, t, e) from None
    _bump(t, op)
    if recording and result._requires_grad:
        if result.dtype != t.dtype or result.grad_fn is None:  # None: a leaf (`t.copy_(w)`)
            result = bind(REGISTRY["cast"], result, dtype=t.dtype)  # its tape entry
        t.grad_fn, t._requires_grad = result.grad_fn, True
    return t


def _commit_traced(t: Tensor, result, op: str) -> bool:
    """`_commit` of a module's Parameter or Buffer, or its `.data` (`dispatch.traced_value`),
    in a kn.compile trace: the program assigns its new value on every call, as the eager
    code changes it on every call (the trace writes nothing now). False for another `t`."""
    graph_value = dispatch.traced_value(t)
    if graph_value is None:
        return False
    shape = tuple(result.shape)
    if shape != tuple(t.shape):
        raise node_error(
            ShapeMismatchError,
            f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(shape)}",
            op=op, site=user_site(), inputs=[describe(t)],
        )  # fmt: skip
    if not dt.can_cast(result.dtype, t.dtype):
        raise node_error(
            DTypeMismatchError,
            f"result type {result.dtype} can't be cast to the desired output type {t.dtype}",
            op=op, site=user_site(), inputs=[describe(t)],
        )  # fmt: skip
    t._traced_assign(graph_value.graph, result, op)
    return True


def _as_reals(array):
    """A complex array's memory as its pairs of reals (a view, a last dim of 2); a real
    array itself; None where the array module cannot view it so. Positions in complex
    values' memory are counted in their parts."""
    if array.dtype.kind != "c":
        return array
    try:
        return array[..., None].view(array.real.dtype)
    except (ValueError, TypeError):  # CuPy's view of some strides
        return None


def _positions(t: Tensor, base: Tensor):
    """The flat positions in `base` (whose data is contiguous) of the view t's elements, read
    from their addresses; None where they cannot be (a base that is not contiguous, a view
    of another element type). Where t or its base is complex, the positions are those of
    t's real parts in base's (`_as_reals`: a view `z.real` of a complex z, say)."""
    b, v = base._data, t._data
    if b.dtype.kind == "c" or v.dtype.kind == "c":
        b, v = _as_reals(b), _as_reals(v)
        if b is None or v is None:
            return None
    if b.dtype != v.dtype:
        return None
    # the flat position of the element in each memory slot of base: the slot itself where
    # base is C-ordered; where it is another dense layout (a transpose's, the result of an
    # elementwise op on one, as PyTorch keeps it), the positions laid out as base is
    if b.flags.c_contiguous:
        slots = np.arange(b.size, dtype=np.int64)
    elif t._device == "cpu" and b.size and all(st > 0 for st in b.strides):
        layout = np.empty_like(b, dtype=np.int64, order="K")
        if tuple(st // 8 for st in layout.strides) != tuple(st // b.itemsize for st in b.strides):
            return None  # not dense (a step, a broadcast)
        layout[...] = np.arange(b.size, dtype=np.int64).reshape(b.shape)
        slots = layout.ravel(order="K")
    else:
        return None
    ptr = (
        (lambda a: a.__array_interface__["data"][0])
        if t._device == "cpu"
        else (lambda a: a.data.ptr)
    )
    item = b.itemsize
    offset = ptr(v) - ptr(b)
    if offset % item or any(st % item for st in v.strides):
        return None
    strides = [st // item * slots.itemsize for st in v.strides]
    return np.lib.stride_tricks.as_strided(slots[offset // item :], v.shape, strides).copy()


def _reals(x: Tensor) -> Tensor:
    """x as pairs of reals (`view_as_real`) where it is complex: the domain of `_positions`."""
    return cn.view_as_real(x) if x.dtype.kind == "c" else x


def _read_view(t: Tensor, base: Tensor, positions) -> Tensor:
    """t's elements read from base at `positions` (`_positions`), with the history that
    gives: a view's history taken again from its base's current one."""
    flat = s.reshape(_reals(base), (-1,))
    elements = indexing.getitem(flat, positions)
    return cn.view_as_complex(elements) if t.dtype.kind == "c" else elements


def _commit_view(t: Tensor, result: Tensor, op: str) -> Tensor:
    """An in-place change of the view t that autograd records, as PyTorch's (CopySlices):
    the base's new value is its old one with t's elements replaced (an `index_put` at their
    positions, so gradients reach the old base and the new values), and t's history is read
    back from the new base. A view of another dtype than its base's (`z.real`,
    `view_as_real(z)`, `view_as_complex(x)`) is written in the parts of complex values."""
    base = t._base
    positions = _positions(t, base)
    if result.dtype != t.dtype:
        result = m.cast(result, t.dtype)
    old = _reals(_snapshot(base))
    flat = s.reshape(old, (-1,))
    new = s.reshape(indexing.index_put(flat, (positions,), _reals(result), False), old.shape)
    _commit(base, cn.view_as_complex(new) if base.dtype.kind == "c" else new, op, True)
    history = _read_view(t, base, positions)  # of the base's memory, which t shares
    t.grad_fn, t._requires_grad = history.grad_fn, True
    meta_of(t).base_fn = base.grad_fn  # t's history is the new base's: not out of date
    return t


def _retake(t: Tensor) -> bool:
    """The history of the view t, whose base was changed in place (a new history) since t's
    was made, taken again from the base's, as PyTorch's views do; False where it cannot be
    (a base that is not contiguous). (`kiln.eager.tensor.RETAKE_VIEW`.)"""
    meta = t._meta
    base = meta.base
    positions = _positions(t, base)
    if positions is None:
        return False
    with enable_grad():
        history = _read_view(t, base, positions)
    t.grad_fn, t._requires_grad = history.grad_fn, history._requires_grad
    meta.base_fn = base.grad_fn
    return True


def _refresh(t: Tensor) -> None:
    """t's history taken again where t is a view whose base's history changed since (else its
    own change would be recorded on its old value)."""
    meta = t._meta
    if meta is not None and meta.base is not None:
        check_view(t, meta)


def _shared_memory_error(op: str, t: Tensor, e: ValueError) -> ShapeMismatchError:
    """A write into a view whose elements share memory (broadcast_to's): PyTorch's
    RuntimeError 'unsupported operation: more than one element of the written-to tensor refers
    to a single memory location'."""
    return node_error(
        ShapeMismatchError,
        "unsupported operation: more than one element of the written-to tensor refers to a "
        f"single memory location; clone() it first ({e})",
        op=op,
        site=user_site(),
        inputs=[describe(t)],
    )


def _commit_sparse(t: Tensor, result: Tensor, op: str, recording: bool) -> Tensor:
    """`_commit` where a sparse tensor is involved: a sparse `t` takes the result's entries
    (their number may change, as PyTorch's); a strided `t` its strided value."""
    if type(t) not in _SPARSE:
        return _commit(t, result.to_dense(), op, recording)
    if type(result) is not type(t) or t.layout is not result.layout:
        raise layout_error(f"{op} (a {result.layout.name} result into a {t.layout.name} tensor)",
                           t, result, layout=t.layout.name)  # fmt: skip
    if result.dtype != t.dtype:
        result = bind(REGISTRY["cast"], result, dtype=t.dtype)
    replace(t, result)
    _bump(t, op)
    if recording and result._requires_grad:
        t.grad_fn, t._requires_grad = result.grad_fn, True
    return t


def _zero(t):
    """`zero_()`: no entries for a sparse tensor (PyTorch's), zeros for a strided one."""
    if type(t) is SparseCompressedTensor:
        return compressed_like(t, None)  # no entries, as PyTorch's
    return sparse_zeros_like(t) if type(t) is SparseTensor else _copy(t, 0)


_SPARSE = frozenset((SparseTensor, SparseCompressedTensor))  # tensors whose nnz may change


def overwrite(t: Tensor, value: Tensor, op: str = "copy_", site: str | None = None) -> None:
    """`t.copy_(value)` under no_grad where `value` is a CPU tensor already known to fit
    (t's shape, a dtype t takes) and to share no memory with t: an optimizer's new value.
    The write and the version bump, without copy_'s checks (which cost more than the write
    of a small parameter). `site`: the user's line that made the change (found from the
    stack where not given: a caller writing several tensors finds it once).

    >>> import kiln as kn
    >>> w = kn.zeros(2)
    >>> overwrite(w, kn.tensor([1.0, 2.0])); w, w._version
    (tensor([1., 2.]), 1)
    """
    if t._device != "cpu" or type(t) in _SPARSE or type(value) is not Tensor:
        with no_grad():
            t.copy_(value)
        return
    np.copyto(t._data, value._data, casting="unsafe")
    _bump(t, op, site)


def _bump(t: Tensor, op: str, site: str | None = None) -> None:
    """One more in-place change of t's data (and its views'), by `op` at `site` (None: the
    user's line that called here)."""
    vc = version_of(t)
    vc.value += 1
    vc.op, vc.site = op, site if site is not None else user_site()


def _snapshot(t: Tensor) -> Tensor:
    """`t`'s current value and history, in its own memory: what the recorded ops save, so
    that overwriting `t` leaves them intact."""
    s = make(t._data.copy(), t._device)
    s.grad_fn, s._requires_grad = t.grad_fn, t._requires_grad
    return s


# In-place methods whose PyTorch kernels read an overlapping input without refusing it (a 0-d
# fill value, the matrix products, composites that read a fresh tensor)
OVERLAP_ALLOWED = frozenset({
    "fill_", "masked_fill_", "masked_scatter_", "index_fill_", "addmm_", "addmv_", "baddbmm_",
    "addbmm_", "ldexp_", "float_power_",
})  # fmt: skip


# in-place methods whose new value never reads the old one
_OVERWRITES = frozenset({"copy_", "fill_", "zero_"})


def _inplace(name: str, compute):
    checks = name not in OVERLAP_ALLOWED
    # PyTorch's fill_ and zero_ write one value wherever the tensor points, shared memory too
    # (an expanded or overlapping as_strided view; fill_ of a tensor value: not an expanded
    # one); the other methods refuse shared memory
    shared_ok = name in ("fill_", "zero_")

    def method(self, *args, **kwargs):
        local = trace_locals.symbol_of(self)  # (called unbound: `kn.Tensor.add_(t, 1)`)
        if local is not None:
            getattr(local, name)(*args, **kwargs)
            return self
        if not shared_ok or (args and isinstance(args[0], Tensor) and _expanded(self._data)):
            _check_shared(self, name)
        local = _traced_into_constant(self, name, (*args, *kwargs.values()))
        if local is not None:
            getattr(local, name)(*args, **kwargs)
            return self
        if checks:
            check_no_overlap(self, (*args, *kwargs.values()), name)
        value_grad = any(isinstance(a, Tensor) and a._requires_grad
                         for a in (*args, *kwargs.values()))  # fmt: skip
        recording = _check(self, name, value_grad)
        if recording:
            _refresh(self)
        source = _snapshot(self) if recording else self.detach()
        if dispatch.traced_value is not None and type(self) is not Tensor:
            traced = dispatch.traced_value(self)  # a module's value in a kn.compile trace
            source = source if traced is None else traced
        dual = dispatch.dual
        if dual:  # a forward-AD level: the new value's tangent from self's
            forward_ad.carry(self, source)
        result = compute(source, *args, **kwargs)
        if (
            recording
            and source.requires_grad
            and (getattr(result, "grad_fn", None) is None or name in _OVERWRITES)
        ):  # keeps the old history, with a zero gradient (PyTorch's CopyBackwards: a copy_
            # from a tensor that requires grad too)
            result = m.where(False, source, result)
        if dual:  # (no lambda: it would make these closure cells, which costs every call)
            return forward_ad.commit(self, result, _commit, name, recording)
        return _commit(self, result, name, recording)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: `t.{name}(…)` changes t (and its views) and returns it."
    return method


def _alpha(op):
    return lambda t, other, alpha=1: op(t, other, alpha=alpha)


def _copy(t, src):
    if isinstance(src, Tensor) and isinstance(t, Tensor) and src._device != t._device:
        src = src.to(t._device)
    (src,) = core.lift(src)
    if src.dtype != t.dtype:
        src = m.cast(src, t.dtype)
    return s.broadcast_to(src, t.shape) if src.shape != t.shape else src


def _fill(t, value):
    if getattr(value, "ndim", 0) != 0:  # a tensor's one value, not its elements (PyTorch's)
        raise call_error(UsageError, f"fill_ only supports 0-dimension value tensor but got "
                         f"tensor with {value.ndim} dimensions.", "fill_", t, value)  # fmt: skip
    m.check_fits(value, t.dtype, "fill_", t)
    if isinstance(value, (bool, int, float, complex)):  # in t's dtype, not rounded first
        value = dt.number_array(value, t.dtype, "fill_", t)
    return _copy(t, value)


def _abs(t):
    """abs written back: refused on complex tensors, whose abs is real (as PyTorch refuses)."""
    if t.dtype.kind == "c":
        raise call_error(UsageError, "In-place abs is not supported for complex tensors.",
                         "abs_", t)  # fmt: skip
    return m.abs(t)


INPLACE = {
    "abs_": _abs,
    "absolute_": _abs,
    "add_": _alpha(m.add),
    "sub_": _alpha(m.sub),
    "mul_": m.mul,
    "div_": tm.div,
    "clamp_": lambda t, min=None, max=None: m.clip(t, min, max),  # noqa: A006
    "addcmul_": tm.addcmul,
    "addcdiv_": tm.addcdiv,
    "lerp_": tm.lerp,
    "zero_": _zero,
    "fill_": _fill,
    "copy_": _copy,
    "fill_diagonal_": lambda t, fill_value, wrap=False: tmore.fill_diagonal(t, fill_value, wrap),
}
OPERATORS = {
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__idiv__": "div_",  # PyTorch's name too
    "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
    "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
    "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
}  # fmt: skip


# -- item assignment ---------------------------------------------------------------------------


def _values(t: Tensor, value):
    """`value` as a tensor or array of t's dtype (item assignment casts, as PyTorch's)."""
    if isinstance(value, Tensor):
        if value._device != t._device:
            value = value.to(t._device)
        return value if value.dtype == t.dtype else m.cast(value, t.dtype)
    if type(value) is int:  # an int64 first, whatever t's dtype
        value = dt.int64_item(value, dt.as_dtype(t.dtype), "setitem", t)
    elif type(value) is float or type(value) is complex:
        # refused where t's dtype cannot hold it, as PyTorch's (whose float16 takes inf)
        target = t._data.dtype  # (NumPy's: a kiln dtype compares slowly)
        common = type(value) is float and -3.4e38 < value < 3.4e38 and target.kind == "f"
        if not common and target != np.float16:  # (common: any float dtype holds it)
            value = dt.python_float(value, target, "setitem", t)
    return np.asarray(value, t.dtype)


def _traced_into_constant(t: Tensor, op: str, values):
    """The graph value to change instead of `t` when the in-place change `op` writes a traced
    value into a plain eager tensor (one of constants): a tensor the kn.compile'd function
    made itself (`outs = kn.zeros(T, n)`) becomes its graph value from now on
    (kiln/frontend/trace_locals.py). A tensor from outside the function is refused, with what
    to write instead (the compiled program cannot change it). None otherwise."""
    if type(t) is not Tensor or t._requires_grad or not any(isinstance(v, Symbol)
                                                            for v in values):  # fmt: skip
        return None  # (a leaf that requires grad: the in-place change's own refusal)
    value = trace_locals.promote(t, op)
    if value is not None:
        return value
    error = node_error(
        GraphError,
        f"{op} writes a traced value into a tensor made outside the compiled function (or "
        "from one made outside it), which the compiled program cannot change; make "
        "the buffer inside the function with a factory (`kn.zeros(T, n)`) or from an "
        "argument (`x.new_zeros((T, n))`), or collect the pieces in a list and `kn.stack` "
        "them",
        op=op, site=user_site(), inputs=[describe(t)],
    )  # fmt: skip
    error.written = t  # (kn.compile takes a captured one as an input and traces again)
    raise error


def setitem(self, index, value) -> None:
    """`t[index] = value` in place, with PyTorch's indexing rules (`kn.getitem`). Recorded for
    autograd as `index_put` (gradients reach t's earlier value and value) when either needs it;
    a leaf that requires grad refuses it, as PyTorch's does."""
    local = _traced_into_constant(self, "setitem", (value, *(index if type(index) is tuple
                                                              else (index,))))  # fmt: skip
    if local is not None:
        local[index] = value
        return
    if dispatch.dual and forward_ad.setitem(self, index, value, setitem):
        return  # (a forward-AD level: done with its tangent)
    if isinstance(value, Tensor) and value.dtype != self.dtype:
        indexing.check_put_dtype(self, index, value)
    if type(self) is Tensor and shares_elements(self._data):  # the written elements' layout
        _check_shared(self[index] if is_basic_index(index) else self, "setitem")
    if isinstance(value, Tensor):
        # the written elements: t[index] for a basic index, else t (PyTorch's index_put_)
        check_no_overlap(self[index] if is_basic_index(index) else self, (value,), "setitem")
    recording = _check(self, "setitem", isinstance(value, Tensor) and value._requires_grad)
    value = _values(self, value)
    if recording and shares_elements(self._data) and is_basic_index(index):
        # the written elements alone, a view of self's base: writing all of self back would
        # put the unwritten copies of an element over the written one
        self[index].copy_(value)
        return
    if recording:
        _refresh(self)
        _commit(self, indexing.put(_snapshot(self), index, value, False), "setitem", True)
        return
    # not recorded: written straight into the data, by index_put's own kernel (no copy)
    spec, _, arrays, axes = indexing.parse(self, indexing.items_of(index), selects=False)
    xp = np if self._device == "cpu" else get_backend(self._device).activate()
    datas = [a._data if isinstance(a, Tensor) else xp.asarray(a) for a in (value, *arrays)]
    attrs = {"spec": indexing.trim(spec, self.ndim), "axes": tuple(axes), "accumulate": False}
    check_rules(_INDEX_PUT, [self._data, *datas], attrs)
    try:
        write_index(xp, self._data, *datas, **attrs)
    except ValueError as e:  # a read-only view (broadcast_to)
        raise _shared_memory_error("setitem", self, e) from None
    _bump(self, "setitem")


def _index_put(t, indices, values, accumulate=False):
    if isinstance(values, Tensor) and values.dtype != t.dtype:
        raise DTypeMismatchError(
            f"Index put requires the source and destination dtypes match, got {t.dtype} for "
            f"the destination and {values.dtype} for the source. (index_put_ on {describe(t)})"
        )
    return indexing.index_put(t, indices, values, accumulate)


INPLACE["index_put_"] = _index_put


def _float_power(t, exponent):
    """float_power written back: refused, as PyTorch refuses it, where t's dtype is not the
    result's (float64, or complex128 where either is complex)."""
    result = tem.float_power(t, exponent)
    if result.dtype != t.dtype:
        raise call_error(DTypeMismatchError, f"the base given to float_power_ has dtype "
                         f"{t.dtype} but the operation's result requires dtype {result.dtype}",
                         "float_power_", t)  # fmt: skip
    return result


INPLACE["float_power_"] = _float_power


# PyTorch's in-place forms of methods that keep the shape: `t.name_(...)` is `t.name(...)`
# written into t (its dtype kept), by the one `_inplace` path above.
SAME_SHAPE = (
    "acos acosh addcdiv addcmul addmm addmv addr arccos arccosh arcsin arcsinh "
    "arctan2 arctan arctanh asin asinh atan2 atan atanh baddbmm bitwise_and bitwise_left_shift "
    "bitwise_not bitwise_or bitwise_right_shift bitwise_xor ceil clamp_max clamp_min clip "
    "copysign cos cosh cumprod cumsum deg2rad divide eq erf erfc exp2 exp expm1 fix "
    "float_power floor floor_divide fmod frac ge greater greater_equal gt heaviside hypot "
    "index_add index_copy index_fill le lerp less less_equal log10 log1p log2 log logical_and "
    "logical_not logical_or logical_xor logit lt masked_fill multiply nan_to_num ne neg negative "
    "not_equal pow rad2deg reciprocal relu remainder round rsqrt scatter scatter_add "
    "scatter_reduce sgn sigmoid sign sin sinc sinh sqrt square subtract tan tanh tril triu "
    "true_divide trunc xlogy"
).split()
SAME_SHAPE += ["masked_scatter", "put", "nextafter", "renorm"]
SAME_SHAPE += "digamma erfinv i0 igamma igammac lgamma mvlgamma polygamma".split()
SAME_SHAPE += "addbmm gcd lcm ldexp index_reduce".split()


def install(cls) -> None:
    retake_views_by(_retake)
    cls.clamp = lambda self, min=None, max=None: m.clip(self, min, max)  # noqa: A006
    for name in SAME_SHAPE:
        if not hasattr(cls, f"{name}_"):
            INPLACE.setdefault(f"{name}_", getattr(cls, name))
    for name, compute in INPLACE.items():
        setattr(cls, name, on_traced(_inplace(name, compute)))
    for name, method in OPERATORS.items():
        setattr(cls, name, getattr(cls, method))
    cls.__setitem__ = setitem
