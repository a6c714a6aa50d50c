"""PyTorch's dynamo tests (test/dynamo/test_functions.py, test_misc.py) as an oracle, the
cases about results: a function compiled with `kn.compile` gives what it gives eagerly, and
what torch 2.13 gives eagerly (the oracle). Each scenario is plain torch code written against
a module argument (`torch` or `kiln`) and runs through pt_compile_common.check_calls: eagerly
and through one compiled function called again with new values, shapes, dtypes and Python
arguments (cache hits and retraces), comparing results, dtypes, shapes, the arguments after
the call and exception types. test_port_pt_compile_state.py has the scenarios about state:
globals, closures, modules, containers and tensors the function changes, random draws.
"""

import collections
import functools
import itertools

import numpy as np
import pytest
from pt_compile_common import Call, check_calls
from pt_oracle import Leaf

f32 = np.float32
A = np.arange(10, dtype=f32) - 3
B = np.linspace(-1, 2, 10).astype(f32)
C = np.arange(10, dtype=np.int64)
M = np.arange(20, dtype=f32).reshape(2, 10) / 7
H = A.astype(np.float16)
Pair = collections.namedtuple("Pair", "x y")

SCENARIOS = {}
XFAIL = {}


def case(name, *calls):
    def register(fn):
        assert name not in SCENARIOS, name
        SCENARIOS[name] = (fn, calls)
        return fn

    return register


# -- arithmetic with Python constants: promotion on the first and later calls --------------


@case("constants", (A, B, A), (C, C, C), (C, A, 2), (H, A, 1.5))
def _(lib, a, b, c):
    return a - b * c + 1.0, a - b * c + 1, 1 + 2 - 3 + a


@case("int_arithmetic", (C,), (A,), (C[:3],))
def _(lib, a):
    return a / 2, a // 3, a % 3, a**2, 2**a, a * 0.5, -a, abs(a), a + True


@case("add_alpha_addcdiv", (A, B), (A, C))
def _(lib, a, b):
    return a.clone().add_(b, alpha=5.0), lib.addcdiv(a, b, b + 3, value=5.0)


# -- None, defaults, kwargs, *args ----------------------------------------------------------


@case("is_not_none", (A, B), (A, None), (A,), Call(A, b=B), Call(b=None, a=M))
def _(lib, a, b=None):
    if a is not None and b is not None:
        return a + b
    return a * 2


@case("varargs_kwargs", (A, B), (A, B, A), Call(A, B, a=2), Call(A, a=B, b=3.0),
      Call(A, b=3.0, a=B))  # fmt: skip
def _(lib, *xs, **kw):
    r = sum(xs)
    for k in sorted(kw):
        r = r * kw[k]
    return r, len(xs), sorted(kw)


@case("python_scalar_args", (A, 2), (A, 3), (A, 2.5), (A, True), (A, -1), (C, 2.5))
def _(lib, x, s):
    return x * s, x + s, s * 2, x / s


@case("numpy_scalar_args", (C, np.float64(2.5)), (A, np.float64(2.5)), (C, np.int32(3)),
      (H, np.float32(2.5)), (A, np.float64(-0.0)), (A, np.float64(0.0)))  # fmt: skip
def _(lib, x, s):
    # a NumPy scalar promotes as a Python number: int64 * np.float64 is float32 (compiled, it
    # was a float64 0-d input: float64)
    return x * s, x + s, x / s


@case("shape_and_dtype_args", (A, (2, 5), "int32"), (A, (5, 2), "float64"), (A, (10,), "bool"),
      (A, (3, 3), "int32"))  # fmt: skip
def _(lib, x, shape, dtype):
    return x.to(getattr(lib, dtype)), x.reshape(shape)


@case("slice_args", (A, slice(1, 4)), (A, slice(None, None, 3)), (M, slice(1, None)),
      (A, slice(1, 4)))  # fmt: skip
def _(lib, x, s):
    # (compiled: ArgumentTypeError, "a slice, neither an array nor hashable")
    return x[s], x[..., s]


@case("string_and_none_args", (A, "a", None), (A, "b", None), (A, "a", 1))
def _(lib, x, s, n):
    return x + 1 if s == "a" and n is None else x - 1


# -- containers in and out ------------------------------------------------------------------


@case("namedtuple_in_out", (Pair(A, B),), (Pair(M, M),), (Pair(C, A),))
def _(lib, p):
    return Pair(p.y * 2, p.x + p.y), p.x.shape, len(p)


@case("dict_in_out", ({"a": A, "b": B},), ({"b": C, "a": A},), ({"a": A, "b": B, "c": M},))
def _(lib, d):
    out = {k: v * 2 for k, v in sorted(d.items())}
    out["n"] = len(d)
    return out


@case("list_tuple_in_out", ([A, B],), ([A, B, C],), ((A,),))
def _(lib, xs):
    ys = [x + i for i, x in enumerate(xs)]
    return ys, tuple(reversed(ys)), sum(ys), max(len(xs), 2)


