"""Snippets of PyTorch's "Deep learning with PyTorch: a 60 minute blitz" (tensors, autograd,
neural networks, training a classifier) and "What is torch.nn really?" (MNIST from scratch,
refactored step by step into nn.Module, nn.Linear, optim, Dataset, DataLoader, a CNN,
nn.Sequential, a wrapped DataLoader), as the tutorials write them, with random data of
MNIST's and CIFAR-10's shapes in place of the downloads (see tutorial_harness)."""

import math

import numpy as np

from tests.tutorial_harness import registry

SNIPPETS, snippet = registry()


@snippet()
def blitz_tensors(R, torch, **_):
    x = torch.empty(5, 3)
    R.out("empty", [list(x.shape), str(x.dtype)])
    x = torch.zeros(5, 3, dtype=torch.long)
    R.out("zeros long", x)
    x = torch.tensor([5.5, 3])
    R.out("tensor", x)
    x = x.new_ones(5, 3, dtype=torch.double)
    R.out("new_ones", x)
    x = torch.randn_like(x, dtype=torch.float)
    R.out("randn_like", [list(x.size()), str(x.dtype)])
    R.out("size", x.size()[0] * x.size()[1])
    x = torch.tensor(R.data(5, 3))
    y = torch.tensor(R.uniform(5, 3))
    R.out("x + y", x + y)
    R.out("torch.add", torch.add(x, y))
    result = torch.empty(5, 3)
    torch.add(x, y, out=result)
    R.out("out=", result)
    y.add_(x)
    R.out("add_", y)
    R.out("x[:, 1]", x[:, 1])
    x = torch.tensor(R.data(4, 4))
    y = x.view(16)
    z = x.view(-1, 8)
    R.out("views", [list(x.size()), list(y.size()), list(z.size())])
    x = torch.tensor(R.data(1))
    R.out("item", x.item())
    a = torch.ones(5)
    b = a.numpy()
    a.add_(1)
    R.out("numpy shares memory", b.copy())
    if torch.cuda.is_available():
        device = torch.device("cuda")
        y = torch.ones_like(x, device=device)
        R.out("cuda", (x.to(device) + y).to("cpu", torch.double))
    else:
        R.out("cuda", (x + torch.ones_like(x)).to("cpu", torch.double))


def _lenet(torch, nn, F):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, input):
            c1 = F.relu(self.conv1(input))
            s2 = F.max_pool2d(c1, (2, 2))
            c3 = F.relu(self.conv2(s2))
            s4 = F.max_pool2d(c3, 2)
            s4 = torch.flatten(s4, 1)
            f5 = F.relu(self.fc1(s4))
            f6 = F.relu(self.fc2(f5))
            output = self.fc3(f6)
            return output

    return Net


@snippet()
def blitz_neural_networks(R, torch, nn, F, **_):
    net = R.sync(_lenet(torch, nn, F)())
    params = list(net.parameters())
    R.out("len(params)", len(params))
    R.out("conv1's .weight", list(params[0].size()))
    input = torch.tensor(R.data(1, 1, 32, 32))
    out = net(input)
    R.out("out", out)
    net.zero_grad()
    out.backward(torch.tensor(R.data(1, 10)))
    R.out("conv1.weight.grad", net.conv1.weight.grad)
    output = net(input)
    target = torch.tensor(R.data(10))
    target = target.view(1, -1)
    criterion = nn.MSELoss()
    loss = criterion(output, target)
    R.out("loss", loss.item())
    R.out("grad_fn chain", loss.grad_fn is not None and len(loss.grad_fn.next_functions) > 0)
    net.zero_grad()
    R.out("conv1.bias.grad before backward", net.conv1.bias.grad)
    loss.backward()
    R.out("conv1.bias.grad after backward", net.conv1.bias.grad)
    learning_rate = 0.01
    for f in net.parameters():
        f.data.sub_(f.grad.data * learning_rate)
    R.out("updated fc3.bias", net.fc3.bias)


@snippet(compiled=True)
def blitz_optimizer(R, torch, nn, F, optim, **_):
    net = R.sync(_lenet(torch, nn, F)())
    input = torch.tensor(R.data(4, 1, 32, 32))
    target = torch.tensor(R.data(4, 10))
    criterion = nn.MSELoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01)

    @R.compile
    def step(input, target):
        optimizer.zero_grad()
        output = net(input)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        return loss

    for i in range(4):
        R.out(f"loss {i}", step(input, target).item())
    R.out("conv1.weight", net.conv1.weight)


def _cifar_net(nn, F, torch):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    return Net


