"""The NCCL transport of `kiln.distributed`, through CuPy's `cupy.cuda.nccl`, on GPU arrays.

UNVERIFIED on a GPU: tested only with a stand-in for CuPy and NCCL (tests/fake_nccl.py),
which checks the calls (pointers, counts, dtype and op codes, streams) and moves the data
with MPI. The ranks are those of the MPI launch: rank 0 makes the NCCL unique id and MPI
broadcasts it. Each collective is queued on the current stream, followed by an event; the
process group polls the event, and on a timeout aborts the communicator (`ncclCommAbort`).
"""

from __future__ import annotations

import numpy as np

from ..errors import DistError
from .mpi import load_mpi

_OPS = {"sum": "NCCL_SUM", "avg": "NCCL_SUM", "product": "NCCL_PROD", "min": "NCCL_MIN",
        "max": "NCCL_MAX"}  # fmt: skip
_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
           "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
           "float64": "NCCL_FLOAT64"}  # fmt: skip


def load_nccl():
    """(cupy, cupy.cuda.nccl), or DistError saying what is missing."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as e:
        raise DistError(
            f"the nccl backend needs CuPy built with NCCL ({e}): pip install kiln[cuda]"
        ) from None
    return cupy, nccl


class NCCLTransport:
    """Collectives of one NCCL communicator over the MPI job's ranks, one GPU per rank."""

    name = "nccl"

    def __init__(self, device_id=None):
        self.cupy, self.nccl = cupy, nccl = load_nccl()
        comm = load_mpi().COMM_WORLD
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        count = cupy.cuda.runtime.getDeviceCount()
        device = self.rank % count if device_id is None else _index(device_id)
        cupy.cuda.Device(device).use()
        self.device = device
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = comm.bcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)

    def check_dtype(self, dtype, what: str) -> None:
        if np.dtype(dtype).name not in _DTYPES:
            raise DistError(f"{what}: the nccl backend has no dtype {dtype}")

    def _code(self, array) -> int:
        return getattr(self.nccl, _DTYPES[np.dtype(array.dtype).name])

    def _queued(self):
        """An event after what was just queued on the current stream: the request."""
        event = self.cupy.cuda.Event(block=False, disable_timing=True)
        event.record(self.cupy.cuda.get_current_stream())
        return event

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    def all_reduce(self, array, op: str):
        op_code = getattr(self.nccl, _OPS[op])
        ptr = array.data.ptr
        self.comm.allReduce(ptr, ptr, array.size, self._code(array), op_code, self._stream())
        return self._queued()

    def broadcast(self, array, src: int):
        self.comm.bcast(array.data.ptr, array.size, self._code(array), src, self._stream())
        return self._queued()

    def all_gather(self, send, recv):
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, self._code(send),
                            self._stream())  # fmt: skip
        return self._queued()

    def reduce_scatter(self, send, recv, op: str):
        op_code = getattr(self.nccl, _OPS[op])
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, self._code(send),
                                op_code, self._stream())  # fmt: skip
        return self._queued()

    def barrier(self):
        """NCCL has no barrier: an all-reduce of one element, as PyTorch's NCCL backend."""
        return self.all_reduce(self.cupy.zeros(1, np.float32), "sum")

    def test(self, request) -> bool:
        return bool(request.done)

    def on_timeout(self) -> None:
        """What PyTorch's NCCL watchdog does: abort the communicator, so that no kernel
        waits for the missing rank forever."""
        self.comm.abort()

    def abort(self, code: int) -> None:
        load_mpi().COMM_WORLD.Abort(code)

    def close(self) -> None:
        self.comm.destroy()


def _index(device_id) -> int:
    if isinstance(device_id, int):
        return device_id
    text = str(getattr(device_id, "index", None) if hasattr(device_id, "index") else device_id)
    return int(text.rpartition(":")[2] or 0)
