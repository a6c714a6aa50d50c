"""The per-call arena of a backward program in pieces (kiln/tracing/traced.py's placed
residuals): the arena cut wherever no buffer straddles the cut, so each piece can be made when
its first buffer is written and let go after its last is read."""

from __future__ import annotations


def nothing(p) -> None:
    """The make/free hook of a program bound to a whole arena."""
    pass


class Piece:
    """Bytes [lo, hi) of a plan's arena that no buffer straddles: `buffers` (their keys),
    live from step `first` to step `last`; `placed` when one of them is a placed feed."""

    __slots__ = ("lo", "hi", "first", "last", "buffers", "placed")

    def __init__(self, lo, hi, first, last, buffers, placed):
        self.lo, self.hi, self.first, self.last = lo, hi, first, last
        self.buffers, self.placed = buffers, placed


def pieces_of(plan, placed) -> list:
    """The arena cut wherever no buffer straddles the cut: each piece can be made when its
    first buffer is written and let go after its last is read."""
    order = sorted(range(len(plan.sizes)), key=lambda k: plan.offsets[k])
    groups: list = []
    for k in order:
        lo, hi = plan.offsets[k], plan.offsets[k] + plan.sizes[k]
        if groups and lo < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
            groups[-1][2].append(k)
        else:
            groups.append([lo, hi, [k]])
    pieces = []
    for lo, hi, keys in groups:
        first = min(plan.starts[k] for k in keys)
        last = max(plan.ends[k] for k in keys)
        pieces.append(Piece(lo, hi, first, last, tuple(keys), any(k in placed for k in keys)))
    return pieces