@snippet(compiled=True)
def blitz_cifar10_classifier(R, torch, nn, F, optim, data):
    classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    images = torch.tensor(R.uniform(16, 3, 32, 32)) * 2 - 1  # Normalize((0.5,)*3, (0.5,)*3)
    labels = torch.tensor(R.labels(16, 10))
    trainloader = data.DataLoader(data.TensorDataset(images, labels), batch_size=4)
    net = R.sync(_cifar_net(nn, F, torch)())
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

    @R.compile
    def step(inputs, labels):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        return loss

    for epoch in range(2):
        running_loss = 0.0
        for i, batch in enumerate(trainloader, 0):
            inputs, labels_ = batch
            loss = step(inputs, labels_)
            running_loss += loss.item()
            if i % 2 == 1:  # the tutorial prints every 2000 mini-batches
                R.out(f"[{epoch + 1}, {i + 1:5d}] loss", running_loss / 2)
                running_loss = 0.0
    dataiter = iter(trainloader)
    images_, labels_ = next(dataiter)
    R.out("GroundTruth", " ".join(f"{classes[labels_[j]]:5s}" for j in range(4)))
    outputs = net(images_)
    _, predicted = torch.max(outputs, 1)
    R.out("Predicted", " ".join(f"{classes[predicted[j]]:5s}" for j in range(4)))
    correct, total = 0, 0
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for batch in trainloader:
            images_, labels_ = batch
            outputs = net(images_)
            _, predicted = torch.max(outputs.data, 1)
            total += labels_.size(0)
            correct += (predicted == labels_).sum().item()
            for label, prediction in zip(labels_, predicted):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    R.out("Accuracy", 100 * correct // total)
    R.out("per class", [correct_pred[c] for c in classes] + [total_pred[c] for c in classes])


def _mnist(R, torch, n_train=256, n_valid=128):
    x_train, x_valid = R.uniform(n_train, 784), R.uniform(n_valid, 784)
    y_train, y_valid = R.labels(n_train, 10), R.labels(n_valid, 10)
    return map(torch.tensor, (x_train, y_train, x_valid, y_valid))


@snippet()
def nn_really_from_scratch(R, torch, **_):
    x_train, y_train, x_valid, y_valid = _mnist(R, torch)
    n, c = x_train.shape
    R.out("x_train.shape", [n, c])
    R.out("y_train min max", [y_train.min().item(), y_train.max().item()])
    weights = torch.randn(784, 10) / math.sqrt(784)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)
    R.sync(weights)

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    bs = 64
    xb = x_train[0:bs]
    preds = model(xb)
    R.out("preds[0]", preds[0])
    R.out("preds.shape", list(preds.shape))

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    loss_func = nll
    yb = y_train[0:bs]
    R.out("loss", loss_func(preds, yb).item())

    def accuracy(out, yb):
        preds = torch.argmax(out, dim=1)
        return (preds == yb).float().mean()

    R.out("accuracy", accuracy(preds, yb))
    lr, epochs = 0.5, 2
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            end_i = start_i + bs
            xb = x_train[start_i:end_i]
            yb = y_train[start_i:end_i]
            pred = model(xb)
            loss = loss_func(pred, yb)
            loss.backward()
            with torch.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
    R.out("after", [loss_func(model(xb), yb).item(), accuracy(model(xb), yb).item()])


@snippet()
def nn_really_functional(R, torch, F, **_):
    x_train, y_train, _, _ = _mnist(R, torch)
    weights = torch.randn(784, 10) / math.sqrt(784)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)
    R.sync(weights)
    loss_func = F.cross_entropy

    def model(xb):
        return xb @ weights + bias

    xb, yb = x_train[0:64], y_train[0:64]
    R.out("loss", loss_func(model(xb), yb).item())
    loss = loss_func(model(xb), yb)
    loss.backward()
    R.out("weights.grad", weights.grad)


def _fit_setup(R, torch, nn):
    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
            self.bias = nn.Parameter(torch.zeros(10))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    return Mnist_Logistic


