"""Differences found by porting PyTorch programs of more domains by renaming `torch` to `kn`:
neural style transfer (forward hooks, Gram matrices, LBFGS on an image), and the compiled
closures and steps those programs write. Each test is the smallest form of one difference, with
torch 2.13 as the oracle (run eagerly: torch.compile gives the same values).
"""

import numpy as np
import pytest
from port_common import to_numpy

import kiln as kn

# -- an optimizer over a plain leaf tensor, zero_grad() inside a compiled closure ---------------
# The neural style transfer tutorial optimizes an image (`img.requires_grad_()`, no Parameter)
# with LBFGS, whose closure calls `optimizer.zero_grad()` then `loss.backward()`. Compiled, the
# closure's zero_grad() cleared nothing on later calls: each call added its gradient to the last
# one's, and LBFGS followed the sum (silently other images).


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("captured", [True, False], ids=["captured", "argument"])
def test_zero_grad_of_a_plain_leaf_in_a_compiled_closure(torch, set_to_none, captured):
    results = []
    for lib in (torch, kn):
        img = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        opt = lib.optim.SGD([img], lr=0.1, momentum=0.5)

        def closure(x, im=None):
            im = img if im is None else im
            opt.zero_grad(set_to_none=set_to_none)
            loss = (im * im * x).sum()
            loss.backward()
            return loss

        step = closure if lib is torch else kn.compile(closure)
        seen = []
        for _ in range(3):
            x = lib.tensor([1.0, 2.0, 3.0])
            loss = step(x) if captured else step(x, img)
            seen += [loss.detach().clone(), img.grad.clone()]
            opt.step()
        results.append(seen + [img.detach()])
    for k, t in zip(results[1], results[0]):
        np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-6)


# -- a leaf that requires grad, changed under no_grad inside a compiled function ---------------
# The same closure clamps the image into [0, 1] first (`with torch.no_grad(): img.clamp_(0, 1)`)
# and torch.compile runs it; kn.compile refused it ("in-place change of 'img', an argument of the
# compiled function that requires grad"), as if grad mode were on, and then refused the captured
# tensor as sharing memory with itself. Under no_grad the tensor stays the leaf its caller holds,
# so gradients of what reads its new value reach it.


@pytest.mark.parametrize("inside", [True, False], ids=["backward-inside", "backward-after"])
def test_no_grad_change_of_a_leaf_in_a_compiled_function(torch, inside):
    results = []
    for lib in (torch, kn):
        img = lib.tensor([1.5, -0.5, 0.25], requires_grad=True)

        def f(x):
            with lib.no_grad():
                img.clamp_(0, 1)
            loss = (img * img * x).sum()
            if inside:
                loss.backward()
            return loss

        step = f if lib is torch else kn.compile(f)
        seen, flags = [], []
        for k in range(2):
            img.grad = None
            loss = step(lib.tensor([1.0, 2.0, 3.0]) * (k + 1))
            flags.append(loss.requires_grad)
            if not inside:
                loss.backward()
            seen += [loss.detach().clone(), img.grad.clone(), img.detach().clone()]
            with lib.no_grad():
                img.sub_(0.4 * img.grad - 0.3)
        results.append((seen, flags))
    assert results[1][1] == results[0][1]
    for k, t in zip(results[1][0], results[0][0]):
        np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-6)


def test_in_place_change_of_a_leaf_with_grad_on_is_still_refused():
    img = kn.ones(3, requires_grad=True)

    @kn.compile
    def f(x):
        img.clamp_(0, 0.5)  # torch: "a leaf Variable that requires grad is being used in an
        return (img * x).sum()  # in-place operation"

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        f(kn.ones(3))


# -- WGAN's weight clipping inside a compiled training step -------------------------------------
# The WGAN critic's loop clips its weights (`for p in netD.parameters(): p.data.clamp_(-c, c)`)
# before its forward, backward and `optimizerD.step()`. Compiled, the step updated the weights
# as they were before the clipping (the Variable, not its clipped value), so every call after the
# first trained unclipped weights (silently other losses and weights).


