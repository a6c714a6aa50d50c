"""Memory planning: offsets for buffers with known lifetimes in one arena (`plan_offsets`), the
live-set lower bound (`lower_bound`), an independent checker of any plan (`validate_plan`), and
the plan record that reports them (`MemoryPlan`).

Lifetimes are closed intervals of schedule steps: a buffer live over [2, 5] and one live over
[5, 7] are both live at step 5, so they must not share bytes.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError, GraphError

# NOTE: up to this many live neighbours, the gap search runs in plain Python; NumPy's per-call
# overhead only pays off above it.
_SMALL = 32
# Up to this many buffers, `plan_offsets` places them in plain Python lists.
_SMALL_PLAN = 128


class PlanError(GraphError):
    """A memory plan that is wrong: live buffers sharing bytes, a misaligned offset, or a
    buffer past the arena's end."""


def plan_offsets(
    sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int], alignment: int = 64
) -> tuple[list[int], int]:
    """Offsets in one arena such that buffers live at the same step never share bytes.

    Greedy by size: largest first (ties by start step, then index), each at the lowest multiple
    of `alignment` that fits among the placed buffers whose lifetimes intersect its own.
    Size-0 buffers get offset 0 and take no space. Deterministic.

    Args:
        sizes: bytes of each buffer.
        starts: the first step of each buffer's life.
        ends: the last step of each buffer's life (it is live over [start, end], closed).
        alignment: every offset is a multiple of it.

    Returns:
        The offsets and the arena's size in bytes (the highest end of a buffer).

    >>> plan_offsets([100, 100, 64], starts=[0, 1, 3], ends=[1, 2, 4])
    ([0, 128, 0], 228)
    """
    sizes, starts, ends = _intervals(sizes, starts, ends)
    alignment = _positive(alignment)
    offsets = [0] * len(sizes)
    order = [i for *_, i in sorted((-s, starts[i], i) for i, s in enumerate(sizes) if s)]
    if len(order) <= _SMALL_PLAN:
        return _plan_small(order, sizes, starts, ends, alignment, offsets)
    # NOTE: rows lo, hi, start, end of the placed buffers, with columns kept sorted by lo, so a
    # mask picks the live ones already in address order.
    placed = np.empty((4, len(order)), dtype=np.int64)
    for count, i in enumerate(order):
        lo, hi, first, last = placed[:, :count]
        live = np.flatnonzero((first <= ends[i]) & (last >= starts[i]))
        offset = _lowest_fit(lo[live], hi[live], sizes[i], alignment)
        at = int(np.searchsorted(lo, offset, side="right"))
        placed[:, at + 1 : count + 1] = placed[:, at:count].copy()
        placed[:, at] = (offset, offset + sizes[i], starts[i], ends[i])
        offsets[i] = offset
    return offsets, max((offsets[i] + sizes[i] for i in order), default=0)


def _plan_small(order, sizes, starts, ends, alignment, offsets) -> tuple[list[int], int]:
    """`plan_offsets`' greedy placement in plain Python lists (fewer buffers than NumPy's
    per-call overhead pays for): the same offsets."""
    placed: list[tuple] = []  # (lo, hi, start, end), sorted by lo
    for i in order:
        first, last, size = starts[i], ends[i], sizes[i]
        offset = 0
        for lo, hi, s, e in placed:
            if s > last or e < first:
                continue  # not live at the same time
            if offset + size <= lo:
                break  # every later range starts at or after this one
            offset = max(offset, _round_up(hi, alignment))
        bisect.insort(placed, (offset, offset + size, first, last))
        offsets[i] = offset
    return offsets, max((offsets[i] + sizes[i] for i in order), default=0)


