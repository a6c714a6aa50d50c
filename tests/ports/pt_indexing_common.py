"""What the ports of PyTorch's test_indexing.py share: running a scenario, a function of
the module `lib`, with torch and with kiln (eagerly or under `kn.compile`) and comparing the
results (dtype, shape, values) or the exception types; index tensors built for each module."""

import warnings

import numpy as np
from port_common import to_numpy

import kiln as kn


def outcome(fn, lib):
    """(result, None) or (None, the exception) of fn(lib)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib), None
    except Exception as e:  # noqa: BLE001 -- the exception is what is compared
        return None, e


def dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def assert_same(k, t, where="result"):
    """kiln's `k` equals torch's `t`: tensors (dtype, shape, values), sequences, numbers."""
    if hasattr(t, "shape") and hasattr(t, "dtype") and not isinstance(t, np.ndarray):
        assert isinstance(k, kn.Tensor), f"{where}: kiln gave {type(k)}, torch a tensor"
        assert dtype_name(k.dtype) == dtype_name(t.dtype), f"{where}: dtype {k.dtype} != {t.dtype}"
        assert tuple(k.shape) == tuple(t.shape), f"{where}: shape {k.shape} != {t.shape}"
        if dtype_name(t.dtype) == "bfloat16":  # (torch's numpy() has no bfloat16)
            k, t = k.float(), t.float()
        kv, tv = to_numpy(k), to_numpy(t)
        if tv.dtype.kind in "fc":
            np.testing.assert_allclose(kv, tv, rtol=1e-6, atol=1e-6, err_msg=where)
        else:
            np.testing.assert_array_equal(kv, tv, err_msg=where)
    elif isinstance(t, (list, tuple)):
        assert isinstance(k, (list, tuple)) and len(k) == len(t), f"{where}: {k!r} != {t!r}"
        for n, (a, b) in enumerate(zip(k, t)):
            assert_same(a, b, f"{where}[{n}]")
    else:
        assert k == t, f"{where}: {k!r} != {t!r}"


def check(torch, fn):
    """fn(kiln) gives what fn(torch) gives, or raises an instance of torch's exception type."""
    t, t_err = outcome(fn, torch)
    k, k_err = outcome(fn, kn)
    if t_err is not None:
        assert k_err is not None, f"torch raised {t_err!r}; kiln returned {k!r:.300}"
        assert isinstance(k_err, type(t_err)), (
            f"torch raised {type(t_err).__name__}({t_err}); kiln {type(k_err).__mro__[:4]}: {k_err}"
        )
        return
    if k_err is not None:
        raise AssertionError(f"torch returned {t!r:.300}; kiln raised {k_err!r}") from k_err
    assert_same(k, t)


def check_compiled(torch, make_inputs, body):
    """body(kn, *inputs) under kn.compile gives what body(torch, *inputs) gives eagerly
    (or an exception of torch's type)."""

    def compiled(lib):
        if lib is kn:
            return kn.compile(lambda *a: body(kn, *a))(*make_inputs(kn))
        return body(lib, *make_inputs(lib))

    check(torch, compiled)


def consec(lib, *shape, dtype=None):
    """1, 2, 3, ... in `shape` (float32 unless `dtype`)."""
    n = int(np.prod(shape))
    return lib.arange(1, n + 1, dtype=dtype or lib.float32).view(*shape)


def arr(lib, values, dtype=None):
    return lib.tensor(np.asarray(values), dtype=getattr(lib, dtype) if dtype else None)


class Idx:
    """An index tensor to build for each module: `values` as `dtype` (a name)."""

    def __init__(self, values, dtype="int64"):
        self.values, self.dtype = np.asarray(values), dtype

    def __repr__(self):
        return f"{self.dtype}{self.values.tolist()}"

    def build(self, lib):
        return lib.tensor(self.values, dtype=getattr(lib, self.dtype))


def build(lib, index):
    if isinstance(index, tuple):
        return tuple(build(lib, i) for i in index)
    return index.build(lib) if isinstance(index, Idx) else index


def L(*values):  # noqa: N802 -- PyTorch's LongTensor
    return Idx(values[0] if len(values) == 1 else values)


def B(*values):  # noqa: N802 -- a bool mask
    return Idx(values[0] if len(values) == 1 else values, "bool")


_ = slice(None)
E = Ellipsis
