"""PyTorch's NumPy interop tests (test_numpy_interop.py) as an oracle: from_numpy, numpy(),
`__array__`, memory shared both ways, the dtype mapping, as_tensor and tensors of NumPy
scalars, each a scenario run on torch 2.13 and on kiln (`pt_oracle.Scenarios`, eager only:
NumPy memory is no graph's), comparing values, dtypes, shapes, sharing and exception types.

Expected values: torch 2.13 (the oracle).
"""

import numpy as np
import pytest
from pt_oracle import Scenarios
from pt_serial_common import check_like_torch

import kiln as kn

torch = pytest.importorskip("torch")

SCENARIOS = Scenarios()
case = SCENARIOS.case
NP_DTYPES = (np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int8, np.uint8,
             np.int16, np.int32, np.int64, np.bool_, np.uint16, np.uint32, np.uint64)  # fmt: skip


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


@case("from_numpy_dtype_table")
def _(lib):
    return [_name(lib.from_numpy(np.zeros(2, d)).dtype) for d in NP_DTYPES]


@case("numpy_dtype_table")
def _(lib):
    out = []
    for d in NP_DTYPES:
        out.append(str(lib.from_numpy(np.ones(2, d)).numpy().dtype))
    return out


@case("from_numpy_shares_both_ways")
def _(lib):
    a = np.arange(6.0).reshape(2, 3)
    t = lib.from_numpy(a)
    a[0, 0] = 10
    t[1, 2] = 20
    return t, a.tolist(), t.numpy().base is not None or np.shares_memory(t.numpy(), a)


@case("numpy_shares_with_tensor")
def _(lib):
    t = lib.zeros(3)
    n = t.numpy()
    n[1] = 5
    t.add_(1)
    return t, n.tolist()


@case("from_numpy_non_contiguous_shares")
def _(lib):
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = lib.from_numpy(a)
    a[2, 1] = -1
    return t, t.stride()


@case("from_numpy_negative_strides")
def _(lib):
    return lib.from_numpy(np.arange(5.0)[::-1])


@case("from_numpy_unsupported_dtype")
def _(lib):
    return lib.from_numpy(np.array(["a", "b"]))


@case("from_numpy_object_dtype")
def _(lib):
    return lib.from_numpy(np.array([1, "x"], dtype=object))


@case("from_numpy_not_an_array")
def _(lib):
    return lib.from_numpy([1, 2])


@case("from_numpy_zero_d_and_empty")
def _(lib):
    return lib.from_numpy(np.array(3.5)), lib.from_numpy(np.zeros((0, 2), np.int32))


@case("from_numpy_non_native_byte_order")
def _(lib):
    return lib.from_numpy(np.arange(3, dtype=">i4"))


@case("numpy_requires_grad_raises")
def _(lib):
    return lib.ones(2, requires_grad=True).numpy()


@case("numpy_force")
def _(lib):
    t = lib.ones(2, requires_grad=True)
    n = t.numpy(force=True)
    return n.tolist(), str(n.dtype)


@case("asarray_of_tensor")
def _(lib):
    t = lib.arange(4.0)
    a = np.asarray(t)
    a[0] = 9
    return t, str(np.asarray(lib.tensor([1, 2])).dtype), np.asarray(t, dtype=np.int64).tolist()


@case("asarray_requires_grad_raises")
def _(lib):
    return np.asarray(lib.ones(2, requires_grad=True))


@case("array_of_zero_d")
def _(lib):
    a = np.array(lib.tensor(2.5))
    return a.shape, str(a.dtype), float(a)


@case("tensor_plus_numpy_scalars")
def _(lib):
    t = lib.ones(2)
    i = lib.ones(2, dtype=lib.int32)
    return (t + np.float64(1.5), np.float64(1.5) + t, i + np.float64(0.5), i * np.int64(3),
            t * np.float32(2), i + np.int8(1), t + np.bool_(True))  # fmt: skip


@case("tensor_of_numpy_scalars")
def _(lib):
    return (lib.tensor(np.float64(1.5)), lib.tensor(np.int16(3)), lib.tensor(np.bool_(True)),
            lib.tensor([np.float32(1), np.float32(2)]), lib.tensor(np.float32(2.5)),
            lib.tensor([np.int64(1), 2]), lib.tensor(np.complex64(1 + 2j)))  # fmt: skip


