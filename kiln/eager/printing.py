"""How eager tensors print: PyTorch's print options (`set_printoptions`: precision, threshold,
edgeitems, linewidth, profile, sci_mode) and the element format `Tensor.__repr__` uses."""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import dtypes as dt

__all__ = ["get_printoptions", "set_printoptions"]

# PyTorch's profiles; "full" prints every element
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
OPTIONS = {**_PROFILES["default"], "sci_mode": None}


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
) -> None:
    """Sets how tensors print, as PyTorch's `set_printoptions`: `precision` (decimals of
    floats, 4), `threshold` (more elements than this print summarized, 1000), `edgeitems`
    (elements shown at each end of a summarized dim, 3), `linewidth` (characters a line, 80),
    `profile` ("default", "short" or "full": the four above at once; the others given win) and
    `sci_mode` (True or False forces scientific notation on or off; None, always reset unless
    given, lets the values decide).

    >>> import kiln as kn
    >>> kn.set_printoptions(precision=2)
    >>> kn.tensor([1.23456, 100.0])
    tensor([  1.23, 100.00])
    >>> kn.set_printoptions(profile="default")
    >>> kn.tensor([1.23456])
    tensor([1.2346])
    """
    if profile in _PROFILES:  # an unknown profile changes nothing, as PyTorch's
        OPTIONS.update(_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}  # fmt: skip
    OPTIONS.update({k: v for k, v in given.items() if v is not None})
    OPTIONS["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    """The print options `set_printoptions` sets, as a dict (a copy).

    >>> import kiln as kn
    >>> kn.get_printoptions()["precision"]
    4
    """
    return dict(OPTIONS)


def array2string_options() -> dict:
    """The options of `np.array2string` that follow the print options."""
    threshold = OPTIONS["threshold"]
    threshold = sys.maxsize if threshold == math.inf else int(threshold)
    return {
        "threshold": threshold,
        "edgeitems": int(OPTIONS["edgeitems"]),
        "max_line_width": int(OPTIONS["linewidth"]),
    }


def float_format(array: np.ndarray):
    """How `repr` writes the elements, as PyTorch's printing does: integral values as `2.`,
    others with `precision` decimals (`0.5000`), both in scientific notation for the whole
    tensor when the magnitudes span more than 1000x or reach 1e8 (or, for non-integral values,
    go below 1e-4, so 1e-8 does not print as `0.0000`) unless `sci_mode` says otherwise; every
    element padded to one width."""
    values = array[np.isfinite(array) & (array != 0)].astype(np.float64)
    magnitudes = np.abs(values)
    integral = bool(np.all(values == np.ceil(values)))
    precision = int(OPTIONS["precision"])
    scientific = OPTIONS["sci_mode"] if magnitudes.size else False  # zeros: `0.` (PyTorch's)
    if scientific is None:
        scientific = False
        if magnitudes.size:
            low, high = magnitudes.min(), magnitudes.max()
            scientific = high / low > 1000 or high > 1e8 or (not integral and low < 1e-4)
    if scientific:
        fmt = f"{{:.{precision}e}}".format
    elif integral:
        fmt = _integral
    else:
        fmt = f"{{:.{precision}f}}".format
    width = max([1, *(len(fmt(v)) for v in values)])  # of the nonzero finite values

    def padded(x) -> str:
        return fmt(float(x)).rjust(width)

    padded.width = width  # what a line counts an element as (`body_text`)
    return padded


def complex_format(array: np.ndarray):
    """How `repr` writes complex elements, as PyTorch's printing does: the real parts as
    `float_format` writes them (padded to one width), then the imaginary part with its sign,
    unpadded, and `j`.

    >>> fmt = complex_format(np.array([1 + 2j, -13.5 - 4j]))
    >>> fmt(1 + 2j), fmt(-13.5 - 4j)
    ('  1.0000+2.j', '-13.5000-4.j')
    """
    real, imag = float_format(np.real(array)), float_format(np.imag(array))

    def fmt(z) -> str:
        im = imag(z.imag).strip()
        return f"{real(z.real)}{im if im.startswith('-') else '+' + im}j"

    return fmt


def _integral(x: float) -> str:
    text = f"{x:.0f}"
    return text if math.isinf(x) or math.isnan(x) else text + "."


# -- the layout of a tensor's text, as PyTorch's printing lays it out --------------------------


def _summarized(array: np.ndarray, edge: int) -> np.ndarray:
    """The elements a summarized print shows (`edge` at each end of every long dim): the
    values its element format is made from."""
    for axis, n in enumerate(array.shape):
        if n > 2 * edge:
            keep = np.r_[0:edge, n - edge : n]
            array = np.take(array, keep, axis=axis)
    return array


def _padded(texts: list[str]):
    width = max([0, *(len(t) for t in texts)])
    return width, lambda text: text.rjust(width)


def element_format(values: np.ndarray):
    """(how one element is written, the width a line counts for it): `float_format`'s for
    floats, the real part's and the imaginary part's (PyTorch's: the imaginary part written
    by its own float format, unpadded, with its sign) for complex values, `str` padded to one
    width for ints and bools.

    >>> fmt, width = element_format(np.array([1 + 2j, -13.5 - 4j]))
    >>> fmt(-13.5 - 4j), width
    ('-13.5000-4.j', 12)
    """
    if values.dtype.kind == "c":
        real, imag = float_format(np.real(values)), float_format(np.imag(values))
        width = real.width + imag.width + 1  # PyTorch counts the `j`, not the sign

        def fmt(z) -> str:
            im = imag(z.imag).strip()
            return f"{real(z.real)}{im if im.startswith('-') else '+' + im}j"

        return fmt, width
    if values.dtype.kind == "f":
        fmt = float_format(values)
        return fmt, fmt.width
    width, pad = _padded([str(v) for v in values.reshape(-1).tolist()])
    return (lambda x: pad(str(x.item() if hasattr(x, "item") else x))), width


def body_text(host: np.ndarray, indent: int) -> str:
    """The text of `host`'s elements in nested brackets, laid out as PyTorch's printing does:
    each innermost row broken into lines of as many elements as fit in `linewidth` after the
    `indent` (all counted at the widest element's width), rows and blocks on lines of their
    own (a blank line between blocks of 3 dims and more), and where the tensor has more
    elements than `threshold`, `edgeitems` at each end of a dim around `...`.

    >>> print(body_text(np.arange(4.0).reshape(2, 2), 7))
    [[0., 1.],
            [2., 3.]]
    """
    if host.size == 0:
        return "[]"
    edge = int(OPTIONS["edgeitems"])
    summarize = host.size > OPTIONS["threshold"]
    fmt, width = element_format(_summarized(host, edge) if summarize else host)
    if host.ndim == 0:
        return fmt(host[()])
    per_line_width = width + 2  # the element and its ", "

    def row(a: np.ndarray, indent: int) -> str:
        per_line = max(1, int((OPTIONS["linewidth"] - indent) // per_line_width))
        if summarize and not edge:
            items = ["..."]
        elif summarize and len(a) > 2 * edge:
            items = [*map(fmt, a[:edge]), " ...", *map(fmt, a[len(a) - edge :])]
        else:
            items = [fmt(v) for v in a]
        lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    def block(a: np.ndarray, indent: int) -> str:
        if a.ndim == 1:
            return row(a, indent)
        n = a.shape[0]
        if summarize and n > 2 * edge:
            parts = [*(block(a[k], indent + 1) for k in range(edge)), "...",
                     *(block(a[k], indent + 1) for k in range(n - edge, n))]  # fmt: skip
        else:
            parts = [block(a[k], indent + 1) for k in range(n)]
        return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"

    return block(host, indent)


def with_suffixes(prefix: str, body: str, suffixes: list[str]) -> str:
    """`prefix(body, suffix, ...)`: each suffix (`dtype=...`, `grad_fn=...`) after a comma on
    the body's last line, or on a line of its own (indented past the prefix) where that line
    would pass `linewidth`, by PyTorch's count of the last line's length."""
    text = body
    last = len(prefix + body) - (prefix + body).rfind("\n") + 1  # the last line's, and 2
    for suffix in suffixes:
        if last + len(suffix) + 2 > OPTIONS["linewidth"]:
            text += ",\n" + " " * len(prefix) + suffix
            last = len(prefix) + len(suffix)
        else:
            text += ", " + suffix
            last += len(suffix) + 2
    return f"{prefix}{text})"


def tensor_repr(t) -> str:
    """A tensor's repr, as PyTorch prints it: `tensor(<values>, <what is not the default>)`."""
    host = t._host()
    # bfloat16 and the storage dtypes print through float32 (or int8): NumPy formats them
    # as no number kind
    as_float = dt.is_float(t.dtype) or t.dtype.name.startswith("float")
    if host.dtype == dt.bfloat16 or dt.is_storage_only(host.dtype):
        host = host.astype(np.float32 if as_float else np.int8)
    if as_float and host.dtype.kind != "f":
        host = host.astype(np.float32)
    body = body_text(host, len("tensor("))
    extra = []
    if host.size == 0 and host.ndim != 1 or host.size and not OPTIONS["edgeitems"]:
        extra.append(f"size={tuple(host.shape)}")  # PyTorch's: where the body hides it
    # an empty tensor names its dtype unless it is the default float (PyTorch's rule)
    if t.dtype not in (dt.DEFAULT_FLOAT, dt.int64, dt.bool_, dt.default_complex()) or (
        host.size == 0 and t.dtype != dt.DEFAULT_FLOAT
    ):
        extra.append(f"dtype=kiln.{t.dtype.name}")
    if t._device != "cpu":
        extra.append(f"device='{t._device}'")
    if t.grad_fn is not None:
        extra.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        extra.append("requires_grad=True")
    tangent = getattr(t._meta, "tangent", None)  # a dual tensor's (forward AD)
    from .tensor import Tensor  # NOTE: lazy: tensor builds on this module

    if isinstance(tangent, Tensor):
        extra.append(f"tangent={tangent!r}")
    return with_suffixes("tensor(", body, extra)
