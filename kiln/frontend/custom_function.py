"""`kn.autograd.Function`: a differentiable operation with a user's forward and backward, as
PyTorch's `torch.autograd.Function`, eagerly, in graph mode and under `kn.compile`.

`apply` runs `forward` with no gradient path (eagerly under `no_grad`; on Symbols, behind a
`stop_gradient`), then joins its result to the inputs by one `custom_grad` node whose vjp calls
`backward` (kiln/ops/state.py). On Symbols, `backward` runs on Symbols while the graph is
differentiated, so the same class works in every mode; its own ops are differentiable, so
higher-order gradients work where backward is written with differentiable ops.

>>> import kiln as kn
>>> class Cube(kn.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x**3
...     @staticmethod
...     def backward(ctx, grad):
...         (x,) = ctx.saved_tensors
...         return grad * 3 * x**2
>>> x = kn.tensor([1.0, 2.0], requires_grad=True)
>>> Cube.apply(x).sum().backward()
>>> x.grad
tensor([ 3., 12.])
"""

from __future__ import annotations

import functools
import math

from .. import dtypes as dt
from ..eager import dispatch, forward_ad
from ..eager.grad_mode import is_grad_enabled, no_grad
from ..eager.tensor import Tensor
from ..errors import AutogradError, ShapeMismatchError, UsageError, call_error
from ..graph.core import Symbol
from . import math as m
from . import shape as s
from .core import call

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What `forward` leaves for `backward`: `save_for_backward(*tensors)` and
    `saved_tensors`, `needs_input_grad` (one bool per argument of `apply`),
    `mark_non_differentiable(*outputs)`, `set_materialize_grads(value)`, `mark_dirty(*t)`,
    and any attribute `forward` sets."""

    def __init__(self, needs_input_grad: tuple):
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        self._non_differentiable: set = set()
        self._materialize = True
        self._dirty: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, (Tensor, Symbol)):
                raise call_error(UsageError, "save_for_backward can only save variables, but "
                                 f"argument is of type {type(t).__name__}",
                                 "save_for_backward")  # fmt: skip
        self._saved = tensors

    def save_for_forward(self, *tensors) -> None:
        """Tensors for `jvp` (forward mode), read there as `saved_tensors`, as PyTorch's."""
        self.save_for_backward(*tensors)

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *outputs) -> None:
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = bool(value)

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors


class _Backward:
    """The `function` attr of one `custom_grad` node: the class, its ctx, and how the packed
    cotangent splits into the outputs' (several differentiable outputs are packed into one
    value). Compared and hashed by identity, so CSE never merges two calls."""

    __slots__ = ("cls", "ctx", "n_args", "positions", "inputs", "parts", "n_outputs", "seen",
                 "others")  # fmt: skip

    def __init__(self, cls, ctx, n_args, positions, inputs, parts, n_outputs):
        self.cls, self.ctx, self.n_args, self.positions = cls, ctx, n_args, positions
        self.inputs, self.parts, self.n_outputs = inputs, parts, n_outputs
        # with set_materialize_grads(False), eagerly: the outputs whose gradient this
        # backward computed (the others get None, as PyTorch's); None: all materialized
        self.seen: set | None = None
        self.others: tuple = ()  # (k, shape, dtype) of tensor outputs without a gradient path

    def __repr__(self):
        return f"{self.cls.__name__}Backward"

    def backward(self, ct, n_inputs: int) -> tuple:
        """The cotangents of the node's inputs from the user's backward."""
        grads_out = [None] * self.n_outputs
        if self.parts is None:
            grads_out[0] = ct
        else:
            offset = 0
            for k, shape, dtype in self.parts:
                size = math.prod(shape)
                piece = s.reshape(s.getitem(ct, slice(offset, offset + size)), shape)
                grads_out[k] = m.cast(piece, dtype) if piece.dtype != dtype else piece
                offset += size
            if self.seen is not None:
                grads_out = [g if k in self.seen else None for k, g in enumerate(grads_out)]
                self.seen.clear()  # (for the next backward of a retained graph)
            elif self.others:  # non-differentiable outputs: zeros, as PyTorch materializes
                from ..eager.factories import zeros  # NOTE: lazy: eager builds on frontend

                for k, shape, dtype in self.others:
                    grads_out[k] = zeros(shape, dtype=dtype)
        result = self.cls.backward(self.ctx, *grads_out)
        result = result if isinstance(result, tuple) else (result,)
        name = f"{self.cls.__name__}Backward"
        if len(result) != self.n_args:
            if len(result) > self.n_args and all(g is None for g in result[self.n_args :]):
                result = result[: self.n_args]  # PyTorch accepts trailing Nones
            else:
                raise call_error(AutogradError, f"function {name} returned an incorrect number "
                                 f"of gradients (expected {self.n_args}, got {len(result)})",
                                 name)  # fmt: skip
        grads = []
        for position, x in zip(self.positions, self.inputs):
            g = result[position]
            if g is not None:
                if not isinstance(g, (Tensor, Symbol)):
                    raise call_error(AutogradError, "expected Variable or None (got "
                                     f"{type(g).__name__})", name)  # fmt: skip
                if tuple(g.shape) != tuple(x.shape):
                    g = _sum_to(g, tuple(x.shape), name, position)
                if g.dtype != x.dtype and dt.is_float(x.dtype):
                    g = m.cast(g, x.dtype)
            grads.append(g)
        return tuple(grads[:n_inputs])

    def batched(self) -> _Vmapped:
        return _Vmapped(self.cls)


