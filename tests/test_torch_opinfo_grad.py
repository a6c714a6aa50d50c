"""Gradients of kiln's ops against PyTorch's, over PyTorch's OpInfo database (skipped without
torch or its test helpers).

Every OpInfo that tests/test_torch_opinfo.py matches to a kiln function and that supports
autograd gets its first two CPU sample inputs built with `requires_grad=True` in float64
(float32 where the OpInfo has no float64), and its first in complex128 where it takes complex
values. The same call runs on torch and on kiln, through the OpInfo's `gradcheck_wrapper` (a
Hermitian or triangular input made so) and the sample's `output_process_fn_grad`
(eigenvectors and singular vectors by their moduli): every nonempty output that requires grad
in torch gets a cotangent of fixed random numbers (the same on both sides), kiln's
`kn.autograd.backward` fills the inputs' `.grad`, and they are compared with
`torch.autograd.grad`'s: None where torch gives None (an empty gradient counts as None), the
shape, dtype and values (1e-6 relative, and of the largest entry, in float64). Complex
gradients follow PyTorch's convention (the conjugate Wirtinger derivative) on both sides, so
they compare as they are. Every other OpInfo's first float sample is also differentiated under
`kn.compile`, with `kn.autograd.grad` inside the compiled function.

Ops with random values (`RANDOM` of the value test) are left out. What still differs is data
here (`KNOWN`, fnmatch patterns over `op/dtype/sample/mode` with the reason), so the test fails
both on a new difference and on a listed one that went away. `KILN_OPINFO_FULL=1` runs six
samples of each dtype, every one compiled; `python tests/test_torch_opinfo_grad.py` prints
every difference (run it with the worktree on PYTHONPATH). `KINKS`, at the end, checks the
subgradients PyTorch picks at ties and kinks, which random samples do not reach.
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import os

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
        quiet_samples,
        stale_patterns,
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
    "linalg.householder_product/*/4/*": (
        "tau empty (no reflection, the result the identity's columns): PyTorch's gradient of "
        "A is None, kiln's zeros (the result requires grad in both)"
    ),
    "sparse.mm.reduce/*/samples/torch": (
        "CSR samples (the sweep converts strided ones); kiln reduces by sum and mean only"
    ),
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
    """Fixed random numbers of t's shape and dtype (NumPy's generator, seeded by position),
    a torch tensor."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(tuple(t.shape))
    if t.dtype.is_complex:
        w = w + 1j * rng.standard_normal(tuple(t.shape))
    return torch.from_numpy(w).to(t.dtype)


def _kiln_of(w):
    """The kiln tensor of the torch tensor w (bfloat16 through float32, exactly)."""
    if w.dtype == torch.bfloat16:
        return kn.tensor(w.float().numpy()).to(kn.bfloat16)
    return kn.tensor(w.numpy())


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
            ws,
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
            kn.autograd.backward([kouts[i] for i in diff], [_kiln_of(w) for w in ws])
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
            [_kiln_of(w) for w in ws],
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
    with quiet_samples():
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
    stale = stale_patterns(KNOWN, sweep_op, KEYS)
    assert not stale, f"fixed: remove from KNOWN: {stale}"


