"""PyTorch's own reduction tests (test_reductions.py) as an oracle: their hand-written edge
cases, each written here as a scenario of its own (pt_oracle.py runs it on torch and on kiln,
eagerly and under `kn.compile`, and compares values, dtypes, shapes, index choices and
exception types). tests/test_torch_opinfo.py already runs the OpInfo samples of these ops;
these are the edges those samples miss: dim=None, (), negative and repeated dims, keepdim, 0-d
and zero-size inputs, identity values and the errors of empty max/argmax, dtype= and out= and
the accumulation dtypes, NaN and inf, ties, the variance's correction, quantiles.
test_port_pt_sort_select.py has the sort/search family's.

Expected values: torch 2.13 (the oracle). An index among equal values that PyTorch leaves
unspecified (kthvalue: its CPU selection algorithm's) is compared by the value it picks: those
scenarios return `input.gather(dim, indices)` instead of the indices. Float results agree
within rtol 1e-5 (a few dozen values summed in another order).
"""

import warnings

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios

nan, inf = float("nan"), float("inf")
f32 = np.float32

A = np.arange(12, dtype=f32).reshape(3, 4) - 5
I8 = np.array([[100, 100, -3], [7, 8, 9]], np.int8)
U8 = np.array([[200, 100, 3], [0, 8, 9]], np.uint8)
BOOL = np.array([[True, False, True], [True, True, True]])
EMPTY = np.zeros((0, 3), f32)
SCALAR = np.array(2.5, f32)
NANS = np.array([[1, nan, 3, nan], [4, 5, 6, 0], [nan, nan, nan, nan]], f32)
TIES = np.array([[3, 1, 3, 1], [2, 2, 2, 2], [0, 1, 0, 1]], f32)
INFS = np.array([[-inf, -inf], [inf, 1], [inf, inf], [-inf, 2], [inf, -inf]], f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- dims: None, int, negative, tuple, (), keepdim ------------------------------------------


@case("all_any_empty_dims_reduce_nothing", A)
def _(lib, x):
    # an empty dim list reduces no dim in all/any: each element's truth (sum reduces all)
    return (lib.all(x, ()), lib.any(x, (), keepdim=True), x.all(dim=[]), lib.sum(x, ()))


@case("all_any_empty_dims_uint8", U8)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, dim=()), lib.all(x, (0,)), lib.any(x, (0, 1))


@case("all_any_empty_dims_0d", SCALAR)
def _(lib, x):
    return lib.all(x, ()), lib.any(x, (), keepdim=True)


@case("dims_forms", A)
def _(lib, x):
    return (lib.sum(x, -1), lib.sum(x, (-1, 0), keepdim=True), lib.amax(x, ()),
            lib.mean(x, [1]), x.sum(dim=(0,), keepdim=True), lib.var(x, (0, 1)),
            lib.count_nonzero(x, (0, 1)), lib.logsumexp(x, (), keepdim=True),
            lib.std(x, dim=-2, keepdim=True), lib.norm(x, dim=(1, 0)))  # fmt: skip


@case("dims_repeated", A)
def _(lib, x):
    return lib.sum(x, (1, -1))


@case("dim_out_of_range", A)
def _(lib, x):
    return lib.amax(x, 2)


@case("scalar_dims", SCALAR)
def _(lib, x):
    return (lib.sum(x, 0), lib.amax(x, -1, keepdim=True), lib.max(x, 0), lib.argmax(x, 0),
            lib.mean(x, (0,)), lib.logsumexp(x, 0), lib.var(x, 0, correction=0),
            lib.cumsum(x, 0), lib.sort(x, 0), lib.topk(x, 1), lib.kthvalue(x, 1),
            lib.median(x, 0), lib.mode(x, -1), lib.aminmax(x, dim=0))  # fmt: skip


@case("scalar_topk_none", SCALAR)
def _(lib, x):
    return lib.topk(x, 0), lib.topk(x, 0, largest=False)


@case("scalar_median_dim_1", SCALAR)
def _(lib, x):
    return lib.median(x, 1)