@case("return_python_values", (A,), (M,))
def _(lib, x):
    return (None, 1, 2.5, "s", True, x.shape, x.dtype, [x.size(0)], {"a": (x,)}, x.ndim,
            x.numel(), x.dim(), len(x), x.is_floating_point(), x.element_size())  # fmt: skip


@case("dict_kwargs_ordered", (A,))
def _(lib, x):
    z = dict(text_embed=x + 1, other=x + 2)
    return z, collections.OrderedDict(sample=lib.ones(10))


@case("dict_ops", (A, B))
def _(lib, a, b):
    tmp = {"a": a + 1, "b": b + 2}
    assert tmp.get("zzz") is None
    v = tmp.pop("b") + tmp.get("a") + tmp.get("missing", 3) + tmp.pop("missing", 4)
    tmp.update({"d": 3})
    tmp["c"] = v + tmp["d"]
    if "c" in tmp and "missing" not in tmp:
        return tmp["c"] - tmp["a"] + len(tmp)
    return None


@case("list_ops", (A, B))
def _(lib, a, b):
    ll = [a, b]
    ll.append(a + 1)
    ll.extend([b + 2, a + b])
    ll.pop(-1)
    ll.pop(0)
    ll.pop()
    v1, v2 = ll
    return v1 - v2, tuple(ll), ll[1:], [a, b][lib.as_tensor(1)]


@case("deque", (A, B))
def _(lib, a, b):
    d = collections.deque([a, b])
    d.append(a + 1)
    d.extend([a, b])
    d.insert(0, "foo")
    tmp = d.pop()
    d.extendleft(collections.deque([tmp]))
    d[2] = "setitem"
    d.append(d.popleft())
    return list(d)


# -- Python control flow on shapes, dtypes and Python values --------------------------------


@case("shape_control", (A,), (M,), (C,), (np.ones(4, f32),), (np.ones((3, 0), f32),))
def _(lib, x):
    r = x
    if x.shape[0] == 10:
        r = r + 1
    for _ in range(x.size(0) % 4 + 1):
        r = r / 2
    return r, x.numel(), x.dim(), len(x), x.size(), x.shape[-1]


@case("dtype_control", (A, B), (C, B), (H, B), (A.astype(np.float64), B))
def _(lib, a, b):
    if a.dtype == lib.float16:
        return a + 10
    if a.dtype == lib.float32:
        return a - b * 32
    if a.dtype == lib.promote_types(lib.int32, lib.float32):
        return a
    return a.to(lib.float32), lib.is_floating_point(a), lib.is_complex(a), a.is_complex()


@case("finfo_iinfo", (A, B), (A.astype(np.float64), B), (H, B))
def _(lib, a, b):
    if lib.iinfo(lib.int32).bits == 32:
        return lib.finfo(a.dtype).min * b, lib.finfo(a.dtype).eps + b, a + np.iinfo(np.int16).max
    return None


@case("view_shapes", (M,))
def _(lib, x):
    s = x.size()[:-1] + (2, 5)
    return (x.view(*s).permute(0, 2, 1), x.view(s).shape, lib.ones_like(x.T),
            lib.ones_like(x.mT), x.is_sparse, x.is_cuda)  # fmt: skip


@case("slices_unpack", (A,), (B,))
def _(lib, a):
    x, y = a[:5], a[5:]
    u, v = [a[:5], a[5:]]
    return (x - y, u * v, a[5], a[2:5], a[::2], lib.unsqueeze(a, 0)[:, 2:], a[-1],
            a[..., None])  # fmt: skip


@case("tensor_of_range_and_sizes", (A,), (M,))
def _(lib, a):
    return lib.tensor(range(a.size(0))), lib.tensor([a.shape[0], 2]), lib.arange(len(a))


@case("len_of_tensors_and_literals", (A, B), (M, M))
def _(lib, a, b):
    return a + b + len(a) + b.__len__(), len((1, 2, 3)) + len("test str")


@case("list_compare_inplace_python", (A,), (np.arange(3, dtype=np.float64),))
def _(lib, x):
    for a, b, c in [[(1, 2, 3), (1, 2, 3), 7.77], [(1, 4, 3), (1, 2, 3), 3.33],
                    [(1, 2), (1, 2, 3), 5.55]]:  # fmt: skip
        if a != b:
            x += 1 * c
        if a < b:
            x += 4 * c
        if a >= b:
            x += 32 * c
    return x


# -- comprehensions, generators, itertools, closures defined inside ------------------------


@case("comprehensions_generators", (A,), (C,), (M,))
def _(lib, a):
    g = (a * i for i in range(3))
    return (lib.stack(list(g)), [a.shape[0] * k for k in range(2)],
            lib.cat([a[i : i + 2] for i in range(0, a.shape[0], 2)]),
            {i: a[i] for i in range(2)}, min(a.shape), max(a.shape[0], 3))  # fmt: skip


