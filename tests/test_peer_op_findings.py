"""Differences from PyTorch found by running a peer project's PyTorch-referenced operator
tests on kiln (the torch-side lambdas, run on kiln and compared with torch 2.13). Each test
states torch's behaviour by hand and checks it against torch when torch is installed."""

import pytest

import kiln as kn
from kiln.errors import UsageError


def _meshgrid_bad_indexing(lib):
    return lib.meshgrid(lib.tensor([1.0, 2.0]), indexing="bad")


def test_meshgrid_unknown_indexing_is_a_runtime_error_as_in_torch():
    # torch 2.13: RuntimeError 'torch.meshgrid: indexing must be one of "xy" or "ij", ...'
    # (not a ValueError): code catching RuntimeError must catch kiln's refusal too
    with pytest.raises(RuntimeError, match="indexing must be one of"):
        _meshgrid_bad_indexing(kn)
    with pytest.raises(UsageError, match="got bad"):
        _meshgrid_bad_indexing(kn)
    with pytest.raises(RuntimeError):
        kn.compile(lambda x: kn.meshgrid(x, indexing="bad"))(kn.tensor([1.0, 2.0]))


def test_meshgrid_unknown_indexing_matches_torch_exception_type():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as expected:
        _meshgrid_bad_indexing(torch)
    with pytest.raises(RuntimeError) as got:
        _meshgrid_bad_indexing(kn)
    assert isinstance(got.value, type(expected.value))
