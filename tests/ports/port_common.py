"""What the ported programs share: copying torch's weights into kiln, and comparing runs.

Each program in this directory is written once, against a module argument named `torch`, and
run twice: with PyTorch itself and with `kiln` passed in its place (the rename a user makes,
`import kiln as kn`). Its data comes from NumPy with a fixed seed, so both runs see the same
batches, and kiln's modules start from torch's initial weights (`copy_weights`), so that the
two runs' losses and parameters can be compared step by step.

Tolerances: float32 has a relative rounding of 6e-8; one forward pass of these small models
sums at most a few thousand products per output, in another order in each framework, which
leaves relative differences of about 1e-6 per step; a few optimizer steps compound them
(momentum and Adam's division by sqrt(v) amplify the differences of small gradients), so the
float32 comparisons use rtol=2e-4 / atol=2e-5 on losses and 1e-3 / 1e-4 on parameters after
several steps, and the float64 program (LBFGS) uses 1e-9.
"""

import numpy as np

import kiln as kn

LOSS_TOL = {"rtol": 2e-4, "atol": 2e-5}
PARAM_TOL = {"rtol": 1e-3, "atol": 1e-4}


def to_numpy(t):
    """A torch or kiln tensor (or a number) as a NumPy array."""
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def copy_weights(torch_module, kiln_module):
    """Load `torch_module`'s state_dict into `kiln_module`, through NumPy."""
    state = {k: kn.tensor(to_numpy(v).copy()) for k, v in torch_module.state_dict().items()}
    kiln_module.load_state_dict(state)


def assert_state_close(torch_module, kiln_module, loose=(), **tol):
    """Every entry of the two state_dicts (parameters and buffers) agrees within `tol`;
    `loose`: (name, index, atol) of entries that agree only within `atol` there."""
    tol = tol or PARAM_TOL
    ts, ks = torch_module.state_dict(), kiln_module.state_dict()
    assert list(ts) == list(ks)
    for name in ts:
        k, t = to_numpy(ks[name]).copy(), to_numpy(ts[name]).copy()
        for loose_name, index, atol in loose:
            if loose_name == name:
                np.testing.assert_allclose(k[index], t[index], atol=atol, err_msg=name)
                k[index] = t[index]
        np.testing.assert_allclose(k, t, err_msg=name, **tol)


def assert_losses_close(kiln_losses, torch_losses, **tol):
    tol = tol or LOSS_TOL
    assert len(kiln_losses) == len(torch_losses)
    np.testing.assert_allclose(
        np.asarray(kiln_losses, np.float64), np.asarray(torch_losses, np.float64), **tol
    )


def identity(fn):
    return fn
