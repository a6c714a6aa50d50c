"""`Embedding(max_norm=)` and `F.embedding(..., max_norm=)` renormalise the looked-up rows of
the weight in place, as PyTorch's do: eagerly, in graph mode (an update applied with the
output's, as BatchNorm's running statistics) and under kn.compile (a program update), over
two successive calls. kiln gave the right rows but left the weight unchanged in graphs (and
nn.Embedding refused max_norm). Expected values are torch 2.13's, written out (the last test
reruns them)."""

import numpy as np
import pytest

import kiln as kn

W = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 1.0]], np.float32)
CALLS = ([0, 1, 0], [2, 3])
# torch 2.13: the outputs (rows * 2) and the weight after each call
WANT = [
    ([[1.2, 1.6], [0.6, 0.8], [1.2, 1.6]],
     [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0], [1.0, 1.0]]),
    ([[1.2, 1.6], [1.4142135, 1.4142135]],
     [[0.6, 0.8], [0.3, 0.4], [0.6, 0.8], [0.70710677, 0.70710677]]),
]  # fmt: skip


def _module(m, functional):
    emb = m.nn.Embedding(4, 2, max_norm=1.0)
    with m.no_grad():
        emb.weight.copy_(m.tensor(W))
    if functional:
        return emb, lambda i: m.nn.functional.embedding(i, emb.weight, max_norm=1.0) * 2
    return emb, lambda i: emb(i) * 2


def _story(m, functional=False, wrap=lambda f: f):
    emb, f = _module(m, functional)
    f = wrap(f)
    got = []
    for ids in CALLS:
        out = f(m.tensor(ids))
        got.append((out.detach().numpy(), emb.weight.detach().numpy().copy()))
    return got


def _check(got):
    for (out, weight), (want_out, want_weight) in zip(got, WANT, strict=True):
        np.testing.assert_allclose(out, want_out, rtol=1e-6)
        np.testing.assert_allclose(weight, want_weight, rtol=1e-6)


@pytest.mark.parametrize("functional", [False, True], ids=["module", "functional"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_max_norm_renormalises_the_weight(compiled, functional):
    _check(_story(kn, functional, kn.compile if compiled else (lambda f: f)))


def test_max_norm_in_graph_mode_is_an_update_of_the_output():
    with kn.Graph().as_default():
        emb, f = _module(kn, False)
        ids = kn.placeholder(kn.int64, ("n",), name="ids")
        out = f(ids)
        sess = kn.Session()
        np.testing.assert_allclose(sess.run(out, {ids: np.array(CALLS[0])}), WANT[0][0],
                                   rtol=1e-6)  # fmt: skip
        np.testing.assert_array_equal(emb.weight.detach().numpy(), W)  # the output alone
        got = []
        for i in CALLS:
            value, _ = sess.run([out, kn.nn.updates_for(out)], {ids: np.array(i)})
            got.append((value, emb.weight.detach().numpy().copy()))
    _check(got)


def test_max_norm_and_an_optimizer_in_one_program_refuse():
    """Two writes of the weight in one run (the renorm, the step): refused, not one lost."""
    with kn.Graph().as_default():
        emb, f = _module(kn, False)
        ids = kn.placeholder(kn.int64, ("n",), name="ids")
        train = kn.optim.SGD(emb.parameters(), lr=0.1).minimize(f(ids).sum())
        with pytest.raises(kn.GraphError, match="two updates in one run"):
            kn.Session().run(train, {ids: np.array(CALLS[0])})
    np.testing.assert_array_equal(emb.weight.detach().numpy(), W)  # unchanged


def test_the_expected_values_are_torchs():
    torch = pytest.importorskip("torch")
    _check(_story(torch))
    _check(_story(torch, functional=True))


def test_max_norm_writes_a_compiled_functions_argument():
    w = kn.tensor(W)
    f = kn.compile(lambda i, w: kn.nn.functional.embedding(i, w, max_norm=1.0) * 2)
    for ids, (want_out, want_weight) in zip(CALLS, WANT, strict=True):
        np.testing.assert_allclose(f(kn.tensor(ids), w).numpy(), want_out, rtol=1e-6)
        np.testing.assert_allclose(w.numpy(), want_weight, rtol=1e-6)
