"""PyTorch's own `nn.init` tests (test/nn/test_init.py) as an oracle: the exact results
(calculate_gain, fans, constant/eye/dirac, errors, dtypes, what is returned) compared with
torch 2.13 scenario by scenario (pt_oracle.py's comparison); the random initializers, whose
draws differ from torch's, by their statistics: both libraries' draws of a large tensor must
have the mean, standard deviation and bounds that torch's formula gives (each within a
tolerance of a few standard errors), and a `generator=` must make them repeat.
"""

import math
import warnings

import numpy as np
import pytest
from port_common import to_numpy
from pt_oracle import Scenarios

import kiln as kn

SCENARIOS = Scenarios()
case = SCENARIOS.case

# -- calculate_gain and fans ----------------------------------------------------------------


@case("calculate_gain_values")
def _(lib):
    g = lib.nn.init.calculate_gain
    names = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]  # fmt: skip
    return ([g(n) for n in names], g("leaky_relu", 0.2), g("leaky_relu", 1), g("leaky_relu", 0),
            g("linear", 3.0), g("leaky_relu", None))  # fmt: skip


@case("calculate_gain_unknown_refused")
def _(lib):
    return lib.nn.init.calculate_gain("gelu")


@case("calculate_gain_bool_slope_refused")
def _(lib):
    return lib.nn.init.calculate_gain("leaky_relu", True)


@case("calculate_gain_str_slope_refused")
def _(lib):
    return lib.nn.init.calculate_gain("leaky_relu", "0.1")


@case("fans_of_each_rank")
def _(lib):
    fans = lib.nn.init._calculate_fan_in_and_fan_out
    return [fans(lib.empty(*s)) for s in ((3, 5), (4, 3, 7), (6, 2, 3, 5), (2, 4, 1, 3, 2),
                                          (0, 4), (4, 0, 3))]  # fmt: skip


@case("fans_of_1d_refused")
def _(lib):
    return lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(5))


@case("kaiming_mode_refused")
def _(lib):
    return lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="fan_avg")


@case("kaiming_nonlinearity_refused")
def _(lib):
    return lib.nn.init.kaiming_normal_(lib.empty(3, 4), nonlinearity="softplus")


@case("xavier_of_1d_refused")
def _(lib):
    return lib.nn.init.xavier_uniform_(lib.empty(5))


@case("kaiming_of_0d_refused")
def _(lib):
    return lib.nn.init.kaiming_normal_(lib.tensor(1.0))


