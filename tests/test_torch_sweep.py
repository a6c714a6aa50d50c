"""The PyTorch oracle sweep (skipped without torch): every case of tests/torch_sweep_cases.py
called on torch and on kiln, eagerly, in graph mode (placeholders and `kn.function`) and under
`kn.compile`, comparing values, dtypes, shapes, return types and exception types.

What still differs is data here (`KNOWN`, patterns over `family/case/mode` with the reason),
so the test fails both on a new difference and on a listed one that went away (then the list
is shortened). `SUPERSET` lists the calls PyTorch refuses and kiln answers (NumPy's
behaviour, which breaks no code ported from PyTorch). Run `python tests/test_torch_sweep.py`
to print every difference.
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

from torch_sweep_cases import CASES  # noqa: E402

# family/case/mode patterns -> why it still differs from PyTorch
# (trace of bools, kiln's last entry, is refused as PyTorch's now: test_port_pt_linalg_more.py)
KNOWN: dict = {
    # torch raises NotImplementedError at `x.abs()` of bools; kiln computes it (NumPy's bool
    # loop, the short path's) and then refuses addcdiv's integer division (a RuntimeError)
    "tensor-ops/addcdiv-b/eager": "abs of bools is computed, where PyTorch refuses it",
}

# calls PyTorch refuses and kiln answers -> why
SUPERSET = {
    "reduce/mean-[ib]*/*": "mean of integers gives the default float (NumPy's); PyTorch refuses",
    "reduce/[sv][ta][dr]-[ib]*/*": "std/var of integers give floats (NumPy's); PyTorch refuses",
    "tensor-ops/[sv][ta][dr]_mean-[ib]*/*": "std/var of integers (NumPy's)",
    "tensor-ops/std-unbiased-[ib]*/*": "std/var of integers (NumPy's)",
    "tensor-ops/var-correction-[ib]*/*": "std/var of integers (NumPy's)",
    "tensor-ops/mean-int-*/*": "mean of integers (NumPy's)",
    "reduce/logsumexp-*/*": "logsumexp without dim (all dims), and of integers and bools",
    "reduce/prod-*-tuple/*": "prod over a tuple of dims (NumPy's)",
    "reduce/median-*/*": "median of bools and float16 (sorted)",
    "reduce/*-b-*/*": "reductions of bools PyTorch has no kernel for",
    "reduce/*-f16-*/*": "reductions of float16 PyTorch's CPU has no kernel for",
    "unary*/*-b-*/*": "elementwise functions of bools (NumPy's)",
    "unary*/frac-[iu]*/*": "frac of integers is 0 (NumPy's)",
    "binary*/*/*": "PyTorch's CPU has no kernel for these dtypes (bool, float16, ints)",
    "operator/*/*": "// and % of bools, and ops on bools (NumPy's)",
    "tensor-ops/round-decimals-*/*": "round(decimals=) of integers",
    "tensor-ops/*-b/*": "ops on bools (NumPy's)",
    "errors/*/*": "a wider input accepted",
    "tensor-ops/lerp-*/*": "lerp of mixed float dtypes (promoted, as other binary ops)",
    "tensor-ops/*softmax*-i64/*": "softmax of integers gives the default float",
    "tensor-ops/addcdiv-i64/*": "addcdiv of integers (true division gives floats)",
    "tensor-ops/cdist-i64/*": "cdist of integers (PyTorch: floats only)",
}


def _np(x):
    if not isinstance(x, torch.Tensor):
        return x
    if x.dtype == torch.bfloat16:  # NumPy has no bfloat16: through float32, exactly
        return x.detach().float().numpy().astype(kn.bfloat16)
    return x.detach().numpy()


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flat(e)]
    return [x]


def _compare(kv, tv):
    """None where kiln's result is PyTorch's, else what differs."""
    if isinstance(tv, torch.Tensor):
        if not isinstance(kv, (kn.Tensor, np.ndarray, np.generic)):
            return f"type {type(kv).__name__} vs Tensor"
        k = np.asarray(kv.numpy() if isinstance(kv, kn.Tensor) else kv)
        t = _np(tv)
        if t.dtype != k.dtype or t.shape != k.shape:
            return f"{k.dtype}{list(k.shape)} vs {t.dtype}{list(t.shape)}"
        if t.dtype.kind == "f":
            tol = 1e-2 if t.dtype == np.float16 else 1e-5
            ok = np.allclose(k.astype(np.float64), t.astype(np.float64), tol, tol, equal_nan=True)
        else:
            ok = np.array_equal(k, t)
        return None if ok else "values"
    if isinstance(tv, torch.Size):
        return None if type(kv).__name__ == "Size" and tuple(kv) == tuple(tv) else f"{kv} vs {tv}"
    if isinstance(tv, (tuple, list)):
        if not isinstance(kv, (tuple, list)) or len(kv) != len(tv):
            return f"{type(kv).__name__} vs {type(tv).__name__} of {len(tv)}"
        if hasattr(tv, "_fields") and getattr(kv, "_fields", None) != tv._fields:
            return f"fields {getattr(kv, '_fields', None)} vs {tv._fields}"
        return next((r for r in map(_compare, kv, tv) if r), None)
    if isinstance(tv, torch.dtype):
        return None if str(kv).split(".")[-1] == str(tv).split(".")[-1] else f"{kv} vs {tv}"
    if isinstance(tv, str):
        tv = tv.replace("torch.", "kiln.")
    if type(kv) is not type(tv):
        return f"type {type(kv).__name__} vs {type(tv).__name__}"
    if isinstance(tv, float):
        return None if np.isclose(kv, tv, rtol=1e-5, equal_nan=True) else f"{kv!r} vs {tv!r}"
    return None if kv == tv else f"{kv!r} vs {tv!r}"


def _graph(fn, arrays):
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        return _flat(kn.function(xs, _flat(fn(kn, *xs)))(*arrays))


def _compiled(fn, arrays):
    return _flat(kn.compile(lambda *ts: fn(kn, *ts))(*[kn.tensor(a.copy()) for a in arrays]))


def run_case(fn, arrays, modes) -> dict:
    """{mode: what differs} for one case ("superset": PyTorch raised and kiln did not)."""
    try:
        want, t_error = fn(torch, *[torch.from_numpy(a.copy()) for a in arrays]), None
    except Exception as e:  # noqa: BLE001 -- any exception PyTorch raises is the oracle
        want, t_error = None, e
    try:
        got, k_error = fn(kn, *[kn.tensor(a.copy()) for a in arrays]), None
    except Exception as e:  # noqa: BLE001
        got, k_error = None, e
    if t_error is not None:
        if k_error is None:
            return {"superset": f"PyTorch raised {type(t_error).__name__}"}
        if not isinstance(k_error, type(t_error)):
            return {"eager": f"{type(k_error).__name__}, PyTorch's {type(t_error).__name__}"}
        return {}
    out = {}
    if k_error is not None:
        out["eager"] = f"raised {type(k_error).__name__}: {str(k_error)[:80]}"
    elif (why := _compare(got, want)) is not None:
        out["eager"] = why
    wanted = _flat(want)
    if not all(isinstance(w, torch.Tensor) for w in wanted):
        return out
    for mode, run in (("graph", _graph), ("compile", _compiled)):
        if mode not in modes:
            continue
        try:
            results = run(fn, arrays)
        except Exception as e:  # noqa: BLE001
            out[mode] = f"raised {type(e).__name__}: {str(e)[:80]}"
            continue
        why = next((r for r in map(_compare, results, wanted) if r), None)
        if why is not None or len(results) != len(wanted):
            out[mode] = why or "number of outputs"
    return out


@functools.cache
def sweep(family=None) -> dict:
    """{family/case/mode: what differs} over the cases (of one family)."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fam, name, fn, arrays, modes in CASES:
            if family is None or fam == family:
                for mode, why in run_case(fn, arrays, modes).items():
                    found[f"{fam}/{name}/{mode}"] = why
    return found


