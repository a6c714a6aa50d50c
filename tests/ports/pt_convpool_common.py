"""What the ports of PyTorch's convolution and pooling tests share
(test_port_pt_convpool_conv.py, test_port_pt_convpool_pool.py): seeded inputs and the
gradients of a scenario's outputs by its inputs."""

import numpy as np

f32, f64 = np.float32, np.float64


def arr(*shape, seed=0, dtype=f32):
    """A seeded standard-normal array."""
    return (
        np.random.default_rng(seed + 7 * len(shape) + sum(shape))
        .standard_normal(shape)
        .astype(dtype)
    )


def grads(lib, out, *inputs, seed=1):
    """`out` and the gradients of `(out * a fixed weight).sum()` by `inputs` (None where one
    does not reach), so that each output element's gradient counts differently."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = 0
    for i, o in enumerate(outs):
        if not o.dtype.is_floating_point:
            continue
        w = np.random.default_rng(seed + i).standard_normal(tuple(o.shape))
        total = total + (o * lib.tensor(w, dtype=o.dtype)).sum()
    return out, lib.autograd.grad(total, inputs, allow_unused=True)
