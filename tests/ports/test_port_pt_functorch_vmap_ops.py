"""PyTorch's own vmap tests (test/functorch/test_vmap.py) as an oracle, continued from
test_port_pt_functorch_vmap.py: batteries of ops under vmap (TestVmapOperators: views,
reductions with dims, products, joins, nn functions, index ops, linalg, losses, convolutions)
with the batch at other dims, nested, and with arguments mapped or not; and randomness
(TestRandomness: random factories, *_like ops, dropouts and in-place random fills in each
randomness mode, compared by the properties torch's tests check: shapes, dtypes, slices all
equal or all distinct). pt_oracle.py runs each scenario on torch and on kiln, eagerly and under
`kn.compile`.

Expected values: torch 2.13 (the oracle); random draws compared by their properties.
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios

f32 = np.float32
RNG = np.random.default_rng(17)
X = RNG.normal(size=(3, 4)).astype(f32)
Y = RNG.normal(size=(3, 4)).astype(f32)
X3 = RNG.normal(size=(2, 3, 4)).astype(f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case


X4 = RNG.normal(size=(2, 3, 4, 5)).astype(f32)

_OPS = {
    "chunk": lambda lib, a: a.chunk(2, -1),
    "split": lambda lib, a: a.split([1, 3], dim=1),
    "unbind": lambda lib, a: a.unbind(-2),
    "diagonal": lambda lib, a: (a.diagonal(), a.diagonal(1, -1, -2), lib.diagonal(a, -1, 0, 1)),
    "select_narrow": lambda lib, a: (a.select(1, 2), a.narrow(-1, 1, 2), a[..., 1:3:2]),
    "view_forms": lambda lib, a: (
        a.view(-1),
        a.reshape(4, 3),
        a.flatten(),
        a.unflatten(1, (2, 2)),
        a.view(3, 2, 2).permute(2, 0, 1),
        a.T,
        a.mT,
        a.movedim(0, -1),
    ),  # fmt: skip
    "squeeze_unsqueeze": lambda lib, a: (
        a.unsqueeze(-1).squeeze(),
        a[:1].squeeze(0),
        a.unsqueeze(1).squeeze(1),
        a.expand(2, 3, 4),
    ),  # fmt: skip
    "new_factories": lambda lib, a: (
        a.new_zeros(2, 2),
        a.new_ones(()),
        a.new_full((2,), 3.0),
        a.new_empty(2).fill_(1.0),
        a.new_tensor([1.0, 2.0]),
    ),  # fmt: skip
    "properties": lambda lib, a: lib.tensor(
        [a.dim(), a.numel(), a.size(-1), a.shape[0], int(a.is_floating_point())]
    ),  # fmt: skip
    "tile_forms": lambda lib, a: (a.tile((2,)), a.tile((2, 1, 2)), a[0].tile((3, 1))),
    "reductions_dims": lambda lib, a: (
        a.sum((0, 1)),
        a.amax(-1, keepdim=True),
        a.std(0),
        a.var(-1, correction=0),
        a.logsumexp(1),
        a.norm(dim=0),
        a.prod(-1),
        a.cumprod(0),
        a.argmin(0),
        a.all(-1),
        a.max(),
        a.min(dim=1).indices,
        a.median(-1).values,
        a.sort(-1).values,
        a.topk(2, 0).indices,
    ),  # fmt: skip
    "products": lambda lib, a: (
        a @ a.T,
        lib.mm(a.T, a),
        lib.mv(a, a[0]),
        lib.dot(a[0], a[1]),
        lib.einsum("ij,kj->ik", a, a),
        lib.tensordot(a, a, ([1], [1])),
        lib.outer(a[0], a[1]),
        lib.kron(a[:1], a[:1]),
        lib.linalg.norm(a),
        lib.trace(a[:, :3]),
    ),  # fmt: skip
    "joins": lambda lib, a: (
        lib.cat([a, a * 2], -1),
        lib.stack([a, a], 1),
        lib.hstack([a, a]),
        lib.vstack([a, a]),
        lib.where(a > 0, a, -a),
        lib.flip(a, (0,)),
        lib.roll(a, 1, -1),
        lib.tril(a),
        lib.triu(a, 1),
        a.repeat(2, 1),
        a.tile((1, 2)),
        lib.gather(a, 1, lib.tensor([[0], [1], [2]])),
        lib.index_select(a, 0, lib.tensor([2, 0])),
        a.masked_fill(a > 0, 0.0),
        lib.clamp(a, -0.5, 0.5),
    ),  # fmt: skip
    "nn_functions": lambda lib, a: (
        lib.softmax(a, 0),
        lib.log_softmax(a, -1),
        lib.nn.functional.normalize(a, dim=0),
        lib.nn.functional.layer_norm(a, (4,)),
        lib.nn.functional.pad(a, (1, 2)),
        lib.nn.functional.one_hot(a.argmax(-1), 4),
        lib.nn.functional.linear(a, a),
    ),  # fmt: skip
}


def _ops_case(name, build):
    @case(f"ops_{name}", X4)
    def _(lib, x4):
        vm = lib.func.vmap
        x3 = x4[0]  # (3, 4, 5): examples (3, 4) at dim -1
        return (vm(lambda a: build(lib, a), in_dims=-1)(x3),
                vm(vm(lambda a: build(lib, a)), in_dims=(3,))(x4))  # fmt: skip


for _name, _build in _OPS.items():
    _ops_case(_name, _build)


P3, Q3 = (RNG.normal(size=(3, 4, 5)).astype(f32) for _ in range(2))
IMGS = RNG.normal(size=(2, 3, 2, 6, 6)).astype(f32)  # 2 batches of 3 images, 2 channels
W_CONV = RNG.normal(size=(4, 2, 3, 3)).astype(f32)

_PAIRS = {  # f(a, b): an example of P3 (4, 5) and one of Q3 (4, 5)
    "binary": lambda lib, a, b: (
        a + b,
        a * b,
        a / (b.abs() + 1),
        lib.maximum(a, b),
        lib.atan2(a, b),
        a**2 - b,
        lib.hypot(a, b),
        a > b,
        lib.lerp(a, b, 0.3),
        lib.addcmul(a, a, b, value=0.5),
    ),  # fmt: skip
    "index_ops": lambda lib, a, b: (
        a.scatter(1, lib.tensor([[0], [2], [1], [4]]), b[:, :1]),
        a.index_add(0, lib.tensor([1, 3]), b[:2]),
        a.index_copy(1, lib.tensor([0]), b[:, :1]),
        a.scatter_add(0, lib.tensor([[1, 0, 2, 3, 0]]), b[:1]),
        a.take_along_dim(b.argsort(-1), -1),
        lib.searchsorted(a.sort(-1).values, b),
    ),  # fmt: skip
    "linalg": lambda lib, a, b: (
        lib.linalg.inv(a[:, :4] @ a[:, :4].T + 5 * lib.eye(4)),
        lib.linalg.det(a[:, :4]),
        lib.linalg.solve(a[:, :4] @ a[:, :4].T + 5 * lib.eye(4), b[:, 0]),
        lib.linalg.cholesky(a[:, :4] @ a[:, :4].T + 5 * lib.eye(4)),
        lib.linalg.svdvals(a),
        lib.linalg.matrix_norm(a),
    ),  # fmt: skip
    "losses": lambda lib, a, b: (
        lib.nn.functional.mse_loss(a, b),
        lib.nn.functional.cross_entropy(a, b.argmax(-1)),
        lib.nn.functional.smooth_l1_loss(a, b, reduction="none"),
        lib.nn.functional.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"),
        lib.cdist(a, b),
        lib.nn.functional.cosine_similarity(a, b),
    ),  # fmt: skip
    "fft_scan": lambda lib, a, b: (
        lib.fft.rfft(a).abs(),
        lib.fft.fft(a, dim=0).real,
        a.cumsum(-1),
        a.cummax(0).values,
        lib.diff(a, dim=-1),
        lib.logcumsumexp(b, 1),
    ),  # fmt: skip
}


def _pair_case(name, build):
    @case(f"pairs_{name}", P3, Q3)
    def _(lib, x3, y3):
        vm = lib.func.vmap
        f = lambda a, b: build(lib, a, b)  # noqa: E731
        return (vm(f)(x3, y3), vm(f, (0, None))(x3, y3[0]), vm(f, (None, 0))(x3[1], y3),
                vm(f, (2, 0))(x3.permute(1, 2, 0), y3))  # fmt: skip


for _name, _build in _PAIRS.items():
    _pair_case(_name, _build)


@case("solve_and_scatter_forms", P3, Q3)
def _(lib, p, q):
    vm = lib.func.vmap
    spd = p[:, :, :4] @ p[:, :, :4].mT + 5 * lib.eye(4)  # (3, 4, 4)
    many = lib.stack([spd, spd * 2], 1)  # (3, 2, 4, 4)
    idx = lib.tensor([[0, 1, 0, 3, 2]])
    if lib.__name__ == "torch":  # (torch 2.13's vmap of solve misaligns A's extra batch dims
        # with B's, RuntimeError: its values are those of a loop over the examples)
        broadcast = (lib.stack([lib.linalg.solve(a, b) for a, b in zip(many, q[:, :, :2])]),
                     lib.stack([lib.linalg.solve(a, q[0, :, :3]) for a in many]))  # fmt: skip
    else:
        broadcast = (vm(lib.linalg.solve)(many, q[:, :, :2]),
                     vm(lib.linalg.solve, (0, None))(many, q[0, :, :3]))  # fmt: skip
    return (vm(lib.linalg.solve)(spd, q[:, :, :2]), broadcast,
            vm(lib.linalg.solve, (None, 0))(spd[0], q[:, :, 0]),
            vm(lambda a, b: a.scatter_reduce(0, idx, b[:1], "amax"))(p, q),
            vm(lambda a: a.scatter(1, idx[:, :2], 7.0))(p),
            vm(lambda a, b: lib.addmm(a[0], b[:, :2].T, a[:, :3], beta=0.5, alpha=2.0))(p, q),
            vm(lambda a: lib.addmm(q[0, :2, :3], a[:2, :4], a[:, :3]), in_dims=2)(p),
            vm(lambda b: lib.addmm(q[0, 0, :3], p[0, :2, :4], b[:, :3], beta=0))(q))  # fmt: skip


@case("complex_views_and_eig", P3)
def _(lib, p):
    vm = lib.func.vmap
    z = lib.complex(p[..., :2], p[..., 2:4])  # (3, 4, 2) complex64
    sym = p[:, :, :4] + p[:, :, :4].mT  # symmetric: real eigenvalues, sorted by eigvalsh
    return (vm(lib.view_as_real)(z), vm(lib.view_as_complex)(p[..., :2].contiguous()),
            vm(lambda a: lib.linalg.eigvals(a).real.sort().values)(sym),
            vm(lambda a: lib.linalg.eigvalsh(a))(sym))  # fmt: skip


@case("conv_pool_embedding", IMGS, W_CONV)
def _(lib, imgs, w):
    vm, F = lib.func.vmap, lib.nn.functional

    def net(x, weight):
        y = F.conv2d(x, weight, padding=1)
        return F.max_pool2d(y.relu(), 2), F.avg_pool2d(y, 3), F.interpolate(y, scale_factor=0.5)

    emb = lib.arange(20.0).reshape(10, 2)
    ids = lib.tensor([[1, 3], [0, 9]])
    return (vm(net, (0, None))(imgs, w), vm(net, (None, 0))(imgs[0], lib.stack([w, w * 2])),
            vm(net)(imgs, lib.stack([w, -w])), vm(lambda i: F.embedding(i, emb))(ids),
            vm(F.embedding, (None, 0))(ids[0], lib.stack([emb, emb * 3])))  # fmt: skip


@case("is_contiguous_of_a_strided_example", X3)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.tensor(a.is_contiguous()), in_dims=-1)(x)


@case("dims_with_in_dims", X3)
def _(lib, x):
    vm = lib.func.vmap
    return vm(lambda a: a.sum(0), in_dims=1)(x), vm(lambda a: a.movedim(0, 1), in_dims=-1)(x)


@case("dim_out_of_range_of_example_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a.sum(1))(x)


@case("matmul_batched_and_unbatched", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    return (vm(lambda a: a @ y.T)(x), vm(lambda a, b: lib.outer(a, b))(x, y),
            vm(lambda a: lib.dot(a, a))(x),
            vm(lambda w: y @ w, in_dims=1)(x.T.contiguous()))  # fmt: skip


# -- randomness -----------------------------------------------------------------------------


@case("randomness_error_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a + lib.rand(4))(x)


@case("randomness_error_like_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.randn_like(a))(x)


@case("randomness_error_dropout_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.nn.functional.dropout(a, 0.5, training=True))(x)


@case("randomness_error_dropout_eval_runs", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.nn.functional.dropout(a, 0.5, training=False))(x)


@case("randomness_invalid_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, randomness="garbage")(x)


@case("randomness_same", X)
def _(lib, x):
    out = lib.func.vmap(lambda a: lib.rand(4) + a * 0, randomness="same")(x)
    rows = lib.func.vmap(lambda a: lib.rand_like(a), randomness="same")(x)
    return out.shape, (out == out[0]).all(), (rows == rows[0]).all(), out.dtype


@case("randomness_different", X)
def _(lib, x):
    out = lib.func.vmap(lambda a: lib.rand(4) + a * 0, randomness="different")(x)
    rows = lib.func.vmap(lambda a: lib.randn_like(a), randomness="different")(x)
    return out.shape, (out[0] != out[1]).any(), (rows[0] != rows[2]).any()


@case("randomness_different_unbatched_input", X)
def _(lib, x):
    # the random op's tensor input is unmapped: each example draws its own values all the same
    out = lib.func.vmap(lambda a: lib.rand_like(x[0]) + a * 0, randomness="different")(x)
    return out.shape, (out[0] != out[1]).any()


IMG = np.ones((4, 3, 3, 6, 6), f32)  # a batch of 4: batches of 3 images, 3 channels, 6 x 6


def _slices(lib, out):
    """(shape, dtype, whether all slices along the first dim are equal, whether no two are)."""
    rows = out.reshape(out.shape[0], -1)
    same = (rows[:, None] == rows[None]).all(-1)
    off_diagonal = same & ~lib.eye(out.shape[0], dtype=lib.bool)
    return tuple(out.shape), out.dtype, same.all(), ~off_diagonal.any()


_FACTORIES = {
    "randn": lambda lib, g: lib.randn(3, 3, generator=g),
    "rand": lambda lib, g: lib.rand(3, 3, generator=g),
    "randint_high": lambda lib, g: lib.randint(100, (3, 3), generator=g),
    "randint_low_high": lambda lib, g: lib.randint(5, 100, (3, 3), generator=g),
    "normal": lambda lib, g: lib.normal(0.0, 1.0, (3, 3), generator=g),
    "randperm": lambda lib, g: lib.randperm(10, generator=g),
}
_LIKE = {
    "randint_like": lambda lib, t: lib.randint_like(t, 20),
    "randint_like_low": lambda lib, t: lib.randint_like(t, 0, 20),
    "rand_like": lambda lib, t: lib.rand_like(t),
    "randn_like": lambda lib, t: lib.randn_like(t),
    "dropout": lambda lib, t: lib.nn.functional.dropout(lib.ones_like(t), training=True),
    "alpha_dropout": lambda lib, t: lib.nn.functional.alpha_dropout(lib.ones_like(t),
                                                                    training=True),
    "dropout2d": lambda lib, t: lib.nn.functional.dropout2d(lib.ones_like(t), training=True),
    "feature_alpha_dropout": lambda lib, t: lib.nn.functional.feature_alpha_dropout(
        lib.ones_like(t), training=True),
}  # fmt: skip
_INPLACE = {
    "random_": lambda t: t.random_(),
    "random_from_to": lambda t: t.random_(-5, 100),
    "normal_": lambda t: t.normal_(),
    "bernoulli_": lambda t: t.bernoulli_(),
}


def _random_case(name, build, randomness, generator=False):
    @case(f"randomness_{randomness}_{name}{'_generator' if generator else ''}", X)
    def _(lib, x):
        lib.manual_seed(0)
        g = lib.Generator().manual_seed(7) if generator else None
        out = lib.func.vmap(lambda a: build(lib, g), randomness=randomness)(x[:, 0])
        return _slices(lib, out)


for _name, _build in _FACTORIES.items():
    for _mode in ("error", "same", "different"):
        _random_case(_name, _build, _mode)
    _random_case(_name, _build, "different", generator=True)


def _like_case(name, build, randomness, where):
    @case(f"randomness_{randomness}_{name}_{where}", IMG)
    def _(lib, img):
        lib.manual_seed(0)
        passed = {"first": img, "last": img.movedim(0, -1), "none": img[0]}[where]
        in_dims = ({"first": 0, "last": -1, "none": None}[where], 0)
        out = lib.func.vmap(lambda t, _: build(lib, t), in_dims=in_dims,
                            randomness=randomness)(passed, img[:, 0, 0, 0, 0])  # fmt: skip
        return _slices(lib, out)


for _name, _build in _LIKE.items():
    for _mode in ("error", "same", "different"):
        for _where in ("first", "last", "none") if _mode != "error" else ("first",):
            _like_case(_name, _build, _mode, _where)


def _inplace_random_case(name, fill, randomness, where):
    @case(f"randomness_{randomness}_{name}_{where}", IMG)
    def _(lib, img):
        lib.manual_seed(0)
        passed = {"first": img, "last": img.movedim(0, -1), "none": img[0]}[where].clone()
        in_dims = ({"first": 0, "last": -1, "none": None}[where], 0)
        out = lib.func.vmap(lambda t, _: fill(t) * 1, in_dims=in_dims,
                            randomness=randomness)(passed, img[:, 0, 0, 0, 0])  # fmt: skip
        return _slices(lib, out)


for _name, _fill in _INPLACE.items():
    for _mode, _where in (("error", "first"), ("same", "first"), ("same", "none"),
                          ("different", "first"), ("different", "last"),
                          ("different", "none")):  # fmt: skip
        _inplace_random_case(_name, _fill, _mode, _where)


def _grad_dropout_case(randomness):
    @case(f"randomness_{randomness}_vmap_of_grad_with_dropout", IMG)
    def _(lib, img):
        lib.manual_seed(0)
        w = lib.ones(6)

        def loss(weight, x):
            return lib.nn.functional.dropout(x * weight, 0.5, training=True).sum()

        xs = img[:, 0, 0, 0]  # (4, 6)
        out = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0), randomness=randomness)(w, xs)
        return _slices(lib, out)


for _mode in ("error", "same", "different"):
    _grad_dropout_case(_mode)


@case("randomness_different_with_chunk_size", X)
def _(lib, x):
    lib.manual_seed(0)
    out = lib.func.vmap(lambda a: lib.rand(8) + a.sum() * 0, randomness="different",
                        chunk_size=2)(lib.zeros(6, 2))  # fmt: skip
    return _slices(lib, out)


SCENARIOS.xfail.update(
    {
        "is_contiguous_of_a_strided_example": (
            "torch's example of a batch mapped at its last dim is not contiguous (the"
            " batch's strides); kiln's example is a value of its own"
        ),
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_vmap_ops_and_randomness_match_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
