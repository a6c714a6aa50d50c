"""Small value types of the array API: `Size` (a shape), `device`, and the named tuples some
functions return (`return_types.max`: values and indices)."""

from __future__ import annotations

import collections
import math
import types

from . import shapes as sh
from .errors import DeviceError, call_error

__all__ = [
    "Size", "channels_last", "channels_last_3d", "contiguous_format", "device", "layout",
    "memory_format", "preserve_format",
    "named_out", "return_types", "size_attribute", "strided",
]  # fmt: skip


class Size(tuple):
    """A tensor's shape: a tuple of ints with `numel()` (PyTorch's `Size`).

    >>> import kiln as kn
    >>> s = kn.zeros(2, 3).shape
    >>> s, s == (2, 3), s.numel(), s[1:]
    (kiln.Size([2, 3]), True, 6, kiln.Size([3]))
    """

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __repr__(self):
        return f"kiln.Size({list(self)})"


class _Count(int):
    """`x.size` of a static shape: the number of elements (NumPy's `size`), and callable as
    PyTorch's `size()` (the shape, a `Size`) and `size(dim)`."""

    def __new__(cls, shape):
        self = super().__new__(cls, math.prod(shape))
        self.shape = shape
        return self

    def __call__(self, dim=None):
        return Size(self.shape) if dim is None else self.shape[dim]


class _SymbolicCount:
    """`x.size` of a shape with symbolic dims: callable as `size()` and `size(dim)`; its
    `count` is the symbolic number of elements."""

    def __init__(self, shape, count):
        self.shape, self.count = shape, count

    def __call__(self, dim=None):
        return Size(self.shape) if dim is None else self.shape[dim]

    def __repr__(self):
        return repr(self.count)


def size_attribute(shape):
    """`x.size` for a value of `shape`.

    >>> s = size_attribute((2, 3))
    >>> s, s(), s(-1)
    (6, kiln.Size([2, 3]), 3)
    """
    if all(isinstance(d, int) for d in shape):
        return _Count(tuple(shape))
    return _SymbolicCount(tuple(shape), sh.size(shape))


class device(str):  # noqa: N801 — PyTorch's name
    """A device: `device("cuda:0")`, `device("cuda", 0)`, `device("cpu")`, with `.type` and
    `.index` (None where not given). It is also the string `"cuda:0"` (a `str`), so it is
    accepted wherever kiln takes a device string.

    >>> import kiln as kn
    >>> d = kn.device("cuda", 1)
    >>> d, d.type, d.index, str(d), kn.device("cpu").index
    (device(type='cuda', index=1), 'cuda', 1, 'cuda:1', None)
    """

    __slots__ = ("type", "index")

    def __new__(cls, type_or_name, index: int | None = None):
        if isinstance(type_or_name, device) and index is None:
            return type_or_name
        text = str(type_or_name)
        kind, _, number = text.partition(":")
        if number:
            if index is not None:
                raise call_error(DeviceError, "type (string) must not include an index "
                                 f"because index was passed explicitly: {text}",
                                 "device")  # fmt: skip
            index = int(number)
        if kind not in ("cpu", "cuda"):
            raise call_error(DeviceError, "Expected one of cpu, cuda device type at start of "
                             f"device string: {text}", "device")  # fmt: skip
        if index is not None and index < 0:
            raise call_error(DeviceError, f"Device index must not be negative, got {index}",
                             "device")  # fmt: skip
        self = super().__new__(cls, kind if index is None else f"{kind}:{index}")
        self.type, self.index = kind, index
        return self

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    __hash__ = str.__hash__


def _named(name: str, doc: str):
    cls = collections.namedtuple(name, ["values", "indices"])
    cls.__doc__ = doc
    cls.__module__ = "kiln.return_types"
    cls.__repr__ = lambda self: (
        f"kiln.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"
    )
    return cls


def _fields(name: str, fields: list, doc: str):
    cls = collections.namedtuple(name, fields)
    cls.__doc__ = doc
    cls.__module__ = "kiln.return_types"
    cls.__repr__ = lambda self: (
        f"kiln.return_types.{name}(\n"
        + ",\n".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        + ")"
    )
    return cls


