"""The `kiln` command line, run as users run it: `python -m kiln ...` in a subprocess."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln as kn
from kiln import cli, demo, sysinfo

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_cupy(tmp_path):
    """A folder to put first on PYTHONPATH so that `import cupy` fails, GPU or not."""
    folder = tmp_path / "hide_cupy"
    (folder / "cupy").mkdir(parents=True)
    (folder / "cupy" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    return folder


def run_kiln(*args, path_first=None, env=None, unset=()):
    """`python -m kiln *args` with this checkout's kiln; returns the CompletedProcess."""
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(env or {})
    paths = [str(p) for p in (path_first, ROOT) if p] + [environ.get("PYTHONPATH", "")]
    environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.run(
        [sys.executable, "-m", "kiln", *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=300,
    )


def info_rows(stdout):
    """`key: value` lines of `kiln info` as a list of (key, value), keys stripped."""
    rows = []
    for line in stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and not line.startswith("warning:"):
            rows.append((key.strip(), value.strip()))
    return rows


def test_cli_help_lists_the_commands():
    result = run_kiln("--help")
    assert result.returncode == 0, result.stderr
    for command in ("info", "demo", "dump", "export", "import", "bench"):
        assert command in result.stdout
    demo_help = run_kiln("demo", "--help")
    assert demo_help.returncode == 0
    for option in ("--epochs", "--device", "--out", "kiln-demo"):
        assert option in demo_help.stdout


def test_cli_info_reports_versions_blas_and_why_cuda_is_unavailable(no_cupy):
    result = run_kiln("info", path_first=no_cupy, unset=["OPENBLAS_CORETYPE"])
    assert result.returncode == 0, result.stderr
    rows = dict(info_rows(result.stdout))
    assert rows["kiln"] == kn.__version__
    assert rows["numpy"] == np.__version__
    assert rows["python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert rows["executable"] == sys.executable
    assert re.match(r"\d+\.\d+", rows["scipy"])
    blas = rows["blas (numpy build)"]
    assert not blas.startswith("unknown"), blas
    assert rows["devices"].split(", ")[0] == "cpu"
    assert rows["cuda"].startswith("not usable:") and "CuPy" in rows["cuda"], rows["cuda"]
    assert rows["OPENBLAS_CORETYPE"] == "not set"
    assert "warning:" not in result.stdout
    if "openblas" in blas.lower():  # NumPy's wheels: the loaded OpenBLAS reports its kernels
        loaded = [v for k, v in info_rows(result.stdout) if k == "openblas core"]
        assert loaded and not any(v.startswith("unknown") for v in loaded), result.stdout
        threads = [v for k, v in info_rows(result.stdout) if k == "openblas threads"]
        assert threads and all(re.match(r"\d+ \(", v) for v in threads), threads


def test_cli_info_warns_when_openblas_coretype_is_forced():
    result = run_kiln("info", env={"OPENBLAS_CORETYPE": "Prescott"})
    assert result.returncode == 0, result.stderr
    assert dict(info_rows(result.stdout))["OPENBLAS_CORETYPE"] == "Prescott"
    assert re.search(r"^warning: OPENBLAS_CORETYPE=Prescott .*2x", result.stdout, re.M)


def test_sysinfo_finds_openblas_symbols_under_any_spelling():
    class Library:
        scipy_openblas_get_corename64_ = "scipy"
        openblas_get_config64_ = "plain"

    assert sysinfo.openblas_symbol(Library(), "openblas_get_corename") == "scipy"
    assert sysinfo.openblas_symbol(Library(), "openblas_get_config") == "plain"
    assert sysinfo.openblas_symbol(Library(), "openblas_get_parallel") is None


def test_cli_demo_trains_checkpoints_and_writes_the_three_dumps(tmp_path):
    out = tmp_path / "demo out"
    result = run_kiln("demo", "--out", out)
    assert result.returncode == 0, result.stderr
    accuracy = re.search(r"held-out accuracy: ([\d.]+)", result.stdout)
    assert accuracy and float(accuracy.group(1)) >= 0.97, result.stdout
    per_epoch = re.search(r"40 epochs, ([\d.]+) ms per epoch", result.stdout)
    assert per_epoch and 40 * float(per_epoch.group(1)) < 30_000, result.stdout
    modes = re.findall(r"^(graph mode|eager|kn.compile) +accuracy ([\d.]+)", result.stdout, re.M)
    assert [m for m, _ in modes] == ["graph mode", "eager", "kn.compile"], result.stdout
    assert all(float(a) >= 0.97 for _, a in modes), result.stdout
    diffs = re.findall(r"after one epoch ([\d.e+-]+)", result.stdout)
    assert len(diffs) == 2 and all(float(d) < 1e-4 for d in diffs), result.stdout
    assert f"restored it: held-out accuracy {accuracy.group(1)} (identical values)" in (
        result.stdout
    )
    names = ("model.safetensors", "graph.txt", "graph.json", "graph.dot", "model.onnx")
    # onnxruntime runs the exported model on the held-out images: kiln's predictions
    assert re.search(r"model.onnx: onnxruntime predicts the same class as kiln for 449 of 449 "
                     r"held-out images", result.stdout), result.stdout  # fmt: skip
    for name in names:
        assert f"wrote {out / name}" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    text = (out / "graph.txt").read_text()
    assert "matmul" in text and "assign" in text  # the training step, updates included
    assert (out / "graph.dot").read_text().startswith("digraph")

    # The JSON dump loads with the trained values, and its loss on held-out data is low.
    graph = kn.load_graph((out / "graph.json").read_text())
    saved = kn.load(out / "model.safetensors")
    assert {v.name: v.numpy() for v in graph.variables}.keys() >= saved.keys()
    for v in graph.variables:
        if v.name in saved:
            np.testing.assert_array_equal(v.numpy(), saved[v.name])
    x, y = demo.load_digits()
    _, test = demo.split(len(y))
    loss = kn.function(graph.inputs, graph.outputs[0])(x[test], y[test])
    assert 0 < float(loss) < 0.2

    for fmt, start in (("text", "{"), ("dot", "digraph")):
        printed = run_kiln("dump", out / "graph.json", "--format", fmt)
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout.lstrip().startswith(start), printed.stdout[:200]


def test_cli_demo_without_onnx_says_so_and_writes_the_rest(tmp_path):
    hide = tmp_path / "hide_onnx"
    (hide / "onnx").mkdir(parents=True)
    (hide / "onnx" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    out = tmp_path / "out"
    result = run_kiln("demo", "--epochs", "1", "--out", out, path_first=hide)
    assert result.returncode == 0, result.stderr
    assert "model.onnx not written: ONNX export needs the onnx package" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "graph.dot", "graph.json", "graph.txt", "model.safetensors"
    ]  # fmt: skip
    export = run_kiln("export", out / "graph.json", tmp_path / "m.onnx", path_first=hide)
    assert export.returncode == 1
    assert export.stderr.startswith("kiln export: error: needs the onnx package"), export.stderr
    assert "Traceback" not in export.stderr


def _small_graph_json(tmp_path):
    """A JSON dump of a graph with a Variable, a named dim and a training-step update."""
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, ("n", 3), name="x")
        w = kn.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 4, name="w")
        y = kn.tanh(kn.matmul(x, w))
        total = kn.sum(y * y)
        step = kn.optim.SGD(lr=0.1).minimize(total)
    path = tmp_path / "graph.json"
    path.write_text(kn.dump([y, total, step], "json"))
    return path, y.name, total.name


