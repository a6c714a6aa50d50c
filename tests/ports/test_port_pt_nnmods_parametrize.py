"""PyTorch's own parametrization tests (test/nn/test_parametrization.py) as an oracle: each
behaviour they check written once against a module argument `lib`, run with torch and with
kiln, comparing values, gradients, names, state_dict keys, classes and exception types
(pt_oracle.py's comparison). The modules get NumPy weights in both libraries (`_linear`), so
no draw differs; orthogonal and spectral_norm, whose results depend on a draw (spectral_norm's
first `u`) or on the factorization, are compared by their properties.

Expected values: torch 2.13 (the oracle).
"""

import copy

import numpy as np
import pytest
from pt_oracle import Scenarios, assert_same, outcome

import kiln as kn

f32 = np.float32
W = (np.arange(12, dtype=f32).reshape(3, 4) - 5) / 4
B = np.array([0.5, -1.0, 2.0], f32)
X = np.linspace(-1, 1, 8, dtype=f32).reshape(2, 4)


def _linear(lib, w=W, b=B):
    m = lib.nn.Linear(w.shape[1], w.shape[0])
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(b))
    return m


def _param_classes(lib):
    """Parametrizations as classes of `lib.nn.Module` (each library its own)."""
    nn = lib.nn

    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

        def right_inverse(self, x):
            return x / 2

    class Skew(nn.Module):
        def forward(self, x):
            a = x.triu(1)
            return a - a.T

    class Split(nn.Module):  # two originals: forward(a, b), right_inverse gives both
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x * 0.25, x * 0.75

    class Counted(nn.Module):
        calls = 0

        def forward(self, x):
            Counted.calls += 1
            return x + 1

    class Reshape(nn.Module):  # changes the shape: only with unsafe=True
        def forward(self, x):
            return x.reshape(-1)

    class ToDouble(nn.Module):  # changes the dtype
        def forward(self, x):
            return x.double()

    class Flip(nn.Module):
        def forward(self, x):
            return x.flip(0)

        def right_inverse(self, x):
            return x.flip(0)

    return dict(Symmetric=Symmetric, Double=Double, Skew=Skew, Split=Split, Counted=Counted,
                Reshape=Reshape, ToDouble=ToDouble, Flip=Flip)  # fmt: skip


SCENARIOS = Scenarios()
case = SCENARIOS.case


def _P(lib):
    return lib.nn.utils.parametrize, _param_classes(lib)


@case("register_basics")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib, W[:, :3])
    P.register_parametrization(m, "weight", c["Symmetric"]())
    return (m.weight, m.parametrizations.weight.original, type(m).__name__,
            P.type_before_parametrizations(m).__name__, P.is_parametrized(m),
            P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias"),
            sorted(n for n, _ in m.named_parameters()), list(m.state_dict()),
            isinstance(m, lib.nn.Linear), type(m.parametrizations).__name__,
            type(m.parametrizations.weight).__name__)  # fmt: skip


@case("register_gradient_reaches_original", X)
def _(lib, x):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    m(x).pow(2).sum().backward()
    return m.parametrizations.weight.original.grad, m.bias.grad, m.weight.requires_grad


@case("register_right_inverse_at_registration")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    # the original is right_inverse(weight): the parametrized weight is the one given
    return m.weight, m.parametrizations.weight.original


@case("assign_calls_right_inverse")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    m.weight = lib.ones(3, 4)
    return m.weight, m.parametrizations.weight.original


@case("assign_without_right_inverse_refused")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib, W[:, :3])
    P.register_parametrization(m, "weight", c["Symmetric"]())
    m.weight = lib.ones(3, 3)
    return m.weight


@case("chained_parametrizations")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    P.register_parametrization(m, "weight", c["Flip"]())
    pl = m.parametrizations.weight
    m.weight = lib.arange(12.0).reshape(3, 4)  # right inverses in reverse order
    return (m.weight, pl.original, len(pl), [type(p).__name__ for p in pl],
            list(m.state_dict()))  # fmt: skip


@case("tuple_right_inverse_gives_originals")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Split"]())
    pl = m.parametrizations.weight
    return (m.weight, pl.original0, pl.original1, hasattr(pl, "original"),
            sorted(m.state_dict()))  # fmt: skip


@case("tuple_originals_remove_leave_false_refused")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Split"]())
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    return m.weight


