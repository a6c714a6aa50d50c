"""The process group: `init_process_group` and its state, `Work`, and waiting with a timeout.

One process group per process (PyTorch's default group). Its transport (MPI, or NCCL on
GPUs) starts collectives; `wait` polls them until they complete or the timeout passes, so a
rank that died, raised, or never calls a collective makes the others raise `DistBackendError`
instead of hanging. An exception that no one catches on a rank of a group ends the whole job
(MPI_Abort through `sys.excepthook`): the launcher then stops every other rank at once.
"""

from __future__ import annotations

import datetime
import enum
import os
import sys
import time

from ..errors import ArgumentError, DistBackendError, DistError

# PyTorch's default: 30 minutes (`torch.distributed.constants.default_pg_timeout`).
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)

_group = None  # the ProcessGroup of this process, once initialized


class ReduceOp(enum.Enum):
    """How a reduction combines the ranks' values (PyTorch's `ReduceOp`); AVG is SUM divided
    by the world size, for floating-point values.

    >>> ReduceOp.SUM, ReduceOp("max")
    (<ReduceOp.SUM: 'sum'>, <ReduceOp.MAX: 'max'>)
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class ProcessGroup:
    """The ranks of the job, the transport that moves their data, and the timeout."""

    def __init__(self, transport, backend: str, timeout: float):
        self.transport = transport
        self.backend = backend
        self.timeout = timeout
        self.rank = transport.rank
        self.size = transport.size
        # What this rank handed to collectives: benchmarks read it (bytes per step).
        self.stats = {"calls": 0, "all_reduce_bytes": 0}

    def wait(self, request, what: str, timeout: float | None = None) -> None:
        """Polls `request` until it completes; DistBackendError after the timeout."""
        test = self.transport.test
        if test(request):
            return
        limit = self.timeout if timeout is None else timeout
        start = time.perf_counter()
        pause = 0.0
        while not test(request):
            waited = time.perf_counter() - start
            if waited > limit:
                self.transport.on_timeout()
                raise DistBackendError(
                    f"{what} on rank {self.rank} of {self.size} ({self.backend}) did not "
                    f"complete within {limit:g} s: another rank died, raised, or did not call "
                    "it (every rank must call the same collectives in the same order). Set "
                    "the limit with init_process_group(timeout=...)"
                )
            # Spin for the first millisecond (a collective of a training step is short),
            # then sleep in growing steps up to 1 ms (a peer still computing its step).
            if waited > 1e-3:
                pause = min(max(pause * 2, 5e-5), 1e-3)
                time.sleep(pause)


class Work:
    """A collective started with `async_op=True` (PyTorch's `Work`): `wait()` blocks until it
    is done (raising DistBackendError past the timeout) and applies its result."""

    def __init__(self, group: ProcessGroup, request, what: str, finish=None):
        self._group, self._request, self._what, self._finish = group, request, what, finish
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and self._group.transport.test(self._request):
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        if not self._done:
            seconds = None if timeout is None else _seconds(timeout)
            self._group.wait(self._request, self._what, seconds)
            self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()

    def is_success(self) -> bool:
        return self._done


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    value = float(timeout)
    if not value > 0:
        raise ArgumentError(f"timeout must be positive, got {timeout!r}")
    return value


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout=None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Joins this process to the job's default process group (PyTorch's signature).

    `backend` is "mpi" (the default; launch with `mpiexec -n N`, which decides rank and world
    size) or "nccl" (CuPy's NCCL on GPUs, set up through MPI). `timeout` (seconds or a
    timedelta, default 30 minutes) bounds every wait for a collective. `rank` and
    `world_size`, when given, must agree with the launcher's.

    >>> import kiln.distributed as dist
    >>> dist.is_initialized()
    False
    """
    global _group
    if _group is not None:
        raise DistError("trying to initialize the default process group twice!")
    if store is not None or init_method not in (None, "env://"):
        raise DistError(
            "kiln's process groups are set up by the MPI launcher: init_method and store "
            "are not supported (launch with `mpiexec -n N`)"
        )
    backend = (backend or "mpi").lower()
    seconds = _seconds(DEFAULT_TIMEOUT if timeout is None else timeout)
    if backend == "mpi":
        from .mpi import MPITransport

        transport = MPITransport()
    elif backend == "nccl":
        from .nccl import NCCLTransport

        transport = NCCLTransport(device_id)
    else:
        raise ArgumentError(f"unknown backend {backend!r}: kiln has 'mpi' and 'nccl'")
    for name, given, actual in (
        ("rank", rank, transport.rank),
        ("world_size", world_size, transport.size),
    ):
        if given not in (-1, None) and given != actual:
            raise ArgumentError(f"{name}={given} disagrees with the launcher's {name} {actual}")
    _group = ProcessGroup(transport, backend, seconds)
    _install_excepthook(transport)


def _install_excepthook(transport) -> None:
    """An uncaught exception on one rank ends the job (MPI_Abort), so that the other ranks
    stop now rather than at their next collective's timeout."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        if _group is not None and _group.size > 1:
            print(
                f"kiln.distributed: rank {_group.rank} of {_group.size} failed with "
                f"{kind.__name__}; ending the job",
                file=sys.stderr,
            )
            sys.stdout.flush()
            sys.stderr.flush()
            # NOTE: the launcher forwards a rank's output asynchronously; aborting at once can
            # cut off the error's last lines (seen on an idle machine), so give it a moment
            time.sleep(0.25)
            transport.abort(1)
            os._exit(1)  # NOTE: MPI_Abort may return when the launcher is already gone

    sys.excepthook = hook
    hook.previous = previous


def destroy_process_group(group=None) -> None:
    """Leaves the process group (after which `is_initialized()` is False)."""
    global _group
    if _group is None:
        raise DistError("destroy_process_group: the default process group is not initialized")
    hook = sys.excepthook
    if hasattr(hook, "previous"):
        sys.excepthook = hook.previous
    _group.transport.close()
    _group = None


def is_available() -> bool:
    """True: kiln always has distributed support (a backend may still be missing)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py and an MPI library import."""
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    """Whether CuPy with NCCL imports (a GPU may still be missing)."""
    try:
        from cupy.cuda import nccl  # noqa: F401
    except ImportError:
        return False
    return True


def is_initialized() -> bool:
    return _group is not None


def current_group() -> ProcessGroup:
    """The default process group; DistError if there is none."""
    if _group is None:
        raise DistError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return _group


def get_rank(group=None) -> int:
    """This process's rank in the default group (0 … world size - 1)."""
    return current_group().rank


def get_world_size(group=None) -> int:
    """How many processes the default group has."""
    return current_group().size


def get_backend(group=None) -> str:
    return current_group().backend


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Waits until every rank reaches it (or raises DistBackendError after the timeout)."""
    g = current_group()
    work = Work(g, g.transport.barrier(), "barrier")
    return work if async_op else work.wait() and None