# -- ties and kinks ----------------------------------------------------------------------------
# The OpInfo samples are random, so they rarely sit where a function has no derivative. These
# calls do: equal values (max, amax, maximum, median, sort, pooling), zeros (relu, abs, norms,
# sqrt, pow) and the bounds of clamp and the piecewise activations, where the gradient is the
# library's choice of subgradient. kiln makes PyTorch's choice (amax shares the cotangent evenly
# among ties, max(dim) gives it to the index it returns, relu'(0) = 0, clamp passes it at the
# bounds ...); every gradient is compared with torch 2.13's, `KNOWN_KINKS` listing where not.
_X = np.array([[0.0, 1.0, 1.0, -1.0], [2.0, 2.0, 0.0, 2.0], [-1.0, -1.0, 3.0, 3.0]])
_Y = np.array([[0.0, 1.0, 2.0, -1.0], [2.0, 0.0, 0.0, 3.0], [-1.0, 1.0, 3.0, 3.0]])
KINKS = {  # name -> f(library, x, y), run with library torch and kiln
    "relu": lambda L, x, y: L.nn.functional.relu(x),
    "relu6": lambda L, x, y: L.nn.functional.relu6(x * 6),
    "leaky_relu": lambda L, x, y: L.nn.functional.leaky_relu(x, 0.1),
    "elu": lambda L, x, y: L.nn.functional.elu(x),
    "celu": lambda L, x, y: L.nn.functional.celu(x),
    "hardtanh": lambda L, x, y: L.nn.functional.hardtanh(x),
    "hardsigmoid": lambda L, x, y: L.nn.functional.hardsigmoid(x * 3),
    "hardswish": lambda L, x, y: L.nn.functional.hardswish(x * 3),
    "hardshrink": lambda L, x, y: L.nn.functional.hardshrink(x, 1.0),
    "softshrink": lambda L, x, y: L.nn.functional.softshrink(x, 1.0),
    "threshold": lambda L, x, y: L.nn.functional.threshold(x, 1.0, 0.5),
    "abs": lambda L, x, y: x.abs(),
    "sgn": lambda L, x, y: x.sign(),
    "clamp": lambda L, x, y: x.clamp(-1.0, 2.0),
    "clamp_min": lambda L, x, y: x.clamp(min=1.0),
    "clamp_tensor": lambda L, x, y: L.clamp(x, min=y * 0 - 1, max=y),
    "maximum": lambda L, x, y: L.maximum(x, y),
    "minimum": lambda L, x, y: L.minimum(x, y),
    "fmax": lambda L, x, y: L.fmax(x, y),
    "fmin": lambda L, x, y: L.fmin(x, y),
    "max_all": lambda L, x, y: x.max(),
    "min_all": lambda L, x, y: x.min(),
    "amax": lambda L, x, y: L.amax(x, 1),
    "amin": lambda L, x, y: L.amin(x, 1),
    "amax_all": lambda L, x, y: L.amax(x),
    "max_dim": lambda L, x, y: x.max(1)[0],
    "min_dim": lambda L, x, y: x.min(1)[0],
    "max_dim0": lambda L, x, y: x.max(0)[0],
    "median": lambda L, x, y: x.median(),
    "median_dim": lambda L, x, y: x.median(1)[0],
    "nanmedian": lambda L, x, y: x.nanmedian(),
    "kthvalue": lambda L, x, y: x.kthvalue(2, 1)[0],
    "mode": lambda L, x, y: x.mode(1)[0],
    "sort": lambda L, x, y: x.sort(1)[0],
    "topk": lambda L, x, y: x.topk(2, 1)[0],
    "cummax": lambda L, x, y: L.cummax(x, 1)[0],
    "cummin": lambda L, x, y: L.cummin(x, 1)[0],
    "logcumsumexp": lambda L, x, y: L.logcumsumexp(x, 1),
    "max_pool1d": lambda L, x, y: L.nn.functional.max_pool1d(x[None], 2, 1),
    "max_pool2d": lambda L, x, y: L.nn.functional.max_pool2d(x[None, None], 2, 1),
    "adaptive_max_pool1d": lambda L, x, y: L.nn.functional.adaptive_max_pool1d(x[None], 2),
    "norm_inf": lambda L, x, y: L.linalg.vector_norm(x, float("inf")),
    "norm_2_zero": lambda L, x, y: L.linalg.vector_norm(x * 0),
    "norm_1": lambda L, x, y: L.linalg.vector_norm(x, 1),
    "dist": lambda L, x, y: L.dist(x, y),
    "cdist": lambda L, x, y: L.cdist(x, y),
    "pdist": lambda L, x, y: L.nn.functional.pdist(x),
    "pairwise": lambda L, x, y: L.nn.functional.pairwise_distance(x, y, eps=0.0),
    "l1_loss": lambda L, x, y: L.nn.functional.l1_loss(x, y),
    "smooth_l1": lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, beta=1.0),
    "huber": lambda L, x, y: L.nn.functional.huber_loss(x, y, delta=1.0),
    "hinge": lambda L, x, y: L.nn.functional.hinge_embedding_loss(x, y.sign()),
    "margin_ranking": lambda L, x, y: L.nn.functional.margin_ranking_loss(x[0], y[0], x[1].sign()),
    "sqrt0": lambda L, x, y: (x * x).sqrt(),
    "pow_0_0": lambda L, x, y: (x * 0) ** y.abs(),
    "pow_x_0": lambda L, x, y: x ** 0.0,
    "xlogy": lambda L, x, y: L.xlogy(x * 0, y),
    "round": lambda L, x, y: L.round(x),
    "frac": lambda L, x, y: L.frac(x),
    "fmod": lambda L, x, y: L.fmod(x, 2.0),
    "remainder": lambda L, x, y: L.remainder(x, 2.0),
    "atan2": lambda L, x, y: L.atan2(x * 0, y * 0),
    "hypot": lambda L, x, y: L.hypot(x * 0, y * 0),
    "copysign": lambda L, x, y: L.copysign(x, y),
    "where_eq": lambda L, x, y: L.where(x > y, x, y),
    "std_const": lambda L, x, y: (x * 0 + 1).std(1),
    "logsumexp_inf": lambda L, x, y: L.logsumexp(x * 0 - float("inf"), 1),
    "softmax": lambda L, x, y: L.softmax(x, 1),
    "log_softmax": lambda L, x, y: L.log_softmax(x, 1),
    "prod_zero": lambda L, x, y: x.prod(1),
    "prod_all_zero": lambda L, x, y: (x * 0).prod(1),
    "cumprod_zero": lambda L, x, y: L.cumprod(x, 1),
    "renorm": lambda L, x, y: L.renorm(x, 2, 0, 1.0),
    "nan_to_num": lambda L, x, y: L.nan_to_num(x / x),
    "trace": lambda L, x, y: x[:, :3].trace(),
    "det_singular": lambda L, x, y: L.linalg.det(x[:, :3] * 0 + 1),  # rank 1: cofactors 0
    "det_rank_n_minus_1": lambda L, x, y: L.linalg.det(
        x[:2, :2] - x[:2, :2].detach() + L.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=x.dtype)
    ),
    "unique_sum": lambda L, x, y: x.sum(),
}  # fmt: skip
KNOWN_KINKS = {
    "kthvalue": (
        "ties: the index each returns among equal values is the implementation's (the value "
        "test's TIED), and the gradient goes to that element"
    ),
    "topk": (
        "ties: the index each returns among equal values is the implementation's (the value "
        "test's TIED), and the gradient goes to that element"
    ),
    "det_rank_n_minus_1": (
        "an exactly singular matrix of rank n-1: kiln's det gradient is the cofactor matrix "
        "([[4, -2], [-2, 1]], the derivative: tests/test_det_cofactor_grad.py); PyTorch gives "
        "zeros, which its own gradcheck refutes (pytorch/pytorch#104675)"
    ),
}


