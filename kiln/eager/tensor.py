"""The eager `Tensor`: an array on a device, with PyTorch's autograd attributes.

A tensor and its views share a `Version` counter that in-place ops bump. Its operators and
PyTorch's methods are the frontend's functions, installed by `kiln.frontend` (`methods`,
`inplace`), which builds on this package; the device ones by `kiln.eager` (`devices`). The
ops run through `bind`, so eager and compiled code share every kernel.
"""

from __future__ import annotations

import copy
import warnings
import weakref

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..array_types import Size, device, size_attribute
from ..errors import (
    ArgumentTypeError,
    AutogradError,
    ShapeMismatchError,
    UsageError,
    node_error,
)
from ..graph.core import user_site
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..runtime.backend import get_backend
from . import grad_mode, printing
from .grad_mode import state

__all__ = ["Meta", "Tensor", "Version", "check_view", "describe"]

_new = object.__new__


def _real_item(t, ctype: str):
    """t's one value as a real number: a complex one is refused, as PyTorch's (RuntimeError)."""
    value = t.item()
    if isinstance(value, complex):
        raise UsageError(f"value cannot be converted to type {ctype} without overflow: {value}")
    return value


class Version:
    """How many in-place changes a tensor (and every view of its data) has had, and the last."""

    __slots__ = ("value", "op", "site")

    def __init__(self):
        self.value = 0
        self.op = None
        self.site = None


def describe(t) -> str:
    """`f32[2,3] on cpu`: how messages name a tensor.

    >>> import kiln as kn
    >>> describe(kn.zeros(2, 3))
    'f32[2,3] on cpu'
    """
    return f"{dt.short_name(t.dtype)}{sh.format_shape(t.shape)} on {t.device}"


class Meta:
    """What a tensor has beyond its data: its device, autograd state and version counter.

    A plain tensor (on the CPU, not requiring grad, no history, no `.grad`, no version
    counter, not a view, not made in inference mode) has none (`_meta` is None): results
    of ops on plain tensors are plain, and the frontend's short path (`kiln.frontend.core`)
    makes them with two stores.
    """

    # (`multi`, set only on pieces of split/chunk/unbind: (k, the op's name in PyTorch's
    # messages, the base's version and grad_fn then), for PyTorch's refusals to change them
    # in place (kiln/frontend/inplace.py) or use them after their base changed (check_view);
    # `no_grad_view`: a view made while grad mode was off, which PyTorch refuses to change in
    # place with grad mode on when its base requires grad; `accumulator`, set only on a leaf
    # whose `AccumulateGrad` node was asked for: a weak reference to it, or the node itself
    # once it has hooks, kiln/eager/nodes.py; `tangent`, set only on a tensor given one under
    # a forward-AD level: kiln/eager/forward_ad.py)
    __slots__ = ("device", "requires_grad", "grad_fn", "grad", "vc", "base", "base_fn",
                 "inference", "multi", "no_grad_view", "accumulator", "tangent")  # fmt: skip

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.requires_grad = self.inference = self.no_grad_view = False
        self.grad_fn = self.grad = self.vc = self.base = self.base_fn = None


# `Meta.base_fn` of a piece of split/chunk/unbind (its base's grad_fn then is in `multi`).
PIECE = object()

# Takes a view's history again from its base's; returns whether it could (installed by
# kiln/frontend/inplace.py with `retake_views_by`: the frontend builds on eager).
RETAKE_VIEW = None


def mark_pieces(pieces, name: str, saved: dict | None = None) -> tuple:
    """Marks the views `pieces`, the outputs of one multi-output view op (`name`: its name in
    PyTorch's messages, "Split"), when they require grad; returns them. Each piece's node is
    named as PyTorch's shared one (`SplitBackward0`), and `next_functions` list it with the
    piece's number (`output_nr`), as that one's output; `saved` are that one's `_saved_*`
    (`_saved_dim`...)."""
    for k, p in enumerate(pieces):
        if isinstance(p, Tensor) and p._requires_grad:
            meta = meta_of(p)  # (a piece of a piece keeps the first one's base state)
            kept = meta.multi[2:] if meta.base_fn is PIECE else (version_of(p).value, meta.base_fn)
            meta.multi, meta.base_fn = (k, name, *kept), PIECE  # (`check_view` sees each use)
            node = meta.grad_fn
            if node is not None:
                node.label = f"{name}Backward0"
                node.output_nr = k
                if saved is not None:
                    node.composite = saved
    return pieces


