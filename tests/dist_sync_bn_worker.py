"""`mpiexec -n N python dist_sync_bn_worker.py`: SyncBatchNorm on each rank's shard of one
batch against BatchNorm1d on the whole batch in one process (kiln's own, whose values
tests/test_nn_modules_more.py checks against PyTorch): outputs, input and parameter
gradients, running statistics; eagerly and in graph mode. Prints "<ok RANK>"."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kiln as kn  # noqa: E402
import kiln.distributed as dist  # noqa: E402


def main():
    dist.init_process_group("mpi", timeout=20)
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * n, 3, 5)).astype(np.float64)
    c = rng.standard_normal((4 * n, 3, 5)).astype(np.float64)
    rows = slice(4 * r, 4 * r + 4)

    full = kn.nn.BatchNorm1d(3, dtype=kn.float64)
    xf = kn.tensor(x, requires_grad=True)
    (full(xf) * kn.tensor(c)).sum().backward()
    want = full(kn.tensor(x)).detach().numpy()  # a second step: running stats move twice

    sync = kn.nn.SyncBatchNorm(3, dtype=kn.float64)
    xs = kn.tensor(x[rows], requires_grad=True)
    (sync(xs) * kn.tensor(c[rows])).sum().backward()  # each rank's part of the full loss
    got = sync(kn.tensor(x[rows])).detach().numpy()
    np.testing.assert_allclose(got, want[rows], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xs.grad.numpy(), xf.grad.numpy()[rows], rtol=1e-9, atol=1e-12)
    weight_grad = sync.weight.grad.detach().clone()
    dist.all_reduce(weight_grad)  # DDP's all-reduce of parameter gradients
    np.testing.assert_allclose(weight_grad.numpy(), full.weight.grad.numpy(), rtol=1e-9)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(sync, name).numpy(), getattr(full, name).numpy(),
                                   rtol=1e-10, err_msg=name)  # fmt: skip

    with kn.Graph().as_default():  # graph mode: the all-reduce is a graph node
        p = kn.placeholder(kn.float64, (4, 3, 5), name="x")
        fn = kn.function([p], kn.nn.SyncBatchNorm(3, dtype=kn.float64)(p))
    batch = kn.nn.BatchNorm1d(3, dtype=kn.float64)(kn.tensor(x)).detach().numpy()
    np.testing.assert_allclose(fn(x[rows]), batch[rows], rtol=1e-10, atol=1e-12)
    print(f"<ok {r}>", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
