"""Differences found by porting more PyTorch example programs by renaming `torch` to `kn`
(MNIST with Adadelta, the VAE, DCGAN, the word and translation transformers, REINFORCE,
a siamese network, seq2seq with attention, a ResNet, text classification with EmbeddingBag,
super-resolution and fast neural style). Each test is the smallest form of one difference,
with torch 2.13 as the oracle.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights, identity, to_numpy

import kiln as kn

LEGACY_TYPES = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
]  # fmt: skip


def legacy_noise(torch, std):
    """The older VAE example's reparameterisation: `torch.FloatTensor(std.size()).normal_()`."""
    eps = torch.FloatTensor(std.size()).normal_()
    return eps.mul(std).add_(1.0)


def test_legacy_constructor_of_a_size_makes_that_shape(torch):
    # `torch.Tensor(x.size())` is a tensor of that shape, not one holding the sizes
    for lib in (torch, kn):
        std = lib.ones(3, 4)
        assert tuple(legacy_noise(lib, std).shape) == (3, 4)
        assert tuple(lib.Tensor(std.size()).shape) == (3, 4)
        assert tuple(lib.Tensor(std.size()[:0]).shape) == ()
        assert lib.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a plain tuple is data


def test_legacy_constructor_of_a_tensor_is_an_alias(torch):
    for lib in (torch, kn):
        t = lib.zeros(3)
        alias = lib.Tensor(t)
        alias.add_(1.0)
        assert t.tolist() == [1.0, 1.0, 1.0]
        w = lib.ones(2, requires_grad=True)
        assert lib.Tensor(w).requires_grad
        with pytest.raises(TypeError):
            lib.FloatTensor(lib.zeros(2, dtype=lib.int64))


@pytest.mark.parametrize("name", LEGACY_TYPES)
def test_legacy_typed_constructors(torch, name):
    t_type, k_type = getattr(torch, name), getattr(kn, name)
    for data in ([1.7, 2.5, 0.0], np.array([1.5, 2.0]), (1, 0)):
        t, k = t_type(data), k_type(data)
        assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(
            k.float().numpy() if k.dtype == kn.bfloat16 else k.numpy(),
            t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy(),
        )
    assert tuple(k_type(2, 3).shape) == (2, 3) and k_type(2, 3).dtype == k_type.dtype
    assert tuple(k_type().shape) == (0,)
    assert isinstance(k_type([1]), k_type) and isinstance(k_type([1]), kn.Tensor)
    assert not isinstance(kn.zeros(1, dtype=kn.complex64), k_type)
    assert k_type.__name__ == name and repr(k_type) == f"<class 'kiln.{name}'>"
    assert not k_type.is_cuda and kn.cuda.FloatTensor.is_cuda
    assert k_type.dtype == kn.zeros(1).type(k_type).dtype  # `x.type(torch.LongTensor)`
    with pytest.raises(TypeError):
        k_type(2.5)


def test_isinstance_of_legacy_types(torch):
    for lib in (torch, kn):
        assert isinstance(lib.zeros(2), lib.FloatTensor)
        assert not isinstance(lib.zeros(2), lib.LongTensor)
        assert isinstance(lib.zeros(2, dtype=lib.int64), lib.LongTensor)
        assert not isinstance(lib.zeros(2), lib.cuda.FloatTensor)
        assert not isinstance([1.0], lib.FloatTensor)


# -- torch.distributions in a VAE and a PPO-style policy -------------------------------------
# kn.distributions had Categorical and Normal only: the VAE written with Independent, Bernoulli
# and kl_divergence, and the continuous-action policy with MultivariateNormal, did not run.


def make_vae_data(seed=21):
    rng = np.random.default_rng(seed)
    x = (rng.random((3, 8, 12)) < 0.4).astype(np.float32)
    eps = rng.normal(size=(3, 8, 3)).astype(np.float32)
    return x, eps


