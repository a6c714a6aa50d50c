"""The bound of kiln's caches of compiled programs: `kn.function`'s per input signature,
`kn.Session`'s per fetches and feeds, `kn.compile`'s per call signature. Past the bound the
least recently used entry is dropped (logged at KILN_DEBUG>=1), and its memory with it."""

from __future__ import annotations

from collections import OrderedDict

from .. import shapes as sh
from ..errors import ArgumentError

__all__ = ["CACHE_SIZE", "cache_size", "evict", "feed_shapes", "touch"]

# The bound used where `cache_size=` is not given (or None); read at each insertion, so a
# change applies to existing caches too.
CACHE_SIZE = 64


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
