"""Plots: `f.plan.plot(path)` draws the memory plan, `kiln demo --plot` the training curves.

Both need matplotlib (the `plot` extra); the tests that draw skip without it, and one test
hides matplotlib to check the error that says how to install it.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln as kn
from kiln.passes import MemoryPlan

ROOT = Path(__file__).resolve().parent.parent


def _png(path: Path) -> np.ndarray:
    """The image's pixels (height, width, channels), after checking it is a PNG."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    image = pytest.importorskip("PIL.Image")
    with image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _assert_drawn(pixels: np.ndarray, size: tuple[int, int]) -> None:
    """A picture of `size` (width, height) with something drawn: many colours, not blank."""
    assert (pixels.shape[1], pixels.shape[0]) == size
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 20, len(colours)  # text, lines and filled rectangles
    assert (pixels < 128).any() and (pixels > 250).any()


def test_plan_plot_draws_each_buffer_where_the_plan_put_it(tmp_path):
    pytest.importorskip("matplotlib")
    from kiln.plot import draw_plan

    # a hand-made plan: the planner places the largest first (b at 0); a is live with b, c
    # after a's last use, so c reuses a's bytes
    plan = MemoryPlan.build([1024, 2048, 1024], [0, 1, 2], [1, 2, 3], ["a", "b", "c"])
    patches = draw_plan(plan).axes[0].patches
    got = [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in patches]
    expected = [  # (first step - 0.45, offset, live steps + 0.9, size), in KiB
        (plan.starts[i] - 0.45, plan.offsets[i] / 1024,
         plan.ends[i] - plan.starts[i] + 0.9, plan.sizes[i] / 1024)
        for i in range(3)
    ]  # fmt: skip
    np.testing.assert_allclose(got, expected)
    assert plan.offsets == [2048, 0, 2048]  # c at a's offset: the picture shows the reuse


def test_function_plan_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 64), name="x")
        w = kn.Variable(np.full((64, 32), 0.1, np.float32), name="w")
        loss = kn.mean(kn.tanh(x @ w) ** 2)
        (gw,) = kn.grad(loss, [w])
        f = kn.function([x], [loss, gw])
    f(np.ones((16, 64), np.float32))
    path = f.plan.plot(tmp_path / "plan.png")
    assert path == tmp_path / "plan.png"
    _assert_drawn(_png(path), (900, 500))  # figsize 9x5 inches at 100 dpi
    assert path.stat().st_size > 10_000


def run_kiln(*args, path_first=None):
    environ = dict(os.environ)
    paths = [str(p) for p in (path_first, ROOT) if p] + [environ.get("PYTHONPATH", "")]
    environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.run(
        [sys.executable, "-m", "kiln", *map(str, args)],
        capture_output=True, text=True, env=environ, cwd=ROOT, timeout=300,
    )  # fmt: skip


def test_demo_plot_writes_the_loss_and_accuracy_curves(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "demo"
    result = run_kiln("demo", "--epochs", "3", "--plot", "--out", out)
    assert result.returncode == 0, result.stderr
    assert f"wrote {out / 'curves.png'}" in result.stdout
    _assert_drawn(_png(out / "curves.png"), (1000, 400))


def test_demo_curves_are_the_measured_ones(tmp_path):
    pytest.importorskip("matplotlib")
    from kiln import demo

    result = demo.run(tmp_path, epochs=2, echo=lambda *a: None, progress=False, plot=True)
    curves = result["curves"]
    assert list(curves) == ["graph mode", "eager", "kn.compile"]
    for losses, accuracies in curves.values():
        assert len(losses) == len(accuracies) == 2
    # the last held-out accuracy of each curve is the one the demo reports
    assert curves["graph mode"][1][-1] == result["accuracy"]
    assert [c[1][-1] for c in curves.values()] == [a for a, _ in result["modes"].values()]
    assert (tmp_path / "curves.png").stat().st_size > 10_000


def test_demo_plot_without_matplotlib_says_how_to_install_it(tmp_path):
    hide = tmp_path / "hide"
    (hide / "matplotlib").mkdir(parents=True)
    (hide / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    result = run_kiln("demo", "--plot", "--out", tmp_path / "out", path_first=hide)
    assert result.returncode == 1
    assert "kiln demo --plot needs matplotlib" in result.stderr, result.stderr
    assert "pip install 'kiln[plot]'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # refused before any work


def test_plan_plot_without_matplotlib_raises_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    plan = MemoryPlan.build([64], [0], [1], ["a"])
    with pytest.raises(
        ModuleNotFoundError, match=r"MemoryPlan.plot needs matplotlib.*kiln\[plot\]"
    ):
        plan.plot(tmp_path / "plan.png")
    assert not (tmp_path / "plan.png").exists()