def build_vae(torch):
    nn = torch.nn

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(12, 16)
            self.mu = nn.Linear(16, 3)
            self.logvar = nn.Linear(16, 3)
            self.dec = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 12))

        def forward(self, x, eps):
            D = torch.distributions
            h = torch.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            std = torch.exp(0.5 * logvar)
            q = D.Independent(D.Normal(mu, std), 1)
            z = q.mean + q.stddev * eps  # the reparameterisation, with fixed noise
            prior = D.Independent(D.Normal(torch.zeros_like(mu), torch.ones_like(std)), 1)
            px = D.Independent(D.Bernoulli(logits=self.dec(z)), 1)
            kl = D.kl_divergence(q, prior)
            kl_cf = D.kl_divergence(D.Normal(mu, std), D.Normal(0.0, 1.0)).sum(-1)
            rec = -px.log_prob(x)
            extra = D.Bernoulli(probs=torch.sigmoid(mu)).entropy().sum() + px.base_dist.mean.sum()
            return (rec + kl).mean(), (kl - kl_cf).abs().max(), extra

    return VAE()


def train_vae(torch, model, data, wrap=identity):
    x, eps = data
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    @wrap
    def step(x, eps):
        opt.zero_grad()
        loss, kl_gap, extra = model(x, eps)
        loss.backward()
        opt.step()
        return loss, kl_gap, extra

    out = []
    for i in range(3):
        loss, kl_gap, extra = step(torch.from_numpy(x[i]), torch.from_numpy(eps[i]))
        out += [loss.item(), extra.item()]
        assert kl_gap.item() < 1e-5  # the KL of the Independent is the summed KL of the parts
    return out


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_vae_with_distributions_matches_torch(torch, wrap):
    torch.manual_seed(0)
    data = make_vae_data()
    t_model, k_model = build_vae(torch), build_vae(kn)
    copy_weights(t_model, k_model)
    t_out = train_vae(torch, t_model, data)
    k_out = train_vae(kn, k_model, data, wrap=kn.compile if wrap == "compiled" else identity)
    assert_losses_close(k_out, t_out)
    assert_state_close(t_model, k_model)


def build_policy(torch):
    nn = torch.nn

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
            self.critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
            self.action_var = torch.full((2,), 0.36)

        def evaluate(self, state, action):
            action_mean = self.actor(state)
            action_var = self.action_var.expand_as(action_mean)
            cov_mat = torch.diag_embed(action_var)
            dist = torch.distributions.MultivariateNormal(action_mean, cov_mat)
            logprobs = dist.log_prob(action)
            entropy = dist.entropy()
            values = self.critic(state)
            return logprobs, torch.squeeze(values), entropy

    return ActorCritic()


def train_policy(torch, policy, data, wrap=identity):
    states, actions, old_logprobs, returns = (torch.from_numpy(a) for a in data)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    mse = torch.nn.MSELoss()

    @wrap
    def update(states, actions, old_logprobs, returns):
        logprobs, values, entropy = policy.evaluate(states, actions)
        ratios = torch.exp(logprobs - old_logprobs.detach())
        advantages = returns - values.detach()
        surr1 = ratios * advantages
        surr2 = torch.clamp(ratios, 1 - 0.2, 1 + 0.2) * advantages
        loss = -torch.min(surr1, surr2) + 0.5 * mse(values, returns) - 0.01 * entropy
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
        return loss.mean()

    return [update(states, actions, old_logprobs, returns).item() for _ in range(4)]


@pytest.mark.parametrize("wrap", ["eager", "compiled"])
def test_ppo_with_multivariate_normal_matches_torch(torch, wrap):
    torch.manual_seed(0)
    rng = np.random.default_rng(22)
    data = (
        rng.normal(size=(16, 4)).astype(np.float32),
        rng.normal(size=(16, 2)).astype(np.float32),
        rng.normal(-2.0, 0.3, size=16).astype(np.float32),
        rng.normal(size=16).astype(np.float32),
    )
    t_policy, k_policy = build_policy(torch), build_policy(kn)
    copy_weights(t_policy, k_policy)
    t_out = train_policy(torch, t_policy, data)
    k_out = train_policy(kn, k_policy, data, wrap=kn.compile if wrap == "compiled" else identity)
    assert_losses_close(k_out, t_out)
    assert_state_close(t_policy, k_policy)