def _listed(key, table):
    return next((p for p in table if fnmatch.fnmatchcase(key, p)), None)


FAMILIES = sorted({c[0] for c in CASES})


@pytest.mark.parametrize("family", FAMILIES)
def test_kiln_answers_as_pytorch_except_where_listed(family):
    found = sweep(family)
    unexpected = {k: v for k, v in found.items() if "/superset" not in k if not _listed(k, KNOWN)}
    assert not unexpected, f"new differences from PyTorch: {unexpected}"
    wider = [k for k in found if k.endswith("/superset") and not _listed(k, SUPERSET)]
    assert not wider, f"calls PyTorch refuses and kiln answers, not listed: {wider}"


def test_every_listed_difference_still_exists():
    found = {k: v for family in FAMILIES for k, v in sweep(family).items()}
    stale = [p for p in KNOWN if not any(fnmatch.fnmatchcase(k, p) for k in found)]
    assert not stale, f"fixed: remove from KNOWN: {stale}"


if __name__ == "__main__":
    counts = collections.Counter(c[0] for c in CASES)
    differing = collections.Counter()
    for key, why in sorted(sweep().items()):
        print(f"{key}\t{why}")
        if not key.endswith("/superset"):
            differing[key.split("/")[0]] += 1
    for fam in FAMILIES:
        print(f"{fam}: {differing[fam]} differences in {counts[fam]} cases")
