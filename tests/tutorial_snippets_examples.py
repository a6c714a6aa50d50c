"""Snippets of PyTorch's "Learning PyTorch with Examples" (fitting y = sin(x) with a third-order
polynomial: tensors, autograd, a custom autograd Function, nn, optim, a custom nn Module,
control flow and weight sharing), "A gentle introduction to torch.autograd" and the "Autograd
mechanics" notes, as the tutorials write them (see tutorial_harness). The fits run 200
iterations instead of 2000 to stay fast; they print every 100th loss as the tutorials do."""

import math
import random

from tests.tutorial_harness import registry

SNIPPETS, snippet = registry()
STEPS = 200


@snippet()
def examples_tensors(R, torch, **_):
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.randn((), device=device, dtype=dtype)
    b = torch.randn((), device=device, dtype=dtype)
    c = torch.randn((), device=device, dtype=dtype)
    d = torch.randn((), device=device, dtype=dtype)
    R.sync(a, b, c, d)
    learning_rate = 1e-6
    for t in range(STEPS):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum().item()
        if t % 100 == 99:
            R.out(f"loss {t}", loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x**2).sum()
        grad_d = (grad_y_pred * x**3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    R.out("Result", f"y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
    R.out("coefficients", [a.item(), b.item(), c.item(), d.item()])


@snippet(compiled=True)
def examples_autograd(R, torch, **_):
    dtype = torch.float
    device = "cpu"
    torch.set_default_device(device)
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a = torch.randn((), dtype=dtype, requires_grad=True)
    b = torch.randn((), dtype=dtype, requires_grad=True)
    c = torch.randn((), dtype=dtype, requires_grad=True)
    d = torch.randn((), dtype=dtype, requires_grad=True)
    R.sync(a, b, c, d)
    learning_rate = 1e-6

    @R.compile
    def step(x, y):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        return loss

    for t in range(STEPS):
        loss = step(x, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    R.out("coefficients", [a.item(), b.item(), c.item(), d.item()])


def _legendre(torch):
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input**3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input**2 - 1)

    return LegendrePolynomial3


@snippet(compiled=True)
def examples_custom_function(R, torch, **_):
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    P3 = _legendre(torch).apply

    @R.compile
    def step(x, y):
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        return loss

    for t in range(STEPS):
        loss = step(x, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    R.out("coefficients", [a.item(), b.item(), c.item(), d.item()])


def _xx(torch):
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    return xx, y


@snippet()
def examples_nn(R, torch, nn, **_):
    xx, y = _xx(torch)
    R.out("xx.shape", list(xx.shape))
    R.out("xx.dtype", str(xx.dtype))
    model = R.sync(torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)))
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-6
    for t in range(STEPS):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    R.out(
        "Result",
        [linear_layer.bias.item(), linear_layer.weight[:, 0].item(),
         linear_layer.weight[:, 1].item(), linear_layer.weight[:, 2].item()],
    )  # fmt: skip


@snippet(compiled=True)
def examples_optim(R, torch, nn, optim, **_):
    xx, y = _xx(torch)
    model = R.sync(torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)))
    loss_fn = torch.nn.MSELoss(reduction="sum")
    learning_rate = 1e-3
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)

    @R.compile
    def step(xx, y):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    for t in range(STEPS):
        loss = step(xx, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
    R.out("weight", model[0].weight)
    R.out("bias", model[0].bias)


def _polynomial3(torch):
    class Polynomial3(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(()))
            self.b = torch.nn.Parameter(torch.randn(()))
            self.c = torch.nn.Parameter(torch.randn(()))
            self.d = torch.nn.Parameter(torch.randn(()))

        def forward(self, x):
            return self.a + self.b * x + self.c * x**2 + self.d * x**3

        def string(self):
            return f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3"  # noqa: E501 (the tutorial's line)

    return Polynomial3


@snippet(compiled=True)
def examples_custom_module(R, torch, **_):
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    model = R.sync(_polynomial3(torch)())
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)

    @R.compile
    def step(x, y):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    for t in range(STEPS):
        loss = step(x, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
    R.out("Result", model.string())
    R.out("parameters", [p.item() for p in model.parameters()])


@snippet()
def examples_dynamic_net(R, torch, **_):
    class DynamicNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.randn(()))
            self.b = torch.nn.Parameter(torch.randn(()))
            self.c = torch.nn.Parameter(torch.randn(()))
            self.d = torch.nn.Parameter(torch.randn(()))
            self.e = torch.nn.Parameter(torch.randn(()))

        def forward(self, x):
            y = self.a + self.b * x + self.c * x**2 + self.d * x**3
            for exp in range(4, random.randint(4, 6)):
                y = y + self.e * x**exp
            return y

    random.seed(0)
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    model = R.sync(DynamicNet())
    criterion = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    for t in range(STEPS):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        if t % 100 == 99:
            R.out(f"loss {t}", loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    R.out("parameters", [p.item() for p in model.parameters()])


@snippet()
def gentle_autograd_q(R, torch, **_):
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([6.0, 4.0], requires_grad=True)
    Q = 3 * a**3 - b**2
    external_grad = torch.tensor([1.0, 1.0])
    Q.backward(gradient=external_grad)
    R.out("9*a**2 == a.grad", (9 * a**2 == a.grad).tolist())
    R.out("-2*b == b.grad", (-2 * b == b.grad).tolist())
    R.check((9 * a**2 == a.grad).all() and (-2 * b == b.grad).all())
    R.out("a.grad", a.grad)


@snippet()
def gentle_autograd_exclusion(R, torch, **_):
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a = x + y
    R.out("Does `a` require gradients?", a.requires_grad)
    b = x + z
    R.out("Does `b` require gradients?", b.requires_grad)


@snippet()
def gentle_autograd_finetune(R, torch, nn, optim, **_):
    class TinyResNet(nn.Module):  # resnet18's shape, in small: features, then `fc`
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8, 1000)

        def forward(self, x):
            x = self.avgpool(torch.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(x, 1))

    model = TinyResNet()
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(8, 10)
    R.sync(model)
    optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    data = torch.tensor(R.uniform(1, 3, 64, 64))
    labels = torch.tensor(R.uniform(1, 10))
    frozen = model.conv1.weight.clone()
    for _ in range(3):
        prediction = model(data)
        loss = (prediction - labels).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        R.out(f"loss {len(R.outputs)}", loss.item())
    R.out("conv1 frozen", bool((model.conv1.weight == frozen).all()))
    R.out("conv1.grad", model.conv1.weight.grad is None)
    R.out("fc.weight", model.fc.weight)
    R.out("bn running_mean", model.bn1.running_mean)
    R.out("trainable", [n for n, p in model.named_parameters() if p.requires_grad])