def clipped_critic_steps(lib, how, compiled):
    critic = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Linear(4, 1))
    with lib.no_grad():
        critic[0].weight.copy_(lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)))
        critic[0].bias.fill_(0.3)
        critic[1].weight.copy_(lib.tensor([[0.5, -1.0, 2.0, 0.05]]))
        critic[1].bias.fill_(-0.2)
    opt = lib.optim.RMSprop(critic.parameters(), lr=5e-2)

    def step(real, fake):
        with lib.no_grad():
            if how == "params":
                for p in critic.parameters():
                    p.clamp_(-0.4, 0.4)
            elif how == "data":
                for p in critic.parameters():
                    p.data.clamp_(-0.4, 0.4)
            else:  # a module attribute's .data
                critic[0].weight.data.clamp_(-0.4, 0.4)
        opt.zero_grad()
        loss = critic(fake).mean() - critic(real).mean()
        loss.backward()
        opt.step()
        return loss

    step = kn.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(4):
        real, fake = (lib.tensor(rng.normal(size=(5, 3)).astype(np.float32)) for _ in range(2))
        losses.append(step(real, fake).item())
    return losses, [p.detach().clone() for p in critic.parameters()]


@pytest.mark.parametrize("how", ["params", "data", "attribute-data"])
def test_weight_clipping_before_a_compiled_step(torch, how):
    t_losses, t_params = clipped_critic_steps(torch, how, False)
    for compiled in (False, True):
        k_losses, k_params = clipped_critic_steps(kn, how, compiled)
        np.testing.assert_allclose(k_losses, t_losses, rtol=1e-5, atol=1e-6)
        for k, t in zip(k_params, t_params):
            np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-5, atol=1e-6)


# -- a module's weight changed through its attribute after a compiled step ---------------------
# Clipping after `optimizer.step()` through the module's attribute (`netD.fc.weight.data.clamp_`,
# or `netD.fc.weight.clamp_` / a row of it under no_grad) was lost: after a step in the trace the
# attribute reads the stepped value, and the change stayed in the trace without being assigned
# to the parameter, so each call after the first went on from unclipped weights.


def steps_then_change(lib, how, compiled):
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, -0.5, 0.25], [0.75, 0.5, -1.0]]))
        lin.bias.fill_(0.1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1, momentum=0.5)

    def step(x):
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()
        if how == "data":
            lin.weight.data.clamp_(-0.3, 0.3)
        with lib.no_grad():
            if how == "attribute":
                lin.weight.clamp_(-0.3, 0.3)
            elif how == "row":
                lin.weight[1].mul_(0.5)
                lin.bias[0] = 0.0
        return loss, lin.weight * 1.0

    step = kn.compile(step) if compiled else step
    seen = []
    for k in range(3):
        loss, w = step(lib.tensor([[1.0, 2.0, -1.0], [0.5, -1.5, 2.0]]) * (k + 1))
        seen += [loss.detach().clone(), w.detach().clone()]
    return seen + [p.detach().clone() for p in lin.parameters()]


@pytest.mark.parametrize("how", ["data", "attribute", "row"])
def test_module_attribute_changed_after_a_compiled_step(torch, how):
    expected = steps_then_change(torch, how, False)
    for compiled in (False, True):
        for k, t in zip(steps_then_change(kn, how, compiled), expected):
            np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-5, atol=1e-6)


# -- a captured tensor indexed by a tensor the compiled function computes -----------------------
# PPO's minibatch update indexes the rollout's tensors (captured, not arguments) by a minibatch
# of indices: `obs[idx]`, `old_logp[idx]`; a diffusion step reads `alphas_cumprod[t]`. Compiled,
# kiln raised "gather: argument tensor(...) is not a Symbol": the eager tensor stayed eager while
# its index was a graph value.


def test_captured_tensor_indexed_by_a_traced_index(torch):
    results = []
    for lib in (torch, kn):
        table = lib.arange(10.0).reshape(5, 2)
        flat = lib.tensor([0.5, 1.5, 2.5, 3.5, 4.5])

        def f(idx):
            return table[idx] * 2, table[idx, 1], flat[idx + 1], table[:, 0][idx]

        step = f if lib is torch else kn.compile(f)
        first = step(lib.tensor([3, 1, 3]))
        table.mul_(-1)  # the captured tensor changed between calls: read as it is now
        results.append((*first, *step(lib.tensor([0, 3]))))
    for k, t in zip(results[1], results[0]):
        np.testing.assert_array_equal(to_numpy(k), to_numpy(t))


# -- a mixture density network ------------------------------------------------------------------
# Its likelihood is `D.MixtureSameFamily(D.Categorical(logits=pi), D.Independent(D.Normal(mu,
# sigma), 1))` (or Normal components for a scalar target). kiln's MixtureSameFamily and
# TransformedDistribution come with the distributions of the `dists` branch: these tests compare
# them with torch where kiln has them.

needs_mixture = pytest.mark.skipif(
    not hasattr(kn.distributions, "MixtureSameFamily"), reason="kiln has no MixtureSameFamily here"
)
needs_transforms = pytest.mark.skipif(
    not hasattr(kn.distributions, "TransformedDistribution"),
    reason="kiln has no TransformedDistribution here",
)


