"""`kiln demo`: train an MLP on the bundled digits three ways, from the same initial values.

Graph mode, TF1-style (placeholders, kn.nn layers, AdamW's train op,
`Session.run([loss, train_op])`), with a checkpoint saved, the variables wiped and restored
from it, and the training graph's dumps; then eagerly (PyTorch's five steps) and under
`kn.compile`, comparing accuracies, parameters after one epoch, and time per epoch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .checkpoint import write_atomic

HIDDEN = 256
EPOCHS = 40
BATCH = 16
LR = 1e-3
DROPOUT = 0.0  # no dropout: graph, eager and compiled modes then draw no random numbers
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
class Program:
    """The demo's graph: an MLP, its training step, and its evaluation."""

    graph: object
    model: object
    x: object
    labels: object
    loss: object
    train_op: object
    logits: object
    accuracy: object


def make_model(hidden: int = HIDDEN, dropout: float = DROPOUT):
    """The MLP, initialized from kiln's seed: each mode of the demo gets an identical one."""
    import kiln as kn

    kn.manual_seed(SEED)
    return kn.nn.MLP([64, hidden, 10], dropout=dropout)


def build_graph(model=None) -> Program:
    """TF1-style: placeholders, an MLP of kn.nn.Linear layers, AdamW's train op, accuracy."""
    import kiln as kn

    model = model or make_model()
    graph = kn.Graph()
    with graph.as_default():
        x = kn.placeholder(kn.float32, ("batch", 64), name="x")
        labels = kn.placeholder(kn.int64, ("batch",), name="labels")
        with kn.name_scope("train"):
            loss = kn.cross_entropy(model(x), labels)
            train_op = kn.optim.AdamW(lr=LR).minimize(loss)
        model.eval()  # the evaluation graph: no dropout, the same Variables
        with kn.name_scope("eval"):
            logits = model(x)
            correct = kn.eq(kn.argmax(logits, axis=1), labels)
            accuracy = kn.mean(kn.cast(correct, kn.float32))
        model.train()
    return Program(graph, model, x, labels, loss, train_op, logits, accuracy)


def train(step, x, y, epochs: int, desc: str, after_first=None, progress=True, evaluate=None):
    """Minibatch training: `step(x_batch, y_batch)` returns the batch loss; every mode sees
    the same batches. Returns each epoch's mean loss, each epoch's seconds (training only),
    and, with `evaluate` (a function of no arguments), its value after each epoch."""
    from tqdm import tqdm

    rng = np.random.default_rng(SEED)
    losses, scores = [], []
    seconds = []
    bar = tqdm(range(epochs), desc=desc, unit="epoch", disable=not progress)
    for epoch in bar:
        start = time.perf_counter()
        order = rng.permutation(len(y))
        total = 0.0
        for i in range(0, len(order), BATCH):
            batch = order[i : i + BATCH]
            total += float(step(x[batch], y[batch])) * len(batch)
        seconds.append(time.perf_counter() - start)
        losses.append(total / len(y))
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        if epoch == 0 and after_first is not None:
            after_first()
        if evaluate is not None:
            scores.append(evaluate())
    return losses, seconds, scores


def epoch_times(seconds: list) -> str:
    """The mean seconds per epoch in ms, with the first epoch's apart from the others' mean
    (the first pays for compiling: tracing, planning, loading compiled loops).

    >>> epoch_times([0.3, 0.02, 0.02, 0.02])
    '   90.0 ms per epoch (first 300.0, then 20.0)'
    """
    mean = sum(seconds) / max(len(seconds), 1)
    if len(seconds) < 2:
        return f"{mean * 1e3:7.1f} ms per epoch"
    rest = sum(seconds[1:]) / (len(seconds) - 1)
    return f"{mean * 1e3:7.1f} ms per epoch (first {seconds[0] * 1e3:.1f}, then {rest * 1e3:.1f})"


def eager_step(model):
    """PyTorch's five steps, eagerly: zero_grad, forward, loss, backward, step."""
    import kiln as kn

    opt = kn.optim.AdamW(model.parameters(), lr=LR)

    def step(xb, yb):
        opt.zero_grad()
        loss = kn.cross_entropy(model(kn.tensor(xb)), kn.tensor(yb))
        loss.backward()
        opt.step()
        return loss.item()

    return step


def compiled_step(model):
    """The forward pass and loss under kn.compile; backward runs the compiled gradient."""
    import kiln as kn

    opt = kn.optim.AdamW(model.parameters(), lr=LR)
    forward = kn.compile(lambda xb, yb: kn.cross_entropy(model(xb), yb))

    def step(xb, yb):
        opt.zero_grad()
        loss = forward(kn.tensor(xb), kn.tensor(yb))
        loss.backward()
        opt.step()
        return loss.item()

    return step


def eager_accuracy(model, x, y) -> float:
    import kiln as kn

    model.eval()
    with kn.no_grad():
        logits = model(kn.tensor(x)).numpy()
    model.train()
    return float(np.mean(logits.argmax(axis=1) == y))


