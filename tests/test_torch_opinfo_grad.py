"""Gradients of kiln's ops against PyTorch's, over PyTorch's OpInfo database (skipped without
torch or its test helpers).

Every OpInfo that tests/test_torch_opinfo.py matches to a kiln function and that supports
autograd gets its first CPU sample inputs built with `requires_grad=True` for float64 (float32
where the OpInfo has no float64; complex128 too under `KILN_OPINFO_FULL=1`), and the same
call runs on torch and on kiln, through the OpInfo's `gradcheck_wrapper` (a Hermitian or
triangular input made so) and the sample's `output_process_fn_grad` (eigenvectors and singular
vectors by their moduli): every output that requires grad in torch gets a cotangent of fixed
random numbers (the same on both sides), kiln's `kn.autograd.backward` fills the inputs'
`.grad`, and they are compared with `torch.autograd.grad`'s: None where torch gives None, the
shape, dtype and values (relative 1e-6 of the largest entry in float64). Complex gradients
follow PyTorch's convention (the conjugate Wirtinger derivative) on both sides, so they
compare as they are. The first sample is also differentiated under `kn.compile`, with
`kn.autograd.grad` inside the compiled function.

Ops with random values (`RANDOM` of the value test) are left out. What still differs is data
here (`KNOWN`, fnmatch patterns over `op/dtype/sample/mode` with the reason), so the test fails
both on a new difference and on a listed one that went away. `KILN_OPINFO_FULL=1` runs more
samples, complex128 and every sample compiled; `python tests/test_torch_opinfo_grad.py` prints
every difference.
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import os
import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")
try:
    from test_torch_opinfo import (
        MATCHED,
        RANDOM,
        _as_kiln,
        _call,
        _flat,
        _key,
        _kiln_callable,
        _random,
        _replace,
        _to_kiln,
    )
except pytest.skip.Exception:
    raise
except Exception:  # noqa: BLE001 -- a torch build without its test helpers (or expecttest)
    pytest.skip("torch's OpInfo database does not import", allow_module_level=True)

FULL = bool(os.environ.get("KILN_OPINFO_FULL"))
SAMPLES = 6 if FULL else 2  # the first samples of each OpInfo and real dtype
COMPILED = SAMPLES if FULL else 1  # of which this many are also differentiated compiled

# op/dtype/sample/mode patterns -> why kiln's gradient still differs from PyTorch's
KNOWN: dict[str, str] = {
    "as_strided.partial_views/*/[12]/*": (
        "storage_offset= reading storage positions that are not the input's elements: kiln "
        "refuses to differentiate a view of elements outside its input (UsageError), and "
        "kn.compile refuses the call (as in the value test)"
    ),
    "as_strided_scatter/*/*/*": (
        "PyTorch 2.13's gradient for input is wrong: torch.autograd.gradcheck of its own "
        "as_strided_scatter fails (its Jacobian for input is nonzero on the positions src "
        "overwrites and zero elsewhere, the finite differences' complement); kiln's passes "
        "kn.autograd.gradcheck"
    ),
    # ord/p = 0, the count of nonzeros: PyTorch's norm, linalg.norm and linalg.vector_norm
    # give None (an undefined gradient) where its cdist and pdist give zeros; kiln's count is
    # on the tape with gradient 0 for all of them (a user's .grad is zeros, not None)
    "norm/*/1/*": "p=0: PyTorch's gradient is None, kiln's zeros (see above)",
    "linalg.norm/*/2/*": "ord=0: PyTorch's gradient is None, kiln's zeros (see above)",
    "linalg.norm.subgradients_at_zero/*/1/*": (
        "ord=0: PyTorch's gradient is None, kiln's zeros (see above)"
    ),
    "linalg.vector_norm/*/4/*": "ord=0: PyTorch's gradient is None, kiln's zeros (see above)",
    "linalg.slogdet/complex128/*/*": "complex determinants: kiln's slogdet is real only",
    "logdet/complex128/*/*": "complex determinants: kiln's slogdet is real only",
    "logsumexp/complex128/*/*": "kiln's logsumexp is real only (its max shift has no order)",
    "logcumsumexp/complex128/*/*": "kiln's logcumsumexp is real only",
    "nn.functional.conv*/complex128/*/*": "kiln's convolutions take real inputs only",
    "sparse.mm.reduce/*/samples/torch": "CSR inputs and reduce=: kiln's sparse tensors are COO",
    "tensor_split/*/1/compile": (
        "a traced 0-d sections tensor: its value is the number of pieces, and a compiled "
        "function has a fixed number of results (as in the value test)"
    ),
    "to_sparse/*/*/compile": "sparse tensors are eager-only: kiln's graphs hold strided ones",
    "zero_/*/*/compile": (
        "under kn.compile an in-place zero_ on an input leaves no path from the input to the "
        "result (a constant), so kn.autograd.grad gives None where eager kiln and PyTorch "
        "give zeros"
    ),
}


def _dtypes(op):
    """[(dtype, how many samples)]: float64 (float32 where the OpInfo lacks it), and
    complex128 (its first sample only unless FULL)."""
    try:
        supported = op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        return ()
    real = torch.float64 if torch.float64 in supported else torch.float32
    out = [(real, SAMPLES)] if real in supported else []
    if torch.complex128 in supported:
        out.append((torch.complex128, SAMPLES if FULL or not out else 1))
    return out


def _torch_tensors(x, out):
    """The torch tensors of x in the order `_to_kiln` converts them."""
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        for e in x:
            _torch_tensors(e, out)
    elif isinstance(x, dict):
        for e in x.values():
            _torch_tensors(e, out)
    return out


def _cotangent(t, seed):
    """Fixed random numbers of t's shape and dtype (NumPy's generator, seeded by position)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(tuple(t.shape))
    if t.dtype.is_complex:
        w = w + 1j * rng.standard_normal(tuple(t.shape))
    return w.astype(str(t.dtype).split(".")[-1])


