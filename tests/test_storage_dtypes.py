"""The storage dtypes (float8, float4, int4, int2): casts follow PyTorch where it has them,
promotion with any other dtype is refused, and ONNX export/import keeps their values."""

import numpy as np
import pytest

import kiln as kn

FLOAT8 = [kn.float8_e4m3fn, kn.float8_e5m2, kn.float8_e4m3fnuz, kn.float8_e5m2fnuz,
          kn.float8_e8m0fnu]  # fmt: skip
# Values around each format's largest finite (448, 57344, 240) and past it, and roundings.
X = np.array([np.inf, -np.inf, 1e6, -7e4, 500.0, 470.0, 460.0, 250.0, 3.3, -7.6, 1e-9, np.nan,
              0.0, -0.0, 1.5, 3e38, 1e-42], np.float32)  # fmt: skip


@pytest.mark.parametrize("dtype", FLOAT8, ids=str)
def test_float8_casts_are_pytorchs(dtype):
    torch = pytest.importorskip("torch")
    want = torch.from_numpy(X).to(getattr(torch, dtype.name)).float().numpy()
    got = kn.tensor(X).to(dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy().astype(np.float32), want)  # NaN where torch's
    g = kn.placeholder(kn.float32, (X.size,))  # graph mode: the same kernel
    f = kn.function([g], [kn.cast(g, dtype)])
    np.testing.assert_array_equal(f(X)[0].astype(np.float32), want)


def test_float8_e4m3fn_saturates_by_hand():
    # 448 is the largest finite; halfway to the next step (480) rounds to even, i.e. to 448.
    got = kn.tensor([464.0, -1e30, np.inf, 1.0625]).to(kn.float8_e4m3fn).float().numpy()
    np.testing.assert_array_equal(got, [448.0, -448.0, 448.0, 1.0])


def test_promotion_with_a_storage_dtype_is_refused():
    with pytest.raises(kn.DTypeError, match="float8_e5m2"):
        kn.result_type(np.ones(2, kn.float8_e5m2), np.ones(2, np.float32))
    with pytest.raises(kn.DTypeError, match="int4"):
        kn.promote(kn.int4, kn.int8)
    assert kn.promote(kn.int4, 3) == kn.int4  # a weak scalar does not widen it
    assert kn.result_type(np.ones(2, kn.float8_e4m3fn), np.ones(2, kn.float8_e4m3fn)) == (
        kn.float8_e4m3fn
    )


@pytest.mark.parametrize("dtype", [kn.int4, kn.uint4, kn.int2, kn.uint2], ids=str)
def test_small_ints_wrap_as_numpys_integers(dtype):
    bits = dtype.itemsize * 8 if dtype.name[-1] not in "24" else int(dtype.name[-1])
    x = np.array([-9, -3, 0, 5, 17, 100], np.int64)
    got = kn.tensor(x).to(dtype).to(kn.int64).numpy()
    signed = not dtype.name.startswith("u")
    want = x % 2**bits  # two's complement by hand
    if signed:
        want = np.where(want >= 2 ** (bits - 1), want - 2**bits, want)
    np.testing.assert_array_equal(got, want)


def test_graph_with_storage_dtypes_round_trips_through_json():
    from kiln.graph.serialize import from_json, to_json

    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float32, (4,), name="x")
        c = kn.constant(np.array([1.5, -2.0, 0.25, 448.0], kn.float8_e4m3fn))
        y = kn.cast(kn.cast(x, kn.float8_e5m2), kn.float32) + kn.cast(c, kn.float32)
    g.inputs, g.outputs = [x], [y]
    g2 = from_json(to_json(g))
    xv = np.array([1.0, 3.3, -600.0, 1e5], np.float32)
    want = xv.astype(kn.float8_e5m2).astype(np.float32) + np.array([1.5, -2.0, 0.25, 448.0])
    for graph in (g, g2):
        got = kn.function(graph.inputs, graph.outputs)(xv)[0]
        np.testing.assert_array_equal(got, want.astype(np.float32))


def test_float8_tensors_print_as_pytorchs():
    torch = pytest.importorskip("torch")
    x = [1.0, -2.5, 448.0, 3.3]
    for dtype in (kn.float8_e5m2, kn.float8_e4m3fn):
        want = repr(torch.tensor(x).to(getattr(torch, dtype.name))).replace("torch.", "kiln.")
        assert repr(kn.tensor(x).to(dtype)) == want
    assert repr(kn.tensor([1, -3, 7]).to(kn.int4)) == "tensor([ 1, -3,  7], dtype=kiln.int4)"
