"""Checkpoints: named arrays in safetensors files (no pickle), written atomically, read with checks.

`save`/`load` take and give plain dicts of arrays; `save_variables`/`restore_variables` back
`Session.save`/`Session.restore` and match Variables by name, all or nothing.

NOTE: `kn.checkpoint(fn, *args)` (activation checkpointing, torch.utils.checkpoint's
function, kiln/eager/recompute.py) is this module called: API.md gives both meanings one
name, so the module is callable (`_CallableModule`) and keeps its attributes.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle  # (only to recognize PyTorch's default pickle_module)
import secrets
import struct
import sys
import threading
import time
import types
from collections.abc import Mapping

import numpy as np

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from . import dtypes as dt
from .checkpoint_tree import TREE_KEY, flatten, unflatten
from .errors import ArgumentTypeError, KilnError, UsageError, call_error
from .graph.core import Symbol, Variable

__all__ = [
    "CheckpointError",
    "CheckpointFolderError",
    "StateDictError",
    "save",
    "load",
    "save_arrays",
    "load_arrays",
    "load_metadata",
    "save_variables",
    "restore_variables",
    "as_numpy",
]

# The safetensors dtypes kiln reads and writes: NumPy's, and BF16 and the float8s through
# ml_dtypes (safetensors names them as PyTorch's safetensors.torch does).
_FILE_DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64, "F16": np.float16,
    "BF16": dt.bfloat16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
    "F8_E4M3": dt.float8_e4m3fn, "F8_E5M2": dt.float8_e5m2, "F8_E8M0": dt.float8_e8m0fnu,
    "F8_E4M3FNUZ": dt.float8_e4m3fnuz, "F8_E5M2FNUZ": dt.float8_e5m2fnuz,
}  # fmt: skip
# safetensors has no complex128: kiln writes one as float64 pairs (a last dim of 2, real then
# imaginary: the array's own bytes) and names it in this metadata entry (a JSON list), which
# its loader reads back as complex128; other readers see the float64 pairs.
PAIRS_KEY = "kiln.complex128"
SUPPORTED_DTYPES = frozenset(np.dtype(d) for d in _FILE_DTYPES.values()) | {np.dtype(np.complex128)}
_NUMPY_DTYPES = set(_FILE_DTYPES)
_HEADER_LIMIT = 100_000_000  # the largest header safetensors itself accepts
# write_atomic's temporaries: `.{name}.{12 hex digits}.tmp` beside the target; removed by a
# later write when older than a minute and locked by no writer (a day where there are no locks).
_TOKEN_BYTES, _HEX = 6, frozenset("0123456789abcdef")
STALE_AFTER_S, STALE_UNLOCKABLE_S = 60.0, 86400.0


class CheckpointError(KilnError, ValueError, RuntimeError):
    """A checkpoint that cannot be written or read as asked: malformed, truncated, mismatched.
    PyTorch raises RuntimeError for a corrupt or truncated file: this is both."""


class CheckpointFolderError(CheckpointError, FileNotFoundError):
    """A save to a path whose folder does not exist: PyTorch raises RuntimeError there; this
    is that and the FileNotFoundError that opening the file would raise."""


class StateDictError(CheckpointError, RuntimeError):
    """A state dict that `Module.load_state_dict` refuses (missing or unexpected keys, shapes
    that differ): PyTorch raises RuntimeError there, so this is both."""


def as_numpy(value) -> np.ndarray:
    """A NumPy array of `value`: an array-like, a kiln Variable, a Tensor or a device array.

    >>> import numpy as np
    >>> as_numpy([1, 2]), as_numpy(np.float32(3))
    (array([1, 2]), array(3., dtype=float32))
    """
    if isinstance(value, Variable):
        return value.numpy()
    if isinstance(value, Symbol):
        raise ArgumentTypeError(f"'{value.name}' is a Symbol, which has no value outside a run")
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # an eager Tensor
        return np.asarray(value.detach().numpy())
    if hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):  # CuPy
        return value.get()
    return np.asarray(value)


def save(obj, f, pickle_module=None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False,
         *, metadata: Mapping[str, str] | None = None) -> None:  # fmt: skip
    """Saves `obj` to `f` (a path, or a binary file object) as a safetensors file, as
    PyTorch scripts use `torch.save`: nested dicts, lists and tuples of Tensors, Parameters,
    NumPy arrays and scalars, numbers, strings, bytes and None.

    PyTorch's pickle arguments (`pickle_module` the standard `pickle`, `pickle_protocol`,
    the zip-file switches) are accepted and change nothing: kiln never pickles.

    Each tensor or array is one entry named by its path of keys (`model.fc1.weight`,
    `optimizer.state.0.exp_avg`); the structure and the Python values are typed JSON in the
    header's metadata. Nothing is pickled. A path is written atomically (see `write_atomic`).
    `metadata` is free text (str -> str) kept in the header too. Tensors that share memory (a
    tensor and its views, one tensor saved twice) are saved as their storage, once, and share
    it again when loaded.

    >>> import kiln as kn, numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> kn.save({"w": kn.ones(2), "epoch": 3, "history": [0.5, 0.25], "name": None}, path)
    >>> kn.load(path)
    {'w': tensor([1., 1.]), 'epoch': 3, 'history': [0.5, 0.25], 'name': None}
    """
    _check_pickle_module("save", pickle_module)
    arrays, tree = flatten(obj)
    metadata = _check_metadata(metadata) or {}
    if TREE_KEY in metadata:
        raise CheckpointError(f"metadata key {TREE_KEY!r} is kiln's own (the saved structure)")
    data = _serialize(_arrays_to_save(arrays), {**metadata, TREE_KEY: tree}, f)
    if hasattr(f, "write"):
        f.write(data)
        return
    folder = os.path.dirname(os.path.abspath(os.fspath(f)))
    if not os.path.isdir(folder):
        raise CheckpointFolderError(
            f"cannot save to '{os.fspath(f)}': its folder '{folder}' does not exist"
        )
    write_atomic(f, data)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):  # fmt: skip
    """What `save` saved in `f` (a path or a binary file object), as saved: Tensors (on
    their saved device, or as `map_location` says: a device, a dict from saved device to
    device, or a function of (the tensor loaded on the CPU, its saved location) giving the
    tensor to use, None for the default), Parameters, arrays, numbers, strings and
    containers. A safetensors file written elsewhere (no kiln structure) gives a dict of its
    NumPy arrays by name (sorted).

    `weights_only`, `mmap` and pickle arguments are accepted as PyTorch's and change nothing:
    kiln never unpickles, so every load is as safe as `weights_only=True`. A PyTorch pickle or
    zip file (`.pt`, `.pth`) raises CheckpointError saying it is not a safetensors file.
    """
    _check_pickle_module("load", pickle_module)
    if pickle_module is not None and weights_only:  # (PyTorch's refusal)
        raise call_error(UsageError, "Can not safely load weights when explicit pickle_module "
                         "is specified", "load")  # fmt: skip
    if (
        map_location is not None
        and not isinstance(map_location, (str, dict))
        and (type(map_location).__name__ != "device")
        and not callable(map_location)
    ):
        raise ArgumentTypeError(
            f"map_location must be a device, a device string, a dict of them or a function "
            f"(tensor, saved location) -> tensor, got {type(map_location).__name__}"
        )
    if hasattr(f, "read"):
        path, data = str(getattr(f, "name", "<file object>")), f.read()
    else:
        path = os.fspath(f)
        with open(path, "rb") as file:
            data = file.read()
    header, arrays = _parse(path, data)
    metadata = header.get("__metadata__") or {}
    tree = metadata.get(TREE_KEY) if isinstance(metadata, dict) else None
    if tree is None:
        return dict(sorted(arrays.items()))
    return unflatten(path, tree, arrays, map_location)


def _check_pickle_module(op: str, module) -> None:
    """PyTorch's default `pickle_module` (the standard `pickle`) or None: anything else would
    mean a pickle kiln does not make."""
    if module is not None and module is not pickle:
        raise ArgumentTypeError(
            f"kn.{op} never pickles: pickle_module can only be the standard pickle (or None), "
            f"got {getattr(module, '__name__', type(module).__name__)}"
        )


def save_arrays(state: Mapping, path, metadata: Mapping[str, str] | None = None) -> None:
    """Writes `state` (name -> array-like) to `path` as a flat safetensors file, atomically.

    The bytes go to a temporary file beside `path`, which is flushed, synced and then renamed
    over `path`: a reader sees the old file or the new one, never a mix, and a failure leaves
    the old file as it was. `metadata` is free text (str -> str) kept in the header.

    >>> import numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> save_arrays({"w": np.eye(2, dtype=np.float32), "step": np.int64(7)}, path)
    >>> load_arrays(path)
    {'step': array(7), 'w': array([[1., 0.],
           [0., 1.]], dtype=float32)}
    """
    write_atomic(path, _serialize(_arrays_to_save(state), _check_metadata(metadata), path))


def _serialize(arrays: dict, metadata, where) -> bytes:
    import safetensors.numpy

    if metadata and PAIRS_KEY in metadata:
        raise CheckpointError(f"metadata key {PAIRS_KEY!r} is kiln's own (complex128 entries)")
    pairs = sorted(name for name, a in arrays.items() if a.dtype == np.complex128)
    if pairs:  # as float64 pairs (`PAIRS_KEY`)
        arrays = {name: _as_pairs(a) if a.dtype == np.complex128 else a
                  for name, a in arrays.items()}  # fmt: skip
        metadata = {**(metadata or {}), PAIRS_KEY: json.dumps(pairs)}
    try:
        return safetensors.numpy.save(arrays, metadata=metadata)
    except Exception as e:  # the Rust side's errors are not ours to expose
        name = getattr(where, "name", where) if hasattr(where, "write") else os.fspath(where)
        raise CheckpointError(f"cannot serialize checkpoint for '{name}': {e}") from e


def _arrays_to_save(state) -> dict:
    if not isinstance(state, Mapping):
        raise ArgumentTypeError(
            f"state must be a dict of name -> array, got {type(state).__name__}"
        )
    arrays = {}
    for name, value in state.items():
        if not isinstance(name, str) or not name or name == "__metadata__":
            raise CheckpointError(f"checkpoint names must be non-empty strings, got {name!r}")
        try:
            array = as_numpy(value)
        except (TypeError, ValueError) as e:
            raise CheckpointError(f"cannot save {name!r}: {e}") from e
        native = array.dtype.newbyteorder("=")
        if native not in SUPPORTED_DTYPES:
            supported = ", ".join(sorted(d.name for d in SUPPORTED_DTYPES))
            raise CheckpointError(
                f"cannot save {name!r}: dtype {array.dtype} is not one safetensors holds "
                f"({supported})"
            )
        # NOTE: safetensors.numpy copies from the data pointer: non-contiguous arrays would be
        # written in memory order, silently scrambled. (ascontiguousarray makes 0-d 1-d.)
        arrays[name] = np.asarray(array, dtype=native, order="C")
    return arrays


def _as_pairs(array: np.ndarray) -> np.ndarray:
    """A C-ordered complex128 array's memory as float64 pairs (real, imaginary) in a last
    dim of 2 (0-d arrays too)."""
    return array.reshape(*array.shape, 1).view(np.float64)


def _from_pairs(path: str, header: dict, arrays: dict) -> dict:
    """`arrays` with the entries that `PAIRS_KEY` names read back as complex128."""
    metadata = header.get("__metadata__")
    names = metadata.get(PAIRS_KEY) if isinstance(metadata, dict) else None
    if names is None:
        return arrays
    try:
        names = json.loads(names)
    except (TypeError, json.JSONDecodeError):
        names = None
    if not isinstance(names, list):
        raise _invalid(path, f"its {PAIRS_KEY} metadata is not a JSON list of names")
    for name in names:
        a = arrays.get(name) if isinstance(name, str) else None
        if a is None or a.dtype != np.float64 or a.ndim == 0 or a.shape[-1] != 2:
            raise _invalid(path, f"its {PAIRS_KEY} metadata names {name!r}, which is not a "
                           "float64 tensor with a last dim of 2")  # fmt: skip
        arrays[name] = np.ascontiguousarray(a).view(np.complex128)[..., 0]
    return arrays


def _check_metadata(metadata):
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise CheckpointError(f"metadata must be a dict of str -> str, got {metadata!r:.200}")
    return dict(metadata)


def write_atomic(path, data: bytes | str) -> None:
    """Writes `data` (a str as UTF-8) to `path`, all or nothing: into a temporary file beside
    it, which is flushed, synced and renamed over `path`. On any exception (KeyboardInterrupt
    too) the temporary is removed and `path` is as it was. Temporaries that earlier writes to
    `path` left behind (their process killed) are removed first: see `_remove_stale`.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> write_atomic(path, "all or nothing")
    >>> open(path).read(), os.listdir(os.path.dirname(path))
    ('all or nothing', ['notes.txt'])
    """
    path = os.fspath(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    directory, name = os.path.split(os.path.abspath(path))
    _remove_stale(directory, name)
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(_TOKEN_BYTES)}.tmp")
    # 0o666 through the umask: the file gets the permissions a plain open() would give it.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    file = None
    try:
        _lock(fd)
        file = os.fdopen(fd, "wb")
        with file as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if fcntl is not None:  # NOTE: renamed while still locked: never taken for stale
                os.replace(tmp, path)
        if fcntl is None:  # Windows cannot rename a file that is open
            os.replace(tmp, path)
    except BaseException:
        if file is None:  # interrupted before the file object owned the descriptor
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _sync_directory(directory)


def _lock(fd: int) -> None:
    """Marks the temporary as in use for as long as its writer has it open: the lock goes
    with the process, even one killed outright (best effort: some filesystems have none)."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass


def _remove_stale(directory: str, name: str) -> None:
    """Removes the temporaries `write_atomic` made for `name` whose writer is gone.

    A temporary is stale when no process holds its lock: a writer holds it from just after
    creating the file until its rename, and the system drops it when the writer dies, however
    it dies (KeyboardInterrupt, SIGKILL, a crash). Unlike process ids, which are reused and
    mean nothing on another machine sharing the folder, a lock cannot be mistaken. The age
    (STALE_AFTER_S, by the file's mtime) only spares the instant between a writer's creating
    the file and locking it. Where a filesystem has no locks, an age of STALE_UNLOCKABLE_S
    decides; on Windows (no fcntl), deleting a file another process has open fails, which
    protects live writers. Anything unclear is left alone.
    """
    prefix, suffix = f".{name}.", ".tmp"
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        token = entry.name[len(prefix) : -len(suffix)]
        if not (entry.name.startswith(prefix) and entry.name.endswith(suffix)
                and len(token) == 2 * _TOKEN_BYTES and all(c in _HEX for c in token)):  # fmt: skip
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if age >= STALE_AFTER_S:
                _remove_if_unlocked(entry.path, age)
        except OSError:
            continue


def _remove_if_unlocked(path: str, age: float) -> None:
    """Removes the temporary `path` unless a live writer holds it (OSError: left alone)."""
    if fcntl is None:
        os.unlink(path)  # refused while a writer has it open
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a live writer holds it
            return
        except OSError:  # no locks on this filesystem: the age decides
            if age < STALE_UNLOCKABLE_S:
                return
        os.unlink(path)
    finally:
        os.close(fd)