def _kink_differs(name):
    """None where kiln's gradients of KINKS[name] at (_X, _Y) are PyTorch's, else what
    differs."""
    f = KINKS[name]
    tx, ty = (torch.tensor(v, requires_grad=True) for v in (_X, _Y))
    tout = f(torch, tx, ty)
    w = np.random.default_rng(0).standard_normal(tuple(tout.shape))
    want = torch.autograd.grad(tout, [tx, ty], torch.from_numpy(w), allow_unused=True)
    kx, ky = (kn.tensor(v, requires_grad=True) for v in (_X, _Y))
    try:
        kout = f(kn, kx, ky)
        kout.backward(kn.tensor(w))
    except Exception as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {str(e)[:100]}"
    return _grads_differ([kx.grad, ky.grad], list(want))


@pytest.mark.parametrize("name", sorted(KINKS))
def test_gradients_at_ties_and_kinks_are_pytorchs(name):
    why = _kink_differs(name)
    if name in KNOWN_KINKS:
        assert why is not None, f"fixed: remove {name} from KNOWN_KINKS"
    else:
        assert why is None, f"{name}: {why}"


def test_complex_addcmul_takes_a_float_value():
    """addcmul of complex tensors with value=3.14 (it was truncated to 3, in the value and
    the gradients; the OpInfo's complex samples with a value come after the first)."""
    rng = np.random.default_rng(1)
    parts = [rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) for _ in range(4)]
    w = parts.pop()
    ts = [torch.tensor(p, requires_grad=True) for p in parts]
    ks = [kn.tensor(p, requires_grad=True) for p in parts]
    tout, kout = torch.addcmul(*ts, value=3.14), kn.addcmul(*ks, value=3.14)
    np.testing.assert_allclose(kout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    want = torch.autograd.grad(tout, ts, torch.from_numpy(w))
    assert _grads_differ(list(kn.autograd.grad(kout, ks, kn.tensor(w))), list(want)) is None


@pytest.mark.parametrize("equal_nan", [False, True])
def test_complex_isclose_compares_both_parts(equal_nan):
    """isclose of complex values (found beside the sweep: it cast them to float32, dropping
    the imaginary parts, so 1+1j was close to 1+2j); expected values from torch 2.13."""
    a = np.array([1 + 1j, 1 + 1j, np.nan + 0j, np.inf + 0j, 1 + 1j])
    b = np.array([1 + 2j, 1 + 1j + 1e-9, np.nan + 0j, np.inf + 0j, 1 + np.nan * 1j])
    got = kn.isclose(kn.tensor(a), kn.tensor(b), equal_nan=equal_nan).tolist()
    assert got == torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan).tolist()


if __name__ == "__main__":
    total, differing = 0, collections.Counter()
    for key in KEYS:
        found, ran = sweep_op(key)
        total += len({k.rsplit("/", 1)[0] for k in ran})
        for k, why in sorted(found.items()):
            print(f"{k}\t{why}", flush=True)
            differing["listed" if _listed(k) else "new"] += 1
    for name in sorted(KINKS):
        if (why := _kink_differs(name)) is not None:
            print(f"kink {name}\t{why}", flush=True)
            differing["listed" if name in KNOWN_KINKS else "new"] += 1
    print(f"{len(GRAD_OPS)} OpInfos with autograd checked, {total} samples, {len(KINKS)} kinks")
    print(dict(differing))