@snippet()
def nn_really_module(R, torch, nn, F, **_):
    x_train, y_train, _, _ = _mnist(R, torch)
    model = R.sync(_fit_setup(R, torch, nn)())
    loss_func = F.cross_entropy
    bs, lr, n = 64, 0.5, x_train.shape[0]
    R.out("before", loss_func(model(x_train[0:bs]), y_train[0:bs]).item())

    def fit():
        for epoch in range(2):
            for i in range((n - 1) // bs + 1):
                start_i = i * bs
                end_i = start_i + bs
                xb = x_train[start_i:end_i]
                yb = y_train[start_i:end_i]
                pred = model(xb)
                loss = loss_func(pred, yb)
                loss.backward()
                with torch.no_grad():
                    for p in model.parameters():
                        p -= p.grad * lr
                    model.zero_grad()

    fit()
    R.out("after", loss_func(model(x_train[0:bs]), y_train[0:bs]).item())
    R.out("grads after zero_grad", [p.grad for p in model.parameters()])


@snippet(compiled=True)
def nn_really_linear_optim_dataset(R, torch, nn, F, optim, data):
    x_train, y_train, x_valid, y_valid = _mnist(R, torch)

    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(784, 10)

        def forward(self, xb):
            return self.lin(xb)

    bs, lr = 64, 0.5
    train_ds = data.TensorDataset(x_train, y_train)
    train_dl = data.DataLoader(train_ds, batch_size=bs)
    valid_ds = data.TensorDataset(x_valid, y_valid)
    valid_dl = data.DataLoader(valid_ds, batch_size=bs * 2)
    model = R.sync(Mnist_Logistic())
    opt = optim.SGD(model.parameters(), lr=lr)
    loss_func = F.cross_entropy

    @R.compile
    def step(xb, yb):
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    for epoch in range(2):
        model.train()
        for xb, yb in train_dl:
            step(xb, yb)
        model.eval()
        with torch.no_grad():
            valid_loss = sum(loss_func(model(xb), yb) for xb, yb in valid_dl)
        R.out(f"epoch {epoch}", valid_loss / len(valid_dl))
    xb, yb = train_ds[:3]
    R.out("train_ds[:3]", [xb.shape[0], yb])


def _loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def _fit(R, torch, epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            _loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[_loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        R.out(f"val_loss {epoch}", val_loss)


def _get_data(data, train_ds, valid_ds, bs):
    return (
        data.DataLoader(train_ds, batch_size=bs, shuffle=True),
        data.DataLoader(valid_ds, batch_size=bs * 2),
    )


@snippet()
def nn_really_get_data_fit(R, torch, nn, F, optim, data):
    x_train, y_train, x_valid, y_valid = _mnist(R, torch)
    train_ds = data.TensorDataset(x_train, y_train)
    valid_ds = data.TensorDataset(x_valid, y_valid)
    train_dl, valid_dl = _get_data(data, train_ds, valid_ds, 64)
    model = R.sync(nn.Linear(784, 10))
    loss_func = F.cross_entropy
    with torch.no_grad():
        losses, nums = zip(*[_loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
    R.out("val_loss before", np.sum(np.multiply(losses, nums)) / np.sum(nums))
    R.out("nums", list(nums))
    # the shuffled order differs between the frameworks' generators, so after training only
    # what does not depend on it is compared: one epoch sees every sample once
    opt = optim.SGD(model.parameters(), lr=0.5)
    fitted = {}
    _fit(_Quiet(fitted), torch, 1, model, loss_func, opt, train_dl, valid_dl)
    R.check(np.isfinite(fitted["val_loss 0"]), "val_loss after one epoch")
    xb, yb = next(iter(train_dl))
    R.out("batch", [list(xb.shape), list(yb.shape), str(yb.dtype)])
    seen = torch.cat([yb for _, yb in train_dl])
    R.out("epoch covers the data once", torch.sort(seen).values)


class _Quiet:
    """An R whose outputs go to a dict instead of the comparison."""

    def __init__(self, into):
        self.out = into.__setitem__


def _mnist_cnn(nn, F):
    class Mnist_CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1)
            self.conv2 = nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1)
            self.conv3 = nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1)

        def forward(self, xb):
            xb = xb.view(-1, 1, 28, 28)
            xb = F.relu(self.conv1(xb))
            xb = F.relu(self.conv2(xb))
            xb = F.relu(self.conv3(xb))
            xb = F.avg_pool2d(xb, 4)
            return xb.view(-1, xb.size(1))

    return Mnist_CNN


@snippet()
def nn_really_cnn(R, torch, nn, F, optim, data):
    x_train, y_train, x_valid, y_valid = _mnist(R, torch, 64, 32)
    train_dl = data.DataLoader(data.TensorDataset(x_train, y_train), batch_size=16)
    valid_dl = data.DataLoader(data.TensorDataset(x_valid, y_valid), batch_size=32)
    model = R.sync(_mnist_cnn(nn, F)())
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _fit(R, torch, 2, model, F.cross_entropy, opt, train_dl, valid_dl)
    R.out("conv3.bias", model.conv3.bias)


@snippet(compiled=True)
def nn_really_sequential_wrapped(R, torch, nn, F, optim, data):
    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)

    def preprocess(x, y):
        return x.view(-1, 1, 28, 28), y

    class WrappedDataLoader:
        def __init__(self, dl, func):
            self.dl = dl
            self.func = func

        def __len__(self):
            return len(self.dl)

        def __iter__(self):
            for b in self.dl:
                yield (self.func(*b))

    dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    x_train, y_train, x_valid, y_valid = _mnist(R, torch, 64, 32)
    train_dl = WrappedDataLoader(
        data.DataLoader(data.TensorDataset(x_train, y_train), batch_size=16), preprocess
    )
    valid_dl = WrappedDataLoader(
        data.DataLoader(data.TensorDataset(x_valid, y_valid), batch_size=32), preprocess
    )
    model = nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        Lambda(lambda x: x.view(x.size(0), -1)),
    )
    model.to(dev)
    R.sync(model)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_func = F.cross_entropy

    @R.compile
    def step(xb, yb):
        loss = loss_func(model(xb.to(dev)), yb.to(dev))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    for epoch in range(2):
        model.train()
        for i, (xb, yb) in enumerate(train_dl):
            R.out(f"loss {epoch} {i}", step(xb, yb).item())
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[_loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        R.out(f"val_loss {epoch}", np.sum(np.multiply(losses, nums)) / np.sum(nums))


@snippet()
def printing_tensors(R, torch, nn, F, **_):
    # what the tutorials' print(tensor) and print(model) show (module names normalised)
    x_data = torch.tensor([[1, 2], [3, 4]])
    R.out("int", str(x_data))
    R.out("float", str(torch.ones(2, 3)))
    R.out("mixed", str(torch.tensor([[0.5, 1.0], [2.25, -3.0]])))
    R.out("double", str(torch.tensor([1.0, 2.0], dtype=torch.double)))
    R.out("bool", str(torch.tensor([True, False])))
    w = torch.tensor([1.5, 2.0], requires_grad=True)
    R.out("requires_grad", str(w))
    R.out("grad_fn", str((w * 2).sum()))
    z = (w * 2).sum()
    R.out("Gradient function for z", str(z.grad_fn).split()[0])  # "<SumBackward0 object at 0x..>"
    R.out("grad_fn.name()", z.grad_fn.name())
    logits = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
    target = torch.tensor([2, 0])
    R.out("nn really: print(loss_func(preds, yb))", str(F.cross_entropy(logits, target)))
    loss = F.binary_cross_entropy_with_logits(logits, torch.zeros(2, 3))
    R.out("basics: loss.grad_fn", str(loss.grad_fn).split()[0])
    R.out("blitz: loss.grad_fn", str(nn.MSELoss()(logits, torch.zeros(2, 3)).grad_fn).split()[0])
    R.out("print(preds[0])", str(F.log_softmax(logits, -1)[0]))
    R.out("shape", str(x_data.shape))
    R.out("format 0-d", f"{torch.tensor(3.14159):.2f}")
    R.out("large", str(torch.arange(12.0).view(3, 4) * 1000))
    R.out("long row", str(torch.arange(2000)))


@snippet()
def printing_models(R, torch, nn, F, **_):
    from tests.tutorial_snippets_basics import _neural_network

    R.out("NeuralNetwork", str(_neural_network(nn)()))
    R.out("LeNet", str(_lenet(torch, nn, F)()))
    R.out("CIFAR Net", str(_cifar_net(nn, F, torch)()))
    seq = nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
        nn.BatchNorm2d(16),
        nn.Dropout(0.2),
        nn.AdaptiveAvgPool2d(1),
        nn.Softmax(dim=1),
        nn.MSELoss(reduction="sum"),
        nn.CrossEntropyLoss(),
    )
    R.out("Sequential", str(seq))


