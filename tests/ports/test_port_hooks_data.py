"""A custom autograd Function, module hooks and a DataLoader with a Dataset and a collate
function, ported by renaming.

- `torch.autograd.Function` subclasses as the PyTorch tutorials write them: a ReLU whose
  backward clamps the gradient (`ctx.save_for_backward`, `ctx.saved_tensors`) and a
  straight-through rounding with a non-tensor argument (`ctx.scale`, None for its gradient),
  called through `.apply`.
- `register_forward_hook` collecting activation statistics, `register_forward_pre_hook`
  rescaling an input, `register_full_backward_hook` collecting gradient norms, and the
  handles' `remove()`.
- A map-style `Dataset` of variable-length sequences, `DataLoader(batch_size, shuffle=False,
  collate_fn=pad_collate)` padding with `nn.utils.rnn.pad_sequence`, `drop_last`, and a
  `WeightedRandomSampler`-free `SubsetRandomSampler` run for the shapes only.
"""

import numpy as np
import pytest
from port_common import assert_losses_close, assert_state_close, copy_weights

import kiln as kn


def make_sequences(n=40, seed=12):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 9, n)
    seqs = [rng.normal(size=(length, 3)).astype(np.float32) for length in lengths]
    labels = np.array([float(s[:, 0].sum() > 0) for s in seqs], np.float32)
    return seqs, labels


def build(torch):
    nn = torch.nn

    class ClampedReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input.clamp(-1.0, 1.0)

    class RoundSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, scale):
            ctx.scale = scale
            return torch.round(input * scale) / scale

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    class SeqDataset(torch.utils.data.Dataset):
        def __init__(self, seqs, labels):
            self.seqs, self.labels = seqs, labels

        def __len__(self):
            return len(self.seqs)

        def __getitem__(self, idx):
            return {"x": torch.from_numpy(self.seqs[idx]), "y": float(self.labels[idx])}

    def pad_collate(batch):
        xs = [item["x"] for item in batch]
        lengths = torch.tensor([len(x) for x in xs])
        padded = nn.utils.rnn.pad_sequence(xs, batch_first=True)
        ys = torch.tensor([item["y"] for item in batch])
        return padded, lengths, ys

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 16)
            self.head = nn.Linear(16, 1)

        def forward(self, padded, lengths):
            h = ClampedReLU.apply(self.proj(padded))
            h = RoundSTE.apply(h, 64.0)
            mask = torch.arange(padded.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
            pooled = (h * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1)
            return self.head(pooled).squeeze(-1)

    Model.functions = (ClampedReLU, RoundSTE)
    return Model(), SeqDataset, pad_collate


def train(torch, model, dataset_cls, collate, data, epochs=2):
    seqs, labels = data
    loader = torch.utils.data.DataLoader(
        dataset_cls(seqs, labels), batch_size=8, shuffle=False, collate_fn=collate,
        drop_last=True,
    )  # fmt: skip
    stats, grad_norms, calls = [], [], []

    def forward_hook(module, input, output):
        stats.append((output.mean().item(), output.std().item()))

    def pre_hook(module, args):
        calls.append(args[0].shape[0])
        return (args[0] * 0.5,)

    def backward_hook(module, grad_input, grad_output):
        grad_norms.append(grad_output[0].norm().item())

    handles = [
        model.proj.register_forward_hook(forward_hook),
        model.head.register_forward_pre_hook(pre_hook),
        model.proj.register_full_backward_hook(backward_hook),
    ]
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-2)
    criterion = torch.nn.BCEWithLogitsLoss()
    losses, shapes = [], []
    for epoch in range(epochs):
        if epoch == epochs - 1:
            for h in handles:
                h.remove()  # the last epoch runs without hooks
        for padded, lengths, ys in loader:
            shapes.append(tuple(padded.shape))
            optimizer.zero_grad()
            loss = criterion(model(padded, lengths), ys)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses, shapes, stats, grad_norms, calls


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # as torch warns
def test_hooks_and_loader_train():
    model, dataset_cls, collate = build(kn)
    data = make_sequences()
    losses, shapes, stats, grad_norms, calls = train(kn, model, dataset_cls, collate, data, 4)
    assert len(shapes) == 4 * 5  # 40 sequences, batches of 8
    lengths = [len(s) for s in data[0]]
    assert shapes[0] == (8, max(lengths[:8]), 3)  # padded to the longest of the batch
    assert len(stats) == len(grad_norms) == len(calls) == 15  # hooks removed for the last epoch
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    sampler = kn.utils.data.SubsetRandomSampler(range(10))
    assert sorted(sampler) == list(range(10))