@case("tensor_of_zero_d_arrays")
def _(lib):
    return lib.tensor(np.array(3, np.uint8)), lib.as_tensor(np.array(True))


@case("tensor_of_a_list_of_zero_d_arrays")
def _(lib):
    return lib.tensor([np.array(1.0), np.array(2.0)])


@case("tensor_of_array_copies")
def _(lib):
    a = np.ones(3, np.float32)
    t = lib.tensor(a)
    a[0] = 5
    return t


@case("as_tensor_shares_and_converts")
def _(lib):
    a = np.ones(3, np.float32)
    same = lib.as_tensor(a)
    other = lib.as_tensor(a, dtype=lib.float64)
    a[0] = 7
    return same, other, lib.as_tensor(a.astype(np.int64)).dtype


@case("as_tensor_of_tensor_is_it")
def _(lib):
    t = lib.ones(2)
    return lib.as_tensor(t) is t, lib.as_tensor(t, dtype=lib.float64).dtype


@case("numpy_scalar_comparisons_and_indexing")
def _(lib):
    t = lib.arange(5)
    return t[np.int64(2)], t[np.array([0, 3])], t > np.float32(1.5), t[True].shape


@case("index_by_numpy_bool")
def _(lib):
    return lib.arange(5)[np.bool_(True)]


@case("numpy_ufunc_on_tensor")
def _(lib):
    t = lib.tensor([1.0, 4.0])
    out = np.sqrt(t)
    return type(out).__name__, np.asarray(out).tolist()


@case("from_numpy_bool_and_float16_ops")
def _(lib):
    b = lib.from_numpy(np.array([True, False]))
    h = lib.from_numpy(np.array([1.5, 2.0], np.float16))
    return b & b, h * 2, b.sum()


@case("numpy_of_bfloat16_raises")
def _(lib):
    return lib.ones(2, dtype=lib.bfloat16).numpy()


@case("numpy_of_conj_raises")
def _(lib):
    return lib.tensor([1 + 2j]).conj().numpy()


@case("numpy_of_conj_resolved")
def _(lib):
    return lib.tensor([1 + 2j]).conj().resolve_conj().numpy().tolist()


@case("from_numpy_readonly_warns")
def _(lib):
    import warnings

    a = np.ones(2)
    a.flags.writeable = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = lib.from_numpy(a)
    return t, any(issubclass(w.category, UserWarning) for w in caught)


@case("ndarray_with_tensor_operators")
def _(lib):
    t = lib.ones(2)
    a = np.full(2, 2.0)
    f = np.full(2, 3.0, np.float32)
    return type(a * t).__name__, a + t, f - t, np.ones(2, np.int64) * lib.ones(2, dtype=lib.int32)


@case("numpy_integers_as_sizes")
def _(lib):
    t = lib.arange(6.0)
    return (lib.zeros(np.int64(2), np.int32(3)), t.reshape(np.int64(2), -1), t.view(np.int16(3), 2),
            lib.arange(np.float32(3)), t[np.int32(1):np.int64(4)],
            lib.full((np.int64(2),), np.float32(1.5)))  # fmt: skip


@case("numpy_integers_as_dims")
def _(lib):
    t = lib.arange(6.0).reshape(2, 3)
    d0, d1 = np.int64(0), np.int32(1)
    return (t.sum(dim=d0), lib.mean(t, d1), t.amax(d1), t.max(d1), t.softmax(d1), t.cumsum(d1),
            lib.cat([t, t], d0), t.std(d0), t.argmax(d0), t.transpose(d0, 1), t.unsqueeze(d0),
            t.flip(d0), t.logsumexp(d0), t.all(d0), t.prod(d1), t.size(d1),
            t.select(d0, 1), t.narrow(d1, 0, np.int64(2)), t.chunk(np.int64(2), d1),
            t.index_select(d0, lib.tensor([1])), t.gather(d1, lib.tensor([[0], [2]])),
            t.sort(d0, descending=True), lib.stack([t, t], d1), t.cummax(d0), t.roll(1, d0),
            t.movedim(d0, 1), t.diff(dim=d1), t.flatten(d0), t.permute(d1, 0),
            lib.nn.functional.normalize(t, dim=d0))  # fmt: skip


