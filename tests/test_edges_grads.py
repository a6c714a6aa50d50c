"""Gradients at NaN and ±inf that differed from PyTorch's without an error, in eager mode,
graph mode (kn.grad) and under kn.compile. Each output is weighted 1, 2, 3... before the sum,
so that every element's share shows. The expected gradients are torch 2.13's, written out
(`test_the_expected_gradients_are_torchs` reruns them where torch is installed)."""

import numpy as np
import pytest

import kiln as kn

NAN, INF = np.nan, np.inf
X = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 6.0, 0.5], np.float32)
Y = np.array([1.0, NAN, 2.0, 0.0, NAN, 1.0, INF, -INF, 0.25], np.float32)

# name: (fn(module, *tensors), how many of X, Y it takes)
CASES = {
    "relu": (lambda m, x: m.relu(x), 1),
    "F.relu": (lambda m, x: m.nn.functional.relu(x), 1),
    "abs": (lambda m, x: m.abs(x), 1),
    "max": (lambda m, x: m.max(x), 1),
    "min": (lambda m, x: m.min(x), 1),
    "max-ties": (lambda m, x: m.max(m.cat([x[3:], x[7:8] * 1.0])), 1),
    "amax": (lambda m, x: m.amax(x, 0), 1),
    "maximum": (lambda m, x, y: m.maximum(x, y), 2),
    "minimum": (lambda m, x, y: m.minimum(x, y), 2),
    "max-other": (lambda m, x, y: m.max(x, y), 2),
    "l1_loss": (lambda m, x, y: m.nn.functional.l1_loss(x, y, reduction="none"), 2),
    "smooth_l1_loss": (lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, reduction="none"), 2),
    "huber_loss": (lambda m, x, y: m.nn.functional.huber_loss(x, y, reduction="none", delta=0.5),
                   2),
    "norm1": (lambda m, x: m.norm(x[3:], p=1), 1),
    "logaddexp": (lambda m, x, y: m.logaddexp(x, y), 2),
    "logaddexp-same": (lambda m, x: m.logaddexp(x, x), 1),
    "copysign": (lambda m, x, y: m.copysign(x, y), 2),
    "logit": (lambda m, x: m.logit(x * 0.1), 1),
    "logit-near-one": (lambda m, x: m.logit(1 - x * 0.1), 1),
    "logit-eps": (lambda m, x: m.logit(x * 0.1, eps=0.08), 1),
    "logit-eps-near-one": (lambda m, x: m.logit(1 - x * 0.1, eps=0.08), 1),
}  # fmt: skip

