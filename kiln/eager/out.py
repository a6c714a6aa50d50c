"""PyTorch's `out=` argument: the result written into a given eager tensor (a tuple of them
for functions that return a named tuple), with PyTorch's checks (no autograd through it; a
result dtype that the out dtype cannot hold by a same-kind cast refuses, and where PyTorch's
kernel wants the result's own dtype, any other dtype; an out of another shape is resized, with
PyTorch's warning unless empty). `takes_out` adds the keyword to a function, `factory_out` to
a factory (`zeros`, `arange`, ...), whose dtype then defaults to the out's."""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .. import dtypes as dt
from ..array_types import strided
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    AutogradError,
    DTypeMismatchError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import Symbol, user_site
from .grad_mode import no_grad, state
from .tensor import Tensor, describe

__all__ = ["check_no_overlap", "factory_out", "takes_out", "write_out"]

# out= functions whose PyTorch kernels write an out that overlaps an input (the matrix
# products); the others refuse it, as their in-place forms do
_OUT_OVERLAP_ALLOWED = frozenset(
    {"mm", "bmm", "matmul", "mv", "addmm", "addmv", "baddbmm", "addbmm"}
)


# the factories of 1-D ranges: PyTorch resizes their out only where its number of elements
# differs (an out of another shape, a non-contiguous view among them, keeps its shape)
_RANGES = frozenset({"arange", "range", "linspace", "logspace"})


# out= functions that refuse an out sharing any memory with an input, the same tensor
# included (PyTorch's cat checks `assert_no_overlap`, not only partial overlaps)
_OUT_NO_ALIAS = frozenset({"cat", "concat", "concatenate", "hstack"})


# out= functions whose PyTorch kernels want an out of the result's own dtype (the matrix
# products, the indexing and sorting functions, the rounding ones...: PyTorch's "Expected out
# tensor to have dtype float, but got double instead"), where the others cast by same kind
_OUT_SAME_DTYPE = frozenset(
    "addbmm addmm addmv amax amin argmax argmin baddbmm bmm ceil clamp clamp_max "
    "clamp_min clip complex conj_physical cross diag dot fix float_power floor frac gather "
    "heaviside histc index_add index_copy index_reduce index_select inner isneginf isposinf "
    "lerp logcumsumexp lu_solve masked_select matmul matrix_power mm msort multinomial mv "
    "nan_to_num nanquantile nonzero norm polar quantile renorm round searchsorted sgn sign "
    "signbit take_along_dim tril triu trunc where "
    # kn.linalg's (linalg.cond, eigvals, householder_product, matrix_rank, pinv cast)
    "cholesky det eigvalsh inv ldl_solve matrix_norm multi_dot solve solve_triangular svdvals "
    "vecdot vector_norm "
    "argsort bucketize chain_matmul hardshrink isin log_softmax scatter scatter_add "
    "scatter_reduce softmax take tensordot vdot frobenius_norm nuclear_norm slice_scatter "
    "view_as_complex_copy view_as_real_copy "
    # the unary ops PyTorch does not promote (its "Found dtype Double but expected Float";
    # kiln's conj_physical is named conj)
    "neg bitwise_not conj".split()
)

# out= functions that want the result's own dtype for real inputs only: abs of complex values
# writes a float or complex out
_OUT_SAME_DTYPE_IF_REAL = frozenset({"abs"})

# out= functions whose PyTorch kernels compute in the out's dtype, as their `dtype=` would
# (sum of floats into an int64 out: the values cast to int64, then summed); a `dtype=` that
# is not the out's is refused
_OUT_SETS_DTYPE = frozenset({"sum", "prod", "cumsum", "cumprod"})
# out= functions whose out is bool or uint8 (PyTorch's all/any), whatever the input
_OUT_TRUTH = frozenset({"all", "any"})


def _graph_value(o) -> bool:
    """Whether `o` is a graph-mode value, which never changes; a value in a kn.compile trace
    changes in place as the eager tensor it stands for (the program writes the argument)."""
    if not isinstance(o, Symbol):
        return False
    from ..tracing.prints import tracing_now

    return not tracing_now()


def _requires_grad(v) -> bool:
    """Whether v requires grad: an eager tensor's flag; a value of a kn.compile trace, as
    eager code would see it (one computed from an argument or Parameter that requires grad)."""
    if isinstance(v, Symbol):
        from ..frontend.functionalize import traced_requires_grad

        return not _graph_value(v) and traced_requires_grad(v)
    return getattr(v, "requires_grad", False)