def retake_views_by(fn) -> None:
    """Makes `fn(view) -> bool` what `check_view` calls on a view whose history is stale."""
    global RETAKE_VIEW
    RETAKE_VIEW = fn


def check_view(t, meta: Meta, op=None) -> None:
    """A view whose base has had an in-place op recorded (a new history) since the view's
    history was made takes it again from the base's, as PyTorch's views do
    (`RETAKE_VIEW`); where it cannot (a base that is not contiguous), this raises rather
    than give a wrong gradient. `meta.base_fn`: the base's grad_fn the view's history is of.
    `op`: the op t is an input of, where known: a piece of split/unbind is refused only
    where that op records (`_records`), as PyTorch takes a view's history only there."""
    base = meta.base
    if base is None:
        return
    now = base._grad_fn
    if now is not meta.base_fn:
        multi = getattr(meta, "multi", None)  # (a piece of split/unbind: PyTorch refuses it
        if multi is not None:  # after any in-place change of its base, through detach() too)
            if now is multi[3] and version_of(base).value == multi[2]:
                return  # (its base has not changed in place since)
            if op is not None and not _records(op):
                return  # (its values are its memory's: only its history is out of date)
            raise node_error(
                AutogradError,
                f"Output {multi[0]} of {multi[1]} is a view and its base or another view of "
                "its base has been modified inplace. This view is the output of a function "
                "that returns multiple views. Such functions do not allow the output views "
                "to be modified inplace. You should replace the inplace operation by an "
                "out-of-place one.",
                op="view", site=user_site(), called=True,
                inputs=[describe(t), f"base {describe(base)}"],
            )  # fmt: skip
        if RETAKE_VIEW is not None and RETAKE_VIEW(t):
            return
        vc = version_of(base)
        raise node_error(
            AutogradError,
            f"a view of a tensor that was changed in place after the view was taken (by {vc.op} "
            f"at {vc.site}) is used: the view's autograd history is out of date, and kiln "
            "cannot take it again from a base that is not contiguous; take the view after the "
            "in-place change, or clone() it",
            op="view",
            site=user_site(),
            called=True,
            inputs=[describe(t), f"base {describe(base)}"],
        )


def _records(op) -> bool:
    """Whether an eager op records its inputs' history: in grad mode, one with a gradient
    (or a zero one, "nondiff": PyTorch records those as not implemented or as zero)."""
    return state.grad and (op.vjp is not None or "nondiff" in op.tags)


def make(data, device: str = "cpu") -> Tensor:
    """A tensor owning (not copying) the array `data`: no grad, no history."""
    t = _new(Tensor)
    t._data = data
    if device == "cpu" and not (grad_mode.inference_threads > 0 and state.inference):
        t._meta = None
    else:
        meta = t._meta = Meta(device)
        meta.inference = grad_mode.inference_threads > 0 and state.inference
    return t


def _unpickled(data, device: str, requires_grad: bool) -> Tensor:
    return make(data, device).requires_grad_(requires_grad)


def meta_of(t) -> Meta:
    """`t`'s Meta, made now if `t` is plain."""
    meta = t._meta
    if meta is None:
        meta = t._meta = Meta()
    return meta


def version_of(t) -> Version:
    """The version counter of `t`, made on first need: a view shares its base's (so a base
    gets one only when it or one of its views is changed in place).

    Until then its version is 0: the tape records 0 for a tensor without one, and the tape
    entry that made `t` (its `grad_fn`, whose `out` is t's data and `out_vc` None) gets the
    counter made here, so that it sees later changes of its output."""
    meta = t._meta
    if meta is None:
        meta = t._meta = Meta()
    vc = meta.vc
    if vc is None:
        if meta.base is not None:
            vc = meta.vc = version_of(meta.base)
        else:
            vc = meta.vc = _new(Version)  # as `Version()`, without the call of __init__
            vc.value = 0
            vc.op = vc.site = None
            node = meta.grad_fn
            if node is not None and node.out_vc is None and node.out is t._data:
                node.out_vc = vc  # at version 0, as recorded
    return vc


def _meta_property(name: str, default):
    """The Tensor attribute `name`, kept in its Meta (a plain tensor has the default)."""

    def get(self):
        meta = self._meta
        return default if meta is None else getattr(meta, name)

    def put(self, value):
        meta = self._meta
        if meta is None:
            if value is default or value == default and type(value) is type(default):
                return  # a plain tensor has it already
            meta = self._meta = Meta()
        setattr(meta, name, value)

    return property(get, put)


