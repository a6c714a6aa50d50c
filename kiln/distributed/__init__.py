"""Data-parallel training across processes, with PyTorch's names: a process group over MPI
(mpi4py) or NCCL (CuPy), collectives that run eagerly and as graph ops, and
`DistributedSampler`. Launch with `mpiexec -n N python train.py`; see docs/distributed.md.

>>> import kiln.distributed as dist
>>> dist.is_available(), dist.is_initialized(), dist.ReduceOp.AVG.value
(True, False, 'avg')
"""

from ..errors import DistBackendError, DistError
from . import ops
from .collectives import all_gather, all_reduce, broadcast, reduce_scatter
from .group import (
    ReduceOp,
    Work,
    barrier,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
)
from .sampler import DistributedSampler

__all__ = [
    "DistBackendError", "DistError", "DistributedSampler", "ReduceOp", "Work", "all_gather",
    "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend", "get_rank",
    "get_world_size", "init_process_group", "is_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "reduce_scatter",
]  # fmt: skip
