"""Snippets of PyTorch's "Learn the Basics" tutorials (tensors, datasets & dataloaders, build
the neural network, autograd, optimization loop, save & load), as the tutorials write them,
with random NumPy data of the same shapes in place of FashionMNIST (see tutorial_harness)."""

import os
import tempfile

import numpy as np

from tests.tutorial_harness import registry

SNIPPETS, snippet = registry()


@snippet()
def tensors_initializing(R, torch, **_):
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    R.out("x_data", x_data)
    R.out("x_np", x_np)
    R.out("x_ones", x_ones)
    R.out("x_rand.shape", list(x_rand.shape))
    R.out("x_rand.dtype", str(x_rand.dtype))
    R.check(((x_rand >= 0) & (x_rand < 1)).all())
    shape = (2, 3)
    rand_tensor = torch.rand(shape)
    ones_tensor = torch.ones(shape)
    zeros_tensor = torch.zeros(shape)
    R.out("rand.shape", list(rand_tensor.shape))
    R.out("ones", ones_tensor)
    R.out("zeros", zeros_tensor)


@snippet()
def tensors_attributes(R, torch, **_):
    tensor = torch.rand(3, 4)
    R.out("shape", str(tuple(tensor.shape)))
    R.out("dtype", str(tensor.dtype))
    R.out("device", str(tensor.device))
    device = (
        torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    )
    R.out("accelerator", device == "cpu" or device == "cuda")
    if torch.accelerator.is_available():
        tensor = tensor.to(torch.accelerator.current_accelerator())
    R.out("moved.shape", list(tensor.shape))


@snippet()
def tensors_indexing(R, torch, **_):
    tensor = torch.ones(4, 4)
    R.out("first row", tensor[0])
    R.out("first column", tensor[:, 0])
    R.out("last column", tensor[..., -1])
    tensor[:, 1] = 0
    R.out("tensor", tensor)
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    R.out("t1", t1)
    t2 = torch.stack([tensor, tensor])
    R.out("t2.shape", list(t2.shape))


@snippet()
def tensors_arithmetic(R, torch, **_):
    tensor = torch.tensor(R.data(4, 4))
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    for name, v in [("y1", y1), ("y2", y2), ("y3", y3), ("z1", z1), ("z2", z2), ("z3", z3)]:
        R.out(name, v)
    agg = tensor.sum()
    agg_item = agg.item()
    R.out("agg_item", agg_item)
    R.out("type", type(agg_item).__name__)
    tensor.add_(5)
    R.out("add_", tensor)


@snippet()
def tensors_numpy_bridge(R, torch, **_):
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    R.out("n after t.add_", n.copy())
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    R.out("t after np.add", t)
    R.out("t.dtype", str(t.dtype))


def _custom_dataset(R, torch, data):
    images = R.uniform(100, 28, 28)
    targets = R.labels(100, 10)

    class CustomImageDataset(data.Dataset):
        def __init__(self, transform=None, target_transform=None):
            self.transform = transform
            self.target_transform = target_transform

        def __len__(self):
            return len(targets)

        def __getitem__(self, idx):
            image = torch.tensor(images[idx]).unsqueeze(0)
            label = int(targets[idx])
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    return CustomImageDataset


@snippet()
def dataset_dataloader(R, torch, data, **_):
    CustomImageDataset = _custom_dataset(R, torch, data)
    training_data = CustomImageDataset()
    R.out("len", len(training_data))
    img, label = training_data[7]
    R.out("img.shape", list(img.shape))
    R.out("label", label)
    train_dataloader = data.DataLoader(training_data, batch_size=64, shuffle=True)
    train_features, train_labels = next(iter(train_dataloader))
    R.out("Feature batch shape", list(train_features.size()))
    R.out("Labels batch shape", list(train_labels.size()))
    R.out("labels dtype", str(train_labels.dtype))
    img = train_features[0].squeeze()
    R.out("squeezed", list(img.shape))
    R.out("batches", len(train_dataloader))
    sizes = [len(x) for x, _ in data.DataLoader(training_data, batch_size=64)]
    R.out("sizes", sizes)
    total = sum(float(x.sum()) for x, _ in data.DataLoader(training_data, batch_size=64))
    R.out("total", total)


@snippet()
def dataset_transforms(R, torch, data, **_):
    CustomImageDataset = _custom_dataset(R, torch, data)

    def target_transform(y):
        return torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)

    ds = CustomImageDataset(transform=lambda x: x * 2 - 1, target_transform=target_transform)
    img, label = ds[3]
    R.out("label", label)
    R.out("img.min", img.min())
    loader = data.DataLoader(ds, batch_size=8)
    x, y = next(iter(loader))
    R.out("y", y)
    R.out("x.shape", list(x.shape))


def _neural_network(nn):
    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 512),
                nn.ReLU(),
                nn.Linear(512, 512),
                nn.ReLU(),
                nn.Linear(512, 10),
            )

        def forward(self, x):
            x = self.flatten(x)
            logits = self.linear_relu_stack(x)
            return logits

    return NeuralNetwork


