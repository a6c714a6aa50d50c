"""A stand-in for CuPy, built on NumPy, to test kiln's CUDA code paths without a GPU.

It keeps CuPy's rules that kiln must respect: device arrays are not NumPy arrays and refuse
implicit conversion (`np.asarray(a)` raises as CuPy's does), functions return 0-d arrays
rather than scalars, arrays live on the device that was current when they were made and a
kernel on another device's array raises (CuPy without peer access), `set` takes only NumPy
arrays of the same shape and dtype. `ElementwiseKernel` compiles the generated CUDA C for the
host with g++ (the CUDA rounding intrinsics as plain IEEE operations, no FMA contraction), so
kiln's generated kernels run. Two fake devices. Not CuPy: speeds, streams and the random
streams differ, and CuPy's own kernels are NumPy's here.

`install(monkeypatch)` puts it in `sys.modules` as `cupy` and `cupyx`.
"""

from __future__ import annotations

import threading
import types
import weakref

import numpy as np
import scipy.special
from host_kernels import host_source, load

DEVICES = 2
_local = threading.local()
STATS = {"pinned_allocs": 0, "kernel_calls": 0}
_pool = {"used": 0, "high": 0}


def current() -> int:
    return getattr(_local, "device", 0)


class CUDARuntimeError(RuntimeError):
    def __init__(self, status, text="cudaErrorNoDevice: no CUDA-capable device is detected"):
        self.status = status
        super().__init__(text)


# -- arrays ------------------------------------------------------------------------------------


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _account(array):
    nbytes = array._a.nbytes
    _pool["used"] += nbytes
    _pool["high"] = max(_pool["high"], _pool["used"])
    weakref.finalize(array, _release, nbytes)


def _release(nbytes):
    _pool["used"] = max(0, _pool["used"] - nbytes)


class Device:
    def __init__(self, device=None):
        self.id = current() if device is None else int(device)

    def __enter__(self):
        _local.__dict__.setdefault("stack", []).append(current())
        _local.device = self.id
        return self

    def __exit__(self, *exc):
        _local.device = _local.stack.pop()

    def use(self):
        _local.device = self.id
        return self

    def synchronize(self):
        pass

    @property
    def mem_info(self):
        return 80 * 2**30 - _pool["used"], 80 * 2**30


class ndarray:  # noqa: N801 — CuPy's name
    """A device array: a NumPy array kiln may not treat as one."""

    __array_priority__ = 2000

    def __init__(self, a, base=None, device=None):
        self._a, self._base = a, base
        self._dev = current() if device is None else device
        if base is None:
            _account(self)

    base = property(lambda self: self._base)
    device = property(lambda self: Device(self._dev))
    flags = property(lambda self: self._a.flags)
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    T = property(lambda self: _wrap(self._a.T, (self,)))
    __cuda_array_interface__ = property(lambda self: {"shape": self.shape, "version": 3})

    def __array__(self, *args, **kwargs):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly."
        )

    def get(self, stream=None):
        return np.array(self._a, copy=True)

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if arr.dtype != self.dtype or arr.shape != self.shape:
            raise ValueError(f"set: {arr.dtype}{arr.shape} into {self.dtype}{self.shape}")
        self._a[...] = arr

    def __getitem__(self, key):
        _check_devices((self, key))
        return _wrap(self._a[_unwrap(key)], (self,))

    def __setitem__(self, key, value):
        _check_devices((self, key, value))
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"fake_cupy.ndarray({self._a!r}, device={self._dev})"

    def __getattr__(self, name):
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *args, **kwargs: _call(attr, (self, *args), args, kwargs)
        return attr

    __float__ = lambda self: float(self._a)  # noqa: E731 — one value: CuPy syncs and copies
    __int__ = lambda self: int(self._a)  # noqa: E731
    __bool__ = lambda self: bool(self._a)  # noqa: E731
    __index__ = lambda self: self._a.__index__()  # noqa: E731


def _binary(name):
    def method(self, *args):
        return _call(getattr(self._a, name), (self, *args), args, {})

    return method


def _inplace(name):
    def method(self, other):
        _check_devices((self, other))
        getattr(self._a, name)(_unwrap(other))
        return self

    return method


