"""kn.checkpoint (torch.utils.checkpoint's meaning): the same values and gradients as without
it, eagerly, in graph mode and under kn.compile; in graph mode the region's values are
recomputed in the backward pass, so a deep chain's arena shrinks."""

import numpy as np

import kiln as kn


def _weights(n, width, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(n)]


def test_eager_checkpoint_gives_the_gradients_of_the_plain_function():
    rng = np.random.default_rng(1)
    w0, x0 = rng.standard_normal((3, 3)), rng.standard_normal((2, 3))

    def grads(use_checkpoint):
        w = kn.tensor(w0, requires_grad=True)
        x = kn.tensor(x0, requires_grad=True)
        fn = lambda v: kn.tanh(v @ w).sum(dim=0)  # noqa: E731
        y = kn.checkpoint(fn, x) if use_checkpoint else fn(x)
        (y * kn.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y.detach().numpy(), w.grad.numpy(), x.grad.numpy()

    for got, want in zip(grads(True), grads(False)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_eager_checkpoint_records_one_tape_entry_and_no_inner_ops():
    w = kn.tensor([1.0, 2.0], requires_grad=True)
    y = kn.checkpoint(lambda v: kn.exp(v * w), kn.tensor([0.5, 0.25]))
    assert y.requires_grad and y.grad_fn.name() == "CheckpointBackward0"
    assert all(e is None for e in y.grad_fn.edges)  # the input needs no grad; w gets it
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [0.5 * np.exp(0.5), 0.25 * np.exp(0.5)])


def test_eager_checkpoint_without_grad_is_the_plain_call_and_takes_any_result():
    with kn.no_grad():
        assert not kn.checkpoint(lambda v: v * 2.0, kn.tensor([1.0])).requires_grad
    # as PyTorch's (hand-computed): a tuple's tensors each get their gradient; no tensor, as is
    x = kn.tensor([1.0], requires_grad=True)
    a, b = kn.checkpoint(lambda v: (v * 2.0, {"c": v * 3.0}), x)
    (a + b["c"]).sum().backward()
    assert x.grad.tolist() == [5.0]
    assert kn.checkpoint(lambda v: 3.0, x) == 3.0


def _graph_step(weights, segment=None, batch=16):
    """A chain of tanh layers and its weight gradients, regions of `segment` layers."""
    x = kn.placeholder(kn.float64, (batch, weights[0].shape[0]), name="x")
    ws = [kn.Variable(w.copy(), name=f"w{k}") for k, w in enumerate(weights)]

    def layers(h, chunk):
        for w in chunk:
            h = kn.tanh(h @ w)
        return h

    h = x
    for s in range(0, len(ws), segment or len(ws)):
        chunk = ws[s : s + (segment or len(ws))]
        if segment:
            h = kn.checkpoint(lambda v, c=chunk: layers(v, c), h)
        else:
            h = layers(h, chunk)
    grads = kn.grad(kn.sum(h * h), ws)
    return kn.function([x], grads)


def test_graph_checkpoint_recomputes_and_shrinks_the_arena_with_the_same_gradients():
    weights = _weights(12, 64)
    xv = np.random.default_rng(2).standard_normal((16, 64))
    with kn.Graph().as_default():
        plain = _graph_step(weights)
        want = plain(xv)
    with kn.Graph().as_default():
        ck = _graph_step(weights, segment=4)
        got = ck(xv)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)  # the same ops on the same values: same bits
    assert any(n.name.endswith("_recomputed") for n in ck.graph.nodes)
    assert ck.plan.arena_bytes < 0.75 * plain.plan.arena_bytes, (
        ck.plan.arena_bytes,
        plain.plan.arena_bytes,
    )


def test_compiled_checkpoint_agrees_with_eager():
    kn.manual_seed(0)
    model = kn.nn.MLP([8, 16, 8])
    x = kn.randn(4, 8)
    kn.testing.check_eager_vs_compiled(lambda v: (kn.checkpoint(model, v) ** 2).sum(), x)


def test_kn_checkpoint_is_still_the_checkpoint_module():
    # kn.checkpoint(fn, *args) is API.md's function; the safetensors helpers keep their home
    assert callable(kn.checkpoint) and callable(kn.checkpoint.write_atomic)
