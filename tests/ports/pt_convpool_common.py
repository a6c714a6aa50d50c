"""What the ports of PyTorch's convolution and pooling tests share
(test_port_pt_convpool_conv.py, test_port_pt_convpool_pool.py): seeded inputs and the
gradients of a scenario's outputs by its inputs."""

import numpy as np
from pt_oracle import outcome

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
    total = 0
    for i, o in enumerate(_leaves(out)):
        if not o.dtype.is_floating_point:
            continue
        w = np.random.default_rng(seed + i).standard_normal(tuple(o.shape))
        total = total + (o * lib.tensor(w, dtype=o.dtype)).sum()
    return out, lib.autograd.grad(total, inputs, allow_unused=True)


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


REFUSALS = ("refused", "error", "mismatch", "wrong", "not_dividing", "bad_", "out_of_range")


def assert_torch_runs(torch, scenarios, name):
    """A scenario whose name does not say it is refused (`REFUSALS`) runs on torch (so that
    an error in the scenario itself, raised alike by both, does not pass as agreement)."""
    fn, inputs = scenarios.cases[name]
    _, error = outcome(torch, fn, inputs)
    refused = any(word in name for word in REFUSALS)
    assert (error is not None) == refused, (name, error)
