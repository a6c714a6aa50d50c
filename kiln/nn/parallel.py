"""`DistributedDataParallel`: PyTorch's data-parallel wrapper, over `kiln.distributed`.

At wrap time every rank takes rank 0's parameters and buffers. In backward, a hook after each
parameter's gradient is accumulated (`register_post_accumulate_grad_hook`) marks it ready; when
every gradient of a bucket is ready, the bucket's gradients are packed into one buffer and its
all-reduce starts (non-blocking) while backward goes on; when the last bucket has started,
backward waits for all of them and writes the averages back into `.grad`. Under `no_sync()`
gradients only accumulate locally. The same hooks serve `kn.compile` training (a compiled
step's backward accumulates every parameter's gradient, which starts the buckets). In graph
mode the wrapper is transparent: `Optimizer.minimize` inserts the bucketed all-reduce.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from .. import distributed as dist
from ..distributed.buckets import assign_buckets
from ..eager import no_grad
from ..eager.autograd import register_post_accumulate_grad_hook
from ..errors import DistError, call_error
from ..runtime.backend import get_backend
from .module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """PyTorch's single-process `nn.DataParallel`, on kiln's one device: it holds `module`
    (state_dict keys `module.*`, as PyTorch's) and calls it. PyTorch splits each batch over
    several GPUs; with none (`device_ids` empty) it calls the module as it is, which is what
    kiln does. Scripts that wrap a model for several GPUs so run unchanged.

    >>> import kiln as kn
    >>> model = kn.nn.DataParallel(kn.nn.Linear(2, 1))
    >>> list(model.state_dict()), model(kn.ones(3, 2)).shape
    (['module.weight', 'module.bias'], kiln.Size([3, 1]))
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class _Bucket:
    """Some parameters whose gradients are all-reduced as one flat buffer."""

    def __init__(self, params: list):
        self.params = params
        self.ready = 0
        self.work = None
        self.buffer = None
        self.started = self.finished = None  # perf_counter times, for benchmarks


class DistributedDataParallel(Module):
    """Wraps `module` for data-parallel training over the default process group: gradients
    are averaged over the ranks during backward, in buckets of `bucket_cap_mb` megabytes.

    >>> import kiln as kn
    >>> kn.nn.parallel.DistributedDataParallel(kn.nn.Linear(2, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kiln.errors.DistError: Default process group has not been initialized, ...
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ):
        super().__init__()
        group = dist.group.current_group()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        params = [p for p in module.parameters() if p.requires_grad]
        _broadcast_values([*module.parameters(), *module.buffers()])
        key = lambda p: (str(p.dtype), p.device)  # noqa: E731
        object.__setattr__(self, "_group", group)
        object.__setattr__(self, "_buckets", [
            _Bucket([params[i] for i in b]) for b in assign_buckets(params, bucket_cap_mb, key)
        ])  # fmt: skip
        object.__setattr__(self, "_bucket_of", {})
        for bucket in self._buckets:
            for p in bucket.params:
                self._bucket_of[id(p)] = bucket
        object.__setattr__(self, "_handles", [
            register_post_accumulate_grad_hook(p, self._grad_ready) for p in params
        ])  # fmt: skip
        # The last backward's timings (seconds on perf_counter): when each bucket's
        # all-reduce started and was seen complete, when the last gradient arrived, and how
        # long backward then waited; benchmarks read it.
        object.__setattr__(self, "last_sync", None)

    def forward(self, *args, **kwargs):
        if any(b.ready for b in self._buckets):  # the last backward did not finish
            missing = [getattr(p, "name", None) or f"{tuple(p.shape)}" for b in self._buckets
                       for p in b.params if p.grad is None]  # fmt: skip
            raise call_error(
                DistError,
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one: some parameters received no gradient in the last backward "
                f"({', '.join(missing) or 'unknown'}); every parameter must take part in the "
                "loss (find_unused_parameters is not supported)", "DistributedDataParallel",
            )  # fmt: skip
        if self.broadcast_buffers and self.training and list(self.module.buffers()):
            _broadcast_values(list(self.module.buffers()))
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward only accumulates gradients locally (gradient accumulation); the
        first backward after it averages everything accumulated."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    # -- backward ----------------------------------------------------------------------------

    def _grad_ready(self, param) -> None:
        if not self.require_backward_grad_sync:
            return
        now = time.perf_counter()
        buckets = self._buckets
        if all(b.ready == 0 for b in buckets):  # the first gradient of this backward
            self.last_sync = {"buckets": [], "backward_end": None, "waited": 0.0}
        bucket = self._bucket_of[id(param)]
        bucket.ready += 1
        self._poll()
        if bucket.ready == len(bucket.params):
            self._start(bucket)
        if all(b.ready == len(b.params) for b in buckets):
            self._finish_all(now)

    def _start(self, bucket: _Bucket) -> None:
        grads = [p.grad._data for p in bucket.params]
        xp = (
            np
            if isinstance(grads[0], np.ndarray)
            else get_backend(bucket.params[0].device).activate()
        )
        if bucket.buffer is None:
            size = sum(math.prod(g.shape) for g in grads)
            bucket.buffer = xp.empty(size, grads[0].dtype)
        offset = 0
        for g in grads:
            bucket.buffer[offset : offset + g.size] = g.reshape(-1)
            offset += g.size
        bucket.started = time.perf_counter()
        bucket.finished = None
        bucket.work = dist.all_reduce(bucket.buffer, op=dist.ReduceOp.AVG, async_op=True)

    def _poll(self) -> None:
        """Tests the started all-reduces: MPI progresses them inside such calls."""
        for b in self._buckets:
            if b.work is not None and b.finished is None and b.work.is_completed():
                b.finished = time.perf_counter()

    def _finish_all(self, end: float) -> None:
        """Waits for every bucket (`end`: when the last gradient arrived) and writes the
        averages into `.grad`."""
        waiting = time.perf_counter()
        for b in self._buckets:
            b.work.wait()
            if b.finished is None:
                b.finished = time.perf_counter()
        waited = time.perf_counter() - waiting
        for b in self._buckets:
            offset_of = 0
            for p in b.params:
                g = p.grad._data
                g[...] = b.buffer[offset_of : offset_of + g.size].reshape(g.shape)
                offset_of += g.size
            self.last_sync["buckets"].append((b.started, b.finished, b.buffer.nbytes))
            b.ready, b.work = 0, None
        self.last_sync.update(backward_end=end, waited=waited)


def _broadcast_values(values) -> None:
    """Every rank takes rank 0's values (one broadcast per dtype, of a flat buffer)."""
    by_dtype: dict = {}
    for v in values:
        by_dtype.setdefault(np.dtype(v.dtype), []).append(v)
    for dtype, group in by_dtype.items():
        flat = np.concatenate([np.asarray(v.numpy(), dtype).reshape(-1) for v in group])
        dist.broadcast(flat, src=0)
        offset = 0
        with no_grad():
            for v in group:
                size = math.prod(v.shape)
                v.assign(flat[offset : offset + size].reshape(v.shape))
                offset += size
