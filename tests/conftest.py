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