def _sum_to(g, shape: tuple, name: str, position: int):
    """A gradient `g` of another shape than its input's, summed to `shape` where the input
    broadcasts to it, as PyTorch's; any other shape is refused."""
    lead = len(g.shape) - len(shape)
    if lead < 0 or any(d != 1 and d != c for d, c in zip(shape, tuple(g.shape)[lead:])):
        raise call_error(ShapeMismatchError, f"Function {name} returned an invalid gradient "
                         f"at index {position} - got {list(g.shape)} but expected shape "
                         f"compatible with {list(shape)}", name)  # fmt: skip
    dims = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1
    )
    g = m.sum(g, dims, keepdim=True) if dims else g
    return s.reshape(g, shape) if tuple(g.shape) != shape else g


class _Vmapped:
    """The `function` of a `custom_grad` node that vmap batched: its gradient would need the
    user's backward batched too, which kiln does not build."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __repr__(self):
        return f"vmap({self.cls.__name__}Backward)"

    def batched(self) -> _Vmapped:
        return self

    def backward(self, ct, n_inputs: int) -> tuple:
        name = f"{self.cls.__name__}Backward"
        raise call_error(UsageError, f"the gradient of {self.cls.__name__}.apply under vmap "
                         "is not implemented: differentiate inside vmap (vmap(grad(f))), or "
                         "apply the Function to the whole batch", name)  # fmt: skip


def _requires_grad(a) -> bool:
    if isinstance(a, Symbol):
        return dt.is_float(a.dtype)
    return isinstance(a, Tensor) and a.requires_grad


class Function:
    """Subclass it with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or
    PyTorch's newer form: `forward(*args)` and `setup_context(ctx, inputs, output)`), and
    call `YourFunction.apply(*args)`. `backward` returns one gradient (or None) per argument
    of `forward`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")  # fmt: skip

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")  # fmt: skip

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")  # fmt: skip

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx(tuple(_requires_grad(a) for a in args))
        if dispatch.dual:  # a forward-AD level: dual arguments give tangents by `jvp`
            tangents = forward_ad.tangents_of(args)
            if tangents is not None:
                return forward_ad.custom_function(
                    lambda: cls._apply(ctx, args, kwargs),
                    lambda: cls.jvp(ctx, *tangents),
                    tangents,
                )
        return cls._apply(ctx, args, kwargs)

    @classmethod
    def _apply(cls, ctx, args, kwargs):
        symbolic = any(isinstance(a, Symbol) for a in args)
        separate = cls.setup_context is not Function.setup_context
        if symbolic:
            out = cls._forward(ctx, separate, args, kwargs)
        else:
            with no_grad():
                out = cls._forward(ctx, separate, args, kwargs)
        single = not isinstance(out, tuple)
        outputs = (out,) if single else out
        if ctx._dirty and not all(any(d is o for o in outputs) for d in ctx._dirty):
            raise call_error(AutogradError, "Some elements marked as dirty during the forward "
                             "method were not returned as output. The inputs that are modified "
                             "inplace must all be outputs of the Function.",
                             f"{cls.__name__}Backward")  # fmt: skip
        positions = [k for k, a in enumerate(args) if isinstance(a, (Tensor, Symbol))]
        inputs = [args[k] for k in positions]
        wanted = any(ctx.needs_input_grad) and (symbolic or is_grad_enabled())
        differentiable = [
            k for k, o in enumerate(outputs)
            if isinstance(o, (Tensor, Symbol)) and dt.is_float(o.dtype)
            and id(o) not in ctx._non_differentiable
        ]  # fmt: skip
        if not wanted or not differentiable:
            if not symbolic and any(isinstance(o, Tensor) and o.requires_grad for o in outputs):
                # an input returned as it is: without history here, as PyTorch's
                outputs = tuple(o.detach() if isinstance(o, Tensor) and o.requires_grad
                                else o for o in outputs)  # fmt: skip
                return outputs[0] if single else outputs
            return out
        raw = outputs
        if symbolic:
            outputs = tuple(call("stop_gradient", o) if isinstance(o, Symbol) else o
                            for o in outputs)  # fmt: skip
        outputs = list(outputs)
        if len(differentiable) == 1 and len(outputs) == 1:
            handle = _Backward(cls, ctx, len(args), positions, inputs, None, 1)
            outputs[0] = call("custom_grad", outputs[0], *inputs, function=handle)
            _label(outputs[0], cls)
        else:  # several results: one node for all, on their values packed end to end
            wide = dt.result_type(*(outputs[k].dtype for k in differentiable))
            parts = [(k, tuple(outputs[k].shape), outputs[k].dtype) for k in differentiable]
            flat = [s.reshape(m.cast(outputs[k], wide) if outputs[k].dtype != wide
                              else outputs[k], (-1,)) for k in differentiable]  # fmt: skip
            handle = _Backward(cls, ctx, len(args), positions, inputs, parts, len(outputs))
            handle.others = tuple(
                (k, tuple(o.shape), o.dtype) for k, o in enumerate(outputs)
                if isinstance(o, (Tensor, Symbol)) and k not in differentiable
            )  # fmt: skip
            packed = call("custom_grad", s.concat(flat, 0), *inputs, function=handle)
            offset = 0
            for k, shape, dtype in parts:
                size = math.prod(shape)
                piece = s.reshape(s.getitem(packed, slice(offset, offset + size)), shape)
                outputs[k] = m.cast(piece, dtype) if dtype != wide else piece
                offset += size
            if not ctx._materialize and not symbolic:
                handle.seen = set()
                for k, _, _ in parts:
                    outputs[k].register_hook(functools.partial(_seen, handle.seen, k))
        _join_saved(ctx, raw, outputs)
        if ctx._dirty and not symbolic:
            _rebase_dirty(ctx, raw, outputs, cls)
        return outputs[0] if single else tuple(outputs)

    @classmethod
    def _forward(cls, ctx, separate, args, kwargs):
        if not separate:
            return cls.forward(ctx, *args, **kwargs)
        out = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, out)
        return out


