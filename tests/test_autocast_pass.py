"""The graph-mode autocast pass, `kn.function(..., autocast=dtype)`: which nodes it casts,
values equal to the same casts written by hand, and a graph-mode digits MLP trained with it
reaching the float32 accuracy."""

import numpy as np
import pytest

import kiln as kn
from kiln.demo import load_digits


def _mlp_graph(seed=0):
    rng = np.random.default_rng(seed)
    x = kn.placeholder(kn.float32, ("batch", 64), name="x")
    labels = kn.placeholder(kn.int64, ("batch",), name="labels")
    w1 = kn.Variable((rng.standard_normal((64, 128)) / 8).astype(np.float32), name="w1")
    b1 = kn.Variable(np.zeros(128, np.float32), name="b1")
    w2 = kn.Variable((rng.standard_normal((128, 10)) / 11).astype(np.float32), name="w2")
    logits = kn.relu(x @ w1 + b1) @ w2
    return x, labels, logits, (w1, b1, w2)


def test_autocast_pass_casts_products_and_their_gradients():
    with kn.Graph().as_default():
        x, labels, logits, params = _mlp_graph()
        loss = kn.nn.functional.cross_entropy(logits, labels)
        train = kn.optim.SGD(lr=0.1).minimize(loss)
        f = kn.function([x, labels], [loss, train], autocast=kn.bfloat16)
    products = [n for n in f.graph.nodes if n.op.name in ("matmul", "addmm")]
    # two forward products, and the backward's: dlogits @ w2.T, h.T @ dlogits, x.T @ dh
    assert len(products) == 5
    assert all(n.out.dtype == kn.bfloat16 for n in products)
    assert all(i.dtype == kn.bfloat16 for n in products for i in n.inputs)
    assert [v.dtype for v in params] == [kn.float32] * 3
    assert f(np.ones((4, 64), np.float32), np.arange(4))[0].dtype == np.float32
    assert all(v.numpy().dtype == np.float32 for v in params)


@pytest.mark.parametrize("low", [kn.bfloat16, kn.float16])
def test_autocast_pass_equals_the_casts_written_by_hand(low):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((5, 64)).astype(np.float32)
    with kn.Graph().as_default():
        x, _, logits, (w1, b1, w2) = _mlp_graph()
        f = kn.function([x], logits, autocast=low)

        def mm(a, b):  # the pass's rule: inputs to the low dtype, the product back
            return kn.cast(kn.cast(a, low) @ kn.cast(b, low), kn.float32)

        by_hand = kn.function([x], mm(kn.relu(mm(x, w1) + b1), w2))
        plain = kn.function([x], logits)
    np.testing.assert_array_equal(f(xv), by_hand(xv))
    assert not np.array_equal(f(xv), plain(xv))  # the low dtype did change the values


def test_autocast_pass_rejects_other_dtypes():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 2), name="x")
        with pytest.raises(ValueError, match="kn.bfloat16 or kn.float16"):
            kn.function([x], x @ x, autocast=kn.float64)


def _train_graph(autocast, epochs=5):
    images, targets = load_digits()
    order = np.random.default_rng(0).permutation(len(images))
    train, test = order[:1438], order[1438:]
    with kn.Graph().as_default():
        x, labels, logits, _ = _mlp_graph()
        loss = kn.nn.functional.cross_entropy(logits, labels)
        train_op = kn.optim.Adam(lr=1e-2).minimize(loss)
        step = kn.function([x, labels], [loss, train_op], autocast=autocast)
        predict = kn.function([x], kn.argmax(logits, 1), autocast=autocast)
    rng = np.random.default_rng(1)
    for _ in range(epochs):
        for batch in np.array_split(rng.permutation(train), len(train) // 64):
            step(images[batch], targets[batch])
    return float(np.mean(predict(images[test]) == targets[test]))


def test_graph_mlp_trained_with_the_autocast_pass_reaches_float32_accuracy():
    full = _train_graph(None)
    assert full > 0.95
    # within 1% of the float32 run (3 of the 359 held-out digits)
    assert _train_graph(kn.bfloat16) >= full - 0.01


def test_graph_built_under_autocast_equals_eager_autocast(monkeypatch):
    # Symbols are cast like Tensors: the graph holds the casts, its results equal eager's
    monkeypatch.setenv("KILN_EXACT", "1")  # bit for bit: NumPy's exp in the loss, as eager
    model = kn.nn.Sequential(kn.nn.Linear(64, 32), kn.nn.ReLU(), kn.nn.Linear(32, 10))
    xv = np.random.default_rng(2).standard_normal((5, 64)).astype(np.float32)
    labels = np.arange(5)
    with kn.autocast("cpu", dtype=kn.bfloat16):
        eager_logits = model(kn.tensor(xv))
        eager_loss = kn.nn.functional.cross_entropy(eager_logits, kn.tensor(labels))
        with kn.Graph().as_default():
            x = kn.placeholder(kn.float32, ("batch", 64), name="x")
            y = kn.placeholder(kn.int64, ("batch",), name="y")
            logits = model(x)
            loss = kn.nn.functional.cross_entropy(logits, y)
            f = kn.function([x, y], [logits, loss])
    assert (logits.dtype, loss.dtype) == (kn.bfloat16, kn.float32)
    got_logits, got_loss = f(xv, labels)
    np.testing.assert_array_equal(got_logits, eager_logits.detach().numpy())
    np.testing.assert_array_equal(got_loss, eager_loss.detach().numpy())