def write_out(name: str, out, compute, inputs):
    """`compute()` written into `out`, which is returned (PyTorch's `fn(..., out=out)`); a
    named-tuple result goes into a tuple of outs, returned as `kiln.return_types.<name>_out`.

    >>> import kiln as kn
    >>> o = kn.zeros(2, dtype=kn.float64)
    >>> kn.add(kn.tensor([1, 2]), 1, out=o) is o, o
    (True, tensor([2., 3.], dtype=kiln.float64))
    """
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if _graph_value(o) or not hasattr(o, "copy_"):
            raise ArgumentTypeError(
                f"{name}(): out= takes an eager tensor, got {type(o).__name__} (graph values "
                f"never change: use the returned value) at {user_site()}"
            )
    if state.grad and any(_requires_grad(v) for v in (*outs, *inputs)):
        raise node_error(
            AutogradError,
            "functions with out=... arguments don't support automatic differentiation, but "
            "one of the arguments requires grad.",
            op=name,
            site=user_site(),
            called=True,
            inputs=[describe(v) for v in (*outs, *inputs) if hasattr(v, "requires_grad")],
        )
    if name not in _OUT_OVERLAP_ALLOWED:
        for o in outs:
            if isinstance(o, Symbol):  # a value of a kn.compile trace: its layout's rule
                from ..frontend.functionalize import check_no_overlap as check_traced

                check_traced(o, inputs, name)
            else:
                check_no_overlap(o, inputs, name)
    if name in _OUT_NO_ALIAS:  # (an input that is out itself, empty or not: refused too)
        for o in outs:
            for v in inputs:
                if v is o or (isinstance(v, Tensor) and _same_block(o, v)):
                    raise overlap_error(name, o, v)
    result = compute()
    if not isinstance(result, tuple):
        if isinstance(out, (tuple, list)):
            raise ArgumentTypeError(
                f"{name}(): out= takes one tensor here, got a {type(out).__name__} of "
                f"{len(outs)} at {user_site()}"
            )
        same = name in _OUT_SAME_DTYPE or (
            name in _OUT_SAME_DTYPE_IF_REAL
            and not any(getattr(getattr(v, "dtype", None), "kind", "") == "c" for v in inputs)
        )
        return _write_one(name, out, result, same)
    if len(outs) != len(result) or not isinstance(out, (tuple, list)):
        fields = ", ".join(getattr(result, "_fields", ()))
        raise ArgumentTypeError(
            f"{name}(): out= takes a tuple of {len(result)} tensors ({fields}), got "
            f"{type(out).__name__} at {user_site()}"
        )
    for o, r in zip(outs, result):
        _write_one(name, o, r, True)  # PyTorch's named-tuple kernels want the result's dtypes
    return _out_type(type(result))(*outs)


def _write_one(name: str, out, result, same_dtype: bool):
    if name in _OUT_TRUTH:  # (its out is bool or uint8: `_truth_input`)
        result = result.to(out.dtype)
    if same_dtype and out.dtype != result.dtype:
        _dtype_error(
            name,
            out,
            f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead",
        )
    if not dt.can_cast(result.dtype, out.dtype):
        _dtype_error(
            name,
            out,
            f"result type {result.dtype} can't be cast to the desired output type {out.dtype}",
        )
    if isinstance(result, Symbol) and not all(type(d) is int for d in result.shape):
        # a length the compiled run binds (`kn.nonzero(x, out=out)` in a kn.compile'd
        # function): out, made in the function, stands for the result from now on
        from ..frontend.trace_locals import take_value  # NOTE: lazy: the frontend's

        if take_value(out, result.to(out.dtype), name):
            return out
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. ({name} at {user_site()})",
                UserWarning,
                stacklevel=4,
            )
        out.resize_(tuple(result.shape))
    with no_grad():
        out.copy_(result)
    return out


@functools.cache
def _out_type(cls):
    """`kiln.return_types.max_out` for `max`: PyTorch's type of a named tuple written to out=."""
    from ..array_types import named_out

    return named_out(cls)


