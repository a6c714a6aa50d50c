"""An autouse fixture for test modules whose torch oracle's layouts depend on torch's thread
count: torch 2.13's conv3d of a channels_last_3d input is channels-last with more than one
thread (its mkldnn kernel) but C-ordered with one (its slow kernel). kiln follows the
multi-threaded layout, so such oracles run with at least two threads (other tests may leave
torch at one)."""

import pytest


@pytest.fixture(autouse=True)
def two_torch_threads():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))
    yield
    torch.set_num_threads(threads)