@snippet()
def mechanics_grad_modes(R, torch, nn, **_):
    x = torch.tensor(R.data(3), requires_grad=True)
    is_train = False
    with torch.set_grad_enabled(is_train):
        y = x * 2
    R.out("set_grad_enabled(False)", y.requires_grad)
    torch.set_grad_enabled(True)
    R.out("is_grad_enabled", torch.is_grad_enabled())
    with torch.inference_mode():
        z = x * 2
    R.out("inference_mode", z.requires_grad)
    R.out("is_inference", z.is_inference())
    model = nn.Linear(3, 2)
    model.requires_grad_(False)
    R.out("requires_grad_(False)", [p.requires_grad for p in model.parameters()])
    model.eval()
    R.out("training", model.training)

    @torch.no_grad()
    def doubler(x):
        return x * 2

    R.out("decorated no_grad", doubler(x).requires_grad)


@snippet()
def mechanics_inplace_check(R, torch, **_):
    a = torch.tensor(R.data(3), requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    try:
        b.sum().backward()
        raised = None
    except RuntimeError as e:
        raised = "modified by an inplace operation" in str(e)
    R.out("backward refused", raised)
    c = a.exp()
    c2 = c.clone()
    c2.add_(1)
    c.sum().backward()
    R.out("clone then add_ is fine", a.grad)


@snippet()
def mechanics_hooks(R, torch, **_):
    x = torch.tensor(R.data(4), requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.clone()))
    x.register_hook(lambda g: g * 2)
    (y**2).sum().backward()
    R.out("hook saw", seen[0])
    R.out("x.grad (doubled)", x.grad)
    v = torch.tensor(R.data(4), requires_grad=True)
    h = v.register_hook(lambda g: g * 0)
    h.remove()
    v.sum().backward()
    R.out("removed hook", v.grad)


