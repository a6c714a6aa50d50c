"""`kiln bench` without names prints the performance table (bench/table.py): one row per
function of the registry bench/rows/row_*.py, with kiln, NumPy by hand and the floor."""

import importlib.util
import re
from pathlib import Path

from test_cli import run_kiln

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _table_module():
    spec = importlib.util.spec_from_file_location("kiln_bench_table", BENCH / "table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_the_row_files_in_name_order(tmp_path):
    table = _table_module()
    (tmp_path / "row_b.py").write_text("def two(quick): ...\nROWS = [two]\n")
    (tmp_path / "row_a.py").write_text("def one(quick): ...\ndef three(quick): ...\n"
                                       "ROWS = [one, three]\n")  # fmt: skip
    (tmp_path / "helper.py").write_text("ROWS = [print]\n")  # not a row file
    assert [f.__name__ for f in table.load_rows(tmp_path)] == ["one", "three", "two"]


def test_a_row_prints_its_ratio_to_the_floor_and_dashes_where_none():
    table = _table_module()
    line = table.format_row({"workload": "w", "unit": "ms", "kiln": 1.1, "numpy": 1.4,
                             "floor": 1.0, "note": "n"})  # fmt: skip
    assert line == "| w | 1.1 ms | 1.4 ms | 1 ms | 1.100x | n |"
    line = table.format_row({"workload": "w", "unit": "ms", "kiln": 0.5, "numpy": None,
                             "floor": None})  # fmt: skip
    assert line == "| w | 0.5 ms | — | — | — |  |"


def test_kiln_bench_prints_the_table_from_one_run():
    result = run_kiln("bench", "--quick", env={"KILN_BENCH_ROWS": "b16 new_batch"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "table.py" in lines[0] and lines[1].startswith("compiled loops: ")
    assert lines[2] == "" and lines[3].startswith("| workload | kiln | NumPy by hand")
    rows = [ln for ln in lines if ln.startswith("| MLP") or ln.startswith("| first call")]
    assert len(rows) == 2, result.stdout
    assert re.search(r"\| [\d.]+ ms \| [\d.]+ ms \| [\d.]+ ms \| [\d.]+x \|", rows[0])
