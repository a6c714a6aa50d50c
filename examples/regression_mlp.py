"""A regression MLP, PyTorch style: nn.Sequential with Dropout, MSELoss and Adam, a
train/validation split with random_split and DataLoader, and validation in eval() mode
under no_grad (dropout off, no graph recorded).

Run: python examples/regression_mlp.py
"""

import numpy as np

import kiln as kn
from kiln.utils.data import DataLoader, TensorDataset, random_split

EPOCHS = 15


def make_data(n: int = 1000, seed: int = 0):
    """y = sin(2 x0) + x1^2 / 2 + noise (std 0.05): noise variance 0.0025 is the floor."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, (n, 2)).astype(np.float32)
    y = np.sin(2 * x[:, :1]) + 0.5 * x[:, 1:] ** 2 + rng.normal(0, 0.05, (n, 1))
    return x, y.astype(np.float32)


def evaluate(model, loader, loss_fn) -> float:
    model.eval()  # dropout off
    total, count = 0.0, 0
    with kn.no_grad():
        for xb, yb in loader:
            total += loss_fn(model(xb), yb).item() * len(xb)
            count += len(xb)
    return total / count


def main():
    kn.manual_seed(0)
    x, y = make_data()
    dataset = TensorDataset(kn.tensor(x), kn.tensor(y))
    train_set, val_set = random_split(dataset, [0.8, 0.2], generator=kn.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True,
                              generator=kn.Generator().manual_seed(1))  # fmt: skip
    val_loader = DataLoader(val_set, batch_size=256)
    print(f"train {len(train_set)} samples, validation {len(val_set)}")

    model = kn.nn.Sequential(
        kn.nn.Linear(2, 64), kn.nn.Tanh(), kn.nn.Dropout(0.05),
        kn.nn.Linear(64, 64), kn.nn.Tanh(), kn.nn.Linear(64, 1),
    )  # fmt: skip
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters")
    loss_fn = kn.nn.MSELoss()
    optimizer = kn.optim.Adam(model.parameters(), lr=1e-2)
    best = (float("inf"), 0)
    for epoch in range(1, EPOCHS + 1):
        model.train()
        total, count = 0.0, 0
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total, count = total + loss.item() * len(xb), count + len(xb)
        val = evaluate(model, val_loader, loss_fn)
        best = min(best, (val, epoch))
        if epoch % 5 == 0 or epoch == 1:
            print(f"epoch {epoch:2d}  train mse {total / count:.4f}  val mse {val:.4f}")
    print(f"best val mse {best[0]:.4f} at epoch {best[1]} (noise floor 0.0025)")


if __name__ == "__main__":
    main()
