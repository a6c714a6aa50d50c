"""A module's parameters reached directly (`model.parameters()`, `p.data`, `p.grad`,
`p.detach()`) inside a `kn.compile`d step, as training scripts write them: hand-written SGD
(`p.data.add_(p.grad, alpha=-lr)`, `p -= lr * p.grad` under no_grad), an L2 penalty summed
over `model.parameters()`, WGAN's weight clipping (`p.data.clamp_(-c, c)`), an EMA copy
(`e.mul_(d).add_(p.detach(), alpha=1 - d)`), gradient norms read from `p.grad`.

Before: `p.grad` in a trace gave the eager `.grad` (None after zero_grad: the word-language
model example raised; else the previous call's gradient, baked in as a constant), an
in-place change of a parameter ran once while tracing and never in the compiled calls
(silently: `p.mul_(0.5)` under no_grad left the weight at its second value for good), and
`p.pow(2)` of a parameter from `parameters()` raised. The expected values are those of the
same step run eagerly (whose agreement with torch the ported programs check), and torch's.
"""

import numpy as np
import pytest

import kiln as kn


def twins():
    kn.manual_seed(0)
    a = kn.nn.Sequential(kn.nn.Linear(3, 4), kn.nn.Tanh(), kn.nn.Linear(4, 2))
    b = kn.nn.Sequential(kn.nn.Linear(3, 4), kn.nn.Tanh(), kn.nn.Linear(4, 2))
    b.load_state_dict(a.state_dict())
    return a, b


def check(make_step, calls=3):
    """make_step(model) -> step(x); the compiled step's outputs and parameters after each
    call equal the eager step's (to float32 rounding: the program may fuse)."""
    eager_model, compiled_model = twins()
    eager_step, compiled_step = make_step(eager_model), kn.compile(make_step(compiled_model))
    x = kn.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))
    for _ in range(calls):
        e, c = eager_step(x), compiled_step(x)
        e, c = (e,) if not isinstance(e, tuple) else e, (c,) if not isinstance(c, tuple) else c
        for ev, cv in zip(e, c):
            np.testing.assert_allclose(
                cv.detach().numpy(), ev.detach().numpy(), rtol=1e-5, atol=1e-6
            )
        for (name, ep), cp in zip(eager_model.named_parameters(), compiled_model.parameters()):
            np.testing.assert_allclose(cp.numpy(), ep.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(compiled_step.cache) == 1  # one trace served every call


def test_hand_written_sgd_through_data_and_grad():
    def make(model):
        def step(x):
            model.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            kn.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.3)
            return loss

        return step

    check(make)


def test_sgd_under_no_grad_with_an_l2_penalty_and_grad_norms():
    def make(model):
        def step(x):
            for p in model.parameters():
                p.grad = None
            loss = model(x).pow(2).mean() + 1e-2 * sum(p.pow(2).sum() for p in model.parameters())
            loss.backward()
            norm = kn.stack([p.grad.norm() for p in model.parameters()]).norm()
            with kn.no_grad():
                for p in model.parameters():
                    p -= 0.2 * p.grad
            return loss, norm

        return step

    check(make)


def test_weight_clipping_and_ema_copy():
    kn.manual_seed(1)
    ema = kn.nn.Linear(3, 4)
    ema_eager = kn.nn.Linear(3, 4)
    ema_eager.load_state_dict(ema.state_dict())
    copies = iter([ema_eager, ema])

    def make(model):
        opt = kn.optim.SGD(model.parameters(), lr=0.5)
        shadow = next(copies)

        def step(x):
            opt.zero_grad()
            loss = -model(x).mean()
            loss.backward()
            opt.step()
            for p in model.parameters():
                p.data.clamp_(-0.3, 0.3)
            with kn.no_grad():
                for e, p in zip(shadow.parameters(), model[0].parameters()):
                    e.mul_(0.9).add_(p.detach(), alpha=0.1)
            return loss

        return step

    check(make, calls=4)
    np.testing.assert_allclose(ema.weight.numpy(), ema_eager.weight.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(ema.weight.numpy(), 0)


def test_hand_written_sgd_like_torch(torch):
    torch.manual_seed(0)
    t_model = torch.nn.Linear(3, 2)
    k_model = kn.nn.Linear(3, 2)
    k_model.load_state_dict(
        {k: kn.tensor(v.detach().numpy()) for k, v in t_model.state_dict().items()}
    )
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)

    def make(fw, model):
        def step(x):
            model.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.5)
            return loss

        return step

    t_step, k_step = make(torch, t_model), kn.compile(make(kn, k_model))
    for _ in range(3):
        t_loss, k_loss = t_step(torch.from_numpy(x)), k_step(kn.from_numpy(x))
        np.testing.assert_allclose(k_loss.item(), t_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(
        k_model.weight.numpy(), t_model.weight.detach().numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        k_model.weight.grad.numpy(), t_model.weight.grad.numpy(), rtol=1e-5, atol=1e-6
    )


def test_parameter_methods_in_a_compiled_step():
    # a parameter from parameters() used through its methods, in a regularizer or a
    # flattened copy; `p.view(-1)` raised (an eager check read the traced result as a Tensor)
    uses = [
        lambda p: kn.cat([q.view(-1) for q in p]).abs().sum(),
        lambda p: kn.nn.utils.parameters_to_vector(p).pow(2).sum(),
        lambda p: sum(q.norm(2) for q in p),
        lambda p: sum((q[..., :1] ** 2).mean() for q in p),
        lambda p: p[0].t().matmul(p[0]).diagonal().sum(),
    ]
    for use in uses:

        def make(model, use=use):
            def loss_of(x):
                return model(x).pow(2).mean() + 0.1 * use(list(model.parameters()))

            def step(x):
                model.zero_grad()
                loss = loss_of(x)
                loss.backward()
                with kn.no_grad():
                    for p in model.parameters():
                        p.sub_(0.1 * p.grad)
                return loss

            return step

        check(make, calls=2)


def test_module_attribute_data_in_a_compiled_step():
    # `self.fc.weight.data` inside the step: the weight read as a module attribute is a graph
    # value there; its .data (AttributeError before) is the parameter's, changed every call
    def make(model):
        opt = kn.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            w = model[0].weight
            w.data = w.data / w.data.norm(dim=1, keepdim=True)  # max-norm by hand, after the step
            model[2].bias.data.copy_(model[2].bias.data.clamp(-0.05, 0.05))
            return loss

        return step

    check(make)


def test_module_attribute_view_change_in_a_compiled_step_says_what_to_do():
    model = kn.nn.Embedding(4, 2)

    @kn.compile
    def step(ids):
        model.weight.data[0].zero_()  # through a view: refused, with what works instead
        return model(ids).sum()

    with pytest.raises(kn.GraphError, match="changes in place whole, through its .data"):
        step(kn.tensor([1, 2]))
