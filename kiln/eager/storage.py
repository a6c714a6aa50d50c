"""What an eager Tensor has from its memory, with PyTorch's names: `data_ptr`, `as_strided`
(a view of the storage), `empty_strided`/`new_empty_strided`, pinning and
sharing (`is_pinned`, `pin_memory`, `share_memory_`), the per-element `apply_`/`map_`, and the
autograd facts `output_nr` and `retains_grad`."""

from __future__ import annotations

import math
import mmap
import sys
import weakref

import numpy as np

from .. import dtypes as dt
from ..errors import (
    ArgumentTypeError,
    AutogradError,
    DeviceError,
    ShapeMismatchError,
    UsageError,
    call_error,
    node_error,
)
from ..graph.core import user_site
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..runtime.backend import get_backend
from . import grad_mode
from .grad_mode import state
from .tensor import PIECE, Tensor, _address, check_view, describe, make, meta_of, version_of

__all__ = ["empty_strided"]


def _root(data):
    """The array that owns the memory `data` views (its storage), through the helper object
    NumPy's `as_strided` puts between a view and its base."""
    root = data
    while True:
        base = root.base
        if type(base).__name__ == "DummyArray":  # (numpy.lib.stride_tricks)
            base = base.base
        if not isinstance(base, type(data)):
            return root
        root = base


