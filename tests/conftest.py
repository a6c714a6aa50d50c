"""Shared test setup: hypothesis profiles, a fresh default graph and seed for every test.

`HYPOTHESIS_PROFILE=dev pytest ...` explores more; the default `ci` profile is derandomized.
This directory is put on `sys.path` so tests can `from op_table import OpCase, CASES`.
"""

import importlib.util
import os
import sys

import pytest
from hypothesis import settings

import kiln as kn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The NCCL stand-in moves data with MPI: without mpi4py (the optional `mpi` extra) its module
# cannot be imported, so --doctest-modules must not collect it (its tests skip, saying why).
collect_ignore = [] if importlib.util.find_spec("mpi4py") else ["fake_nccl.py"]

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def fresh_default_graph():
    """Each test starts on an empty default graph with `kn.manual_seed(0)`."""
    kn.reset_default_graph()
    kn.manual_seed(0)
    yield


@pytest.fixture(autouse=True)
def exact_unless_chosen(monkeypatch):
    """Tests run in exact mode (`KILN_EXACT=1`: compiled programs give NumPy's bits), which
    many compare bit for bit with eager mode or NumPy, unless the run sets KILN_EXACT itself
    (`KILN_EXACT=0 pytest` runs them in the default mode); the default mode's own tests set or
    unset it (tests/test_vecmath.py, test_fused_loops.py, test_fused_segments.py)."""
    if "KILN_EXACT" not in os.environ:
        monkeypatch.setenv("KILN_EXACT", "1")