@snippet()
def build_model(R, torch, nn, **_):
    device = "cpu"
    model = R.sync(_neural_network(nn)().to(device))
    R.out("repr has Flatten", "Flatten" in repr(model))
    X = torch.tensor(R.uniform(1, 28, 28), device=device)
    logits = model(X)
    pred_probab = nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    R.out("logits", logits)
    R.out("pred_probab", pred_probab)
    R.out("Predicted class", y_pred)
    R.check(abs(float(pred_probab.sum()) - 1) < 1e-5)
    for name, param in model.named_parameters():
        R.out(f"Layer: {name} | Size", list(param.size()))
        R.out(f"Layer: {name} | Values", param[:2])


@snippet()
def model_layers(R, torch, nn, **_):
    input_image = torch.tensor(R.uniform(3, 28, 28))
    R.out("input size", list(input_image.size()))
    flatten = nn.Flatten()
    flat_image = flatten(input_image)
    R.out("flat size", list(flat_image.size()))
    layer1 = R.sync(nn.Linear(in_features=28 * 28, out_features=20))
    hidden1 = layer1(flat_image)
    R.out("hidden1 size", list(hidden1.size()))
    R.out("before relu", hidden1)
    hidden1 = nn.ReLU()(hidden1)
    R.out("after relu", hidden1)
    seq_modules = R.sync(nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10)))
    logits = seq_modules(input_image)
    softmax = nn.Softmax(dim=1)
    pred_probab = softmax(logits)
    R.out("pred_probab", pred_probab)


@snippet()
def autograd_basics(R, torch, nn, F, **_):
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    R.sync(w, b)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    R.check(z.grad_fn is not None and loss.grad_fn is not None)
    loss.backward()
    R.out("w.grad", w.grad)
    R.out("b.grad", b.grad)
    R.out("loss", loss.item())
    z = torch.matmul(x, w) + b
    R.out("requires_grad", z.requires_grad)
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    R.out("no_grad requires_grad", z.requires_grad)
    z = torch.matmul(x, w) + b
    z_det = z.detach()
    R.out("detach requires_grad", z_det.requires_grad)


@snippet()
def autograd_jacobian_product(R, torch, **_):
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    R.out("First call", inp.grad.clone())
    out.backward(torch.ones_like(out), retain_graph=True)
    R.out("Second call", inp.grad.clone())
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    R.out("Call after zeroing gradients", inp.grad)


def _fashion(R, torch, data, n=128):
    x = torch.tensor(R.uniform(n, 1, 28, 28))
    y = torch.tensor(R.labels(n, 10))
    return data.TensorDataset(x, y)


def _optimization_loop(R, torch, nn, data):
    learning_rate, batch_size, epochs = 1e-3, 64, 2
    torch.manual_seed(0)
    train_dataloader = data.DataLoader(_fashion(R, torch, data), batch_size=batch_size)
    test_dataloader = data.DataLoader(_fashion(R, torch, data, 32), batch_size=batch_size)
    model = R.sync(_neural_network(nn)())
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

    @R.compile
    def train_step(X, y):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    def train_loop(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            loss = train_step(X, y)
            loss, current = loss.item(), batch * batch_size + len(X)
            R.out(f"loss {len(R.outputs)}", [loss, current, size])

    def test_loop(dataloader, model, loss_fn):
        model.eval()
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        test_loss, correct = 0, 0
        with torch.no_grad():
            for X, y in dataloader:
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        R.out(f"test {len(R.outputs)}", [100 * correct, test_loss])

    for t in range(epochs):
        train_loop(train_dataloader, model, loss_fn, optimizer)
        test_loop(test_dataloader, model, loss_fn)
    return model


@snippet(compiled=True)
def optimization_loop(R, torch, nn, data, **_):
    model = _optimization_loop(R, torch, nn, data)
    R.out("final weight", model.linear_relu_stack[4].weight)


@snippet()
def save_and_load(R, torch, nn, **_):
    model = R.sync(_neural_network(nn)())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model_weights.pth")
        torch.save(model.state_dict(), path)
        model2 = _neural_network(nn)()
        model2.load_state_dict(torch.load(path, weights_only=True))
        model2.eval()
    x = torch.tensor(R.uniform(2, 28, 28))
    R.out("same output", bool((model(x) == model2(x)).all()))
    R.out("output", model2(x))


@snippet()
def save_and_load_optimizer(R, torch, nn, optim, **_):
    model = R.sync(nn.Linear(4, 2))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.tensor(R.data(8, 4))
    model(x).pow(2).mean().backward()
    opt.step()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        torch.save({"epoch": 1, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": opt.state_dict(), "loss": 0.5}, path)  # fmt: skip
        model2 = nn.Linear(4, 2)
        opt2 = optim.SGD(model2.parameters(), lr=0.1, momentum=0.9)
        checkpoint = torch.load(path, weights_only=True)
        model2.load_state_dict(checkpoint["model_state_dict"])
        opt2.load_state_dict(checkpoint["optimizer_state_dict"])
        R.out("epoch", checkpoint["epoch"])
        R.out("loss", checkpoint["loss"])
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    R.out("weights", model2.weight)
    R.out("same", bool((model.weight == model2.weight).all()))