def test_distribution_methods_match_torch(torch):
    mu = [[0.5, -1.0], [0.0, 2.0]]
    sd = [[1.0, 0.5], [2.0, 0.3]]
    x = [[0.1, 0.2], [-1.0, 1.5]]
    u = [[0.2, 0.7], [0.5, 0.9]]
    tril = [[1.0, 0.0], [0.3, 0.5]]
    b = [[1.0, 0.0], [0.0, 1.0]]
    results = []
    for lib in (torch, kn):
        D, t = lib.distributions, lib.tensor
        normal, cat = D.Normal(t(mu), t(sd)), D.Categorical(logits=t(mu))
        mvn = D.MultivariateNormal(t(mu), scale_tril=t(tril))
        mvn_p = D.MultivariateNormal(t(mu[0]), precision_matrix=t(tril) @ t(tril).T)
        bern = D.Bernoulli(logits=t(mu))
        values = [
            normal.icdf(t(u)), normal.perplexity(), cat.enumerate_support(), cat.perplexity(),
            cat.enumerate_support(expand=False), bern.log_prob(t(b)), bern.entropy(), bern.mean,
            bern.variance, bern.mode, bern.enumerate_support(), mvn.log_prob(t(x)), mvn.entropy(),
            mvn.covariance_matrix, mvn.precision_matrix, mvn.variance, mvn_p.scale_tril,
            mvn_p.log_prob(t(x)), D.kl_divergence(mvn, mvn_p),
            D.kl_divergence(cat, D.Categorical(probs=t(sd))),
            D.kl_divergence(bern, D.Bernoulli(probs=t(u))),
            D.Independent(normal, 2).log_prob(t(x)), D.Independent(normal, 1).entropy(),
        ]  # fmt: skip
        shapes = [
            (tuple(d.batch_shape), tuple(d.event_shape), tuple(d.sample((3,)).shape))
            for d in (mvn, mvn_p, bern, D.Independent(normal, 1), normal.expand((3, 2, 2)))
        ]
        flags = [bern.has_enumerate_support, cat.has_enumerate_support, mvn.has_rsample]
        results.append(([np.asarray(v.tolist(), np.float64) for v in values], shapes, flags))
    (t_values, t_shapes, t_flags), (k_values, k_shapes, k_flags) = results
    for i, (k, t) in enumerate(zip(k_values, t_values)):
        np.testing.assert_allclose(k, t, rtol=1e-5, atol=1e-6, err_msg=str(i))
    assert k_shapes == t_shapes and k_flags == t_flags


# -- WGAN-GP: the gradient penalty through torch.autograd.grad --------------------------------
# The common WGAN-GP code passes `only_inputs=True` to torch.autograd.grad: kiln's grad took no
# such keyword (TypeError), nor `materialize_grads` or `is_grads_batched`.


def build_wgan(torch):
    nn = torch.nn

    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 8, 3, 2, 1),
                nn.LayerNorm([8, 2, 2]), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(32, 1),
            )  # fmt: skip

        def forward(self, x):
            return self.main(x)

    return Critic()


def train_wgan(torch, critic, data):
    real, fake, alpha = (torch.from_numpy(a) for a in data)
    opt = torch.optim.RMSprop(critic.parameters(), lr=5e-4)

    def gradient_penalty(real, fake, alpha):
        interpolates = (alpha * real + ((1 - alpha) * fake)).requires_grad_(True)
        d_interpolates = critic(interpolates)
        gradients = torch.autograd.grad(
            outputs=d_interpolates, inputs=interpolates,
            grad_outputs=torch.ones(real.shape[0], 1), create_graph=True, retain_graph=True,
            only_inputs=True,
        )[0]  # fmt: skip
        gradients = gradients.view(gradients.size(0), -1)
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()

    out = []
    for i in range(3):
        opt.zero_grad()
        gp = gradient_penalty(real[i], fake[i], alpha[i])
        loss = -torch.mean(critic(real[i])) + torch.mean(critic(fake[i])) + 10 * gp
        loss.backward()
        opt.step()
        for p in critic.parameters():
            p.data.clamp_(-0.05, 0.05)
        out += [loss.item(), gp.item()]
    return out


