"""`kn.nn.utils.parametrize`: a parametrized tensor computed from `original` on each read,
as torch 2.13's `torch.nn.utils.parametrize`: names and state_dict keys, values, gradients
reaching `original` (eager and under kn.compile, where the parametrized module is called
inside the compiled step), `right_inverse` at registration and on assignment, several
originals, `unsafe`, `cached()`, and `remove_parametrizations`. Expected values: torch 2.13
running the same code (the library is a parameter of each case)."""

import copy

import numpy as np
import pytest
from training_step import mse_step

import kiln as kn

W = (np.arange(9, dtype=np.float32).reshape(3, 3) - 4) / 10
X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
TOL = dict(rtol=1e-5, atol=1e-6)


def _torch():
    return pytest.importorskip("torch")


def _parametrizations(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT

        def right_inverse(self, a):
            return a.triu()

    class Scale(lib.nn.Module):  # a parametrization with a parameter of its own
        def __init__(self):
            super().__init__()
            self.s = lib.nn.Parameter(lib.tensor(1.5))

        def forward(self, x):
            return x * self.s

    class RankOne(lib.nn.Module):  # two originals
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, z):
            return z[:, 0], z[0, :] / z[0, 0]

    return Symmetric, Scale, RankOne


def _linear(lib, *parametrizations):
    m = lib.nn.Linear(3, 3)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
        m.bias.copy_(lib.tensor([0.1, -0.2, 0.3]))
    for p in parametrizations:
        lib.nn.utils.parametrize.register_parametrization(m, "weight", p)
    return m


def _as_numpy(t):
    return t.detach().numpy()


def test_names_values_and_gradients_match_torch():
    torch = _torch()
    results = []
    for lib in (kn, torch):
        symmetric, scale, _ = _parametrizations(lib)
        m = _linear(lib, symmetric(), scale())
        m(lib.tensor(X)).pow(2).sum().backward()
        entry = m.parametrizations.weight
        results.append(dict(
            cls=type(m).__name__,
            names=[n for n, _ in m.named_parameters()],
            keys=list(m.state_dict()),
            original=_as_numpy(entry.original),
            weight=_as_numpy(m.weight),
            grad=entry.original.grad.numpy(),
            scale_grad=entry[1].s.grad.numpy(),
        ))  # fmt: skip
    ours, theirs = results
    for key in ("cls", "names", "keys"):
        assert ours[key] == theirs[key], key
    for key in ("original", "weight", "grad", "scale_grad"):
        np.testing.assert_allclose(ours[key], theirs[key], **TOL, err_msg=key)