WANT = {
    "relu": [[1.0, 2.0, 0.0, 0.0, 0.0, 6.0, 0.0, 8.0, 9.0]],
    "F.relu": [[1.0, 2.0, 0.0, 0.0, 0.0, 6.0, 0.0, 8.0, 9.0]],
    "abs": [[0.0, 2.0, -3.0, 0.0, 0.0, 6.0, -7.0, 8.0, 9.0]],
    "max": [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]],
    "min": [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]],
    "max-ties": [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]],
    "amax": [[NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN]],
    "maximum": [
        [1.0, 2.0, 0.0, 2.0, 5.0, 3.0, 0.0, 8.0, 9.0],
        [1.0, 2.0, 3.0, 2.0, 5.0, 3.0, 7.0, 0.0, 0.0],
    ],
    "minimum": [
        [1.0, 2.0, 3.0, 2.0, 5.0, 3.0, 7.0, 0.0, 0.0],
        [1.0, 2.0, 0.0, 2.0, 5.0, 3.0, 0.0, 8.0, 9.0],
    ],
    "max-other": [
        [1.0, 2.0, 0.0, 2.0, 5.0, 3.0, 0.0, 8.0, 9.0],
        [1.0, 2.0, 3.0, 2.0, 5.0, 3.0, 7.0, 0.0, 0.0],
    ],
    "l1_loss": [
        [0.0, 0.0, -3.0, 0.0, 0.0, 0.0, -7.0, 8.0, 9.0],
        [-0.0, -0.0, 3.0, -0.0, -0.0, -0.0, 7.0, -8.0, -9.0],
    ],
    "smooth_l1_loss": [
        [NAN, NAN, -3.0, 0.0, NAN, 0.0, -7.0, 8.0, 2.25],
        [NAN, NAN, 3.0, 0.0, NAN, 0.0, 7.0, -8.0, -2.25],
    ],
    "huber_loss": [
        [NAN, NAN, -1.5, 0.0, NAN, 0.0, -3.5, 4.0, 2.25],
        [NAN, NAN, 1.5, 0.0, NAN, 0.0, 3.5, -4.0, -2.25],
    ],
    "norm1": [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 1.0, 1.0]],
    "logaddexp": [
        [NAN, NAN, 0.0, 2.0, NAN, 3.0, 0.0, 8.0, 5.0595884],
        [NAN, NAN, 3.0, 2.0, NAN, 3.0, 7.0, 0.0, 3.9404116],
    ],
    "logaddexp-same": [[NAN, NAN, NAN, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]],
    "copysign": [
        [NAN, NAN, NAN, 0.0, 0.0, 6.0, -7.0, -8.0, 9.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ],
    "logit": [
        [NAN, NAN, NAN, INF, INF, 6.666667461395264, NAN, 3.333333730697632, 18.947370529174805]
    ],
    "logit-near-one": [
        [
            NAN,
            NAN,
            NAN,
            -INF,
            -INF,
            -6.666665554046631,
            NAN,
            -3.333333730697632,
            -18.947364807128906,
        ]
    ],
    "logit-eps": [[NAN, 0.0, 0.0, 0.0, 0.0, 6.666667461395264, 0.0, 3.333333730697632, 0.0]],
    "logit-eps-near-one": [
        [NAN, -0.0, -0.0, -0.0, -0.0, -6.666665554046631, -0.0, -3.333333730697632, -0.0]
    ],
}


def _grads(m, name, wrap=lambda f: f):
    fn, n = CASES[name]
    ts = [m.tensor(a, requires_grad=True) for a in (X, Y)[:n]]

    def f(*ts):
        out = fn(m, *ts)
        weights = m.arange(1, out.numel() + 1, dtype=out.dtype).reshape(out.shape)
        return (out * weights).sum()

    wrap(f)(*ts).backward()
    return [t.grad.numpy() for t in ts]


def _graph_grads(name):
    fn, n = CASES[name]
    with kn.Graph().as_default():
        xs = [kn.placeholder(kn.float32, (9,), name=f"x{i}") for i in range(n)]
        out = fn(kn, *xs)
        weights = np.arange(1, int(np.prod(out.shape)) + 1, dtype=np.float32).reshape(out.shape)
        gs = kn.grad((out * kn.constant(weights)).sum(), xs)
        return [np.asarray(g) for g in kn.function(xs, list(gs))(*(X, Y)[:n])]


@pytest.mark.parametrize("mode", ["eager", "compiled", "graph"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_at_nan_and_inf_are_torchs(name, mode):
    if mode == "graph":
        got = _graph_grads(name)
    else:
        got = _grads(kn, name, kn.compile if mode == "compiled" else (lambda f: f))
    for g, w in zip(got, WANT[name], strict=True):
        np.testing.assert_allclose(g, np.array(w, np.float32), rtol=1e-6, atol=0, err_msg=name)


def test_the_expected_gradients_are_torchs():
    torch = pytest.importorskip("torch")
    for name in CASES:
        for g, w in zip(_grads(torch, name), WANT[name], strict=True):
            np.testing.assert_allclose(g, np.array(w, np.float32), rtol=1e-6, atol=0,
                                       err_msg=name)  # fmt: skip
