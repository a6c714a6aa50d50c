"""ONNX's Pad as kiln ops (a row of the one table in onnx_import_rules.py): constant pads with
a fill known at import (kiln's `pad`) or only at run time (a `where` over a padded mask), edge,
reflect and wrap modes as a `gather` of each axis with indices computed at import (NumPy's
`np.pad` modes, which ONNX's are), and negative pads as slices.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .onnx_import import Known

_ALL = ("slice", None, None, None)
_MODES = {"edge": "edge", "reflect": "reflect", "wrap": "wrap"}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def pad(imp, xs, attrs):
    x = imp.symbol(xs[0])
    mode = _text(attrs.get("mode", "constant"))
    if mode != "constant" and mode not in _MODES:
        raise imp.error(f"with mode {mode!r} has no kiln form")
    if len(xs) > 1:
        pads = [int(p) for p in imp.known(xs[1], "pads").reshape(-1)]
    else:
        pads = [int(p) for p in attrs["pads"]]
    if len(xs) > 3 and xs[3] is not None:
        axes = [int(a) for a in imp.known(xs[3], "axes").reshape(-1)]
        axes = [a + x.ndim if a < 0 else a for a in axes]
    else:
        axes = list(range(x.ndim))
    widths = [(0, 0)] * x.ndim
    for k, a in enumerate(axes):
        widths[a] = (pads[k], pads[k + len(axes)])
    if any(b < 0 or e < 0 for b, e in widths):  # negative pads crop
        spec = []
        for (b, e), d in zip(widths, x.shape):
            stop = None if e >= 0 else (d + e if isinstance(d, int) else e)
            spec.append(("slice", max(-b, 0), stop, None))
        x = imp.apply("index", x, spec=tuple(spec))
        widths = [(max(b, 0), max(e, 0)) for b, e in widths]
    if not any(b or e for b, e in widths):
        return x
    if mode != "constant":
        return _gather_pad(imp, x, widths, _MODES[mode])
    value = 0.0
    if len(xs) > 2 and xs[2] is not None:
        if not isinstance(xs[2], Known):
            return _runtime_fill(imp, x, widths, xs[2])
        value = xs[2].array.reshape(-1)
        value = value[0].item() if value.size else 0.0
    elif "value" in attrs:
        value = attrs["value"]
    value = value if dt.is_float(x.dtype) else int(value)
    return imp.apply("pad", x, pad_width=tuple(widths), value=value)


def _gather_pad(imp, x, widths, mode):
    for a, (b, e) in enumerate(widths):
        if not (b or e):
            continue
        size = x.shape[a]
        if not isinstance(size, int):
            raise imp.error(f"with mode {mode!r} on a symbolic size has no kiln form")
        if size == 0 or (mode == "reflect" and size == 1):
            raise imp.error(f"with mode {mode!r} on an axis of size {size} has no values to pad")
        index = np.pad(np.arange(size, dtype=np.int64), (b, e), mode=mode)
        x = imp.apply("gather", x, Known(index), axis=a, wrap_negative=False)
    return x


def _runtime_fill(imp, x, widths, value):
    """Pads with a value computed at run time: kiln's pad fills with zeros, then `where` puts
    the value where a padded mask of the input is False."""
    value = imp.symbol(value)
    value = imp.apply("reshape", value, shape=())
    if value.dtype != x.dtype:
        value = imp.apply("cast", value, dtype=x.dtype)
    zero = 0.0 if dt.is_float(x.dtype) else 0
    padded = imp.apply("pad", x, pad_width=tuple(widths), value=zero)
    inside = imp.apply("broadcast_to", Known(np.ones((), bool)), shape=x.shape)
    inside = imp.apply("pad", inside, pad_width=tuple(widths), value=False)
    return imp.apply("where", inside, padded, value)
