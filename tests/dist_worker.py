"""The programs that test_distributed.py runs on 2 and 4 ranks (`mpiexec -n N python
dist_worker.py NAME [ARGS]`). Each checks its results on every rank with asserts and prints
"<ok RANK>" at the end; expected values are hand-computed from the ranks' inputs."""

from __future__ import annotations

import contextlib
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


def _model():
    kn.manual_seed(0)
    return kn.nn.MLP([8, 16, 16, 4])


def _batches(steps, size=8):
    rng = np.random.default_rng(1)
    return [
        (rng.standard_normal((size, 8)).astype(np.float32), rng.integers(0, 4, size))
        for _ in range(steps)
    ]


def _params(model):
    return np.concatenate([p.numpy().reshape(-1) for p in model.parameters()])


def _same_on_every_rank(values, n):
    """The largest difference between this rank's values and any other rank's."""
    gathered = [np.zeros_like(values) for _ in range(n)]
    dist.all_gather(gathered, values)
    return max(float(np.max(np.abs(g - values))) for g in gathered)


@program
def ddp(r, n, mode):
    """DDP training (eager or kn.compile) against one process over the same global batches:
    parameters identical on every rank after every step, within 1e-6 of the reference."""
    reference, model = _model(), _model()
    if r > 0:  # the wrap must take rank 0's parameters
        for p in model.parameters():
            p.assign(p.numpy() + r)
    ddp_model = kn.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
    assert len(ddp_model._buckets) > 1
    assert _same_on_every_rank(_params(model), n) == 0.0
    opt = kn.optim.AdamW(model.parameters(), lr=0.01)
    ref_opt = kn.optim.AdamW(reference.parameters(), lr=0.01)

    def loss_of(m):
        fn = lambda x, y: kn.cross_entropy(m(x), y)  # noqa: E731
        return kn.compile(fn) if mode == "compile" else fn

    loss_fn, ref_loss_fn = loss_of(ddp_model), loss_of(reference)
    share = 8 // n
    for x, y in _batches(4):
        opt.zero_grad()
        mine = slice(r * share, (r + 1) * share)
        loss_fn(kn.tensor(x[mine]), kn.tensor(y[mine])).backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss_fn(kn.tensor(x), kn.tensor(y)).backward()
        ref_opt.step()
        assert _same_on_every_rank(_params(model), n) == 0.0
        np.testing.assert_allclose(_params(model), _params(reference), rtol=0, atol=1e-6)
    sync = ddp_model.last_sync
    assert len(sync["buckets"]) == len(ddp_model._buckets), sync
    assert all(s <= e for s, e, _ in sync["buckets"]), sync


@program
def ddp_no_sync(r, n):
    """Two micro-batches under no_sync(), a third synchronized: the gradients equal the
    single-process gradients of the three, summed (each a mean over its micro-batch)."""
    reference, model = _model(), _model()
    ddp_model = kn.nn.parallel.DistributedDataParallel(model)
    share = 8 // n
    batches = _batches(3)
    for k, (x, y) in enumerate(batches):
        mine = slice(r * share, (r + 1) * share)
        context = ddp_model.no_sync() if k < 2 else contextlib.nullcontext()
        with context:
            kn.cross_entropy(ddp_model(kn.tensor(x[mine])), kn.tensor(y[mine])).backward()
        if k == 0:  # local only: rank r's gradient of its own shard
            local = [p.grad.numpy().copy() for p in model.parameters()]
            assert _same_on_every_rank(np.concatenate([g.ravel() for g in local]), n) > 0
        kn.cross_entropy(reference(kn.tensor(x)), kn.tensor(y)).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=0, atol=1e-6)


def _train_graph(model, steps, shard):
    """A TF1-style graph of `model`, AdamW's train op; returns the parameters after each step."""
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, ("batch", 8), name="x")
        y = kn.placeholder(kn.int64, ("batch",), name="y")
        loss = kn.cross_entropy(model(x), y)
        train_op = kn.optim.AdamW(lr=0.01).minimize(loss)
        sess = kn.Session(graph=g)
        after = []
        for xb, yb in _batches(steps):
            sess.run([loss, train_op], {x: xb[shard], y: yb[shard]})
            after.append(np.concatenate([v.numpy().reshape(-1) for v in g.variables
                                         if v.trainable]))  # fmt: skip
    return after, g, train_op, loss, x, y