def test_cli_export_and_import_round_trip(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path, y_name, total_name = _small_graph_json(tmp_path)
    model = tmp_path / "out" / "m.onnx"
    model.parent.mkdir()
    # the training step (a group of updates) has no ONNX form: say so, write nothing
    result = run_kiln("export", path, model)
    assert result.returncode == 1
    assert "op group has no ONNX form" in result.stderr and "--output NAME" in result.stderr
    assert not model.exists() and "Traceback" not in result.stderr
    result = run_kiln("export", path, model, "--output", "nothing")
    assert result.returncode == 2 and "has no node named 'nothing'" in result.stderr

    result = run_kiln("export", path, model, "--output", y_name, "--output", total_name)
    assert result.returncode == 0, result.stderr
    assert f"wrote {model}: ONNX opset 18" in result.stdout
    a = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    want = np.tanh(a @ (np.arange(6, dtype=np.float32).reshape(3, 2) / 4))  # NumPy's values
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    got_y, got_total = session.run(None, {"x": a})
    np.testing.assert_allclose(got_y, want, rtol=1e-6)
    np.testing.assert_allclose(got_total, np.sum(want * want), rtol=1e-5)

    printed = run_kiln("import", model, "--dump", "json")
    assert printed.returncode == 0, printed.stderr
    g = kn.load_graph(printed.stdout)
    assert [s.name for s in g.inputs] == ["x"] and g.inputs[0].shape[0] == kn.Dim("n")
    got = kn.function(g.inputs, g.outputs)(a)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    text = run_kiln("import", model)  # --dump text by default
    assert text.returncode == 0 and text.stdout.startswith("{ lambda x:f32[n,3]"), text.stdout
    assert "tanh" in text.stdout and "test_cli.py" in text.stdout  # sites come back
    dot = run_kiln("import", model, "--dump", "dot")
    assert dot.returncode == 0 and dot.stdout.startswith("digraph"), dot.stdout[:100]

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    result = run_kiln("import", bad)
    assert result.returncode == 2 and "cannot read an ONNX model" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_demo_on_unusable_cuda_exits_nonzero_with_the_reason(tmp_path, no_cupy):
    result = run_kiln("demo", "--device", "cuda", "--out", tmp_path / "out", path_first=no_cupy)
    assert result.returncode != 0
    assert "DeviceError" in result.stderr and "CuPy" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # no fallback: nothing ran


def test_cli_dump_of_malformed_file_exits_2_with_a_clear_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "kiln-graph", "nodes": [{"op": 3}]})[:-5])
    result = run_kiln("dump", bad, "--format", "text")
    assert result.returncode == 2
    assert result.stderr.startswith(f"kiln dump: error: {bad} is not a valid kiln graph")
    assert "Traceback" not in result.stderr

    missing = run_kiln("dump", tmp_path / "missing.json")
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr and "Traceback" not in missing.stderr


