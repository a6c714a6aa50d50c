"""`mpiexec -n N kiln demo --distributed`: the digits MLP trained data-parallel on N ranks.

Each global batch of the single-process demo (same order, same size) is split over the ranks;
each rank's loss is its shard's summed cross-entropy times N / (global batch size), so the
ranks' averaged gradient is the gradient of the global batch's mean loss. Three ways, as the
plain demo: graph mode (`minimize` inserts the all-reduce), eager and `kn.compile` (both with
`DistributedDataParallel`). Every rank also trains one process's model over the whole global
batches beside it, and after every step checks that its parameters equal every other rank's
exactly and the one-process run's within `TOLERANCE`. Rank 0 saves the eager model's
checkpoint, which loads on any world size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import demo

TOLERANCE = 1e-6


def _flat(model) -> np.ndarray:
    return np.concatenate([p.numpy().reshape(-1) for p in model.parameters()])


def _spread(values: np.ndarray) -> float:
    """The largest difference of `values` between any two ranks (max minus min)."""
    import kiln.distributed as dist

    high, low = values.copy(), values.copy()
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    return float(np.max(high - low))


def _graph_steps(model):
    """(step, accuracy): graph mode, the loss as the module docstring says."""
    import kiln as kn

    with kn.Graph().as_default() as graph:
        x = kn.placeholder(kn.float32, ("batch", 64), name="x")
        labels = kn.placeholder(kn.int64, ("batch",), name="labels")
        scale = kn.placeholder(kn.float32, (), name="scale")
        loss = kn.cross_entropy(model(x), labels, reduction="sum") * scale
        train_op = kn.optim.AdamW(lr=demo.LR).minimize(loss)
        correct = kn.eq(kn.argmax(model(x), axis=1), labels)
        accuracy = kn.mean(kn.cast(correct, kn.float32))
    sess = kn.Session(graph=graph)

    def step(xb, yb, s):
        return sess.run([loss, train_op], {x: xb, labels: yb, scale: np.float32(s)})[0]

    return step, lambda xt, yt: float(sess.run(accuracy, {x: xt, labels: yt}))


def _eager_steps(model, compiled: bool):
    import kiln as kn

    opt = kn.optim.AdamW(model.parameters(), lr=demo.LR)
    fn = lambda xb, yb, s: kn.cross_entropy(model(xb), yb, reduction="sum") * s  # noqa: E731
    forward = kn.compile(fn) if compiled else fn

    def step(xb, yb, s):
        opt.zero_grad()
        loss = forward(kn.tensor(xb), kn.tensor(yb), kn.tensor(np.float32(s)))
        loss.backward()
        opt.step()
        return loss.item()

    target = model.module if isinstance(model, kn.nn.parallel.DistributedDataParallel) else model
    return step, lambda xt, yt: demo.eager_accuracy(target, xt, yt)


def _train_pair(mode, ddp_step, ref_step, ddp_model, ref_model, data, epochs, rank, world):
    """Trains both over the same global batches; returns the largest spread between ranks
    and the largest difference from the one-process run, over every step."""
    x, y = data
    rng = np.random.default_rng(demo.SEED)
    spread = difference = 0.0
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for i in range(0, len(order), demo.BATCH):
            batch = order[i : i + demo.BATCH]
            mine = np.array_split(batch, world)[rank]
            ddp_step(x[mine], y[mine], world / len(batch))
            ref_step(x[batch], y[batch], 1.0 / len(batch))
            mine_values = _flat(ddp_model)
            spread = max(spread, _spread(mine_values))
            difference = max(difference, float(np.max(np.abs(mine_values - _flat(ref_model)))))
    return spread, difference


def run(out: Path, epochs: int = demo.EPOCHS, echo=print, timeout: float = 300.0) -> dict:
    """The distributed demo on this rank (launched by mpiexec); returns what it measured per
    mode: (spread between ranks, difference from one process, accuracy, one process's)."""
    import kiln as kn
    import kiln.distributed as dist

    x_all, y_all = demo.load_digits()
    train_idx, test = demo.split(len(y_all))
    data = (x_all[train_idx], y_all[train_idx])
    x_test, y_test = x_all[test], y_all[test]
    # The one-process graph is built before the process group exists: no all-reduce in it.
    ref_graph = demo.make_model()
    ref_graph_steps = _graph_steps(ref_graph)
    dist.init_process_group("mpi", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    say = echo if rank == 0 else (lambda *_: None)
    say(f"digits on {world} ranks: each global batch of {demo.BATCH} split over the ranks")
    results = {}
    for mode in ("graph mode", "eager", "kn.compile"):
        model = demo.make_model()
        if mode == "graph mode":
            ref_model, (ref_step, ref_acc) = ref_graph, ref_graph_steps
            step, acc = _graph_steps(model)
            target = model
        else:
            ref_model = demo.make_model()
            ref_step, ref_acc = _eager_steps(ref_model, mode == "kn.compile")
            target = kn.nn.parallel.DistributedDataParallel(model)
            step, acc = _eager_steps(target, mode == "kn.compile")
        spread, difference = _train_pair(mode, step, ref_step, model, ref_model, data, epochs,
                                         rank, world)  # fmt: skip
        results[mode] = (spread, difference, acc(x_test, y_test), ref_acc(x_test, y_test))
        same = spread == 0 and difference <= TOLERANCE and results[mode][2] == results[mode][3]
        say(
            f"{mode:<11} {epochs} epochs: max parameter difference between ranks {spread:g} "
            f"(after every step), from one process {difference:.2e}; held-out accuracy "
            f"{results[mode][2]:.4f} (one process {results[mode][3]:.4f}) "
            f"{'OK' if same else 'DIFFERENT'}"
        )
        if mode == "eager" and rank == 0:
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            path = out / "model-distributed.safetensors"
            kn.save(model.state_dict(), path)
            say(f"rank 0 saved {path}: it loads into kn.nn.MLP on any number of ranks")
    dist.barrier()
    dist.destroy_process_group()
    return results