def run(
    out: Path,
    device: str = "cpu",
    epochs: int = EPOCHS,
    echo=print,
    progress=True,
    plot: bool = False,
) -> dict:
    """The whole demo; returns what it measured. Raises DeviceError for an unusable device;
    with `plot`, also writes `curves.png` (loss and held-out accuracy per epoch, each mode)
    and raises ModuleNotFoundError before any work when matplotlib is missing."""
    import kiln as kn

    kn.runtime.get_backend(device)  # an unusable device fails here, before any work
    if plot:
        from .plot import require_matplotlib

        require_matplotlib("kiln demo --plot")
    x_all, y_all = load_digits()
    train_idx, test = split(len(y_all))
    x_train, y_train, x_test, y_test = x_all[train_idx], y_all[train_idx], x_all[test], y_all[test]
    echo(f"digits: {len(train_idx)} training and {len(test)} held-out images of 8x8 pixels")

    p = build_graph()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    first = {}
    with kn.Session(graph=p.graph, device=device) as sess:
        graph_step = lambda xb, yb: sess.run([p.loss, p.train_op], {p.x: xb, p.labels: yb})[0]  # noqa: E731
        feed = {p.x: x_test, p.labels: y_test}
        evaluate = lambda: float(sess.run(p.accuracy, feed))  # noqa: E731
        losses, graph_times, graph_acc = train(graph_step, x_train, y_train, epochs, "graph mode",
                                           lambda: first.update(graph=_snapshot(p.model)),
                                           progress, evaluate)  # fmt: skip
        accuracy = graph_acc[-1]
        graph_s = sum(graph_times) / max(epochs, 1)
        echo(
            f"graph mode: MLP 64-{HIDDEN}-10, AdamW, {epochs} epochs, "
            f"{graph_s * 1e3:.1f} ms per epoch; loss {losses[0]:.4f} -> {losses[-1]:.4f}"
        )
        echo(f"held-out accuracy: {accuracy:.4f}")
        checkpoint = out / "model.safetensors"
        sess.save(checkpoint)
        trained = {v.name: v.numpy() for v in p.graph.variables}
        for v in p.graph.variables:  # forget the training, then restore it from the file
            v.assign(np.zeros(v.shape, v.dtype))
        sess.restore(checkpoint)
        restored = float(sess.run(p.accuracy, feed))
        same = all(np.array_equal(trained[v.name], v.numpy()) for v in p.graph.variables)
    echo(
        f"saved {checkpoint}, restored it: held-out accuracy {restored:.4f} "
        f"({'identical' if same and restored == accuracy else 'DIFFERENT'} values)"
    )
    modes = {"graph mode": (accuracy, graph_times)}
    curves = {"graph mode": (losses, graph_acc)}
    for name, make_step in (("eager", eager_step), ("kn.compile", compiled_step)):
        model = make_model()
        mode_losses, seconds, mode_acc = train(
            make_step(model), x_train, y_train, epochs, name,
            lambda m=model, n=name: first.update({n: _snapshot(m)}),
            progress, lambda m=model: eager_accuracy(m, x_test, y_test),
        )  # fmt: skip
        modes[name] = (mode_acc[-1], seconds)  # each epoch's
        curves[name] = (mode_losses, mode_acc)
    for name, (acc, seconds) in modes.items():
        diff = "" if name == "graph mode" else (
            f"; max parameter difference from graph mode after one epoch "
            f"{_max_difference(first['graph'], first[name]):.2e}"
        )  # fmt: skip
        echo(f"{name:<11} accuracy {acc:.4f}, {epoch_times(seconds)}{diff}")
    written = write_dumps([p.loss, p.train_op], out)
    onnx_path = write_onnx(p, out, x_test, echo)
    written += [onnx_path] if onnx_path else []
    if plot:
        from .plot import plot_curves

        title = f"kiln demo: MLP 64-{HIDDEN}-10 on the digits, AdamW"
        losses_of = {k: v[0] for k, v in curves.items()}
        accuracy_of = {k: v[1] for k, v in curves.items()}
        written.append(plot_curves(losses_of, accuracy_of, out / "curves.png", title))
    for path in [checkpoint, *written]:
        echo(f"wrote {path} ({path.stat().st_size} bytes)")
    return {
        "accuracy": accuracy,
        "restored_accuracy": restored,
        "losses": losses,
        "train_seconds": graph_s * epochs,
        "modes": modes,
        "curves": curves,
        "written": [checkpoint, *written],
    }


def _snapshot(model) -> dict:
    """Copies of the model's values (its state_dict shares memory with the parameters)."""
    return {k: np.array(v.numpy(), copy=True) for k, v in model.state_dict().items()}


def _max_difference(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def write_onnx(p: Program, out: Path, x_test, echo=print) -> Path | None:
    """The trained model (images -> logits) as `out/model.onnx`, when the onnx package is
    installed (else None, saying so); onnxruntime, when installed, runs it on `x_test` and its
    predicted classes are compared with kiln's."""
    import kiln as kn

    try:
        import onnx  # noqa: F401
    except ImportError:
        echo("model.onnx not written: ONNX export needs the onnx package, which is not "
             "installed (pip install 'kiln[onnx]')")  # fmt: skip
        return None
    predict = kn.function([p.x], [p.logits])
    path = out / "model.onnx"
    kn.export_onnx(predict, path)
    try:
        import onnxruntime
    except ImportError:
        echo(f"{path}: not run (onnxruntime is not installed: pip install 'kiln[onnx]')")
        return path

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (theirs,) = session.run(None, {session.get_inputs()[0].name: x_test})
    (ours,) = predict(x_test)
    same = int(np.sum(theirs.argmax(axis=1) == ours.argmax(axis=1)))
    echo(
        f"{path}: onnxruntime predicts the same class as kiln for {same} of {len(x_test)} "
        f"held-out images (largest logit difference {np.max(np.abs(theirs - ours)):.1e})"
    )
    return path


def write_dumps(f, out: Path) -> list[Path]:
    """The text, JSON and DOT dumps of `f` (what kn.dump takes), written atomically."""
    import kiln as kn

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt, suffix in (("text", "txt"), ("json", "json"), ("dot", "dot")):
        path = out / f"graph.{suffix}"
        write_atomic(path, kn.dump(f, format=fmt))
        written.append(path)
    return written
