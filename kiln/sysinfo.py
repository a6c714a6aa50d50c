"""What `kiln info` reports: versions, the BLAS NumPy uses and how it runs, devices, CUDA.

Every probe is guarded: one that fails reports `unknown (reason)` instead of raising.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import re
import sys

import numpy as np

# Libraries that provide BLAS, by file name (OpenBLAS, MKL, BLIS, FlexiBLAS, reference BLAS).
_BLAS_FILE = re.compile(r"openblas|mkl_rt|libmkl|blis|flexiblas|libblas|libcblas", re.IGNORECASE)
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_PARALLEL = {0: "sequential", 1: "pthreads", 2: "OpenMP"}
_CORETYPE_WARNING = (
    "OPENBLAS_CORETYPE={value} forces OpenBLAS's CPU kernels; a wrong or forced core type "
    "silently costs about 2x on matrix products. Unset it unless you know the CPU needs it."
)


def probe(fn, *args) -> str:
    """`fn(*args)` as text, or `unknown (reason)` when the probe fails.

    >>> probe(lambda: 1 / 0)
    'unknown (ZeroDivisionError: division by zero)'
    """
    try:
        return str(fn(*args))
    except Exception as e:  # a probe must never take `kiln info` down
        return f"unknown ({type(e).__name__}: {e})"


def report() -> tuple[list[tuple[str, str]], list[str]]:
    """The (key, value) rows of `kiln info` and the warnings to show under them.

    >>> rows, warnings = report()
    >>> [key for key, _ in rows][:3]
    ['kiln', 'python', 'executable']
    """
    import kiln

    rows = [
        ("kiln", kiln.__version__),
        ("python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("executable", sys.executable),
        ("platform", probe(platform.platform)),
        ("numpy", np.__version__),
        ("scipy", probe(_scipy_version)),
        ("blas (numpy build)", probe(_blas_build)),
    ]
    warnings: list[str] = []
    rows += _blas_runtime_rows(warnings)
    for name in (*_THREAD_VARS, "KILN_DEBUG", "KILN_CHECKS", "KILN_EXACT", "KILN_CACHE_DIR"):
        rows.append((name, os.environ.get(name, "not set")))
    rows.append(("devices", probe(lambda: ", ".join(kiln.devices()))))
    rows += _cuda_rows()
    return rows, warnings


def format_report(rows, warnings) -> str:
    """Aligned `key: value` lines, then one `warning:` line per warning."""
    width = max(len(key) for key, _ in rows) + 1
    lines = [f"{key + ':':<{width}} {value}" for key, value in rows]
    lines += [f"warning: {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def _scipy_version() -> str:
    import scipy

    return scipy.__version__


def _blas_build() -> str:
    """The BLAS NumPy was built against, from `numpy.show_config`."""
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return f"{blas.get('name', '?')} {blas.get('version', '?')}"


def loaded_blas_libraries() -> list[str]:
    """Paths of the BLAS shared libraries loaded in this process (NumPy is imported by now).

    Reads /proc/self/maps where there is one; elsewhere, the libraries bundled with NumPy.
    """
    paths: set[str] = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        root = os.path.dirname(os.path.dirname(np.__file__))
        for folder in ("numpy.libs", "numpy/.libs", "numpy/.dylibs"):
            paths.update(glob.glob(os.path.join(root, folder, "*")))
    return sorted(p for p in paths if _BLAS_FILE.search(os.path.basename(p)))


def openblas_symbol(lib, name: str):
    """`name` in an OpenBLAS library under any of its builds' spellings, or None.

    scipy-openblas prefixes `scipy_` and 64-bit-integer builds suffix `64_` (or `_64_`), so
    `openblas_get_corename` may be `scipy_openblas_get_corename64_`.
    """
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64_", "_64"):
            fn = getattr(lib, f"{prefix}{name}{suffix}", None)
            if fn is not None:
                return fn
    return None


def openblas_settings(path: str) -> dict[str, str] | None:
    """The configuration, core type and threading of the OpenBLAS at `path` (None if not one)."""
    lib = ctypes.CDLL(path)  # already loaded: this only gets a handle to it
    get_config = openblas_symbol(lib, "openblas_get_config")
    if get_config is None:
        return None
    settings = {}
    for key, name, restype in (
        ("config", "openblas_get_config", ctypes.c_char_p),
        ("core", "openblas_get_corename", ctypes.c_char_p),
        ("threads", "openblas_get_num_threads", ctypes.c_int),
        ("parallel", "openblas_get_parallel", ctypes.c_int),
    ):
        fn = openblas_symbol(lib, name)
        if fn is None:
            settings[key] = f"unknown (no {name} symbol)"
            continue
        fn.restype, fn.argtypes = restype, []
        value = fn()
        settings[key] = (
            value.decode(errors="replace").strip() if isinstance(value, bytes) else value
        )
    settings["parallel"] = _PARALLEL.get(settings["parallel"], str(settings["parallel"]))
    return settings


def _blas_runtime_rows(warnings: list[str]) -> list[tuple[str, str]]:
    rows = []
    try:
        libraries = loaded_blas_libraries()
    except Exception as e:
        return [("blas (loaded)", f"unknown ({type(e).__name__}: {e})")]
    if not libraries:
        rows.append(("blas (loaded)", "unknown (no BLAS library found in this process)"))
    for path in libraries:
        rows.append(("blas (loaded)", path))
        try:
            settings = openblas_settings(path)
        except Exception as e:
            rows.append(("  openblas", f"unknown ({type(e).__name__}: {e})"))
            continue
        if settings is None:
            continue
        rows.append(("  openblas config", settings["config"]))
        rows.append(("  openblas core", settings["core"]))
        rows.append(("  openblas threads", f"{settings['threads']} ({settings['parallel']})"))
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    rows.append(("OPENBLAS_CORETYPE", "not set" if coretype is None else coretype))
    # Other OpenBLAS settings from the environment (OPENBLAS_L2_SIZE, ...) also steer kernels.
    for name in sorted(os.environ):
        if name.startswith("OPENBLAS_") and name not in ("OPENBLAS_CORETYPE", *_THREAD_VARS):
            rows.append((name, os.environ[name]))
    if coretype is not None:
        warnings.append(_CORETYPE_WARNING.format(value=coretype))
    rows += _threadpoolctl_rows()
    return rows


def _threadpoolctl_rows() -> list[tuple[str, str]]:
    """threadpoolctl's view of the thread pools, when it is installed (it is optional)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    try:
        pools = threadpool_info()
    except Exception as e:
        return [("threadpools", f"unknown ({type(e).__name__}: {e})")]
    return [
        (
            "threadpool",
            f"{p.get('internal_api')} {p.get('version')}, "
            f"{p.get('num_threads')} threads ({p.get('filepath')})",
        )
        for p in pools
    ]