def _surrogate_graph(tmp_path):
    """A graph file whose node names are a lone surrogate and a non-ASCII letter: JSON can
    spell them, and load_graph takes any string as a name."""
    with kn.Graph().as_default():
        y = kn.stop_gradient(kn.exp(kn.placeholder(kn.float32, (2,), name="\u00e9")))
    doc = json.loads(kn.dump(y, "json"))
    doc["nodes"][-1]["name"], doc["outputs"] = "\ud800", ["\ud800"]
    path = tmp_path / "names.json"
    path.write_text(json.dumps(doc))  # ASCII: json.dumps escapes both names
    return path


@pytest.mark.parametrize("fmt", ["text", "dot", "json"])
def test_cli_dump_prints_a_lone_surrogate_name_escaped(tmp_path, fmt):
    # Bug: a node named "\ud800" made `kiln dump` die with a UnicodeEncodeError traceback.
    path = _surrogate_graph(tmp_path)
    result = run_kiln("dump", path, "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "\\ud800" in result.stdout
    ascii_only = run_kiln("dump", path, "--format", fmt, env={"PYTHONIOENCODING": "ascii"})
    assert ascii_only.returncode == 0 and ascii_only.stderr == ""
    assert ascii_only.stdout.isascii() and "\\ud800" in ascii_only.stdout
    if fmt == "text":  # the text IR prints names as they are: é where the encoding has it
        assert "\u00e9:f32[2]" in result.stdout and "\\xe9:f32[2]" in ascii_only.stdout


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_cli_dump_reads_dev_zero_only_up_to_the_limit():
    # Bug: `kiln dump /dev/zero` read without end.
    result = run_kiln("dump", "/dev/zero")
    assert result.returncode == 2
    assert result.stderr == (
        "kiln dump: error: cannot read /dev/zero: it is over 268435456 bytes, "
        "the most a graph file may have\n"
    )


def test_cli_dump_refuses_a_file_over_the_limit(tmp_path, monkeypatch, capsys):
    from kiln.graph import serialize

    path = _surrogate_graph(tmp_path)
    size = path.stat().st_size
    monkeypatch.setattr(serialize, "MAX_CHARS", size)
    assert cli.main(["dump", str(path)]) == 0  # the limit itself is allowed
    assert "stop_gradient" in capsys.readouterr().out
    monkeypatch.setattr(serialize, "MAX_CHARS", size - 1)
    assert cli.main(["dump", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == f"kiln dump: error: cannot read {path}: it is over {size - 1} bytes, " \
        "the most a graph file may have\n"  # fmt: skip


def test_cli_dump_prints_graphs_too_big_to_run(tmp_path):
    # Printing runs nothing, so the limits on values (kn.load_graph's max_elements) are lifted.
    with kn.Graph().as_default():
        y = kn.exp(kn.placeholder(kn.float32, (40000, 40000), name="x"))
    path = tmp_path / "big.json"
    path.write_text(kn.dump(y, "json"))
    with pytest.raises(kn.GraphFormatError, match="max_elements"):
        kn.load_graph(path.read_text())
    result = run_kiln("dump", path)
    assert result.returncode == 0, result.stderr
    assert "exp x" in result.stdout and "f32[40000,40000]" in result.stdout


def test_cli_bench_runs_the_overhead_benchmark():
    result = run_kiln("bench", "overhead", "--quick")
    assert result.returncode == 0, result.stderr
    assert "bench_overhead.py" in result.stdout and "bench_training.py" not in result.stdout
    rows = [line for line in result.stdout.splitlines() if re.search(r"\d+\.\d+x$", line)]
    assert len(rows) == 4, result.stdout

    assert cli.main(["bench", "no_such_benchmark"]) == cli.EXIT_USAGE


def test_demo_write_atomic_replaces_the_whole_file(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text("old")
    demo.write_atomic(path, "new text")
    assert path.read_text() == "new text"
    assert [p.name for p in tmp_path.iterdir()] == ["graph.txt"]  # no temporary file left