_OPERATORS = (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lt",
    "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert",
)  # fmt: skip
for _name in _OPERATORS:
    for _n in (f"__{_name}__", f"__r{_name}__"):
        if hasattr(np.ndarray, _n):
            setattr(ndarray, _n, _binary(_n))
    if hasattr(np.ndarray, f"__i{_name}__"):
        setattr(ndarray, f"__i{_name}__", _inplace(f"__i{_name}__"))


def _unwrap(value):
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _arrays(values):
    for v in values:
        if isinstance(v, ndarray):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _arrays(v)


def _check_devices(values):
    for a in _arrays(values):
        if a._dev != current():
            raise ValueError(
                f"The device where the array resides ({a._dev}) is different from the current "
                f"device ({current()}). Peer access is unavailable between these devices."
            )


def _wrap(result, sources, out=None):
    if out is not None and result is _unwrap(out):
        return out
    if isinstance(result, np.ndarray):
        root = _root(result)
        for s in _arrays(sources):
            if _root(s._a) is root:
                return ndarray(result, s._base if s._base is not None else s, s._dev)
        return ndarray(result)
    if isinstance(result, np.generic):
        return ndarray(np.asarray(result))
    if isinstance(result, tuple):
        return tuple(_wrap(r, sources) for r in result)
    if isinstance(result, list):
        return [_wrap(r, sources) for r in result]
    return result


def _call(fn, sources, args, kwargs):
    """`fn` on the NumPy arrays inside, the result as device arrays (0-d, never scalars)."""
    _check_devices((*sources, *kwargs.values()))
    for v in (*args, *kwargs.values()):
        if isinstance(v, np.ndarray):  # CuPy's kernels take its arrays and scalars only
            raise TypeError(f"Unsupported type {type(v)}")
    out = kwargs.get("out")
    result = fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
    return _wrap(result, (*sources, *kwargs.values()), out)


class _Function:
    def __init__(self, fn):
        self._fn = fn
        self.__name__ = getattr(fn, "__name__", "f")

    def __call__(self, *args, **kwargs):
        return _call(self._fn, args, args, kwargs)

    def __getattr__(self, name):  # ufunc methods: at, reduce...
        attr = getattr(self._fn, name)
        return _Function(attr) if callable(attr) else attr


def _to_device(value, dtype=None, copy=True):
    if isinstance(value, ndarray):
        _check_devices((value,))
        if dtype is None or value.dtype == dtype:
            return ndarray(value._a.copy()) if copy else value
        return ndarray(value._a.astype(dtype))
    return ndarray(np.array(value, dtype=dtype, copy=True))


def asarray(value, dtype=None):
    return _to_device(value, dtype, copy=False)


def array(value, dtype=None, copy=True):
    return _to_device(value, dtype, copy=copy)


# -- the rest of CuPy's surface that kiln uses ------------------------------------------------


_event = types.SimpleNamespace(done=True, synchronize=lambda: None)
_stream = types.SimpleNamespace(record=lambda: _event, synchronize=lambda: None)
_POOL = types.SimpleNamespace(
    used_bytes=lambda: _pool["used"], total_bytes=lambda: _pool["high"],
    free_all_blocks=lambda: _pool.update(high=_pool["used"]), n_free_blocks=lambda: 0,
)  # fmt: skip


def alloc_pinned_memory(nbytes):
    STATS["pinned_allocs"] += 1
    return bytearray(max(int(nbytes), 1))


def _properties(i):
    if not 0 <= i < DEVICES:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"Fake GPU", "totalGlobalMem": 80 * 2**30, "major": 9, "minor": 0}


def _set_device(i):
    _properties(i)
    _local.device = i


runtime = types.SimpleNamespace(
    CUDARuntimeError=CUDARuntimeError, getDeviceCount=lambda: DEVICES, getDevice=current,
    setDevice=_set_device, getDeviceProperties=_properties, driverGetVersion=lambda: 12040,
    runtimeGetVersion=lambda: 12020,
)  # fmt: skip
cuda = types.SimpleNamespace(
    Device=Device, runtime=runtime, alloc_pinned_memory=alloc_pinned_memory,
    get_current_stream=lambda: _stream,
)  # fmt: skip


