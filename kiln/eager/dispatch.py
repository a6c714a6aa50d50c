"""The eager half of `bind`: an op on Tensors runs now, on their device, and records its tape
entry when grad mode is on and an input requires grad. NumPy arrays in give NumPy arrays out.

This is the per-op path of eager mode, so it is kept short: one pass over the arguments, the
op's shape and dtype rules checked once per signature (then cached), the kernel, one Tensor.
The frontend's unary and binary functions come in shorter still (`unary_function`,
`binary_function`, made here): an op that is one ufunc runs it without binding.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DeviceError, DTypeError, ShapeError
from ..graph.core import Symbol, user_site
from ..ops import core as ops_core
from ..ops.random import next_seed
from ..runtime.backend import get_backend, ignore_fp_errors, restore_fp_errors
from . import autograd, grad_mode, sparse
from .grad_mode import state
from .out import write_out
from .saved import SavedTensorError, Unavailable
from .sparse import LAYOUTS as _LAYOUTS
from .tensor import PIECE, Tensor, check_view, describe, make, meta_of
from .trace_notes import note_derived, note_read

__all__ = ["binary_function", "eager_dispatch", "unary_function"]

_ndarray = np.ndarray
_CPU = "cpu"
# (custom_grad and with_grad give their value a history of its own: a view of their result is
# a view of it, not of the value, which has none)
_VIEWS = frozenset(
    op
    for op in ops_core.REGISTRY.values()
    if "view" in op.tags and op.name not in ("custom_grad", "with_grad")
)


# While kn.compile traces, a result that is not a view, of tensors the traced function made,
# is noted as made there too: a traced value may be written into it
# (kiln/frontend/trace_locals.py). One global test per op (`_short_paths` sets it).
_noting = False
_RANDOM = frozenset(op for op in ops_core.REGISTRY.values() if "random" in op.tags)
_VIEW, _ITERATOR, _C = "view", "iterator", "c"
# op -> what eager does after its kernel: `_VIEW` (link the result to the tensor it views), or
# the kind of PyTorch's layout of its result (`eager_layout`, where an input is not C-ordered;
# NumPy's layout is PyTorch's where every input is): reductions and matmul are C-ordered,
# casts and sort's indices `empty_like`'s, an elementwise result TensorIterator's
_AFTER = {
    **{op: _ITERATOR for op in ops_core.REGISTRY.values() if "elementwise" in op.tags},
    **{op: _C for op in ops_core.REGISTRY.values() if "reduction" in op.tags},
    ops_core.REGISTRY["matmul"]: _C,
    ops_core.REGISTRY["cast"]: "like",
    ops_core.REGISTRY["argsort"]: "like",
    ops_core.REGISTRY["concat"]: "cat",
    **{op: _VIEW for op in _VIEWS},
}
_checked: set = set()  # signatures (op, shapes, dtypes, attrs) whose rules passed
_CHECKED_MAX = 1 << 16


def eager_dispatch(op, args, attrs):
    """Runs `op` on `args` now: Tensors give a Tensor, anything else goes to NumPy."""
    if len(args) == 1 and (type(x := args[0]) is Tensor or type(x) in tensor_types):
        # the common case, kept short
        data = x._data
        try:
            key = (
                (op, data.shape, data.dtype, *attrs.items())
                if attrs
                else (op, data.shape, data.dtype)
            )
            checked = key in _checked
        except TypeError:  # an unhashable attr: check every time
            key, checked = None, False
        if not checked:
            _check(op, [data], attrs, args, key)
        meta = x._meta
        if meta is not None and meta.base is not None:
            check_view(x, meta, op)
        device = _CPU if meta is None else meta.device
        xp = np if device == _CPU else _xp(device)
        data = _kernel(op, xp, (data,), attrs)
        if type(data) is not _ndarray:
            data = xp.asarray(data)  # 0-d: NumPy's ufuncs give scalars
        out = make(data, device)
        after = _AFTER.get(op)
        if after is not None:
            if after is _VIEW:
                _link_view(out, x)
            elif after is not _ITERATOR and not x._data.flags.c_contiguous and device == _CPU:
                # (one operand: NumPy's order is TensorIterator's)
                out._data = _relaid(after, out._data, (x._data,))
        if _noting:
            _note(out, args)
        if meta is not None and meta.requires_grad and state.grad:
            autograd.record(op, args, attrs, out)
        return out
    return _dispatch(op, args, attrs)


def _kernel(op, xp, datas, attrs):
    """`op`'s kernel on `datas`. Kernels run with floating-point errors ignored, as PyTorch's
    do: under `np.seterr(...="raise")`, or a warnings filter that makes NumPy's warnings
    errors (`-W error`), a kernel that raised runs again with errors ignored (eager kernels
    write no input, so running again is safe; the common path pays nothing; NumPy's
    warnings themselves are filtered out in kiln/runtime/backend.py)."""
    try:
        return op.impl(xp, *datas, **attrs)
    except (FloatingPointError, RuntimeWarning):
        token = ignore_fp_errors()
        try:
            return op.impl(xp, *datas, **attrs)
        finally:
            restore_fp_errors(token)


def _dispatch(op, args, attrs):
    if traced_value is not None:
        node = _traced(op, args, attrs)
        if node is not None:
            return node
    device = None
    grad = False
    try:
        for a in args:
            if isinstance(a, Tensor):
                a._data  # noqa: B018 — an Unavailable (saved value) raises here
                if type(a) is not Tensor and type(a) in _LAYOUTS and not sparse.values_mode():
                    return _LAYOUTS[type(a)](op, args, attrs)  # the layout's own op
                meta = a._meta
                if meta is None:
                    here = _CPU
                else:
                    here = meta.device
                    grad = grad or meta.requires_grad
                    if meta.base is not None:
                        check_view(a, meta, op)
                if device is None:
                    device = here
                elif here is not device and here != device:
                    raise _device_error(op, args)
    except SavedTensorError:
        return _unavailable(op, args, attrs)
    if device is None:
        if op in _RANDOM and "key" not in attrs:
            attrs["key"] = (next_seed(), 0)
        return ops_core.run_eager(op, args, attrs)
    xp = np if device == _CPU else _xp(device)
    datas = [a._data if isinstance(a, Tensor) else xp.asarray(a) for a in args]
    try:
        if len(datas) == 2:  # binary ops: no list building
            a, b = datas
            key = (op, 2, a.shape, a.dtype, b.shape, b.dtype, *attrs.items())
        else:
            key = (op, len(datas), *[(d.shape, d.dtype) for d in datas], *attrs.items())
        checked = key in _checked
    except TypeError:
        key, checked = None, False
    if not checked:
        _check(op, datas, attrs, args, key)
    data = _kernel(op, xp, datas, attrs)
    if type(data) is not _ndarray:
        data = xp.asarray(data)
    out = make(data, device)
    after = _AFTER.get(op)
    if after is not None:
        if after is _VIEW:
            _link_view(out, args[0])
        elif device == _CPU:
            out._data = _relaid(after, out._data, datas)
    if _noting:
        _note(out, args)
    if grad and state.grad:
        autograd.record(op, args, attrs, out)
    return out


def _relaid(kind, data, datas):
    """`data`, the result of an op of kind `kind` (`_AFTER`) on the arrays `datas`, in
    PyTorch's layout: itself where every input is C-ordered (the common case: no more work),
    or it has under 2 dims (NumPy's then is PyTorch's)."""
    for d in datas:
        if not d.flags.c_contiguous:
            if data.ndim < 2 or kind is _ITERATOR and sum(a.ndim > 0 for a in datas) < 2:
                return data
            if kind is _C and data.flags.c_contiguous and 1 not in data.shape:
                return data  # (C order, and no size-1 dim whose stride NumPy may set otherwise)
            return _eager_layout(kind, data, datas)
    return data


def _eager_layout(kind, data, datas):
    global _eager_layout
    from ..frontend.result_layouts import eager_layout  # NOTE: lazy: the frontend is built on eager

    _eager_layout = eager_layout
    return eager_layout(kind, data, datas)


def _check(op, datas, attrs, args, key) -> None:
    """The op's shape and dtype rules (errors as in graph mode); `key` remembers a pass."""
    try:
        ops_core.check_rules(op, datas, attrs)
    except (ShapeError, DTypeError) as e:
        inputs = ", ".join(describe(a) if isinstance(a, Tensor) else f"array {a.dtype}"
                           f"{list(np.shape(a))}" for a in args)  # fmt: skip
        raise type(e)(f"{e}; inputs: {inputs}") from None
    if key is not None:
        if len(_checked) >= _CHECKED_MAX:
            _checked.clear()
        _checked.add(key)


