"""Parametrizations, as PyTorch's `torch.nn.utils.parametrize`: `module.weight` computed on
each read by modules from an unconstrained `original` (a weight kept orthogonal, symmetric,
positive). The module's class becomes a subclass (`ParametrizedLinear`) with a property of
that name; its state lives in `module.parametrizations.<name>` (a `ParametrizationList`), so
`state_dict` keys (`parametrizations.weight.original`) are PyTorch's.

Inside a module call the property reads `original` as the call sees its parameters (a
graph Variable under kn.compile and in graph mode), so the parametrization is part of the
traced program and gradients reach `original`."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from ...eager import Tensor, no_grad
from ...errors import ArgumentError, UsageError
from ..containers import ModuleDict, ModuleList
from ..module import EAGER, Module, _active
from ..parameter import Buffer, Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache: dict = {}  # (id(module), name) -> its value, while `cached()` is on
_cache_depth = [0]


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once, on its first read, and
    that value is read after (a weight used in every step of a recurrent loop), as PyTorch's.

    >>> import kiln as kn
    >>> class Double(kn.nn.Module):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> m = kn.nn.utils.parametrize.register_parametrization(kn.nn.Linear(2, 2), "weight", Double())
    >>> with kn.nn.utils.parametrize.cached():
    ...     m.weight is m.weight
    True
    >>> m.weight is m.weight
    False
    """
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _register(module, name: str, value) -> None:
    """`value` as a parameter of `module` if it is a Parameter, else as a buffer."""
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(original, value) -> None:
    """`original` holds `value`'s data (any shape), keeping its identity (PyTorch's `set_`):
    an optimizer made before goes on updating it."""
    if isinstance(original, (Parameter, Buffer)):
        original.data = value
    else:
        original.set_(value)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (applied in order) and its unconstrained value,
    `original` (or `original0`, `original1`, ... where the first `right_inverse` returns
    several tensors). Calling it computes the parametrized tensor. Made by
    `register_parametrization`."""

    def __init__(self, modules: Sequence[Module], original, unsafe: bool = False):
        if len(modules) == 0:
            raise ArgumentError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ArgumentError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                f"(list, tuple...). Got {type(new).__name__}")  # fmt: skip
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ArgumentError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            if new is not original:
                with no_grad():
                    _set(original, new)
            _register(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ArgumentError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                        f"tuple...). Got element {i} of the sequence with type "
                        f"{type(value).__name__}."
                    )
                if isinstance(original, Parameter):
                    value = Parameter(value.detach(), original.requires_grad)
                else:
                    value = Buffer(value.detach())
                _register(self, f"original{i}", value)
        if not unsafe:
            _check_result(self(), shape, dtype)

    def right_inverse(self, value) -> None:
        """Sets `original` (or `original0`, ...) so that this computes `value`: the
        parametrizations' `right_inverse`s, last first (each must have one)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise UsageError(f"parametrization {type(module).__name__} does not "
                                     "implement right_inverse.")  # fmt: skip
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ArgumentError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ArgumentError(f"The tensor returned by `right_inverse` has dtype "
                                        f"{value.dtype} while `original` has dtype "
                                        f"{self.original.dtype}")  # fmt: skip
                _set(self.original, value)
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ArgumentError(f"'right_inverse' must return a sequence of tensors of "
                                    f"length {self.ntensors}. Got {value!r:.60}.")  # fmt: skip
            for i, tensor in enumerate(value):
                original = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor) or tensor.dtype != original.dtype:
                    raise ArgumentError(f"Tensor {i} returned by `right_inverse` must be a "
                                        f"tensor of dtype {original.dtype}")  # fmt: skip
                _set(original, tensor)

    def __call__(self, *args, **kwargs):
        calls = _active()
        if calls:  # inside a module call: `original` as that call sees it
            return super().__call__(*args, **kwargs)
        calls.append(EAGER)  # read from outside any call: on the Parameter itself
        try:
            return super().__call__(*args, **kwargs)
        finally:
            calls.pop()

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _check_result(value, shape, dtype, what: str = "Registering a parametrization") -> None:
    """PyTorch's checks of a parametrization's value: a tensor of the original's dtype and
    shape (unless `unsafe`)."""
    if not isinstance(value, Tensor):
        raise ArgumentError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != dtype:
        raise ArgumentError(
            f"{what} may not change the dtype of the tensor, unless `unsafe` flag is enabled.\n"
            f"unparametrized dtype: {dtype}\nparametrized dtype: {value.dtype}"
        )
    if tuple(value.shape) != tuple(shape):
        raise ArgumentError(
            f"{what} may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
            f"unparametrized shape: {tuple(shape)}\nparametrized shape: {tuple(value.shape)}"
        )


def _deepcopy(self, memo):
    """A copy of a parametrized module: its class (the parametrized one) and a deep copy of
    its attributes, parametrizations included."""
    import copy

    new = object.__new__(type(self))
    memo[id(self)] = new
    for key, value in self.__dict__.items():
        object.__setattr__(new, key, copy.deepcopy(value, memo))
    return new


