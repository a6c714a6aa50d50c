"""PyTorch's own vmap tests (test/functorch/test_vmap.py) as an oracle: their behaviours, each
written here as a scenario of its own (pt_oracle.py runs it on torch and on kiln, eagerly and
under `kn.compile`, and compares values, dtypes, shapes and exception types): in_dims and
out_dims in their forms (ints, negative, None, nested tuples and dicts), nested vmap,
chunk_size, keyword arguments, ops with dim arguments (dims are the per-example ones), the
refusals (outputs that are not tensors, mapped sizes that differ, in_dims that do not fit
the inputs), randomness, in-place ops on batched and unbatched tensors, .item() and
data-dependent control flow. test_port_hunt8_func.py has the tutorials' programs.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Scenarios

f32 = np.float32
RNG = np.random.default_rng(13)
X = RNG.normal(size=(3, 4)).astype(f32)
Y = RNG.normal(size=(3, 4)).astype(f32)
V = RNG.normal(size=(4,)).astype(f32)
X3 = RNG.normal(size=(2, 3, 4)).astype(f32)
IX = np.arange(12, dtype=np.int64).reshape(3, 4)
S = np.array(1.5, f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case


# -- in_dims and out_dims -------------------------------------------------------------------


@case("single_and_multiple_inputs", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    return vm(lib.sin)(x), vm(lib.mul)(x, y), vm(lambda a, b: a @ b)(x, y)


@case("multiple_outputs_tuple_and_list", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    return vm(lambda a, b: (a * b, a + b))(x, y), vm(lambda a: [a.sum(), a * 2])(x)


@case("in_dims_nonzero_and_negative", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    return (vm(lambda a: a * 2, in_dims=1)(x), vm(lambda a: a.sum(), in_dims=-1)(x),
            vm(lambda a, b: a + b, in_dims=(1, 0))(x, y.T.contiguous()))  # fmt: skip


@case("in_dims_none", X, V)
def _(lib, x, v):
    vm = lib.func.vmap
    return vm(lambda a, b: a * b, in_dims=(0, None))(x, v), vm(lambda a, b: a - b, (None, 0))(v, x)


@case("in_dims_nested_tuple", X, Y, V)
def _(lib, x, y, v):
    def f(pair, w):
        return pair[0] * pair[1] + w

    return lib.func.vmap(f, in_dims=((0, 1), None))((x, y.T.contiguous()), v)


@case("in_dims_dict", X, Y, V)
def _(lib, x, y, v):
    def f(d):
        return d["a"] * d["b"] + d["c"]

    return lib.func.vmap(f, in_dims=({"a": 0, "b": 1, "c": None},))(
        {"a": x, "b": y.T.contiguous(), "c": v}
    )


@case("in_dims_dict_argument_all_mapped", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda d: d["a"] - d["b"])({"a": x, "b": y})


@case("out_dims_int_and_negative", X3)
def _(lib, x):
    vm = lib.func.vmap
    return (vm(lambda a: a * 2, out_dims=1)(x), vm(lambda a: a + 1, out_dims=-1)(x),
            vm(lambda a: a.sum(0), out_dims=1)(x))  # fmt: skip


@case("out_dims_tuple_per_output", X)
def _(lib, x):
    return lib.func.vmap(lambda a: (a * 2, a + 1), out_dims=(1, 0))(x)


@case("out_dims_none_unbatched_output", X, V)
def _(lib, x, v):
    # an output that does not depend on the mapped input, returned as it is with out_dims None
    return lib.func.vmap(lambda a: v * 2, out_dims=None)(x)


@case("out_dims_none_mixed", X, V)
def _(lib, x, v):
    return lib.func.vmap(lambda a: (a * 2, v + 1), out_dims=(0, None))(x)


@case("out_dims_none_batched_output_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a * 2, out_dims=None)(x)


@case("out_dims_dict_output", X)
def _(lib, x):
    out = lib.func.vmap(lambda a: {"s": a.sin(), "c": a.cos()}, out_dims={"s": 0, "c": 1})(x)
    return out["s"], out["c"]


@case("dict_output", X)
def _(lib, x):
    out = lib.func.vmap(lambda a: {"s": a.sum(), "d": a * 2})(x)
    return sorted(out), out["s"], out["d"]


@case("out_dims_count_mismatch_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x)


@case("out_dims_out_of_range_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, out_dims=3)(x)


@case("out_dims_wrong_type_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, out_dims="x")(x)


@case("unmapped_output_expanded", X, V)
def _(lib, x, v):
    # an output that does not depend on the mapped input is expanded over the batch
    return lib.func.vmap(lambda a: v * 2)(x), lib.func.vmap(lambda a: lib.ones(2))(x)


@case("constant_function", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.tensor(3.25))(x)


@case("output_is_input", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a)(x), lib.func.vmap(lambda a: a, in_dims=1)(x)


@case("keyword_arguments_unmapped", X, V)
def _(lib, x, v):
    def f(a, *, scale, shift=0.0):
        return a * scale + shift

    return lib.func.vmap(f)(x, scale=v), lib.func.vmap(f)(x, scale=2.0, shift=v)


@case("non_tensor_arguments_unmapped", X)
def _(lib, x):
    return lib.func.vmap(lambda a, k, flag: a * k if flag else a, in_dims=(0, None, None))(
        x, 3.0, True
    )


@case("integer_and_bool_inputs", IX)
def _(lib, i):
    vm = lib.func.vmap
    return vm(lambda a: a * 2)(i), vm(lambda a: a.sum())(i), vm(lambda a: a > 4)(i)


@case("chunk_size", X3)
def _(lib, x):
    vm = lib.func.vmap
    return (vm(lambda a: a.sin().sum(0), chunk_size=1)(x), vm(lambda a: a * 2, chunk_size=5)(x),
            vm(lambda a: a.T, in_dims=2, chunk_size=3)(x))  # fmt: skip


@case("chunk_size_zero_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, chunk_size=0)(x)


@case("chunk_size_negative_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, chunk_size=-1)(x)


@case("out_dims_per_output_forms", X3, X3)
def _(lib, x, y):
    vm = lib.func.vmap
    return (vm(lambda a, b: (a, a * b, a * b * b), out_dims=1)(x, y),
            vm(lambda a, b: (a, a, a, a * b), out_dims=(-1, 0, 1, 2))(x, y),
            vm(lambda a: a, out_dims=(1,))(x), vm(lambda a: a, in_dims=2, out_dims=1)(x),
            vm(vm(lambda a: a * 2, 1, 1), 1, 1)(x))  # fmt: skip


@case("out_dims_none_non_tensor_outputs", X)
def _(lib, x):
    x = x.clone()

    def f(a):
        a.add_(1)
        return None, "hello world"

    vm = lib.func.vmap
    return (vm(lambda a: (a, "hello world"), out_dims=(0, None))(x),
            vm(f, out_dims=(None, None))(x), x,
            vm(lambda a: "hello", out_dims=None)(x))  # fmt: skip


@case("out_dims_none_new_tensor", X)
def _(lib, x):
    vm = lib.func.vmap
    return vm(lambda a: lib.arange(3))(x), vm(lambda a: lib.arange(3), out_dims=None)(x)


@case("pytree_outputs_and_out_dims", X)
def _(lib, x):
    vm = lib.func.vmap

    def f(a):
        y = a.sin()
        return y, (y, y), [y, (y, y)]

    def g(a):
        y = a.sin()
        return y, (y, y)

    return (vm(f)(x), vm(g, out_dims=(0, (0, 1)))(x), vm(g, out_dims=1)(x),
            vm(g, out_dims=(0, 1))(x))  # fmt: skip


@case("ordered_dict_output", X)
def _(lib, x):
    import collections

    out = lib.func.vmap(lambda t: collections.OrderedDict([("sin", t.sin()), ("cos", t.cos())]))(x)
    return type(out).__name__, list(out), out["sin"], out["cos"]


@case("out_dims_str_in_tuple_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, out_dims=("lol",))(x)


@case("out_dims_too_many_for_one_output_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, out_dims=(0, 0))(x)


@case("out_dims_too_few_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: (a, a, a), out_dims=(0, 0))(x)


@case("out_dims_too_negative_raises", X3)
def _(lib, x):
    return lib.func.vmap(lambda a: a, out_dims=-4)(x)


@case("nested_in_dims_and_out_dims", X3, X)
def _(lib, x3, x):
    vm = lib.func.vmap
    y = x3.permute(2, 0, 1).contiguous()  # (4, 2, 3)
    z = x3[0]  # (3, 4)
    return (vm(vm(vm(lib.mul), (1, 0)), (1, 2))(x3.permute(1, 2, 0), x3.permute(2, 1, 0)),
            vm(lib.mul, (-1, -1))(x, x), vm(lambda b: vm(lambda a: a * b, out_dims=1)(z),
                                            out_dims=-1)(y[0]),
            vm(lambda t: vm(lambda a: a, out_dims=-1)(t), out_dims=-1)(y))  # fmt: skip


@case("nested_inputs_forms", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    f = lambda z: z[0] + z[1]  # noqa: E731
    return (vm(f)((x, y)), vm(f, in_dims=(0,))((x, y)), vm(f, in_dims=((0, 0),))((x, y)),
            vm(f)([x, y]), vm(f, in_dims=([0, 0],))([x, y]),
            vm(lambda z: z["x"] + z["y"], in_dims=({"x": 0, "y": 0},))({"x": x, "y": y}),
            vm(lambda z: z["x"][0] + z["x"][1][0] + z["y"][0] + z["y"][1])(
                {"x": [x, (x,)], "y": [y, y]}))  # fmt: skip


@case("in_dims_list_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lib.mul, [0, 0])(x, y)


@case("in_dims_set_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lib.mul, {0})(x, y)


@case("in_dim_int_for_number_in_tuple_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda z: z[0] * z[1])((x, 2.0))


@case("in_dims_list_for_list_argument_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda z: z[0] + z[1], in_dims=[0, 0])([x, y])


@case("in_dims_short_list_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda z: z[0] + z[1], in_dims=([0],))([x, y])


@case("in_dims_too_many_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lib.mul, (0, 0, 0))(x, y)


@case("in_dim_int_for_int_in_list_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda z: z[0] + z[1], in_dims=([0, 0],))([x, 1])


@case("out_argument_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda a, b: lib.abs(a, out=b))(x, y)


@case("non_tensor_op_result_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lib.equal)(x, y)


@case("in_dim_tuple_on_0d_raises", S)
def _(lib, s):
    return lib.func.vmap(lambda a: a * a, in_dims=(0,))(s)


@case("in_dim_too_negative_in_tuple_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a * a, in_dims=(-3,))(x)


@case("in_dim_out_of_range_in_list_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda z: z[0] + z[1], in_dims=([3, 0],))([x, y])


@case("zero_size_batch", X)
def _(lib, x):
    empty = x[:0]
    return lib.func.vmap(lib.sin)(empty), lib.func.vmap(lambda a: a.sum())(empty)


@case("ops_with_in_dims_and_multiple_returns", X3, X)
def _(lib, x3, x):
    vm = lib.func.vmap
    y = x3.permute(2, 0, 1).contiguous()  # (4, 2, 3)
    return (vm(lib.copysign, (2, 0))(x3, y), vm(vm(lib.copysign), (2, 0))(x3, y),
            vm(lib.var_mean)(x), vm(vm(lib.var_mean))(x3))  # fmt: skip


@case("inplace_method_mapped", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    a = x.clone().clamp(-0.9, 0.9)
    r = vm(lib.Tensor.acos_)(a)
    b = x.clone().clamp(-0.9, 0.9)
    r2 = vm(lib.Tensor.acos_, out_dims=(1,))(b)
    c = x.clone()
    vm(lib.Tensor.atan2_, (1, 0))(c, y.T.contiguous())
    d = x3 = x.reshape(3, 2, 2).clone()
    vm(vm(lib.Tensor.mul_))(d, x3 * 0 + 2)
    return r, a, r2, b, c, d


@case("autograd_grad_inside_vmap", X, Y)
def _(lib, x, y):
    leaf = x[0].clone().requires_grad_(True)

    def vjp_mul(v):
        return lib.autograd.grad([leaf * y[0]], [leaf], grad_outputs=[v])[0]

    return lib.func.vmap(vjp_mul)(lib.eye(4))


@case("partial_and_module", X, V)
def _(lib, x, v):
    import functools

    lin = lib.nn.Linear(4, 2, bias=False)
    lin.weight = lib.nn.Parameter(lib.tensor(np.arange(8, dtype=np.float32).reshape(2, 4)))
    return lib.func.vmap(functools.partial(lib.mul, v))(x), lib.func.vmap(lin)(x)


# -- nested vmap ----------------------------------------------------------------------------


@case("nested_same_dim", X, Y)
def _(lib, x, y):
    vm = lib.func.vmap
    return vm(vm(lib.mul))(x, y), vm(vm(lambda a: a * 2))(x)


@case("nested_different_dims", X, V)
def _(lib, x, v):
    vm = lib.func.vmap
    # the outer maps x's rows, the inner v's elements: an outer product shaped (3, 4, 4)
    return vm(lambda row: vm(lambda e: row * e)(v))(x)


@case("nested_in_dims", X3)
def _(lib, x):
    vm = lib.func.vmap
    return vm(vm(lambda a: a.sum(), in_dims=1), in_dims=2)(x)


@case("nested_noop_inner", X, V)
def _(lib, x, v):
    vm = lib.func.vmap
    return vm(lambda a: vm(lambda b: a.sum())(v))(x)


@case("nested_out_dims", X3)
def _(lib, x):
    vm = lib.func.vmap
    return vm(vm(lambda a: a * 2, out_dims=0), out_dims=1)(x)


# -- ops with dim arguments: the dims are the example's -------------------------------------


@case("dims_are_per_example", X3)
def _(lib, x):
    vm = lib.func.vmap
    return (vm(lambda a: a.sum(0))(x), vm(lambda a: a.sum(-1))(x), vm(lambda a: a.mean(1))(x),
            vm(lambda a: a.softmax(-1))(x), vm(lambda a: a.transpose(0, 1))(x),
            vm(lambda a: a.unsqueeze(0))(x), vm(lambda a: a.flatten())(x),
            vm(lambda a: a.max(0).values)(x), vm(lambda a: a.argmax(-1))(x),
            vm(lambda a: a.cumsum(1))(x), vm(lambda a: a.view(-1))(x),
            vm(lambda a: a.reshape(2, 6))(x), vm(lambda a: a[1])(x), vm(lambda a: a[:, 1:3])(x),
            vm(lambda a: lib.cat([a, a], 1))(x), vm(lambda a: lib.stack([a, a], -1))(x),
            vm(lambda a: a.permute(1, 0))(x), vm(lambda a: a.sum())(x),
            vm(lambda a: a.shape[0] * a)(x), vm(lambda a: a.size(1) * a)(x),
            vm(lambda a: lib.tensor(a.dim()))(x))  # fmt: skip


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


# -- refusals -------------------------------------------------------------------------------


@case("non_tensor_output_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: 3.25)(x)


@case("non_tensor_output_in_list_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: [a, 3.25])(x)


@case("none_output_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: None)(x)


@case("different_mapped_sizes_raise", X, V)
def _(lib, x, v):
    return lib.func.vmap(lambda a, b: a + b)(x, v)


@case("no_inputs_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda: x)()


@case("no_tensor_inputs_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a)(3.0)


@case("in_dims_all_none_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, in_dims=(None,))(x)


@case("in_dims_too_few_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda a, b: a + b, in_dims=(0,))(x, y)


@case("in_dims_wrong_type_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, in_dims="0")(x)


@case("in_dims_float_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, in_dims=0.0)(x)


@case("in_dim_int_for_non_tensor_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a, k: a * k, in_dims=(0, 0))(x, 2.0)


@case("in_dims_tuple_for_tensor_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, in_dims=((0, 0),))(x)


@case("in_dims_tree_mismatch_raises", X, Y)
def _(lib, x, y):
    return lib.func.vmap(lambda p: p[0] + p[1], in_dims=((0, 0, 0),))((x, y))


@case("in_dim_out_of_range_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a, in_dims=2)(x)


@case("in_dim_negative_out_of_range_raises", V)
def _(lib, v):
    return lib.func.vmap(lambda a: a, in_dims=-2)(v)


@case("in_dim_on_0d_raises", S)
def _(lib, s):
    return lib.func.vmap(lambda a: a)(s)


@case("item_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a.sum().item())(x)


@case("data_dependent_control_flow_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a * 2 if a.sum() > 0 else a)(x)


@case("tolist_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.tensor(a.tolist()))(x)


@case("nonzero_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: a.nonzero())(x)


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


# -- in-place ops ---------------------------------------------------------------------------


@case("inplace_on_batched", X, Y)
def _(lib, x, y):
    def f(a, b):
        a = a.clone()
        a.mul_(b)
        a.add_(1.0)
        return a

    return lib.func.vmap(f)(x, y)


@case("inplace_batched_into_unbatched_raises", X, V)
def _(lib, x, v):
    def f(a, b):
        return b.clone().add_(a)  # b is not mapped, a is

    return lib.func.vmap(f, in_dims=(0, None))(x, v)


@case("inplace_unbatched_into_batched", X, V)
def _(lib, x, v):
    def f(a, b):
        return a.clone().add_(b)

    return lib.func.vmap(f, in_dims=(0, None))(x, v)


@case("inplace_changes_input", X, Y)
def _(lib, x, y):
    x = x.clone()
    lib.func.vmap(lambda a, b: a.mul_(b))(x, y)
    return x


@case("inplace_on_view_of_batched", X)
def _(lib, x):
    def f(a):
        a = a.clone()
        a[1:3].mul_(10)
        return a

    return lib.func.vmap(f)(x)


@case("inplace_index_put_unbatched_raises", X, V)
def _(lib, x, v):
    def f(a):
        out = lib.zeros(4)
        out[0] = a.sum()
        return out

    return lib.func.vmap(f)(x)


@case("inplace_copy_into_new_tensor_raises", X)
def _(lib, x):
    return lib.func.vmap(lambda a: lib.zeros(4).copy_(a))(x)


@case("new_tensor_factories_unbatched", X)
def _(lib, x):
    vm = lib.func.vmap
    return (vm(lambda a: lib.zeros_like(a))(x), vm(lambda a: a.new_ones(2))(x),
            vm(lambda a: lib.arange(3) * a.sum())(x),
            vm(lambda a: lib.ones_like(a, dtype=lib.int32))(x))  # fmt: skip


@case("batch_norm_training_running_stats_raises", X3)
def _(lib, x):
    return lib.func.vmap(lib.nn.BatchNorm1d(4))(x.reshape(2, 3, 4))


@case("batch_norm_eval_and_without_stats", X3)
def _(lib, x):
    xb = x.reshape(2, 3, 4)
    return (lib.func.vmap(lib.nn.BatchNorm1d(4).eval())(xb),
            lib.func.vmap(lib.nn.BatchNorm1d(4, track_running_stats=False))(xb))  # fmt: skip


@case("backward_through_vmap_to_captured_leaf", X, V)
def _(lib, x, v):
    # the mapped function reads a leaf that requires grad from its closure: backward through
    # vmap's result reaches it and the mapped input (kiln's raised GraphError: 'a Tensor that
    # requires grad is used in graph mode')
    a, w = x.clone().requires_grad_(True), v.clone().requires_grad_(True)
    y = lib.func.vmap(lambda r: (r.sin() * w).sum())(a)
    (y * lib.arange(3.0)).sum().backward()
    a2 = x.clone().requires_grad_(True)
    lib.func.vmap(lib.func.grad(lambda r: (r**3 * w).sum()))(a2).sum().backward()
    jac = lib.func.jacrev(lambda r: r.sin() * w)(x[0])
    (g,) = lib.autograd.grad(jac.sum(), w)
    return y, a.grad, w.grad, a2.grad, g


_SCALE, _C = 2.0, None  # what the next scenario's function reads as module globals


def _read_globals(a):
    return a * _SCALE + _C


@case("reused_transform_sees_global_changes", X, V)
def _(lib, x, v):
    # a vmap made once and called again after the global number and the global tensor its
    # function reads changed: its compiled form traces again
    global _SCALE, _C
    _SCALE, _C = 2.0, v.clone()
    f = lib.func.vmap(_read_globals)
    first = f(x)
    _SCALE = 3.0
    _C.add_(10.0)
    try:
        return first, f(x)
    finally:
        _SCALE, _C = 2.0, None


# -- dtypes of results -----------------------------------------------------------------------


@case("dtypes_preserved", X, IX)
def _(lib, x, i):
    vm = lib.func.vmap
    return (vm(lambda a, b: a * b)(x.double(), i), vm(lambda a: a.half() * 2)(x),
            vm(lambda a, b: a + b)(i, i.int()), vm(lambda a: a / 2)(i),
            vm(lambda a, s: a * s, in_dims=(0, None))(i, 2.5))  # fmt: skip


@case("scalar_tensor_unmapped_promotion", X, S)
def _(lib, x, s):
    return lib.func.vmap(lambda a, b: a * b, in_dims=(0, None))(x.half(), s)


@case("index_put_forms", X, Y)
def _(lib, x, y):
    idx = lib.tensor([2, 0])

    def f(a, b):
        a = a.clone()
        a[idx] = b[:2]  # an index tensor not mapped, batched values
        a[1:] += 1.0
        a[3] = 5.0
        return a

    def g(a):
        return lib.zeros(2, 4).index_put((lib.tensor([1]),), a)  # out of place: batched result

    return lib.func.vmap(f)(x, y), lib.func.vmap(g)(x)


@case("index_put_batched_index", X, IX)
def _(lib, x, i):
    def f(a, j):
        a = a.clone()
        a[j % 4] = 0.0
        return a

    return lib.func.vmap(f)(x, i[:, :2])


SCENARIOS.eager_only.update(
    {
        name: "requires_grad_ of a traced value has no meaning in a trace"
        for name in ("backward_through_vmap_to_captured_leaf", "autograd_grad_inside_vmap")
    }
)
SCENARIOS.xfail.update(
    {
        "is_contiguous_of_a_strided_example": "torch's example of a batch mapped at its last "
        "dim is not contiguous (the batch's strides); kiln's example is a value of its own",
        "out_argument_raises": "torch's vmap refuses an out= op (RuntimeError); kiln writes the "
        "batch into the mapped out tensor",
        "non_tensor_op_result_raises": "torch's vmap refuses torch.equal (it returns a bool, "
        "RuntimeError); kiln gives each example's bool, a tensor of the batch",
        "index_put_batched_index": "torch writes each example at its own index; kiln's "
        "index_put has no batching rule for a batched index tensor (GraphError)",
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_vmap_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
