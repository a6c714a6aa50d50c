"""kn.nn.utils' gradient clipping and the default initialisation of modules against PyTorch
2.13 (skipped without torch). Expected values are torch's on the same gradients; the
initialisation bounds are those torch's own modules draw within."""

import math

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
GRADS = [
    rng.standard_normal((3, 4)).astype(np.float32) * 3,
    rng.standard_normal(5).astype(np.float32),
]
GRADS[1][2] = 0.0  # a zero: norm order 0 counts the nonzero entries


def _clip(lib, grads, compiled=False, **kw):
    """(returned norm, the clipped gradients): eagerly, or inside a compiled step."""
    ps = [lib.nn.Parameter(lib.zeros(g.shape)) for g in grads]
    if not compiled:
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        norm = lib.nn.utils.clip_grad_norm_((p for p in ps), **kw)  # a generator, as .parameters()
        return float(norm), [p.grad.numpy().copy() for p in ps]
    m = kn.nn.Module()
    m.ps = kn.nn.ParameterList(ps)
    opt = kn.optim.SGD(m.parameters(), lr=1.0)

    @kn.compile
    def step(*gs):
        opt.zero_grad()
        sum((p * g).sum() for p, g in zip(m.ps, gs)).backward()  # each gradient is g
        norm = kn.nn.utils.clip_grad_norm_(m.parameters(), **kw)
        opt.step()
        return norm

    norm = step(*[kn.tensor(g) for g in grads])
    return float(norm), [-p.detach().numpy() for p in ps]  # lr 1 from 0: minus the gradient


ORDERS = [2.0, 1.0, 3.5, 0.5, math.inf, -math.inf, 0.0, "inf"]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("norm_type", ORDERS, ids=str)
def test_clip_grad_norm_matches_torch_for_every_order(norm_type, compiled):
    """-inf is the smallest absolute entry and 0 counts the nonzero entries (kiln took -inf
    for inf, and divided by zero for 0); torch combines the per-tensor norms with the same
    order, which kiln now does too."""
    kw = dict(max_norm=1.0, norm_type=norm_type)
    want_norm, want = _clip(torch, GRADS, **kw)
    got_norm, got = _clip(kn, GRADS, compiled, **kw)
    np.testing.assert_allclose(got_norm, want_norm, rtol=1e-6)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_clipping_a_generator_of_eager_parameters_beside_graph_gradients():
    """A graph-mode backward left gradients in the default graph: clipping eager parameters
    given as a generator (model.parameters()) still clips them; the generator used to be
    used up looking for graph gradients, and nothing was clipped (torch: the norm 10)."""
    with kn.Graph().as_default():
        v = kn.Variable(np.float32(2.0), name="v")
        (v * v).backward()
        w = kn.nn.Parameter(kn.tensor([3.0, 4.0]))
        w.grad = kn.tensor([6.0, 8.0])
        norm = kn.nn.utils.clip_grad_norm_((p for p in [w]), 5.0)
        assert float(norm) == pytest.approx(10.0)
        np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0], rtol=1e-6)
        kn.nn.utils.clip_grad_value_((p for p in [w]), 3.5)
        np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.5], rtol=1e-6)


# -- default initialisation -----------------------------------------------------------------


def _xavier_bound(shape) -> float:
    """nn.init.xavier_uniform_'s bound, sqrt(6 / (fan_in + fan_out)), from torch's formula."""
    receptive = math.prod(shape[2:])
    return math.sqrt(6.0 / (shape[1] * receptive + shape[0] * receptive))


def test_transformer_initialises_its_matrices_as_torch():
    """torch's nn.Transformer redraws every parameter of 2 or more dims with
    xavier_uniform_ (encoder and decoder alike); kiln kept each layer's own default (a
    linear1 bound of 1/sqrt(32) instead of sqrt(6/96)). Checked on torch's module too."""
    kn.manual_seed(0)
    torch.manual_seed(0)
    for lib in (torch, kn):
        model = lib.nn.Transformer(32, 4, 2, 1, 64, batch_first=True)
        matrices = [(n, p) for n, p in model.named_parameters() if p.dim() > 1]
        assert len(matrices) == 14  # 4 per encoder layer, 6 per decoder layer
        for name, p in matrices:
            bound = _xavier_bound(tuple(p.shape))
            w = p.detach().numpy()
            assert np.abs(w).max() <= bound, name
            assert np.abs(w).max() > 0.9 * bound, name  # at least 1024 draws of U(-b, b)
            assert abs(w.std() / (bound / math.sqrt(3)) - 1) < 0.1, name


def test_parameters_to_vector_and_back_as_torch():
    """The vector (and its gradient to every parameter) and the parameters set from a
    vector, as torch's; a vector too short is refused (torch: a RuntimeError too)."""
    got, want = {}, {}
    for lib, out in ((torch, want), (kn, got)):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Conv1d(2, 2, 2))
        with torch.no_grad() if lib is torch else kn.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.arange(p.numel(), dtype=p.dtype).reshape(p.shape) * (i + 1) / 10)
        vec = lib.nn.utils.parameters_to_vector(m.parameters())
        (vec * lib.arange(vec.numel(), dtype=vec.dtype)).sum().backward()
        out["vec"] = vec.detach().numpy().copy()
        out["grads"] = [p.grad.numpy().copy() for p in m.parameters()]
        lib.nn.utils.vector_to_parameters(lib.arange(20.0) / 7, m.parameters())
        out["params"] = [p.detach().numpy().copy() for p in m.parameters()]
    np.testing.assert_array_equal(got["vec"], want["vec"])
    for key in ("grads", "params"):
        for g, w in zip(got[key], want[key]):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(kn.ShapeError, match="at least 15 elements"):
        kn.nn.utils.vector_to_parameters(kn.zeros(5), kn.nn.Linear(4, 3).parameters())
