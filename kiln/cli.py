"""The `kiln` command (also `python -m kiln`): info, demo, dump, export, import and bench.

>>> build_parser().parse_args(["dump", "g.json", "--format", "dot"]).format
'dot'
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

# Exit codes: 0 success, 1 the command failed (an unusable device, a failed benchmark),
# 2 bad usage or bad input (argparse's own code for usage errors).
EXIT_FAILED = 1
EXIT_USAGE = 2

# The source tree's bench/ folder: beside the kiln package in a clone or editable install.
BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
GPU_BENCH = "bench_gpu.py"  # the one script `kiln bench --device cuda` runs
TABLE = "table.py"  # what plain `kiln bench` runs: the rows of bench/rows/row_*.py


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kiln",
        description="kiln: a define-then-run tensor graph compiler for Python.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"kiln {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sub.add_parser(
        "info",
        help="versions, BLAS, devices, and whether CUDA works (and why not)",
        description="Report Python, kiln, NumPy and SciPy versions; the BLAS NumPy was built "
        "with and the one loaded now (OpenBLAS: configuration, CPU core type, threads); the "
        "devices kiln can use; whether CUDA works and, if not, exactly why.",
    )

    demo = sub.add_parser(
        "demo",
        help="train an MLP on the bundled digits (graph, eager, compiled) and write its dumps",
        description="Train an MLP (64-256-10, AdamW) on the bundled digits data set in graph "
        "mode, TF1-style (placeholders, kn.nn layers, Session.run([loss, train_op])), with a "
        "progress bar; report the held-out accuracy; save a checkpoint, restore it and check "
        "the accuracy again; write text, JSON and DOT dumps of the training graph and, with "
        "the onnx extra installed, the trained model as model.onnx (checked by onnxruntime). "
        "Then train "
        "the same model from the same initial values eagerly and under kn.compile, and print "
        "the three accuracies, the largest parameter difference from graph mode after one "
        "epoch, and the time per epoch of each.",
    )
    demo.add_argument(
        "--epochs",
        type=_positive_int,
        default=40,
        metavar="N",
        help="training epochs over the 1,348 training images (default: 40)",
    )
    demo.add_argument(
        "--device",
        default="cpu",
        help="device to run on: cpu, cuda or cuda:N (default: cpu). An unusable device is "
        "an error that says why; there is no fallback to the CPU",
    )
    demo.add_argument(
        "--plot",
        action="store_true",
        help="also write curves.png: loss and held-out accuracy per epoch of the three modes "
        "(needs matplotlib: pip install 'kiln[plot]')",
    )
    demo.add_argument(
        "--distributed",
        action="store_true",
        help="under `mpiexec -n N`: train data-parallel on the N ranks (graph mode, eager and "
        "kn.compile), checking after every step that the ranks' parameters are identical and "
        "equal those of one process taking the same step (see docs/distributed.md)",
    )
    demo.add_argument(
        "--max-steps",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --distributed: stop each mode after N steps (a quick check)",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("kiln-demo"),
        metavar="DIR",
        help="folder for model.safetensors, graph.txt, graph.json, graph.dot and model.onnx, "
        "created if missing (default: ./kiln-demo)",
    )

    dump = sub.add_parser(
        "dump",
        help="print a graph saved as JSON, as text or DOT",
        description="Load a graph from a JSON dump (kn.dump(..., format='json')) and print "
        "it. A malformed file, or one over the size limit of kn.load_graph (max_chars), is an "
        "error on stderr with exit code 2. "
        "Names the terminal cannot show are printed as backslash escapes.",
    )
    dump.add_argument("file", type=Path, metavar="FILE.json", help="the JSON dump to read")
    dump.add_argument(
        "--format",
        choices=("text", "dot", "json"),
        default="text",
        help="output format (default: text)",
    )

    export = sub.add_parser(
        "export",
        help="write a graph saved as JSON as an ONNX model (needs kiln[onnx])",
        description="Load a graph from a JSON dump (kn.dump(..., format='json')) and write its "
        "program as an ONNX model with kn.export_onnx: placeholders become inputs, Variables "
        "initializers. An op with no ONNX form (a training step's updates, random ops) is an "
        "error naming it and its site; --output picks the values to export.",
    )
    export.add_argument("file", type=Path, metavar="GRAPH.json", help="the JSON dump to read")
    export.add_argument("model", type=Path, metavar="MODEL.onnx", help="the ONNX file to write")
    export.add_argument(
        "--output",
        action="append",
        metavar="NAME",
        help="export the value of this node (repeatable; default: the graph's outputs)",
    )
    export.add_argument("--opset", type=int, default=None, help="ONNX opset to write (default: 18)")

    imp = sub.add_parser(
        "import",
        help="read an ONNX model into a kiln graph and print it (needs kiln[onnx])",
        description="Import an ONNX model with kn.import_onnx and print the kiln graph as "
        "text, JSON (loadable with kn.load_graph and `kiln dump`) or DOT. An ONNX op kiln "
        "does not import is an error naming it.",
    )
    imp.add_argument("model", type=Path, metavar="MODEL.onnx", help="the ONNX model to read")
    imp.add_argument(
        "--dump",
        choices=("text", "dot", "json"),
        default="text",
        help="output format (default: text)",
    )

    bench = sub.add_parser(
        "bench",
        help="the performance table, or the benchmarks in bench/ (kiln beside NumPy)",
        description="Without NAME: print the performance table (bench/table.py), one row per "
        "workload with kiln, NumPy by hand and the floor measured in one run; each row is a "
        "function in bench/rows/row_*.py. With NAME or --scripts: run the bench/bench_*.py "
        "scripts of the source tree, each printing kiln's time beside hand-written NumPy "
        "measured in the same run; with --device cuda, bench_gpu.py instead, beside "
        "hand-written CuPy. Single-threaded.",
    )
    bench.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="run the scripts whose names contain one of these",
    )
    bench.add_argument(
        "--scripts", action="store_true", help="run every bench_*.py script, not the table"
    )
    bench.add_argument(
        "--quick", action="store_true", help="few repeats: checks that they run, not timings"
    )
    bench.add_argument(
        "--dir", type=Path, default=BENCH_DIR, help=f"folder of the scripts (default: {BENCH_DIR})"
    )
    bench.add_argument(
        "--device",
        default="cpu",
        help="cpu (default): the CPU suite, against NumPy; cuda or cuda:N: bench_gpu.py on that "
        "GPU, against hand-written CuPy (and PyTorch when importable). An unusable GPU is an "
        "error that says why",
    )
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _error(command: str, message: str) -> None:
    print(f"kiln {command}: error: {message}", file=sys.stderr)


def cmd_info(args) -> int:
    from .sysinfo import format_report, report

    rows, warnings = report()
    sys.stdout.write(format_report(rows, warnings))
    return 0


def cmd_demo(args) -> int:
    from . import demo
    from .errors import KilnError

    try:
        if args.distributed:
            if args.device != "cpu":
                _error("demo", "--distributed trains on the CPU (the MPI backend)")
                return EXIT_USAGE
            from .distributed import demo as distributed_demo

            results = distributed_demo.run(args.out, epochs=args.epochs, max_steps=args.max_steps)
            ok = all(spread == 0 and diff <= distributed_demo.TOLERANCE and acc == ref
                     for spread, diff, _, acc, ref in results.values())  # fmt: skip
            return 0 if ok else EXIT_FAILED
        demo.run(args.out, device=args.device, epochs=args.epochs, plot=args.plot)
    except ModuleNotFoundError as e:  # --plot without matplotlib: said before any work
        _error("demo", str(e))
        return EXIT_FAILED
    except KilnError as e:  # an unusable device, above all: say why, no fallback
        _error("demo", f"{type(e).__name__}: {e}")
        return EXIT_FAILED
    except OSError as e:
        _error("demo", f"cannot write to {args.out}: {e}")
        return EXIT_FAILED
    return 0


def _read_graph(command: str, path: Path):
    """The graph of a JSON dump, or None after saying on stderr why it cannot be read."""
    import kiln as kn

    from .graph import serialize

    limit = serialize.MAX_CHARS  # bytes here: a dump is ASCII, and UTF-8 is never shorter
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)  # bounded: a huge file, or /dev/zero, stops here
        if len(data) > limit:
            _error(command, f"cannot read {path}: it is over {limit} bytes, the most a "
                   "graph file may have")  # fmt: skip
            return None
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        _error(command, f"cannot read {path}: {e}")
        return None
    try:
        # NOTE: the size limits on values guard running a graph; printing or exporting is safe.
        return kn.load_graph(text, max_chars=limit, max_elements=None, max_work=None)
    except kn.GraphFormatError as e:
        _error(command, f"{path} is not a valid kiln graph (GraphFormatError): {e}")
        return None


def cmd_dump(args) -> int:
    import kiln as kn

    graph = _read_graph("dump", args.file)
    if graph is None:
        return EXIT_USAGE
    output = kn.dump(graph, format=args.format)
    _write_escaped(output if output.endswith("\n") else output + "\n")
    return 0


def _onnx_missing(command: str) -> bool:
    """Says on stderr that the command needs the onnx package, when it is not installed."""
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        _error(command, f"needs the onnx package, which cannot be imported ({e}): "
               "pip install 'kiln[onnx]'")  # fmt: skip
        return True
    return False


def cmd_export(args) -> int:
    import kiln as kn

    from .passes.program import prune

    if _onnx_missing("export"):
        return EXIT_FAILED
    graph = _read_graph("export", args.file)
    if graph is None:
        return EXIT_USAGE
    if args.output:
        by_name = {n.name: n.out for n in graph.nodes}
        unknown = [name for name in args.output if name not in by_name]
        if unknown:
            _error("export", f"{args.file} has no node named {unknown[0]!r}")
            return EXIT_USAGE
        graph.outputs = [by_name[name] for name in args.output]
        needed = {id(n.out) for n in prune(list(graph.outputs), [], {})}
        graph.inputs = [s for s in graph.inputs or graph.placeholders if id(s) in needed]
    try:
        model = kn.export_onnx(graph, args.model, opset=args.opset)
    except kn.GraphError as e:  # an op with no ONNX form, an opset kiln does not write
        hint = "" if args.output else " (--output NAME picks the values to export)"
        _error("export", f"GraphError: {e}{hint}")
        return EXIT_FAILED
    except OSError as e:
        _error("export", f"cannot write {args.model}: {e}")
        return EXIT_FAILED
    names = ", ".join(o.name for o in model.graph.output)
    print(f"wrote {args.model}: ONNX opset {model.opset_import[0].version}, "
          f"{len(model.graph.node)} nodes, outputs {names}")  # fmt: skip
    return 0


def cmd_import(args) -> int:
    import kiln as kn

    if _onnx_missing("import"):
        return EXIT_FAILED
    try:
        graph = kn.import_onnx(args.model)
    except kn.GraphError as e:  # an unreadable file, an op kiln does not import
        _error("import", f"GraphError: {e}")
        return EXIT_USAGE
    output = kn.dump(graph, format=args.dump)
    _write_escaped(output if output.endswith("\n") else output + "\n")
    return 0


def _write_escaped(text: str) -> None:
    """Writes `text` to stdout, with what its encoding cannot hold (a name of a loaded file
    that is a lone surrogate; non-ASCII text under an ASCII locale) as backslash escapes."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))


