"""Recycled host memory for the large outputs of compiled programs on the CPU.

A fresh output of tens of MiB is fresh memory on every call: the allocator maps new pages and
the kernel pays a page fault (and zeroing) on each first touch, about 6 ms for 64 MiB here,
a third of the 8-op chain of bench/rows/row_fusion.py. A planned program instead takes the
memory of each output of at least `OUTPUT_POOL_MIN_BYTES` (4 MiB) from this pool, and the memory
comes back to the pool when the output is garbage-collected.

Soundness: the array handed out does not own its memory; its base is a `PoolBlock`, a small
object that holds the memory and returns it to the pool from its `__del__`, that is once no
reference to it is left. Everything that can reach the memory holds one: the array itself,
NumPy's views of it (their base is the array, as NumPy stops collapsing a base chain at an
object that is not an array), arrays made through the buffer protocol (a memoryview holds
the array), `np.asarray(block)` (its base is the block). So memory is recycled only when no
array, view or buffer can still read or write it. A `PoolBlock` refuses to be pickled or
copied (a copy would point at memory it does not hold); pickling the array copies its
values, as for any array. What the user notices: such an output has `flags.owndata` False, so
`ndarray.resize` refuses it (`np.resize`, `.copy()` work); `owns(array)` tells it apart.

Bounds (kiln/runtime/cache.py): the pool keeps at most `OUTPUT_POOL_BYTES` of free memory
(the least recently returned blocks go first; 0 turns recycling off), and lets go of blocks
not taken again within `OUTPUT_POOL_IDLE_S` seconds, checked whenever a block is taken or
returned; `empty_cache()` lets go of every free block now. Memory in use by live outputs is
the user's and is never counted or held back.

>>> import numpy as np
>>> a = empty((512, 1024), np.float32)
>>> owns(a), a.flags.owndata, a.shape
(True, False, (512, 1024))
>>> view = a[1:]; del a  # the view keeps the memory: it is not back in the pool yet
>>> owns(view), owns(view.base), view.base.flags.owndata
(False, True, False)
"""

from __future__ import annotations

import math
import os
import threading
import time

import numpy as np

from . import cache

__all__ = ["PoolBlock", "array", "empty", "empty_cache", "owns", "poolable", "stats"]

# Blocks start at a page: a loop's stores then never run a little ahead of its loads modulo
# 4 KiB (inputs of NumPy's large arrays start 16 B into a page), which stalls loads on a
# false dependency: the 8-op chain into a 64 MiB output took 10.8 ms at a page's start or 16 B
# in, 13.8 ms at 64 B (bench/rows/row_fusion.py's case, CPU time).
_ALIGN = 4096


class PoolBlock:
    """The owner of a pooled output's memory, the base of the array handed out: it holds the
    memory (`entry`, the pool's record of a uint8 array) while any array, view or buffer of
    it lives, and returns it to the pool when collected. NumPy builds the array from its
    `__array_interface__`."""

    __slots__ = ("__array_interface__", "entry")

    def __init__(self, entry, shape, dtype):
        self.entry = entry
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str,
                                    "data": (entry[2], False), "version": 3}  # fmt: skip

    def __del__(self):
        try:
            _POOL.give(self.entry)
        except Exception:  # noqa: BLE001 - at interpreter exit the module may be gone
            pass

    def __reduce__(self):
        raise TypeError("a PoolBlock (the memory of a kiln output) cannot be pickled or copied: "
                        "pickle or copy the array it is the base of")  # fmt: skip


