"""Issue 11's leftovers: small differences from torch 2.13, each checked against torch itself
(the oracle: the same call on torch, its answer or its exception type and message), eagerly, in
graph mode (placeholders and `kn.Session`) and under `kn.compile` where the op is there."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _torch_error(fn, *arrays):
    with pytest.raises(Exception) as info:
        fn(torch, *[torch.from_numpy(a.copy()) for a in arrays])
    return info.value


def _builtin(error):
    return next(c for c in type(error).__mro__ if c.__module__ == "builtins")


def _run(mode, fn, *arrays):
    if mode == "eager":
        return fn(kn, *[kn.tensor(a.copy()) for a in arrays])
    if mode == "compile":
        return kn.compile(lambda *ts: fn(kn, *ts))(*[kn.tensor(a.copy()) for a in arrays])
    with kn.Graph().as_default():
        xs = [kn.placeholder(a.dtype, a.shape) for a in arrays]
        out = fn(kn, *xs)
        with kn.Session() as sess:
            return sess.run(out, dict(zip(xs, arrays)))


def _raises_as_torch(mode, fn, *arrays):
    """kiln raises torch's built-in error type with torch's message (kiln for torch)."""
    want = _torch_error(fn, *arrays)
    with pytest.raises(_builtin(want)) as info:
        _run(mode, fn, *arrays)
    assert str(want).replace("torch", "kiln") in str(info.value)


MODES = ("eager", "graph", "compile")

# -- 1. class-index targets: Long or Byte (Long alone for inputs of 3 or more dims) ---------------
X2 = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
X3 = np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32)
Y1 = np.array([0, 2, 1, 1, 0])
Y2 = np.array([[0, 2, 1, 1, 0], [2, 2, 0, 1, 0]])
LOSSES = {
    "nll_loss": lambda L, x, y: L.nn.functional.nll_loss(x, y),
    "cross_entropy": lambda L, x, y: L.nn.functional.cross_entropy(x, y),
    "cross_entropy-smooth": lambda L, x, y: L.nn.functional.cross_entropy(
        x, y, label_smoothing=0.1
    ),
    "NLLLoss": lambda L, x, y: L.nn.NLLLoss(reduction="sum")(x, y),
    "CrossEntropyLoss": lambda L, x, y: L.nn.CrossEntropyLoss(reduction="none")(x, y),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "float32"])
def test_class_targets_other_than_long_or_byte_raise_as_torch(mode, loss, dtype):
    x = X2  # (float targets here are of another shape than the input's: no probabilities)
    if loss.startswith(("nll", "NLL")):
        x = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(np.float32)
    _raises_as_torch(mode, LOSSES[loss], x, Y1.astype(dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_byte_targets_of_3d_inputs_raise_as_torch(mode, loss):
    _raises_as_torch(mode, LOSSES[loss], X3, Y2.astype(np.uint8))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_long_and_byte_targets_give_torchs_loss(mode, loss, dtype):
    fn, y = LOSSES[loss], Y1.astype(dtype)
    want = fn(torch, torch.from_numpy(X2), torch.from_numpy(y)).numpy()
    got = np.asarray(_run(mode, fn, X2, y))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- 2. repeated dims: permute, movedim, rot90 (flip, sum, tensordot already raise as torch) ---
X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
REPEATS = {
    "permute": lambda L, x: x.permute(1, 1, 0),
    "permute-negative": lambda L, x: L.permute(x, (0, -3, 1)),
    "movedim-source": lambda L, x: x.movedim((0, -3), (1, 2)),
    "movedim-destination": lambda L, x: L.movedim(x, (0, 1), (1, -2)),
    "movedim-lengths": lambda L, x: x.movedim((0,), (1, 2)),
    "rot90-same-dims": lambda L, x: L.rot90(x, 1, (0, -3)),
    "rot90-same-dims-k0": lambda L, x: x.rot90(0, (1, 1)),
    "rot90-one-dim": lambda L, x: L.rot90(x, 1, (0,)),
    "rot90-1d": lambda L, x: L.rot90(x[0, 0], 1, (0, 0)),
    "flip": lambda L, x: x.flip(1, -2),
    "sum": lambda L, x: x.sum((0, 0)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REPEATS))
def test_repeated_dims_raise_as_torch(mode, name):
    _raises_as_torch(mode, REPEATS[name], X234)


# -- 6. sym_max / sym_min / sym_ite assert their argument types, as torch's ------------------------
SYM_CALLS = [
    ("sym_max", ("a", 1)), ("sym_max", (1, None)), ("sym_min", ([1], 2)), ("sym_ite", (1, 2, 3)),
    ("sym_ite", (True, 2, 3.0)), ("sym_max", (np.int32(2), np.float32(1.5))),
    ("sym_min", (True, 2)), ("sym_ite", (True, "a", "b")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), SYM_CALLS)
def test_sym_helpers_check_types_as_torch(name, args):
    try:
        want, error = getattr(torch, name)(*args), None
    except Exception as e:  # noqa: BLE001 -- torch's error is the oracle
        want, error = None, e
    if error is None:
        got = getattr(kn, name)(*args)
        assert got == want and type(got) is type(want)
        return
    with pytest.raises(_builtin(error)) as info:
        getattr(kn, name)(*args)
    assert not isinstance(info.value, TypeError)
    if "SymBool" not in str(error):  # (kiln has no SymBool: its message says bool)
        assert str(error) in str(info.value)


@pytest.mark.parametrize("name", ["sym_max", "sym_min"])
def test_sym_helpers_refuse_tensors_as_torch(name):
    with pytest.raises(AssertionError):
        getattr(torch, name)(torch.tensor(1.0), 2)
    with pytest.raises(AssertionError):
        getattr(kn, name)(kn.tensor(1.0), 2)
