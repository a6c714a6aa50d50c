"""kiln: a define-then-run tensor graph compiler for Python.

>>> import kiln as kn, numpy as np
>>> with kn.Graph().as_default():
...     x = kn.placeholder(kn.float32, ("batch", 3), name="x")
...     y = kn.sum(kn.relu(x) * 2.0, axis=1)
...     f = kn.function([x], y)
>>> f(np.array([[1, -1, 2]], np.float32))
array([6.], dtype=float32)
"""

import builtins as _builtins
import sys as _sys
import types as _types

from . import (
    accelerator,
    amp,
    autograd_check,
    autograd_functional,
    backends,
    cuda,
    distributed,
    distributions,
    eager,
    frontend,
    init,
    nn,
    optim,
    passes,
    profiler,
    quasirandom,
    testing,
    utils,
)
from .array_types import (
    Size,
    channels_last,
    channels_last_3d,
    contiguous_format,
    device,
    layout,
    memory_format,
    preserve_format,
    return_types,
    strided,
)
from .checkpoint import CheckpointError, load, save
from .dtypes import DType as dtype
from .dtypes import (
    bfloat16,
    bool_,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    float4_e2m1fn,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int2,
    int4,
    int8,
    int16,
    int32,
    int64,
    long,
    promote,
    set_default_dtype,
    uint2,
    uint4,
    uint8,
    uint16,
    uint32,
    uint64,
)  # fmt: skip
from .dtypes import (
    public as _dtypes_public,
)
from .eager import *  # noqa: F403
from .eager import Tensor, autograd
from .eager.sparse import sparse_coo
from .eager.sparse_compressed import sparse_bsc, sparse_bsr, sparse_csc, sparse_csr
from .errors import (
    AutogradError,
    DeviceError,
    DTypeError,
    GraphError,
    GraphFormatError,
    IndexOutOfRangeError,
    IntegerDivisionByZeroError,
    KilnError,
    LayoutError,
    NumericsError,
    SavedTensorError,
    ShapeError,
)
from .frontend import *  # noqa: F403
from .frontend import custom_function as _custom_function
from .frontend import fft, masked, random, signal, sparse
from .frontend.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .frontend.core import Variable, constant, placeholder
from .frontend.dump import dump, load_graph
from .frontend.foreach import *  # noqa: F403 (`kn._foreach_lerp_`..., torch's)
from .frontend.special import namespace as _special_namespace
from .generator import Generator
from .graph import Graph, Node, Symbol, get_default_graph, name_scope, reset_default_graph
from .graph.verify import verify
from .interchange import export_onnx, import_onnx, to_networkx
from .interchange.onnx_torch import onnx  # `kn.onnx.export`, torch.onnx's call
from .ops.random import manual_seed
from .runtime import Function, KernelError, Session, function
from .shapes import Dim
from .tracing import compile, trace  # noqa: A004 (the API's name)
from .tracing import func as func  # `kn.func`: torch.func's transforms
from .tracing.torch_compiler import compiler, jit  # torch.compiler's and torch.jit's names
from .tracing.transforms import jacfwd, jacrev, jvp, vmap

# The public dtypes are `kn.dtype` objects (kiln keeps NumPy's dtypes inside).
# fmt: off
(bfloat16, bool_, double, float4_e2m1fn, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
 float8_e5m2fnuz, float8_e8m0fnu, float16, float32, float64, half, int2, int4, int8, int16, int32,
 int64, long, uint2, uint4, uint8, uint16, uint32, uint64) = map(_dtypes_public, (
    bfloat16, bool_, double, float4_e2m1fn, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
    float8_e5m2fnuz, float8_e8m0fnu, float16, float32, float64, half, int2, int4, int8, int16,
    int32, int64, long, uint2, uint4, uint8, uint16, uint32, uint64))
cdouble, cfloat, complex64, complex128 = map(_dtypes_public, (cdouble, cfloat, complex64,
                                                              complex128))
# fmt: on
bool, float, int, short = bool_, float32, int32, int16  # noqa: A001 -- PyTorch's dtype names

__version__ = "0.1.0"