def test_wgan_gradient_penalty_matches_torch(torch):
    torch.manual_seed(0)
    rng = np.random.default_rng(23)
    data = (
        rng.normal(size=(3, 8, 1, 8, 8)).astype(np.float32),
        rng.normal(size=(3, 8, 1, 8, 8)).astype(np.float32),
        rng.random(size=(3, 8, 1, 1, 1)).astype(np.float32),
    )
    t_critic, k_critic = build_wgan(torch), build_wgan(kn)
    copy_weights(t_critic, k_critic)
    assert_losses_close(train_wgan(kn, k_critic, data), train_wgan(torch, t_critic, data))
    assert_state_close(t_critic, k_critic)


def test_autograd_grad_keywords(torch):
    results = []
    for lib in (torch, kn):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        unused = lib.tensor([3.0], requires_grad=True)
        y = x**2
        (gx, gu) = lib.autograd.grad(
            y.sum(), [x, unused], retain_graph=True, materialize_grads=True
        )
        with pytest.raises(ValueError):
            lib.autograd.grad(y.sum(), [x, unused], allow_unused=False, materialize_grads=True)
        # one grad_outputs row per vector-Jacobian product: the Jacobian of y
        (jac,) = lib.autograd.grad(y, x, lib.eye(2), retain_graph=True, is_grads_batched=True)
        with pytest.warns(FutureWarning, match="only_inputs"):
            (g,) = lib.autograd.grad(y.sum(), x, only_inputs=False)
        results.append([v.tolist() for v in (gx, gu, jac, g)])
    assert results[0] == results[1]


# The WGAN-GP code flattens the input gradient with `gradients.view(n, -1)`: kiln's gradient of
# a padded convolution was a view into its padded work plane (strides of the padded size), so
# the view raised; torch's gradients (and transposed convolutions' outputs) are contiguous.
IMAGE, SIGNAL, VOLUME = (2, 3, 8, 8), (2, 3, 8), (2, 3, 4, 4, 4)
STRIDE_CASES = {  # name: (function name, weight shape or None, keywords, input shape)
    "conv2d pad": ("conv2d", (4, 3, 3, 3), {"padding": 1}, IMAGE),
    "conv2d stride 2": ("conv2d", (4, 3, 3, 3), {"stride": 2, "padding": 1}, IMAGE),
    "conv2d 8 filters": ("conv2d", (8, 3, 3, 3), {"padding": 1}, IMAGE),
    "conv_transpose2d": ("conv_transpose2d", (3, 4, 4, 4), {"stride": 2, "padding": 1}, IMAGE),
    "conv_transpose2d 8": ("conv_transpose2d", (3, 8, 3, 3), {"padding": 1}, IMAGE),
    "conv1d": ("conv1d", (4, 3, 3), {"padding": 1}, SIGNAL),
    "conv_transpose1d": ("conv_transpose1d", (3, 4, 3), {"stride": 2, "padding": 1}, SIGNAL),
    "conv3d": ("conv3d", (4, 3, 3, 3, 3), {"padding": 1}, VOLUME),
    "max_pool2d pad": ("max_pool2d", None, {"kernel_size": 3, "stride": 2, "padding": 1}, IMAGE),
    "avg_pool2d pad": ("avg_pool2d", None, {"kernel_size": 3, "stride": 2, "padding": 1}, IMAGE),
    "adaptive_avg_pool2d": ("adaptive_avg_pool2d", None, {"output_size": (3, 3)}, IMAGE),
    "pad": ("pad", None, {"pad": (1, 2, 1, 2)}, IMAGE),
    "unfold": ("unfold", None, {"kernel_size": 3, "padding": 1}, IMAGE),
}


