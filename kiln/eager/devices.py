"""Devices of eager tensors: naming them, and `Tensor.to` / `cpu` / `cuda` with the dtype
conversions (`float`, `double`, `long`, `int`, `bool`). There is no silent fallback: a device
that cannot be used raises DeviceError with the reason."""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import DeviceError, DTypeError
from ..graph.opdef import REGISTRY
from ..ops.core import bind
from ..runtime.backend import get_backend, parse_device
from .grad_mode import state
from .tensor import Tensor, describe, make

__all__ = ["canonical_device", "install"]


def canonical_device(device) -> str:
    """`"cpu"` or `"cuda:N"`, after checking the device is usable (DeviceError says why not).

    >>> canonical_device("cpu")
    'cpu'
    """
    kind, index = parse_device(device)
    get_backend(device)
    return "cpu" if kind == "cpu" else f"{kind}:{index}"


def _is_device(value) -> bool:
    """Whether `to(value)` names a device (any string that is not a dtype name)."""
    if not isinstance(value, str):
        return False
    try:
        dt.as_dtype(value)
    except DTypeError:
        return True
    return False


def to(self, device=None, dtype=None, non_blocking: bool = False, copy: bool = False,
       memory_format=None) -> Tensor:  # fmt: skip
    """This tensor on `device` and/or as `dtype` (`t.to("cuda")`, `t.to(kn.float64)`), itself
    when nothing changes; a dtype change is an op that gradients flow through.

    >>> import kiln as kn
    >>> t = kn.ones(2)
    >>> t.to("cpu") is t, t.to(kn.float64).dtype, t.to(kn.tensor([1])).dtype
    (True, kiln.float64, kiln.int64)
    """
    if isinstance(device, Tensor) and dtype is None:  # `t.to(other)`: other's dtype and device
        device, dtype = device.device, device.dtype
    if dtype is None and device is not None and not _is_device(device):
        device, dtype = None, device
    out = self
    if dtype is not None and dt.as_dtype(dtype) != self.dtype:
        out = bind(REGISTRY["cast"], out, dtype=dt.as_dtype(dtype))
    if device is not None:
        target = canonical_device(device)
        if target != out._device:
            out = _move(out, target)
    if getattr(memory_format, "name", "preserve_format") != "preserve_format":
        from ..frontend.result_layouts import in_memory_format  # NOTE: lazy

        return in_memory_format(out, memory_format, "to", suggested=True)
    return out.clone() if copy and out is self else out


def _move(t: Tensor, device: str) -> Tensor:
    """A copy of `t` on `device` (between GPUs through the host). NOTE: not recorded for
    autograd: make a leaf on its device instead (`kn.randn(..., device="cuda",
    requires_grad=True)`), or move it under `kn.no_grad()`."""
    if t._requires_grad and state.grad:
        raise DeviceError(f"moving a tensor that requires grad across devices is not supported "
                          f"yet ({describe(t)} to {device})")  # fmt: skip
    if t.is_sparse or t.is_quantized:  # kiln keeps these on the CPU
        raise DeviceError(f"sparse and quantized tensors are CPU-only in kiln: to_dense() or "
                          f"dequantize() first ({t.dtype!r}{list(t.shape)} to "
                          f"{device})")  # fmt: skip
    if device == "cpu":
        return make(get_backend(t._device).to_host(t._data), device)
    return make(get_backend(device).to_device(t._data), device)


def cpu(self, memory_format=None) -> Tensor:
    """`t.to("cpu")` (PyTorch's `memory_format=`: kiln's tensors are contiguous)."""
    return to(self, "cpu")


def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """`t.to("cuda")`, or to the GPU `device` (`non_blocking` and `memory_format` as
    PyTorch's take them: kiln's copies complete in order, its tensors are contiguous)."""
    return to(self, "cuda" if device is None else f"cuda:{device}" if isinstance(device, int)
              else device)  # fmt: skip


CONVERSIONS = {
    "float": dt.float32, "double": dt.float64, "half": dt.float16, "bfloat16": dt.bfloat16,
    "long": dt.int64, "int": dt.int32, "bool": dt.bool_,
}  # fmt: skip


def install(cls) -> None:
    cls.to, cls.cpu, cls.cuda = to, cpu, cuda
    for name, dtype in CONVERSIONS.items():
        setattr(cls, name, _conversion(name, dtype))


def _conversion(name, dtype):
    """`t.float()` and the like: `t.to(dtype)`, with PyTorch's `memory_format=` (kiln's
    tensors are contiguous: every format gives the same tensor)."""

    def convert(self, memory_format=None):
        return to(self, dtype=dtype)

    convert.__name__ = convert.__qualname__ = name
    return convert
