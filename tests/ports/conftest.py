"""The `torch` fixture of the ported programs: PyTorch, or a skip where it is missing.

PyTorch runs these tiny models on one thread here: its thread pool on a shared two-core
machine costs seconds per test and changes no result; the previous setting is restored.
"""

import pytest


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)