def _note(out: Tensor, args) -> None:
    """While kn.compile traces: `out`, unless a view, noted as made in the trace where its
    tensor inputs were (`note_derived`); its inputs noted as read (`note_read`)."""
    note_read(args)
    if out._meta is None or out._meta.base is None:
        note_derived(out, args)


def _link_view(out: Tensor, x) -> None:
    """`out` shares `x`'s data (as PyTorch's views do): it shares its version counter too."""
    if not isinstance(x, Tensor):
        return
    a, b = out._data, x._data
    # Each one's storage: its base where that is an array (NumPy collapses a view's base to
    # the array owning the memory, or to the first array whose base is some other object: a
    # compiled program's pooled output, kiln/runtime/host_pool.py, or a buffer's array).
    base_a, base_b = a.base, b.base
    if (base_a if isinstance(base_a, type(a)) else a) is (
        base_b if isinstance(base_b, type(b)) else b
    ):
        base = x._base if x._base is not None else x
        meta = meta_of(out)
        meta.base = base  # its version counter is base's (`version_of`)
        meta.base_fn = base._grad_fn  # its history is out of date when base's changes
        meta.inference = base._inference  # a view of an inference tensor is one, and only it
        meta.no_grad_view = not state.grad
        multi = getattr(x._meta, "multi", None)
        if multi is not None:  # a view of a piece of split/unbind is one too, as PyTorch's
            meta.multi, meta.base_fn = multi, PIECE