@pytest.mark.parametrize("case", list(STRIDE_CASES))
def test_gradient_and_output_strides_match_torch(torch, case):
    name, weight, kwargs, shape = STRIDE_CASES[case]
    strides = []
    for lib in (torch, kn):
        x = lib.ones(*shape, requires_grad=True)
        fn = getattr(lib.nn.functional, name)
        y = fn(x, lib.ones(*weight), **kwargs) if weight else fn(x, **kwargs)
        (gx,) = lib.autograd.grad(y, x, lib.ones(*y.shape))
        gx.view(gx.size(0), -1)  # the WGAN-GP flattening
        strides.append((tuple(y.stride()), tuple(gx.stride())))
    assert strides[1] == strides[0]


def test_pad_by_zero_is_a_copy(torch):
    # `F.pad(x, (0, pad_len))` with pad_len 0 (padding to a multiple that x already has)
    for lib in (torch, kn):
        x = lib.zeros(2, 3)
        y = lib.nn.functional.pad(x, (0, 0))
        y.add_(1.0)
        cropped = lib.nn.functional.pad(x, (0, -1))
        cropped.add_(1.0)
        assert x.tolist() == [[0.0] * 3] * 2 and cropped.is_contiguous()


# -- a GCN in the style of pygcn: torch.spmm of the normalised sparse adjacency ---------------


def make_graph(seed=24, n=12):
    rng = np.random.default_rng(seed)
    a = (rng.random((n, n)) < 0.25).astype(np.float32)
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 0)
    return a, rng.random((n, 6)).astype(np.float32), rng.integers(0, 3, n)


def build_gcn(torch):
    nn = torch.nn

    class GraphConvolution(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
            self.bias = nn.Parameter(torch.FloatTensor(out_features))
            stdv = 1.0 / self.weight.size(1) ** 0.5
            self.weight.data.uniform_(-stdv, stdv)
            self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input, adj):
            support = torch.mm(input, self.weight)
            return torch.spmm(adj, support) + self.bias

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.gc1, self.gc2 = GraphConvolution(6, 8), GraphConvolution(8, 3)

        def forward(self, x, adj):
            x = torch.relu(self.gc1(x, adj))
            return torch.log_softmax(self.gc2(x, adj), dim=1)

    return GCN()


def train_gcn(torch, model, graph):
    a, features, labels = graph
    adj = torch.from_numpy(a) + torch.eye(a.shape[0])
    r_inv = adj.sum(1).pow(-1)
    r_inv[torch.isinf(r_inv)] = 0.0
    adj = torch.diag(r_inv).mm(adj)
    index = torch.nonzero(adj).t()
    adj = torch.sparse_coo_tensor(index, adj[index[0], index[1]], adj.shape)
    x, y = torch.from_numpy(features), torch.from_numpy(labels)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    out = []
    for _ in range(4):
        opt.zero_grad()
        output = model(x, adj)
        loss = torch.nn.functional.nll_loss(output[:8], y[:8])
        loss.backward()
        opt.step()
        out.append(loss.item())
    out.append(torch.spmm(adj.to_dense(), x).sum().item())  # dense operands too
    return out


def test_gcn_with_spmm_matches_torch(torch):
    torch.manual_seed(0)
    t_model, k_model = build_gcn(torch), build_gcn(kn)
    copy_weights(t_model, k_model)
    graph = make_graph()
    assert_losses_close(train_gcn(kn, k_model, graph), train_gcn(torch, t_model, graph))
    assert_state_close(t_model, k_model)


def test_vmap_takes_torchs_keywords(torch):
    # torch.func.vmap(f, in_dims=..., out_dims=..., randomness=..., chunk_size=...): kiln's
    # vmap took JAX's names (in_axes, out_axes) alone, a TypeError for the ported call
    x, w = np.ones((3, 2), np.float32), np.array([1.0, 2.0], np.float32)
    results = []
    for lib in (torch, kn):
        a, b = lib.from_numpy(x), lib.from_numpy(w)
        dots = lib.func.vmap(lambda a, b: (a * b).sum(), in_dims=(0, None))
        outer = lib.vmap(lambda a: a * b, in_dims=0, out_dims=1, randomness="error", chunk_size=2)
        results.append((dots(a, b).tolist(), outer(a).tolist()))
    assert results[1] == results[0]


