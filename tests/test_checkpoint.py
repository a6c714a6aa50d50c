"""kn.save / kn.load (safetensors, atomic, strict on reading) and Session.save / restore."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln as kn
from kiln import checkpoint
from kiln.checkpoint import CheckpointError, load_metadata

ROUND_TRIP = {
    "f16": np.array([1.5, -2.25, 65504.0], np.float16),
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    "f64": np.array([[np.pi, -np.e]]),
    "i8": np.array([-128, 0, 127], np.int8),
    "i32": np.array([[1, -2], [3, -4]], np.int32),
    "i64": np.array([2**62, -(2**62)], np.int64),
    "u8": np.array([0, 255], np.uint8),
    "bool": np.array([True, False, True]),
    "scalar": np.array(3.25, np.float32),
    "scalar_int": np.int64(7),
    "empty": np.zeros((0, 3), np.float32),
    "empty_1d": np.zeros(0, np.int8),
}


def _path(tmp_path, name="ckpt.safetensors"):
    return os.fspath(tmp_path / name)


def test_checkpoint_round_trip_keeps_dtypes_shapes_values(tmp_path):
    path = _path(tmp_path)
    kn.save(ROUND_TRIP, path)
    loaded = kn.load(path)
    assert sorted(loaded) == sorted(ROUND_TRIP)
    for name, expected in ROUND_TRIP.items():
        expected = np.asarray(expected)
        got = loaded[name]
        # what was saved comes back (torch.load's rule): arrays as arrays, NumPy scalars as scalars
        assert type(got) is type(ROUND_TRIP[name]), name
        assert got.dtype == expected.dtype, name
        assert got.shape == expected.shape, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_checkpoint_round_trip_non_contiguous_and_big_endian(tmp_path):
    """safetensors.numpy writes from the data pointer: a transposed view must not scramble."""
    base = np.arange(12.0).reshape(3, 4)
    state = {"t": base.T, "strided": base[:, ::2], "be": np.arange(3, dtype=">i4")}
    kn.save(state, _path(tmp_path))
    loaded = kn.load(_path(tmp_path))
    np.testing.assert_array_equal(loaded["t"], base.T)
    np.testing.assert_array_equal(loaded["strided"], base[:, ::2])
    np.testing.assert_array_equal(loaded["be"], [0, 1, 2])


def test_checkpoint_accepts_variables_lists_and_scalars(tmp_path):
    w = kn.Variable(np.ones((2, 2), np.float32), name="w")
    kn.save({"w": w, "list": [1.0, 2.0], "py": 3}, _path(tmp_path))
    loaded = kn.load(_path(tmp_path))
    np.testing.assert_array_equal(loaded["w"], np.ones((2, 2), np.float32))
    assert loaded["w"].dtype == np.float32  # a Variable's value, as an array
    assert loaded["list"] == [1.0, 2.0] and loaded["py"] == 3  # Python values stay Python


def test_checkpoint_file_is_readable_by_safetensors(tmp_path):
    from safetensors.numpy import load_file

    kn.save({"a": np.arange(4, dtype=np.int32)}, _path(tmp_path), metadata={"step": "3"})
    np.testing.assert_array_equal(load_file(_path(tmp_path))["a"], np.arange(4))
    assert load_metadata(_path(tmp_path)) == {"step": "3"}


def test_checkpoint_save_rejects_bad_state(tmp_path):
    path = _path(tmp_path)
    with pytest.raises(CheckpointError, match="dtype object"):
        kn.save({"x": np.array([object()])}, path)
    with pytest.raises(CheckpointError, match="non-empty strings"):
        checkpoint.save_arrays({1: np.zeros(2)}, path)  # kn.save takes int keys (nested state)
    with pytest.raises(CheckpointError, match="no value outside a run"):
        x = kn.placeholder(kn.float32, (2,), name="x")
        kn.save({"x": x * 2.0}, path)
    with pytest.raises(CheckpointError, match="metadata"):
        kn.save({"x": np.zeros(2)}, path, metadata={"step": 3})
    assert os.listdir(tmp_path) == []


def _leftovers(tmp_path):
    return sorted(p for p in os.listdir(tmp_path) if p != "ckpt.safetensors")


def test_checkpoint_failed_serialization_keeps_old_file(tmp_path, monkeypatch):
    import safetensors.numpy

    path = _path(tmp_path)
    kn.save({"a": np.ones(3)}, path)
    before = open(path, "rb").read()

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(safetensors.numpy, "save", broken)
    with pytest.raises(CheckpointError, match="disk on fire"):
        kn.save({"a": np.zeros(3)}, path)
    assert open(path, "rb").read() == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("stage", ["write", "fsync", "replace"])
def test_checkpoint_failure_mid_write_keeps_old_file_and_removes_temp(tmp_path, monkeypatch, stage):
    path = _path(tmp_path)
    kn.save({"a": np.ones(1000)}, path)
    before = open(path, "rb").read()
    seen = []

    def broken(*args, **kwargs):
        seen.append(_leftovers(tmp_path))  # the temp file exists at this point
        raise OSError(f"simulated failure in {stage}")

    if stage == "write":
        real_fdopen = os.fdopen

        class HalfWriter:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def write(self, data):
                self.f.write(data[: len(data) // 2])
                self.f.flush()
                broken()

        monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    else:
        monkeypatch.setattr(os, stage, broken)
    with pytest.raises(OSError, match="simulated failure"):
        kn.save({"a": np.zeros(1000)}, path)
    assert seen and len(seen[0]) == 1 and seen[0][0].endswith(".tmp")
    assert open(path, "rb").read() == before
    assert _leftovers(tmp_path) == []
    np.testing.assert_array_equal(kn.load(path)["a"], np.ones(1000))


def test_checkpoint_new_file_failure_leaves_nothing(tmp_path, monkeypatch):
    def broken(*args):
        raise OSError("simulated failure in replace")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        kn.save({"a": np.ones(2)}, _path(tmp_path))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("stage", ["fdopen", "fsync", "replace"])
def test_write_atomic_interrupted_removes_its_temporary(tmp_path, monkeypatch, stage):
    path = _path(tmp_path)
    checkpoint.write_atomic(path, b"old")
    seen, fds = [], []

    def interrupted(*args):
        seen.append(_leftovers(tmp_path))
        if stage == "fdopen":  # the interrupt lands before a file object owns the descriptor
            fds.append(args[0])
        raise KeyboardInterrupt

    monkeypatch.setattr(os, stage, interrupted)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.write_atomic(path, b"new")
    assert len(seen[0]) == 1 and seen[0][0].endswith(".tmp")
    monkeypatch.undo()
    assert open(path, "rb").read() == b"old"
    assert _leftovers(tmp_path) == []
    for fd in fds:  # closed, not leaked
        with pytest.raises(OSError):
            os.fstat(fd)


def _temporary(tmp_path, target="ckpt.safetensors", token="0123456789ab", age=120.0):
    """A file named as write_atomic names its temporaries, last modified `age` seconds ago."""
    tmp = tmp_path / f".{target}.{token}.tmp"
    tmp.write_bytes(b"x" * 1000)
    os.utime(tmp, (tmp.stat().st_atime - age, tmp.stat().st_mtime - age))
    return tmp.name


def test_write_atomic_removes_stale_temporaries_of_its_target_only(tmp_path):
    # Bug: temporaries of interrupted writes were never removed (202 files after 600 writes).
    stale = [_temporary(tmp_path, token=t) for t in ("0123456789ab", "ffffffffffff")]
    kept = [
        _temporary(tmp_path, token="aaaaaaaaaaaa", age=0.0),  # a writer may be about to lock it
        _temporary(tmp_path, target="other.safetensors"),  # another target's
        _temporary(tmp_path, token="0123456789"),  # not write_atomic's pattern
        _temporary(tmp_path, token="0123456789AB"),
        _temporary(tmp_path, token="0123456789abcd"),
    ]
    (tmp_path / ".ckpt.safetensors.bbbbbbbbbbbb.tmp").mkdir()  # not a file
    kept.append(".ckpt.safetensors.bbbbbbbbbbbb.tmp")
    assert set(stale) <= set(os.listdir(tmp_path))
    kn.save({"a": np.ones(2)}, _path(tmp_path))
    assert sorted(_leftovers(tmp_path)) == sorted(kept)
    np.testing.assert_array_equal(kn.load(_path(tmp_path))["a"], np.ones(2))


@pytest.mark.skipif(checkpoint.fcntl is None, reason="file locks are POSIX")
def test_write_atomic_keeps_an_old_temporary_that_a_writer_holds(tmp_path):
    name = _temporary(tmp_path)
    fd = os.open(tmp_path / name, os.O_RDONLY)
    try:
        checkpoint.fcntl.flock(fd, checkpoint.fcntl.LOCK_EX)  # as a live writer holds its own
        checkpoint.write_atomic(_path(tmp_path), b"new")
        assert _leftovers(tmp_path) == [name]
    finally:
        os.close(fd)  # the writer is gone
    checkpoint.write_atomic(_path(tmp_path), b"newer")
    assert _leftovers(tmp_path) == []


WRITER = """
import os, sys, time
from kiln import checkpoint