@snippet()
def mechanics_retain_grad(R, torch, **_):
    x = torch.tensor(R.data(3), requires_grad=True)
    y = x * x
    y.retain_grad()
    z = y.sum()
    z.backward()
    R.out("y.grad", y.grad)
    R.out("y.is_leaf", y.is_leaf)
    R.out("x.is_leaf", x.is_leaf)
    w = x.detach().requires_grad_()
    R.out("w.is_leaf", w.is_leaf)
    try:
        z.backward()
        R.out("second backward", "ran")
    except RuntimeError as e:
        R.out("second backward", "backward through the graph a second time" in str(e))
    g = torch.autograd.grad((x**3).sum(), x, create_graph=True)[0]
    (g2,) = torch.autograd.grad(g.sum(), x)
    R.out("second derivative", g2)


@snippet()
def mechanics_anomaly_detection(R, torch, **_):
    import warnings

    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch also warns with the forward traceback
        try:
            with torch.autograd.detect_anomaly():
                (x.sqrt() * torch.tensor([0.0, 1.0])).sum().backward()
            R.out("detect_anomaly", "no error")
        except RuntimeError as e:
            R.out("detect_anomaly", "returned nan values in its 0th output" in str(e))
    R.out("after the block", torch.is_anomaly_enabled())
    x.grad = None
    with torch.autograd.set_detect_anomaly(False):
        (x.sqrt() * torch.tensor([0.0, 1.0])).sum().backward()
    R.out("unchecked grad", x.grad)
    torch.autograd.set_detect_anomaly(True)
    R.out("as a function", torch.is_anomaly_enabled())
    torch.autograd.set_detect_anomaly(False)


@snippet()
def mechanics_saved_tensor_hooks(R, torch, **_):
    import os
    import tempfile
    import uuid

    packs, unpacks = [], []

    def pack_hook(x):
        packs.append(x.shape)
        return x

    def unpack_hook(x):
        unpacks.append(x.shape)
        return x

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    y.sum().backward()
    R.out("a.grad", a.grad)
    # kiln also packs the product (its tape keeps each op's output): counts may differ
    R.check(len(packs) >= 2 and len(unpacks) == len(packs), "every packed value unpacked")

    a.grad = None
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x * 2):
        y = a * b.detach()
    y.sum().backward()
    R.out("unpacked values are the ones used", a.grad)

    with tempfile.TemporaryDirectory() as tmp_dir:

        class SelfDeletingTempFile:
            def __init__(self):
                self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

            def __del__(self):
                os.remove(self.name)

        def pack_to_disk(tensor):
            temp_file = SelfDeletingTempFile()
            torch.save(tensor, temp_file.name)
            return temp_file

        def unpack_from_disk(temp_file):
            return torch.load(temp_file.name, weights_only=True)

        x = torch.tensor(R.data(5), requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack_to_disk, unpack_from_disk):
            y = x.pow(2).sin().sum()
        y.backward()
        R.out("saved on disk: x.grad", x.grad)
        del y
    x.grad = None
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        y = (x.exp() * x).tanh().sum()
    y.backward()
    R.out("save_on_cpu: x.grad", x.grad)


@snippet()
def mechanics_saved_tensors(R, torch, **_):
    x = torch.tensor(R.data(5), requires_grad=True)
    y = x.pow(2)
    R.out("x.equal(y.grad_fn._saved_self)", x.equal(y.grad_fn._saved_self))
    R.out("x is y.grad_fn._saved_self", x is y.grad_fn._saved_self)
    y = x.exp()
    R.out("y.equal(y.grad_fn._saved_result)", y.equal(y.grad_fn._saved_result))
    R.out("y is y.grad_fn._saved_result", y is y.grad_fn._saved_result)
    z = x * torch.tensor(R.data(5))
    R.out("_saved_other", z.grad_fn._saved_other)
    y.sum().backward()
    try:
        y.grad_fn._saved_result
        R.out("after backward", "readable")
    except RuntimeError as e:
        R.out("after backward", "after they have already been freed" in str(e))