def _lowest_fit(lo: np.ndarray, hi: np.ndarray, size: int, alignment: int) -> int:
    """The lowest multiple of `alignment` where `size` bytes miss every range [lo, hi); the
    ranges are sorted by lo."""
    if lo.size <= _SMALL:
        offset = 0
        for start, stop in zip(lo.tolist(), hi.tolist()):
            if offset + size <= start:
                break  # every later range starts at or after this one
            offset = max(offset, _round_up(stop, alignment))
        return offset
    # The same search, vectorized: candidate j is 0 or the aligned top of ranges 0..j-1, and it
    # fits iff it ends at or below the start of range j (the ranges after j start later).
    tops = np.zeros(lo.size + 1, dtype=np.int64)
    tops[1:] = -(-np.maximum.accumulate(hi) // alignment) * alignment
    limits = np.append(lo, tops[-1] + size)
    return int(tops[int(np.argmax(tops + size <= limits))])


def lower_bound(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> int:
    """The largest sum of sizes of buffers live at the same step: no plan's arena is smaller.

    >>> lower_bound([100, 100, 64], starts=[0, 1, 3], ends=[1, 2, 4])
    200
    """
    sizes, starts, ends = _intervals(sizes, starts, ends)
    # At each step, the buffers that died at the step before leave before new ones arrive.
    events = sorted([*zip(starts, sizes), *((e + 1, -s) for e, s in zip(ends, sizes))])
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def validate_plan(
    sizes: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    offsets: Sequence[int],
    arena_bytes: int,
    alignment: int = 64,
    *,
    names: Sequence[str] | None = None,
) -> None:
    """Raises `PlanError` unless every offset is aligned, every buffer lies inside the arena,
    and no two buffers live at the same step share a byte.

    An independent check of `plan_offsets`: it sweeps over the steps, keeping the byte ranges
    of the live buffers in a sorted list, instead of placing buffers by size. `names` (one per
    buffer) only improve the messages.

    >>> validate_plan([64, 64], [0, 1], [1, 2], offsets=[0, 0], arena_bytes=64)
    Traceback (most recent call last):
    ...
    kiln.passes.memory.PlanError: buffers 0 and 1 share bytes while both live: \
buffer 0 holds bytes [0, 64) over steps [0, 1]; buffer 1 holds bytes [0, 64) over steps [1, 2]
    """
    sizes, starts, ends = _intervals(sizes, starts, ends)
    offsets, arena_bytes = [operator.index(x) for x in offsets], operator.index(arena_bytes)
    alignment = _positive(alignment)
    if len(offsets) != len(sizes) or (names is not None and len(names) != len(sizes)):
        count = "-" if names is None else len(names)
        raise PlanError(f"{len(sizes)} buffers but {len(offsets)} offsets and {count} names")

    def who(i: int) -> str:
        return f"{i}" if names is None else f"{i} ({names[i]!r})"

    def where(i: int) -> str:
        span = f"[{offsets[i]}, {offsets[i] + sizes[i]})"
        return f"buffer {who(i)} holds bytes {span} over steps [{starts[i]}, {ends[i]}]"

    for i, offset in enumerate(offsets):
        if offset < 0 or offset % alignment:
            raise PlanError(
                f"buffer {who(i)} is at offset {offset}, "
                f"not a non-negative multiple of the alignment {alignment}"
            )
        if offset + sizes[i] > arena_bytes:
            raise PlanError(f"{where(i)}, past the arena's end at {arena_bytes}")
    # At one step, arrivals (0) come before departures (1): lifetimes are closed intervals.
    events = sorted(
        [(starts[i], 0, i) for i in range(len(sizes)) if sizes[i]]
        + [(ends[i], 1, i) for i in range(len(sizes)) if sizes[i]]
    )
    live: list[tuple[int, int, int]] = []  # (first byte, end byte, buffer); disjoint, sorted
    for _, departs, i in events:
        entry = (offsets[i], offsets[i] + sizes[i], i)
        at = bisect.bisect_left(live, entry)
        if departs:
            del live[at]
            continue
        # The live ranges are disjoint, so only the neighbours in address order can overlap.
        for first, stop, j in live[max(at - 1, 0) : at + 1]:
            if first < entry[1] and entry[0] < stop:
                a, b = sorted((i, j))
                raise PlanError(
                    f"buffers {who(a)} and {who(b)} share bytes while both live: "
                    f"{where(a)}; {where(b)}"
                )
        live.insert(at, entry)


@dataclass
class MemoryPlan:
    """Where each buffer of a schedule lives in one arena, with the bounds that judge it.

    `naive_bytes` is what keeping every buffer would take (the sum of sizes); `peak_bytes` is
    the largest live set of these lifetimes, which no plan of them can beat;
    `lower_bound_bytes` is a bound that holds for every order of the program when the planner
    knows one (`floor`: a compiled program's, see `Specialized`), else `peak_bytes`. `notes`
    (optional, one per buffer) say why a buffer is special: "view of x", "in place of t3".

    >>> plan = MemoryPlan.build([4096, 4096, 8192], [0, 1, 2], [1, 2, 3], ["a", "b", "c"])
    >>> plan.offsets, plan.arena_bytes, plan.lower_bound_bytes
    ([0, 8192, 0], 12288, 12288)
    >>> print(plan.summary().splitlines()[-1])
    arena 12.0 KiB (1.00× the lower bound 12.0 KiB), naive 16.0 KiB, saved 4.0 KiB
    """

    offsets: list[int]
    sizes: list[int]
    starts: list[int]
    ends: list[int]
    names: list[str]
    arena_bytes: int
    lower_bound_bytes: int
    naive_bytes: int
    notes: list[str] | None = None
    alignment: int = 64
    peak_bytes: int = 0
    recomputed: list[str] | None = None  # values recomputed to meet a memory budget
    recompute_choice: str = ""
    # (label, MemoryPlan) of each region body this program ran (a scan's, a cond branch's):
    # each body has an arena of its own, which every iteration reuses (set by kn.Function.plan)
    bodies: list | None = None

    @property
    def total_bytes(self) -> int:
        """The arena plus the arenas of the region bodies (and theirs), when there are any."""
        return self.arena_bytes + sum(p.total_bytes for _, p in self.bodies or ())

    @classmethod
    def build(
        cls,
        sizes: Sequence[int],
        starts: Sequence[int],
        ends: Sequence[int],
        names: Sequence[str],
        notes: Sequence[str] | None = None,
        alignment: int = 64,
        floor: int | None = None,
    ) -> MemoryPlan:
        """Plans the offsets, proves the plan with `validate_plan`, and records the bounds
        (`floor`: a lower bound for every order, when the caller knows one)."""
        sizes, starts, ends = _intervals(sizes, starts, ends)
        names = [str(n) for n in names]
        if len(names) != len(sizes) or (notes is not None and len(notes) != len(sizes)):
            count = "no" if notes is None else len(notes)
            raise ArgumentError(f"{len(sizes)} buffers but {len(names)} names and {count} notes")
        offsets, arena = plan_offsets(sizes, starts, ends, alignment)
        validate_plan(sizes, starts, ends, offsets, arena, alignment, names=names)
        peak = lower_bound(sizes, starts, ends)
        notes = None if notes is None else [str(n) for n in notes]
        bound = peak if floor is None else min(int(floor), peak)
        return cls(offsets, sizes, starts, ends, names, arena, bound, sum(sizes), notes, alignment,
                   peak)  # fmt: skip

    def summary(self) -> str:
        """A table with one line per buffer (name, size, live steps, offset, note), then the
        totals: the arena, its ratio to the lower bound, the naive total and the bytes saved."""
        notes = self.notes or [""] * len(self.sizes)
        rows = [("buffer", "size", "live", "offset", "note")]
        for i, name in enumerate(self.names):
            live = f"[{self.starts[i]}, {self.ends[i]}]"
            rows.append((name, _human(self.sizes[i]), live, str(self.offsets[i]), notes[i]))
        widths = [max(len(row[c]) for row in rows) for c in range(5)]
        lines = []
        for name, size, live, offset, note in rows:
            cells = (name.ljust(widths[0]), size.rjust(widths[1]), live.ljust(widths[2]))
            lines.append("  ".join((*cells, offset.rjust(widths[3]), note)).rstrip())
        bound, peak = self.lower_bound_bytes, self.peak_bytes
        ratio = self.arena_bytes / bound if bound else 1.0
        if bound == peak:  # the lifetimes are the problem: no other order to compare with
            judged = f"{ratio:.2f}× the lower bound {_human(bound)}"
        else:
            to_peak = self.arena_bytes / peak if peak else 1.0
            judged = (f"{to_peak:.2f}× this order's live-set peak {_human(peak)}; "
                      f"{ratio:.2f}× the bound of any order {_human(bound)}")  # fmt: skip
        lines.append(
            f"arena {_human(self.arena_bytes)} ({judged}), naive {_human(self.naive_bytes)}, "
            f"saved {_human(self.naive_bytes - self.arena_bytes)}"
        )
        if self.recomputed:
            lines.append(f"recomputed in the backward pass to meet the memory budget: "
                         f"{len(self.recomputed)} values ({self.recompute_choice})")  # fmt: skip
        for label, body in self.bodies or ():
            inner = body.summary().splitlines()
            lines.append(
                f"{label}: {len(body.sizes)} buffers, " + inner[-1 - bool(body.recomputed)]
            )
            lines += [
                f"  {line}" for line in inner if line.startswith(("body ", "  body ", "with"))
            ]
        if self.bodies:
            lines.append(f"with region bodies: {_human(self.total_bytes)}")
        return "\n".join(lines)

    def plot(self, path, title: str | None = None):
        """Draws the arena over time and writes it to `path` (PNG by default): one rectangle
        per buffer, spanning the schedule steps it is live (x) and its bytes, offset to
        offset + size (y). Needs matplotlib (`pip install 'kiln[plot]'`). Returns the path.

        >>> import pytest, tempfile, pathlib
        >>> _ = pytest.importorskip("matplotlib")  # the `plot` extra
        >>> plan = MemoryPlan.build([4096, 4096, 8192], [0, 1, 2], [1, 2, 3], ["a", "b", "c"])
        >>> plan.plot(pathlib.Path(tempfile.mkdtemp()) / "plan.png").suffix
        '.png'
        """
        from ..plot import plot_plan

        return plot_plan(self, path, title)


def _intervals(sizes, starts, ends) -> tuple[list[int], list[int], list[int]]:
    """The three sequences as lists of ints, after checking they describe buffers."""
    sizes, starts, ends = ([operator.index(x) for x in seq] for seq in (sizes, starts, ends))
    if not len(sizes) == len(starts) == len(ends):
        lengths = f"{len(sizes)}, {len(starts)} and {len(ends)}"
        raise ArgumentError(f"sizes, starts and ends differ in length: {lengths}")
    for i, (size, start, end) in enumerate(zip(sizes, starts, ends)):
        if size < 0:
            raise ArgumentError(f"buffer {i} has a negative size, {size} bytes")
        if start > end:
            raise ArgumentError(f"buffer {i} ends (step {end}) before it starts (step {start})")
    return sizes, starts, ends


def _positive(alignment: int) -> int:
    alignment = operator.index(alignment)
    if alignment < 1:
        raise ArgumentError(f"alignment must be a positive number of bytes, got {alignment}")
    return alignment


def _round_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _human(n: int) -> str:
    """Bytes in the largest binary unit that keeps the number at least 1: `512 B`, `1.5 KiB`."""
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if abs(n) >= 1024**power:
            return f"{n / 1024**power:.1f} {unit}"
    return f"{n} B"
