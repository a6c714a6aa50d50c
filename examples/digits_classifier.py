"""A digits classifier, PyTorch style: Dataset and DataLoader, an MLP, CrossEntropyLoss,
AdamW with a cosine learning-rate schedule, and a checkpoint (model, optimizer, scheduler,
shuffle generator, epoch) saved mid-run with kn.save. A fresh model resumed from it with
kn.load ends with exactly the parameters of the uninterrupted run.

Run: python examples/digits_classifier.py [--checkpoint PATH]
"""

import argparse
import os
import tempfile

import numpy as np

import kiln as kn
from kiln.demo import load_digits
from kiln.utils.data import DataLoader, TensorDataset, random_split

EPOCHS, SAVE_AFTER = 6, 3


def data():
    x, y = load_digits()  # 1797 images of 8x8 pixels in [0, 1], labels 0-9
    dataset = TensorDataset(kn.tensor(x), kn.tensor(y))
    return random_split(dataset, [0.8, 0.2], generator=kn.Generator().manual_seed(0))


def setup(train_set):
    """Model, optimizer, scheduler and shuffled loader, all from fixed seeds."""
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(64, 128), kn.nn.ReLU(), kn.nn.Linear(128, 10))
    optimizer = kn.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    scheduler = kn.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
    generator = kn.Generator().manual_seed(1)
    loader = DataLoader(train_set, batch_size=64, shuffle=True, generator=generator)
    return model, optimizer, scheduler, loader, generator


def accuracy(model, dataset) -> float:
    model.eval()
    correct = 0
    with kn.no_grad():
        for xb, yb in DataLoader(dataset, batch_size=512):
            correct += (model(xb).argmax(1) == yb).sum().item()
    return correct / len(dataset)


def train_epoch(model, optimizer, loader, loss_fn) -> float:
    model.train()
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
    return total / len(loader.dataset)


def main(checkpoint: str):
    train_set, val_set = data()
    loss_fn = kn.nn.CrossEntropyLoss()
    model, optimizer, scheduler, loader, generator = setup(train_set)
    for epoch in range(1, EPOCHS + 1):
        lr = scheduler.get_last_lr()[0]
        loss = train_epoch(model, optimizer, loader, loss_fn)
        scheduler.step()
        print(
            f"epoch {epoch}  lr {lr:.5f}  loss {loss:.4f}  val acc {accuracy(model, val_set):.4f}"
        )
        if epoch == SAVE_AFTER:
            kn.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                     "scheduler": scheduler.state_dict(), "generator": generator.get_state(),
                     "epoch": epoch}, checkpoint)  # fmt: skip
            print(f"saved checkpoint after epoch {epoch}")

    # A new process would start here: the same setup, then the saved state.
    model2, optimizer2, scheduler2, loader2, generator2 = setup(train_set)
    state = kn.load(checkpoint)
    model2.load_state_dict(state["model"])
    optimizer2.load_state_dict(state["optimizer"])
    scheduler2.load_state_dict(state["scheduler"])
    generator2.set_state(state["generator"])
    for _ in range(state["epoch"] + 1, EPOCHS + 1):
        train_epoch(model2, optimizer2, loader2, loss_fn)
        scheduler2.step()
    same = all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(model.parameters(), model2.parameters()))  # fmt: skip
    print(f"resumed from epoch {state['epoch']}: parameters identical to the uninterrupted "
          f"run: {same}")  # fmt: skip
    print(f"final val acc {accuracy(model2, val_set):.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=None, help="where to save (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        main(args.checkpoint or os.path.join(tmp, "digits.safetensors"))