# `kn.autograd.functional` (and `import kiln.autograd.functional`), as torch.autograd.functional
autograd.functional = autograd_functional
# `kn.autograd.forward_ad` (and `import kiln.autograd.forward_ad`), torch.autograd.forward_ad
autograd.forward_ad = eager.forward_ad
# `kn.autograd.gradcheck` and `gradgradcheck` (torch.autograd's; eager functions)
autograd.gradcheck, autograd.gradgradcheck = autograd_check.gradcheck, autograd_check.gradgradcheck
# `kn.autograd.Function` (torch.autograd.Function) and `kn.autograd.function.once_differentiable`
autograd.Function = _custom_function.Function
autograd.Variable = eager.legacy_types.Variable  # `torch.autograd.Variable(t, requires_grad=)`
# `kn.autograd.detect_anomaly` and `set_detect_anomaly` (context managers, as torch.autograd's)
autograd.detect_anomaly = frontend.torch_settings.detect_anomaly
autograd.set_detect_anomaly = frontend.torch_settings.set_detect_anomaly
autograd.function = _custom_function
# torch.autograd's grad-mode names too (`@torch.autograd.no_grad()`): the same objects as kn's
autograd.no_grad, autograd.enable_grad = eager.grad_mode.no_grad, eager.grad_mode.enable_grad
autograd.inference_mode = eager.grad_mode.inference_mode
# torch.autograd.profiler's legacy profile and record_function (kn.profiler's recorder)
autograd.profiler = _types.ModuleType("kiln.autograd.profiler", "torch.autograd.profiler's names")
autograd.profiler.profile, autograd.profiler.record_function = (
    profiler.legacy_profile,
    profiler.record_function,
)
# `kn.autograd.graph.saved_tensors_hooks` and `save_on_cpu` (torch.autograd.graph's)
autograd.graph = eager.saved_hooks
_sys.modules[f"{__name__}.autograd.graph"] = eager.saved_hooks
cuda.amp = amp.cuda  # `kn.cuda.amp.autocast`, `kn.cuda.amp.GradScaler`, as torch.cuda.amp
_sys.modules.setdefault(f"{__name__}.autograd", autograd)
_sys.modules[f"{__name__}.autograd.functional"] = autograd_functional
_sys.modules[f"{__name__}.compiler"] = compiler  # `import kiln.compiler`, as torch's
_sys.modules[f"{__name__}.jit"] = jit
_sys.modules[f"{__name__}.onnx"] = onnx
_sys.modules[f"{__name__}.autograd.profiler"] = autograd.profiler
_sys.modules[f"{__name__}.autograd.forward_ad"] = eager.forward_ad
_sys.modules[f"{__name__}.fft"] = fft  # `import kiln.fft`, as torch.fft
_sys.modules[f"{__name__}.sparse"] = sparse  # `import kiln.sparse`, as torch.sparse
spmm = sparse.spmm  # `torch.spmm(sparse_or_dense, dense)`: PyTorch's name of the product
_sys.modules[f"{__name__}.masked"] = masked  # `import kiln.masked`, as torch.masked
_sys.modules[f"{__name__}.signal"] = signal  # `import kiln.signal.windows`, as torch's
_sys.modules[f"{__name__}.signal.windows"] = signal.windows
special = _special_namespace(_sys.modules[__name__])  # `kn.special`, torch.special's names
# PyTorch's legacy typed classes: `kn.FloatTensor`, `kn.LongTensor`, ..., `kn.cuda.FloatTensor`
globals().update(eager.legacy_types.typed_classes(cuda=False))
for _name, _cls in eager.legacy_types.typed_classes(cuda=True).items():
    setattr(cuda, _name, _cls)


def devices() -> list[str]:
    """The devices kiln can run on now: `"cpu"`, then `"cuda:N"` for each usable GPU.

    >>> import kiln as kn
    >>> kn.devices()[0]
    'cpu'
    """
    # NOTE: the builtin: `range` here is kn.range (PyTorch's inclusive, float one)
    return ["cpu", *(f"cuda:{i}" for i in _builtins.range(cuda.device_count()))]


# PyTorch's names of dtypes kiln does not have, and why (an AttributeError says so)
_MISSING_DTYPES = {
    name: "complex32 (PyTorch's chalf: float16 real and imaginary parts) is not supported: "
    "NumPy and CuPy, whose arrays hold kiln's values, have no complex32 type to compute "
    "with; use kn.complex64, or keep the parts as float16 values (a last dim of 2)"
    for name in ("complex32", "chalf")
}


def __getattr__(name: str):
    if name in _MISSING_DTYPES:
        raise AttributeError(f"module 'kiln' has no attribute '{name}': {_MISSING_DTYPES[name]}")
    raise AttributeError(f"module 'kiln' has no attribute '{name}'")