def _with_out_signature(fn, wrapper) -> None:
    """`wrapper.__signature__`: `fn`'s parameters with a keyword-only `out=None` (before a
    `**kwargs`), so that `inspect.signature` and help() show the keyword."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())
    if "out" in sig.parameters:
        return
    kw = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    wrapper.__signature__ = sig.replace(parameters=[*params[:at], kw, *params[at:]])


def takes_out(fn):
    """`fn` with PyTorch's keyword `out=`, written by `write_out`. `.without_out` is `fn`
    itself: the Tensor methods, which take no `out`, call it without the extra frame.

    >>> import kiln as kn
    >>> v, i = kn.zeros(0), kn.zeros(0, dtype=kn.int64)
    >>> r = kn.max(kn.tensor([[1.0, 3.0], [4.0, 2.0]]), 1, out=(v, i))
    >>> type(r).__name__, r.values is v, v.tolist(), i.tolist()
    ('max_out', True, [3.0, 4.0], [1, 0])
    """

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if fn.__name__ in _OUT_SETS_DTYPE and hasattr(out, "dtype"):
            kwargs["dtype"] = _out_dtype(fn.__name__, out, kwargs.get("dtype"))
        if fn.__name__ in _OUT_TRUTH and hasattr(out, "dtype") and args:
            args = (_truth_input(fn.__name__, out, args[0]), *args[1:])
        inputs = [a for a in (*args, *kwargs.values()) if not isinstance(a, (list, tuple))]
        inputs += [b for a in args if isinstance(a, (list, tuple)) for b in a]  # cat's list
        return write_out(fn.__name__, out, lambda: fn(*args, **kwargs), inputs)

    with_out.without_out = fn
    _with_out_signature(fn, with_out)
    return with_out


def _out_dtype(name: str, out, dtype):
    """The dtype a `_OUT_SETS_DTYPE` function computes in when writing `out`: out's, which a
    `dtype=` given must be (PyTorch's RuntimeError)."""
    if dtype is not None and dt.as_dtype(dtype) != out.dtype:
        _dtype_error(
            name,
            out,
            f"Expected out tensor to have dtype {dt.scalar_name(dt.as_dtype(dtype)).lower()}, "
            f"but got {dt.scalar_name(out.dtype).lower()} instead",
        )
    return out.dtype


def _truth_input(name: str, out, x):
    """all's/any's input for an `out` of dtype bool (x) or uint8 (x cast to uint8 first, as
    PyTorch's: all of [1.5, -0.5] into a uint8 out is 0); any other out dtype is refused."""
    if out.dtype not in (dt.bool_, dt.uint8):
        message = f"{name} only supports bool tensor for result, got: {dt.scalar_name(out.dtype)}"
        _dtype_error(name, out, message)
    if out.dtype == dt.bool_ or getattr(x, "dtype", None) == dt.uint8:
        return x
    return x.to(dt.uint8) if isinstance(x, (Tensor, Symbol)) else np.asarray(x).astype(np.uint8)


def _laid_out(result, memory_format):
    """A new tensor `result` laid out in the channels-last `memory_format`."""
    if _graph_value(result):
        from ..frontend.layouts import clone  # NOTE: lazy (the frontend builds on eager)

        return clone(result, memory_format)
    from .factories import like_memory  # NOTE: lazy (factories use this module)

    return like_memory(result, result, memory_format)


def factory_out(fn=None, *, pin_memory: bool = False, memory_format: bool = False):
    """The factory `fn` with PyTorch's keywords `out=` and `layout=` (and `pin_memory=`,
    `memory_format=` where PyTorch's factory has them). With `out`, the values are made in the
    out's dtype (a `dtype=` that differs refuses) and written into it, resized to the result's
    shape. kiln's tensors are strided and contiguous: `layout` takes `kn.strided` (or None),
    `memory_format` is accepted as the `*_like` factories accept it, and `pin_memory=True` is
    `Tensor.pin_memory()` (no accelerator: PyTorch's error).

    >>> import kiln as kn
    >>> o = kn.zeros(0, dtype=kn.int32)
    >>> kn.arange(3, out=o) is o, o, kn.ones(2, layout=kn.strided)
    (True, tensor([0, 1, 2], dtype=kiln.int32), tensor([1., 1.]))
    """
    if fn is None:
        return functools.partial(factory_out, pin_memory=pin_memory, memory_format=memory_format)
    sig = inspect.signature(fn)
    name = fn.__name__
    takes = {"pin_memory": pin_memory, "memory_format": memory_format}

    @functools.wraps(fn)
    def with_out(*args, out=None, layout=None, **kwargs):
        if layout is not None and layout is not strided:
            raise call_error(
                ArgumentError,
                f"{name}(): kiln's factories make strided tensors, got layout={layout}",
                name,
            )
        pin = kwargs.pop("pin_memory", False) if pin_memory else False
        fmt = kwargs.pop("memory_format", None) if memory_format else None
        result = fn(*args, **kwargs) if out is None else _factory_into(out, args, kwargs)
        if fmt is not None and out is None and fmt.name.startswith("channels_last"):
            result = _laid_out(result, fmt)  # (else C order: every other format's here)
        return result.pin_memory() if pin else result

    def _factory_into(out, args, kwargs):
        if _graph_value(out) or not hasattr(out, "copy_"):
            raise ArgumentTypeError(
                f"{name}(): out= takes an eager tensor, got {type(out).__name__} (graph values "
                f"never change: use the returned value) at {user_site()}"
            )
        bound = sig.bind(*args, **kwargs)
        dtype = bound.arguments.get("dtype")
        if dtype is None:
            bound.arguments["dtype"] = out.dtype
        elif dt.as_dtype(dtype) != out.dtype:
            raise call_error(
                DTypeMismatchError,
                f"dtype {dt.as_dtype(dtype)} does not match dtype of out parameter "
                f"({out.dtype})",
                name, out,
            )  # fmt: skip
        if state.grad and _requires_grad(out):
            raise call_error(
                AutogradError,
                "functions with out=... arguments don't support automatic differentiation, "
                "but one of the arguments requires grad.",
                name, out,
            )  # fmt: skip
        result = fn(*bound.args, **bound.kwargs)
        if name == "arange" and out.numel() not in (0, result.numel()):  # PyTorch's warning
            warnings.warn(
                f"The number of elements in the out tensor of shape {list(out.shape)} is "
                f"{out.numel()} which does not match the computed number of elements "
                f"{result.numel()}. Note that this may occur as a result of rounding error. "
                f"The out tensor will be resized to a tensor of shape ({result.numel()},).",
                UserWarning,
                stacklevel=3,
            )
        if name in _RANGES and out.numel() == result.numel():
            result = result.reshape(tuple(out.shape))  # (PyTorch's ranges keep out's shape)
        elif tuple(out.shape) != tuple(result.shape):
            out.resize_(tuple(result.shape))
        with no_grad():
            out.copy_(result)
        return out

    with_out.without_out = fn
    params = list(sig.parameters.values())
    added = [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=d)
        for k, d in [("out", None), ("layout", None), ("pin_memory", False),
                     ("memory_format", None)]
        if k not in sig.parameters and takes.get(k, True)
    ]  # fmt: skip
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    with_out.__signature__ = sig.replace(parameters=[*params[:at], *added, *params[at:]])
    return with_out