def _xp(device: str):
    """The array module of a GPU device, made current: CuPy launches on the current device."""
    return get_backend(device).activate()


def _device_error(op, args) -> DeviceError:
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    devices = list(dict.fromkeys(a._device for _, a in tensors))
    inputs = ", ".join(f"input {i} {describe(a)}" for i, a in tensors)
    return DeviceError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices[0]} and {devices[1]}! (op {op.name}: {inputs}; at {user_site()})"
    )


def _unavailable(op, args, attrs) -> Unavailable:
    """An op on a saved value that backward may not read: typed by the rules, not computed."""
    reason = next(a._reason for a in args if isinstance(a, Unavailable))
    device = next(a._device for a in args if isinstance(a, Tensor))
    shape = op.shape_rule(*(np.shape(a) if not isinstance(a, Tensor) else a.shape for a in args),
                          **attrs)  # fmt: skip
    dtype = op.dtype_rule(*(dt.as_dtype(a.dtype) if isinstance(a, Tensor) else np.asarray(a).dtype
                            for a in args), **attrs)  # fmt: skip
    return Unavailable(shape, dtype, device, reason)


# -- the elementwise functions' short paths --------------------------------------------------
# Most eager code is chains of small elementwise ops, where the time is all per-op overhead,
# so a unary or binary frontend function whose op's kernel is one NumPy ufunc (and whose dtype
# rule is that ufunc's own type resolution: `kernel.ufunc_name`) runs the ufunc itself, without
# binding. A plain tensor (`Meta`) has `_meta` None: on the CPU, no autograd, no version
# counter, not a view; the result of a ufunc on plain tensors is plain, so it is made with two
# stores. Other CPU tensors (that require grad, have a version counter or are views) run the
# ufunc and record the tape. The ufunc runs with casting="no", so it takes only a loop of the
# operands' own dtypes (Python scalars are weak): there NumPy's result dtype is PyTorch's,
# while operands NumPy would cast (int32 with float32, integers in exp or true division, an int
# tensor with a Python float) raise and take the long path, `fallback` (the frontend's
# `lift_and_bind`), where `promote` casts them as PyTorch does (tests/test_promotion_table.py).
# The ufunc refuses what the op's rules refuse (dtypes it has no loop for, shapes that do not
# broadcast: tests/test_eager_fast.py holds them to it), and anything it raises goes down the
# long path, where the rules raise kiln's error with the op and the site. NumPy arrays in give
# NumPy arrays out; GPU tensors, and a Python scalar beside a tensor whose tape must keep it as
# `lift` makes it, take the long path too.

