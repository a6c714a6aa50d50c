"""kiln's cache directory on disk: generated kernel sources (and, beside them, the machine code
numba caches for them), so a new process does not compile them again.

The directory is `$KILN_CACHE_DIR`, else the platform's user cache directory (`$XDG_CACHE_HOME`
or `~/.cache` on Linux, `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows) under
`kiln`. Files are named by a hash of their content and written atomically (a temporary file
renamed into place), so processes sharing the directory never read half a file. Where it
cannot be written, kernels are compiled in memory as before; nothing fails.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import types

from .debug import log

__all__ = ["cache_dir", "load_module"]

_MODULES: dict = {}  # path -> its globals, run once a process
_FAILED: set = set()  # directories found unwritable: not tried again


def cache_dir() -> str:
    """kiln's cache directory (not created here).

    >>> import os
    >>> os.environ["KILN_CACHE_DIR"] = "/tmp/kiln-cache"; cache_dir()
    '/tmp/kiln-cache'
    >>> del os.environ["KILN_CACHE_DIR"]
    """
    explicit = os.environ.get("KILN_CACHE_DIR", "").strip()
    if explicit:
        return explicit
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
        return os.path.join(base, "kiln", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", "kiln")
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "kiln")


def load_module(kind: str, text: str, namespace: dict):
    """The globals of `text` (generated Python) run in a copy of `namespace`, compiled under
    the name of its file `<cache_dir>/<kind>/<kind>_<hash>.py` (written once), so tools that
    cache by source file (numba's `cache=True`) find it; None where the directory cannot be
    written (the caller then compiles `text` in memory). The text run is always `text`
    itself, never what the file holds."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    folder = os.path.join(cache_dir(), kind)
    path = os.path.join(folder, f"{kind}_{digest}.py")
    module = _MODULES.get(path)
    if module is not None:
        return module
    if folder in _FAILED:
        return None
    try:
        if not _has_text(path, text):
            os.makedirs(folder, exist_ok=True)
            _write_atomically(path, text)
    except OSError as e:
        _FAILED.add(folder)
        log(1, f"kernel cache: cannot use {folder} ({e}); compiling in memory")
        return None
    # A module registered in sys.modules: numba's cached code names its globals' module.
    module = types.ModuleType(f"kiln_{kind}_{digest}")
    module.__dict__.update(namespace)
    module.__file__ = path
    exec(compile(text, path, "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    _MODULES[path] = module.__dict__
    return module.__dict__


def _has_text(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == text
    except OSError:
        return False


def _write_atomically(path: str, text: str) -> None:
    """Writes `text` to a temporary file in `path`'s directory, then renames it to `path`
    (an atomic replace), so no reader ever sees a partial file."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