@case("scalar_nanmedian_dim_minus_2", SCALAR)
def _(lib, x):
    return lib.nanmedian(x, -2)


@case("scalar_max_dim_1", SCALAR)
def _(lib, x):
    return lib.max(x, 1)


# -- zero-size inputs: identities and refusals ----------------------------------------------


@case("empty_identities", EMPTY)
def _(lib, x):
    return (lib.sum(x), lib.prod(x), lib.sum(x, 0), lib.prod(x, 0), lib.all(x), lib.any(x),
            lib.all(x, 0), lib.count_nonzero(x, 0), lib.logsumexp(x, 0), lib.norm(x),
            lib.nansum(x, 0), lib.amax(x, 1), lib.max(x, 1), lib.argmin(x, 1),
            lib.cumsum(x, 0), lib.cumprod(x, 1), lib.sort(x, 0), lib.topk(x, 0, 1),
            lib.prod(x.int()), lib.sum(x.to(lib.int8), 0))  # fmt: skip


@case("empty_means_are_nan", EMPTY)
def _(lib, x):
    return lib.mean(x), lib.mean(x, 0), lib.nanmean(x, 0), lib.var(x, 0), lib.std(x)


@case("empty_max", EMPTY)
def _(lib, x):
    return lib.max(x)


@case("empty_argmax", EMPTY)
def _(lib, x):
    return lib.argmax(x)


@case("empty_amax_along_empty_dim", EMPTY)
def _(lib, x):
    return lib.amax(x, 0)


@case("empty_max_along_empty_dim", EMPTY)
def _(lib, x):
    return lib.max(x, 0)


@case("empty_aminmax", EMPTY)
def _(lib, x):
    return lib.aminmax(x)


@case("empty_median", EMPTY)
def _(lib, x):
    return lib.median(x, 0)


@case("empty_mode", EMPTY)
def _(lib, x):
    return lib.mode(x, 0)


@case("empty_kthvalue", EMPTY)
def _(lib, x):
    return lib.kthvalue(x, 1, 0)


@case("empty_median_all", EMPTY)
def _(lib, x):
    return lib.median(x), lib.nanmedian(x), lib.median(x, 1), lib.mode(x, 1)


# -- dtypes: accumulation, dtype=, refusals -------------------------------------------------


@case("accumulation_dtypes", I8, U8, BOOL)
def _(lib, i8, u8, b):
    return (lib.sum(i8), lib.sum(u8, 1), lib.sum(b), lib.prod(i8, 0), lib.prod(b),
            lib.cumsum(i8, 1), lib.cumprod(u8, 1), lib.cumsum(b, 0), lib.nansum(i8),
            lib.sum(i8.int()), lib.sum(i8.long()), lib.sum(i8, dtype=lib.int8),
            lib.sum(u8, 0, dtype=lib.uint8), lib.prod(i8, 1, dtype=lib.int16),
            lib.sum(i8, dtype=lib.float64), lib.cumsum(i8, 1, dtype=lib.float32),
            lib.mean(i8, dtype=lib.float64), lib.mean(b, 0, dtype=lib.float32),
            lib.sum(b, dtype=lib.bool))  # fmt: skip


@case("truth_dtypes", I8, U8, BOOL, A)
def _(lib, i8, u8, b, x):
    return (lib.all(i8), lib.any(u8), lib.all(u8, 1), lib.any(b, 0), lib.all(x, 1),
            u8.all(), lib.any(x.half()), lib.count_nonzero(b, 0))  # fmt: skip


@case("half_accumulation", np.full(3000, 30, np.float16))
def _(lib, x):
    return lib.sum(x), lib.mean(x), lib.cumsum(x[:300], 0)[-1], lib.var(x)


@case("mean_of_ints", I8)
def _(lib, x):
    return lib.mean(x)


@case("mean_of_bools", BOOL)
def _(lib, x):
    return lib.mean(x, 0)


@case("mean_integer_dtype", A)
def _(lib, x):
    return lib.mean(x, dtype=lib.int64)


@case("var_of_ints", I8)
def _(lib, x):
    return lib.var(x)


