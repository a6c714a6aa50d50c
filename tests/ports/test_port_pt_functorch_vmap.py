"""PyTorch's own vmap tests (test/functorch/test_vmap.py) as an oracle: their behaviours, each
written here as a scenario of its own (pt_oracle.py runs it on torch and on kiln, eagerly and
under `kn.compile`, and compares values, dtypes, shapes and exception types): in_dims and
out_dims in their forms (ints, negative, None, nested tuples and dicts), nested vmap,
chunk_size, keyword arguments, ops with dim arguments (dims are the per-example ones), the
refusals (outputs that are not tensors, mapped sizes that differ, in_dims that do not fit
the inputs), in-place ops on batched and unbatched tensors, .item() and data-dependent
control flow. test_port_pt_functorch_vmap_ops.py has the batteries of ops under vmap and
randomness; test_port_hunt8_func.py the tutorials' programs.

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
        "backward_through_vmap_to_captured_leaf": (
            "requires_grad_ of a traced value has no meaning in a trace"
        ),
        "autograd_grad_inside_vmap": "requires_grad_ of a traced value has no meaning in a trace",
    }
)
SCENARIOS.xfail.update(
    {
        "out_argument_raises": (
            "torch's vmap refuses an out= op (RuntimeError); kiln writes the batch "
            "into the mapped out tensor"
        ),
        "non_tensor_op_result_raises": (
            "torch's vmap refuses torch.equal (it returns a bool, RuntimeError); kiln"
            " gives each example's bool, a tensor of the batch"
        ),
        "index_put_batched_index": (
            "torch writes each example at its own index; kiln's index_put has no "
            "batching rule for a batched index tensor (GraphError)"
        ),
    }
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_vmap_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
