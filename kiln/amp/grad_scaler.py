"""`GradScaler`: dynamic loss scaling for float16 training, PyTorch's algorithm
(`torch.amp.GradScaler`): scale the loss, unscale the gradients and look for inf/NaN, skip
the step when one is found, and adjust the scale (backoff at once, growth after
`growth_interval` clean steps)."""

from __future__ import annotations

import enum
import warnings

import numpy as np

from .. import cuda
from ..eager import Tensor, no_grad
from ..eager.factories import full
from ..eager.tensor import make
from ..errors import ArgumentError, UsageError
from ..graph.core import Symbol
from . import grad_scaler_graph as graph

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Loss scaling as PyTorch's `torch.amp.GradScaler(device="cuda", init_scale=2.**16,
    growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True)`.

    `scale(loss)` multiplies by the scale; `step(optimizer)` unscales the gradients (unless
    `unscale_` did), and steps only if they are all finite; `update()` halves the scale after
    a step with inf/NaN (resetting the count of clean steps) and doubles it after
    `growth_interval` clean steps in a row (if the result is finite). On "cuda" without a
    usable GPU it warns and disables itself, as PyTorch's does.

    >>> import kiln as kn
    >>> w = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = kn.optim.SGD([w], lr=0.5)
    >>> scaler = kn.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
    >>> scaler.scale((w * w).sum()).backward()
    >>> w.grad  # scaled by 1024
    tensor([2048., 4096.])
    >>> scaler.step(opt); scaler.update()
    >>> w, scaler.get_scale()
    (tensor([0., 0.], requires_grad=True), 2048.0)
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not cuda.is_available():
            warnings.warn(
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._per_optimizer_states: dict = {}
        # The scale and growth tracker live in boxes (one-element lists) shared with the
        # Variables of compiled steps (kiln/amp/grad_scaler_graph.py); `_scale` and
        # `_growth_tracker` are eager Tensors over the boxes' current arrays.
        self._boxes: dict = {}
        self._views: dict = {}
        self._graph_vars: dict = {}  # id(graph) -> (scale, tracker) Variables
        self._graph_found: dict = {}  # id(graph) -> {id(optimizer): found-inf Symbol}

    def _view(self, key):
        box = self._boxes.get(key)
        if box is None:
            return None
        view = self._views.get(key)
        if view is None or view._data is not box[0]:
            view = self._views[key] = make(box[0])
        return view

    @property
    def _scale(self) -> Tensor | None:
        return self._view("scale")

    @property
    def _growth_tracker(self) -> Tensor | None:
        return self._view("tracker")

    def _state(self, optimizer) -> dict:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh())

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."  # noqa: E501
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init(self, device) -> None:
        scale = full((), self._init_scale, dtype=np.float32, device=device)
        tracker = full((), self._init_growth_tracker, dtype=np.int32, device=device)
        self._boxes.update(scale=[scale._data], tracker=[tracker._data])

    def scale(self, outputs):
        """`outputs` (a Tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Symbol):  # inside kn.compile or graph mode
            return graph.graph_scale(self, outputs)
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(v) for v in outputs)
        raise ArgumentError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16: bool) -> dict:
        found = {}  # device -> float32 0-d Tensor: 1.0 if a gradient there had inf/NaN
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == np.float16:
                        raise ArgumentError("Attempting to unscale FP16 gradients.")
                    device = str(grad.device)
                    flag = found.setdefault(device, full((), 0.0, dtype=np.float32, device=device))
                    if not bool(grad.isfinite().all()):
                        flag.fill_(1.0)
                    grad.mul_(inv_scale.to(device))
        return found

    def unscale_(self, optimizer) -> None:
        """Divides `optimizer`'s gradients by the scale in place (before clipping them, say),
        noting whether any is inf or NaN. At most once per optimizer between updates."""
        if not self._enabled:
            return
        if graph.in_graph(self, optimizer):
            return graph.graph_unscale(self, optimizer)
        self._check_scale_growth_tracker("unscale_")
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise UsageError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise UsageError("unscale_() is being called after step().")
        # as PyTorch: the reciprocal in float64, then float32
        inv = np.float32(1.0 / np.float64(self._scale.item()))
        inv_scale = make(np.array(inv)).to(self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """`optimizer.step(*args, **kwargs)` unless a gradient had inf or NaN (then skipped:
        None); unscales first unless `unscale_` did."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise UsageError("Closure use is not currently supported if GradScaler is enabled.")
        if graph.in_graph(self, optimizer):  # its train op, a no-op after inf/NaN gradients
            return graph.graph_step_with(self, optimizer)
        self._check_scale_growth_tracker("step")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise UsageError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Sets the scale for the next iteration: `new_scale` if given, else backoff (after
        inf/NaN) or growth (after `growth_interval` clean steps), as PyTorch's."""
        if not self._enabled:
            return
        if new_scale is None and graph.in_graph(self):
            return graph.graph_update(self)
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad:
                    raise AssertionError(reason)
                with no_grad():
                    scale.copy_(new_scale.reshape(()))
        else:
            found = [
                v.item()
                for state in self._per_optimizer_states.values()
                for v in state["found_inf_per_device"].values()
            ]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            new, count = update_scale(
                scale.item(), tracker.item(), sum(found), self._growth_factor,
                self._backoff_factor, self._growth_interval,
            )  # fmt: skip
            scale.fill_(new)
            tracker.fill_(count)
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale if self._scale is None else self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        tracker = self._growth_tracker
        return self._init_growth_tracker if tracker is None else int(tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """`scale`, `growth_factor`, `backoff_factor`, `growth_interval` and
        `_growth_tracker`, as PyTorch's (empty when disabled); `kn.save` stores it."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise UsageError(
                "The source state dict is empty, possibly because it was saved "
                "from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)


def update_scale(scale, tracker, found_inf, growth_factor, backoff_factor, interval) -> tuple:
    """(new scale, new growth tracker): PyTorch's `_amp_update_scale_` on float32 scale and
    int32 tracker values.

    >>> update_scale(1024.0, 1, 1.0, 2.0, 0.5, 3), update_scale(1024.0, 2, 0.0, 2.0, 0.5, 3)
    ((512.0, 0), (2048.0, 0))
    """
    if found_inf:
        return float(np.float32(np.float64(scale) * backoff_factor)), 0
    successful = int(tracker) + 1
    if successful == interval:
        with np.errstate(over="ignore"):
            grown = np.float32(np.float64(scale) * growth_factor)
        return (float(grown) if np.isfinite(grown) else float(scale)), 0
    return float(scale), successful