@case("logsumexp_of_ints", I8, BOOL)
def _(lib, x, b):
    return lib.logsumexp(x, 1), lib.logsumexp(b, 0), lib.logcumsumexp(x.float(), 1)


@case("out_dtype_is_the_accumulation_dtype", np.array([[1.5, 2.7], [3.9, -0.5]], f32))
def _(lib, x):
    # sum/prod/cumsum into an out of another dtype compute in the out's dtype (the input cast
    # first: 1.5 + 2.7 into int64 is 1 + 2), as dtype=out.dtype would
    outs = [lib.empty(0, dtype=d) for d in (lib.int64, lib.int32, lib.bool, lib.float16)]
    return (lib.sum(x, 1, out=outs[0]), lib.prod(x, 1, out=outs[1]),
            lib.cumsum(x, 1, out=lib.empty(0, dtype=lib.int64)), lib.sum(x, 1, out=outs[2]),
            lib.sum(x, 0, out=outs[3]), lib.cumprod(x, 0, out=lib.empty(0, dtype=lib.int16)),
            lib.sum(x.int(), 1, out=lib.empty(0, dtype=lib.float32)))  # fmt: skip


@case("out_dtype_conflicts_with_dtype", A)
def _(lib, x):
    return lib.sum(x, 1, dtype=lib.float64, out=lib.empty(0, dtype=lib.float32))


@case("out_of_all_any_bool_or_uint8", np.array([[1.5, 0], [3.9, -0.5]], f32))
def _(lib, x):
    u8, u8b, b, b2 = (lib.empty(0, dtype=d) for d in (lib.uint8, lib.uint8, lib.bool, lib.bool))
    return (lib.all(x, 1, out=u8), lib.any(x, out=u8b), lib.all(x.to(lib.uint8), 0, out=b),
            lib.any(x.bool(), 1, out=b2))  # fmt: skip


@case("out_of_all_float", A)
def _(lib, x):
    return lib.all(x, 1, out=lib.empty(0, dtype=lib.float32))


# -- NaN and inf ---------------------------------------------------------------------------


@case("nan_propagation", NANS)
def _(lib, x):
    return (lib.max(x, 1), lib.min(x, 0), lib.amax(x, 1), lib.amin(x), lib.argmax(x, 1),
            lib.argmin(x), lib.max(x), lib.aminmax(x, dim=1), lib.sum(x, 1), lib.mean(x, 0),
            lib.cummax(x, 1), lib.cummin(x, 0), lib.median(x, 1), lib.median(x),
            lib.logsumexp(x, 1), lib.var(x, 0), lib.max(x, x.flip(0)))  # fmt: skip


@case("nan_ignoring", NANS)
def _(lib, x):
    return (lib.nansum(x, 1), lib.nanmean(x, 1), lib.nanmean(x), lib.nansum(x),
            lib.nanmedian(x), lib.nanmedian(x, 0).values, lib.nanmedian(x[:2], 1),
            lib.nanquantile(x, 0.5, dim=1), lib.quantile(x, 0.5, dim=1))  # fmt: skip


@case("infinities", INFS)
def _(lib, x):
    return (lib.logsumexp(x, 1), lib.logsumexp(x, 0), lib.sum(x, 1), lib.mean(x, 0),
            lib.var(x, 1), lib.std(x, 0), lib.max(x, 1), lib.argmin(x, 0),
            lib.logcumsumexp(x, 1), lib.norm(x, dim=1), lib.prod(x, 1),
            lib.nansum(x, 1))  # fmt: skip


@case(
    "logcumsumexp_complex_infinities",
    np.array([-inf + 4j, -inf + 1j, 1.2 + 2.1j, 1e10 + 1e20j, inf + 0j, inf + 1j, inf + 3j,
              nan + 2j]),
    np.array([complex(-inf, inf), complex(-inf, inf), -inf + 1j, 1.2 + 2.1j, complex(2.4, inf)]),
)  # fmt: skip
def _(lib, a, b):
    # a leading -inf + bj (exp of it is 0, whatever b) is -inf + 0j in the running sums
    return lib.logcumsumexp(a, 0), lib.logcumsumexp(b, 0), lib.logcumsumexp(a.flip(0)[1:], 0)


