"""The issue-17 table: one row per workload, kiln beside NumPy by hand and the floor, all
measured in this one run (single-threaded). `kiln bench` runs it.

Rows are a registry kept as files: each `bench/rows/row_*.py` has `ROWS`, a list of
functions `row(quick: bool) -> dict` returning `workload`, `unit`, `kiln`, `numpy` and
`floor` (numbers in `unit`, or None where there is none) and `note` (peers measured, what
the floor is). A row added is a file added; rows print in file-name order, then list order.

    python bench/table.py [--quick] [NAME ...]

NAME (or the words of KILN_BENCH_ROWS) picks the rows whose function names contain it.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROWS_DIR = HERE / "rows"
COLUMNS = ("workload", "kiln", "NumPy by hand", "floor", "kiln / floor", "note")


def load_rows(folder: Path = ROWS_DIR) -> list:
    """Every row function of the registry: `ROWS` of each row_*.py, in file-name order."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))  # rows import the bench_*.py scripts' helpers
    rows = []
    for path in sorted(folder.glob("row_*.py")):
        spec = importlib.util.spec_from_file_location(f"kiln_bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        rows += list(module.ROWS)
    return rows


def _cell(value, unit) -> str:
    return "—" if value is None else f"{value:.3g} {unit}"


def format_row(row: dict) -> str:
    """One markdown line of the table for a row's result."""
    unit, kiln, floor = row["unit"], row["kiln"], row.get("floor")
    ratio = "—" if floor in (None, 0) or kiln is None else f"{kiln / floor:.3f}x"
    cells = (row["workload"], _cell(kiln, unit), _cell(row.get("numpy"), unit),
             _cell(floor, unit), ratio, row.get("note", ""))  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def compiled_loops() -> str:
    """One line saying whether kiln's compiled loops run here: they need numba (the `fast`
    extra, also in `test`); without it every fused group runs on NumPy."""
    try:
        from importlib.metadata import version

        return f"compiled loops: numba {version('numba')}"
    except Exception:  # noqa: BLE001 - not installed (PackageNotFoundError) or unreadable
        return ("compiled loops: OFF, numba is not installed (pip install 'kiln[fast]'); fused "
                "groups run on NumPy and the fused rows measure that")  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: checks, not timings")
    parser.add_argument("names", nargs="*", help="only the rows whose function names contain one")
    args = parser.parse_args(argv)
    args.names = args.names or os.environ.get("KILN_BENCH_ROWS", "").split()
    rows = [r for r in load_rows() if not args.names or any(n in r.__name__ for n in args.names)]
    if not rows:
        print(f"no rows match {' '.join(args.names)}", file=sys.stderr)
        return 2
    print(compiled_loops() + "\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS), flush=True)
    for row in rows:
        print(format_row(row(args.quick)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
