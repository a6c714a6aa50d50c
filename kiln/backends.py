"""`kn.backends`: PyTorch's backend switches, so that the settings at the top of a training
script run unchanged (`torch.backends.cudnn.benchmark = True`, `...deterministic = True`,
`torch.backends.cuda.matmul.allow_tf32 = True`, `torch.backends.mps.is_available()`).

kiln calls no cuDNN, MKL-DNN or MPS kernel: the settings are kept (read back as set) and
change nothing, and the availability checks say False. Its float32 matrix products are
float32 (`kn.set_float32_matmul_precision` is taken the same way).

>>> import kiln as kn
>>> kn.backends.cudnn.benchmark = True
>>> kn.backends.cudnn.benchmark, kn.backends.cudnn.is_available(), kn.backends.mps.is_available()
(True, False, False)
"""

from __future__ import annotations

import types

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps"]


def _unavailable() -> bool:
    return False


def _version():
    return None


cudnn = types.SimpleNamespace(
    enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
    is_available=_unavailable, version=_version,
)  # fmt: skip
cudnn.__doc__ = "cuDNN's switches: kept, unused (kiln calls no cuDNN kernel)."

cuda = types.SimpleNamespace(
    matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                 allow_bf16_reduced_precision_reduction=True),
    is_built=_unavailable,
)  # fmt: skip
cuda.__doc__ = "CUDA matmul switches: kept, unused (kiln's float32 products are float32)."

mps = types.SimpleNamespace(is_available=_unavailable, is_built=_unavailable)
mps.__doc__ = "Apple's MPS: not available in kiln."

mkldnn = types.SimpleNamespace(enabled=True, is_available=_unavailable)
mkldnn.__doc__ = "MKL-DNN (oneDNN) switches: kept, unused."

cpu = types.SimpleNamespace(get_cpu_capability=lambda: "DEFAULT")
cpu.__doc__ = "The CPU kernels' instruction set PyTorch reports: kiln's are NumPy's."
