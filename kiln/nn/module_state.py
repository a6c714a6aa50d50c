"""What `Module` does with its values as a whole: `load_state_dict`'s checks, and `Module.to`
with the casts (`half`, `float`, `double`, `bfloat16`, `type`): PyTorch's argument forms, and
its rule that a dtype cast changes only floating-point parameters and buffers."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from .. import dtypes as dt
from ..checkpoint import StateDictError
from ..eager import Tensor
from ..eager.devices import canonical_device
from ..errors import ArgumentTypeError, DTypeError, call_error

__all__ = ["IncompatibleKeys", "cast_values", "lay_out_values", "load_state", "parse_to",
           "save_state"]  # fmt: skip

_SIGNATURES = (
    "to(device=None, dtype=None, non_blocking=False), to(dtype, non_blocking=False) or "
    "to(tensor, non_blocking=False)"
)


def _as_dtype(value) -> np.dtype | None:
    """`value` as a dtype, or None when it is not one (a device name, a device)."""
    if value is None or isinstance(value, (bool, int, Tensor)):
        return None
    try:
        return dt.as_dtype(value)
    except DTypeError:
        return None


def _device(value) -> str:
    """A device argument (a string, a `kn.device`, or an int for `cuda:N`), checked usable."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = f"cuda:{value}"
    return canonical_device(value)


def parse_to(*args, **kwargs) -> tuple[str | None, np.dtype | None, bool]:
    """(device, dtype, non_blocking) of a `Module.to` call, as PyTorch's `_parse_to` reads them.

    >>> import kiln as kn
    >>> parse_to("cpu", kn.float16), parse_to(dtype="float32", non_blocking=True)
    (('cpu', dtype('float16'), False), (None, dtype('float32'), True))
    """
    kwargs.pop("memory_format", None)  # (`lay_out_values`)
    kwargs.pop("copy", None)
    unknown = set(kwargs) - {"device", "dtype", "non_blocking"}
    if unknown or len(args) > 3:
        extra = f"unexpected keyword argument {sorted(unknown)[0]!r}" if unknown else "too many"
        raise ArgumentTypeError(f"to() got {extra}; expected {_SIGNATURES}")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    non_blocking = kwargs.get("non_blocking", False)
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        if device is not None or dtype is not None:
            raise ArgumentTypeError(
                f"to() received a tensor and device/dtype; expected {_SIGNATURES}"
            )
        first = rest.pop(0)
        device, dtype = str(first.device), first.dtype
    elif rest and _as_dtype(rest[0]) is not None:
        if dtype is not None:
            raise ArgumentTypeError(f"to() got multiple values for argument 'dtype'; {_SIGNATURES}")
        dtype = rest.pop(0)
    elif rest:
        if device is not None:
            raise ArgumentTypeError(
                f"to() got multiple values for argument 'device'; {_SIGNATURES}"
            )
        device = rest.pop(0)
        if rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
    if rest:
        non_blocking = rest.pop(0)
    if rest:
        names = ", ".join(type(a).__name__ for a in args)
        raise ArgumentTypeError(
            f"to() received an invalid combination of arguments - got ({names}); "
            f"expected {_SIGNATURES}"
        )
    if dtype is not None:
        given, dtype = dtype, _as_dtype(dtype)
        if dtype is None:
            raise ArgumentTypeError(f"to(): {given!r} is not a dtype; expected {_SIGNATURES}")
    if not isinstance(non_blocking, bool):
        raise ArgumentTypeError(
            f"to(): non_blocking must be a bool, got {type(non_blocking).__name__}"
        )
    return (None if device is None else _device(device)), dtype, non_blocking


def _floating(dtype: np.dtype) -> bool:
    return dt.is_float(dtype) or dtype.kind == "c"


