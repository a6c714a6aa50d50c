"""An optimizer's hooks, as PyTorch's: `register_step_pre_hook` / `register_step_post_hook`
around `step` (of every optimizer class, LBFGS's own `step` too), and the state-dict hooks
around `state_dict` and `load_state_dict`. Under `kn.compile` a step's hooks run when the step
is traced, once, as the function's other Python side effects.

>>> import kiln as kn
>>> w = kn.tensor([1.0], requires_grad=True)
>>> opt = kn.optim.SGD([w], lr=0.1)
>>> seen = []
>>> handle = opt.register_step_post_hook(lambda o, args, kwargs: seen.append(w.item()))
>>> (w * w).sum().backward(); opt.step()
>>> seen
[0.800000011920929]
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..nn.module_hooks import RemovableHandle, _add_hook, _HookDict
from ..profiler import step_range as profiled

_TABLES = ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks",
           "_state_dict_post_hooks", "_load_state_dict_pre_hooks",
           "_load_state_dict_post_hooks")  # fmt: skip


def _hooked(step):
    """`step` running the optimizer's step hooks around it (PyTorch's order and checks)."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]  # PyTorch's hooks see the optimizer among step's arguments too
        self._opt_called = True  # a scheduler stepped before any step warns (PyTorch's)
        for hook in list(self._hooks("_step_pre_hooks")):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        "optimizer must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        ranged = profiled(self)  # (kn.profiler's range, while one records)
        if ranged is None:
            out = step(*args, **kwargs)
        else:
            with ranged:
                out = step(*args, **kwargs)
        for hook in list(self._hooks("_step_post_hooks")):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class OptimizerHooks:
    """The hooks of `Optimizer` (kiln/optim/optimizer.py): see the module's docstring."""

    OptimizerPreHook = Callable  # PyTorch's type names of the step hooks
    OptimizerPostHook = Callable

    @staticmethod
    def profile_hook_step(step):
        """PyTorch's decorator of a step: `step` with the step hooks around it. As in
        PyTorch, the class's step is wrapped once more when its first instance is made, so
        the hooks of a step decorated with it run twice."""
        wrapper = _hooked(step)
        del wrapper.hooked
        return wrapper

    def _init_hooks(self) -> None:
        for name in _TABLES:
            self.__dict__[name] = _HookDict()
        cls = type(self)
        if not getattr(cls.step, "hooked", False):  # the class's own step, wrapped once
            cls.step = _hooked(cls.step)

    def _hooks(self, table: str):
        return self.__dict__.get(table, {}).values()

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs before each `step` (`args` begins with the
        optimizer, as PyTorch's); a returned `(args, kwargs)` replaces step's arguments."""
        return _add_hook(self._step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs after each `step`."""
        return _add_hook(self._step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` runs before `state_dict` builds its result."""
        return _add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict)` runs on `state_dict`'s result; a dict it returns
        replaces it."""
        return _add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict)` runs before `load_state_dict`; a dict it returns is
        loaded instead."""
        return _add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` runs after `load_state_dict`."""
        return _add_hook(self._load_state_dict_post_hooks, hook, prepend)

    def _state_dict_with_hooks(self, build) -> dict:
        for hook in list(self._hooks("_state_dict_pre_hooks")):
            hook(self)
        state = build()
        for hook in list(self._hooks("_state_dict_post_hooks")):
            result = hook(self, state)
            if result is not None:
                state = result
        return state

    def _load_with_hooks(self, state_dict, load) -> None:
        for hook in list(self._hooks("_load_state_dict_pre_hooks")):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        load(state_dict)
        for hook in list(self._hooks("_load_state_dict_post_hooks")):
            hook(self)