return_types = types.SimpleNamespace(
    max=_named("max", "`max(x, dim)`: the maxima and where they are (`values`, `indices`)."),
    min=_named("min", "`min(x, dim)`: the minima and where they are (`values`, `indices`)."),
    sort=_named("sort", "`sort(x, dim)`: the sorted values and where they came from."),
    topk=_named("topk", "`topk(x, k)`: the k largest (or smallest) values and where they are."),
    cummax=_named("cummax", "`cummax(x, dim)`: the running maxima and where they are."),
    cummin=_named("cummin", "`cummin(x, dim)`: the running minima and where they are."),
    median=_named("median", "`median(x, dim)`: the lower medians and where they are."),
    kthvalue=_named("kthvalue", "`kthvalue(x, k, dim)`: the k-th smallest values and where."),
    aminmax=collections.namedtuple("aminmax", ["min", "max"]),
    mode=_named("mode", "`mode(x, dim)`: the most frequent values and where they are."),
    nanmedian=_named("nanmedian", "`nanmedian(x, dim)`: the medians of the non-NaN values."),
    histogram=_fields("histogram", ["hist", "bin_edges"], "`histogram(x, bins)`: counts, edges."),
    histogramdd=_fields("histogramdd", ["hist", "bin_edges"],
                        "`histogramdd(x, bins)`: counts over D dims, the edges of each."),
    frexp=_fields("frexp", ["mantissa", "exponent"], "`frexp(x)`: x = mantissa * 2**exponent."),
    # kn.linalg's factorizations (kiln/frontend/linalg_factor.py)
    linalg_qr=_fields("linalg_qr", ["Q", "R"], "`linalg.qr(A)`: A = Q R."),
    qr=_fields("qr", ["Q", "R"], "`qr(A)`: A = Q R."),
    linalg_eig=_fields("linalg_eig", ["eigenvalues", "eigenvectors"],
                       "`linalg.eig(A)`: A V = V diag(eigenvalues), complex."),
    linalg_eigh=_fields("linalg_eigh", ["eigenvalues", "eigenvectors"],
                        "`linalg.eigh(A)`: A = V diag(eigenvalues) Vᵀ."),
    linalg_svd=_fields("linalg_svd", ["U", "S", "Vh"], "`linalg.svd(A)`: A = U diag(S) Vh."),
    svd=_fields("svd", ["U", "S", "V"], "`svd(A)`: A = U diag(S) Vᵀ."),
    linalg_lu=_fields("linalg_lu", ["P", "L", "U"], "`linalg.lu(A)`: A = P L U."),
    lu_unpack=_fields("lu_unpack", ["P", "L", "U"], "`lu_unpack(LU, pivots)`: A = P L U."),
    linalg_lu_factor=_fields("linalg_lu_factor", ["LU", "pivots"],
                             "`linalg.lu_factor(A)`: L and U in one matrix, row interchanges."),
    linalg_lstsq=_fields("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"],
                         "`linalg.lstsq(A, B)`: least-squares solutions."),
    linalg_inv_ex=_fields("linalg_inv_ex", ["inverse", "info"], "`linalg.inv_ex(A)`."),
    linalg_cholesky_ex=_fields("linalg_cholesky_ex", ["L", "info"], "`linalg.cholesky_ex(A)`."),
    geqrf=_fields("geqrf", ["a", "tau"], "`geqrf(A)`: LAPACK's compact QR and its scales."),
    linalg_ldl_factor=_fields("linalg_ldl_factor", ["LD", "pivots"],
                              "`linalg.ldl_factor(A)`: LAPACK's compact LDLᵀ and pivots."),
    linalg_ldl_factor_ex=_fields("linalg_ldl_factor_ex", ["LD", "pivots", "info"],
                                 "`linalg.ldl_factor_ex(A)`."),
    linalg_solve_ex=_fields("linalg_solve_ex", ["result", "info"], "`linalg.solve_ex(A, B)`."),
    linalg_lu_factor_ex=_fields("linalg_lu_factor_ex", ["LU", "pivots", "info"],
                                "`linalg.lu_factor_ex(A)`: `lu_factor`'s and the info codes."),
    triangular_solve=_fields("triangular_solve", ["solution", "cloned_coefficient"],
                             "`triangular_solve(b, A)`: the solution and a copy of A."),
)  # fmt: skip


def named_out(cls):
    """The named tuple a function returns when its results went to `out=` (PyTorch's
    `return_types.max_out` beside `return_types.max`): `cls`'s fields under the name
    `<name>_out`, a plain tuple for a plain tuple.

    >>> named_out(return_types.sort)._fields, named_out(return_types.sort).__name__
    (('values', 'indices'), 'sort_out')
    """
    fields = getattr(cls, "_fields", None)
    if fields is None:
        return lambda *values: tuple(values)
    name = f"{cls.__name__}_out"
    out = getattr(return_types, name, None)
    if out is None:
        out = _fields(name, list(fields), f"{cls.__name__}(..., out=...)'s results: {cls.__doc__}")
        setattr(return_types, name, out)
    return out


class memory_format:  # noqa: N801 — PyTorch's name
    """A layout request, as PyTorch's `torch.memory_format`: `preserve_format` (a copy laid
    out as its source where that is dense), `contiguous_format` (C order), `channels_last`
    (a 4-D (N, C, H, W) tensor with C fastest, then W, H, N) and `channels_last_3d` (5-D,
    C fastest, then W, H, D, N), as `contiguous()`, `clone()`, `to()` and `is_contiguous()`
    take them.

    >>> import kiln as kn
    >>> kn.zeros_like(kn.ones(2), memory_format=kn.preserve_format)
    tensor([0., 0.])
    >>> kn.ones(2, 3, 4, 5).contiguous(memory_format=kn.channels_last).stride()
    (60, 1, 15, 3)
    """

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"kiln.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


class layout:  # noqa: N801 — PyTorch's name
    """How a tensor's elements are stored, as PyTorch's `torch.layout`: every kiln tensor is
    dense and strided (`kn.strided`, its `layout`).

    >>> import kiln as kn
    >>> kn.ones(2).layout
    kiln.strided
    """

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"kiln.{self.name}"


strided = layout("strided")
return_types.aminmax.__doc__ = "`aminmax(x)`: the least and the greatest values (`min`, `max`)."
return_types.aminmax.__module__ = "kiln.return_types"