@case("inf_norm_gradients", Leaf.of([[1, nan, 3, nan], [4, -5, 5, 0], [inf, 1, -inf, 0]]))
def _(lib, x):
    # shared by the elements at the norm; 0 (not NaN) in a slice whose norm is NaN
    y = (lib.norm(x, inf, dim=1), lib.linalg.vector_norm(x, -inf, dim=0), lib.norm(x, inf),
         lib.dist(x, x.flip(0), inf))  # fmt: skip
    return y, lib.autograd.grad(sum(t.sum() for t in y), x)


@case("logsumexp_all_minus_inf", np.full((2, 3), -inf, f32))
def _(lib, x):
    return lib.logsumexp(x, 1), lib.logsumexp(x, (0, 1), keepdim=True)


# -- ties: the first index ------------------------------------------------------------------


@case("ties_first_index", TIES, np.array([[5, 1, 5, 1], [2, 2, 2, 2]]))
def _(lib, x, i):
    return (lib.argmax(x, 1), lib.argmin(x, 1), lib.max(x, 1), lib.min(x, 0), lib.argmax(x),
            lib.argmin(i, 1), lib.max(i, 0), lib.cummax(x, 1), lib.cummin(x, 1),
            lib.median(x, 1), lib.mode(x, 1), lib.mode(i, 1),
            lib.argmax(x, 1, keepdim=True))  # fmt: skip


@case("median_even_length_is_lower", np.array([[4, 1, 3, 2], [8, 6, 7, 5]], f32))
def _(lib, x):
    return (lib.median(x), lib.median(x, 1), lib.nanmedian(x, 0), lib.median(x[:, :3], 1),
            lib.quantile(x, 0.5, dim=1))  # fmt: skip


@case("median_of_a_nan_scalar", np.array(nan, f32), np.array([nan], f32))
def _(lib, scalar, one):
    return (lib.median(scalar), lib.median(scalar, 0), lib.nanmedian(scalar, 0),
            lib.median(one, 0, True), lib.nanmedian(one, 0, True))  # fmt: skip


@case("mode_counts", np.array([[1, 2, 2, 1, 3], [5, 5, 4, 4, 4], [7, 7, 7, 7, 7]], f32))
def _(lib, x):
    return lib.mode(x), lib.mode(x, 0), lib.mode(x.long(), 1, keepdim=True), lib.mode(x > 3)


@case("kthvalue", np.array([[3, 5, 4, 1, 1, 5], [0, -1, 1, -2, 2, 0]], f32))
def _(lib, x):
    v, i = lib.kthvalue(x, 3)
    w, j = lib.kthvalue(x, 2, 0, keepdim=True)
    return v, x.gather(1, i[:, None]), w, x.gather(0, j), lib.kthvalue(x[:, ::2], 2).values


@case("kthvalue_out_of_range", np.array([3, 5, 4], f32))
def _(lib, x):
    return lib.kthvalue(x, 4)


@case("quantile_interpolations", np.array([[4, 1, 3, 2], [nan, 0, 5, 6]], f32),
      np.array([0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1 / 3], f32))  # fmt: skip
def _(lib, x, q):
    out = [lib.quantile(x[0], 0.5), lib.quantile(x, q[3], dim=1)]
    for how in ("linear", "lower", "higher", "midpoint", "nearest"):
        out += [lib.quantile(x, q, dim=1, interpolation=how),
                lib.nanquantile(x, q, dim=1, keepdim=True, interpolation=how)]  # fmt: skip
    return out


@case("quantile_of_a_tensor_made_inside", np.array([0.0, 1.0], f32))
def _(lib, q):
    # (under kn.compile: a constant tensor made in the function, q an argument)
    return lib.quantile(lib.tensor(0.75), q), lib.nanquantile(lib.tensor([[0.5, 2.0]]), q, 1)


@case("quantile_unknown_interpolation", A)
def _(lib, x):
    return lib.quantile(x, 0.5, interpolation="bogus")


