"""PyTorch's CPU order for equal elements in `topk` and `kthvalue`: which of several equal
values comes first (and which index `kthvalue` reports) is what its selection algorithms
leave, not a stable order. Rows with no ties that matter take NumPy's stable sort; the others
replay those algorithms (the C++ standard library's `partial_sort`, `nth_element` and `sort`
as GCC's libstdc++ writes them, which PyTorch's Linux builds use, and PyTorch's own
quickselect for `kthvalue`) on (value, index) pairs, one row at a time."""

from __future__ import annotations

import math

import numpy as np


def _before(largest: bool):
    """PyTorch's comparator: NaN counts as the greatest value."""

    def nan(v) -> bool:
        return v != v

    if largest:
        return lambda a, b: (nan(a[0]) and not nan(b[0])) or a[0] > b[0]
    return lambda a, b: (not nan(a[0]) and nan(b[0])) or a[0] < b[0]


# -- libstdc++'s heap, insertion sort, introselect and introsort ------------------------------


def _adjust_heap(q, first, hole, length, value, comp):
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if comp(q[first + child], q[first + child - 1]):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if length & 1 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and comp(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value


def _make_heap(q, first, last, comp):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(q, first, parent, length, q[first + parent], comp)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(q, first, last, result, comp):
    value = q[result]
    q[result] = q[first]
    _adjust_heap(q, first, 0, last - first, value, comp)


def _heap_select(q, first, middle, last, comp):
    _make_heap(q, first, middle, comp)
    for i in range(middle, last):
        if comp(q[i], q[first]):
            _pop_heap(q, first, middle, i, comp)


def _partial_sort(q, first, middle, last, comp):
    _heap_select(q, first, middle, last, comp)
    while middle - first > 1:  # sort_heap
        middle -= 1
        _pop_heap(q, first, middle, middle, comp)


def _linear_insert(q, last, comp):
    value, i = q[last], last - 1
    while comp(value, q[i]):
        q[last] = q[i]
        last, i = i, i - 1
    q[last] = value


def _insertion_sort(q, first, last, comp):
    for i in range(first + 1, last):
        if comp(q[i], q[first]):
            value = q[i]
            q[first + 1 : i + 1] = q[first:i]
            q[first] = value
        else:
            _linear_insert(q, i, comp)


def _partition_pivot(q, first, last, comp):
    a, b, c = first + 1, first + (last - first) // 2, last - 1
    if comp(q[a], q[b]):
        m = b if comp(q[b], q[c]) else c if comp(q[a], q[c]) else a
    else:
        m = a if comp(q[a], q[c]) else c if comp(q[b], q[c]) else b
    q[first], q[m] = q[m], q[first]
    lo, hi, pivot = first + 1, last, q[first]
    while True:
        while comp(q[lo], pivot):
            lo += 1
        hi -= 1
        while comp(pivot, q[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        q[lo], q[hi] = q[hi], q[lo]
        lo += 1


def _nth_element(q, nth, comp):
    first, last = 0, len(q)
    if nth == last:
        return
    depth = 2 * int(math.log2(last)) if last else 0
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last, comp)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last, comp)


def _introsort(q, first, last, depth, comp):
    while last - first > 16:
        if depth == 0:
            _partial_sort(q, first, last, last, comp)
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, comp)
        _introsort(q, cut, last, depth, comp)
        last = cut


def _sort(q, first, last, comp):
    if last - first < 2:
        return
    _introsort(q, first, last, 2 * int(math.log2(last - first)), comp)
    if last - first > 16:
        _insertion_sort(q, first, first + 16, comp)
        for i in range(first + 16, last):
            _linear_insert(q, i, comp)
    else:
        _insertion_sort(q, first, last, comp)


def _topk_row(values, k: int, largest: bool) -> list:
    """PyTorch's sorted top-k indices of one row (its CPU kernel's choice of algorithm)."""
    q = [(v, j) for j, v in enumerate(values.tolist())]
    comp = _before(largest)
    if k * 64 <= len(q):
        _partial_sort(q, 0, k, len(q), comp)
    else:
        _nth_element(q, k - 1, comp)
        _sort(q, 0, k - 1, comp)
    return [j for _, j in q[:k]]


def _kth_row(values, k: int) -> int:
    """The index PyTorch's kthvalue reports for the k-th (0-based) smallest of one row: its
    quickselect (median of three, NaN the greatest)."""
    a = values.tolist()
    idx = list(range(len(a)))

    def gt(x, y) -> bool:
        return (x != x and y == y) or x > y

    def swap(i, j):
        a[i], a[j] = a[j], a[i]
        idx[i], idx[j] = idx[j], idx[i]

    lo, hi = 0, len(a) - 1
    while True:
        if hi <= lo:
            return idx[k]
        if hi == lo + 1:
            if gt(a[lo], a[hi]):
                swap(lo, hi)
            return idx[k]
        swap(lo + (hi - lo) // 2, lo + 1)
        if gt(a[lo + 1], a[hi]):
            swap(lo + 1, hi)
        if gt(a[lo], a[hi]):
            swap(lo, hi)
        if gt(a[lo + 1], a[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, a[lo]
        while True:
            i += 1
            while gt(pivot, a[i]):
                i += 1
            j -= 1
            while gt(a[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


# -- the kernels' entry points: NumPy arrays, the axis last ----------------------------------


def _tied(v):
    """Where neighbours of the sorted rows `v` are equal (NaN equals NaN)."""
    a, b = v[..., 1:], v[..., :-1]
    same = a == b
    if v.dtype.kind in "fc":
        same |= np.isnan(a) & np.isnan(b)
    return same


def topk_indices(x, order, k: int, largest: bool):
    """The indices of PyTorch's sorted top `k` of each row of `x` (the last axis), from
    `order`, x's stable argsort in that direction: rows where equal values meet within the
    first k + 1 replay PyTorch's algorithm."""
    out = order[..., :k].copy()
    if k == 0 or x.shape[-1] < 2:
        return out
    ranked = np.take_along_axis(x, order[..., : k + 1], -1)
    for r in map(tuple, np.argwhere(_tied(ranked).any(-1, keepdims=True))):
        out[r[:-1]] = _topk_row(x[r[:-1]], k, largest)
    return out


def kth_indices(x, order, k: int):
    """The index PyTorch's kthvalue reports for the k-th (0-based) smallest of each row of x
    (the last axis, kept with size 1), from `order`, x's stable ascending argsort: rows where
    the k-th value ties with a neighbour replay PyTorch's quickselect."""
    out = order[..., k : k + 1].copy()
    lo, hi = max(k - 1, 0), min(k + 2, x.shape[-1])
    ranked = np.take_along_axis(x, order[..., lo:hi], -1)
    for r in map(tuple, np.argwhere(_tied(ranked).any(-1, keepdims=True))):
        out[r] = _kth_row(x[r[:-1]], k)
    return out
