"""Pictures where people would rather look than read: a memory plan's arena over time, and
training curves. Both need matplotlib (`pip install 'kiln[plot]'`); nothing else in kiln does.

Figures are drawn with matplotlib's object API on the Agg canvas, never through `pyplot`, so
plotting changes no global state (no backend switch, no open figures) in the caller's process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["draw_plan", "plot_curves", "plot_plan", "require_matplotlib"]


def require_matplotlib(what: str):
    """`matplotlib.figure.Figure`, or ModuleNotFoundError naming `what` needed it and how to
    install it.

    >>> import pytest
    >>> _ = pytest.importorskip("matplotlib")  # the `plot` extra
    >>> require_matplotlib("a test").__name__
    'Figure'
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ModuleNotFoundError(
            f"{what} needs matplotlib, which is not installed: pip install 'kiln[plot]' "
            f"(or pip install matplotlib); the import failed with: {e}",
            name="matplotlib",
        ) from None
    return Figure


def _save(fig, path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    FigureCanvasAgg(fig)  # attaches the canvas savefig draws on
    fig.savefig(path, dpi=100, format=path.suffix[1:] or "png")
    return path


def plot_plan(plan, path, title: str | None = None) -> Path:
    """Draws `plan` (a `MemoryPlan`) as the arena over time and writes it to `path` (PNG, or
    any format matplotlib knows by the suffix): each buffer is a rectangle spanning the
    schedule steps it is live (x) and its bytes in the arena, offset to offset + size (y).
    Dashed lines mark the arena's size and the lower bound. Returns the path.

    >>> import pytest, tempfile, pathlib
    >>> _ = pytest.importorskip("matplotlib")  # the `plot` extra
    >>> from kiln.passes import MemoryPlan
    >>> plan = MemoryPlan.build([4096, 4096, 8192], [0, 1, 2], [1, 2, 3], ["a", "b", "c"])
    >>> path = plot_plan(plan, pathlib.Path(tempfile.mkdtemp()) / "plan.png")
    >>> path.read_bytes()[:4] == b"\\x89PNG"
    True
    """
    return _save(draw_plan(plan, title), path)


def draw_plan(plan, title: str | None = None):
    """The figure `plot_plan` writes (a `matplotlib.figure.Figure`): one Rectangle patch per
    buffer, in the plan's order, at (first step - 0.45, offset), 0.9 step wider than its live
    range and as tall as its size, in the unit the y axis names.

    >>> import pytest
    >>> _ = pytest.importorskip("matplotlib")  # the `plot` extra
    >>> from kiln.passes import MemoryPlan
    >>> plan = MemoryPlan.build([4096, 4096, 8192], [0, 1, 2], [1, 2, 3], ["a", "b", "c"])
    >>> [p.get_xy() for p in draw_plan(plan).axes[0].patches]  # KiB
    [(-0.45, 0.0), (0.55, 8.0), (1.55, 0.0)]
    """
    figure = require_matplotlib("MemoryPlan.plot")
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    fig = figure(figsize=(9, 5), layout="constrained")
    ax = fig.add_subplot()
    n = len(plan.sizes)
    cmap = colormaps["tab20"]
    scale, unit = _unit(max(plan.arena_bytes, 1))
    label = n <= 40  # names only where they can be read
    for i in range(n):
        x, width = plan.starts[i] - 0.45, plan.ends[i] - plan.starts[i] + 0.9
        y, height = plan.offsets[i] / scale, plan.sizes[i] / scale
        ax.add_patch(Rectangle((x, y), width, height, facecolor=cmap(i % 20), edgecolor="black",
                               lw=0.5))  # fmt: skip
        if label and height > 0:
            ax.text(x + width / 2, y + height / 2, plan.names[i], ha="center", va="center",
                    fontsize=7, clip_on=True)  # fmt: skip
    last = max(plan.ends, default=0)
    for value, name, style in ((plan.arena_bytes, "arena", "--"),
                               (plan.lower_bound_bytes, "lower bound", ":")):  # fmt: skip
        ax.axhline(value / scale, color="black", linestyle=style, lw=1)
        ax.text(last + 1, value / scale, f"{name} ", va="bottom", ha="right", fontsize=8)
    ax.set_xlim(-0.5, last + 1)
    ax.set_ylim(0, max(plan.arena_bytes, plan.lower_bound_bytes, 1) / scale * 1.05)
    ax.set_xlabel("schedule step (buffer live from its definition to its last use)")
    ax.set_ylabel(f"arena offset ({unit})")
    ratio = plan.arena_bytes / plan.lower_bound_bytes if plan.lower_bound_bytes else 1.0
    ax.set_title(title or f"{n} buffers in an arena of {plan.arena_bytes / scale:.1f} {unit} "
                 f"({ratio:.2f}x the lower bound; keeping all: "
                 f"{plan.naive_bytes / scale:.1f} {unit})")  # fmt: skip
    return fig


def plot_curves(
    losses: Mapping[str, Sequence[float]],
    accuracies: Mapping[str, Sequence[float]],
    path,
    title: str = "training",
) -> Path:
    """Writes a PNG of loss (left) and held-out accuracy (right) per epoch, one line per run
    (`{"eager": [...], ...}`). Returns the path.

    >>> import pytest, tempfile, pathlib
    >>> _ = pytest.importorskip("matplotlib")  # the `plot` extra
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "curves.png"
    >>> plot_curves({"a": [1.0, 0.5]}, {"a": [0.6, 0.9]}, path).stat().st_size > 1000
    True
    """
    figure = require_matplotlib("kiln demo --plot")
    fig = figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    for ax, curves, name in ((left, losses, "training loss (mean over the epoch)"),
                             (right, accuracies, "held-out accuracy")):  # fmt: skip
        for k, (run, values) in enumerate(curves.items()):  # styles: runs that agree overlap
            style = ("-", "--", ":", "-.")[k % 4]
            ax.plot(range(1, len(values) + 1), values, linestyle=style, lw=max(3.0 - k, 1.0),
                    marker="o", markersize=2, label=run)  # fmt: skip
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        if curves:
            ax.legend()
    if all(v > 0 for values in losses.values() for v in values):
        left.set_yscale("log")
    fig.suptitle(title)
    return _save(fig, path)


def _unit(n: int) -> tuple[int, str]:
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if n >= 1024**power:
            return 1024**power, unit
    return 1, "B"