@case("kaiming_zero_element_is_a_no_op")
def _(lib):
    t = lib.empty(0, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.nn.init.kaiming_uniform_(t)
    return out is t, out.shape, [str(w.message) for w in caught]


# -- deterministic initializers -------------------------------------------------------------


@case("constant_ones_zeros_return_the_tensor")
def _(lib):
    init, t = lib.nn.init, lib.empty(2, 3)
    same = [f(t) is t for f in (init.zeros_, init.ones_, lambda x: init.constant_(x, 2.5))]
    i = lib.empty(2, 2, dtype=lib.int64)
    return same, t, init.constant_(i, 3), init.ones_(lib.empty(2, dtype=lib.float64))


@case("eye_values")
def _(lib):
    init = lib.nn.init
    return (init.eye_(lib.empty(3, 5)), init.eye_(lib.empty(4, 2)),
            init.eye_(lib.empty(2, 2, dtype=lib.float64)))  # fmt: skip


@case("eye_of_3d_refused")
def _(lib):
    return lib.nn.init.eye_(lib.empty(2, 2, 2))


@case("dirac_values")
def _(lib):
    d = lib.nn.init.dirac_
    return (d(lib.empty(3, 2, 3)), d(lib.empty(2, 3, 3, 3)), d(lib.empty(4, 2, 3), groups=2),
            d(lib.empty(2, 2, 1, 2, 3)), d(lib.full((6, 1, 2), 7.0), groups=3))  # fmt: skip


@case("dirac_of_2d_refused")
def _(lib):
    return lib.nn.init.dirac_(lib.empty(3, 3))


@case("dirac_groups_not_dividing_refused")
def _(lib):
    return lib.nn.init.dirac_(lib.empty(5, 2, 3), groups=2)


@case("orthogonal_of_1d_refused")
def _(lib):
    return lib.nn.init.orthogonal_(lib.empty(4))


@case("sparse_of_3d_refused")
def _(lib):
    return lib.nn.init.sparse_(lib.empty(3, 4, 5), 0.5)


@case("constant_coerces_as_fill")
def _(lib):
    c = lib.nn.init.constant_
    return (c(lib.zeros(3, dtype=lib.int64), 2.7), c(lib.zeros(3, dtype=lib.int64), -2.7),
            lib.nn.init.ones_(lib.zeros(2, dtype=lib.bool)), c(lib.zeros(2), lib.tensor(3.0)),
            c(lib.zeros(2, dtype=lib.complex64), 1 + 2j), c(lib.zeros(2, dtype=lib.float16), 6e4),
            c(lib.zeros(2, dtype=lib.float16), float("inf")))  # fmt: skip


for _dtype, _val in (("uint8", 300), ("int8", -129), ("float16", 1e6), ("float16", 100000),
                     ("int32", 2.0**40), ("float32", 1e39)):  # fmt: skip

    @case(f"constant_overflow_{_dtype}_{_val:g}_refused")
    def _(lib, dtype=_dtype, val=_val):
        return lib.nn.init.constant_(lib.zeros(2, dtype=getattr(lib, dtype)), val)


@case("init_of_leaf_requiring_grad")
def _(lib):
    # under no_grad inside: the leaf stays a leaf, no history is recorded
    w = lib.empty(3, 4, requires_grad=True)
    out = lib.nn.init.constant_(w, 0.5)
    lib.nn.init.uniform_(w)
    return out is w, w.is_leaf, w.grad_fn is None, w.requires_grad


@case("uniform_bounds_and_int_tensor")
def _(lib):
    lib.manual_seed(0)
    t = lib.nn.init.uniform_(lib.empty(1000), -3, -2)
    return bool((t >= -3).all() and (t < -2).all()), t.dtype


@case("trunc_normal_within_bounds")
def _(lib):
    lib.manual_seed(0)
    t = lib.nn.init.trunc_normal_(lib.empty(20000), mean=1.0, std=2.0, a=-0.5, b=1.5)
    return bool((t >= -0.5).all() and (t <= 1.5).all()), t.dtype


@case("sparse_zero_count_per_column")
def _(lib):
    lib.manual_seed(0)
    t = lib.nn.init.sparse_(lib.empty(10, 6), sparsity=0.35)
    return (t == 0).sum(0), t.dtype  # ceil(0.35 * 10) zeros in each column


@case("orthogonal_gain_and_shapes")
def _(lib):
    lib.manual_seed(0)
    init, out = lib.nn.init, []
    for shape in ((3, 5), (5, 3), (4, 2, 3)):
        q = init.orthogonal_(lib.empty(*shape), gain=2.0).reshape(shape[0], -1)
        rows, cols = q.shape
        gram = q @ q.T if rows <= cols else q.T @ q
        out.append(lib.allclose(gram, 4 * lib.eye(min(rows, cols)), atol=1e-4))
    return out


@case("deprecated_names_warn")
def _(lib):
    init = lib.nn.init
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        init.uniform(lib.empty(2))
        init.constant(lib.empty(2), 1.0)
        init.xavier_normal(lib.empty(2, 2))
    return [w.category.__name__ for w in caught]


@case("uniform_of_int_tensor_refused")
def _(lib):
    return lib.nn.init.uniform_(lib.empty(3, dtype=lib.int64))


@case("normal_of_int_tensor_refused")
def _(lib):
    return lib.nn.init.normal_(lib.empty(3, dtype=lib.int32))


@case("uniform_reversed_range_refused")
def _(lib):
    return lib.nn.init.uniform_(lib.empty(3), 3.0, 2.0)


@case("normal_negative_std_refused")
def _(lib):
    return lib.nn.init.normal_(lib.empty(3), 0.0, -1.0)


@case("eye_and_dirac_of_int_tensors")
def _(lib):
    init = lib.nn.init
    return init.eye_(lib.empty(2, 3, dtype=lib.int64)), init.dirac_(
        lib.empty(2, 3, 3, dtype=lib.int32)
    )


@case("zero_element_initializers")
def _(lib):
    init, out = lib.nn.init, []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for f in (init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_,
                  init.trunc_normal_, init.uniform_):  # fmt: skip
            t = lib.empty(0, 4)
            out.append((f(t) is t, tuple(f(t).shape)))
    return out, sorted({str(w.message) for w in caught})


@case("half_and_double_draws_keep_dtype")
def _(lib):
    lib.manual_seed(0)
    init = lib.nn.init
    return [f(lib.empty(4, 3, dtype=d)).dtype for d in (lib.float16, lib.float64, lib.bfloat16)
            for f in (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_normal_,
                      init.kaiming_uniform_)] + [init.orthogonal_(lib.empty(4, 3,
                                                 dtype=lib.float64)).dtype]  # fmt: skip


for _kind in (
    "trunc_normal_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
):

    @case(f"{_kind}of_int_tensor_refused")
    def _(lib, kind=_kind):
        return getattr(lib.nn.init, kind)(lib.empty(3, 4, dtype=lib.int64))


@case("sparse_of_int_tensor_refused")
def _(lib):
    return lib.nn.init.sparse_(lib.empty(3, 4, dtype=lib.int64), 0.5)


@case("tensor_normal_of_int_refused")
def _(lib):
    return lib.empty(3, dtype=lib.int16).normal_()


@case("trunc_normal_equal_bounds")
def _(lib):
    return lib.nn.init.trunc_normal_(lib.empty(4), a=0.5, b=0.5)


@case("trunc_normal_reversed_bounds_refused")
def _(lib):
    return lib.nn.init.trunc_normal_(lib.empty(4), a=1.0, b=-1.0)


@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name):
    SCENARIOS.check(torch, name, "eager")


# -- statistics of the random initializers --------------------------------------------------

SHAPE = (200, 100, 3)  # fan_in 300, fan_out 600


