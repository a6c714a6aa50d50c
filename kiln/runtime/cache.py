"""The bound of kiln's caches of compiled programs: `kn.function`'s per input signature,
`kn.Session`'s per fetches and feeds, `kn.compile`'s per call signature. Past the bound the
least recently used entry is dropped (logged at KILN_DEBUG>=1), and its memory with it.

Also the bounds of the pool of recycled output memory on the CPU (kiln/runtime/host_pool.py):
`OUTPUT_POOL_BYTES`, `OUTPUT_POOL_MIN_BYTES`, `OUTPUT_POOL_IDLE_S`; `host_pool.empty_cache()`
lets go of its free blocks."""

from __future__ import annotations

from collections import OrderedDict

from .. import shapes as sh
from ..errors import ArgumentError

__all__ = [
    "CACHE_SIZE",
    "OUTPUT_POOL_BYTES",
    "OUTPUT_POOL_IDLE_S",
    "OUTPUT_POOL_MIN_BYTES",
    "cache_size",
    "evict",
    "feed_shapes",
    "touch",
]

# The bound used where `cache_size=` is not given (or None); read at each insertion, so a
# change applies to existing caches too.
CACHE_SIZE = 64
# The pool of output memory (kiln/runtime/host_pool.py), read at each use but MIN_BYTES (read
# when a program is planned): the free bytes it may hold (0: no recycling, every output is
# fresh memory); the size from which an output's memory is recycled (below it the allocator's
# heap serves a repeated size without page faults, where taking a block costs a few us; from
# 32 MiB on glibc maps fresh pages for each array: 64 MiB cost 6 ms of faults); and how long a
# free block may wait to be taken again before the pool lets it go (at its next take or
# return; `host_pool.empty_cache()` lets go of all now).
OUTPUT_POOL_BYTES = 256 << 20
OUTPUT_POOL_MIN_BYTES = 4 << 20
OUTPUT_POOL_IDLE_S = 10.0


def cache_size(value: int | None) -> int:
    """The bound `value` names: itself, or `CACHE_SIZE` when None; at least 1.

    >>> cache_size(None) == CACHE_SIZE, cache_size(3)
    (True, 3)
    """
    size = CACHE_SIZE if value is None else value
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ArgumentError(
            f"cache_size must be a positive int (or None for {CACHE_SIZE}), got {size!r}"
        )
    return size


def evict(cache: OrderedDict, size: int | None) -> list:
    """Drops the least recently used entries of `cache` past its bound; returns them as
    (key, entry) pairs, oldest first, for the caller's log line."""
    limit = cache_size(size)
    dropped = []
    while len(cache) > limit:
        dropped.append(cache.popitem(last=False))
    return dropped


def touch(cache: OrderedDict, key) -> None:
    """Marks `key` most recently used (nothing when another thread evicted it meanwhile)."""
    try:
        cache.move_to_end(key)
    except KeyError:
        pass


def feed_shapes(feeds, shapes) -> str:
    """`x: [2,3], y: [3]`: one signature of a program's feeds, in log lines."""
    return ", ".join(f"{s.name}: {sh.format_shape(shape)}" for s, shape in zip(feeds, shapes))
