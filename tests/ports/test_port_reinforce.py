"""REINFORCE with an entropy bonus (the shape of the classic PyTorch reinforce example),
ported by renaming.

A policy network ending in `F.softmax`, `torch.distributions.Categorical(probs)`, `m.sample()`,
`m.log_prob(action)` saved per step, `m.entropy()`, discounted returns normalized by
`(returns - returns.mean()) / (returns.std() + eps)`, `torch.cat(policy_loss).sum()`, Adam.
The environment: a NumPy corridor of 6 cells, reward 1 at the right end. Sampling draws from
each framework's own generator, so the comparison with torch replays torch's actions in
kiln's run (`replay`) and compares the log-probabilities, entropies and losses.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights

import kiln as kn


class Corridor:
    """Cells 0..5, start at 1; action 1 moves right, 0 left; reward 1 at cell 5 (the end)."""

    def reset(self):
        self.pos, self.t = 1, 0
        return self.observe()

    def observe(self):
        return np.eye(6, dtype=np.float32)[self.pos]

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        self.t += 1
        done = self.pos == 5 or self.t >= 12
        return self.observe(), float(self.pos == 5), done


def build(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(6, 16)
            self.affine2 = nn.Linear(16, 2)
            self.saved_log_probs = []
            self.entropies = []
            self.rewards = []

        def forward(self, x):
            x = self.affine1(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    return Policy()


def run(torch, policy, episodes=6, gamma=0.9, replay=None):
    Categorical = torch.distributions.Categorical
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-2)
    eps = np.finfo(np.float32).eps.item()
    env = Corridor()
    actions, losses, lengths, log_probs = [], [], [], []

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample() if replay is None else torch.tensor([replay.pop(0)])
        policy.saved_log_probs.append(m.log_prob(action))
        policy.entropies.append(m.entropy())
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = []
        for r in policy.rewards[::-1]:
            R = r + gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        entropy = torch.cat(policy.entropies).mean()
        optimizer.zero_grad()
        loss = torch.cat(policy_loss).sum() - 0.01 * entropy
        loss.backward()
        optimizer.step()
        log_probs.extend(lp.item() for lp in policy.saved_log_probs)
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        del policy.entropies[:]
        return loss.item()

    for _episode in range(episodes):
        state, done = env.reset(), False
        while not done:
            action = select_action(state)
            actions.append(action)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
        lengths.append(env.t)
        losses.append(finish_episode())
    return actions, losses, lengths, log_probs


def test_reinforce_learns():
    kn.manual_seed(0)
    policy = build(kn)
    _, _, lengths, _ = run(kn, policy, episodes=30)
    assert np.mean(lengths[-5:]) < 6.0  # 4 steps is the best; a random walk takes ~10
    probs = policy(kn.tensor(np.eye(6, dtype=np.float32)))
    assert (probs[1:5, 1] > 0.7).all()  # moves right from every inner cell


def test_categorical_like_torch(torch):
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    logits = np.log(probs) + 3.0  # the same distribution, unnormalized
    value = np.array([2, 0])
    for kw in ("probs", "logits"):
        arg = probs if kw == "probs" else logits
        t = torch.distributions.Categorical(**{kw: torch.from_numpy(arg)})
        k = kn.distributions.Categorical(**{kw: kn.from_numpy(arg)})
        for what in ("probs", "logits"):
            np.testing.assert_allclose(
                getattr(k, what).numpy(), getattr(t, what).numpy(), rtol=1e-6, atol=1e-6
            )
        np.testing.assert_allclose(
            k.log_prob(kn.from_numpy(value)).numpy(),
            t.log_prob(torch.from_numpy(value)).numpy(),
            rtol=1e-6,
        )
        np.testing.assert_allclose(k.entropy().numpy(), t.entropy().numpy(), rtol=1e-6)
        assert k.sample().shape == t.sample().shape == (2,)
        assert k.sample((4,)).shape == t.sample((4,)).shape == (4, 2)
        assert k.batch_shape == t.batch_shape and k.event_shape == t.event_shape


@pytest.mark.parametrize("wrap", ["eager", "compiled model"])
def test_reinforce_matches_torch(torch, wrap):
    torch.manual_seed(0)
    t_policy, k_policy = build(torch), build(kn)
    copy_weights(t_policy, k_policy)
    t_actions, t_losses, t_lengths, t_log_probs = run(torch, t_policy)
    # `policy = torch.compile(policy)`: its lists (saved_log_probs...) are the original's
    policy = kn.compile(k_policy) if wrap == "compiled model" else k_policy
    k_actions, k_losses, k_lengths, k_log_probs = run(kn, policy, replay=list(t_actions))
    assert k_lengths == t_lengths
    assert_losses_close(k_log_probs, t_log_probs)
    assert_losses_close(k_losses, t_losses)
    assert_state_close(t_policy, k_policy)


def test_normal_like_torch(torch):
    loc = np.array([0.0, 1.0, -2.0], np.float32)
    scale = np.array([1.0, 0.5, 2.0], np.float32)
    value = np.array([0.3, 1.0, 1.0], np.float32)
    t = torch.distributions.Normal(torch.from_numpy(loc), torch.from_numpy(scale))
    k = kn.distributions.Normal(kn.from_numpy(loc), kn.from_numpy(scale))
    for what in ("log_prob", "cdf"):
        expected = getattr(t, what)(torch.from_numpy(value)).numpy()
        np.testing.assert_allclose(
            getattr(k, what)(kn.from_numpy(value)).numpy(), expected, rtol=1e-6
        )
    np.testing.assert_allclose(k.entropy().numpy(), t.entropy().numpy(), rtol=1e-6)
    np.testing.assert_allclose(k.variance.numpy(), t.variance.numpy())
    assert k.rsample((5,)).shape == t.rsample((5,)).shape == (5, 3)
    scalar_t, scalar_k = torch.distributions.Normal(0.0, 2.0), kn.distributions.Normal(0.0, 2.0)
    np.testing.assert_allclose(
        scalar_k.log_prob(kn.tensor(1.0)).numpy(),
        scalar_t.log_prob(torch.tensor(1.0)).numpy(),
        rtol=1e-6,
    )
    # the reparameterized sample carries gradients to loc and scale: d/dloc = 1 per draw
    mu = kn.zeros(3, requires_grad=True)
    kn.distributions.Normal(mu, kn.ones(3)).rsample((4,)).sum().backward()
    np.testing.assert_array_equal(mu.grad.numpy(), [4.0, 4.0, 4.0])


def test_categorical_under_compile():
    logits = kn.tensor([[0.0, 1.0, 2.0], [2.0, 0.0, 0.0]], requires_grad=True)
    action = kn.tensor([2, 0])

    def loss_fn(logits, action):
        m = kn.distributions.Categorical(logits=logits)
        return -(m.log_prob(action).sum() + 0.1 * m.entropy().sum())

    assert kn.testing.check_eager_vs_compiled(loss_fn, logits, action)
    draws = kn.compile(lambda p: kn.distributions.Categorical(probs=p).sample((2000,)))
    counts = np.bincount(draws(kn.tensor([0.2, 0.8])).numpy(), minlength=2)
    assert abs(counts[1] / 2000 - 0.8) < 0.05  # 5 standard deviations of a binomial(2000, .8)