_new = object.__new__
_KILN_DTYPES = frozenset(dt.SUPPORTED)
_FLOATS = frozenset(d for d in dt.SUPPORTED if dt.is_float(d))
_HALF = frozenset({dt.bfloat16, dt.float16})  # the dtypes PyTorch's opmath widens
_SCALARS = frozenset({float, int, bool})
_COMPLEX = frozenset(dt.COMPLEX)
_plain = Tensor  # None while a thread is in inference mode (its results must be marked) or
# while kn.compile traces (`_short_paths`)
# Tensor subclasses whose ops are a Tensor's (kn.nn's Parameter and Buffer: `same_ops`), which
# the short paths take too; empty while a thread is in inference mode, as `_plain` is None
_same_ops: set = set()
tensor_types: frozenset = frozenset()

# While kn.compile traces a function: `traced_value(t)`, the graph value a Tensor `t` stands
# for in the trace (a module's Parameter or Buffer, or its `.data`: its Variable there), or
# None for any other tensor. An op on such a tensor is then a node of the trace, as the
# module's own reads of its parameters are (kiln/nn/parameter.py sets it).
traced_value = None


def same_ops(cls: type) -> type:
    """Lets the eager short paths take instances of `cls`, a Tensor subclass that adds no op
    behaviour of its own (a module's Parameter: every layer's ops read one), as Tensors."""
    global tensor_types
    _same_ops.add(cls)
    if _plain is not None and traced_value is None:
        tensor_types = frozenset(_same_ops)
    return cls


_inference = False  # whether this thread is in inference mode (`_inference_changed`)
dual = False  # whether a forward-AD level is entered (kiln/eager/forward_ad.py sets it)


def _inference_changed(inference: bool) -> None:
    global _inference
    _inference = inference
    _short_paths()


def _short_paths() -> None:
    """The short paths' tensor types: none in inference mode (results must be marked),
    while kn.compile traces (every result goes through `_dispatch` and `_after`) or under a
    forward-AD level (every op goes through `bind`, which gives tangents)."""
    global _plain, tensor_types, _noting
    plain = not _inference and traced_value is None and not dual
    _plain = Tensor if plain else None
    tensor_types = frozenset(_same_ops) if plain else frozenset()
    _noting = traced_value is not None


def set_traced_value(fn):
    """Makes `fn` the `traced_value` (None: no trace); returns the one it replaces. While one
    is set, the short paths leave every tensor to `_dispatch`, which asks it of the
    `same_ops` subclasses (and `_after` notes the results of constants made in the trace)."""
    global traced_value
    before, traced_value = traced_value, fn
    _short_paths()
    return before