def _storage_positions(data, root) -> tuple:
    """(the storage positions of data's elements in root's, an int64 array; data's offset)."""
    from ..frontend.functionalize import strided_positions

    item = data.itemsize
    offset = (_address(data) - _address(root)) // item
    steps = [st // item for st in data.strides]
    return strided_positions(data.shape, steps, offset), offset


def as_strided_view(t: Tensor, size, stride, storage_offset=None) -> Tensor:
    """`t.as_strided(size, stride, storage_offset)` of an eager tensor: a view of its memory
    (writes through it change t), recorded for autograd as a gather of t's elements."""
    from ..frontend import torch_index as ti
    from ..frontend.functionalize import strided_positions
    from ..frontend.torch_more import _sizes, gather_positions

    size, stride = _sizes("as_strided", size, stride, storage_offset, t)
    meta = t._meta
    if meta is not None and meta.base is not None:
        check_view(t, meta)  # a view whose base changed since: its history taken again first
    data = t._data
    root = _root(data)
    usable = root.dtype == data.dtype and root.flags.c_contiguous
    if not usable:
        root = data  # memory kiln cannot address as one storage: t's own elements are it
    own, own_offset = _storage_positions(data, root)
    if own.size and int(own.min()) < 0:
        raise call_error(UsageError, "as_strided of a tensor with negative strides: clone() it "
                         "first", "as_strided", t)  # fmt: skip
    extent = root.size if usable else (int(own.max()) + 1 if own.size else 0)
    offset = own_offset if storage_offset is None else int(storage_offset)
    wanted = strided_positions(size, stride, offset)
    if wanted.size and int(wanted.max()) >= extent:
        raise call_error(
            UsageError,
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {data.itemsize} requiring a storage size of "
            f"{(int(wanted.max()) + 1) * data.itemsize} are out of bounds for storage of size "
            f"{extent * data.itemsize}",
            "as_strided",
            t,
        )
    item = data.itemsize
    steps = [s * item for s in stride]
    if t._device == "cpu" and usable:  # a view whose base is the storage
        view = np.ndarray(size, data.dtype, root, offset * item, steps)
    else:
        xp = np if t._device == "cpu" else get_backend(t._device).activate()
        memory = xp.lib.stride_tricks.as_strided(root, (extent,), (item,))
        view = xp.lib.stride_tricks.as_strided(memory[min(offset, extent) :], size, steps)
    if t._requires_grad and state.grad:
        source = t
        if t._base is not None and usable and not np.isin(wanted, own).all():
            # positions of t's storage outside t: gathered from its base, which holds them
            base_data = t._base._data
            if _root(base_data) is root and base_data.dtype == data.dtype:
                source = t._base
                own, _ = _storage_positions(base_data, root)
        index = gather_positions("as_strided", source, own, wanted)
        out = ti.take(source, index)  # the tape's entry: a gather of the elements
        out.grad_fn.out = out._data = view
    else:
        out = make(view, t._device)
    base = t._base if t._base is not None else t
    meta = meta_of(out)
    meta.base, meta.base_fn, meta.inference = base, base._grad_fn, base._inference
    meta.no_grad_view = not state.grad
    multi = getattr(t._meta, "multi", None)
    if multi is not None:  # a view of a piece of split/unbind is one too, as PyTorch's
        meta.multi, meta.base_fn = multi, PIECE
    return out


def empty_strided(size, stride, *, dtype=None, layout=None, device="cpu",
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """A tensor of sizes `size` and strides `stride` (in elements) over fresh memory, as
    PyTorch's `empty_strided` (kiln's holds zeros).

    >>> import kiln as kn
    >>> t = kn.empty_strided((2, 3), (1, 2))
    >>> t.stride(), t.shape
    ((1, 2), kiln.Size([2, 3]))
    """
    from .factories import _finish, zeros

    size, stride = tuple(int(d) for d in size), tuple(int(d) for d in stride)
    if len(size) != len(stride) or any(d < 0 for d in (*size, *stride)):
        raise UsageError(f"empty_strided: sizes {list(size)} and strides {list(stride)}: as "
                         "many of each, none negative")  # fmt: skip
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    buffer = zeros(extent, dtype=dtype, device=device)
    item = buffer.dtype.itemsize
    xp = np if buffer._device == "cpu" else get_backend(buffer._device).activate()
    data = xp.lib.stride_tricks.as_strided(buffer._data, size, [s * item for s in stride])
    return _finish(data, buffer._device, False).requires_grad_(requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """`empty_strided(size, stride)` of self's dtype and device (unless given)."""
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device or self._device, requires_grad=requires_grad)  # fmt: skip


def data_ptr(self) -> int:
    """The address of the first element (PyTorch's `data_ptr`).

    >>> import kiln as kn
    >>> t = kn.zeros(2, 3)
    >>> t[1].data_ptr() - t.data_ptr()  # a row of 3 float32s further
    12
    """
    return int(_address(self._data))


def _no_accelerator_pin(self) -> Tensor:
    """`pin_memory()`: page-locked host memory for fast copies to a GPU. With a GPU, kiln's
    copies need none, so it returns the tensor itself; without one it raises, as PyTorch's."""
    from .. import cuda

    if not cuda.is_available():
        raise DeviceError("Cannot access accelerator device when none is available.")
    if self._device != "cpu":
        raise DeviceError(f"cannot pin '{self._device}' memory, only dense CPU tensors")
    return self


def _shared(data) -> bool:
    """Whether `data`'s memory is a shared mapping that `share_memory_` made."""
    root = _root(data)
    return isinstance(root.base, memoryview) and isinstance(root.base.obj, mmap.mmap)


def is_shared(self) -> bool:
    """Whether the tensor's memory is shared with the processes forked after
    `share_memory_()` (PyTorch's name).

    >>> import kiln as kn
    >>> t = kn.zeros(3)
    >>> t.is_shared(), t.share_memory_().is_shared()
    (False, True)
    """
    return self._device == "cpu" and _shared(self._data)


def share_memory_(self) -> Tensor:
    """Moves the tensor's memory into a shared mapping, as PyTorch's `share_memory_`: a
    process forked afterwards (`multiprocessing` with the "fork" start method, a
    DataLoader worker, a Hogwild trainer) reads and writes the same memory, so in-place
    changes (`add_`, `copy_`, an optimizer's eager `step()`) on either side are seen on the
    other. Values are unchanged; a no-op when already shared, and on devices other than the
    CPU (their memory stays the process's own: `is_shared()` is False there).

    What kiln cannot share it refuses (UsageError), rather than give a copy that silently
    parts from the original: a view (share the tensor that owns the memory), and a tensor
    whose memory other arrays or tensors use (its views, a NumPy array it was made from).
    A pickled or spawned copy is a copy; graph-mode and `kn.compile` programs keep their
    own copies of values between runs (their Variables): use it with eager code.

    >>> import kiln as kn
    >>> t = kn.zeros(2).share_memory_()
    >>> t.add_(1); t.is_shared()  # in place: still the shared memory
    tensor([1., 1.])
    True
    """
    if self._device != "cpu":
        return self
    data = self._data
    if _shared(data):
        return self
    if data.base is not None:
        raise call_error(UsageError, "share_memory_ of a view or of a tensor made from a NumPy "
                         "array: kiln moves memory the tensor owns; call it on the tensor that "
                         "owns the memory, or on a clone()", "share_memory_", self)  # fmt: skip
    node = self.grad_fn
    tape = 1 if node is not None and node.out is data else 0  # its op's entry keeps its output
    if sys.getrefcount(data) > 3 + tape:  # `data`, the tensor's own and the call's argument
        raise call_error(UsageError, "share_memory_ of a tensor whose memory other arrays use "
                         "(views of it made before, or the graph Variable of a module value "
                         "that graph mode or kn.compile used): kiln cannot move theirs too; "
                         "call share_memory_ first, or on a clone()",
                         "share_memory_", self)  # fmt: skip
    buffer = memoryview(mmap.mmap(-1, max(data.nbytes, 1)))  # anonymous, MAP_SHARED
    shared = np.frombuffer(buffer, dtype=data.dtype, count=data.size).reshape(data.shape)
    shared[...] = data
    self._data = shared
    return self


def _per_element(self, name: str, fn, others=()) -> Tensor:
    if self._device != "cpu":
        raise DeviceError(f"{name} is only implemented on CPU tensors (got {self._device})")
    if self._requires_grad and state.grad and self.grad_fn is None:
        raise call_error(UsageError, f"{name}: a leaf Variable that requires grad is being "
                         "used in an in-place operation", name, self)  # fmt: skip
    data = self._data
    columns = [np.asarray(a).reshape(-1) for a in (data, *others)]
    values = [fn(*(c[i].item() for c in columns)) for i in range(data.size)]
    data[...] = np.asarray(values, dtype=object).reshape(data.shape).astype(data.dtype)
    from ..frontend.inplace import _bump

    _bump(self, name)
    return self


def apply_(self, callable) -> Tensor:  # noqa: A002
    """In place: each element replaced by `callable(element)` (a Python function; CPU only,
    as PyTorch's).

    >>> import kiln as kn
    >>> kn.tensor([1, 2, 3]).apply_(lambda v: v * 10).tolist()
    [10, 20, 30]
    """
    return _per_element(self, "apply_", callable)


def map_(self, tensor, callable) -> Tensor:  # noqa: A002
    """In place: each element replaced by `callable(element, other)` with `tensor` broadcast
    to self's shape (CPU only, as PyTorch's).

    >>> import kiln as kn
    >>> kn.tensor([1, 2]).map_(kn.tensor([10, 20]), lambda a, b: a + b).tolist()
    [11, 22]
    """
    if not isinstance(tensor, Tensor):
        raise ArgumentTypeError(f"map_(): argument 'tensor' must be Tensor, not "
                                f"{type(tensor).__name__}")  # fmt: skip
    other = np.broadcast_to(tensor._host(), tuple(self.shape))
    return _per_element(self, "map_", callable, (other,))


def map2_(self, x, y, callable) -> Tensor:  # noqa: A002
    """In place: each element replaced by `callable(element, x's, y's)` with `x` and `y`
    broadcast to self's shape (CPU only, as PyTorch's).

    >>> import kiln as kn
    >>> kn.tensor([1, 2]).map2_(kn.tensor([10, 20]), kn.tensor(3), lambda a, b, c: a + b * c)
    tensor([31, 62])
    """
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"map2_(): argument '{name}' must be Tensor, not "
                                    f"{type(t).__name__}")  # fmt: skip
    others = tuple(np.broadcast_to(t._host(), tuple(self.shape)) for t in (x, y))
    return _per_element(self, "map2_", callable, others)


def is_set_to(self, tensor) -> bool:
    """Whether both tensors view the same memory the same way: the same first element,
    shape and strides (PyTorch's `is_set_to`).

    >>> import kiln as kn
    >>> x = kn.zeros(4)
    >>> x.is_set_to(x[:]), x.is_set_to(x.view(2, 2)), x.is_set_to(x.clone())
    (True, False, False)
    """
    if not isinstance(tensor, Tensor):
        raise ArgumentTypeError(f"is_set_to(): argument 'tensor' must be Tensor, not "
                                f"{type(tensor).__name__}")  # fmt: skip
    return (
        self.data_ptr() == tensor.data_ptr()
        and tuple(self.shape) == tuple(tensor.shape)
        and tuple(self.stride()) == tuple(tensor.stride())
        and self.dtype == tensor.dtype
    )


def retains_grad(self) -> bool:
    """Whether backward fills this non-leaf tensor's `.grad` (after `retain_grad()`).

    >>> import kiln as kn
    >>> y = kn.ones(2, requires_grad=True) * 2
    >>> before = y.retains_grad
    >>> y.retain_grad()
    >>> before, y.retains_grad
    (False, True)
    """
    node = self.grad_fn
    kept = None if node is None or node.retained is None else node.retained()
    return kept is self


def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """`resize_(the_template.shape)`, as PyTorch's `resize_as_`.

    >>> import kiln as kn
    >>> kn.tensor([1, 2, 3]).resize_as_(kn.zeros(2))
    tensor([1, 2])
    """
    return self.resize_(tuple(the_template.shape))


def install(cls) -> None:
    """The memory methods of `Tensor`."""
    for name, fn in {
        "new_empty_strided": new_empty_strided,
        "data_ptr": data_ptr, "const_data_ptr": data_ptr, "is_set_to": is_set_to,
        "map2_": map2_, "pin_memory": _no_accelerator_pin,
        "share_memory_": share_memory_, "is_shared": is_shared, "apply_": apply_, "map_": map_,
        "resize_as_": resize_as_,
    }.items():  # fmt: skip
        setattr(cls, name, fn)
    cls.retains_grad = property(retains_grad)
    cls.output_nr = property(lambda self: 0)  # each kiln tape entry has one output


def _storage_of(data):
    """The array whose memory `data` views (`data` itself when it owns it): what a storage
    of PyTorch's is to a tensor. A compiled program's recycled output counts as owning."""
    from ..runtime.host_pool import owns

    root = data
    while not owns(root) and isinstance(root.base, type(data)):
        root = root.base
    return root


def _owns_memory(data) -> bool:
    """Whether `data` is an array that views no other: it owns its memory, or it is a
    compiled program's output whose memory is recycled once it is gone
    (kiln/runtime/host_pool.py)."""
    from ..runtime.host_pool import owns

    return data.base is None or owns(data)


# The arrays whose memory is not kiln's to reallocate (`from_numpy`'s): id -> weak reference
# (dead ones dropped when the table has doubled since the last sweep)
_NOT_RESIZABLE: dict = {}
_SWEEP_AT = [1024]


def mark_not_resizable(array) -> None:
    """Marks the memory of NumPy `array` as its owner's: `resize_` past it refuses, as
    PyTorch's storage of `from_numpy` ("Trying to resize storage that is not resizable")."""
    root = array if array.base is None else _storage_of(array)
    _NOT_RESIZABLE[id(root)] = weakref.ref(root)
    if len(_NOT_RESIZABLE) > _SWEEP_AT[0]:
        for key in [k for k, ref in _NOT_RESIZABLE.items() if ref() is None]:
            del _NOT_RESIZABLE[key]
        _SWEEP_AT[0] = max(1024, 2 * len(_NOT_RESIZABLE))


def _resizable(root) -> bool:
    ref = _NOT_RESIZABLE.get(id(root))
    return ref is None or ref() is not root


def _move_views(old, new, t: Tensor) -> None:
    """Every tensor but `t` on the memory of `old` (the array that owns it) views the same
    bytes of `new` instead: PyTorch reallocates a storage under all the tensors on it.
    Tensors keep no list of their views (it would cost every view op), so they are found
    among Python's objects, and only when something besides `t` refers to `old`."""
    import gc

    # NOTE: the references resize's frames hold: `root` there, `old` here, getrefcount's
    # argument, and t's own array (`old` itself, or a view of it)
    if sys.getrefcount(old) <= 4:
        return
    flat, slot = new.reshape(-1), Tensor.__dict__["_data"]
    for o in gc.get_objects():
        # (by type: no proxy's __class__ runs; tensors whose `_data` is a property, as a
        # module's parameters, hold copies of their own)
        if getattr(type(o), "_data", None) is not slot or o is t:
            continue
        d = o._data
        if not isinstance(d, type(old)) or _storage_of(d) is not old:
            continue
        start = _address(d) - _address(old)
        window = flat.view(np.uint8)[start:] if flat.dtype != d.dtype else None
        if window is None:
            window = flat[start // d.itemsize :]
        else:
            window = window[: window.size // d.itemsize * d.itemsize].view(d.dtype)
        xp = type(old).__module__.split(".")[0] == "cupy" and get_backend(o._device).activate()
        strided = (xp or np).lib.stride_tricks.as_strided
        o._data = strided(window, d.shape, d.strides)
        if isinstance(d, np.ndarray) and not d.flags.writeable:
            o._data.flags.writeable = False  # (a broadcast view stays read-only)


def resize(t: Tensor, sizes: tuple) -> Tensor:
    """`t.resize_(*sizes)` (see `Tensor.resize_`): t in place, with its new shape."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    if t._requires_grad:
        raise node_error(
            AutogradError,
            "cannot resize variables that require grad",
            op="resize_",
            site=user_site(),
            called=True,
            inputs=[describe(t)],
        )
    data = t._data
    if shape == data.shape:
        return t
    # PyTorch's: the elements from the tensor's storage offset on, contiguous; its
    # storage grows (reallocated) only where they do not fit in it
    root = _storage_of(data)
    n = math.prod(shape)
    if min(shape, default=0) < 0 or n * data.itemsize >= 2**63:  # (PyTorch's check, words)
        raise call_error(UsageError, f"numel: integer multiplication overflow (sizes "
                         f"{list(shape)})", "resize_", t)  # fmt: skip
    usable = root.dtype == data.dtype and root.flags.c_contiguous
    offset = (_address(data) - _address(root)) // data.itemsize if usable else 0
    if usable and 0 <= offset and offset + n <= root.size:
        t._data = root.reshape(-1)[offset : offset + n].reshape(shape)
    elif not _resizable(root):
        raise call_error(UsageError, "Trying to resize storage that is not resizable (the "
                         f"tensor's memory is a NumPy array's, from from_numpy: {n} elements "
                         "from its storage offset on do not fit in it); clone() it first",
                         "resize_", t)  # fmt: skip
    elif usable and 0 <= offset and _owns_memory(root):
        # the storage grown, its elements kept, every tensor on it moved there (its views,
        # its base, detach()ed aliases), as PyTorch reallocates it
        grown = get_backend(t._device).activate().empty(offset + n, t.dtype)
        grown[: root.size] = root.reshape(-1)
        del data
        _move_views(root, grown, t)
        t._data = grown[offset:].reshape(shape)
    elif t._base is None and _owns_memory(root):
        new = get_backend(t._device).activate().empty(shape, t.dtype)
        old = data.reshape(-1)
        new.reshape(-1)[: min(new.size, old.size)] = old[: new.size]
        t._data = new
    else:
        raise node_error(
            ShapeMismatchError,
            f"resize_ of a view to {list(shape)}: it needs {n} elements from its storage "
            "offset on, past the end of the memory it views, which is not kiln's to move "
            "(an array of another layout, or memory kiln does not own): resize the tensor "
            "that owns the memory, or a clone()",
            op="resize_",
            site=user_site(),
            called=True,
            inputs=[describe(t)],
        )
    vc = version_of(t)
    vc.value += 1
    vc.op, vc.site = "resize_", user_site()
    return t


def view_dtype(t, dtype):
    """`t.view(dtype)`: the same data read as `dtype` (one `bitcast`; no history, as
    PyTorch's), refusing a last dim that is not contiguous when the element sizes differ."""
    dtype = dt.as_dtype(dtype)
    data = t._data
    if dtype.itemsize != data.itemsize and data.ndim and data.size:  # (empty: no layout)
        steps = [st // data.itemsize for st in data.strides]
        ratio = dtype.itemsize // data.itemsize
        checks = [("stride(-1)", "be 1", steps[-1], steps[-1] != 1)]
        if ratio > 1:  # the bigger elements' size, offset and strides count whole elements
            rule, size, at = f"be divisible by {ratio}", data.shape[-1], t.storage_offset()
            checks += [("size(-1)", rule, size, size % ratio)]
            checks += [("storage_offset()", rule, at, at % ratio)]
            checks += [(f"stride({i})", rule, k, k % ratio) for i, k in enumerate(steps[:-1])]
        failed = [check for check in checks if check[3]]
        if failed:
            what, rule, got, _ = failed[0]
            raise node_error(
                ShapeMismatchError,
                f"self.{what} must {rule} to view {data.dtype} as {dtype} (different element "
                f"sizes), but got {got}",
                op="view",
                site=user_site(),
                called=True,
                inputs=[describe(t)],
            )
    with grad_mode.no_grad():
        return bind(REGISTRY["bitcast"], t, dtype=dtype, source=data.dtype)