class _Generator:
    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)

    def __getattr__(self, name):
        fn = getattr(self._rng, name)
        return lambda *args, **kwargs: _call(fn, (*args, *kwargs.values()), args, kwargs)


random = types.SimpleNamespace(default_rng=_Generator)
lib = types.SimpleNamespace(
    stride_tricks=types.SimpleNamespace(as_strided=_Function(np.lib.stride_tricks.as_strided))
)
__version__ = "13.0.0+fake"
get_default_memory_pool = get_default_pinned_memory_pool = lambda: _POOL
_CACHE: dict = {}
# CuPy's batched linear algebra that kiln uses (inv, det, solve, cholesky, slogdet, qr, eigh,
# svd), on the arrays inside
linalg = types.SimpleNamespace(
    **{n: _Function(getattr(np.linalg, n))
       for n in ("inv", "det", "solve", "cholesky", "slogdet", "qr", "eigh", "svd")}
)  # fmt: skip


def __getattr__(name):
    found = _CACHE.get(name)
    if found is None:
        value = getattr(np, name)
        wrap = callable(value) and not isinstance(value, type)  # dtypes (np.float32) as they are
        found = _CACHE[name] = _Function(value) if wrap else value
    return found


class ElementwiseKernel:
    """Runs the kernel's CUDA C on the host: compiled by g++ once per text (cached on disk)."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", **kwargs):  # fmt: skip
        self.ins = [tuple(p.split()) for p in in_params.split(",")]
        self.outs = [tuple(p.split()) for p in out_params.split(",")]
        self.operation, self.preamble, self.name = operation, preamble, name
        self._fn = None

    def __call__(self, *args, size=None, block_size=128, stream=None):
        if len(args) not in (len(self.ins), len(self.ins) + len(self.outs)):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        _check_devices(args)
        values = []
        for (dtype, name), a in zip(self.ins, args):
            if isinstance(a, ndarray):
                if a.dtype != np.dtype(dtype):
                    raise TypeError(f"Type is mismatched. {name} {a.dtype} {dtype}")
                values.append(a._a)
            else:
                values.append(np.asarray(a, dtype))
        shape = np.broadcast_shapes(*(v.shape for v in values))
        given = args[len(self.ins) :]
        outs = list(given) or [ndarray(np.empty(shape, d)) for d, _ in self.outs]
        for out, (dtype, _) in zip(outs, self.outs):
            if out.dtype != np.dtype(dtype) or out.shape != shape:
                raise ValueError(f"Out shape or type is mismatched: {out.dtype}{out.shape}")
        STATS["kernel_calls"] += 1
        if outs[0].size:
            ins = [np.ascontiguousarray(np.broadcast_to(v, shape)) for v in values]
            results = [np.empty(shape, o.dtype) for o in outs]
            self.compiled()(outs[0].size, ins, results)
            for out, result in zip(outs, results):
                out._a[...] = result
        return outs[0] if len(outs) == 1 else tuple(outs)

    def compiled(self):
        if self._fn is None:
            source = host_source(self.ins, self.outs, self.operation)
            (self._fn,) = load([source], [self.preamble])
        return self._fn


def reset_kiln() -> None:
    """Makes kiln forget every CuPy module it has seen: status, backends, generated kernels."""
    from kiln.ops import fused_cuda
    from kiln.runtime import cuda

    cuda.cuda_status.cache_clear()
    cuda._backend.cache_clear()
    fused_cuda._BY_TEXT.clear()
    fused_cuda._BY_PROGRAM.clear()


def install(monkeypatch) -> types.ModuleType:
    """This module as `cupy` (and `cupyx.scipy.special`, `cupyx.scatter_add`)."""
    import sys

    module = sys.modules[__name__]
    special = types.ModuleType("cupyx.scipy.special")
    for name in ("erf", "gammaln", "digamma", "polygamma", "erfinv", "i0", "i1"):  # CuPy's too
        setattr(special, name, _Function(getattr(scipy.special, name)))
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.SimpleNamespace(special=special)
    for name, value in (("cupy", module), ("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy),
                        ("cupyx.scipy.special", special)):  # fmt: skip
        monkeypatch.setitem(sys.modules, name, value)
    _local.device = 0
    return module
