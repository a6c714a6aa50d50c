"""`kiln demo`: a random-features classifier of the bundled digits, run as a kiln graph.

The weights are fitted in closed form with NumPy (ridge least squares onto one-hot labels);
kiln builds the graph of logits and accuracy, compiles it and runs it, and writes its dumps.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

HIDDEN = 256  # random features: 97-98% held-out accuracy, small enough for readable dumps
RIDGE = 0.1
SEED = 0


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits: images as float32 rows of 64 pixels in [0, 1], labels as int64.

    >>> x, y = load_digits()
    >>> x.shape, x.dtype, y.shape, int(y.max())
    ((1797, 64), dtype('float32'), (1797,), 9)
    """
    ref = resources.files("kiln").joinpath("data", "digits.npz")
    with ref.open("rb") as file, np.load(file) as data:
        images, labels = data["images"], data["labels"]
    return images.reshape(len(images), 64).astype(np.float32) / 16.0, labels.astype(np.int64)


def split(n: int, test_fraction: float = 0.25, seed: int = SEED):
    """Disjoint (train, test) index arrays from a fixed-seed permutation of range(n).

    >>> train, test = split(8)
    >>> len(train), len(test), sorted([*train, *test]) == list(range(8))
    (6, 2, True)
    """
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(n * test_fraction)
    return order[n_test:], order[:n_test]


@dataclass
class Model:
    """h = relu(x @ proj + bias) (fixed random features); logits = h @ w + c (fitted)."""

    proj: np.ndarray
    bias: np.ndarray
    w: np.ndarray
    c: np.ndarray

    def features(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ self.proj + self.bias, 0)

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The NumPy reference that the kiln graph must reproduce."""
        return self.features(x) @ self.w + self.c


def fit(x: np.ndarray, labels: np.ndarray, hidden: int = HIDDEN, ridge: float = RIDGE) -> Model:
    """Random features, then ridge least squares onto one-hot labels, in closed form."""
    rng = np.random.default_rng(SEED)
    proj = rng.standard_normal((x.shape[1], hidden)) * (2 / np.sqrt(x.shape[1]))
    model = Model(
        proj=proj.astype(np.float32),
        bias=rng.uniform(-1, 1, hidden).astype(np.float32),
        w=np.empty(0, np.float32),
        c=np.empty(0, np.float32),
    )
    h = np.hstack([model.features(x), np.ones((len(x), 1), np.float32)]).astype(np.float64)
    # Ridge as plain least squares: rows sqrt(ridge) * I under h, zeros under the targets.
    a = np.vstack([h, np.sqrt(ridge) * np.eye(h.shape[1])])
    b = np.vstack([np.eye(10)[labels], np.zeros((h.shape[1], 10))])
    solution = np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)
    model.w, model.c = solution[:-1], solution[-1]
    return model


def build_graph(model: Model):
    """The kiln graph: placeholders x and labels, Variables for the weights, logits, accuracy."""
    import kiln as kn

    graph = kn.Graph()
    with graph.as_default():
        x = kn.placeholder(kn.float32, ("batch", 64), name="x")
        labels = kn.placeholder(kn.int64, ("batch",), name="labels")
        with kn.name_scope("features"):
            proj = kn.Variable(model.proj, name="proj")
            bias = kn.Variable(model.bias, name="bias")
            h = kn.relu(kn.matmul(x, proj) + bias)
        with kn.name_scope("classifier"):
            w = kn.Variable(model.w, name="w")
            c = kn.Variable(model.c, name="c")
            logits = kn.matmul(h, w) + c
        correct = kn.equal(kn.argmax(logits, axis=1), labels)
        accuracy = kn.mean(kn.cast(correct, kn.float32))
    return graph, x, labels, logits, accuracy


def best_time(fn, repeats: int) -> float:
    """The fastest of `repeats` calls of `fn`, in seconds."""
    times = []
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temporary file in the same folder and `os.replace`,
    so a reader sees the old file or the new one, never a partial one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def run(out: Path, device: str = "cpu", epochs: int = 3, echo=print) -> dict:
    """The whole demo; returns what it measured. Raises DeviceError for an unusable device.

    `epochs` is the number of timed passes over the held-out split (the closed-form fit needs
    no training epochs).
    """
    import kiln as kn

    kn.runtime.get_backend(device)  # an unusable device fails here, before any work
    x_all, y_all = load_digits()
    train, test = split(len(y_all))
    x_test, y_test = x_all[test], y_all[test]
    echo(f"digits: {len(train)} training and {len(test)} held-out images of 8x8 pixels")

    start = time.perf_counter()
    model = fit(x_all[train], y_all[train])
    fit_s = time.perf_counter() - start
    echo(
        f"fit {HIDDEN} random features + ridge least squares (NumPy, closed form): "
        f"{fit_s * 1e3:.1f} ms"
    )

    start = time.perf_counter()
    graph, x, labels, logits, accuracy = build_graph(model)
    f = kn.function([x, labels], [logits, accuracy], device=device)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    logits_v, acc_f = f(x_test, y_test)
    first_s = time.perf_counter() - start
    call_s = best_time(lambda: f(x_test, y_test), epochs)
    with kn.Session(graph=graph, device=device) as sess:
        acc_s = sess.run(accuracy, feed_dict={x: x_test, labels: y_test})
        session_s = best_time(lambda: sess.run(accuracy, {x: x_test, labels: y_test}), epochs)

    reference = model.logits(x_test)
    acc_np = float(np.mean(reference.argmax(axis=1) == y_test))
    diff = float(np.max(np.abs(logits_v - reference)))
    echo(f"build graph + kn.function: {build_s * 1e3:.2f} ms; first call: {first_s * 1e3:.2f} ms")
    echo(
        f"steady call (best of {epochs} passes over {len(test)} images): "
        f"kn.function {call_s * 1e3:.3f} ms, kn.Session {session_s * 1e3:.3f} ms"
    )
    echo(
        f"held-out accuracy: {float(acc_f):.4f} (kn.function), {float(acc_s):.4f} (kn.Session), "
        f"{acc_np:.4f} (NumPy reference); max |logits - NumPy| = {diff:.2e}"
    )

    written = write_dumps(f, Path(out))
    for path in written:
        echo(f"wrote {path} ({path.stat().st_size} bytes)")
    return {
        "accuracy": float(acc_f),
        "session_accuracy": float(acc_s),
        "numpy_accuracy": acc_np,
        "max_abs_diff": diff,
        "written": written,
    }


def write_dumps(f, out: Path) -> list[Path]:
    """The text, JSON and DOT dumps of compiled function `f`, written atomically into `out`."""
    import kiln as kn

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt, suffix in (("text", "txt"), ("json", "json"), ("dot", "dot")):
        path = out / f"graph.{suffix}"
        write_atomic(path, kn.dump(f, format=fmt))
        written.append(path)
    return written