def _user_grad_fn(self):
    """The node that made this tensor, as user code sees it (an instance of its name's class:
    `Node._seen`); None for a leaf."""
    meta = self._meta
    if meta is None:
        return None
    node = meta.grad_fn
    return node if node is None or not node._plain else node._seen()


def _set_grad_fn(self, node) -> None:
    """A new history (an in-place change): `retain_grad()` moves to it, as PyTorch's."""
    meta = self._meta
    old = None if meta is None else meta.grad_fn
    if old is not None and old is not node and old.retained is not None:
        if old.retained() is self:
            old.retained = None
            if node is not None:
                node.retained = weakref.ref(self)
    Tensor._grad_fn.fset(self, node)


class Tensor:
    """An eager array with autograd: make one with `kn.tensor`, `kn.zeros`, `kn.from_numpy`…

    >>> import kiln as kn
    >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 4.])
    """

    __slots__ = ("_data", "_meta", "__weakref__")
    __array_priority__ = 1000  # NumPy defers `ndarray + Tensor` to Tensor.__radd__

    # The state kept in `_meta` (see `Meta`), by the names the rest of kiln reads.
    _device = _meta_property("device", "cpu")
    _requires_grad = _meta_property("requires_grad", False)
    _grad_fn = _meta_property("grad_fn", None)  # as `grad_fn`, as the tape holds it
    grad_fn = property(_user_grad_fn, _set_grad_fn)
    _grad = _meta_property("grad", None)
    _vc = _meta_property("vc", None)
    _base = _meta_property("base", None)
    _inference = _meta_property("inference", False)

    def __init__(self, *data, dtype=None, device=None, requires_grad: bool = False):
        """PyTorch's legacy constructor: `Tensor(2, 3)` or `Tensor(x.size())` is a 2x3 tensor
        of the default float dtype (zeros here; PyTorch leaves it uninitialized), `Tensor(data)`
        copies `data` into the default float dtype whatever its own (`kn.tensor` keeps ints as
        int64), `Tensor(tensor)` is an alias of it, `Tensor()` is empty. `dtype=` (a kiln
        extension) overrides the default."""
        from .legacy_types import legacy_new

        if device is not None and len(data) == 1 and isinstance(data[0], Tensor):
            raise UsageError("Tensor(tensor, device=device) is not supported: use tensor()")
        t = legacy_new(data, dtype or dt.DEFAULT_FLOAT, device or "cpu", requires_grad, "Tensor")
        for name in Tensor.__slots__[:-1]:
            setattr(self, name, getattr(t, name))

    # -- what it is --------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def dtype(self) -> dt.DType:
        return dt._PUBLIC[self._data.dtype]

    @property
    def device(self) -> device:
        """Where the data lives: a `kn.device` (also the string "cpu" or "cuda:N")."""
        return device(self._device)

    @property
    def is_cuda(self) -> bool:
        return self._device != "cpu"

    def is_floating_point(self) -> bool:
        """Whether the dtype is a float one (bfloat16 included), as PyTorch's.

        >>> import kiln as kn
        >>> kn.ones(2).is_floating_point(), kn.ones(2, dtype=kn.int64).is_floating_point()
        (True, False)
        """
        return dt.is_float(self.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self):
        """The number of elements (NumPy's `size`), and callable as PyTorch's `size()` (a
        `kn.Size`) and `size(dim)`.

        >>> import kiln as kn
        >>> t = kn.zeros(2, 3)
        >>> t.size, t.size(), t.size(-1)
        (6, kiln.Size([2, 3]), 3)
        """
        return size_attribute(self._data.shape)

    def numel(self) -> int:
        return self._data.size

    def dim(self) -> int:
        return self._data.ndim

    def is_inference(self) -> bool:
        return self._inference

    @property
    def is_leaf(self) -> bool:
        """True for tensors the user made (no `grad_fn`): the ones whose `.grad` fills."""
        return self._grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._change_requires_grad(value)  # refused on a non-leaf, even True (PyTorch's)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Marks a leaf for gradient accumulation (PyTorch's rules and messages); on a
        non-leaf, `requires_grad_()` returns it as it is and `requires_grad_(False)` fails."""
        if requires_grad and self.grad_fn is not None:
            return self
        return self._change_requires_grad(requires_grad)

    def _change_requires_grad(self, requires_grad: bool) -> Tensor:
        if self.grad_fn is not None:
            raise node_error(
                AutogradError,
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                f"var_no_grad = var.detach(). (the tensor is an output of {self.grad_fn.op.name})",
                op="requires_grad_",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        if requires_grad and not dt.is_differentiable(self.dtype):
            raise node_error(
                AutogradError,
                "only Tensors of floating point and complex dtype can require gradients",
                op="requires_grad_",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        if requires_grad and self._inference and not state.inference:
            raise node_error(
                AutogradError,
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed",
                op="requires_grad_",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (leaves, and tensors that `retain_grad()`)."""
        if self._requires_grad and type(self) is Tensor and self.grad_fn is None:
            from .trace_notes import check_grad_read  # NOTE: lazy (it reads kiln.ops)

            check_grad_read(self)
        if self._grad is None and self.grad_fn is not None and self.grad_fn.retained is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                f".retain_grad() on the non-leaf Tensor. ({describe(self)}, output of "
                f"{self.grad_fn.op.name} at {self.grad_fn.site})",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise ArgumentTypeError(
                    f"assigned grad must be a Tensor or None, got {type(value)}"
                )
            if value.shape != self.shape or value.dtype != self.dtype:
                raise node_error(
                    AutogradError,
                    "assigned grad has data of a different size or type",
                    op="grad",
                    site=user_site(),
                    called=True,
                    inputs=[describe(self), f"grad {describe(value)}"],
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def _version(self) -> int:
        meta = self._meta
        if meta is None:
            return 0
        if meta.vc is None and meta.base is not None:
            return meta.base._version
        return 0 if meta.vc is None else meta.vc.value

    # -- conversion --------------------------------------------------------------------------

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The array itself (shared, not copied), as PyTorch's `numpy()`; `force=True` takes
        it from a tensor that requires grad or lives on a GPU too (a host copy there).

        >>> import kiln as kn
        >>> try:
        ...     kn.ones(2, requires_grad=True).numpy()
        ... except RuntimeError as e:  # a kn.AutogradError, which is a RuntimeError
        ...     print(type(e).__name__, str(e).partition(" (op")[0])
        AutogradError Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.
        """  # noqa: E501
        if force and (self._requires_grad or self._device != "cpu"):
            return self.detach().cpu().numpy()
        if self._requires_grad and state.grad:  # (PyTorch's: allowed under no_grad)
            raise node_error(
                AutogradError,
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.",
                op="numpy",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        if self._device != "cpu":
            raise ArgumentTypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None and array.dtype != dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def item(self):
        """The one element as a Python number."""
        if self._data.size != 1:
            raise node_error(
                ShapeMismatchError,
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar",
                op="item",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        return self._host().item()

    def tolist(self):
        return self._host().tolist()

    def _host(self) -> np.ndarray:
        return get_backend(self._device).to_host(self._data)

    def __float__(self):
        return float(_real_item(self, "double"))

    def __complex__(self):
        return complex(self.item())

    def __int__(self):
        return int(_real_item(self, "int64_t"))

    def __index__(self):
        if not dt.is_int(self.dtype):
            raise ArgumentTypeError(
                f"only integer tensors of a single element can be an index, got {describe(self)}"
            )
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise node_error(
                ShapeMismatchError,
                "Boolean value of Tensor with more than one value is ambiguous",
                op="bool",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        return bool(self.item())

    def __format__(self, spec):
        """PyTorch's: a 0-d tensor formats as its value (`f"{t}"` is `3`, `f"{t:.2f}"`
        `3.00`); others as their str, and a format spec for them is a TypeError (torch 2.13's
        `object.__format__`), one-element tensors included."""
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise ArgumentTypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def __len__(self):
        if not self._data.ndim:
            raise ArgumentTypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if not self._data.ndim:
            raise ArgumentTypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    # -- history -----------------------------------------------------------------------------

    def detach(self) -> Tensor:
        """The same data (and version counter) without history: it does not require grad."""
        t = make(self._data, self._device)
        t._vc = version_of(self)
        t._inference = self._inference
        return t

    @property
    def data(self) -> Tensor:
        """PyTorch's `.data`: the same data without history (and its own version counter).
        Assigning a tensor to it makes this one share that tensor's memory, shape and dtype,
        keeping its own history and `.grad`, as PyTorch's (no version change).

        >>> import kiln as kn
        >>> w = kn.ones(2, requires_grad=True)
        >>> w.data = kn.zeros(3)
        >>> w
        tensor([0., 0., 0.], requires_grad=True)
        """
        t = make(self._data, self._device)
        t._inference = self._inference
        return t

    @data.setter
    def data(self, value) -> None:
        from .storage_objects import set_data  # NOTE: lazy (it builds on this module)

        set_data(self, value)

    def clone(self, *, memory_format=None) -> Tensor:
        """A copy that gradients flow through, laid out as PyTorch's: as itself where it is
        dense (`preserve_format`, the default), in C order with `contiguous_format`,
        channels-last with `channels_last` (4-D) or `channels_last_3d` (5-D)."""
        name = getattr(memory_format, "name", None)
        if name is not None and name.startswith("channels_last"):
            from ..frontend.result_layouts import in_memory_format  # NOTE: lazy (as below)

            return in_memory_format(self, memory_format, "clone", copy=True)
        out = bind(REGISTRY["cast"], self, dtype=self.dtype)
        if name == "contiguous_format" and isinstance(out, Tensor):
            from ..frontend.result_layouts import c_ordered  # NOTE: lazy (frontend needs eager)

            c_ordered(out)
        if out.grad_fn is not None:
            out.grad_fn.label = "CloneBackward0"  # PyTorch's name for a copy
        return out

    def contiguous(self, memory_format=None) -> Tensor:
        """Itself if its data is in row-major (C) order, else a row-major copy that gradients
        flow through (PyTorch's `contiguous`), so `view` can reshape it; with `memory_format`
        `kn.channels_last` (`channels_last_3d`), itself or a copy laid out so."""
        if memory_format is not None and getattr(memory_format, "name", "").startswith(
            "channels_last"
        ):
            from ..frontend.result_layouts import in_memory_format  # NOTE: lazy

            return in_memory_format(self, memory_format, "contiguous")
        data = self._data
        if data.flags.c_contiguous:
            return self
        xp = get_backend(self._device).activate()
        out = make(xp.ascontiguousarray(data), self._device)
        if self._requires_grad and state.grad:
            from .autograd import record

            record(REGISTRY["cast"], (self,), {"dtype": self.dtype}, out)
            out.grad_fn.label = "CloneBackward0"  # PyTorch's name for a copy
        return out

    def is_contiguous(self, memory_format=None) -> bool:
        if memory_format is not None and getattr(memory_format, "name", "").startswith(
            "channels_last"
        ):
            from ..frontend.layouts import in_format  # NOTE: lazy (frontend needs eager)
            from ..frontend.result_layouts import array_layout

            return in_format(array_layout(self._data), memory_format)
        return bool(self._data.flags.c_contiguous)

    def view(self, *shape, size=None, dtype=None) -> Tensor:
        """`reshape` that must not copy (PyTorch's `view`): an error when the data cannot be
        seen in that shape without copying. `view(dtype)` reads the same bytes as `dtype` (the
        last dim scales by the ratio of the element sizes; not differentiable, as PyTorch's).

        >>> import kiln as kn
        >>> kn.tensor([1.0, -2.0]).view(kn.int32)
        tensor([ 1065353216, -1073741824], dtype=kiln.int32)
        """
        if dtype is not None or size is not None:  # PyTorch's keywords: view(size=), view(dtype=)
            shape = (dtype,) if dtype is not None else (size,)
        if len(shape) == 1 and dt.is_dtype(shape[0]):
            from .storage import view_dtype  # NOTE: lazy: storage builds on this module

            return view_dtype(self, shape[0])
        out = self.reshape(*shape)
        if not isinstance(out, Tensor):  # a module's value in a kn.compile trace: its Symbol's
            return out
        if out._base is None and self._data.size > 1:
            raise node_error(
                ShapeMismatchError,
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead "
                f"(a view of shape {list(out.shape)} was asked for)",
                op="view",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        return out

    def stride(self, dim: int | None = None):
        """The step in elements between neighbours along each dim (a tuple), or along `dim`.

        >>> import kiln as kn
        >>> kn.zeros(2, 3).stride(), kn.zeros(2, 3).T.stride(0)
        ((3, 1), 1)
        """
        data = self._data
        steps = tuple(s // data.itemsize for s in data.strides)
        if not data.size and not any(steps):  # NumPy zeroes a new empty array's: PyTorch's C order
            steps = tuple(
                int(np.prod([max(n, 1) for n in data.shape[i + 1 :]])) for i in range(data.ndim)
            )
        return steps if dim is None else steps[sh.normalize_axis(dim, len(steps))]

    def storage_offset(self) -> int:
        """Where the first element lies in the storage it views, in elements.

        >>> import kiln as kn
        >>> kn.arange(6.0).reshape(2, 3)[1, 1:].storage_offset()
        4
        """
        from .storage import _root  # NOTE: lazy (storage builds on this module)

        return (_address(self._data) - _address(_root(self._data))) // self._data.itemsize

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """The type's name (`'kiln.FloatTensor'`, `'kiln.cuda.LongTensor'`) without an
        argument; with a dtype (or such a name, or a class `kn.LongTensor`) a tensor of that
        dtype (itself if it has it).

        >>> import kiln as kn
        >>> t = kn.zeros(2)
        >>> t.type(), t.type(kn.int64).dtype, t.type("kiln.DoubleTensor").dtype
        ('kiln.FloatTensor', kiln.int64, kiln.float64)
        """
        if dtype is None:
            return dt.type_name(self.dtype, self._device != "cpu")
        if getattr(dtype, "is_cuda", False) and isinstance(dtype, type):  # kn.cuda.FloatTensor
            return self.to("cuda" if self._device == "cpu" else self._device, dtype.dtype)
        return self.to(dt.dtype_of_type(dtype))

    def resize_(self, *sizes, size=None, memory_format=None) -> Tensor:
        """Gives the tensor the shape `sizes`, keeping its leading elements in row-major order
        (new ones are uninitialized), as PyTorch's `resize_`; a tensor that requires grad
        refuses. Where the elements do not fit in its memory, that memory is reallocated under
        every tensor on it, as PyTorch's storage: views taken earlier, its base and
        `detach()`ed aliases see the grown memory (found among Python's objects then, since
        no list of a memory's views is kept: it would cost every eager view op).

        >>> import kiln as kn
        >>> kn.tensor([1, 2, 3]).resize_(2)
        tensor([1, 2])
        """
        from .storage import resize  # NOTE: lazy: storage builds on this module

        return resize(self, (size,) if size is not None else sizes)  # PyTorch's resize_(size=)

    def retain_grad(self) -> None:
        """Keeps `.grad` of this non-leaf tensor at the next backward."""
        from .autograd import retain

        retain(self)

    def backward(
        self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None
    ) -> None:
        """Accumulates d self / d leaf into each leaf's `.grad` (PyTorch's `backward`; with
        `inputs`, into theirs alone)."""
        from .autograd import backward

        gradients = None if gradient is None else [gradient]
        backward([self], gradients, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """`hook(grad)` runs when backward has this tensor's whole gradient; a Tensor it
        returns replaces it (PyTorch's; `kn.autograd.register_hook`)."""
        from .autograd import register_hook

        return register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """`hook(self)` runs right after backward has added this leaf's gradient to `.grad`
        (PyTorch's; `kn.autograd.register_post_accumulate_grad_hook`)."""
        from .autograd import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def __reduce_ex__(self, protocol):
        if type(self) is not Tensor:  # (subclasses keep their own state)
            return object.__reduce_ex__(self, protocol)
        # as PyTorch's: the values, device and requires_grad; no history, .grad nor base
        return (_unpickled, (self._data, self._device, self._requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise node_error(
                AutogradError,
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                f"protocol at the moment (the tensor is an output of {self.grad_fn.op.name})",
                op="deepcopy",
                site=user_site(),
                called=True,
                inputs=[describe(self)],
            )
        t = make(copy.deepcopy(self._data, memo), self._device)  # memo: shared data stays shared
        t._requires_grad, t._inference = self._requires_grad, self._inference
        t._grad = None if self._grad is None else copy.deepcopy(self._grad, memo)
        memo[id(self)] = t
        return t

    # -- printing ----------------------------------------------------------------------------

    def __repr__(self):
        return printing.tensor_repr(self)


def _address(array) -> int:
    """The address of an array's first element (NumPy or CuPy)."""
    if hasattr(array, "__array_interface__"):  # NumPy (bfloat16 has no buffer to export)
        return array.__array_interface__["data"][0]
    return array.data.ptr