# -- the per-sample-gradients tutorial: vmap(grad(compute_loss)) over dicts of parameters ------
# torch.func.grad differentiates dicts (pytrees) of tensors; kiln's took Tensors alone.


def build_small_cnn(torch):
    nn = torch.nn

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.fc1 = nn.Linear(16, 3)

        def forward(self, x):
            x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
            return torch.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)

    return SimpleCNN()


def per_sample_grads(torch, model, data, targets):
    func = torch.func
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return torch.nn.functional.nll_loss(predictions, target.unsqueeze(0))

    per_sample = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))
    grads = per_sample(params, buffers, data, targets)
    first, value = func.grad_and_value(compute_loss)(params, buffers, data[0], targets[0])
    pair = func.grad(compute_loss, argnums=(0, 2))(params, buffers, data[0], targets[0])
    return grads, first, value, pair


def test_per_sample_gradients_match_torch(torch):
    torch.manual_seed(0)
    rng = np.random.default_rng(25)
    data = rng.normal(size=(5, 1, 6, 6)).astype(np.float32)
    targets = rng.integers(0, 3, 5)
    t_model, k_model = build_small_cnn(torch), build_small_cnn(kn)
    copy_weights(t_model, k_model)
    t = per_sample_grads(torch, t_model, torch.from_numpy(data), torch.from_numpy(targets))
    k = per_sample_grads(kn, k_model, kn.from_numpy(data), kn.from_numpy(targets))
    for t_grads, k_grads in ((t[0], k[0]), (t[1], k[1]), (t[3][0], k[3][0])):
        assert list(k_grads) == list(t_grads)
        for name in t_grads:
            np.testing.assert_allclose(
                to_numpy(k_grads[name]), to_numpy(t_grads[name]), rtol=1e-4, atol=1e-6
            )
    np.testing.assert_allclose(k[2].item(), t[2].item(), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(k[3][1]), to_numpy(t[3][1]), rtol=1e-4, atol=1e-6)


def test_model_ensembling_matches_torch(torch):
    # the model-ensembling tutorial: stack_module_state, then vmap(functional_call) over the
    # stacked weights (conv2d with a batched weight runs once per model); kiln had no
    # stack_module_state, and no batching rule for conv2d or the pools
    torch.manual_seed(0)
    rng = np.random.default_rng(26)
    data = rng.normal(size=(4, 1, 6, 6)).astype(np.float32)
    t_model, k_model = build_small_cnn(torch), build_small_cnn(kn)  # one class each
    t_models = [t_model, *(type(t_model)() for _ in range(2))]
    k_models = [k_model, *(type(k_model)() for _ in range(2))]
    for t, k in zip(t_models, k_models):
        copy_weights(t, k)
    results = []
    for lib, models in ((torch, t_models), (kn, k_models)):
        params, buffers = lib.func.stack_module_state(models)
        base = models[0]

        def fmodel(params, buffers, x, base=base, lib=lib):
            return lib.func.functional_call(base, (params, buffers), (x,))

        x = lib.from_numpy(data)
        preds = lib.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
        minibatches = lib.from_numpy(np.stack([data, data[::-1].copy(), data]))
        per_model = lib.func.vmap(fmodel)(params, buffers, minibatches)
        pooled = lib.vmap(lambda a: lib.nn.functional.avg_pool2d(a, 2))(minibatches)
        results.append(
            (
                sorted(params), params["conv1.weight"].shape, params["fc1.bias"].requires_grad,
                to_numpy(preds), to_numpy(per_model), to_numpy(pooled),
            )
        )  # fmt: skip
    (t_names, t_shape, t_rg, *t_values), (k_names, k_shape, k_rg, *k_values) = results
    assert (k_names, tuple(k_shape), k_rg) == (t_names, tuple(t_shape), t_rg)
    for k, t in zip(k_values, t_values):
        np.testing.assert_allclose(k, t, rtol=1e-5, atol=1e-6)


# -- names older or multi-GPU-ready scripts call on the CPU -----------------------------------