def _sync_directory(directory: str) -> None:
    """Makes the rename durable (POSIX); where a directory cannot be opened, there is no need."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_arrays(path) -> dict[str, np.ndarray]:
    """The arrays in the safetensors file `path`, by name (sorted).

    A file that is truncated, malformed or not a safetensors file raises CheckpointError,
    naming the file and what is wrong.

    >>> import kiln as kn, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "bad.safetensors")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"not a checkpoint")
    >>> kn.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    kiln.checkpoint.CheckpointError: '...bad.safetensors' is not a valid safetensors file: ...
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    return dict(sorted(_parse(path, data)[1].items()))


def _parse(path: str, data: bytes) -> tuple[dict, dict]:
    """(header, arrays) of a safetensors file's bytes, checked."""
    import safetensors.numpy

    _refuse_pickles(path, data)
    header = _parse_header(path, data)
    _check_entries(path, header, len(data) - 8 - struct.unpack("<Q", data[:8])[0])
    try:
        arrays = _arrays_of(safetensors.deserialize(data))
    except Exception as e:  # SafetensorError (Rust), KeyError for a dtype NumPy lacks, ...
        raise _invalid(path, f"{type(e).__name__}: {e}") from None
    return header, _from_pairs(path, header, arrays)


def _refuse_pickles(path: str, data: bytes) -> None:
    """PyTorch's `.pt`/`.pth` files (a zip archive of pickles, or a bare pickle) get a
    message of their own: kiln never unpickles (a pickle can run any code)."""
    if len(data) > 8 and data[8:9] == b"{" and struct.unpack("<Q", data[:8])[0] <= len(data) - 8:
        return  # a safetensors header (its length's bytes may look like a pickle's: 0x80 0x03)
    if data[:4] == b"PK\x03\x04":
        what = "a zip archive (torch.save's format, or NumPy's .npz)"
    elif data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        what = "a pickle (torch.save's legacy format)"
    else:
        return
    raise CheckpointError(
        f"'{path}' is not a safetensors file: it is {what}. kn.load reads safetensors only and "
        "never unpickles, since a pickle can run any code. Convert the file where PyTorch is "
        "installed: safetensors.torch.save_file(torch.load(path, weights_only=True), "
        "'model.safetensors') for a dict of tensors"
    )