def _getstate(self):
    raise UsageError(
        "Serialization of parametrized modules is only supported through state_dict(): save "
        "module.state_dict() and load it into a module parametrized the same way"
    )


def _parametrized_class(module) -> None:
    """Makes `module` an instance of a subclass of its class, `Parametrized<Class>`, whose
    properties will be its parametrized tensors."""
    cls = type(module)
    namespace = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _add_property(module, name: str) -> None:
    """The property `name` of `module`'s (parametrized) class: the parametrization's value
    (once per `cached()` block), and assignment through its `right_inverse`."""

    def get(self):
        parametrization = self.parametrizations[name]
        if not _cache_depth[0]:
            return parametrization()
        key = (id(self), name)
        value = _cache.get(key)
        if value is None:
            value = _cache[key] = parametrization()
        return value

    def set_(self, value) -> None:
        self.parametrizations[name].right_inverse(value)

    setattr(type(module), name, property(get, set_))


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe=False):
    """Makes `module.<tensor_name>` (a parameter or buffer) the value of `parametrization`
    (a Module) applied to an unconstrained `module.parametrizations.<tensor_name>.original`,
    as PyTorch's. Where `parametrization` has `right_inverse(value)`, `original` starts as
    `right_inverse` of the current value (so the module computes what it did) and assigning
    `module.<tensor_name> = value` sets it that way. A second parametrization of the same
    tensor is applied after the first. `unsafe=True` skips the checks that the value keeps
    its shape and dtype. Returns the module.

    >>> import kiln as kn
    >>> class Symmetric(kn.nn.Module):
    ...     def forward(self, x):
    ...         return x.triu() + x.triu(1).mT
    >>> m = kn.nn.utils.parametrize.register_parametrization(kn.nn.Linear(3, 3), "weight",
    ...                                                      Symmetric())
    >>> type(m).__name__, [name for name, _ in m.named_parameters()]
    ('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
    >>> bool((m.weight == m.weight.T).all())
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            _check_result(value, current.shape, current.dtype, "Registering a parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverse = parametrization.right_inverse(value)
                except NotImplementedError:
                    pass
                else:
                    _check_result(inverse, current.shape, current.dtype,
                                  "`right_inverse` of a parametrization")  # fmt: skip
        entry = module.parametrizations[tensor_name]
        entry.append(parametrization)
        entry.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ArgumentError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
            f"element with name '{tensor_name}'"
        )
    original = getattr(module, tensor_name)
    entry = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _parametrized_class(module)
        module.parametrizations = ModuleDict()
    _add_property(module, tensor_name)
    module.parametrizations[tensor_name] = entry
    return module


def is_parametrized(module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization (of `tensor_name`, where given).

    >>> import kiln as kn
    >>> kn.nn.utils.parametrize.is_parametrized(kn.nn.Linear(2, 2))
    False
    """
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Undoes the parametrizations of `module.<tensor_name>`: it is a plain parameter (or
    buffer) again, holding its parametrized value (`leave_parametrized=True`) or `original`
    (False). The Parameter object is `original` itself, so an optimizer goes on with it. The
    module's class is its own again once nothing is parametrized.

    >>> import kiln as kn
    >>> class Double(kn.nn.Module):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> m = kn.nn.Linear(2, 2)
    >>> w = m.weight.detach().clone()
    >>> m = kn.nn.utils.parametrize.register_parametrization(m, "weight", Double())
    >>> m = kn.nn.utils.parametrize.remove_parametrizations(m, "weight")
    >>> type(m).__name__, bool((m.weight == 2 * w).all())
    ('Linear', True)
    """
    if not is_parametrized(module, tensor_name):
        raise ArgumentError(f"Module {module} does not have a parametrization on {tensor_name}")
    entry = module.parametrizations[tensor_name]
    if entry.is_tensor:
        original = entry.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
                _set(original, value.detach().clone())
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else Buffer(value)
    else:
        raise ArgumentError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
            "parametrized in terms of a sequence of tensors."
        )
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module) -> type:
    """The module's class before it was parametrized (its class if it is not).

    >>> import kiln as kn
    >>> kn.nn.utils.parametrize.type_before_parametrizations(kn.nn.Linear(2, 2)).__name__
    'Linear'
    """
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Parametrizes `to_module`'s `tensor_name` (else every parametrized tensor of
    `from_module`) with `from_module`'s parametrizations, sharing them and their `original`
    Parameters, as PyTorch's; a tensor `to_module` lacks is made first (a Parameter of the
    parametrized value). Returns `to_module`.

    >>> import kiln as kn
    >>> class Double(kn.nn.Module):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> a = kn.nn.utils.parametrize.register_parametrization(kn.nn.Linear(2, 2), "weight",
    ...                                                      Double())
    >>> b = kn.nn.utils.parametrize.transfer_parametrizations_and_params(a, kn.nn.Linear(2, 2))
    >>> b.parametrizations.weight.original is a.parametrizations.weight.original
    True
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if source.is_tensor else [
            f"original{i}" for i in range(source.ntensors)]  # fmt: skip
        for original in originals:
            _register(target, original, getattr(source, original))
    return to_module