def test_names_older_scripts_call(torch):
    results = []
    for lib in (torch, kn):
        out = []
        net = lib.nn.Linear(2, 1)
        model = lib.nn.DataParallel(net)  # `if torch.cuda.device_count() > 1:` left out
        out += [list(model.state_dict()), model.module is net, model.device_ids]
        out.append(tuple(model(lib.ones(3, 2)).shape))
        lstm = lib.nn.LSTM(2, 3)
        lstm.flatten_parameters()  # (cuDNN's weight layout: nothing to do on the CPU)
        t = lib.ones(2)
        v = lib.autograd.Variable(t)
        w = lib.autograd.Variable(lib.ones(2), requires_grad=True)
        out += [v is t, v.requires_grad, w.requires_grad, w.is_leaf]
        v.add_(1.0)
        out.append(t.tolist())
        call = lib.nn.utils.stateless.functional_call
        with pytest.warns(FutureWarning):
            y = call(net, {"weight": lib.ones(1, 2), "bias": lib.zeros(1)}, (lib.ones(1, 2),))
        out.append(y.tolist())
        results.append(out)
    assert results[1] == results[0]


def test_uniform_distribution_matches_torch(torch):
    low, high, x = [[0.0, -1.0], [2.0, 0.5]], [[1.0, 3.0], [2.5, 0.75]], [[0.5, 3.5], [2.1, 0.6]]
    results = []
    for lib in (torch, kn):
        D, t = lib.distributions, lib.tensor
        u = D.Uniform(t(low), t(high), validate_args=False)  # x lies partly outside
        wider = D.Uniform(t(low) - 1, t(high) + 1)
        values = [
            u.mean, u.variance, u.stddev, u.entropy(), u.cdf(t(x)),
            u.icdf(t([[0.2, 0.5], [1.0, 0.0]])),
            D.kl_divergence(u, wider), D.kl_divergence(wider, u), D.Uniform(0.0, 2.0).entropy(),
        ]  # fmt: skip
        values.append(u.log_prob(t(x)))
        shapes = [tuple(u.sample((3,)).shape), tuple(u.batch_shape), u.has_rsample]
        results.append(([np.asarray(v.tolist(), np.float64) for v in values], shapes))
    for i, (k, t) in enumerate(zip(results[1][0], results[0][0])):
        np.testing.assert_allclose(k, t, rtol=1e-6, atol=1e-7, err_msg=str(i))
    assert results[1][1] == results[0][1]


# -- left for the owners of kiln/tracing (compile guards) --------------------------------------


def run_custom_optimizer(lib, init, wrap):
    """The tutorials' hand-written optimizer: per-parameter Python state (`state['step']`, a
    momentum buffer updated in place) in `self.state[p]`."""
    rng = np.random.default_rng(33)
    xs, ys = (
        rng.normal(size=(4, 6, 3)).astype(np.float32),
        rng.normal(size=(4, 6, 1)).astype(np.float32),
    )
    model = lib.nn.Linear(3, 1)
    model.load_state_dict({k: lib.tensor(v) for k, v in init.items()})

    class MySGD(lib.optim.Optimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, dict(lr=lr))

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = lib.zeros_like(p)
                    state["step"] += 1
                    state["buf"].mul_(0.9).add_(p.grad, alpha=0.1)
                    p.add_(state["buf"], alpha=-group["lr"])

    opt = MySGD(model.parameters(), lr=0.1)

    @wrap
    def step(x, y):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    losses = [step(lib.from_numpy(xs[i]), lib.from_numpy(ys[i])).item() for i in range(4)]
    return losses, opt.state[model.weight]["step"]


def test_compiled_custom_optimizer_state_matches_torch(torch):
    init = {k: to_numpy(v).copy() for k, v in torch.nn.Linear(3, 1).state_dict().items()}
    t_losses, t_steps = run_custom_optimizer(torch, init, identity)
    k_losses, k_steps = run_custom_optimizer(kn, init, kn.compile)
    assert k_steps == t_steps == 4
    assert_losses_close(k_losses, t_losses)