def mdn_values(lib, event):
    D = lib.distributions
    width = 2 * max(event, 1) + 1  # a logit, the means and the scales of each component
    h = lib.tensor(np.linspace(-2, 2, 5 * 3 * width).reshape(5, 3, width), requires_grad=True)
    logits, mu = h[..., 0], h[..., 1 : 1 + event] if event else h[..., 1]
    sigma = lib.nn.functional.softplus(h[..., 1 + event :] if event else h[..., 2]) + 0.1
    comp = D.Independent(D.Normal(mu, sigma), 1) if event else D.Normal(mu, sigma)
    mix = D.MixtureSameFamily(D.Categorical(logits=logits), comp)
    y = lib.tensor(np.linspace(-1, 1, 5 * max(event, 1)).reshape(5, event) if event
                   else np.linspace(-1, 1, 5))  # fmt: skip
    out = [mix.log_prob(y), mix.mean, mix.variance]
    if not event:
        out.append(mix.cdf(y))
    loss = -out[0].mean() + sum(o.sum() for o in out[1:])
    shapes = (tuple(mix.batch_shape), tuple(mix.event_shape))
    return out, lib.autograd.grad(loss, h), shapes, tuple(mix.sample((4,)).shape)


@needs_mixture
@pytest.mark.parametrize("event", [0, 2])
def test_mixture_same_family_like_torch(torch, event):
    t_out, t_grad, t_shapes, t_sample = mdn_values(torch, event)
    k_out, k_grad, k_shapes, k_sample = mdn_values(kn, event)
    assert k_shapes == t_shapes and k_sample == t_sample
    for k, t in zip([*k_out, *k_grad], [*t_out, *t_grad]):
        np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-10)


@needs_mixture
def test_mixture_same_family_refusals(torch):
    for lib in (torch, kn):
        D = lib.distributions
        with pytest.raises(ValueError):  # 3 mixture components, 2 in the components' batch
            D.MixtureSameFamily(D.Categorical(logits=lib.zeros(3)), D.Normal(lib.zeros(2), 1.0))
        with pytest.raises(ValueError):  # a mixture that is no Categorical
            D.MixtureSameFamily(D.Normal(lib.zeros(2), 1.0), D.Normal(lib.zeros(2), 1.0))


# -- a compiled forward that projects its weights under no_grad, backward outside ---------------
# A monotone network keeps its weights non-negative in its forward (`with torch.no_grad():
# self.weight.clamp_(min=0)` for each parameter) and is compiled as a module, its loss's
# backward() after the compiled call. kn.compile's output did not require grad (an in-place change
# of a parameter was taken for an optimizer's step, after which no gradient flows), so the
# backward raised; torch's gradients reach the clamped weights.


def monotone_steps(lib, compiled):
    class Monotone(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, x):
            with lib.no_grad():
                for p in self.lin.parameters():
                    p.clamp_(min=0.0)
            return self.lin(x).sum(1)

    model = Monotone()
    with lib.no_grad():
        model.lin.weight.copy_(lib.tensor([[1.0, -0.5, 0.25], [-0.75, 0.5, 1.0]]))
        model.lin.bias.copy_(lib.tensor([-0.1, 0.2]))
    run = kn.compile(model) if compiled else model
    opt = lib.optim.SGD(model.parameters(), lr=0.3)
    seen = []
    for k in range(3):
        out = run(lib.tensor([[1.0, 2.0, -1.0], [0.5, -1.5, 2.0]]) * (k - 1))
        loss = (out - 1.0).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        seen += [loss.detach().clone(), model.lin.weight.grad.clone()]
        opt.step()
    return seen + [p.detach().clone() for p in model.parameters()]


def test_weights_projected_in_a_compiled_forward(torch):
    expected = monotone_steps(torch, False)
    for compiled in (False, True):
        for k, t in zip(monotone_steps(kn, compiled), expected):
            np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-6, atol=1e-7)


# -- a parameter first read under no_grad after a compiled step ---------------------------------
# After `optimizer.step()` in a compiled function, reading a parameter under no_grad first (an
# EMA or a logged norm: `with torch.no_grad(): norm = model.weight.norm()`) made every later read
# in the trace a detached value: a second forward's backward gave the parameter no gradient.


