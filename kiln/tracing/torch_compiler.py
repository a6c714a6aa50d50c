"""`kn.compiler` and `kn.jit`: the names of `torch.compiler` and `torch.jit` that ported code
calls, on kiln's one compile path (`kn.compile`).

kiln compiles a whole function: where PyTorch would break its graph (a `disable`d function
called inside a compiled one), kiln traces the call with the rest, or raises a GraphError
that says why. TorchScript's decorators keep the function as it is (`script`), and
`jit.trace` is `kn.compile`, which traces on the first call and guards what it read, so
Python branches taken with other inputs trace again rather than replay the example's.
"""

from __future__ import annotations

import functools
import types
import typing
import weakref

from ..nn.module import Module
from ..ops.random import in_trace

__all__ = ["compiler", "jit"]

# every CompiledFunction made, for `compiler.reset`
COMPILED: weakref.WeakSet = weakref.WeakSet()


def _namespace(name: str, doc: str, **names) -> types.ModuleType:
    """A module (`kn.compiler`, `kn.jit`) holding `names`."""
    module = types.ModuleType(name, doc)
    module.__dict__.update(names)
    return module


def is_compiling() -> bool:
    """Whether a `kn.compile` trace runs now (torch.compiler.is_compiling): code can skip
    what only eager runs need.

    >>> import kiln as kn
    >>> seen = []
    >>> f = kn.compile(lambda x: seen.append(kn.compiler.is_compiling()) or x * 2)
    >>> _ = f(kn.ones(2))
    >>> seen, kn.compiler.is_compiling()
    ([True], False)
    """
    return in_trace()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """torch.compiler.disable: `kn.compile` of the returned function runs it eagerly. Called
    inside another compiled function, it is traced with it (kiln does not break graphs).

    >>> import kiln as kn
    >>> @kn.compiler.disable
    ... def g(x):
    ...     return x + 1
    >>> kn.compile(g) is g, g(kn.zeros(1))
    (True, tensor([1.]))
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        return fn(*args, **kwargs)

    eager._kiln_compile_disabled = True
    return eager


def reset() -> None:
    """torch.compiler.reset: drops every trace of every `kn.compile`d function (the next
    calls trace again) and their recompile counts.

    >>> import kiln as kn
    >>> f = kn.compile(lambda x: x * 2)
    >>> _ = f(kn.ones(2)); kn.compiler.reset(); _ = f(kn.ones(2))
    >>> f.trace_count
    2
    """
    for compiled in list(COMPILED):
        compiled.reset()


def allow_in_graph(fn):
    """torch.compiler.allow_in_graph: kiln traces every function it calls, so `fn` as is."""
    return fn


def assume_constant_result(fn):
    """torch.compiler.assume_constant_result: kiln guards the Python values a trace reads,
    so `fn` as is."""
    return fn


def _compile(*args, **kwargs):
    from .trace import compile as compile_

    return compile_(*args, **kwargs)


compiler = _namespace(
    "kiln.compiler", "torch.compiler's names, on kn.compile",
    is_compiling=is_compiling, is_dynamo_compiling=is_compiling, is_exporting=lambda: False,
    disable=disable, reset=reset, allow_in_graph=allow_in_graph,
    assume_constant_result=assume_constant_result, compile=_compile,
)  # fmt: skip


# -- torch.jit ---------------------------------------------------------------------------------


def script(obj=None, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """torch.jit.script: TorchScript compiles a typed subset of Python; kiln runs `obj` (a
    function or Module) as it is, with the same results.

    >>> import kiln as kn
    >>> @kn.jit.script
    ... def gelu(x):
    ...     return x * 0.5 * (1.0 + kn.erf(x / 1.41421))
    >>> gelu(kn.zeros(2))
    tensor([0., 0.])
    """
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          example_kwarg_inputs=None, **kwargs):  # fmt: skip
    """torch.jit.trace: `kn.compile(func)`, a Module compiled as a Module. kiln traces on
    the first call and guards what the trace read: where TorchScript would replay the
    example's Python branches for every input, kiln traces again.

    >>> import kiln as kn
    >>> m = kn.jit.trace(kn.nn.Linear(3, 2), kn.ones(1, 3))
    >>> type(m).__name__, m(kn.ones(4, 3)).shape
    ('OptimizedModule', kiln.Size([4, 2]))
    """
    return _compile(func)


def trace_module(mod: Module, inputs=None, **kwargs):
    """torch.jit.trace_module: the module compiled (`trace`)."""
    return _compile(mod)


def _decorator(fn=None, **kwargs):
    """TorchScript's markers (`@torch.jit.ignore`, `@ignore(drop=True)`, `unused`,
    `export`): the function as it is."""
    return (lambda f: f) if fn is None else fn


class _Future:
    """What `jit.fork` returns: its value, computed when forked (`wait()` gives it)."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self) -> bool:
        return True


def fork(fn, *args, **kwargs) -> _Future:
    """torch.jit.fork: calls `fn` now; `jit.wait` of the result gives its value.

    >>> import kiln as kn
    >>> kn.jit.wait(kn.jit.fork(kn.add, kn.ones(1), 2))
    tensor([3.])
    """
    return _Future(fn(*args, **kwargs))


jit = _namespace(
    "kiln.jit", "torch.jit's names: TorchScript's markers as they are, trace as kn.compile",
    script=script, trace=trace, trace_module=trace_module, ignore=_decorator,
    unused=_decorator, export=_decorator, script_if_tracing=lambda fn: fn,
    is_scripting=lambda: False, is_tracing=is_compiling, annotate=lambda the_type, value: value,
    Final=typing.Final, Attribute=lambda value, the_type=None: value, fork=fork,
    wait=lambda future: future.wait(), interface=lambda obj: obj,
)  # fmt: skip
