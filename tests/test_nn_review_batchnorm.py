"""BatchNorm's attributes read at call time, as PyTorch's: eval mode normalizes by the running
statistics whenever the buffers exist, even with `track_running_stats` set False after
construction (kiln used the batch's statistics then), and training updates only tracked,
existing buffers. Expected values are torch's on the same inputs."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = (np.random.default_rng(0).standard_normal((8, 3)) * 2 + 1).astype(np.float32)


def _run(lib, cls, build_kw, change, train):
    m = getattr(lib.nn, cls)(3, **build_kw)
    shape = (8, 3) if cls == "BatchNorm1d" else (8, 3, 1, 1)
    m(lib.tensor(X.reshape(shape)))
    for name, value in change.items():
        setattr(m, name, value)
    m.train(train)
    for i in range(2):
        y = m(lib.tensor((X * (i + 2)).reshape(shape)))
    stats = [None if b is None else np.asarray(b.tolist()) for b in (m.running_mean, m.running_var)]
    count = None if m.num_batches_tracked is None else int(m.num_batches_tracked)
    return y.detach().numpy(), stats, count


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize(
    "build_kw, change",
    [
        ({}, {"track_running_stats": False}),
        ({"track_running_stats": False}, {"track_running_stats": True}),
        ({}, {"momentum": None}),
        ({}, {"momentum": 0.5, "eps": 0.5}),
    ],
)
def test_batchnorm_attributes_changed_after_init_like_torch(cls, train, build_kw, change):
    (yt, st, nt), (yk, sk, nk) = (_run(lib, cls, build_kw, change, train) for lib in (torch, kn))
    np.testing.assert_allclose(yk, yt, rtol=1e-5, atol=1e-5)
    assert nk == nt
    for a, b in zip(st, sk):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm1d", "SyncBatchNorm"])
def test_untracked_norm_has_none_buffers_like_torch(cls):
    kw = {"track_running_stats": False}
    t, k = getattr(torch.nn, cls)(3, **kw), getattr(kn.nn, cls)(3, **kw)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert getattr(t, name) is None and getattr(k, name) is None
    assert list(k.state_dict()) == list(t.state_dict())
    assert [n for n, _ in k.named_buffers()] == [n for n, _ in t.named_buffers()] == []