def _traced(op, args, attrs):
    """`op` on `args` as a node of the trace where an argument stands for a graph value
    (`traced_value`), else None."""
    found = [traced_value(a) if isinstance(a, Tensor) and type(a) is not Tensor else None
             for a in args]  # fmt: skip
    if all(f is None for f in found):
        return None
    from ..frontend.core import lift  # NOTE: lazy: the frontend builds on this package

    values = lift(*[a if f is None else f for a, f in zip(args, found)])
    return ops_core.bind(op, *values, **attrs)


grad_mode.inference_watchers.append(_inference_changed)


def _ufunc(op):
    name = getattr(op.impl, "ufunc_name", None)
    return None if name is None else getattr(np, name)


def refuses_complex(op, ufunc) -> bool:
    """Whether NumPy's `ufunc` has a loop for complex values where the op refuses them
    (maximum, comparisons: PyTorch refuses them): the short paths then leave complex operands
    to the op's rules (one dtype check, on those ops only)."""
    if op.tags & {"complex", "complex_linear"}:
        return False
    try:
        ufunc.resolve_dtypes((*[np.dtype(np.complex128)] * ufunc.nin, *[None] * ufunc.nout))
    except TypeError:
        return False
    return True


def _complex_operand(x, y=None) -> bool:
    return (type(x) is _ndarray and x.dtype.kind == "c") or (
        type(y) is _ndarray and y.dtype.kind == "c"
    )


def _real_only(ufunc):
    """`ufunc` raising on complex operands: what the tape paths of an op that refuses them
    call (they leave for the op's rules on any error)."""

    def call(*args, **kwargs):
        if _complex_operand(*args):
            raise TypeError(f"{ufunc.__name__} of complex values")
        return ufunc(*args, **kwargs)

    return call


def unary_function(op, fallback):
    """The function `op(input, out=None)`: the ufunc on plain and CPU tensors and on NumPy arrays,
    `fallback(input)` for everything else, `write_out` for `out=` (which may come by position
    too: a keyword-only default makes every call slower, 16 ns against 4 measured)."""
    ufunc, name = _ufunc(op), op.name
    if ufunc is None:  # a kernel of its own (relu's)

        def fn(input, out=None):  # noqa: A002
            if out is not None:
                return _out(name, out, fallback, (input,))
            if (type(input) is _plain or type(input) in tensor_types) and (
                input._data.dtype.kind == "f"
            ):  # NOTE: a float tensor: what `fallback` binds after its promotion, which keeps it
                return eager_dispatch(op, (input,), {})
            return fallback(input)

        return fn
    ndarray, new = _ndarray, _new  # NOTE: closure cells (`_plain` stays global: see above)
    numpy_dtypes = _FLOATS if ops_core.computes_float(op) else _KILN_DTYPES
    real_only = refuses_complex(op, ufunc)
    tape_ufunc = _real_only(ufunc) if real_only else ufunc

    def fn(input, out=None):  # noqa: A002
        if out is not None:
            return _out(name, out, fn, (input,))
        if type(input) is _plain:
            if real_only and input._data.dtype in _COMPLEX:
                return fallback(input)
            if input._meta is None:
                try:
                    data = ufunc(input._data, casting="no")
                except Exception:
                    return fallback(input)
                if type(data) is not ndarray:
                    data = np.asarray(data)  # 0-d: NumPy's ufuncs give scalars
                t = new(Tensor)
                t._data = data
                t._meta = None
                return t
            return _unary_tape(op, tape_ufunc, input, fallback)
        elif type(input) is ndarray and input.dtype in numpy_dtypes:
            try:
                data = ufunc(input, casting="no")
            except Exception:
                return fallback(input)
            return data if type(data) is ndarray else np.asarray(data)
        elif type(input) in tensor_types and input._meta is not None:  # a Parameter
            return _unary_tape(op, tape_ufunc, input, fallback)
        return fallback(input)

    return fn


