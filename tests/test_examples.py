"""Each script in examples/ runs and prints what examples/README.md says it prints."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "examples" / "README.md").read_text()


def run(name: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def documented(name: str) -> list[str]:
    """The output block under the script's heading in the README."""
    section = README.split(f"## `{name}`")[1]
    return section.split("```")[1].strip().splitlines()


def shape(line: str) -> str:
    """A line with its numbers blanked: the README's lines and the output's must match."""
    return re.sub(r"-?\d+(\.\d+)?", "#", line)


def numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", line)]


@pytest.mark.parametrize(
    "name", ["house_prices.py", "regression_mlp.py", "digits_classifier.py", "digits_graph.py"]
)
def test_example_prints_what_the_readme_says(name):
    out = run(name).strip().splitlines()
    assert [shape(s) for s in out] == [shape(s) for s in documented(name)]
    last = {line.split()[0]: numbers(line) for line in out}
    if name == "house_prices.py":
        assert numbers(out[-1])[0] < 5.0  # coefficients within 5% of the true ones
        assert 20 < numbers(out[3])[1] < 30  # the mse ends at the noise variance, 25
    elif name == "regression_mlp.py":
        assert numbers(out[-1])[0] < 0.02  # best validation mse, noise floor 0.0025
    else:
        assert last["final"][0] > 0.93  # validation accuracy
    if name == "digits_classifier.py":
        assert out[-2].endswith("parameters identical to the uninterrupted run: True")
    if name == "digits_graph.py":  # the graph-mode run is the eager run, number for number
        eager = [line for line in documented("digits_classifier.py") if line.startswith("epoch")]
        for got, want in zip(out[:6], eager, strict=True):
            assert numbers(got) == pytest.approx(numbers(want), abs=2e-3), (got, want)