def _compare_grad(kg, tg):
    """None where kiln's gradient is PyTorch's, else what differs."""
    if tg is None and kg is None:
        return None
    if tg is None or kg is None:
        if (tg if kg is None else kg).numel() == 0:  # None and an empty gradient: nothing
            return None
        if tg is None:
            return "a gradient where PyTorch gives None"
        return "None where PyTorch gives a gradient"
    if not isinstance(kg, kn.Tensor):
        return f"type {type(kg).__name__}"
    if kg.is_sparse:
        kg = kg.to_dense()
    if tg._is_zerotensor():  # PyTorch's gradient of a constant function, known to be 0
        tg = torch.zeros(tg.shape, dtype=tg.dtype)
    if tg.layout != torch.strided:
        tg = tg.to_dense()
    k, t = np.asarray(kg.detach().numpy()), tg.detach().resolve_conj().numpy()
    if k.dtype != t.dtype or k.shape != t.shape:
        return f"{k.dtype}{list(k.shape)} vs {t.dtype}{list(t.shape)}"
    if t.size == 0:
        return None
    scale = max(1.0, float(np.nanmax(np.abs(t), initial=0.0)))
    tol = 1e-6 if t.dtype in (np.float64, np.complex128) else 1e-4
    if np.allclose(k, t, rtol=tol, atol=tol * scale, equal_nan=True):
        return None
    err = np.nanmax(np.abs(k.astype(np.complex128) - t))
    return f"values (max error {err:.3g}, largest entry {scale:.3g})"


def _kiln_op(op):
    fn, method = _kiln_callable(op)
    return lambda x, *args, **kwargs: _call(fn, method, x, args, kwargs)


def _outputs(out, process):
    return _flat(process(out))


def run_sample(op, sample, compiled) -> dict | None:
    """{mode: what differs} for one sample; None where PyTorch has no gradient to compare."""
    tleaves = _torch_tensors((sample.input, sample.args, sample.kwargs), [])
    tins = [t for t in tleaves if t.requires_grad]
    if not tins:
        return None
    try:
        with torch.enable_grad():
            touts = _outputs(
                op.gradcheck_wrapper(op, sample.input, *sample.args, **sample.kwargs),
                sample.output_process_fn_grad,
            )
        diff = [  # the outputs to differentiate (an empty one carries no gradient)
            i
            for i, o in enumerate(touts)
            if isinstance(o, torch.Tensor) and o.requires_grad and o.numel()
        ]
        if not diff:
            return None
        ws = [_cotangent(touts[i], 7 + i) for i in diff]
        unique = list({id(t): t for t in tins}.values())
        tgrads = torch.autograd.grad(
            [touts[i] for i in diff],
            unique,
            [torch.from_numpy(w) for w in ws],
            allow_unused=True,
        )
        tgrad = {id(t): g for t, g in zip(unique, tgrads)}
    except Exception:  # noqa: BLE001 -- PyTorch cannot differentiate this sample
        return None
    kop, kwrap = _kiln_op(op), _as_kiln(op.gradcheck_wrapper)
    # the kiln inputs (one kiln tensor for each torch tensor, however often it is passed)
    leaves = []
    tree = _to_kiln((sample.input, sample.args, sample.kwargs), leaves, grad=True)
    first = {}
    for t, k in zip(tleaves, leaves):
        first.setdefault(id(t), k)
    leaves = [first[id(t)] for t in tleaves]
    tree = _replace(tree, iter(leaves))
    picks = [i for i, t in enumerate(tleaves) if t.requires_grad and first[id(t)] is leaves[i]]
    kins = [leaves[i] for i in picks]
    want = [tgrad[id(tleaves[i])] for i in picks]
    out = {}
    try:
        kx, kargs, kkwargs = tree
        kouts = _outputs(kwrap(kop, kx, *kargs, **kkwargs), sample.output_process_fn_grad)
        why = _outputs_differ(kouts, touts, diff)
        if why is None:
            for k in kins:
                if not k.is_leaf:
                    k.retain_grad()
            kn.autograd.backward([kouts[i] for i in diff], [kn.tensor(w) for w in ws])
            why = _grads_differ([k.grad for k in kins], want)
    except Exception as e:  # noqa: BLE001
        why = f"raised {type(e).__name__}: {str(e)[:100]}"
    if why is not None:
        out["eager"] = why
    if not compiled:
        return out

    def traced(*ts):
        x, args, kwargs = _replace(tree, iter(ts))
        outs = _outputs(kwrap(kop, x, *args, **kwargs), sample.output_process_fn_grad)
        return kn.autograd.grad(
            [outs[i] for i in diff],
            [ts[i] for i in picks],
            [kn.tensor(w) for w in ws],
            allow_unused=True,
        )

    fresh = [kn.tensor(k.detach().numpy(), requires_grad=k.requires_grad) for k in leaves]
    if any(not k.is_leaf for k in leaves):  # views of a larger storage: as in the eager run
        fresh = leaves
    try:
        why = _grads_differ(list(kn.compile(traced)(*fresh)), want)
    except Exception as e:  # noqa: BLE001
        why = f"raised {type(e).__name__}: {str(e)[:100]}"
    if why is not None:
        out["compile"] = why
    return out