def _train(lib, compiled: bool, steps: int = 3):
    symmetric, scale, _ = _parametrizations(lib)
    m = _linear(lib, symmetric(), scale())
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    step = mse_step(m, opt)

    run = kn.compile(step) if compiled else step
    losses = [float(run(lib.tensor(X)).detach()) for _ in range(steps)]
    return m, losses


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_training_steps_match_torch(compiled):
    torch = _torch()
    m, losses = _train(kn, compiled)
    tm, tlosses = _train(torch, False)
    np.testing.assert_allclose(losses, tlosses, **TOL)
    for (name, p), (tname, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(_as_numpy(p), _as_numpy(tp), **TOL, err_msg=name)


def test_compiled_step_reads_an_assigned_weight():
    """`m.weight = value` between compiled steps (through right_inverse) is where the next
    compiled step starts, as the next torch step."""
    torch = _torch()
    results = []
    for lib in (kn, torch):
        symmetric, _, _ = _parametrizations(lib)
        m = _linear(lib, symmetric())
        opt = lib.optim.SGD(m.parameters(), lr=0.1)

        def step(x, m=m, opt=opt):
            opt.zero_grad()
            (m(x) ** 2).mean().backward()
            opt.step()

        run = kn.compile(step) if lib is kn else step
        run(lib.tensor(X))
        m.weight = lib.eye(3) * 0.5
        run(lib.tensor(X))
        results.append(_as_numpy(m.weight))
    np.testing.assert_allclose(*results, **TOL)


def test_several_originals_match_torch():
    torch = _torch()
    results = []
    for lib in (kn, torch):
        _, _, rank_one = _parametrizations(lib)
        m = _linear(lib, rank_one())
        m(lib.tensor(X)).sum().backward()
        entry = m.parametrizations.weight
        results.append(([n for n, _ in m.named_parameters()], _as_numpy(m.weight),
                        entry.original0.grad.numpy(), entry.original1.grad.numpy()))  # fmt: skip
    (names, *ours), (tnames, *theirs) = results
    assert names == tnames == ["bias", "parametrizations.weight.original0",
                               "parametrizations.weight.original1"]  # fmt: skip
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_matches_torch(leave):
    torch = _torch()
    results = []
    for lib in (kn, torch):
        symmetric, scale, _ = _parametrizations(lib)
        m = _linear(lib, symmetric(), scale())
        original = m.parametrizations.weight.original
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert m.weight is original  # the same Parameter: an optimizer goes on with it
        assert not lib.nn.utils.parametrize.is_parametrized(m)
        results.append((type(m).__name__, [n for n, _ in m.named_parameters()],
                        _as_numpy(m.weight)))  # fmt: skip
    assert results[0][:2] == results[1][:2] == ("Linear", ["bias", "weight"])
    np.testing.assert_allclose(results[0][2], results[1][2], **TOL)


def test_cached_computes_once_per_block():
    torch = _torch()
    counts = []
    for lib in (kn, torch):
        calls = []

        class Counted(lib.nn.Module):
            def forward(self, x):
                calls.append(1)
                return x * 2

        m = _linear(lib, Counted())
        calls.clear()
        with lib.nn.utils.parametrize.cached():
            first = m.weight
            assert m.weight is first
            m(lib.tensor(X))
        m.weight
        counts.append(len(calls))
    assert counts[0] == counts[1] == 2


def test_checks_and_errors_match_torch():
    torch = _torch()
    for lib in (kn, torch):
        P = lib.nn.utils.parametrize

        class Wide(lib.nn.Module):
            def forward(self, x):
                return lib.cat([x, x], -1)

        class Half(lib.nn.Module):
            def forward(self, x):
                return x.half()

        with pytest.raises(ValueError, match="may not change the shape"):
            P.register_parametrization(_linear(lib), "weight", Wide())
        with pytest.raises(ValueError, match="may not change the dtype"):
            P.register_parametrization(_linear(lib), "weight", Half())
        m = P.register_parametrization(_linear(lib), "weight", Wide(), unsafe=True)
        assert tuple(m.weight.shape) == (3, 6)
        with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
            P.register_parametrization(_linear(lib), "missing", Wide())
        with pytest.raises(RuntimeError, match="does not implement right_inverse"):
            m.weight = lib.ones(3, 6)
        with pytest.raises(ValueError, match="does not have a parametrization on bias"):
            P.remove_parametrizations(m, "bias")
        assert P.type_before_parametrizations(m) is lib.nn.Linear


def test_state_dict_round_trip_with_torch_and_deepcopy():
    torch = _torch()
    symmetric, scale, _ = _parametrizations(torch)
    tm = _linear(torch, symmetric(), scale())
    with torch.no_grad():
        tm.parametrizations.weight.original.mul_(3)
    symmetric, scale, _ = _parametrizations(kn)
    m = _linear(kn, symmetric(), scale())
    m.load_state_dict({k: kn.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    np.testing.assert_allclose(_as_numpy(m.weight), _as_numpy(tm.weight), **TOL)
    twin = copy.deepcopy(m)
    assert type(twin) is type(m) and twin.parametrizations.weight.original is not (
        m.parametrizations.weight.original)  # fmt: skip
    np.testing.assert_allclose(_as_numpy(twin.weight), _as_numpy(m.weight))


def test_transfer_parametrizations_and_params_as_torch():
    torch = _torch()
    results = []
    for lib in (kn, torch):
        symmetric, scale, _ = _parametrizations(lib)
        source = _linear(lib, symmetric(), scale())
        with lib.no_grad():
            source.parametrizations.weight.original.mul_(2)
        target = lib.nn.Linear(3, 3)
        lib.nn.utils.parametrize.transfer_parametrizations_and_params(source, target)
        assert target.parametrizations.weight.original is source.parametrizations.weight.original
        results.append(([n for n, _ in target.named_parameters()], _as_numpy(target.weight)))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], **TOL)
