"""`kn.compile` and `kn.trace`: an eager-style function run once on Symbols, compiled, and
cached per input signature (shapes, dtypes, device, static arguments, grad mode and the
`training` flags of the modules it uses), with one log line per compile saying what differed.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import types

from ..debug import log
from ..eager.grad_mode import state
from ..eager.tensor import Tensor
from ..errors import DeviceError
from ..graph.core import Symbol
from ..nn.module import Module
from ..runtime.backend import parse_device
from .traced import Traced, describe, flatten, name_of, signature

__all__ = ["compile", "trace", "CompiledFunction", "Traced"]


def _modules_near(fn) -> list:
    """The Modules (and their descendants) `fn` reaches directly: itself, its bound `self`,
    its closure, and the globals its code names. Their `training` flags are in the cache key."""
    target = getattr(fn, "__func__", fn)
    found = [fn, getattr(fn, "__self__", None)]
    for cell in getattr(target, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    code, env = getattr(target, "__code__", None), getattr(target, "__globals__", {})
    found.extend(env.get(name) for name in (code.co_names if code else ()))
    modules = {}
    for m in found:
        if isinstance(m, Module):
            modules.update((id(s), s) for s in m.modules())
    return list(modules.values())


class CompiledFunction:
    """`fn` compiled per input signature: see `compile`. `.cache` maps signatures to their
    `Traced`; `.last` is the one the latest call ran."""

    def __init__(self, fn, device=None):
        functools.update_wrapper(self, fn)
        self.fn, self.device = fn, device
        self.cache: dict = {}
        self.last: Traced | None = None
        self._lock = threading.Lock()
        self._modules = None
        try:
            params = inspect.signature(fn).parameters.values()
            self._names = [p.name for p in params if p.kind <= p.POSITIONAL_OR_KEYWORD]
        except (TypeError, ValueError):
            self._names = []

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def flatten_args(self, args, kwargs):
        """(leaves, their paths, static (path, value) pairs, structure) of a call's arguments;
        `trace_for` takes them."""
        leaves, paths, statics = [], [], []
        names = [self._names[i] if i < len(self._names) else f"arg{i}" for i in range(len(args))]
        positional = tuple(flatten(a, n, leaves, paths, statics) for a, n in zip(args, names))
        named = tuple(flatten(v, k, leaves, paths, statics) for k, v in kwargs.items())
        structure = (tuple, ((tuple, positional), (dict, tuple(kwargs), named)))
        return leaves, paths, statics, structure

    def _key(self, leaves, statics, structure):
        devices = {x._device for x in leaves if isinstance(x, Tensor)}
        if len(devices) > 1:
            raise DeviceError(
                f"Expected all tensors to be on the same device, but {name_of(self.fn)} got "
                f"tensors on {sorted(devices)}"
            )
        if self.device is not None and devices - {self.device, _canonical(self.device)}:
            raise DeviceError(
                f"Expected all tensors to be on the same device: {name_of(self.fn)} is compiled "
                f"for {self.device}, but got tensors on {sorted(devices)}"
            )
        device = self.device or (devices.pop() if devices else "cpu")
        if self._modules is None:
            self._modules = _modules_near(self.fn)
        modules = self._modules + [s for m in statics if isinstance(m[1], Module)
                                   for s in m[1].modules()]  # fmt: skip
        wants_grad = state.grad and any(isinstance(x, Tensor) for x in leaves)
        key = (structure, tuple(map(signature, leaves)), device, wants_grad,
               tuple(m.training for m in modules))  # fmt: skip
        try:
            hash(key)
        except TypeError:
            path, value = next((p, v) for p, v in statics if not _hashable(v))
            raise TypeError(
                f"kn.compile: argument '{path}' of {name_of(self.fn)} is a "
                f"{type(value).__name__}, neither an array nor hashable; pass arrays or Tensors "
                "for values that change, hashable Python values for static ones"
            ) from None
        return key, modules

    def __call__(self, *args, **kwargs):
        leaves, paths, statics, structure = self.flatten_args(args, kwargs)
        if any(isinstance(x, Symbol) for x in leaves):  # inside another trace: inline
            return self.fn(*args, **kwargs)
        traced = self.trace_for(leaves, paths, statics, structure)
        return traced.run(leaves)

    def trace_for(self, leaves, paths, statics, structure) -> Traced:
        """The Traced of this signature, traced and compiled on first use (logged)."""
        key, modules = self._key(leaves, statics, structure)
        traced = self.cache.get(key)
        if (
            traced is not None
            and key[3]
            and traced.guard != tuple(p.tensor()._requires_grad for p in traced.params)
        ):
            traced = None  # a parameter's requires_grad changed since it was traced
        if traced is None:
            with self._lock:
                reason = self._reason(key, modules, statics, paths)
                start = time.perf_counter()
                traced = Traced(self.fn, key, leaves, paths, structure, key[2], key[3])
                traced.statics = statics
                self.cache[key] = traced
                log(1, f"kn.compile: traced {traced.name} ({reason}): "
                       f"{len(traced.graph.nodes)} nodes, "
                       f"{(time.perf_counter() - start) * 1e3:.1f} ms")  # fmt: skip
        self.last = traced
        return traced

    def _reason(self, key, modules, statics, paths) -> str:
        """What differs from the signature that ran last."""
        last = self.last
        if last is None:
            return "first call"
        old, before = last.key, dict(last.statics)
        found = [f"static argument '{p}' is {v!r} (was {before[p]!r})"
                 for p, v in statics if p in before and before[p] != v]  # fmt: skip
        if len(key[1]) != len(old[1]) or (old[0] != key[0] and not found):
            found.append("new argument structure")
        elif old[1] != key[1]:
            found += [f"'{p}' is {describe(new)} (was {describe(was)})"
                      for p, new, was in zip(paths, key[1], old[1]) if new != was]  # fmt: skip
        if old[2] != key[2]:
            found.append(f"device {key[2]} (was {old[2]})")
        if old[3] != key[3]:
            found.append("gradients needed" if key[3] else "no gradients (no_grad or NumPy in)")
        flipped = [(m, new) for m, new, was in zip(modules, key[4], old[4]) if new != was]
        if flipped:
            more = f" (and {len(flipped) - 1} more modules)" if len(flipped) > 1 else ""
            found.append(f"{type(flipped[0][0]).__name__}.training is {flipped[0][1]}{more}")
        return "; ".join(found) or "a parameter's requires_grad changed"


def _canonical(device: str) -> str:
    kind, index = parse_device(device)
    return kind if kind == "cpu" else f"{kind}:{index}"


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def compile(fn=None, *, device=None):  # noqa: A001 (the API's name)
    """Compiles `fn` per input signature: on the first call with new shapes, dtypes, device,
    static arguments or module `training` flags, `fn` runs once on Symbols in place of its
    Tensors (Python control flow runs then; branching on a traced value raises), and the
    graph is compiled; later calls run the compiled program. Module parameters become graph
    Variables that share the parameters' memory. Tensors in give Tensors out (a call on
    tensors that require grad is one tape entry); NumPy in gives NumPy out.

    >>> import kiln as kn, numpy as np
    >>> @kn.compile
    ... def f(x, power):
    ...     return kn.sum(x**power)
    >>> x = kn.tensor([1.0, 2.0], requires_grad=True)
    >>> y = f(x, 2)
    >>> y.backward()
    >>> y, x.grad
    (tensor(5., grad_fn=<CompiledBackward0>), tensor([2., 4.]))
    >>> f(np.array([1.0, 2.0], np.float32), 3)
    array(9., dtype=float32)
    """
    if fn is None:
        return lambda f: CompiledFunction(f, device)
    return CompiledFunction(fn, device)


def trace(fn, *example_args, device=None, **example_kwargs) -> Traced:
    """`fn` traced and compiled for the signature of the example arguments (see `compile`).

    >>> import kiln as kn, numpy as np
    >>> tf = kn.trace(lambda x: x * 2.0, np.ones(2, np.float32))
    >>> tf.inputs[0].name, len(tf.graph.nodes)
    ('x', 3)
    """
    compiled = CompiledFunction(fn, device)
    leaves, paths, statics, structure = compiled.flatten_args(example_args, example_kwargs)
    return compiled.trace_for(leaves, paths, statics, structure)
