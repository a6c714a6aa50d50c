"""`kn.accelerator`, PyTorch's device-agnostic names (torch.accelerator), as the tutorials
use them: `torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
else "cpu"`. Expected behaviour: torch 2.13's (None and RuntimeError without an accelerator)."""

import pytest

import kiln as kn


def test_tutorial_device_line():
    device = kn.accelerator.current_accelerator().type if kn.accelerator.is_available() else "cpu"
    assert device == ("cuda" if kn.cuda.is_available() else "cpu")
    x = kn.ones(2, device=device)
    assert x.device.type == device
    assert kn.accelerator.device_count() == kn.cuda.device_count()


def test_without_an_accelerator_as_torch(monkeypatch):
    monkeypatch.setattr(kn.cuda, "is_available", lambda: False)
    assert kn.accelerator.is_available() is False
    assert kn.accelerator.current_accelerator() is None
    assert kn.accelerator.current_accelerator(check_available=True) is None
    for fn in (
        kn.accelerator.current_device_index,
        kn.accelerator.synchronize,
        kn.accelerator.memory_allocated,
        kn.accelerator.max_memory_allocated,
        kn.accelerator.empty_cache,
    ):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
            fn()


def test_with_an_accelerator(monkeypatch):
    monkeypatch.setattr(kn.cuda, "is_available", lambda: True)
    dev = kn.accelerator.current_accelerator()
    assert dev == kn.device("cuda") and dev.type == "cuda"
    assert kn.accelerator.current_device_index() == 0
