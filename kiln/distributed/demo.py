"""`mpiexec -n N kiln demo --distributed`: the digits MLP trained data-parallel on N ranks.

Each global batch of the single-process demo (same order, same size) is split over the ranks;
each rank's loss is its shard's summed cross-entropy times N / (global batch size), so the
ranks' averaged gradient is the gradient of the global batch's mean loss. Three ways, as the
plain demo: graph mode (`minimize` inserts the all-reduce), eager and `kn.compile` (both with
`DistributedDataParallel`). Every rank also trains one process's model over the whole global
batches beside it, and after every step checks that its parameters equal every other rank's
exactly, and those of one process that took the same step from the same state (parameters
and optimizer state) within `TOLERANCE`. (An independent one-process run drifts further
over many steps, since float32 sums in another order differ in the last bits and Adam
carries the differences on; its distance and accuracy are reported too.) Rank 0 saves the
eager model's checkpoint, which loads on any world size.
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


class _Run:
    """One training run of a mode: its model, `step(x, y, scale)`, `accuracy(x, y)`, and
    `copy_from(run)`, which gives it another run's parameters and optimizer state."""

    def __init__(self, model, step, accuracy, copy_from):
        self.model, self.step, self.accuracy, self.copy_from = model, step, accuracy, copy_from


def _graph_run(model) -> _Run:
    """Graph mode, the loss as the module docstring says."""
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

    def copy_from(run):  # every Variable (parameters, moments, step counts), by name
        values = {v.name: v.numpy() for v in run.graph.variables}
        for v in graph.variables:
            v.assign(values[v.name])

    run = _Run(model, step, lambda xt, yt: float(sess.run(accuracy, {x: xt, labels: yt})),
               copy_from)  # fmt: skip
    run.graph = graph
    return run


def _eager_run(model, compiled: bool, wrap: bool) -> _Run:
    import kiln as kn

    target = kn.nn.parallel.DistributedDataParallel(model) if wrap else model
    opt = kn.optim.AdamW(model.parameters(), lr=demo.LR)
    fn = lambda xb, yb, s: kn.cross_entropy(target(xb), yb, reduction="sum") * s  # noqa: E731
    forward = kn.compile(fn) if compiled else fn

    def step(xb, yb, s):
        opt.zero_grad()
        loss = forward(kn.tensor(xb), kn.tensor(yb), kn.tensor(np.float32(s)))
        loss.backward()
        opt.step()
        return loss.item()

    def copy_from(run):
        pairs = list(zip(run.model.parameters(), model.parameters()))
        for p, q in pairs:
            q.assign(p.numpy())
        opt._state = {q: {k: v if isinstance(v, int) else v.clone()
                          for k, v in run.opt._state[p].items()}
                      for p, q in pairs if p in run.opt._state}  # fmt: skip

    run = _Run(model, step, lambda xt, yt: demo.eager_accuracy(model, xt, yt), copy_from)
    run.opt = opt
    return run


def _train(runs, data, epochs, rank, world, max_steps=None) -> tuple[float, float, float]:
    """Trains `runs` (distributed, one process, and a scratch one) over the same global
    batches. Returns the largest difference of the parameters between ranks, from the
    one-process run after the same step from the same state (the scratch run takes the
    distributed run's state before each step), and from the independent one-process run."""
    dist_run, alone, scratch = runs
    x, y = data
    rng = np.random.default_rng(demo.SEED)
    spread = per_step = drift = 0.0
    steps = 0
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for i in range(0, len(order), demo.BATCH):
            if steps == max_steps:
                break
            steps += 1
            batch = order[i : i + demo.BATCH]
            mine = np.array_split(batch, world)[rank]
            scratch.copy_from(dist_run)
            dist_run.step(x[mine], y[mine], world / len(batch))
            scratch.step(x[batch], y[batch], 1.0 / len(batch))
            alone.step(x[batch], y[batch], 1.0 / len(batch))
            values = _flat(dist_run.model)
            spread = max(spread, _spread(values))
            per_step = max(per_step, float(np.max(np.abs(values - _flat(scratch.model)))))
            drift = max(drift, float(np.max(np.abs(values - _flat(alone.model)))))
    return spread, per_step, drift


def run(out: Path, epochs: int = demo.EPOCHS, echo=print, timeout: float = 300.0,
        max_steps: int | None = None) -> dict:  # fmt: skip
    """The distributed demo on this rank (launched by mpiexec); returns what it measured per
    mode: (spread between ranks, per-step difference from one process, drift of an
    independent one-process run, accuracy, that run's accuracy). `max_steps` stops each
    mode's training early."""
    import kiln as kn
    import kiln.distributed as dist

    x_all, y_all = demo.load_digits()
    train_idx, test = demo.split(len(y_all))
    data = (x_all[train_idx], y_all[train_idx])
    x_test, y_test = x_all[test], y_all[test]
    # One-process graphs are built before the process group exists: no all-reduce in them.
    graph_alone = [_graph_run(demo.make_model()) for _ in range(2)]
    dist.init_process_group("mpi", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    say = echo if rank == 0 else (lambda *_: None)
    say(f"digits on {world} ranks: each global batch of {demo.BATCH} split over the ranks")
    results = {}
    for mode in ("graph mode", "eager", "kn.compile"):
        if mode == "graph mode":
            runs = [_graph_run(demo.make_model()), *graph_alone]
        else:
            runs = [_eager_run(demo.make_model(), mode == "kn.compile", wrap=k == 0)
                    for k in range(3)]  # fmt: skip
        spread, per_step, drift = _train(runs, data, epochs, rank, world, max_steps)
        accuracy, alone = runs[0].accuracy(x_test, y_test), runs[1].accuracy(x_test, y_test)
        results[mode] = (spread, per_step, drift, accuracy, alone)
        ok = spread == 0 and per_step <= TOLERANCE and accuracy == alone
        limit = "" if max_steps is None else f" (at most {max_steps} steps)"
        say(
            f"{mode:<11} {epochs} epochs{limit}: max parameter difference between ranks {spread:g} "
            f"(after every step), from one process after the same step {per_step:.2e} "
            f"(independent run: {drift:.2e} by the end); held-out accuracy {accuracy:.4f} "
            f"(one process {alone:.4f}) {'OK' if ok else 'DIFFERENT'}"
        )
        if mode == "eager" and rank == 0:
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            path = out / "model-distributed.safetensors"
            kn.save(runs[0].model.state_dict(), path)
            say(f"rank 0 saved {path}: it loads into kn.nn.MLP on any number of ranks")
    dist.barrier()
    dist.destroy_process_group()
    return results
