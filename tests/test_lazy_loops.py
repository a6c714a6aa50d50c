"""kiln/ops/lazy_loops.py: a lazily built loop waits `after` calls once numba runs in the
process, and `cold_after` calls before it may be the one to start numba (about 0.75 s, where a
loop saves microseconds a call)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kiln.ops.lazy_loops import COLD_AFTER, LazyLoops

F32 = np.dtype(np.float32)


def _calls_until_built(loops) -> int:
    for calls in range(1, 100):
        if loops.get(F32) is not None:
            return calls
    raise AssertionError("never built")


def test_a_loop_waits_after_calls_once_numba_runs(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba", object()))
    loops = LazyLoops(lambda dtype: f"loop of {dtype}", after=3, cold_after=50)
    assert _calls_until_built(loops) == 3
    assert loops.get(F32) == "loop of float32"  # kept


def test_a_loop_does_not_start_numba_before_cold_after_calls(monkeypatch):
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    loops = LazyLoops(lambda dtype: f"loop of {dtype}", after=3, cold_after=7)
    assert _calls_until_built(loops) == 7
    assert COLD_AFTER >= 10_000  # the default: eager mode alone keeps NumPy's kernels


def test_a_loop_waiting_cold_is_built_soon_after_numba_starts(monkeypatch):
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    loops = LazyLoops(lambda dtype: f"loop of {dtype}", after=3, cold_after=1000)
    assert all(loops.get(F32) is None for _ in range(10))
    monkeypatch.setitem(sys.modules, "numba", object())  # something else started numba
    assert loops.get(F32) == "loop of float32"  # past `after` calls already


def test_an_unbuildable_loop_stays_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba", object()))
    loops = LazyLoops(lambda dtype: None, after=1)
    assert loops.get(F32) is None and loops.get(F32) is None


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_dtypes_outside_the_table_are_not_in_it(dtype):
    assert np.dtype(dtype) not in LazyLoops(lambda dtype: None)