@snippet()
def quickstart(R, torch, nn, data, **_):
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]  # fmt: skip
    from tests.tutorial_snippets_basics import _fashion, _neural_network

    test_data = _fashion(R, torch, data, 64)
    test_dataloader = data.DataLoader(test_data, batch_size=64)
    for X, y in test_dataloader:
        R.out("Shape of X [N, C, H, W]", str(X.shape))
        R.out("Shape of y", f"{y.shape} {y.dtype}")
        break
    device = (
        torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    )
    model = R.sync(_neural_network(nn)().to(device))
    sample_idx = torch.randint(len(test_data), size=(1,)).item()
    R.check(0 <= sample_idx < len(test_data))
    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        R.out("Predicted / Actual", f'Predicted: "{predicted}", Actual: "{actual}"')


@snippet()
def init_weights_apply(R, torch, nn, **_):
    def init_weights(m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3))
    net.apply(init_weights)
    R.out("biases", [net[0].bias, net[2].bias])
    bound = math.sqrt(6 / (2 + 3))
    R.check(float(net[2].weight.abs().max()) <= bound, "xavier bound")
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[1.0, -2.0], [0.5, 3.0]]))
        net[2].weight.normal_(0, 0.01)
    R.out("copied", net[0].weight)
    R.check(float(net[2].weight.std()) < 0.1, "normal_(0, 0.01)")
    x = torch.tensor(R.data(28, 28))
    img = np.asarray(x.reshape((28, 28)))
    R.out("np.asarray", img)
    R.out("tolist", torch.tensor([[1, 2]]).tolist())
    loss = torch.tensor(0.123456).item()
    R.out("print loss", f"loss: {loss:>7f}  [{64:>5d}/{60000:>5d}]")