def hang(fd):  # the write is done; the process is killed before its rename
    print("written", flush=True)
    time.sleep(600)

os.fsync = hang
checkpoint.write_atomic(sys.argv[1], b"never renamed" * 1000)
"""


@pytest.mark.skipif(checkpoint.fcntl is None, reason="file locks are POSIX")
def test_write_atomic_removes_the_temporary_of_a_killed_writer(tmp_path):
    path = _path(tmp_path)
    root = str(Path(__file__).resolve().parent.parent)  # this checkout's kiln
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                              text=True, env=env)  # fmt: skip
    try:
        assert writer.stdout.readline() == "written\n"
        (name,) = _leftovers(tmp_path)
        old = os.stat(tmp_path / name).st_mtime - 3600
        os.utime(tmp_path / name, (old, old))  # old, but its writer is alive: kept
        checkpoint.write_atomic(path, b"first")
        assert _leftovers(tmp_path) == [name]
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    checkpoint.write_atomic(path, b"second")  # the writer is dead: removed
    assert _leftovers(tmp_path) == []
    assert open(path, "rb").read() == b"second"


def test_write_atomic_writes_str_as_utf8(tmp_path):
    path = _path(tmp_path)
    checkpoint.write_atomic(path, "h\u00e9")
    assert open(path, "rb").read() == "h\u00e9".encode()


def test_checkpoint_overwrite_replaces_content(tmp_path):
    path = _path(tmp_path)
    kn.save({"a": np.ones(3)}, path)
    kn.save({"b": np.zeros(2, np.int8)}, path)
    assert list(kn.load(path)) == ["b"]
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def _valid_bytes():
    import safetensors.numpy

    return safetensors.numpy.save({"a": np.arange(10.0), "b": np.ones((2, 2), np.float32)})


def _header(tensors: dict, data: bytes) -> bytes:
    header = json.dumps(tensors).encode()
    return struct.pack("<Q", len(header)) + header + data


BAD_FILES = {
    "empty": (b"", "fewer than the 8-byte header length"),
    "short": (b"\x01\x02\x03", "fewer than the 8-byte header length"),
    "random": (np.random.default_rng(0).bytes(4096), "header claims"),
    "truncated-header": (_valid_bytes()[:40], "header claims"),
    "truncated-data": (_valid_bytes()[:-5], "tensor 'b' ends at byte 96 .* only 91 bytes"),
    "header-claims-too-much": (struct.pack("<Q", 10**6) + b'{"a": 1}', "header claims 1000000"),
    "not-json": (struct.pack("<Q", 4) + b"\xff\xfe{}", "header is not JSON"),
    "json-list": (_header([1, 2], b""), "not an object"),
    "entry-not-object": (_header({"a": 5}, b""), "entry of tensor 'a' is not a JSON object"),
    "extra-data": (_valid_bytes() + b"junk", "not fully covered"),
    "json-file": (b'{"nodes": [], "outputs": []}', "header claims"),
    "offsets-past-end": (
        _header({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8)),
        "tensor 'a' ends at byte 16",
    ),
    "shape-disagrees-with-offsets": (
        _header({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, bytes(16)),
        "invalid shape, data type, or offset",
    ),
    "unknown-dtype": (
        _header({"a": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
        "tensor 'a' has dtype Q7",
    ),
    "float6": (  # (BF16 and the float8s are read: test_bfloat16.py, test_port_pt_serial.py)
        _header({"a": {"dtype": "F6_E3M2", "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
        "tensor 'a' has dtype F6_E3M2",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_checkpoint_load_rejects_malformed_file(tmp_path, case):
    data, message = BAD_FILES[case]
    path = _path(tmp_path, f"{case}.safetensors")
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(CheckpointError, match=message) as info:
        kn.load(path)
    assert str(info.value).startswith(f"'{path}' is not a valid safetensors file: ")
    assert isinstance(info.value, kn.KilnError) and isinstance(info.value, ValueError)
    assert "safetensors_rust" not in type(info.value).__module__


def test_checkpoint_load_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        kn.load(tmp_path / "nope.safetensors")


def test_checkpoint_error_is_exported():
    assert kn.CheckpointError is CheckpointError
    assert kn.save is checkpoint.save and kn.load is checkpoint.load


# -- Session.save / Session.restore ---------------------------------------------------------


def _model():
    g = kn.Graph()
    with g.as_default():
        w = kn.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        b = kn.Variable(np.zeros(3, np.float32), name="b")
        steps = kn.Variable(np.int64(0), name="steps")
    return g, w, b, steps


def test_session_save_restore_round_trip(tmp_path):
    g, w, b, steps = _model()
    path = _path(tmp_path)
    with kn.Session(graph=g) as sess:
        sess.save(path)
        assert sorted(kn.load(path)) == ["b", "steps", "w"]
        saved = {v.name: v.numpy() for v in (w, b, steps)}
        w.assign(np.full((2, 3), 9.0, np.float32))
        b.assign(np.ones(3, np.float32))
        steps.assign(np.int64(5))
        sess.restore(path)
    for v in (w, b, steps):
        np.testing.assert_array_equal(v.numpy(), saved[v.name])
        assert v.numpy().dtype == saved[v.name].dtype


F32_23, F32_3 = np.zeros((2, 3), np.float32), np.zeros(3, np.float32)
MISMATCHES = {
    "missing": ({"w": F32_23, "b": F32_3}, ["missing Variable 'steps'"]),
    "unexpected": (
        {"w": F32_23, "b": F32_3, "steps": np.int64(1), "extra": np.zeros(1)},
        ["unexpected name 'extra'"],
    ),
    "shape-and-dtype": (
        {"w": F32_23.T, "b": np.zeros(3), "steps": np.int64(1)},
        [
            "'w': file has shape (3, 2), Variable has (2, 3)",
            "'b': file has dtype float64, Variable has float32",
        ],
    ),
    "renamed": (
        {"w": F32_23, "b": F32_3, "stepz": np.int64(1)},
        ["missing Variable 'steps'", "unexpected name 'stepz'"],
    ),
    "int-width": (
        {"w": F32_23, "b": F32_3, "steps": np.int32(1)},
        ["'steps': file has dtype int32, Variable has int64"],
    ),
}


@pytest.mark.parametrize("case", MISMATCHES)
def test_session_restore_mismatch_changes_nothing(tmp_path, case):
    state, problems = MISMATCHES[case]
    g, w, b, steps = _model()
    w.assign(np.full((2, 3), 4.0, np.float32))
    before = {v.name: v.numpy() for v in (w, b, steps)}
    path = _path(tmp_path)
    kn.save(state, path)
    with kn.Session(graph=g) as sess, pytest.raises(CheckpointError) as info:
        sess.restore(path)
    message = str(info.value)
    assert "nothing was changed" in message and path in message
    for problem in problems:
        assert problem in message
    for v in (w, b, steps):
        np.testing.assert_array_equal(v.numpy(), before[v.name])


def test_session_restore_malformed_file_changes_nothing(tmp_path):
    g, w, _, _ = _model()
    path = _path(tmp_path)
    with open(path, "wb") as f:
        f.write(_valid_bytes()[:-1])
    with kn.Session(graph=g) as sess, pytest.raises(CheckpointError):
        sess.restore(path)
    np.testing.assert_array_equal(w.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_session_save_restore_resumes_training_exactly(tmp_path):
    """TF1 style: train, save, train N more (A); restore, train N more (B); A == B bit for bit."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 4)).astype(np.float32)
    ys = rng.standard_normal((8, 2)).astype(np.float32)
    g = kn.Graph()
    with g.as_default():
        x = kn.placeholder(kn.float32, ("batch", 4), name="x")
        y = kn.placeholder(kn.float32, ("batch", 2), name="y")
        w1 = kn.Variable(rng.standard_normal((4, 8)).astype(np.float32) * 0.5, name="w1")
        b1 = kn.Variable(np.zeros(8, np.float32), name="b1")
        w2 = kn.Variable(rng.standard_normal((8, 2)).astype(np.float32) * 0.5, name="w2")
        params = [w1, b1, w2]
        loss = kn.mean(kn.square(kn.tanh(x @ w1 + b1) @ w2 - y))
        grads = kn.grad(loss, params)
        train = kn.function([x, y], loss, updates={p: p - 0.1 * gp for p, gp in zip(params, grads)})

    def steps(n):
        return [float(train(xs[i % 4 :: 4], ys[i % 4 :: 4])) for i in range(n)]

    path = _path(tmp_path)
    first = steps(5)
    assert first[-1] < first[0]
    with kn.Session(graph=g) as sess:
        sess.save(path)
        losses_a = steps(7)
        values_a = [p.numpy() for p in params]
        sess.restore(path)
        losses_b = steps(7)
        values_b = [p.numpy() for p in params]
    assert losses_a == losses_b
    for a, b in zip(values_a, values_b):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(values_a[0], kn.load(path)["w1"])  # training did move on
