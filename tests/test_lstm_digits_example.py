"""examples/lstm_digits.py trains its LSTM to >= 95% held-out accuracy in graph mode, eagerly
and under kn.compile (the issue's target), from the same initial weights."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "lstm_digits.py"


def test_lstm_digits_reaches_95_percent_in_every_mode():
    spec = importlib.util.spec_from_file_location("lstm_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = []
    results = module.main([], echo=lines.append)
    assert set(results) == {"graph mode", "eager", "kn.compile"}
    for mode, (accuracy, _seconds) in results.items():
        assert accuracy >= 0.95, f"{mode}: held-out accuracy {accuracy:.4f}"
    assert len(lines) == 3
