"""The programs that test_distributed.py runs on 2 and 4 ranks (`mpiexec -n N python
dist_worker.py NAME [ARGS]`). Each checks its results on every rank with asserts and prints
"ok <rank>" at the end; expected values are hand-computed from the ranks' inputs."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kiln as kn  # noqa: E402
import kiln.distributed as dist  # noqa: E402

PROGRAMS = {}


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def eager_collectives(r, n):
    """Each eager collective on Tensors, in place; ranks hold rank-dependent values."""
    t = kn.tensor([1.0, 2.0]) * (r + 1)
    dist.all_reduce(t)
    total = n * (n + 1) / 2  # 1 + 2 + ... + n
    np.testing.assert_array_equal(t.numpy(), [total, 2 * total])
    t = kn.tensor([1.0, 2.0]) * (r + 1)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed()
    np.testing.assert_allclose(t.numpy(), [total / n, 2 * total / n])
    for op, expected in (("max", n), ("min", 1), ("product", np.prod(np.arange(1, n + 1)))):
        t = kn.tensor([float(r + 1)])
        dist.all_reduce(t, op=op)
        assert t.item() == expected, (op, t.item())
    i = kn.tensor([r, 1])  # integers
    dist.all_reduce(i)
    assert i.tolist() == [n * (n - 1) // 2, n]
    b = kn.tensor([float(r)] * 3)
    version = b._version
    dist.broadcast(b, src=n - 1)
    assert b.tolist() == [n - 1.0] * 3 and b._version == version + 1
    strided = kn.zeros(4, 2)[:, 0]  # not contiguous: through a copy, written back
    strided += r
    dist.all_reduce(strided)
    assert strided.tolist() == [n * (n - 1) / 2] * 4
    out = [kn.zeros(2) for _ in range(n)]
    dist.all_gather(out, kn.tensor([r, r + 0.5]))
    assert [o.tolist() for o in out] == [[k, k + 0.5] for k in range(n)]
    o = kn.zeros(2)
    dist.reduce_scatter(o, [kn.ones(2) * (k + 10 * q) for k, q in [(i, r) for i in range(n)]])
    # rank r gets sum over ranks q of (r + 10 q)
    assert o.tolist() == [n * r + 10 * n * (n - 1) / 2] * 2
    a = np.full(3, float(r))  # NumPy arrays too
    dist.all_reduce(a, op=dist.ReduceOp.SUM)
    assert a.tolist() == [n * (n - 1) / 2] * 3
    dist.barrier()


@program
def graph_collectives(r, n):
    """The collectives as graph ops, in one compiled function and under kn.compile."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (3,), name="x")
        y = dist.all_reduce(x * 2.0, op="avg")
        z = dist.broadcast(x, src=0)
        parts = []
        dist.all_gather(parts, x)
        rs = dist.reduce_scatter(None, [x * float(k + 1) for k in range(n)])
        f = kn.function([x], [y, z, kn.stack(parts), rs])
        ops = [node.op.name for node in f.graph.nodes]
        assert ops.count("all_reduce_start") == 1 and ops.count("all_reduce_wait") == 1
        y_v, z_v, parts_v, rs_v = f(np.full(3, r + 1.0, np.float32))
    total = n * (n + 1) / 2
    np.testing.assert_array_equal(y_v, np.full(3, 2 * total / n, np.float32))
    np.testing.assert_array_equal(z_v, np.ones(3, np.float32))
    np.testing.assert_array_equal(parts_v, np.repeat(np.arange(1.0, n + 1)[:, None], 3, 1))
    np.testing.assert_array_equal(rs_v, np.full(3, (r + 1) * total, np.float32))
    summed = kn.compile(lambda t: dist.all_reduce(t * 1.0))(kn.tensor([1.0, float(r)]))
    assert summed.tolist() == [n, n * (n - 1) / 2]


@program
def fault(r, n, mode):
    """Rank 1 fails (`mode`); the others are in an all-reduce with a 3 s timeout."""
    if r == 1:
        if mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        if mode == "exit":
            os._exit(7)
        if mode == "skip":  # never calls the collective: the others time out
            time.sleep(30)
    t = kn.ones(4)
    dist.all_reduce(t)


def main():
    name, args = sys.argv[1], sys.argv[2:]
    timeout = float(os.environ.get("KILN_TEST_TIMEOUT", "20"))
    dist.init_process_group("mpi", timeout=timeout)
    r, n = dist.get_rank(), dist.get_world_size()
    PROGRAMS[name](r, n, *args)
    print(f"ok {r}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