@case("remove_leave_parametrized")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    m.weight = lib.ones(3, 4)
    P.remove_parametrizations(m, "weight")
    return (m.weight, type(m).__name__, P.is_parametrized(m), hasattr(m, "parametrizations"),
            isinstance(m.weight, lib.nn.Parameter), list(m.state_dict()))  # fmt: skip


@case("remove_restore_original")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    m.weight = lib.ones(3, 4)
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    return m.weight, type(m).__name__


@case("remove_one_of_two_tensors")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    P.register_parametrization(m, "bias", c["Double"]())
    P.remove_parametrizations(m, "weight")
    return (P.is_parametrized(m), P.is_parametrized(m, "bias"), type(m).__name__,
            list(m.state_dict()), m.bias)  # fmt: skip


@case("remove_unparametrized_refused")
def _(lib):
    P, _ = _P(lib)
    P.remove_parametrizations(_linear(lib), "weight")


@case("register_missing_name_refused")
def _(lib):
    P, c = _P(lib)
    P.register_parametrization(_linear(lib), "nonexistent", c["Double"]())


@case("register_shape_change_refused")
def _(lib):
    P, c = _P(lib)
    P.register_parametrization(_linear(lib), "weight", c["Reshape"]())


@case("register_dtype_change_refused")
def _(lib):
    P, c = _P(lib)
    P.register_parametrization(_linear(lib), "weight", c["ToDouble"]())


@case("unsafe_allows_shape_and_dtype_change")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Reshape"](), unsafe=True)
    P.register_parametrization(m, "weight", c["ToDouble"](), unsafe=True)
    return m.weight, m.parametrizations.weight.unsafe


@case("cached_computes_once")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    counted = c["Counted"]
    P.register_parametrization(m, "weight", counted())
    counted.calls = 0
    with P.cached():
        a, b = m.weight, m.weight
        inside = counted.calls
    m.weight  # noqa: B018 -- outside: computed again
    return a, a is b, inside, counted.calls


@case("parametrize_buffer")
def _(lib):
    P, c = _P(lib)
    m = lib.nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_mean", c["Double"]())
    m.running_mean = lib.tensor([1.0, 2.0, 3.0])
    return (m.running_mean, m.parametrizations.running_mean.original, list(m.state_dict()),
            m.parametrizations.running_mean.original.requires_grad)  # fmt: skip


@case("load_state_dict_into_parametrized")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    state = {k: v * 3 for k, v in m.state_dict().items()}
    m.load_state_dict(state)
    return m.weight, m.bias


@case("deepcopy_parametrized")
def _(lib):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    d = copy.deepcopy(m)
    d.weight = lib.zeros(3, 4)
    return m.weight, d.weight, type(d).__name__, P.is_parametrized(d)


@case("transfer_parametrizations_and_params")
def _(lib):
    P, c = _P(lib)
    a, b = _linear(lib), _linear(lib, W * 0, B * 0)
    P.register_parametrization(a, "weight", c["Double"]())
    P.transfer_parametrizations_and_params(a, b)
    return b.weight, P.is_parametrized(b, "weight"), b.parametrizations.weight.original


@case("forward_uses_parametrization", X)
def _(lib, x):
    P, c = _P(lib)
    m = _linear(lib)
    P.register_parametrization(m, "weight", c["Double"]())
    return m(x)


