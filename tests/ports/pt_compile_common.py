"""What the ports of PyTorch's dynamo tests (test_port_pt_compile*.py) share: a scenario run
on torch's tensors and on kiln's, eagerly and through one `kn.compile` of it called again
with each new set of inputs (new values, shapes, dtypes, Python arguments), so that the
compiled function's later calls (its cache hits and retraces) are compared too. Results are
compared with `pt_oracle.assert_same` (values, dtypes, shapes, Python values; dicts by their
items in order, named tuples by their fields), and so are the arguments after the call (what
the function changed in place); where torch raises, kiln raises an exception of that type.
"""

import numpy as np
from pt_oracle import Leaf, assert_same

import kiln as kn


class Call:
    """The arguments of one call of a scenario: `Call(*args, **kwargs)` (NumPy arrays become
    each module's tensors, also inside lists, tuples, named tuples and dicts)."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def convert(lib, x):
    """`x` with its NumPy arrays made tensors of `lib` (a `Leaf`: one that requires grad)."""
    if isinstance(x, Leaf):
        return lib.tensor(np.asarray(x), requires_grad=True)
    if isinstance(x, np.ndarray):
        return lib.tensor(x)
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)(*[convert(lib, v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(convert(lib, v) for v in x)
    if isinstance(x, dict):
        return {k: convert(lib, v) for k, v in x.items()}
    return x


def comparable(r):
    """A result as `assert_same` compares it: a dict as its (key, value) items in order, a
    named tuple as its type's name and fields, a NumPy scalar as its Python number."""
    if isinstance(r, dict):
        return [(k, comparable(v)) for k, v in r.items()]
    if isinstance(r, tuple) and hasattr(type(r), "_fields"):
        return (type(r).__name__, *(comparable(v) for v in r))
    if isinstance(r, (list, tuple)):
        return type(r)(comparable(v) for v in r)
    if isinstance(r, np.generic):  # (a NumPy scalar argument, the same on both sides)
        return r.item()
    return r


def outcome(lib, fn, call, compiled=None):
    """((result, the arguments after the call), None) or (None, the exception)."""
    try:
        args = [convert(lib, x) for x in call.args]
        kwargs = {k: convert(lib, v) for k, v in call.kwargs.items()}
        run = compiled if compiled is not None else (lambda *a, **k: fn(lib, *a, **k))
        result = run(*args, **kwargs)
        return (comparable(result), comparable([args, kwargs])), None
    except Exception as error:  # noqa: BLE001 -- the exception is the result compared
        return None, error


def check_calls(torch, fn, calls):
    """`fn(lib, *args)` on each of `calls` (`Call`s or argument tuples): torch's outcome is
    kiln's, eagerly and through one compiled function called with each in turn."""
    compiled = kn.compile(lambda *a, **k: fn(kn, *a, **k))
    for i, call in enumerate(calls):
        call = call if isinstance(call, Call) else Call(*call)
        want, torch_error = outcome(torch, fn, call)
        for mode in ("eager", "compiled"):
            got, kiln_error = outcome(kn, fn, call, compiled if mode == "compiled" else None)
            where = f"call {i}, {mode}"
            if torch_error is not None:
                assert isinstance(kiln_error, type(torch_error)), (
                    f"{where}: torch raised {type(torch_error).__name__}: {torch_error}; kiln: "
                    f"{type(kiln_error).__name__ if kiln_error else got}: {kiln_error}"
                )
                continue
            if kiln_error is not None:
                raise AssertionError(f"{where}: kiln raised") from kiln_error
            assert_same(got, want, where)