@program
def graph_training(r, n):
    """Graph mode: minimize inside the process group inserts the bucketed all-reduce; the
    parameters equal a one-process graph (built with no process group) over the same global
    batches within 1e-6, identical on every rank; the schedule starts a bucket's all-reduce
    before backward has finished and the memory plan holds its buffer."""
    dist.destroy_process_group()
    reference, _, _, _, _, _ = _train_graph(_model(), 3, slice(None))
    dist.init_process_group("mpi", timeout=20)
    share = 8 // n
    after, g, train_op, loss, x, y = _train_graph(_model(), 3, slice(r * share, (r + 1) * share))
    for mine, ref in zip(after, reference):
        assert _same_on_every_rank(mine, n) == 0.0
        np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-6)
    # Small buckets: the first (the last layer's gradients) starts while backward goes on.
    kn.distributed.graph.bucket_cap_mb = 0.0005
    _, g, train_op, loss, x, y = _train_graph(_model(), 0, slice(None))
    kn.distributed.graph.bucket_cap_mb = None
    f = kn.function([x, y], [loss, train_op])
    xb, yb = _batches(1)[0]
    f(xb[:share], yb[:share])
    order = [node.op.name for node in f.program.last.order]
    starts = [i for i, op in enumerate(order) if op == "all_reduce_start"]
    waits = [i for i, op in enumerate(order) if op == "all_reduce_wait"]
    assert len(starts) == len(waits) == 4, order  # 4 buckets of at most 512 B
    for k in range(3):  # backward runs while bucket k is in flight
        assert starts[k] < starts[k + 1] < waits[k], order
        assert "matmul" in order[starts[k] : waits[k]], (k, order)
    assert f.plan.summary().count("all_reduce_start") == 4


@program
def ddp_unused_parameter(r, n):
    """A parameter that takes no part in the loss: the next forward raises, as PyTorch's."""
    kn.manual_seed(0)
    model = kn.nn.parallel.DistributedDataParallel(
        kn.nn.ModuleList([kn.nn.Linear(2, 2), kn.nn.Linear(2, 2)])
    )
    x = kn.ones(1, 2)
    used = model.module[0]
    used(x).sum().backward()
    try:
        model(x)
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
    else:
        raise AssertionError("the forward after an incomplete reduction must raise")


@program
def restore(r, n, path, accuracy):
    """A checkpoint that rank 0 of another world size saved: every rank loads it, the wrap
    keeps it (rank 0's), and the held-out accuracy is the one the saving run printed."""
    from kiln import demo

    saved = kn.load(path)
    model = kn.nn.MLP([64, demo.HIDDEN, 10])  # fresh values, replaced by the file's
    model.load_state_dict(saved)
    ddp_model = kn.nn.parallel.DistributedDataParallel(model)
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(p.numpy(), saved[name])
    x, y = demo.load_digits()
    _, test = demo.split(len(y))
    assert f"{demo.eager_accuracy(ddp_model.module, x[test], y[test]):.4f}" == accuracy


@program
def nccl_collectives(r, n):
    """The NCCL transport on the stand-in (fake_nccl.py): CUDA tensors reduced in place at
    their own device pointers, with NCCL's dtype and op codes; DDP's buckets too."""
    import fake_nccl

    t = kn.tensor([1.0, 2.0], device="cuda") * (r + 1)
    ptr = t._data.data.ptr
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    total = n * (n + 1) / 2
    assert t.device.type == "cuda" and t.cpu().tolist() == [total / n, 2 * total / n]
    assert fake_nccl.CALLS[-1] == ("allReduce", ptr, ptr, 2, 7, 0)  # in place, float32, sum
    i = kn.tensor([r + 1], device="cuda", dtype=kn.int64)
    dist.all_reduce(i, op="max")
    assert i.cpu().tolist() == [n] and fake_nccl.CALLS[-1][4:] == (4, 2)  # int64, max
    b = kn.tensor([float(r)] * 3, device="cuda", dtype=kn.float64)
    dist.broadcast(b, src=1)
    assert b.cpu().tolist() == [1.0] * 3 and fake_nccl.CALLS[-1][2:] == (3, 8, 1)
    out = [kn.zeros(2, device="cuda") for _ in range(n)]
    dist.all_gather(out, kn.tensor([r, r + 0.5], device="cuda"))
    assert [o.cpu().tolist() for o in out] == [[k, k + 0.5] for k in range(n)]
    o = kn.zeros(2, device="cuda")
    dist.reduce_scatter(o, [kn.ones(2, device="cuda") * (k + 10 * r) for k in range(n)])
    assert o.cpu().tolist() == [n * r + 10 * n * (n - 1) / 2] * 2
    dist.barrier()
    try:
        dist.all_reduce(kn.tensor([1.0]))
    except kn.distributed.DistError as e:
        assert "the nccl backend takes CUDA tensors" in str(e)
    else:
        raise AssertionError("a CPU tensor on the nccl backend must raise")


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
    """`dist_worker.py NAME [ARGS...]`, or several programs in one job (one MPI start-up):
    `dist_worker.py NAME[:ARG]+NAME[:ARG]...`."""
    names, args = sys.argv[1], sys.argv[2:]
    timeout = float(os.environ.get("KILN_TEST_TIMEOUT", "20"))
    if names.startswith("nccl"):
        import fake_nccl

        fake_nccl.install()
    dist.init_process_group("nccl" if names.startswith("nccl") else "mpi", timeout=timeout)
    r, n = dist.get_rank(), dist.get_world_size()
    for part in names.split("+"):
        name, _, arg = part.partition(":")
        PROGRAMS[name](r, n, *([arg] if arg else []), *args)
        print(f"<done {name} {r}>", flush=True)
    print(f"<ok {r}>", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