def binary_function(op, fallback):
    """The function `op(input, other, out=None)`: the ufunc on two plain tensors or one and a
    Python scalar (and on CPU tensors, recording the tape), `fallback(input, other)` for
    everything else."""
    ufunc, name = _ufunc(op), op.name
    if ufunc is None:

        def fn(input, other, out=None):  # noqa: A002
            if out is not None:
                return _out(name, out, fallback, (input, other))
            return fallback(input, other)

        return fn
    ndarray, new = _ndarray, _new
    opmath, opmath_first = op in OPMATH, OPMATH.get(op, False)
    real_only = refuses_complex(op, ufunc)
    tape_ufunc = _real_only(ufunc) if real_only else ufunc

    def fn(input, other, out=None):  # noqa: A002
        if out is not None:
            return _out(name, out, fn, (input, other))
        if type(input) is _plain:
            x = input._data
            if real_only and x.dtype in _COMPLEX:  # (a complex other fails casting="no")
                return fallback(input, other)
            if type(other) is _plain:
                if input._meta is not None or other._meta is not None:
                    return _binary_tape(op, tape_ufunc, input, other, fallback)
                y = other._data
            elif type(other) in _SCALARS:
                if opmath and x.dtype in _HALF and type(other) is float:
                    return fallback(input, other)  # see `OPMATH`
                if type(other) is int and (
                    not -128 <= other <= 127 or other < 0 and x.dtype.kind == "u"
                ):
                    return fallback(input, other)  # may not fit x's dtype: see `_WRAPPING`
                if input._meta is not None:
                    return _binary_tape(op, tape_ufunc, input, other, fallback)
                y = other
            elif type(other) in tensor_types:  # a Parameter
                return _binary_tape(op, tape_ufunc, input, other, fallback)
            else:
                return fallback(input, other)
        elif type(other) is _plain and type(input) in _SCALARS:
            if opmath_first and other._data.dtype in _HALF and type(input) is float:
                return fallback(input, other)
            if type(input) is int and (
                not -128 <= input <= 127 or input < 0 and other._data.dtype.kind == "u"
            ):
                return fallback(input, other)
            if other._meta is not None:
                return _binary_tape(op, tape_ufunc, input, other, fallback)
            x, y = input, other._data
            if real_only and y.dtype in _COMPLEX:
                return fallback(input, other)
        elif type(input) in tensor_types and (
            type(other) is _plain or type(other) in tensor_types
        ):  # a Parameter and a tensor
            return _binary_tape(op, tape_ufunc, input, other, fallback)
        else:
            return fallback(input, other)
        try:
            data = ufunc(x, y, casting="no")
        except Exception:
            return fallback(input, other)
        if type(data) is not ndarray:
            data = np.asarray(data)
        t = new(Tensor)
        t._data = data
        t._meta = None
        return t

    return fn


# PyTorch computes `t * s`, `s * t`, `t / s` and `t // s` of a bfloat16 or float16 tensor t and
# a Python float s another way ("opmath": in float32, s unrounded; the frontend's
# `lift_and_bind` does it), so those calls leave the short paths. op -> whether s may come
# first (`s // t` rounds s to t's dtype).
OPMATH = {ops_core.REGISTRY["mul"]: True, ops_core.REGISTRY["div"]: True,
          ops_core.REGISTRY["floordiv"]: False}  # fmt: skip


def opmath_operands(op, args):
    """(tensor, scalar, scalar_first) when `op(*args)` is computed the opmath way, else None.
    A NumPy float scalar (`np.sqrt(d)`) counts as the Python float it holds, as PyTorch's
    argument parser reads it."""
    if op not in OPMATH:
        return None
    a, b = args
    if _is_float_scalar(b) and _is_bfloat16(a):
        return a, float(b), False
    if _is_float_scalar(a) and OPMATH[op] and _is_bfloat16(b):
        return b, float(a), True
    return None


def _is_float_scalar(x) -> bool:
    return type(x) is float or isinstance(x, np.floating)


def _is_bfloat16(x) -> bool:
    return isinstance(x, (Symbol, Tensor)) and x.dtype in _HALF


