"""GradScaler inside kn.compile and in graph mode (kiln/amp/grad_scaler_graph.py): the same
scales, growth trackers, skipped steps and parameters as the eager scaler, whose algorithm
tests/test_amp*.py checks against torch and a NumPy re-implementation."""

import copy

import numpy as np

import kiln as kn
import kiln.nn.functional as F

# loss multipliers: inf makes every gradient NaN, so that step is skipped and the scale backs off
FACTORS = [1.0, 1.0, np.inf, 1.0, 1.0, 1.0, np.inf, 1.0]


def _setup(make_opt):
    kn.manual_seed(0)
    model = kn.nn.Linear(4, 3)
    twin = copy.deepcopy(model)
    opts = make_opt(model.parameters()), make_opt(twin.parameters())
    scalers = [kn.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2) for _ in "ab"]
    return (model, twin), opts, scalers


def _batches(sizes=None):
    rng = np.random.default_rng(0)
    for k, factor in enumerate(FACTORS):
        b = 8 if sizes is None else sizes[k % len(sizes)]
        x = kn.tensor(rng.standard_normal((b, 4)).astype(np.float32))
        y = kn.tensor(rng.integers(0, 3, b))
        yield x, y, kn.tensor(np.float32(factor))


def _eager_step(model, opt, scaler, x, y, k):
    opt.zero_grad()
    scaler.scale(F.cross_entropy(model(x), y) * k).backward()
    scaler.step(opt)
    scaler.update()


def _compare(models, opts, scalers):
    assert scalers[0].get_scale() == scalers[1].get_scale()
    assert scalers[0].state_dict() == scalers[1].state_dict()
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        # Adam's compiled update rounds within an ulp of the eager one (fused differently)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-8)


def test_compiled_scaler_steps_skip_and_scale_as_eager():
    models, opts, scalers = _setup(lambda ps: kn.optim.Adam(ps, lr=0.01))

    @kn.compile
    def step(x, y, k):
        opts[0].zero_grad()
        loss = F.cross_entropy(models[0](x), y) * k
        scalers[0].scale(loss).backward()
        scalers[0].step(opts[0])
        scalers[0].update()
        return loss

    scales = []
    for x, y, k in _batches(sizes=[8, 8, 5]):  # a second batch size: a second trace
        step(x, y, k)
        _eager_step(models[1], opts[1], scalers[1], x, y, k)
        _compare(models, opts, scalers)
        scales.append(scalers[0].get_scale())
    # by hand: growth every 2 clean steps, halving after each inf
    assert scales == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0, 1024.0, 1024.0]
    assert step.trace_count == 2
    # skipped steps left Adam's step count behind the number of calls, as eager's
    got, want = opts[0].state_dict()["state"], opts[1].state_dict()["state"]
    assert int(got[0]["step"]) == int(want[0]["step"]) == 6


def test_graph_mode_scaler():
    models, opts, scalers = _setup(lambda ps: kn.optim.SGD(ps, lr=0.1, momentum=0.9))
    with kn.Graph().as_default():
        xs = kn.placeholder(kn.float32, (8, 4), name="x")
        ys = kn.placeholder(kn.int64, (8,), name="y")
        ks = kn.placeholder(kn.float32, (), name="k")
        loss = F.cross_entropy(models[0](xs), ys) * ks
        scalers[0].scale(loss).backward()
        train = scalers[0].step(opts[0])
        update = scalers[0].update()
        session = kn.Session()
    for x, y, k in _batches():
        session.run([loss, train, update], {xs: x.numpy(), ys: y.numpy(), ks: k.numpy()})
        _eager_step(models[1], opts[1], scalers[1], x, y, k)
        with kn.Graph().as_default():
            _compare(models, opts, scalers)