def cmd_bench(args) -> int:
    from .errors import DeviceError
    from .runtime.backend import get_backend, parse_device

    try:
        gpu = parse_device(args.device)[0] == "cuda"
        get_backend(args.device)  # an unusable device fails here, saying why
    except DeviceError as e:
        _error("bench", f"--device {args.device}: {e}")
        return EXIT_FAILED
    if not (gpu or args.names or args.scripts):
        scripts = [args.dir / TABLE] if (args.dir / TABLE).is_file() else []
    else:
        scripts = sorted(args.dir.glob("bench_*.py")) if args.dir.is_dir() else []
    # The GPU suite runs on a GPU only; the CPU suite on the CPU only.
    scripts = [s for s in scripts if (s.name == GPU_BENCH) == gpu or s.name == TABLE]
    if args.names:
        scripts = [s for s in scripts if any(name in s.stem for name in args.names)]
    if not scripts:
        matching = f" matching {' '.join(args.names)}" if args.names else ""
        _error(
            "bench",
            f"no bench_*.py scripts{matching} in {args.dir} (the benchmarks ship with the "
            "source tree: run from a clone, or pass --dir)",
        )
        return EXIT_USAGE
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # Measure this kiln, the one that runs the command, whatever else is on the path.
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        command = [sys.executable, str(script), *(["--quick"] if args.quick else [])]
        command += ["--device", args.device] if gpu else []
        if subprocess.run(command, env=env, check=False).returncode != 0:
            failed.append(script.name)
    if failed:
        _error("bench", f"failed: {', '.join(failed)}")
        return EXIT_FAILED
    return 0


COMMANDS = {
    "info": cmd_info,
    "demo": cmd_demo,
    "dump": cmd_dump,
    "export": cmd_export,
    "import": cmd_import,
    "bench": cmd_bench,
}


def main(argv: list[str] | None = None) -> int:
    """Runs the `kiln` command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # `kiln info | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