def _outputs_differ(kouts, touts, diff):
    if len(kouts) != len(touts):
        return f"{len(kouts)} outputs vs {len(touts)}"
    for i in diff:
        if not isinstance(kouts[i], kn.Tensor):
            return f"output {i}: {type(kouts[i]).__name__}"
        if not kouts[i].requires_grad:
            return f"output {i} does not require grad"
    return None


def _grads_differ(got, want):
    if len(got) != len(want):
        return f"{len(got)} gradients vs {len(want)}"
    for j, (k, t) in enumerate(zip(got, want)):
        why = _compare_grad(k, t)
        if why is not None:
            return f"input {j}: {why}"
    return None


@functools.cache
def sweep_op(key) -> tuple[dict, set]:
    """({op/dtype/sample/mode: what differs}, the op/dtype/sample/mode keys run) for one
    OpInfo."""
    op = next(o for o in GRAD_OPS if _key(o) == key)
    found, ran = {}, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype, count in _dtypes(op):
            dname = str(dtype).split(".")[-1]
            compiled = COMPILED if FULL or key in COMPILED_KEYS else 0
            if dtype.is_complex and not FULL:
                compiled = 0
            try:
                samples = op.sample_inputs("cpu", dtype, requires_grad=True)
                i = 0
                while i < count:
                    sample = next(samples, None)
                    if sample is None:
                        break
                    if _random(op, sample):
                        continue
                    got = run_sample(op, sample, i < compiled)
                    if got is None:  # nothing to differentiate: the next sample
                        continue
                    ran.update(
                        f"{key}/{dname}/{i}/{m}" for m in ("eager", "compile")[: 1 + (i < compiled)]
                    )
                    for mode, why in got.items():
                        found[f"{key}/{dname}/{i}/{mode}"] = why
                    i += 1
            except Exception as e:  # noqa: BLE001 -- torch cannot build its own samples
                found[f"{key}/{dname}/samples/torch"] = f"{type(e).__name__}: {e}"[:100]
                ran.add(f"{key}/{dname}/samples/torch")
    return found, ran


def _grad_op(op) -> bool:
    return op.supports_autograd and not any(fnmatch.fnmatchcase(op.name, p) for p in RANDOM)


GRAD_OPS = [op for op in MATCHED if _grad_op(op)]
KEYS = sorted({_key(op) for op in GRAD_OPS})
COMPILED_KEYS = set(KEYS[::2])  # the default run compiles every other OpInfo's first sample


def _listed(key):
    return next((p for p in KNOWN if fnmatch.fnmatchcase(key, p)), None)


@pytest.mark.parametrize("key", KEYS)
def test_kiln_gradients_are_pytorchs_except_where_listed(key):
    found, _ = sweep_op(key)
    unexpected = {k: v for k, v in found.items() if not _listed(k)}
    assert not unexpected, f"new gradient differences from PyTorch: {unexpected}"


def test_every_listed_gradient_difference_still_exists():
    found = [k for key in KEYS for k in sweep_op(key)[0]]
    ran = [k for key in KEYS for k in sweep_op(key)[1]]
    stale = [
        p
        for p in KNOWN
        if any(fnmatch.fnmatchcase(k, p) for k in ran)
        and not any(fnmatch.fnmatchcase(k, p) for k in found)
    ]
    assert not stale, f"fixed: remove from KNOWN: {stale}"


if __name__ == "__main__":
    total, differing = 0, collections.Counter()
    for key in KEYS:
        found, ran = sweep_op(key)
        total += len({k.rsplit("/", 1)[0] for k in ran})
        for k, why in sorted(found.items()):
            print(f"{k}\t{why}", flush=True)
            differing["listed" if _listed(k) else "new"] += 1
    print(f"{len(GRAD_OPS)} OpInfos with autograd checked, {total} samples")
    print(dict(differing))