def _bad_parametrizations(lib):
    """torch's test_errors_(un)parametrized_tensor_parametrization's broken parametrizations."""
    nn = lib.nn

    class WrongNumberParams(nn.Module):
        def forward(self, x, y, z):
            return x + y + z

        def right_inverse(self, w):
            return w, lib.zeros_like(w)

    class WrongRightInverse(nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, z):
            return None

    class WrongRightInverseSequence(nn.Module):
        def forward(self, x, y):
            return x

        def right_inverse(self, z):
            return None, z

    class ChangeDtypeInverse(nn.Module):
        def forward(self, x):
            return x.float()

        def right_inverse(self, w):
            return w.bool()

    class NotTensor(nn.Module):
        def forward(self, x):
            return 2

    class ChangeDtype(nn.Module):
        def forward(self, x):
            return x.bool()

    class ChangeShape(nn.Module):
        def forward(self, x):
            return x[:-1]

    class ChangeDtypeMulti(nn.Module):
        def forward(self, x, y):
            return (x + y).bool()

        def right_inverse(self, w):
            return w, w + 1

    class WrongReturn(nn.Module):
        def forward(self, x):
            return x, x

    class WrongReturnInverse(nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x, x

    return [WrongNumberParams, WrongRightInverse, WrongRightInverseSequence,
            ChangeDtypeInverse, NotTensor, ChangeDtype, ChangeShape, ChangeDtypeMulti,
            WrongReturn, WrongReturnInverse]  # fmt: skip


def _refusal(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- its kind is the result
        return [k.__name__ for k in (ValueError, TypeError, RuntimeError) if isinstance(e, k)]
    return "accepted"


@case("registration_errors_leave_module_alone")
def _(lib):
    P, c = _P(lib)
    out = []
    for parametrized in (False, True):
        m = _linear(lib)
        if parametrized:
            P.register_parametrization(m, "weight", c["Flip"]())
        for cls in _bad_parametrizations(lib):
            kind = _refusal(lambda cls=cls: P.register_parametrization(m, "weight", cls()))
            n = len(m.parametrizations.weight) if P.is_parametrized(m) else 0
            out.append((cls.__name__, kind, P.is_parametrized(m), n))
        out.append(m.weight)
    return out


@case("sequence_of_one_right_inverse")
def _(lib):
    P = lib.nn.utils.parametrize

    class SequenceLen1(lib.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, w):
            return (w,)

    m = _linear(lib)
    P.register_parametrization(m, "weight", SequenceLen1())
    pl = m.parametrizations.weight
    return hasattr(pl, "original0"), hasattr(pl, "original1"), hasattr(pl, "original"), m.weight


@case("right_inverse_raising_keeps_original")
def _(lib):
    P = lib.nn.utils.parametrize

    class Skew(lib.nn.Module):
        def forward(self, x):
            a = x.triu(1)
            return a - a.T

        def right_inverse(self, x):
            if not lib.allclose(x, -x.T, atol=1e-6):
                raise ValueError("The matrix is not skew-symmetric.")
            return x.triu(1)

    m = _linear(lib, W[:, :3], B)
    with lib.no_grad():
        m.weight.copy_(Skew()(m.weight))
    P.register_parametrization(m, "weight", Skew())
    x = lib.arange(9.0).reshape(3, 3)
    kind = _refusal(lambda: setattr(m, "weight", x))
    m.weight = x - x.T
    return kind, m.weight, m.parametrizations.weight.original


# -- weight_norm, orthogonal, spectral_norm -------------------------------------------------


@case("weight_norm_parametrization", X)
def _(lib, x):
    m = lib.nn.utils.parametrizations.weight_norm(_linear(lib))
    pl = m.parametrizations.weight
    out = m(x)
    out.sum().backward()
    return (out, pl.original0, pl.original1, list(m.state_dict()), pl.original0.grad,
            pl.original1.grad)  # fmt: skip


@case("weight_norm_dim_1_and_none")
def _(lib):
    wn = lib.nn.utils.parametrizations.weight_norm
    a, b = wn(_linear(lib), dim=1), wn(_linear(lib), dim=None)
    return (a.parametrizations.weight.original0, a.weight,
            b.parametrizations.weight.original0, b.weight)  # fmt: skip


@case("weight_norm_loads_old_state_dict_names")
def _(lib):
    old = lib.nn.utils.weight_norm(_linear(lib))  # the hook form: weight_g, weight_v
    new = lib.nn.utils.parametrizations.weight_norm(_linear(lib, W * 2))
    new.load_state_dict(old.state_dict())
    return new.weight, sorted(old.state_dict())


@case("weight_norm_remove")
def _(lib):
    m = lib.nn.utils.parametrizations.weight_norm(_linear(lib))
    lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
    return m.weight, list(m.state_dict())


def _orth_props(lib, m):
    w = m.weight.detach()
    n = min(w.shape)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return (lib.allclose(gram, lib.eye(n), atol=1e-5), w, w.dtype,
            sorted(m.state_dict()), type(m.parametrizations.weight[0]).__name__)  # fmt: skip


for _map in ("matrix_exp", "cayley", "householder"):
    for _shape in ((3, 4), (4, 3), (4, 4)):

        @case(f"orthogonal_{_map}_{_shape[0]}x{_shape[1]}")
        def _(lib, orthogonal_map=_map, shape=_shape):
            lib.manual_seed(0)
            w = np.linspace(-1, 1, shape[0] * shape[1], dtype=f32).reshape(shape) ** 3
            m = _linear(lib, w, np.zeros(shape[0], f32))
            m = lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
            return _orth_props(lib, m)


@case("orthogonal_default_map_and_no_trivialization")
def _(lib):
    orth = lib.nn.utils.parametrizations.orthogonal
    full_rank = W + np.eye(3, 4, dtype=f32)  # (W's rank is 2: its QR's last row is free)
    a = orth(_linear(lib, full_rank))
    b = orth(_linear(lib, full_rank), use_trivialization=False)
    return (_orth_props(lib, a), _orth_props(lib, b), a.parametrizations.weight[0].shape,
            sorted(b.state_dict()))  # fmt: skip


@case("orthogonal_assign_orthogonal_matrix")
def _(lib):
    m = lib.nn.utils.parametrizations.orthogonal(_linear(lib, W[:, :3], B))
    q = lib.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    m.weight = q
    return m.weight


@case("orthogonal_of_1d_refused")
def _(lib):
    return lib.nn.utils.parametrizations.orthogonal(_linear(lib), "bias")


@case("orthogonal_unknown_map_refused")
def _(lib):
    return lib.nn.utils.parametrizations.orthogonal(_linear(lib), orthogonal_map="qr")


@case("spectral_norm_parametrization", X)
def _(lib, x):
    lib.manual_seed(0)
    m = lib.nn.utils.parametrizations.spectral_norm(_linear(lib), n_power_iterations=20)
    m.eval()  # no power iteration at this call: the one of the registration
    top = lib.linalg.matrix_norm(m.weight.detach(), 2)
    pl = m.parametrizations.weight
    return (abs(top.item() - 1) < 1e-3, sorted(m.state_dict()), pl[0]._u.shape,
            pl[0]._v.shape, pl[0].n_power_iterations, pl[0].dim, pl.original)  # fmt: skip


@case("spectral_norm_dim_and_conv")
def _(lib):
    lib.manual_seed(0)
    conv = lib.nn.ConvTranspose2d(2, 3, 2)  # its default dim is 1
    m = lib.nn.utils.parametrizations.spectral_norm(conv, n_power_iterations=30)
    w = m.weight.detach()
    top = lib.linalg.matrix_norm(w.transpose(0, 1).reshape(3, -1), 2)
    return abs(top.item() - 1) < 1e-3, m.parametrizations.weight[0].dim, w.shape


@case("spectral_norm_training_updates_u")
def _(lib):
    lib.manual_seed(0)
    m = lib.nn.utils.parametrizations.spectral_norm(_linear(lib))
    u0 = m.parametrizations.weight[0]._u.clone()
    m.weight  # noqa: B018 -- training: one power iteration per access
    changed_train = not lib.equal(u0, m.parametrizations.weight[0]._u)
    m.eval()
    u1 = m.parametrizations.weight[0]._u.clone()
    m.weight  # noqa: B018
    return changed_train, lib.equal(u1, m.parametrizations.weight[0]._u)


@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name):
    SCENARIOS.check(torch, name, "eager")


def test_compiled_forward_of_parametrized_module(torch):
    """A parametrized module's forward under kn.compile: the parametrization runs in the
    program, gradients reach the original (torch's eager values, the oracle)."""
    want, _ = outcome(torch, _compiled_case, [X])
    m = _linear(kn)
    kn.nn.utils.parametrize.register_parametrization(m, "weight", _param_classes(kn)["Flip"]())
    kn.nn.utils.parametrizations.weight_norm(m, "bias", dim=None)

    def step(x):
        out = m(x)
        return out, kn.autograd.grad(out.pow(2).sum(), m.parametrizations.weight.original)

    got = kn.compile(step)(kn.tensor(X))
    assert_same(got, want)


def _compiled_case(lib, x):
    m = _linear(lib)
    lib.nn.utils.parametrize.register_parametrization(m, "weight", _param_classes(lib)["Flip"]())
    lib.nn.utils.parametrizations.weight_norm(m, "bias", dim=None)
    out = m(x)
    return out, lib.autograd.grad(out.pow(2).sum(), m.parametrizations.weight.original)