def _arrays_of(entries) -> dict:
    """NumPy arrays (writable, over the bytes read) of `safetensors.deserialize`'s entries."""
    arrays = {}
    for name, entry in entries:
        dtype = np.dtype(_FILE_DTYPES[entry["dtype"]])
        little = np.frombuffer(entry["data"], dtype.newbyteorder("<")).reshape(entry["shape"])
        arrays[name] = little.astype(dtype, copy=False)
    return arrays


def load_metadata(path) -> dict[str, str]:
    """The free-text metadata saved in the header of the safetensors file `path`.

    >>> import kiln as kn, numpy as np, os, tempfile
    >>> from kiln.checkpoint import load_metadata
    >>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
    >>> kn.save({"x": np.zeros(2)}, path, metadata={"step": "10"})
    >>> load_metadata(path)
    {'step': '10'}
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    _refuse_pickles(path, data)
    header = _parse_header(path, data)
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict):
        raise _invalid(path, "its __metadata__ is not a JSON object")
    return {k: v for k, v in metadata.items() if k not in (TREE_KEY, PAIRS_KEY)}


def _invalid(path: str, what: str) -> CheckpointError:
    return CheckpointError(f"'{path}' is not a valid safetensors file: {what}")


def _parse_header(path: str, data: bytes) -> dict:
    """The JSON header, after the checks that give the common failures clear messages."""
    if len(data) < 8:
        raise _invalid(path, f"it has {len(data)} bytes, fewer than the 8-byte header length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise _invalid(
            path,
            f"the header claims {size} bytes but only {len(data) - 8} follow "
            "(truncated, or not a safetensors file)",
        )
    if size > _HEADER_LIMIT:
        raise _invalid(path, f"its header is {size} bytes, over the {_HEADER_LIMIT} limit")
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _invalid(path, f"its header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise _invalid(path, f"its header is JSON {type(header).__name__}, not an object")
    return header


def _check_entries(path: str, header: dict, data_size: int) -> None:
    """Names the tensor when its dtype has no NumPy equivalent or its data is cut off."""
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            raise _invalid(path, f"the entry of tensor {name!r} is not a JSON object")
        dtype, offsets = entry.get("dtype"), entry.get("data_offsets")
        if isinstance(dtype, str) and dtype not in _NUMPY_DTYPES:
            known = ", ".join(sorted(_NUMPY_DTYPES))
            raise _invalid(path, f"tensor {name!r} has dtype {dtype}; kiln reads {known}")
        if (
            isinstance(offsets, list)
            and len(offsets) == 2
            and isinstance(offsets[1], int)
            and offsets[1] > data_size
        ):
            raise _invalid(
                path,
                f"tensor {name!r} ends at byte {offsets[1]} of the data but the file holds "
                f"only {data_size} bytes of data (truncated?)",
            )


def save_variables(variables, path, metadata=None, lock=None) -> None:
    """Saves each Variable's current value under its name (names must be unique).

    The values are read under `lock` (a graph's lock), so they come from between two runs.
    """
    state = {}
    with lock or threading.Lock():
        for v in variables:
            if v.name in state:
                raise CheckpointError(f"two Variables are named '{v.name}'; names must be unique")
            state[v.name] = v.numpy()
    save_arrays(state, path, metadata)


def restore_variables(variables, path, lock=None) -> None:
    """Sets each Variable to the array saved under its name: every one or none.

    The file must hold exactly these names, each with the Variable's shape and dtype;
    otherwise CheckpointError lists every problem and no Variable changes. The values are
    set under `lock` (a graph's lock), so no run sees some of them new and some old.
    """
    variables = list(variables)
    arrays = load_arrays(path)
    by_name = {v.name: v for v in variables}
    problems = [f"missing Variable '{n}'" for n in by_name if n not in arrays]
    problems += [f"unexpected name '{n}'" for n in arrays if n not in by_name]
    for name, v in by_name.items():
        a = arrays.get(name)
        if a is None:
            continue
        if a.shape != tuple(v.shape):
            problems.append(f"'{name}': file has shape {a.shape}, Variable has {tuple(v.shape)}")
        if a.dtype != v.dtype:
            problems.append(f"'{name}': file has dtype {a.dtype}, Variable has {v.dtype}")
    if problems:
        raise CheckpointError(
            f"cannot restore from '{os.fspath(path)}' (nothing was changed): " + "; ".join(problems)
        )
    with lock or threading.Lock():
        for name, v in by_name.items():
            v.assign(arrays[name])


class _CallableModule(types.ModuleType):
    def __call__(self, fn, *args, **kwargs):
        from .eager.recompute import checkpoint  # NOTE: lazy, eager sits above checkpoints

        return checkpoint(fn, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
