"""The caches of compiled programs are LRU-bounded: `kn.function`'s per input signature,
`kn.Session`'s per fetches and feeds (and each program's signatures), `kn.compile`'s per call
signature. `cache_size=` sets the bound (default `kiln.runtime.cache.CACHE_SIZE`); an
eviction is logged and frees the evicted program's arenas, in every thread that ran it."""

import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import kiln as kn
from kiln.runtime import cache


def _exp_function(**kwargs):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("n",), name="x")
        return kn.function([x], kn.exp(x * 2.0) + 1.0, **kwargs)


def _arena(spec):
    """This thread's arena of a Specialized (the array its buffers view)."""
    view = next(iter(spec._local.buffers.values()))
    while view.base is not None:
        view = view.base
    return view


def test_function_keeps_at_most_cache_size_signatures():
    f = _exp_function(cache_size=3)
    for n in range(1, 11):
        np.testing.assert_allclose(f(np.zeros(n, np.float32)), np.full(n, 2.0, np.float32))
    assert list(f.program._specialized) == [((8,),), ((9,),), ((10,),)]
    assert f.plan is f.program.last.plan and "def program" in f.source  # the latest signature


def test_function_cache_evicts_the_least_recently_used():
    f = _exp_function(cache_size=3)
    for n in (1, 2, 3, 1, 4):  # 1 is used again before 4 comes: 2 is the least recent
        f(np.zeros(n, np.float32))
    assert list(f.program._specialized) == [((3,),), ((1,),), ((4,),)]


def test_function_default_bound_is_the_module_level_cache_size(monkeypatch):
    monkeypatch.setattr(cache, "CACHE_SIZE", 2)
    f = _exp_function()
    for n in range(1, 6):
        f(np.zeros(n, np.float32))
    assert len(f.program._specialized) == 2


def test_eviction_is_logged(monkeypatch, capsys):
    monkeypatch.setenv("KILN_DEBUG", "1")
    f = _exp_function(cache_size=1)
    f(np.zeros(2, np.float32))
    f(np.zeros(3, np.float32))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "cache full" in ln]
    assert lines == ["kiln: compile cache full (1 signatures): dropped the least recently used, "
                     "x: [2]"]  # fmt: skip


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_a_bad_cache_size_is_refused(bad):
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        _exp_function(cache_size=bad)
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        kn.compile(lambda x: x, cache_size=bad)
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        kn.Session(graph=kn.Graph(), cache_size=bad)


def test_eviction_frees_the_arenas_of_every_thread():
    # No gc.collect(): dropping the last reference to a Specialized frees its arenas.
    f = _exp_function(cache_size=1)
    f(np.zeros(64, np.float32))
    spec = f.program.last
    arenas = [weakref.ref(_arena(spec))]

    def run_in_thread():
        f(np.zeros(64, np.float32))
        arenas.append(weakref.ref(_arena(f.program.last)))

    worker = threading.Thread(target=run_in_thread)
    worker.start()
    worker.join()
    assert arenas[0]() is not arenas[1]()  # one arena per thread
    del spec
    f(np.zeros(65, np.float32))  # evicts the signature (64,)
    assert [a() for a in arenas] == [None, None]


def test_memory_stays_bounded_across_many_shapes():
    # The bug: 2,000 shapes grew a process by 265 MiB. Here each shape's arena is about
    # 200 KB (50,000 float32s), so 250 more shapes would hold about 50 MB more unbounded.
    f = _exp_function(cache_size=4)
    sizes = [50_000 + k for k in range(300)]
    gc.collect()
    tracemalloc.start()
    try:
        for n in sizes[:50]:
            f(np.zeros(n, np.float32))
        after_50 = tracemalloc.get_traced_memory()[0]
        for n in sizes[50:]:
            f(np.zeros(n, np.float32))
        after_300 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after_300 - after_50 < 2 * 2**20, (after_50, after_300)  # 4 arenas kept either way
    assert len(f.program._specialized) == 4


def test_session_bounds_its_programs_and_their_signatures(monkeypatch, capsys):
    monkeypatch.setenv("KILN_DEBUG", "1")
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, ("n",), name="x")
        fetches = [x * float(k) for k in range(5)]
    with kn.Session(graph=g, cache_size=2) as sess:
        for k, y in enumerate(fetches):
            np.testing.assert_array_equal(sess.run(y, {x: np.ones(3, np.float32)}), k)
        assert len(sess._programs) == 2
        program = next(reversed(sess._programs.values()))
        for n in range(1, 6):
            sess.run(fetches[-1], {x: np.ones(n, np.float32)})
        assert len(program._specialized) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "Session: cache full" in ln]
    assert len(lines) == 3  # fetches 0, 1 and 2 were dropped


def test_session_cache_keeps_the_recently_used_program():
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (2,), name="x")
        a, b, c = x + 1.0, x + 2.0, x + 3.0
    feed = {x: np.zeros(2, np.float32)}
    sess = kn.Session(graph=g, cache_size=2)
    sess.run(a, feed)
    sess.run(b, feed)
    first = next(iter(sess._programs.values()))
    sess.run(a, feed)  # a is now the most recent: b goes when c comes
    sess.run(c, feed)
    assert first in sess._programs.values() and len(sess._programs) == 2


def test_compile_keeps_at_most_cache_size_traces(monkeypatch, capsys):
    monkeypatch.setenv("KILN_DEBUG", "1")
    f = kn.compile(lambda x: x * 2.0, cache_size=2)
    traces = []
    for n in range(1, 6):
        f(np.ones(n, np.float32))
        traces.append(weakref.ref(f.last))
    assert len(f.cache) == 2
    assert [t() is None for t in traces] == [True, True, True, False, False]
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "cache full" in ln]
    assert len(lines) == 3
    assert "kn.compile: <lambda>: cache full (2 traces): dropped the least recently used, " \
           "for f32[1] on cpu" in lines[0]  # fmt: skip


def test_compile_cache_evicts_the_least_recently_used():
    f = kn.compile(lambda x: x + 1.0, cache_size=2)
    a, b, c = (np.ones(n, np.float32) for n in (1, 2, 3))
    f(a)
    f(b)
    kept = f.last
    f(b)
    f(a)  # a is the most recent now, b the least
    f(c)
    assert kept not in f.cache.values() and len(f.cache) == 2
    f(a)
    assert len(f.cache) == 2  # a was kept: a cache hit


def test_compile_default_bound_is_the_module_level_cache_size(monkeypatch):
    monkeypatch.setattr(cache, "CACHE_SIZE", 3)
    f = kn.compile(lambda x: x - 1.0)
    for n in range(1, 8):
        f(np.ones(n, np.float32))
    assert len(f.cache) == 3