@case("build_list_unpack", (A, B), (M, M))
def _(lib, a, b):
    it1 = (x + 1 for x in (a, b))
    it2 = (x - 1 for x in (a, b))
    return lib.cat([*it1, *it2], dim=-1)


@case("itertools", (A, B))
def _(lib, a, b):
    v = a
    for x, i in itertools.product([a, b], [1, 2]):
        v = v + x * i
    for x in itertools.chain([a, b], [1, 2]):
        v = v + x
    combs = [lib.ones(size) for size in itertools.combinations((1, 2, 3), 2)]
    zipped = list(itertools.zip_longest([1, 2, 3], ["a", "b"], fillvalue=None))
    return v, combs, zipped, [x * y for x, y in zip((a, b), (2, 3))]


@case("partial_and_inner_functions", (A, B))
def _(lib, a, b):
    clip01 = functools.partial(lib.clip, min=0.0, max=1.0)

    def inner(x):
        return lib.add(x, x)

    return clip01(a + b), inner(a), (lambda t: t.sub(b))(a), a.sub(*(b,), **{})


@case("nonlocal_inner_function", (A, B))
def _(lib, x, y):
    x = x + y + 1.0

    def inner(z):
        nonlocal x, y
        y = x + z + 20.0
        x = y + z + 10.0

    inner(2.0)
    inner(3.0)
    return x, y


@case("modules_made_inside", (M, M))
def _(lib, x, y):
    return (lib.nn.Softmax(dim=-1)(x + y * 2),
            lib.nn.functional.avg_pool2d(lib.unsqueeze(x, 0) * lib.unsqueeze(y, 1),
                                         kernel_size=2, padding=1))  # fmt: skip


# -- .item(), .tolist() returned; the traced value's autograd attributes ---------------------


@case("item_tolist_returned", (A,), (C,), (M,))
def _(lib, a):
    return a.sum().item(), a.tolist(), a[0].item(), a.max().item()


@case("tensor_of_traced_values", (A,), (C,), (M,))
def _(lib, x):
    # (compiled, kn.tensor refused the traced values: "the array of Symbol ... is not known")
    return (lib.tensor([x.sum(), x.max()]), lib.tensor([[x.min(), 1], [2, x.max()]]),
            lib.tensor((x.sum().long(), 2)), lib.tensor([x.sum(), 1.5], dtype=lib.float64),
            lib.stack([x.sum(), x.min()]))  # fmt: skip


@case("item_as_index", (A,), (B,), (M,))
def _(lib, x):
    # (compiled: "only integers ... are valid indices, got TracedScalar"; (M,): IndexError)
    return x[x.argmax().item()], x[..., x.argmin().item()], x[x.argmin().item()] * 2


@case("is_leaf_and_grad_fn_inside", (A, A), (Leaf.of(A), A), (A, Leaf.of(A)))
def _(lib, x, w):
    # (compiled, both raised "has no autograd tape"; a grad_fn that is a node, and is_leaf of
    # an argument that requires grad, are still refused)
    y = x * 2
    with lib.no_grad():
        z = x * 3
    found = [y.is_leaf, z.is_leaf, z.grad_fn is None, y.detach().is_leaf,
             (y * w).detach().grad_fn is None, (y * w).is_leaf]  # fmt: skip
    if not x.requires_grad:
        found += [x.is_leaf, x.grad_fn is None, y.grad_fn is None]
    return found


@case("requires_grad_inside", (A, A), (Leaf.of(A), A), (A, Leaf.of(A)))
def _(lib, x, w):
    y = x * 2
    with lib.no_grad():
        z = x * 3
    with lib.enable_grad():
        u = x * 4
    d = (x * w).detach()
    return (x.requires_grad, y.requires_grad, z.requires_grad, u.requires_grad,
            d.requires_grad, (y + w).requires_grad)  # fmt: skip


# -- errors: the type torch raises ----------------------------------------------------------


@case("error_types", (A, M[:, :3]), (A, B))
def _(lib, x, y):
    try:
        return x + y
    except RuntimeError:  # (a shape mismatch caught inside, as eager code catches it)
        return x.sum() + y.sum()


@case("raise_inside", (A,), (A[:3],))
def _(lib, x):
    if x.shape[0] > 5:
        raise ValueError("too big")
    return x


@case("assert_inside", (M,), (A,))
def _(lib, x):
    assert x.dim() == 1, "1d only"
    return x


@case("shape_mismatch", (A, M[:, :3]))
def _(lib, x, y):
    return x + y


@case("matmul_mismatch", (M, M))
def _(lib, x, y):
    return x @ y


@case("index_out_of_range", (A,))
def _(lib, x):
    return x[20]


@case("inplace_on_leaf_that_requires_grad", (Leaf.of(A),))
def _(lib, x):
    return x.add_(1)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
        for n in sorted(SCENARIOS)
    ],  # fmt: skip
)
def test_scenario(name):
    torch = pytest.importorskip("torch")
    fn, calls = SCENARIOS[name]
    check_calls(torch, fn, calls)