def cast_values(module, dtype, only_floating: bool = True) -> None:
    """Casts the parameters and buffers of `module` and its descendants to `dtype`, each in
    place (the same Parameter objects, as PyTorch's `param.data = ...`); with `only_floating`
    (PyTorch's `to(dtype)`, `half()`, ...), integer and bool values keep their dtype."""
    dtype = dt.as_dtype(dtype)
    seen: set[int] = set()
    for m in module.modules():
        for value in [*m._parameters.values(), *m._buffers.values()]:
            if value is None or id(value) in seen:
                continue
            seen.add(id(value))
            if not only_floating or _floating(value.dtype):
                value._cast(dtype)


def empty_values(module, device, recurse: bool):
    """`Module.to_empty`: fresh, uninitialised memory for every parameter and buffer."""
    from ..eager.factories import empty_like

    for m in module.modules() if recurse else [module]:
        for table in (m._parameters, m._buffers):
            for value in table.values():
                if value is not None:
                    value.assign(empty_like(value.tensor(), device=device))
    return module


def apply_values(module, fn, recurse: bool = True):
    """`Module._apply(fn)`, as PyTorch's: each child's first (each time it is reached), then
    `fn` of each parameter and buffer (and of its `.grad`), under no_grad, becomes its data
    (an in-place `fn` changes it directly); returns module.

    >>> import kiln as kn
    >>> lin = kn.nn.Linear(1, 1)._apply(lambda t: t.double())
    >>> lin.weight.dtype, type(lin.weight).__name__
    (kiln.float64, 'Parameter')
    """
    from ..eager import no_grad

    if recurse:
        for child in module.children():
            apply_values(child, fn, True)
    with no_grad():
        for value in [*module._parameters.values(), *module._buffers.values()]:
            if value is None:
                continue
            new = fn(value)
            if new is not value:
                value.data = new
            grad = value.grad
            if grad is not None:
                new = fn(grad)
                if new is not grad:
                    grad.data = new
    return module


def lay_out_values(module, memory_format):
    """Lays out the parameters and buffers of `module` and its descendants whose rank
    `memory_format` takes (4-D for `kn.channels_last`, 5-D for `kn.channels_last_3d`) in it,
    each in place (PyTorch's `Module.to(memory_format=...)`); returns module.

    >>> import kiln as kn
    >>> conv = kn.nn.Conv2d(3, 4, 3).to(memory_format=kn.channels_last)
    >>> conv.weight.stride(), conv.bias.stride()
    ((27, 1, 9, 3), (1,))
    """
    rank = {"channels_last": 4, "channels_last_3d": 5}.get(getattr(memory_format, "name", None))
    if rank is None:
        return module
    from ..frontend.layouts import format_layout  # NOTE: lazy (the frontend builds on nn)

    seen: set[int] = set()
    for m in module.modules():
        for value in [*m._parameters.values(), *m._buffers.values()]:
            if value is None or id(value) in seen or value.ndim != rank:
                continue
            seen.add(id(value))
            layout = format_layout(tuple(value.shape), memory_format, "to")
            if hasattr(value, "_lay_out"):
                value._lay_out(layout)
    return module


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns, as PyTorch's: the keys it did not find in the state,
    and the state's keys the module has no value for.

    >>> import kiln as kn
    >>> m = kn.nn.Linear(2, 1)
    >>> m.load_state_dict(m.state_dict())
    <All keys matched successfully>
    >>> m.load_state_dict({"weight": kn.zeros(1, 2)}, strict=False)
    IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])
    """

    missing_keys: list
    unexpected_keys: list

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        missing, unexpected = self.missing_keys, self.unexpected_keys
        return f"IncompatibleKeys(missing_keys={missing}, unexpected_keys={unexpected})"


def _tree(module, prefix: str = ""):
    """(module, prefix) of `module` and every submodule, depth first, a shared one under each
    path: the order of PyTorch's state_dict and of its hooks."""
    yield module, prefix
    for name, child in module._modules.items():
        if child is not None:
            yield from _tree(child, f"{prefix}{name}.")


