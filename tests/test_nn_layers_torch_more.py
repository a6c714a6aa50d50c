"""The modules of kiln/nn/layers_torch.py against PyTorch 2.13's (skipped without torch): the
same state_dict gives the same outputs and gradients, eagerly and under `kn.compile`."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# name -> (constructor(lib), inputs); the module is built in torch, its state loaded in kiln
CASES = {
    "ZeroPad2d": (lambda L: L.nn.ZeroPad2d((1, 2, 0, 1)), [arr(1, 2, 3, 3)]),
    "ConstantPad1d": (lambda L: L.nn.ConstantPad1d(2, 3.5), [arr(2, 3, 4)]),
    "ConstantPad3d": (lambda L: L.nn.ConstantPad3d(1, -1.0), [arr(1, 1, 2, 2, 2)]),
    "ReflectionPad1d": (lambda L: L.nn.ReflectionPad1d((2, 1)), [arr(1, 2, 5)]),
    "ReflectionPad2d": (lambda L: L.nn.ReflectionPad2d(1), [arr(1, 2, 4, 4)]),
    "ReplicationPad2d": (lambda L: L.nn.ReplicationPad2d((1, 0, 2, 1)), [arr(1, 2, 3, 3)]),
    "ReplicationPad3d": (lambda L: L.nn.ReplicationPad3d(1), [arr(1, 1, 2, 3, 2)]),
    "CircularPad2d": (lambda L: L.nn.CircularPad2d(1), [arr(1, 2, 3, 3)]),
    "Unflatten": (lambda L: L.nn.Unflatten(1, (2, 3)), [arr(4, 6)]),
    "Softmax2d": (lambda L: L.nn.Softmax2d(), [arr(2, 3, 2, 2)]),
    "ChannelShuffle": (lambda L: L.nn.ChannelShuffle(2), [arr(1, 4, 2, 2)]),
    "CosineSimilarity": (lambda L: L.nn.CosineSimilarity(dim=1), [arr(3, 5), arr(3, 5)]),
    "PairwiseDistance": (lambda L: L.nn.PairwiseDistance(p=1.5), [arr(3, 5), arr(3, 5)]),
    "BatchNorm3d": (lambda L: L.nn.BatchNorm3d(2), [arr(3, 2, 2, 2, 2)]),
    "InstanceNorm3d": (lambda L: L.nn.InstanceNorm3d(2, affine=True), [arr(2, 2, 3, 2, 2)]),
    "LocalResponseNorm": (lambda L: L.nn.LocalResponseNorm(3), [arr(2, 5, 3, 3)]),
    "Fold": (lambda L: L.nn.Fold((4, 5), (2, 2)), [arr(1, 8, 12)]),
    "Unfold": (lambda L: L.nn.Unfold((2, 3), padding=1), [arr(1, 2, 4, 4)]),
    "UpsamplingNearest2d": (
        lambda L: L.nn.UpsamplingNearest2d(scale_factor=2),
        [arr(1, 2, 2, 3)],
    ),  # fmt: skip
    "UpsamplingBilinear2d": (
        lambda L: L.nn.UpsamplingBilinear2d(size=(4, 5)),
        [arr(1, 2, 2, 3)],
    ),  # fmt: skip
    "RNNCell": (lambda L: L.nn.RNNCell(3, 4), [arr(2, 3), arr(2, 4)]),
    "RNNCell-relu": (lambda L: L.nn.RNNCell(3, 4, nonlinearity="relu"), [arr(2, 3)]),
    "RNNCell-unbatched": (lambda L: L.nn.RNNCell(3, 4, bias=False), [arr(3), arr(4)]),
    "GRUCell": (lambda L: L.nn.GRUCell(3, 4), [arr(2, 3), arr(2, 4)]),
    "MarginRankingLoss": (
        lambda L: L.nn.MarginRankingLoss(0.2),
        [arr(5), arr(5), np.sign(arr(5))],
    ),  # fmt: skip
    "CosineEmbeddingLoss": (
        lambda L: L.nn.CosineEmbeddingLoss(0.1, reduction="sum"),
        [arr(4, 3), arr(4, 3), np.sign(arr(4))],
    ),  # fmt: skip
    "HingeEmbeddingLoss": (lambda L: L.nn.HingeEmbeddingLoss(), [arr(6), np.sign(arr(6))]),
    "SoftMarginLoss": (lambda L: L.nn.SoftMarginLoss(), [arr(6), np.sign(arr(6))]),
    "MultiLabelSoftMarginLoss": (
        lambda L: L.nn.MultiLabelSoftMarginLoss(),
        [arr(3, 4), (arr(3, 4) > 0).astype(np.float32)],
    ),  # fmt: skip
    "PoissonNLLLoss": (lambda L: L.nn.PoissonNLLLoss(), [arr(6), np.abs(arr(6))]),
    "GaussianNLLLoss": (lambda L: L.nn.GaussianNLLLoss(), [arr(6), arr(6), np.abs(arr(6)) + 0.1]),
    "TripletMarginLoss": (lambda L: L.nn.TripletMarginLoss(), [arr(4, 3), arr(4, 3), arr(4, 3)]),
    "TripletMarginWithDistanceLoss": (
        lambda L: L.nn.TripletMarginWithDistanceLoss(swap=True),
        [arr(4, 3), arr(4, 3), arr(4, 3)],
    ),  # fmt: skip
}


def _call(module, lib, arrays):
    return module(*[lib.tensor(a) for a in arrays])


@pytest.mark.parametrize("name", list(CASES))
def test_module_matches_torch(name):
    make, arrays = CASES[name]
    tmod = make(torch)
    kmod = make(kn)
    state = {k: v.detach().numpy() for k, v in tmod.state_dict().items()}
    if state:
        kmod.load_state_dict({k: kn.tensor(v) for k, v in state.items()})
    targs = [torch.tensor(a, requires_grad=k == 0) for k, a in enumerate(arrays)]
    want = tmod(*targs)
    want = want if isinstance(want, torch.Tensor) else want[0]
    kargs = [kn.tensor(a, requires_grad=k == 0) for k, a in enumerate(arrays)]
    got = kmod(*kargs)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    (want.float() ** 2).sum().backward()
    (got**2).sum().backward()
    for t, k in zip(targs, kargs):
        if t.grad is not None:
            np.testing.assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    compiled = kn.compile(kmod)(*[kn.tensor(a) for a in arrays])
    np.testing.assert_allclose(compiled.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)  # fmt: skip


def test_lstm_cell_states_match_torch():
    t = torch.nn.LSTMCell(3, 5)
    k = kn.nn.LSTMCell(3, 5)
    k.load_state_dict({n: kn.tensor(v.detach().numpy()) for n, v in t.state_dict().items()})
    x, h, c = arr(2, 3), arr(2, 5), arr(2, 5)
    th, tc = t(torch.tensor(x), (torch.tensor(h), torch.tensor(c)))
    kh, kc = k(kn.tensor(x), (kn.tensor(h), kn.tensor(c)))
    np.testing.assert_allclose(kh.detach().numpy(), th.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kc.detach().numpy(), tc.detach().numpy(), rtol=1e-5, atol=1e-6)
    th0, _ = t(torch.tensor(x))
    kh0, _ = k(kn.tensor(x))
    np.testing.assert_allclose(kh0.detach().numpy(), th0.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_parameter_containers_register_as_pytorch():
    for lib in (torch, kn):
        plist = lib.nn.ParameterList(
            [lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.zeros(3))]
        )
        plist.append(lib.nn.Parameter(lib.ones(1)))
        assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"] and len(plist) == 3
        pdict = lib.nn.ParameterDict({"a": lib.nn.Parameter(lib.ones(2))})
        pdict["b"] = lib.nn.Parameter(lib.zeros(1))
        assert list(pdict.keys()) == ["a", "b"]
        assert sorted(n for n, _ in pdict.named_parameters()) == ["a", "b"]


def test_embedding_bag_matches_torch():
    t = torch.nn.EmbeddingBag(10, 3, mode="sum")
    k = kn.nn.EmbeddingBag(10, 3, mode="sum")
    k.load_state_dict({"weight": kn.tensor(t.weight.detach().numpy())})
    ids, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    want = t(torch.tensor(ids), torch.tensor(offsets)).detach().numpy()
    got = k(kn.tensor(ids), kn.tensor(offsets)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_matches_torch(n):
    shape = (2, 3) + (6,) * n
    x = arr(*shape)
    pool = getattr(torch.nn, f"MaxPool{n}d")(2, return_indices=True)
    values, indices = pool(torch.tensor(x))
    want = getattr(torch.nn, f"MaxUnpool{n}d")(2)(values, indices)
    unpool = getattr(kn.nn, f"MaxUnpool{n}d")(2)
    kv = kn.tensor(values.numpy(), requires_grad=True)
    got = unpool(kv, kn.tensor(indices.numpy()))
    np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
    (got * 2).sum().backward()
    np.testing.assert_array_equal(kv.grad.numpy(), np.full(values.shape, 2, np.float32))
    sized = getattr(kn.nn.functional, f"max_unpool{n}d")(
        kn.tensor(values.numpy()), kn.tensor(indices.numpy()), 2, output_size=(7,) * n
    )
    want_sized = getattr(torch.nn.functional, f"max_unpool{n}d")(
        values, indices, 2, output_size=(7,) * n
    )
    np.testing.assert_array_equal(sized.numpy(), want_sized.numpy())
