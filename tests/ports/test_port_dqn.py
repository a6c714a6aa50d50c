"""A DQN update step (replay batch, gather(1, a), max(1).values, target net copied by
load_state_dict and soft-updated through .data.copy_, smooth_l1 loss, clip_grad_value_),
run with torch 2.13 and with kiln from the same weights and batches, compared step by step."""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity

import kiln as kn

torch = pytest.importorskip("torch")


def program(fw, net, target, batches, tau=0.1, gamma=0.9, wrap=lambda f: f):
    target.load_state_dict(net.state_dict())
    opt = fw.optim.AdamW(net.parameters(), lr=1e-2, amsgrad=True)
    losses = []

    def step(s, a, r, s2, done):
        q = net(s).gather(1, a)
        with fw.no_grad():
            nxt = target(s2).max(1).values * (1 - done)
        loss = fw.nn.functional.smooth_l1_loss(q, (r + gamma * nxt).unsqueeze(1))
        opt.zero_grad()
        loss.backward()
        fw.nn.utils.clip_grad_value_(net.parameters(), 0.05)
        opt.step()
        with fw.no_grad():
            for tp, p in zip(target.parameters(), net.parameters()):
                tp.data.copy_(tau * p + (1 - tau) * tp)
        return loss

    step = wrap(step)
    for batch in batches:
        losses.append(step(*(fw.tensor(x) for x in batch)).item())
    return losses


def make(fw):
    nn = fw.nn
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_dqn_steps_match_torch(wrap):
    rng = np.random.default_rng(0)
    batches = [
        (
            rng.standard_normal((8, 4)).astype(np.float32),
            rng.integers(0, 2, (8, 1)).astype(np.int64),
            rng.standard_normal(8).astype(np.float32),
            rng.standard_normal((8, 4)).astype(np.float32),
            (rng.random(8) < 0.2).astype(np.float32),
        )
        for _ in range(5)
    ]
    torch.manual_seed(0)
    tn, tt = make(torch), make(torch)
    kn_net, kn_t = make(kn), make(kn)
    copy_weights(tn, kn_net)
    copy_weights(tt, kn_t)
    tl = program(torch, tn, tt, batches)
    kl = program(kn, kn_net, kn_t, batches, wrap=kn.compile if wrap == "compiled" else identity)
    assert_losses_close(kl, tl, rtol=1e-5, atol=1e-6)
    assert_state_close(tn, kn_net, rtol=1e-5, atol=1e-6)
    assert_state_close(tt, kn_t, rtol=1e-5, atol=1e-6)
