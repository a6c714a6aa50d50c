"""PyTorch's lazy modules: `LazyLinear`, `LazyConv1d`…`LazyConvTranspose3d`,
`LazyBatchNorm1d`…`LazyInstanceNorm3d`. Their input size (in_features, in_channels,
num_features) comes from the first call's input: until then the parameters are
`UninitializedParameter`s (buffers `UninitializedBuffer`s); the first call gives them their
shapes and the initialization of the module they become (`Linear`, `Conv2d`, ...), whose
class they then take, as PyTorch's do.

>>> import kiln as kn
>>> fc = kn.nn.LazyLinear(3)
>>> fc
LazyLinear(in_features=0, out_features=3, bias=True)
>>> fc(kn.ones(2, 5)).shape, fc
(kiln.Size([2, 3]), Linear(in_features=5, out_features=3, bias=True))
"""

from __future__ import annotations

import inspect

import numpy as np

from .. import dtypes as dt
from ..eager.tensor import version_of
from ..errors import UsageError
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import BatchNorm1d, BatchNorm2d, InstanceNorm1d, InstanceNorm2d, Linear
from .layers_torch import BatchNorm3d, InstanceNorm3d
from .module import Buffer, Module, Parameter

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
    "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear",
    "LazyModuleMixin", "UninitializedBuffer", "UninitializedParameter",
]  # fmt: skip