def _dense(a: np.ndarray) -> bool:
    """Whether `a`'s elements fill a block of memory without gaps or repeats (PyTorch's
    non-overlapping and dense): its strides, by size, are each the previous extent."""
    step = a.itemsize
    for stride, size in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1):
        if stride != step:
            return False
        step *= size
    return True


def partial_overlap(a, b) -> bool:
    """PyTorch's partial overlap of two CPU arrays: both dense, their memory blocks meet, and
    they are not one block with one layout (the same elements in the same order: allowed).
    Arrays that are not dense are not checked (PyTorch's "too hard")."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.size == 0 or b.size == 0:
        return False
    if not _dense(a) or not _dense(b):
        return False
    (a0, a1), (b0, b1) = np.lib.array_utils.byte_bounds(a), np.lib.array_utils.byte_bounds(b)
    if (a0, a1) == (b0, b1):
        return a.strides != b.strides or a.shape != b.shape
    return a0 < b1 and b0 < a1


def _same_block(a, b) -> bool:
    """Whether two CPU tensors hold one nonempty memory block, laid out alike."""
    x, y = a._data, b._data
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.size == 0 or y.size == 0:
        return False
    bounds = np.lib.array_utils.byte_bounds
    return bounds(x) == bounds(y)


def check_no_overlap(t, values, op: str) -> None:
    """Refuses an in-place write into `t` that reads a tensor among `values` whose memory
    partly overlaps t's: PyTorch's RuntimeError (NumPy would compute a buffered result). The
    same tensor (`x.add_(x)`) and disjoint views are allowed.

    >>> import kiln as kn
    >>> y = kn.arange(4.0)
    >>> y[1:].add_(y[:-1])
    Traceback (most recent call last):
    kiln.errors.UsageError: unsupported operation: some elements of the input tensor and the ...
    """
    for v in values:
        if isinstance(v, Tensor) and v is not t and partial_overlap(t._data, v._data):
            raise overlap_error(op, t, v)


def overlap_error(op: str, t, v) -> UsageError:
    """PyTorch's refusal of a write into `t` that reads `v`, part of whose memory t shares."""
    return call_error(
        UsageError,
        "unsupported operation: some elements of the input tensor and the written-to tensor "
        "refer to a single memory location. Please clone() the tensor before performing the "
        "operation.",
        op, t, v,
    )  # fmt: skip


def _dtype_error(name: str, out, message: str):
    raise node_error(
        DTypeMismatchError, message, op=name, site=user_site(), called=True, inputs=[describe(out)]
    )