def _expected(kind, **kw):
    """(mean, std, bound) of torch's documented distribution on SHAPE (bound None: none)."""
    fan_in, fan_out = 300, 600
    if kind == "uniform_":
        a, b = kw.get("a", 0.0), kw.get("b", 1.0)
        return (a + b) / 2, (b - a) / math.sqrt(12), max(abs(a), abs(b))
    if kind == "normal_":
        return kw.get("mean", 0.0), kw.get("std", 1.0), None
    if kind.startswith("xavier"):
        std = kw.get("gain", 1.0) * math.sqrt(2.0 / (fan_in + fan_out))
        return 0.0, std, std * math.sqrt(3) if kind == "xavier_uniform_" else None
    if kind.startswith("kaiming"):
        fan = fan_in if kw.get("mode", "fan_in") == "fan_in" else fan_out
        a, nl = kw.get("a", 0), kw.get("nonlinearity", "leaky_relu")
        gain = (
            math.sqrt(2.0 / (1 + a * a))
            if nl == "leaky_relu"
            else {"relu": math.sqrt(2), "tanh": 5 / 3}[nl]
        )
        std = gain / math.sqrt(fan)
        return 0.0, std, std * math.sqrt(3) if kind == "kaiming_uniform_" else None
    if kind == "trunc_normal_":  # standard normal truncated to [-2, 2], scaled
        z, phi = math.erf(2 / math.sqrt(2)), math.exp(-2) / math.sqrt(2 * math.pi)
        return 0.0, math.sqrt(1 - 2 * 2 * phi / z), 2.0
    raise AssertionError(kind)


STATS = [
    ("uniform_", {"a": -2.0, "b": 5.0}),
    ("uniform_", {}),
    ("normal_", {"mean": 3.0, "std": 0.5}),
    ("xavier_uniform_", {"gain": 2.0}),
    ("xavier_normal_", {}),
    ("kaiming_uniform_", {"a": math.sqrt(5)}),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", {"nonlinearity": "tanh"}),
    ("kaiming_normal_", {"a": 0.2, "mode": "fan_out"}),
    ("trunc_normal_", {}),
]


@pytest.mark.parametrize("kind,kw", STATS, ids=[f"{k}{sorted(kw)}" for k, kw in STATS])
def test_random_init_statistics(torch, kind, kw):
    mean, std, bound = _expected(kind, **kw)
    n = math.prod(SHAPE)
    for lib in (torch, kn):
        lib.manual_seed(3)
        t = getattr(lib.nn.init, kind)(lib.empty(*SHAPE), **kw)
        a = to_numpy(t).astype(np.float64)
        assert str(t.dtype).endswith("float32")
        # standard errors: std / sqrt(n) for the mean, ~std / sqrt(2n) for the std
        assert abs(a.mean() - mean) < 5 * std / math.sqrt(n), (lib.__name__, a.mean(), mean)
        assert abs(a.std() - std) < 5 * std / math.sqrt(n / 2) + 1e-7, (lib.__name__, a.std(), std)
        if bound is not None:
            assert np.abs(a - mean).max() <= bound * (1 + 1e-6), (lib.__name__, bound)


@pytest.mark.parametrize("kind", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_",
                                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
                                  "orthogonal_", "sparse_"])  # fmt: skip
def test_generator_repeats_the_draw(torch, kind):
    """`generator=` draws from that generator: the same seed gives the same values, the global
    stream is left alone (torch's behaviour, checked on both)."""
    args = (0.3,) if kind == "sparse_" else ()
    for lib in (torch, kn):
        fn = getattr(lib.nn.init, kind)
        draws = []
        for _ in range(2):
            g = lib.Generator().manual_seed(7)
            lib.manual_seed(1)
            draws.append(to_numpy(fn(lib.empty(6, 5), *args, generator=g)).copy())
            draws.append(to_numpy(lib.rand(3)).copy())  # the global stream, after
        np.testing.assert_array_equal(draws[0], draws[2], err_msg=lib.__name__)
        np.testing.assert_array_equal(draws[1], draws[3], err_msg=lib.__name__)
        if kind == "sparse_":  # torch picks its zeros from the global stream (randperm)
            continue
        lib.manual_seed(1)
        np.testing.assert_array_equal(to_numpy(lib.rand(3)), draws[1], err_msg=lib.__name__)


@pytest.mark.parametrize("kind", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_",
                                  "kaiming_normal_", "orthogonal_"])  # fmt: skip
def test_global_stream_is_a_generator(torch, kind):
    """torch's test_trunc_normal_generator: a generator seeded s draws what `manual_seed(s)`
    then draws, and a draw without one moves the global stream on (both libraries)."""
    for lib in (torch, kn):
        fn = getattr(lib.nn.init, kind)
        g = lib.Generator().manual_seed(42)
        a = fn(lib.empty(5, 3), generator=g)
        lib.manual_seed(42)
        b = fn(lib.empty(5, 3))
        after = to_numpy(lib.rand(2))
        lib.manual_seed(42)
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg=lib.__name__)
        assert not np.array_equal(after, to_numpy(lib.rand(2))), lib.__name__