class _Uninitialized:
    """What the uninitialized values share: no data until `materialize(shape)`, which gives
    them their shape (values left uninitialized) and their materialized class."""

    cls_to_become: type = Parameter

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Gives the value `shape` (and `dtype`, default kiln's default float) in place, and
        makes it a `cls_to_become` (Parameter or Buffer).

        >>> import kiln as kn
        >>> p = kn.nn.UninitializedParameter()
        >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
        """
        dtype = dt.as_dtype(dtype or self.__dict__.get("_lazy_dtype") or dt.DEFAULT_FLOAT)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.__dict__.update(_value=np.empty(shape, dtype), _last=None)
        version_of(self).value += 1
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def _cast(self, dtype) -> None:
        """`module.double()` and the like before the first call: the dtype it materializes
        in (as PyTorch's)."""
        self.__dict__["_lazy_dtype"] = dtype
        super()._cast(dtype)

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error "
            "usually happens in `load_state_dict` when trying to load an uninitialized "
            "parameter into an initialized one. Call `forward` to initialize the parameters "
            "before accessing their attributes."
        )

    def _refuse(self, *args, **kwargs):
        raise UsageError(f"Can't use an {type(self).__name__}: its shape is set by the "
                         "module's first call (or materialize())")  # fmt: skip

    numpy = tolist = item = _refuse


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, until its first call).

    >>> import kiln as kn
    >>> kn.nn.UninitializedParameter()
    <UninitializedParameter>
    """

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        super().__init__(None, requires_grad)
        self.__dict__["_lazy_dtype"] = dtype


class UninitializedBuffer(_Uninitialized, Buffer):
    """A buffer whose shape is not known yet (a lazy norm's running statistics).

    >>> import kiln as kn
    >>> kn.nn.UninitializedBuffer()
    <UninitializedBuffer>
    """

    cls_to_become = Buffer

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True):  # fmt: skip
        super().__init__(None, persistent)
        self.__dict__["_lazy_dtype"] = dtype


def is_lazy(value) -> bool:
    """Whether `value` is an uninitialized parameter or buffer.

    >>> import kiln as kn
    >>> from kiln.nn.layers_lazy import is_lazy
    >>> is_lazy(kn.nn.UninitializedParameter()), is_lazy(kn.nn.Parameter(kn.ones(1)))
    (True, False)
    """
    return isinstance(value, _Uninitialized)


class LazyModuleMixin:
    """Lazy initialization: the module is built as `cls_to_become` with an input size of 0
    and uninitialized values; its first call reads the input size (`_input_size`), builds
    a `cls_to_become` of that size for its initial values, materializes its own values with
    them and becomes that class."""

    cls_to_become: type | None = None  # None: a module of the user's keeps its class
    _size_attr = "in_features"

    def _lazy_setup(self, kwargs: dict) -> None:
        self._lazy_kwargs = kwargs
        setattr(self, self._size_attr, 0)
        dtype = kwargs.get("dtype")
        for name, value in list(self._parameters.items()):
            if value is not None:
                setattr(self, name, UninitializedParameter(dtype=dtype))
        for name, value in list(self._buffers.items()):
            if value is not None and name != "num_batches_tracked":
                setattr(self, name, UninitializedBuffer(dtype=dtype))

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for the first call."""
        values = [*self._parameters.values(), *self._buffers.values()]
        return any(is_lazy(v) for v in values)

    def _input_size(self, input) -> int:  # noqa: A002
        return int(input.shape[-1])

    def initialize_parameters(self, input) -> None:  # noqa: A002
        """Materializes the values from `input`'s size, with the initialization of the
        module the lazy one becomes."""
        self._materialize(self._input_size(input))

    def _materialize(self, size: int) -> None:
        model = self.cls_to_become(size, **self._lazy_kwargs)
        for table in ("_parameters", "_buffers"):
            for name, value in getattr(self, table).items():
                if is_lazy(value):
                    source = getattr(model, table)[name]
                    dtype = value.__dict__.get("_lazy_dtype") or source.dtype
                    value.materialize(tuple(source.shape), dtype=dtype)
                    value.assign(source.numpy())
        setattr(self, self._size_attr, size)

    def _become(self) -> None:
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become
        self.__dict__.pop("_lazy_kwargs", None)

    def _load_lazy(self, state: dict, prefix: str) -> None:
        """What `load_state_dict` does first (PyTorch's lazy load hook): uninitialized values
        take the shapes of the state's initialized ones (a kiln lazy layer: its input size
        from `weight` or `running_mean`, then its class)."""
        if not self.has_uninitialized_params():
            return
        if "_lazy_kwargs" in self.__dict__:
            name = "weight" if prefix + "weight" in state else "running_mean"
            value = state.get(prefix + name)
            if value is not None and not is_lazy(value):
                self._materialize(self._size_from(tuple(np.shape(value)), name))
                self._become()
            return
        for table in (self._parameters, self._buffers):
            for name, value in table.items():
                given = state.get(prefix + name)
                if is_lazy(value) and given is not None and not is_lazy(given):
                    value.materialize(tuple(np.shape(given)))

    def _size_from(self, shape: tuple, key: str) -> int:
        if key == "running_mean" or self._size_attr == "num_features":
            return shape[0]
        if self._size_attr == "in_features":
            return shape[1]
        if getattr(self, "transposed", False):  # (in, out / groups, *kernel)
            return shape[0]
        return shape[1] * self._lazy_kwargs.get("groups", 1)  # (out, in / groups, *kernel)

    def __call__(self, *args, **kwargs):
        if self.has_uninitialized_params():
            if not args:
                raise UsageError(f"{type(self).__name__}: the first call needs the input")
            self.initialize_parameters(args[0])
            if not self.has_uninitialized_params():
                self._become()
        return Module.__call__(self, *args, **kwargs)  # the class it became: no super()


def _lazy(name: str, base: type, size_attr: str, doc: str, build, input_size=None):
    """A lazy class: `build(kwargs)` gives the `base(1, ...)` whose attributes it starts from."""

    def __init__(self, *args, **kwargs):
        kwargs = build(*args, **kwargs)
        base.__init__(self, kwargs.pop("_start"), **kwargs)
        self._lazy_setup(kwargs)

    params = list(inspect.signature(build).parameters.values())
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params]
    )
    namespace = {"__init__": __init__, "__doc__": doc, "cls_to_become": base,
                 "_size_attr": size_attr, "__module__": __name__}  # fmt: skip
    if input_size is not None:
        namespace["_input_size"] = input_size
    return type(name, (LazyModuleMixin, base), namespace)


def _linear_args(out_features: int, bias: bool = True, device=None, dtype=None) -> dict:
    return {"_start": 1, "out_features": out_features, "bias": bias, "device": device,
            "dtype": dtype}  # fmt: skip


LazyLinear = _lazy(
    "LazyLinear", Linear, "in_features",
    """`Linear` whose `in_features` is the first input's last dim.

    >>> import kiln as kn
    >>> kn.nn.LazyLinear(4)(kn.ones(3, 7)).shape
    kiln.Size([3, 4])
    """,
    _linear_args,
)  # fmt: skip


def _channels(spatial: int):
    def size(self, input) -> int:  # noqa: A002
        return int(input.shape[0] if input.ndim == spatial + 1 else input.shape[1])

    return size


def _conv_args(
    out_channels: int,
    kernel_size,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
    bias: bool = True,
    padding_mode: str = "zeros",
    device=None,
    dtype=None,
) -> dict:
    return {
        "_start": groups,
        "out_channels": out_channels,
        "kernel_size": kernel_size,
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
        "bias": bias,
        "padding_mode": padding_mode,
        "device": device,
        "dtype": dtype,
    }


