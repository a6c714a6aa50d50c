"""`stride`, `storage_offset`, `type`, `view(dtype)` and `out=` against PyTorch itself
(skipped without torch): the expected values are torch's on the same views."""

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

VIEWS = {
    "plain": lambda t: t,
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(1, 2, 0),
    "slices": lambda t: t[1:, ::2, 1:3],
    "int": lambda t: t[1, 2],
    "expand": lambda t: t[:, :1].expand(2, 3, 4),
    "unsqueeze": lambda t: t[0].unsqueeze(1),
    "view": lambda t: t.view(6, 4)[2:],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_strides_and_offsets_match_pytorch(name):
    base = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    want = VIEWS[name](torch.from_numpy(base.copy()))
    got = VIEWS[name](kn.tensor(base))
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int8",
                                   "uint8", "int16", "bool"])  # fmt: skip
def test_type_names_match_pytorch(dtype):
    want = torch.zeros(1, dtype=getattr(torch, dtype)).type()
    got = kn.zeros(1, dtype=dtype).type()
    assert got == want.replace("torch.", "kiln.")
    assert kn.zeros(1).type(want).dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    ("source", "target", "shape"),
    [("float32", "int32", (2, 4)), ("float32", "float16", (3, 2)), ("int32", "int64", (2, 4)),
     ("float64", "uint8", (2,)), ("int16", "int8", (1, 3))],
)  # fmt: skip
def test_view_dtype_matches_pytorch(source, target, shape):
    a = (np.arange(np.prod(shape)) - 3).reshape(shape).astype(source)
    want = torch.from_numpy(a.copy()).view(getattr(torch, target))
    got = kn.tensor(a).view(np.dtype(target))
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 — its type is what is compared
        return type(e)
    return None


OUT_ERRORS = {
    "cast": lambda lib: lib.add(lib.ones(3), 1.5, out=lib.zeros(3, dtype=lib.int64)),
    "grad": lambda lib: lib.mul(lib.ones(2, requires_grad=True), 2.0, out=lib.zeros(2)),
    "to-bool": lambda lib: lib.add(lib.ones(1, dtype=lib.int64), 1, out=lib.zeros(1,
                                                                                 dtype=lib.bool)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(OUT_ERRORS))
def test_out_errors_match_pytorch(name):
    want, got = _error(lambda: OUT_ERRORS[name](torch)), _error(lambda: OUT_ERRORS[name](kn))
    assert want is not None and got is not None and issubclass(got, want)


def test_out_values_and_resizing_match_pytorch():
    for lib in (torch, kn):
        out = lib.zeros(2, dtype=lib.float64)
        with pytest.warns(UserWarning, match="resized"):
            r = lib.add(lib.tensor([1, 2, 3]), 1, out=out)
        assert r is out and out.tolist() == [2.0, 3.0, 4.0]
        total = lib.zeros(0)
        lib.sum(lib.ones(2, 3), 1, out=total)
        assert total.tolist() == [3.0, 3.0]