def _out(name, out, fn, args):
    # NOTE: not a lambda inside the functions above: one would make their arguments closure
    # cells, which costs every call (about 7% of a unary op on a small tensor)
    return write_out(name, out, lambda: fn(*args), args)


def _unary_tape(op, ufunc, x, fallback):
    """`op(x)` on a CPU tensor that is not plain: its ufunc, then the tape entry."""
    meta = x._meta
    if meta.device != _CPU:
        return fallback(x)
    if meta.base is not None:
        check_view(x, meta, op)
    try:
        data = ufunc(x._data, casting="no")
    except Exception:
        return fallback(x)
    if type(data) is not _ndarray:
        data = np.asarray(data)
    out = _new(Tensor)  # as `make(data)`
    out._data = data
    out._meta = None
    if meta.requires_grad and state.grad:
        autograd.record(op, (x,), _NO_ATTRS, out, 4)  # user_site starts at fn's caller
    return out


def _binary_tape(op, ufunc, a, b, fallback):
    """`op(a, b)` where a tensor is not plain: CPU tensors (or one and a weak scalar, without
    grad) run the ufunc, then the tape entry."""
    # NOTE: `_operand` of each, inline (this is the per-op path of every op that records)
    grad = viewed = False
    if type(a) is Tensor or type(a) in tensor_types:
        meta = a._meta
        if meta is None:
            x = a._data
        elif meta.device is _CPU or meta.device == _CPU:
            if meta.base is not None:
                check_view(a, meta, op)
                viewed = True
            x, grad = a._data, meta.requires_grad
        else:
            return fallback(a, b)  # a GPU tensor
    else:
        x = a
    if type(b) is Tensor or type(b) in tensor_types:
        meta = b._meta
        if meta is None:
            y = b._data
        elif meta.device is _CPU or meta.device == _CPU:
            if meta.base is not None:
                check_view(b, meta, op)
                viewed = True
            y = b._data
            grad = grad or meta.requires_grad
        else:
            return fallback(a, b)
    else:
        y = b
    # (a bfloat16 tensor with a Python float that `opmath_operands` takes does not come here:
    # `binary_function` sends it down the long path first)
    grad = grad and state.grad
    if grad:
        saved = (a, b)
        if x is a or y is b:
            # the tape keeps a Python scalar as `lift` makes it: an array of the tensor's
            # dtype (weak), for a float tensor; the rest goes the long way
            if op.vjp is None:
                return fallback(a, b)
            if x is a:
                x = _lifted(x, y)
                if x is None:
                    return fallback(a, b)
                saved = (x, b)
            else:
                y = _lifted(y, x)
                if y is None:
                    return fallback(a, b)
                saved = (a, y)
    try:
        data = ufunc(x, y, casting="no")
    except Exception:
        return fallback(a, b)
    if type(data) is not _ndarray:
        data = np.asarray(data)
    elif viewed and type(x) is _ndarray and type(y) is _ndarray and x.ndim and y.ndim:
        # a view may be laid out otherwise than the other operand: PyTorch's order (with one
        # operand, or a scalar beside it, NumPy's order is PyTorch's)
        data = _relaid(_ITERATOR, data, (x, y))
    out = _new(Tensor)
    out._data = data
    out._meta = None
    if grad:
        autograd.record(op, saved, _NO_ATTRS, out, 4)  # user_site starts at fn's caller
    return out


_NO_ATTRS: dict = {}  # NOTE: shared: the tape never changes a node's attrs


def _lifted(scalar, array):
    """`scalar` as `lift` makes it beside a float `array`: an array of its dtype; None for
    other cases (an int tensor, a bool, an int float32 cannot hold…)."""
    dtype = array.dtype
    if dtype.kind != "f" or type(scalar) is bool:
        return None
    try:
        return _asarray(scalar, dtype)
    except (OverflowError, ValueError):
        return None


_asarray = np.asarray
