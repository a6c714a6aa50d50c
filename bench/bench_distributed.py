"""Data-parallel training (eager `DistributedDataParallel`, SGD) on 1 and 2 ranks of this host.

For the digits MLP (64-256-10, global batch 16) and an MLP of 16 layers of width 1024 (global
batch 32), each split over the ranks:
- step time at 1 and 2 ranks (median over the measured steps; on a machine with fewer free
  cores than ranks it shows contention, not speed-up);
- bytes sent per step and rank, measured on the loopback interface (/proc/net/dev, so with
  MPICH's UCX over TCP: `MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp`; TCP and UCX headers included),
  beside the ring all-reduce's 2(N-1)/N x parameter bytes;
- the fraction of the all-reduce time that overlaps backward: for each bucket, the time
  from its start to when it was seen complete, the part before the last gradient arrived,
  summed over buckets (DDP's default 25 MB buckets; for the digits MLP, whose 0.07 MB make
  one such bucket, also 25 KB buckets).

    python bench/bench_distributed.py [--quick]      (launches mpiexec itself)
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# name: (layer sizes, global batch, bucket_cap_mb: None is DDP's default, 25 MB)
MODELS = {
    "digits MLP 64-256-10": ([64, 256, 10], 16, None),
    "  the same, 25 KB buckets": ([64, 256, 10], 16, 0.025),
    "MLP 16x1024": ([1024] * 17, 32, None),
}
TCP = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp"}


def loopback_sent() -> int:
    """Bytes transmitted on the loopback interface so far (every process of this host)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, fields = line.partition(":")
        if name.strip() == "lo":
            return int(fields.split()[8])
    return 0


def overlap(sync) -> tuple[float, float]:
    """(the fraction of all-reduce time before backward's last gradient, seconds waited after
    it) of one backward's `last_sync`."""
    end = sync["backward_end"]
    total = sum(f - s for s, f, _ in sync["buckets"])
    hidden = sum(max(0.0, min(f, end) - s) for s, f, _ in sync["buckets"])
    return (hidden / total if total > 0 else 0.0), sync["waited"]


def worker(quick: bool) -> None:
    import kiln as kn
    import kiln.distributed as dist

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for name, (sizes, batch, cap) in MODELS.items():
        kn.manual_seed(0)
        model = kn.nn.parallel.DistributedDataParallel(kn.nn.MLP(sizes), bucket_cap_mb=cap)
        opt = kn.optim.SGD(model.parameters(), lr=0.01)
        rng = np.random.default_rng(rank)
        x = kn.tensor(rng.standard_normal((batch // world, sizes[0])).astype(np.float32))
        y = kn.tensor(rng.integers(0, sizes[-1], batch // world))
        steps = 2 if quick or sizes[0] > 64 else 20
        times, fractions, waits, sent = [], [], [], 0
        for k in range(steps + 1):  # the first step warms up (allocations, buffers)
            dist.barrier()
            before = loopback_sent()
            start = time.perf_counter()
            opt.zero_grad()
            kn.cross_entropy(model(x), y).backward()
            opt.step()
            seconds = time.perf_counter() - start
            dist.barrier()
            if k:
                times.append(seconds)
                sent += loopback_sent() - before
                fraction, waited = overlap(model.last_sync)
                fractions.append(fraction)
                waits.append(waited)
        param_bytes = sum(p.numpy().nbytes for p in model.parameters())
        results[name] = {
            "step_ms": 1e3 * float(np.median(times)),
            "sent_per_rank": sent / steps / world,  # the counter holds every rank's traffic
            "ring": 2 * (world - 1) / world * param_bytes,
            "param_bytes": param_bytes,
            "overlap": float(np.mean(fractions)),
            "waited_ms": 1e3 * float(np.mean(waits)),
            "buckets": len(model.last_sync["buckets"]),
        }
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    dist.destroy_process_group()


def launch(n: int, quick: bool, env: dict) -> dict:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    command = [str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec"), "-n", str(n),
               sys.executable, __file__, "--worker", *(["--quick"] if quick else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **env))  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"mpiexec -n {n} failed:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few steps: checks that it runs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.quick)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print("skipped: mpi4py is not installed (pip install kiln[mpi])")
        return None
    one, two, two_tcp = (launch(1, args.quick, {}), launch(2, args.quick, {}),
                         launch(2, args.quick, TCP))  # fmt: skip
    print("eager DDP, SGD, global batch split over ranks")
    print(f"{'model':<26}{'1 rank ms':>10}{'2 ranks ms':>11}{'params':>10}{'sent/rank':>11}"
          f"{'ring':>10}{'ratio':>7}{'buckets':>8}{'overlap':>8}{'waited ms':>10}")  # fmt: skip
    for name in MODELS:
        a, b, t = one[name], two[name], two_tcp[name]
        print(f"{name:<26}{a['step_ms']:>10.2f}{b['step_ms']:>11.2f}"
              f"{t['param_bytes'] / 2**20:>8.2f}MB{t['sent_per_rank'] / 2**20:>9.2f}MB"
              f"{t['ring'] / 2**20:>8.2f}MB{t['sent_per_rank'] / t['ring']:>7.3f}"
              f"{b['buckets']:>8}{b['overlap']:>8.2f}{b['waited_ms']:>10.2f}")  # fmt: skip
    print("sent/rank: loopback bytes per step and rank with UCX over TCP (headers included); "
          "overlap and times: MPICH's default transport (shared memory)")  # fmt: skip
    return None


if __name__ == "__main__":
    main()