class _Pool:
    """Free blocks by size; thread-safe. A block's record is a list [nbytes, raw uint8 array,
    aligned address, when it was last returned]. `give` runs from `PoolBlock.__del__`, which
    may run while this thread holds the lock (a collection inside `take`): it never waits,
    and a block it cannot return now is freed as any array's memory is."""

    def __init__(self):
        self._lock = threading.Lock()
        self._free: dict[int, list] = {}  # nbytes -> records, the most recently returned last
        self._order: dict[int, list] = {}  # id(record) -> record, the least recently returned first
        self.free_bytes = 0
        self.hits = self.misses = 0

    def take(self, nbytes: int) -> list:
        with self._lock:
            if self._order:
                self._trim(time.monotonic())
            blocks = self._free.get(nbytes)
            if blocks:
                entry = blocks.pop()
                del self._order[id(entry)]
                self.free_bytes -= nbytes
                self.hits += 1
                return entry
            self.misses += 1
        raw = np.empty(nbytes + _ALIGN, np.uint8)
        address = raw.__array_interface__["data"][0]
        return [nbytes, raw, address + -address % _ALIGN, 0.0]

    def give(self, entry: list) -> None:
        nbytes = entry[0]
        if nbytes > cache.OUTPUT_POOL_BYTES or not self._lock.acquire(blocking=False):
            return  # freed with the record
        try:
            entry[3] = now = time.monotonic()
            self._free.setdefault(nbytes, []).append(entry)
            self._order[id(entry)] = entry
            self.free_bytes += nbytes
            self._trim(now)
        finally:
            self._lock.release()

    def _trim(self, now: float) -> None:
        """Lets go of the oldest free blocks while over the bound or idle too long (locked)."""
        idle = now - cache.OUTPUT_POOL_IDLE_S
        order = self._order
        while order:
            entry = next(iter(order.values()))
            nbytes = entry[0]
            if self.free_bytes <= cache.OUTPUT_POOL_BYTES and entry[3] >= idle:
                break
            del order[id(entry)]
            blocks = self._free[nbytes]
            # the oldest of its size, so first in its list (found by identity: records hold
            # arrays, which `==` would compare element by element)
            del blocks[next(i for i, e in enumerate(blocks) if e is entry)]
            if not blocks:
                del self._free[nbytes]
            self.free_bytes -= nbytes

    def clear(self) -> None:
        with self._lock:
            self._free.clear()
            self._order.clear()
            self.free_bytes = 0

    def reset_after_fork(self) -> None:
        """In a forked child: a new lock (another thread may have held the old one)."""
        self._lock = threading.Lock()


_POOL = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.reset_after_fork)


def array(nbytes: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """`empty` for a caller that knows the bytes and has a NumPy dtype (a program's `p{t}`)."""
    if cache.OUTPUT_POOL_BYTES <= 0:
        return np.empty(shape, dtype)
    return np.asarray(PoolBlock(_POOL.take(nbytes), shape, dtype))


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array of `shape` and `dtype` whose memory is recycled:
    taken from the pool when it holds a free block of that size, and returned to it once no
    reference to the array (a view, a buffer) is left. Pooling off (`OUTPUT_POOL_BYTES` 0):
    `np.empty`."""
    dtype, shape = np.dtype(dtype), tuple(shape)
    if not poolable(dtype):
        return np.empty(shape, dtype)
    return array(dtype.itemsize * math.prod(shape), shape, dtype)


def poolable(dtype) -> bool:
    """Whether arrays of `dtype` can be pooled: NumPy must rebuild the dtype from its type
    string (`__array_interface__`), which bfloat16's (`<V2`) and object arrays do not.

    >>> import numpy as np
    >>> poolable(np.float32), poolable(object)
    (True, False)
    """
    dtype = np.dtype(dtype)
    try:
        return not dtype.hasobject and np.dtype(dtype.str) == dtype
    except TypeError:  # a type string NumPy cannot read back (ml_dtypes' float8_e5m2: '<f1')
        return False


def owns(array) -> bool:
    """Whether `array` is an array this pool handed out (not a view of one): its memory goes
    back to the pool when it is collected.

    >>> import numpy as np
    >>> owns(np.zeros(3))
    False
    """
    return isinstance(array, np.ndarray) and type(array.base) is PoolBlock


def empty_cache() -> None:
    """Lets go of every free block the pool holds (the memory of outputs still alive is the
    user's and stays). `kn.cuda.empty_cache()` does the same for CuPy's GPU pool.

    >>> empty_cache(); stats()["free_bytes"]
    0
    """
    _POOL.clear()


def stats() -> dict:
    """The pool's free blocks and bytes held, and how many outputs were served from it
    (`hits`) or freshly allocated (`misses`)."""
    pool = _POOL
    with pool._lock:
        return {"free_blocks": len(pool._order), "free_bytes": pool.free_bytes,
                "hits": pool.hits, "misses": pool.misses}  # fmt: skip
