"""The MPI transport of `kiln.distributed`: non-blocking collectives of mpi4py on host arrays.

Every collective is started non-blocking (`Iallreduce`, `Ibcast`…) and returns the MPI
request; the process group waits for it by polling, so that a peer that died or never calls
the collective becomes a `DistBackendError` after the timeout instead of a hang.
"""

from __future__ import annotations

import numpy as np

from ..errors import DistError

# MPI has no average: the group sums and divides (ReduceOp.AVG).
_OPS = {"sum": "SUM", "avg": "SUM", "product": "PROD", "min": "MIN", "max": "MAX"}
_DTYPES = frozenset("bool int8 int16 int32 int64 uint8 float32 float64".split())


def load_mpi():
    """mpi4py's MPI module, or DistError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistError(
            f"the mpi backend needs mpi4py and an MPI library ({e}); install them with "
            "`pip install kiln[mpi]` and launch with `mpiexec -n N python script.py`"
        ) from None
    return MPI


class MPITransport:
    """Collectives over a private duplicate of MPI_COMM_WORLD (`Dup`), so that kiln's traffic
    never matches a message of the user's own mpi4py calls."""

    name = "mpi"

    def __init__(self):
        self.MPI = MPI = load_mpi()
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    def check_dtype(self, dtype, what: str) -> None:
        if np.dtype(dtype).name not in _DTYPES:
            raise DistError(f"{what}: the mpi backend has no reduction for dtype {dtype}")

    def all_reduce(self, array: np.ndarray, op: str):
        """Starts the in-place all-reduce of the contiguous host array `array`."""
        return self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=getattr(self.MPI, _OPS[op]))

    def broadcast(self, array: np.ndarray, src: int):
        return self.comm.Ibcast(array, root=src)

    def all_gather(self, send: np.ndarray, recv: np.ndarray):
        return self.comm.Iallgather(send, recv)

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: str):
        return self.comm.Ireduce_scatter_block(send, recv, op=getattr(self.MPI, _OPS[op]))

    def barrier(self):
        return self.comm.Ibarrier()

    def test(self, request) -> bool:
        return request.Test()

    def on_timeout(self) -> None:
        """Nothing to cancel: MPI cannot cancel a collective; the error (uncaught, it
        aborts the job) ends it."""

    def abort(self, code: int) -> None:
        """Ends every rank of the job (MPI_Abort): mpiexec stops the others."""
        self.MPI.COMM_WORLD.Abort(code)

    def close(self) -> None:
        self.comm.Free()
