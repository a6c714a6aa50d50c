"""The digits classifier in graph mode (TF1 style): placeholders, the same kn.nn modules
called on Symbols, AdamW's train op, and a cosine schedule that sets the learning-rate
Variable the compiled step reads, so the step is compiled once for the whole run.

Run: python examples/digits_graph.py
"""

import numpy as np

import kiln as kn
from kiln.demo import load_digits
from kiln.utils.data import DataLoader, TensorDataset, random_split

EPOCHS = 6


def main():
    x, y = load_digits()
    dataset = TensorDataset(x, y)  # NumPy arrays: batches come as Tensors, fed as arrays
    train_set, val_set = random_split(dataset, [0.8, 0.2], generator=kn.Generator().manual_seed(0))
    loader = DataLoader(train_set, batch_size=64, shuffle=True,
                        generator=kn.Generator().manual_seed(1))  # fmt: skip

    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(64, 128), kn.nn.ReLU(), kn.nn.Linear(128, 10))
    graph = kn.Graph()
    with graph.as_default():
        images = kn.placeholder(kn.float32, ("batch", 64), name="images")
        labels = kn.placeholder(kn.int64, ("batch",), name="labels")
        logits = model(images)
        loss = kn.nn.functional.cross_entropy(logits, labels)
        correct = (logits.argmax(1) == labels).sum()
        optimizer = kn.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
        scheduler = kn.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
        train_op = optimizer.minimize(loss)
    lr_variable = next(v for v in graph.variables if v.name == "adamw/lr")
    val_x, val_y = (np.stack(column) for column in zip(*(val_set[i] for i in range(len(val_set)))))

    with kn.Session(graph=graph) as sess:
        for epoch in range(1, EPOCHS + 1):
            lr = float(sess.run(lr_variable))  # what the train op reads this epoch
            total = 0.0
            for xb, yb in loader:
                batch_loss, _ = sess.run([loss, train_op], {images: xb.numpy(), labels: yb.numpy()})
                total += float(batch_loss) * len(xb)
            scheduler.step()  # sets the lr Variable: no recompile
            acc = int(sess.run(correct, {images: val_x, labels: val_y})) / len(val_y)
            print(
                f"epoch {epoch}  lr {lr:.5f}  loss {total / len(train_set):.4f}  val acc {acc:.4f}"
            )
    print(f"final val acc {acc:.4f}")
    # The module's Parameters hold the trained values: eager code can use the model now.
    with kn.no_grad():
        eager_acc = (model(kn.tensor(val_x)).argmax(1) == kn.tensor(val_y)).float().mean()
    print(f"eager val acc of the trained model {eager_acc.item():.4f}")


if __name__ == "__main__":
    main()