def _cuda_version(value: int) -> str:
    """CUDA's integer versions as text.

    >>> _cuda_version(12040)
    '12.4'
    """
    return f"{value // 1000}.{value % 1000 // 10}"


def _cuda_rows() -> list[tuple[str, str]]:
    from .runtime.cuda import cuda_status

    try:
        usable, reason, count = cuda_status()
    except Exception as e:
        return [("cuda", f"unknown ({type(e).__name__}: {e})")]
    if not usable:
        rows = [("cuda", f"not usable: {reason}; kiln runs on the cpu only")]
        return rows + [("cupy", probe(_cupy_version))] if "not installed" not in reason else rows
    import cupy

    runtime = cupy.cuda.runtime
    rows = [
        ("cuda", f"usable, {count} device(s)"),
        ("cupy", cupy.__version__),
        ("cuda driver", probe(lambda: _cuda_version(runtime.driverGetVersion()))),
        ("cuda runtime", probe(lambda: _cuda_version(runtime.runtimeGetVersion()))),
    ]
    for i in range(count):
        rows.append((f"cuda:{i}", probe(_gpu_summary, i)))
    return rows


def _cupy_version() -> str:
    import cupy

    return cupy.__version__


def _gpu_summary(i: int) -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(i)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    total = props["totalGlobalMem"] / 2**30
    capability = f"{props['major']}.{props['minor']}"
    return f"{name}, {total:.1f} GiB, compute capability {capability}"