def step_then_read(lib, compiled):
    lin = lib.nn.Linear(3, 1)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, -0.5, 0.25]]))
        lin.bias.fill_(0.1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
        with lib.no_grad():
            norm = lin.weight.norm()
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        return loss, norm, *(p.grad * 1.0 for p in lin.parameters())

    step = kn.compile(step) if compiled else step
    seen = []
    for k in range(2):
        seen += [v.detach().clone() for v in step(lib.tensor([[1.0, 2.0, -1.0]]) * (k + 1))]
    return seen + [p.detach().clone() for p in lin.parameters()]


def test_parameter_read_under_no_grad_after_a_compiled_step(torch):
    expected = step_then_read(torch, False)
    for compiled in (False, True):
        for k, t in zip(step_then_read(kn, compiled), expected):
            np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-5, atol=1e-6)


# -- a module attribute's .grad inside a compiled step ------------------------------------------
# Logging or clipping a layer's gradient by its attribute (`model.fc.weight.grad.norm()`, a hand
# update `w.sub_(lr * model.fc.weight.grad)`) inside a compiled step raised SymbolAttributeError
# ("a graph value has no autograd tape"), before and after a step; the Parameters' `.grad` (from
# `model.parameters()`) worked.


def attribute_grads(lib, compiled):
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, -0.5, 0.25], [0.75, 0.5, -1.0]]))
        lin.bias.fill_(0.1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        before = lin.weight.grad.norm()
        opt.step()
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        return loss, before, lin.weight.grad * 1.0, lin.bias.grad.sum()

    step = kn.compile(step) if compiled else step
    seen = []
    for k in range(2):
        seen += [v.detach().clone() for v in step(lib.tensor([[1.0, 2.0, -1.0]]) * (k + 1))]
    return seen


def test_module_attribute_grad_in_a_compiled_step(torch):
    expected = attribute_grads(torch, False)
    for compiled in (False, True):
        for k, t in zip(attribute_grads(kn, compiled), expected):
            np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-5, atol=1e-6)


# -- a squashed Gaussian policy (SAC) -----------------------------------------------------------
# SAC's actor samples `TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)])`
# and scores the action with its log_prob (`needs_transforms`: see the mixture's tests).


def squashed_policy(lib, cache_size):
    D = lib.distributions
    h = lib.tensor(np.linspace(-1.5, 1.5, 12).reshape(3, 4), requires_grad=True)
    mu, log_std = h[:, :2], h[:, 2:].clamp(-2, 1)
    eps = lib.tensor(np.linspace(-2.0, 2.5, 6).reshape(3, 2))
    f64 = {"dtype": lib.float64}
    tanh = D.TanhTransform(cache_size=cache_size)
    pi = D.TransformedDistribution(D.Normal(mu, log_std.exp()), [tanh])
    action = tanh(mu + log_std.exp() * eps)  # the draw rsample makes, from known noise
    logp = pi.log_prob(action).sum(-1)
    scaled = D.TransformedDistribution(
        D.Independent(D.Normal(mu, log_std.exp()), 1),
        D.ComposeTransform(
            [D.TanhTransform(), D.AffineTransform(lib.tensor([0.5, -1.0], **f64), 2.0)]
        ),
    )
    squashed = D.TransformedDistribution(D.Normal(mu, 1.0), [D.SigmoidTransform()])
    positive = D.TransformedDistribution(D.Normal(mu, 1.0), D.ExpTransform())
    out = [  # (float64 values: float32 ones are one rounding of log apart)
        action, logp, scaled.log_prob(lib.tensor([[0.9, 0.2], [0.1, -2.0], [-1.0, -0.5]], **f64)),
        squashed.log_prob(lib.tensor([[0.2, 0.7], [0.5, 0.5], [0.99, 0.01]], **f64)),
        positive.log_prob(lib.tensor([[0.2, 1.7], [3.0, 0.5], [1.0, 0.01]], **f64)),
    ]  # fmt: skip
    shapes = [tuple(d.batch_shape) + tuple(d.event_shape) for d in (pi, scaled, squashed)]
    shapes += [tuple(scaled.event_shape), tuple(pi.rsample((5,)).shape)]
    return out, lib.autograd.grad(sum(o.sum() for o in out[1:]), h), shapes


@needs_transforms
@pytest.mark.parametrize("cache_size", [0, 1])
def test_transformed_distribution_like_torch(torch, cache_size):
    t_out, t_grad, t_shapes = squashed_policy(torch, cache_size)
    k_out, k_grad, k_shapes = squashed_policy(kn, cache_size)
    assert k_shapes == t_shapes
    for k, t in zip([*k_out, *k_grad], [*t_out, *t_grad]):
        np.testing.assert_allclose(to_numpy(k), to_numpy(t), rtol=1e-10, atol=1e-12)