def _assign_values(tree, state) -> None:
    """`load_state_dict(assign=True)`, as PyTorch's: each value in `state` becomes a new
    Parameter (keeping the old one's requires_grad) or Buffer (keeping persistence) of the
    state's dtype, instead of being copied into the old one; a value shared by several
    modules (tied weights) stays shared."""
    from .parameter import Buffer, Parameter

    made: dict = {}
    for m, prefix in tree:
        for table in (m._parameters, m._buffers):
            for name, old in list(table.items()):
                key = prefix + name
                if old is None or key not in state:
                    continue
                new = made.get(id(old))
                if new is None:
                    value = state[key]
                    value = value.detach() if isinstance(value, Tensor) else value
                    if isinstance(old, Parameter):
                        new = Parameter(value, requires_grad=old.requires_grad, name=old.name)
                    else:
                        new = Buffer(value, old.persistent, name=old.name)
                        new._is_buffer = getattr(old, "_is_buffer", True)
                    made[id(old)] = new
                table[name] = new


def has_extra_state(module) -> bool:
    """Whether the module's class defines `get_extra_state` (its state_dict then has an
    `_extra_state` entry, as PyTorch's)."""
    from .module import Module

    return type(module).get_extra_state is not Module.get_extra_state


def save_state(module, out, prefix: str, keep_vars: bool, args: tuple = ()):
    """`module.state_dict()` into `out`, as PyTorch's: per module, depth first, its
    state-dict pre-hooks, its parameters, persistent buffers and extra state, its children
    (a child whose class overrides `state_dict` through that), then its post-hooks
    (`hook(module, state_dict, prefix, local_metadata)`). `args`: PyTorch's deprecated
    positional (destination, prefix, keep_vars), with its FutureWarning."""
    if args:
        warnings.warn("Positional args are being deprecated, use kwargs instead.",
                      FutureWarning, stacklevel=3)  # fmt: skip
        out = args[0] if out is None else out
        prefix = args[1] if len(args) > 1 and prefix == "" else prefix
        keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
    out = OrderedDict() if out is None else out
    hooked = any(m._state_dict_pre_hooks or m._state_dict_hooks or has_extra_state(m)
                 or _overrides(m, "_save_to_state_dict") or _own_state_dict(m)
                 for m, _ in _tree(module))  # fmt: skip
    if not hooked:  # the common case: one flat walk
        for name, value in module._state_items():
            value = value.tensor()  # NOTE: syncs from the graph that used it last
            out[prefix + name] = value if keep_vars or _lazy(value) else value.detach()
        return out
    return _save(module, out, prefix, keep_vars)


