"""Linear regression of house prices, PyTorch style: kn.nn.Linear, MSELoss and SGD on
synthetic data whose true coefficients are known, full batch.

Run: python examples/house_prices.py
"""

import numpy as np

import kiln as kn

FEATURES = ["size_m2", "rooms", "age_years"]
TRUE_COEF = np.array([1.5, 10.0, -0.8])  # thousands per m2, per room, per year
TRUE_BASE = 50.0  # thousands


def make_data(n: int = 500, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.stack([rng.uniform(40, 250, n), rng.integers(1, 7, n), rng.uniform(0, 60, n)], 1)
    price = x @ TRUE_COEF + TRUE_BASE + rng.normal(0, 5.0, n)  # thousands, with noise
    return x.astype(np.float32), price.astype(np.float32)


def main():
    kn.manual_seed(0)
    x, y = make_data()
    mean, std = x.mean(0), x.std(0)
    inputs = kn.tensor((x - mean) / std)  # standardized features: SGD converges quickly
    target = kn.tensor(y).reshape(-1, 1)

    model = kn.nn.Linear(3, 1)
    loss_fn = kn.nn.MSELoss()
    optimizer = kn.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, 201):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), target)
        loss.backward()
        optimizer.step()
        if epoch in (1, 10, 50, 200):
            print(f"epoch {epoch:3d}  mse {loss.item():9.3f}")

    # Back to the original units: price = w . (x - mean) / std + b
    w = model.weight.detach().numpy()[0] / std
    b = model.bias.item() - float(w @ mean)
    for name, got, want in zip(FEATURES, w, TRUE_COEF):
        print(f"{name:10s} learned {got:8.3f}  true {want:8.3f}")
    print(f"{'base':10s} learned {b:8.3f}  true {TRUE_BASE:8.3f}")
    error = np.max(np.abs(w - TRUE_COEF) / np.abs(TRUE_COEF))
    print(f"largest coefficient error: {100 * error:.1f}%")


if __name__ == "__main__":
    main()