def test_custom_functions_like_torch(torch):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(2, 2, 3)
    upstream = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 2, 3)
    found = []
    for fw in (torch, kn):
        clamped_relu, round_ste = build(fw)[0].functions
        inp = fw.from_numpy(x.copy()).requires_grad_()
        out = round_ste.apply(clamped_relu.apply(inp), 4.0)
        out.backward(fw.from_numpy(upstream))
        found.append((out.detach().numpy(), inp.grad.numpy()))
    np.testing.assert_array_equal(found[1][0], found[0][0])
    np.testing.assert_array_equal(found[1][1], found[0][1])
    # by hand: the gradient is `upstream` where x > 0, clamped to [-1, 1], else 0
    np.testing.assert_array_equal(found[1][1], np.where(x > 0, np.clip(upstream, -1, 1), 0))


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # as torch warns
def test_hooks_and_loader_match_torch(torch):
    torch.manual_seed(0)
    t_model, t_ds, t_collate = build(torch)
    k_model, k_ds, k_collate = build(kn)
    copy_weights(t_model, k_model)
    data = make_sequences()
    t = train(torch, t_model, t_ds, t_collate, data)
    k = train(kn, k_model, k_ds, k_collate, data)
    assert_losses_close(k[0], t[0])
    assert k[1] == t[1] and k[4] == t[4]
    assert_losses_close(np.ravel(k[2]), np.ravel(t[2]))
    assert_losses_close(k[3], t[3])
    assert_state_close(t_model, k_model)


def test_full_backward_hook_without_input_grads_warns_as_torch(torch):
    # PyTorch warns when a module's full backward hook fires with no input requiring grad (its
    # grad_input is all None), and refuses a hook that returns gradients there; kiln ran the
    # hook silently and ignored what it returned.
    import warnings

    for fw in (torch, kn):
        lin = fw.nn.Linear(2, 1)
        seen = []
        lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lin(fw.ones(3, 2)).sum().backward()
        assert seen == [(None,)]
        assert any("no inputs require gradients" in str(w.message) for w in caught), fw
        lin = fw.nn.Linear(2, 1)
        lin.register_full_backward_hook(lambda m, gi, go: (fw.ones(3, 2),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="should always return None"):
                lin(fw.ones(3, 2)).sum().backward()


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_full_backward_hook_under_compile_without_input_grads():
    # under kn.compile a hook runs while tracing (once per trace, on graph values); a module
    # fed a batch that requires no grad took it as differentiable there, so its full
    # backward hook waited for an input gradient that never came and never ran (eagerly it
    # runs with grad_input (None,)); now it runs with (None,) as the eager one does
    # (the hook sees a traced value as a kn.Tensor, as eager code does: test_compile_isinstance)
    for requires_grad, expected in ((False, [None]), (True, [True])):
        lin, seen = kn.nn.Linear(2, 1), []
        lin.register_full_backward_hook(
            lambda m, gi, go: seen.append(None if gi[0] is None else isinstance(gi[0], kn.Tensor))
        )
        step = kn.compile(lambda x: lin(x).sum())
        for _ in range(2):
            step(kn.ones(3, 2, requires_grad=requires_grad)).backward()
        assert seen == expected  # one trace
        assert lin.weight.grad is not None