@case("item_and_tolist_types")
def _(lib):
    return (type(lib.tensor(np.float32(1.5)).item()).__name__,
            [type(v).__name__ for v in lib.from_numpy(np.array([1, 2], np.int8)).tolist()],
            type(lib.from_numpy(np.array([True])).tolist()[0]).__name__)  # fmt: skip


@case("parameter_numpy_shares")
def _(lib):
    p = lib.nn.Parameter(lib.zeros(2))
    n = p.detach().numpy()
    n[0] = 4
    return p.detach().clone()


@case("numpy_of_a_view_shares")
def _(lib):
    x = lib.zeros(2, 3)
    n = x.t().numpy()
    n[2, 1] = 9
    return x, n.strides


@case("numpy_of_zero_d_and_empty")
def _(lib):
    a, e = lib.tensor(2.5).numpy(), lib.zeros(0, 2, dtype=lib.int16).numpy()
    return a.shape, str(a.dtype), e.shape, str(e.dtype), type(a).__name__


@case("tensor_of_numpy_float64_list_default_dtype")
def _(lib):
    return (
        lib.tensor([np.float64(1.0), 2.0]),
        lib.tensor([1.5, np.float32(2)]),
        lib.tensor([np.int32(1)]),
    )


@case("tensor_op_ndarray_of_same_dtype_kind")
def _(lib):
    return (lib.ones(2) + np.ones(2), lib.ones(2, dtype=lib.float64) + np.ones(2, np.float32),
            lib.tensor(1.0) + np.ones(2), lib.ones(2) == np.ones(2))  # fmt: skip


@case("tensor_op_ndarray_promotes_as_numpy")
def _(lib):
    # torch's Tensor op ndarray falls to NumPy's operator (float32 * int64 -> float64; a 0-d
    # array counts as an array), its result wrapped as a Tensor
    return (lib.ones(2) * np.ones(2, np.int64), lib.ones(2) + np.array(1.5),
            lib.ones(2, dtype=lib.int32) + np.array(2, np.int64))  # fmt: skip


@case("tensor_matmul_ndarray_of_another_dtype")
def _(lib):
    return lib.ones(2, 2) @ np.ones(2)


@case("tensor_op_numpy_bool_scalar")
def _(lib):
    return lib.ones(2, dtype=lib.bool) * np.bool_(True), lib.ones(2, dtype=lib.int8) + np.bool_(
        True
    )


SCENARIOS.xfail.update(
    {
        "tensor_op_ndarray_promotes_as_numpy": (
            "torch: float64, float64, int64 (NumPy's promotion); kiln: float32, float32, int32 "
            "(the ndarray taken as a tensor, torch's tensor promotion)"
        ),
        "tensor_matmul_ndarray_of_another_dtype": (
            "torch: float64 (NumPy's matmul); kiln: DTypeMismatchError (float32 @ float64)"
        ),
        "tensor_op_numpy_bool_scalar": (
            "torch: float32 for bool * np.bool_ and int8 + np.bool_; kiln: bool and int8 "
            "(np.bool_ as Python's bool)"
        ),
        "ndarray_with_tensor_operators": (
            "torch 2.13 raises TypeError for ndarray (op) Tensor; kiln's Tensor.__r*__ answers"
        ),
        "index_by_numpy_bool": (
            "torch raises IndexError for a np.bool_ index; kiln indexes as by True"
        ),
        "tensor_of_a_list_of_zero_d_arrays": (
            "torch raises TypeError (len() of unsized object); kiln makes a float64 tensor"
        ),
        "numpy_ufunc_on_tensor": "torch's np.sqrt(tensor) is a Tensor (via __array__ and "
        "__array_wrap__); kiln's Tensor sets __array_ufunc__ = None, so NumPy raises TypeError",
        "numpy_of_bfloat16_raises": "torch raises TypeError (NumPy has no bfloat16); kiln gives an "
        "ml_dtypes bfloat16 array",
        "numpy_of_conj_raises": "torch's conj() is a lazy conjugate bit and numpy() raises "
        "RuntimeError; kiln's conj() is materialized, so numpy() gives the conjugate values",
    }
)


@pytest.mark.parametrize("name", SCENARIOS.names())
def test_numpy_interop_like_torch(name):
    check_like_torch(torch, kn, SCENARIOS.cases[name][0])
