"""Eager optimizer steps are all or nothing: a step that raises leaves every parameter, slot
and step count as it was; floating-point overflow gives PyTorch's inf and nan, whatever
np.seterr says, instead of an error half-way through."""

from __future__ import annotations

import numpy as np
import pytest

import kiln as kn

OPTIMIZERS = {
    "sgd-momentum": lambda ps: kn.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adam": lambda ps: kn.optim.Adam(ps, lr=0.1),
    "adamw-amsgrad": lambda ps: kn.optim.AdamW(ps, lr=0.1, amsgrad=True),
}


def _params(n=3):
    rng = np.random.default_rng(0)
    return [kn.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
            for _ in range(n)]  # fmt: skip


def _set_grads(params, seed=1):
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = kn.tensor(rng.standard_normal(p.shape).astype(np.float32))


def _snapshot(opt, params):
    """Every parameter's value and every state entry (slots and step counts), copied."""
    values = [p.detach().numpy().copy() for p in params]
    state = {
        i: {k: v if isinstance(v, int) else v.numpy().copy() for k, v in opt._state[p].items()}
        for i, p in enumerate(params)
        if p in opt._state
    }
    return values, state


def _assert_unchanged(opt, params, snapshot):
    values, state = snapshot
    for p, v in zip(params, values):
        np.testing.assert_array_equal(p.detach().numpy(), v)
    assert {i for i, p in enumerate(params) if p in opt._state} == set(state)
    for i, entries in state.items():
        now = opt._state[params[i]]
        assert set(now) == set(entries)
        for k, v in entries.items():
            np.testing.assert_array_equal(now[k] if isinstance(v, int) else now[k].numpy(), v)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_step_failing_on_a_later_parameter_changes_nothing(name):
    # Regression: parameters before the failing one were updated and its step count advanced.
    params = _params()
    opt = OPTIMIZERS[name](params)
    _set_grads(params)
    opt.step()  # state exists now: slots and step counts must survive the failure too
    _set_grads(params, seed=2)
    snapshot = _snapshot(opt, params)
    update = opt._update

    def failing(param, grad, slots, step, group=None):
        if param is params[2]._data:
            raise RuntimeError("the third parameter's update fails")
        return update(param, grad, slots, step, group)

    opt._update = failing
    with pytest.raises(RuntimeError, match="third parameter"):
        opt.step()
    _assert_unchanged(opt, params, snapshot)
    # The failed step left no trace: the next step is the second one, as without it.
    opt._update = update
    ref_params = _params()
    reference = OPTIMIZERS[name](ref_params)
    _set_grads(ref_params)
    reference.step()
    _set_grads(ref_params, seed=2)
    reference.step()
    opt.step()
    for p, r in zip(params, ref_params):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())
    assert opt._state[params[0]]["step"] == 2


def test_a_gradient_of_the_wrong_shape_changes_nothing():
    # Regression: a (2, 4) gradient for a (4,) parameter broadcast the update to (2, 4) and
    # failed in the copy, after the first parameter had been updated.
    params = _params()
    opt = kn.optim.Adam(params, lr=0.1)
    _set_grads(params)
    snapshot = _snapshot(opt, params)
    params[1]._grad = kn.tensor(np.ones((2, 4), np.float32))  # what the .grad setter refuses
    with pytest.raises(kn.ShapeError, match=r"parameter 1 \(f32\[4\] on cpu.*nothing was upd"):
        opt.step()
    _assert_unchanged(opt, params, snapshot)
    assert not opt._state


def test_an_update_the_parameter_dtype_cannot_hold_changes_nothing():
    # PyTorch refuses too: SGD's float update of an int64 tensor raises "result type Float
    # can't be cast to the desired output type Long".
    w = _params(1)[0]
    counts = kn.tensor(np.array([1, 2], np.int64))
    counts.add_(0)  # NOTE: gives the plain tensor its Meta, where .grad lives
    counts.grad = kn.tensor(np.array([1, 1], np.int64))
    opt = kn.optim.SGD([w, counts], lr=0.5)
    _set_grads([w])
    snapshot = _snapshot(opt, [w, counts])
    with pytest.raises(kn.DTypeError, match=r"parameter 1 \(i64\[2\].*new value is f64\[2\]"):
        opt.step()
    _assert_unchanged(opt, [w, counts], snapshot)


# Hand computation, float32 throughout (PyTorch 2.x gives the same, see the oracle below):
# SGD, lr 1: 3e38 - (-3e38) overflows to inf. Adam, lr 0.1: exp_avg_sq = 0.001 * (3e38)**2
# overflows to inf, so the step m / (sqrt(inf) / bias_correction + eps) is 0 and the parameter
# stays 3e38; exp_avg = 0.1 * 3e38 = 3e37.
OVERFLOW = np.array([3e38, 1.0], np.float32)


def test_overflow_under_seterr_raise_gives_inf_like_pytorch():
    with np.errstate(all="raise"):
        w = kn.tensor(OVERFLOW, requires_grad=True)
        opt = kn.optim.SGD([w], lr=1.0)
        w.grad = kn.tensor(np.array([-3e38, 1.0], np.float32))
        opt.step()
        np.testing.assert_array_equal(w.detach().numpy(), [np.inf, 0.0])
        # inf - inf: nan, as PyTorch gives
        w.grad = kn.tensor(np.array([np.inf, 0.0], np.float32))
        opt.step()
        assert np.isnan(w.detach().numpy()[0]) and opt._state[w]["step"] == 2


def test_adam_overflow_under_seterr_raise_gives_pytorchs_values():
    w = kn.tensor(OVERFLOW, requires_grad=True)
    opt = kn.optim.Adam([w], lr=0.1)
    w.grad = kn.tensor(np.array([3e38, 0.0], np.float32))
    old = np.seterr(all="raise")
    try:
        opt.step()
    finally:
        np.seterr(**old)
    state = opt._state[w]
    np.testing.assert_array_equal(w.detach().numpy(), OVERFLOW)
    np.testing.assert_allclose(state["exp_avg"].numpy(), [3e37, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(state["exp_avg_sq"].numpy(), [np.inf, 0.0])
    assert np.geterr()["over"] == old["over"]  # the step's errstate is undone


def test_adam_overflow_matches_pytorch():
    torch = pytest.importorskip("torch")
    w = kn.tensor(OVERFLOW, requires_grad=True)
    opt = kn.optim.Adam([w], lr=0.1)
    t = torch.tensor(OVERFLOW, requires_grad=True)
    t_opt = torch.optim.Adam([t], lr=0.1)
    for grad in ([3e38, 0.0], [-3e38, 1.0]):
        w.grad = kn.tensor(np.array(grad, np.float32))
        t.grad = torch.tensor(np.array(grad, np.float32))
        with np.errstate(all="raise"):
            opt.step()
        t_opt.step()
        np.testing.assert_array_equal(w.detach().numpy(), t.detach().numpy())
        for slot in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(
                opt._state[w][slot].numpy(), t_opt.state[t][slot].numpy(), rtol=1e-6
            )