def _seen(seen: set, k: int, grad) -> None:
    """A hook of output `k`: its gradient was computed in this backward."""
    seen.add(k)


def _join_saved(ctx, raw, outputs) -> None:
    """An output that `forward` saved is read in `backward` as the output `apply` returns
    (joined to the Function's node), as PyTorch's: a backward written with it is then
    differentiable through the Function again (`grad * result` of an exp)."""
    joined = {id(r): o for r, o in zip(raw, outputs) if o is not r}
    if joined and any(id(t) in joined for t in ctx._saved):
        ctx._saved = tuple(joined.get(id(t), t) for t in ctx._saved)


def _rebase_dirty(ctx, raw, outputs, cls) -> None:
    """An input that `forward` changed in place and marked dirty is returned itself, its
    history now the Function's node (as an in-place op's: kiln/frontend/inplace.py), so
    gradients through it, or through its views, reach the Function."""
    from .inplace import _commit_view  # NOTE: lazy: inplace builds on the frontend's ops

    for k, (r, o) in enumerate(zip(raw, outputs)):
        if o is r or not isinstance(r, Tensor) or not any(r is d for d in ctx._dirty):
            continue
        if r._requires_grad and r.grad_fn is None:
            raise call_error(AutogradError, "a leaf Variable that requires grad has been used "
                             "in an in-place operation.", f"{cls.__name__}Backward")  # fmt: skip
        if r._base is not None:
            _commit_view(r, o, f"{cls.__name__}Backward")
        else:
            r.grad_fn, r._requires_grad = o.grad_fn, True
        outputs[k] = r


def _label(y, cls) -> None:
    """The eager grad_fn's name: PyTorch's `<ClassName>Backward`."""
    meta = getattr(y, "_meta", None)
    node = getattr(meta, "grad_fn", None) if meta is not None else None
    if node is not None:
        node.label = f"{cls.__name__}Backward"


def once_differentiable(fn):
    """PyTorch's decorator for a backward that is not itself differentiable: runs it without
    recording (eagerly), so a second-order gradient through it is refused."""

    def wrapper(ctx, *grads):
        if any(isinstance(g, Symbol) for g in grads):
            return fn(ctx, *grads)
        with no_grad():
            result = fn(ctx, *grads)
        if not is_grad_enabled() or not any(getattr(g, "requires_grad", False) for g in grads):
            return result
        # create_graph with gradients that require grad: the results get a history whose
        # backward refuses, as PyTorch's (a second derivative through it would be wrong)
        if isinstance(result, tuple):
            return tuple(_refuse_backward(g) for g in result)
        return _refuse_backward(result)

    wrapper.__name__ = wrapper.__qualname__ = getattr(fn, "__name__", "backward")
    wrapper.__doc__ = fn.__doc__
    return wrapper


class _OnceDifferentiated(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise call_error(AutogradError, "trying to differentiate twice a function that was "
                         "marked with @once_differentiable", "once_differentiable")  # fmt: skip


def _refuse_backward(g):
    if not isinstance(g, Tensor) or not dt.is_float(g.dtype):
        return g
    return _OnceDifferentiated.apply(g.detach().requires_grad_())
