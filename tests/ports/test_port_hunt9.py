"""The "from scratch" chapters of Dive into Deep Learning (d2l.ai), ported by renaming `torch`
to `kn`: linear and softmax regression, MLPs, weight decay, dropout, batch normalization, RNNs,
attention scoring, positional encoding and hand-written optimizers. These programs use raw
tensor ops (in-place updates under no_grad, fancy indexing, masks, slice assignment) instead
of modules. The small helpers the book defines are written inline, the data is synthetic, and
the random initial weights come from NumPy so both runs start equal; torch 2.13 is the oracle.

Tolerances: as in port_common, float32 runs of a few dozen SGD steps over sums of at most a
few hundred products agree within LOSS_TOL / PARAM_TOL; single forward passes within 1e-5.
"""

import numpy as np
import pytest
from port_common import LOSS_TOL, PARAM_TOL, assert_losses_close, to_numpy

import kiln as kn

FWD_TOL = {"rtol": 1e-5, "atol": 1e-6}


def sgd(lib, params, lr, batch_size):
    """d2l's minibatch SGD: in-place updates under no_grad, then `grad.zero_()`."""
    with lib.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def compare(torch_out, kiln_out, **tol):
    """Nested lists/tuples of numbers and arrays agree."""
    if isinstance(torch_out, (list, tuple)):
        assert len(torch_out) == len(kiln_out)
        for t, k in zip(torch_out, kiln_out):
            compare(t, k, **tol)
        return
    np.testing.assert_allclose(to_numpy(kiln_out), to_numpy(torch_out), **(tol or PARAM_TOL))


# -- 3.2 linear regression from scratch ------------------------------------------------------

RNG = np.random.default_rng(0)
LIN_X = RNG.normal(size=(100, 2)).astype(np.float32)
LIN_Y = (LIN_X @ np.array([2, -3.4], np.float32) + 4.2 + 0.01 * RNG.normal(size=100)).astype(
    np.float32
)
LIN_W = (0.01 * RNG.normal(size=(2, 1))).astype(np.float32)


def linear_regression(lib):
    X, y = lib.tensor(LIN_X), lib.tensor(LIN_Y).reshape((-1, 1))
    w = lib.tensor(LIN_W, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)

    def linreg(X, w, b):
        return lib.matmul(X, w) + b

    def squared_loss(y_hat, y):
        return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2

    losses = []
    for _ in range(3):
        for i in range(0, 100, 10):
            loss = squared_loss(linreg(X[i : i + 10], w, b), y[i : i + 10])
            loss.sum().backward()
            sgd(lib, [w, b], 0.03, 10)
        with lib.no_grad():
            train_l = squared_loss(linreg(X, w, b), y)
            losses.append(float(train_l.mean()))
    assert w.grad is not None and not w.grad.any() and w.is_leaf
    return losses, [w, b, w.grad]


def test_linear_regression_scratch(torch):
    t_losses, t_params = linear_regression(torch)
    k_losses, k_params = linear_regression(kn)
    assert_losses_close(k_losses, t_losses)
    compare(t_params, k_params)


# -- 4.2 softmax regression from scratch -----------------------------------------------------

IMG_X = RNG.normal(size=(64, 1, 4, 5)).astype(np.float32)
IMG_Y = RNG.integers(0, 10, size=64)
SOFT_W = (0.01 * RNG.normal(size=(20, 10))).astype(np.float32)


def accuracy(lib, y_hat, y):
    """d2l's accuracy: argmax, then `type(y.dtype)` casts of the prediction and comparison."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def softmax_regression(lib):
    X, y = lib.tensor(IMG_X), lib.tensor(IMG_Y)
    W = lib.tensor(SOFT_W, requires_grad=True)
    b = lib.zeros(10, requires_grad=True)

    def softmax(X):
        X_exp = lib.exp(X)
        partition = X_exp.sum(1, keepdim=True)
        return X_exp / partition

    def net(X):
        return softmax(lib.matmul(X.reshape((-1, W.shape[0])), W) + b)

    def cross_entropy(y_hat, y):
        return -lib.log(y_hat[range(len(y_hat)), y])

    out = []
    for _ in range(3):
        for i in range(0, 64, 16):
            y_hat = net(X[i : i + 16])
            loss = cross_entropy(y_hat, y[i : i + 16])
            loss.sum().backward()
            sgd(lib, [W, b], 0.1, 16)
            out.append([loss.sum().item(), accuracy(lib, y_hat, y[i : i + 16]), loss.numel()])
    return out, [W, b]


def test_softmax_regression_scratch(torch):
    t_out, t_params = softmax_regression(torch)
    k_out, k_params = softmax_regression(kn)
    compare(t_out, k_out, **LOSS_TOL)
    compare(t_params, k_params)


# -- 4.2/4.5/4.6 MLP from scratch, weight decay, dropout -------------------------------------

MLP_W1 = RNG.normal(size=(20, 32)).astype(np.float32)
MLP_W2 = RNG.normal(size=(32, 10)).astype(np.float32)
DROP_U = [RNG.random(size=(16, 32)).astype(np.float32) for _ in range(12)]


def mlp(lib, lambd=0.0, dropout=0.0):
    """d2l's MLP from scratch; `lambd` adds the hand-written L2 penalty of 4.5, `dropout` the
    mask `(rand(X.shape) > p).float()` of 4.6 (the uniform draws come from NumPy)."""
    X, y = lib.tensor(IMG_X), lib.tensor(IMG_Y)
    W1 = lib.nn.Parameter(lib.tensor(MLP_W1) * 0.01)
    b1 = lib.nn.Parameter(lib.zeros(32, requires_grad=True))
    W2 = lib.nn.Parameter(lib.tensor(MLP_W2) * 0.01)
    b2 = lib.nn.Parameter(lib.zeros(10, requires_grad=True))
    params = [W1, b1, W2, b2]
    draws = iter(DROP_U)

    def relu(X):
        a = lib.zeros_like(X)
        return lib.max(X, a)

    def dropout_layer(X, p):
        assert 0 <= p <= 1
        if p == 1:
            return lib.zeros_like(X)
        mask = (lib.tensor(next(draws)).reshape(X.shape) > p).float()
        return mask * X / (1.0 - p)

    def l2_penalty(w):
        return lib.sum(w.pow(2)) / 2

    def net(X):
        X = X.reshape((-1, 20))
        H = relu(X @ W1 + b1)
        if dropout:
            H = dropout_layer(H, dropout)
        return H @ W2 + b2

    loss_fn = lib.nn.CrossEntropyLoss(reduction="none")
    updater = lib.optim.SGD(params, lr=0.5)
    losses = []
    for _ in range(3):
        for i in range(0, 64, 16):
            y_hat = net(X[i : i + 16])
            loss = loss_fn(y_hat, y[i : i + 16]) + lambd * l2_penalty(W1)
            updater.zero_grad()
            loss.mean().backward()
            updater.step()
            losses.append(loss.mean().item())
    return losses, params


@pytest.mark.parametrize("lambd, dropout", [(0.0, 0.0), (3.0, 0.0), (0.0, 0.5), (0.0, 1.0)])
def test_mlp_scratch(torch, lambd, dropout):
    t_losses, t_params = mlp(torch, lambd, dropout)
    k_losses, k_params = mlp(kn, lambd, dropout)
    assert_losses_close(k_losses, t_losses)
    compare(t_params, k_params)