def _transpose_args(out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                    groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                    device=None, dtype=None) -> dict:  # fmt: skip
    return {"_start": groups, "out_channels": out_channels, "kernel_size": kernel_size,
            "stride": stride, "padding": padding, "output_padding": output_padding,
            "groups": groups, "bias": bias, "dilation": dilation, "padding_mode": padding_mode,
            "device": device, "dtype": dtype}  # fmt: skip


def _conv_doc(base: str, shape: str) -> str:
    return (f"`{base}` whose `in_channels` is the first input's channel count.\n\n"
            "    >>> import kiln as kn\n"
            f"    >>> kn.nn.Lazy{base}(2, 3)(kn.ones({shape})).shape[1]\n"
            "    2\n")  # fmt: skip


LazyConv1d = _lazy("LazyConv1d", Conv1d, "in_channels", _conv_doc("Conv1d", "1, 4, 5"),
                   _conv_args, _channels(1))  # fmt: skip
LazyConv2d = _lazy("LazyConv2d", Conv2d, "in_channels", _conv_doc("Conv2d", "1, 4, 5, 5"),
                   _conv_args, _channels(2))  # fmt: skip
LazyConv3d = _lazy("LazyConv3d", Conv3d, "in_channels", _conv_doc("Conv3d", "1, 4, 5, 5, 5"),
                   _conv_args, _channels(3))  # fmt: skip
LazyConvTranspose1d = _lazy(
    "LazyConvTranspose1d", ConvTranspose1d, "in_channels",
    _conv_doc("ConvTranspose1d", "1, 4, 5"), _transpose_args, _channels(1),
)  # fmt: skip
LazyConvTranspose2d = _lazy(
    "LazyConvTranspose2d", ConvTranspose2d, "in_channels",
    _conv_doc("ConvTranspose2d", "1, 4, 5, 5"), _transpose_args, _channels(2),
)  # fmt: skip
LazyConvTranspose3d = _lazy(
    "LazyConvTranspose3d", ConvTranspose3d, "in_channels",
    _conv_doc("ConvTranspose3d", "1, 4, 5, 5, 5"), _transpose_args, _channels(3),
)  # fmt: skip


def _norm_args(eps: float = 1e-5, momentum=0.1, affine: bool = True,
               track_running_stats: bool = True, device=None, dtype=None, *,
               bias: bool = True) -> dict:  # fmt: skip
    """PyTorch's lazy norms' arguments (the instance norms' defaults too: affine, with
    running statistics)."""
    return {"_start": 1, "eps": eps, "momentum": momentum, "affine": affine,
            "track_running_stats": track_running_stats, "device": device, "dtype": dtype,
            "bias": bias}  # fmt: skip


def _norm_size(self, input) -> int:  # noqa: A002
    return int(input.shape[1])  # as PyTorch's lazy norms: dim 1, batched or not


def _norm_doc(base: str, shape: str) -> str:
    return (f"`{base}` whose `num_features` is the first input's channel count.\n\n"
            "    >>> import kiln as kn\n"
            f"    >>> kn.nn.Lazy{base}()(kn.randn({shape})).shape\n"
            f"    kiln.Size([{shape}])\n")  # fmt: skip


_BN = _IN = _norm_args
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", BatchNorm1d, "num_features",
                        _norm_doc("BatchNorm1d", "4, 3"), _BN, _norm_size)  # fmt: skip
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", BatchNorm2d, "num_features",
                        _norm_doc("BatchNorm2d", "4, 3, 2, 2"), _BN, _norm_size)  # fmt: skip
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", BatchNorm3d, "num_features",
                        _norm_doc("BatchNorm3d", "4, 3, 2, 2, 2"), _BN, _norm_size)  # fmt: skip
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", InstanceNorm1d, "num_features",
                           _norm_doc("InstanceNorm1d", "4, 3, 5"), _IN, _norm_size)  # fmt: skip
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", InstanceNorm2d, "num_features",
                           _norm_doc("InstanceNorm2d", "4, 3, 5, 5"), _IN, _norm_size)  # fmt: skip
LazyInstanceNorm3d = _lazy(
    "LazyInstanceNorm3d",
    InstanceNorm3d,
    "num_features",
    _norm_doc("InstanceNorm3d", "2, 3, 4, 4, 4"),
    _IN,
    _norm_size,
)
