"""`grad_fn` names of functions that kiln builds from several primitives, as PyTorch names
them: the tutorials print them (`tensor(2.3026, grad_fn=<NllLossBackward0>)` in "What is
torch.nn really", `<BinaryCrossEntropyWithLogitsBackward0 ...>` in Learn the Basics,
`<MseLossBackward0 ...>` in the 60 minute blitz). Expected names: torch 2.13's, asked for
the same call in each case."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _cases(lib):
    F = lib.nn.functional
    x = lib.ones(2, 1, 3, requires_grad=True)
    m = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4) / 10, requires_grad=True)
    logits, y = m.T[:, :3], lib.tensor([0, 1, 2, 0])
    image = lib.ones(1, 1, 4, 4, requires_grad=True)
    image5 = lib.ones(1, 3, 2, 2, requires_grad=True)
    return {
        "squeeze()": lambda: x.squeeze(),
        "squeeze(1)": lambda: x.squeeze(1),
        "squeeze((1,))": lambda: x.squeeze((1,)),
        "squeeze(0), size 2": lambda: x.squeeze(0),
        "unsqueeze": lambda: m.unsqueeze(0),
        "x.T": lambda: m.T,
        "x.t()": lambda: m.t(),
        "transpose(0, 1)": lambda: m.transpose(0, 1),
        "transpose(0, 2)": lambda: x.transpose(0, 2),
        "x.mT": lambda: m.mT,
        "permute(1, 0)": lambda: m.permute(1, 0),
        "stack": lambda: lib.stack([m, m]),
        "stack of one": lambda: lib.stack([m]),
        "softmax": lambda: F.softmax(m, 1),
        "softmax(dtype)": lambda: F.softmax(m, 1, dtype=lib.float64),
        "Tensor.softmax": lambda: x.softmax(-1),
        "log_softmax": lambda: F.log_softmax(m, 1),
        "cross_entropy": lambda: F.cross_entropy(logits, y),
        "cross_entropy sum": lambda: F.cross_entropy(logits, y, reduction="sum"),
        "cross_entropy none": lambda: F.cross_entropy(logits, y, reduction="none"),
        "cross_entropy weight": lambda: F.cross_entropy(logits, y, weight=lib.ones(3)),
        "cross_entropy label_smoothing": lambda: F.cross_entropy(logits, y, label_smoothing=0.1),
        "nn.CrossEntropyLoss": lambda: lib.nn.CrossEntropyLoss()(logits, y),
        "nll_loss": lambda: F.nll_loss(logits, y),
        "nll_loss 4-d": lambda: F.nll_loss(image5, lib.zeros(1, 2, 2, dtype=lib.long)),
        "mse_loss": lambda: F.mse_loss(m, m * 2),
        "mse_loss none": lambda: F.mse_loss(m, m * 2, reduction="none"),
        "nn.MSELoss(sum)": lambda: lib.nn.MSELoss(reduction="sum")(m, m * 2),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(m.sigmoid(), m.detach() / 2),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(m, m.detach() / 2),
        "linear": lambda: F.linear(logits, m.T, m[0]),
        "linear, no bias": lambda: F.linear(logits, m.T),
        "linear of a batch": lambda: F.linear(x, m.T[:, :3], m[0]),
        "conv2d": lambda: F.conv2d(image, lib.ones(1, 1, 3, 3), lib.ones(1)),
        "conv2d, no bias": lambda: F.conv2d(image, lib.ones(1, 1, 3, 3)),
        "adaptive_avg_pool2d(1)": lambda: F.adaptive_avg_pool2d(image, 1),
        "adaptive_avg_pool2d(2)": lambda: F.adaptive_avg_pool2d(image, 2),
        "index with lists": lambda: m[[0, 1], [1, 2]],
        "index with a tensor": lambda: m[lib.tensor([0, 2])],
        "boolean mask": lambda: m[m > 0.5],
    }


KEYS = list(_cases(torch))


@pytest.mark.parametrize("case", KEYS)
def test_grad_fn_name_as_torch(case):
    want = _cases(torch)[case]().grad_fn.name()
    got = _cases(kn)[case]()
    assert got.grad_fn.name() == want
    assert f"grad_fn=<{want}>" in str(got)


def test_naming_leaves_the_input_alone():
    # a call that returns its input's own node must not rename it
    x = kn.ones(2, 3, requires_grad=True)
    y = x * 2
    kn.nn.functional.softmax(y, 1)
    y.squeeze(0), y.unsqueeze(0), kn.stack([y])
    assert y.grad_fn.name() == "MulBackward0"