def _save(module, out, prefix, keep_vars):
    for hook in list(module._state_dict_pre_hooks.values()):
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(out, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None and _own_state_dict(child):  # PyTorch calls each child's
            child.state_dict(destination=out, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        elif child is not None:
            _save(child, out, f"{prefix}{name}.", keep_vars)
    public = module.__dict__.get("_state_dict_post_hooks_public", ())
    for key, hook in list(module._state_dict_hooks.items()):
        result = hook(module, out, prefix, {"version": 1})
        if result is not None:  # as PyTorch's: a private hook's dict replaces the top one's
            if key in public:
                raise RuntimeError("state_dict post-hook must return None")
            out = result
    return out


def save_own(module, out, prefix: str, keep_vars: bool) -> None:
    """`Module._save_to_state_dict`: the module's parameters, persistent buffers and extra
    state into `out`."""
    own = [*module._parameters.items()]
    own += [(k, b) for k, b in module._buffers.items() if b is None or b.persistent]
    for name, value in own:
        if value is not None:
            value = value.tensor()
            out[prefix + name] = value if keep_vars or _lazy(value) else value.detach()
    if has_extra_state(module):
        out[prefix + "_extra_state"] = module.get_extra_state()


def _own_state_dict(module) -> bool:
    """Whether the module's class overrides `Module.state_dict`."""
    from .module import Module

    return type(module).state_dict is not Module.state_dict


def _overrides(module, method: str) -> bool:
    """Whether the module's class overrides the Module method `method`."""
    from .module_hooks import ModuleHooks

    return getattr(type(module), method) is not getattr(ModuleHooks, method)


def load_state(module, own: dict, state, strict: bool, assign: bool = False) -> IncompatibleKeys:
    """Sets `own` (key -> Parameter or Buffer) from `state` (Tensors or arrays), after checking
    every key and shape; nothing changes on error. The modules' load pre-hooks run first
    (`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
    unexpected_keys, error_msgs)`, on a copy of `state` they may change), and their post-hooks
    (`hook(module, incompatible_keys)`, which may empty its lists) after loading, before the
    strict check (as PyTorch's, the values are then loaded even where that check fails)."""
    tree = list(_tree(module))
    extra = {f"{p}_extra_state": m for m, p in tree if has_extra_state(m)}
    hook_errors: list = []
    if any(m._load_state_dict_pre_hooks or _overrides(m, "_load_from_state_dict")
           for m, _ in tree):  # fmt: skip
        state = dict(state)
        for m, p in tree:  # each sees its own entries (PyTorch's), its changes are kept
            local = {k: v for k, v in state.items() if k.startswith(p)}
            before = list(local)
            m._load_from_state_dict(local, p, {"version": 1}, strict, [], [], hook_errors)
            for k in before:
                if k not in local:
                    del state[k]
            state.update(local)
    for m, p in tree:  # lazy modules take their shapes from the state (layers_lazy.py)
        load_lazy = getattr(m, "_load_lazy", None)
        if load_lazy is not None:
            load_lazy(state, p)
    # as PyTorch's norm layers on a state dict without a version (kiln's never carry one, nor
    # do plain dicts): a missing num_batches_tracked keeps the module's own count
    kept = {f"{p}num_batches_tracked" for m, p in tree
            if getattr(m, "track_running_stats", False)
            and m._buffers.get("num_batches_tracked") is not None}  # fmt: skip
    missing = [k for k in [*own, *extra] if k not in state and k not in kept]
    unexpected = [k for k in state if k not in own and k not in extra]
    keys = IncompatibleKeys(missing, unexpected)
    both_lazy = {k for k in own if k in state and _lazy(own[k]) and _lazy(state[k])}
    errors = list(hook_errors) + [
        f"size mismatch for {k}: copying a param with shape {tuple(np.shape(state[k]))} from "
        f"checkpoint, the shape in current model is {tuple(own[k].shape)}"
        for k in own
        if k in state and k not in both_lazy and tuple(np.shape(state[k])) != tuple(own[k].shape)
    ]
    posted = any(m._load_state_dict_post_hooks for m, _ in tree)
    if not posted:
        _refuse(module, errors, keys, strict)
    elif errors:
        _refuse(module, errors, IncompatibleKeys([], []), strict)
    if assign:
        _assign_values(tree, state)
    else:
        for key, p in own.items():
            if key in state and key not in both_lazy:  # (two uninitialized: stays so)
                p.assign(state[key])
    for key, m in extra.items():
        if key in state:
            m.set_extra_state(state[key])
    if posted:  # as PyTorch's: after loading, before the strict check (which they may calm)
        for m, _ in tree:
            for hook in list(m._load_state_dict_post_hooks.values()):
                if hook(m, keys) is not None:
                    raise call_error(
                        StateDictError,
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.",
                        "load_state_dict",
                    )
        _refuse(module, [], keys, strict)
    return keys


def _lazy(value) -> bool:
    """Whether `value` is an uninitialized parameter or buffer (a lazy module's, which
    `state_dict` gives as it is, as PyTorch's)."""
    from .layers_lazy import is_lazy  # NOTE: lazy: layers_lazy builds on Module

    return is_lazy(value)


def _refuse(module, errors: list, keys: IncompatibleKeys, strict: bool) -> None:
    """Raises `load_state_dict`'s error for `errors` and (if `strict`) the keys' mismatch."""
    errors = list(errors)
    if strict and keys.missing_keys:
        errors.insert(0, f"Missing key(s) in state_dict: {', '.join(keys.missing_keys)}")
    if strict and keys.unexpected_keys:
        errors.insert(0, f"Unexpected key(s) in state_dict: {', '.join(keys.unexpected_keys)}")
    if errors:
        raise call_error(
            StateDictError,
            f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
            + "\n\t".join(errors),
            "load_state_dict",
        )