@case("quantile_of_empty_along_a_full_dim", EMPTY)
def _(lib, x):
    return lib.quantile(x, 0.5, dim=1)


@case("quantile_q_out_of_range", A, np.array([0.5, 1.2], f32))
def _(lib, x, q):
    return lib.quantile(x, q)


@case("quantile_q_of_another_dtype", A, np.array([0.5], np.float64))
def _(lib, x, q):
    return lib.quantile(x, q)


# -- variance ------------------------------------------------------------------------------


@case("variance_corrections", A)
def _(lib, x):
    return (lib.var(x), lib.var(x, 1, unbiased=False), lib.std(x, 0, correction=0),
            lib.var(x, 1, correction=2), lib.var(x, 0, correction=3),
            lib.var(x, 0, correction=5), lib.std(x, 1, correction=0.5),
            lib.var(x, False), lib.var(x, 1, False, True), lib.std(x, None, correction=0),
            lib.var_mean(x, 1), lib.std_mean(x, (0, 1), keepdim=True),
            lib.var_mean(x, -1, keepdim=True, correction=2), lib.var_mean(x, 0, False))  # fmt: skip


@case("variance_degenerate", np.array([3.0], f32), SCALAR)
def _(lib, one, scalar):
    return (lib.var(one), lib.std(one), lib.var(one, correction=0), lib.var(scalar),
            lib.std_mean(scalar), lib.var_mean(one, 0))  # fmt: skip


@case("variance_warns_of_no_degrees_of_freedom", np.ones((4, 3), f32))
def _(lib, x):
    # torch warns (UserWarning) where n - correction <= 0, and only there
    out = []
    for fn, kw in ((lib.var, {"correction": 3}), (lib.std, {}), (lib.var_mean, {"correction": 5}),
                   (lib.std_mean, {"correction": 2}), (lib.var, {"correction": 2})):  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(x if fn is not lib.std else x[:, :1], dim=-1, **kw)
        out.append(any("degrees of freedom is <= 0" in str(w.message) for w in caught))
    return out


@case("variance_complex", np.array([1 + 1j, 2 - 1j, -3j], np.complex64))
def _(lib, x):
    return lib.var(x), lib.std(x, correction=0), lib.var_mean(x)


# -- eager-only scenarios, and differences left (PyTorch's kernels' order of visiting) --------

# scenarios whose subject is eager Python behaviour
SCENARIOS.eager_only.update(
    {
        "variance_warns_of_no_degrees_of_freedom": "kn.compile records the warnings its trace "
        "raises and raises them again at each call, outside the function (a catch_warnings inside "
        "it sees none)",
    }
)

SCENARIOS.xfail.update(
    {
        "mode_with_nans": "PyTorch's CPU mode sorts each slice with `<`, which a NaN compares "
        "false with, so where NaNs end up (and so which value of a tie in counts comes first) is "
        "its std::sort's doing: [nan, 5, nan] has the mode nan there, 5 in kiln (NaNs last)",
        "var_mean_mean_with_infinities": "PyTorch's var_mean/std_mean compute the mean by "
        "Welford's updates, which turn an infinity met before another value into NaN ([inf, 1]: "
        "mean nan; [1, inf]: inf), where torch.mean and kiln give inf",
    }
)


@case("mode_with_nans", NANS)
def _(lib, x):
    return lib.mode(x, 0).values


@case("var_mean_mean_with_infinities", np.array([[inf, 1], [1, inf], [inf, inf]], f32))
def _(lib, x):
    return lib.var_mean(x, 1)[1], lib.std_mean(x, 1)[1]


# -- the test ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


def test_histogramdd_of_complex_or_integer_points_is_refused_as_torch(torch):
    import kiln

    # (kiln's message for complex points raised ArgumentTypeError from the dtype's name)
    for dtype in ("complex64", "int64"):
        for lib in (torch, kiln):
            with pytest.raises(NotImplementedError, match='"histogramdd" not implemented'):
                lib.histogramdd(lib.ones(3, 2, dtype=getattr(lib, dtype)), 3)
