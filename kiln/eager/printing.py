"""How eager tensors print: PyTorch's print options (`set_printoptions`: precision, threshold,
edgeitems, linewidth, profile, sci_mode) and the element format `Tensor.__repr__` uses."""

from __future__ import annotations

import math
import sys

import numpy as np

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
    scientific = OPTIONS["sci_mode"]
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
    width = max([1, *(len(fmt(v)) for v in values)])
    return lambda x: fmt(float(x)).rjust(width)


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
