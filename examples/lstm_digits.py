"""Train an LSTM on the bundled digits, each 8x8 image read as a sequence of 8 rows of 8 pixels,
three ways from the same initial weights: in graph mode (placeholders, Adam's train op, a
Session), eagerly (PyTorch's five steps) and under kn.compile. The LSTM is one kn.scan over the
8 steps in the graph modes and a Python loop eagerly.

    python examples/lstm_digits.py [--epochs N] [--hidden H]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kiln as kn
from kiln.demo import load_digits, split

SEED = 0


class Classifier(kn.nn.Module):
    """LSTM(8 -> hidden) over the rows of an image; a Linear layer on its last hidden state."""

    def __init__(self, hidden: int):
        super().__init__()
        self.lstm = kn.nn.LSTM(8, hidden, batch_first=True)
        self.head = kn.nn.Linear(hidden, 10)

    def forward(self, images):  # (batch, 8, 8): 8 steps of 8 pixels
        _, (h_n, _) = self.lstm(images)
        return self.head(h_n[-1])


def make_model(hidden: int) -> Classifier:
    kn.manual_seed(SEED)
    return Classifier(hidden)


def batches(n: int, epochs: int, batch: int):
    """The same shuffled minibatches for every mode."""
    rng = np.random.default_rng(SEED)
    for _ in range(epochs):
        order = rng.permutation(n)
        for i in range(0, n, batch):
            yield order[i : i + batch]


def train_graph(model, x, y, args):
    """TF1-style: placeholders, the model's graph, Adam's train op, Session.run."""
    graph = kn.Graph()
    with graph.as_default():
        images = kn.placeholder(kn.float32, ("batch", 8, 8), name="images")
        labels = kn.placeholder(kn.int64, ("batch",), name="labels")
        logits = model(images)
        loss = kn.cross_entropy(logits, labels)
        train_op = kn.optim.Adam(lr=args.lr).minimize(loss)
        predicted = kn.argmax(logits, dim=1)
    with kn.Session(graph=graph) as sess:
        for b in batches(len(y), args.epochs, args.batch):
            sess.run([loss, train_op], {images: x[b], labels: y[b]})
    return kn.function([images], predicted)  # Variables are shared: the trained values


def _step(model, forward, args):
    opt = kn.optim.Adam(model.parameters(), lr=args.lr)

    def step(xb, yb):
        opt.zero_grad()
        loss = forward(kn.tensor(xb), kn.tensor(yb))
        loss.backward()
        opt.step()

    return step


def _predict(model):
    def predict(xs):
        with kn.no_grad():
            return model(kn.tensor(xs)).numpy().argmax(axis=1)

    return predict


def train_eager(model, x, y, args):
    step = _step(model, lambda xb, yb: kn.cross_entropy(model(xb), yb), args)
    for b in batches(len(y), args.epochs, args.batch):
        step(x[b], y[b])
    return _predict(model)


def train_compiled(model, x, y, args):
    step = _step(model, kn.compile(lambda xb, yb: kn.cross_entropy(model(xb), yb)), args)
    for b in batches(len(y), args.epochs, args.batch):
        step(x[b], y[b])
    return _predict(model)


MODES = {"graph mode": train_graph, "eager": train_eager, "kn.compile": train_compiled}


def main(argv=None, echo=print) -> dict:
    """Trains in each mode; returns {mode: (held-out accuracy, seconds)}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=7)
    parser.add_argument("--hidden", type=int, default=48)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.015)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args(argv)
    x_all, y_all = load_digits()
    x_all = x_all.reshape(-1, 8, 8)  # rows of pixels as time steps
    train, test = split(len(y_all))
    results = {}
    for name in args.modes.split(","):
        start = time.perf_counter()
        predict = MODES[name](make_model(args.hidden), x_all[train], y_all[train], args)
        seconds = time.perf_counter() - start
        accuracy = float(np.mean(predict(x_all[test]) == y_all[test]))
        results[name] = (accuracy, seconds)
        echo(f"{name:<11} held-out accuracy {accuracy:.4f} after {args.epochs} epochs "
             f"({seconds:.1f} s)")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
