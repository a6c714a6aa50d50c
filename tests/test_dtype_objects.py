"""kiln's dtype objects (`kn.dtype`): PyTorch's dtype attributes, and their use with NumPy,
dicts, pickling and the factories. Expected attribute values come from torch 2.13's dtypes of
the same name; the NumPy interplay from NumPy itself."""

import copy
import pickle

import numpy as np
import pytest

import kiln as kn

NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
]  # fmt: skip


def _kiln(name):
    return kn.float4_e2m1fn if name == "float4_e2m1fn_x2" else getattr(kn, name)


@pytest.mark.parametrize("name", NAMES)
def test_attributes_match_torch(name):
    torch = pytest.importorskip("torch")
    t, k = getattr(torch, name), _kiln(name)
    assert isinstance(k, kn.dtype)
    assert k.is_floating_point == t.is_floating_point, name
    assert k.is_complex == t.is_complex, name
    assert k.is_signed == t.is_signed, name
    if name != "float4_e2m1fn_x2":  # torch packs two float4s a byte; kiln unpacks them
        assert k.itemsize == t.itemsize, name
        assert repr(k) == repr(t).replace("torch.", "kiln."), name
        # str is repr, as torch's; format (f-strings: kiln's messages) the bare name
        assert str(k) == str(t).replace("torch.", "kiln."), name
        assert f"{k}" == str(t).replace("torch.", "") and f"{k:>12}" == f"{k.name:>12}", name
    assert k.to_real() is k and t.to_real() is t


@pytest.mark.parametrize("name", ["float32", "int64", "bool", "bfloat16", "float16"])
def test_tensor_dtype_is_the_constant(name):
    k = getattr(kn, name)
    x = kn.zeros(3, dtype=k)
    assert x.dtype is k and x.dtype == k
    assert x.to(kn.float64).dtype is kn.float64
    assert kn.ones(2).to(k).dtype is k
    with kn.Graph().as_default():
        s = kn.placeholder(k, (2,))
        assert s.dtype is k and isinstance(s.dtype, kn.dtype)
        assert s.to(kn.int32).dtype is kn.int32


def test_numpy_takes_kiln_dtypes_and_compares():
    # NumPy reads the `.dtype` attribute of any object given as a dtype.
    assert np.dtype(kn.float32) == np.dtype("float32")
    assert np.zeros(2, kn.int8).dtype == np.int8
    assert np.ones(2).astype(kn.float16).dtype == np.float16
    assert np.dtype(kn.bfloat16) == kn.dtypes.bfloat16
    assert kn.float32 == np.float32 and kn.float32 == "float32" and kn.float32 == np.dtype("f4")
    assert np.dtype("float32") == kn.float32 and not (kn.float32 != np.dtype("float32"))
    assert kn.float32 != kn.float64 and kn.float32 != "float64" and kn.int64 != None  # noqa: E711
    assert kn.float32 != "no such dtype"


def test_hash_and_dict_keys_mix_with_numpy():
    table = {np.dtype("float32"): "f", kn.int64: "i"}
    assert table[kn.float32] == "f" and table[np.dtype("int64")] == "i"
    assert hash(kn.float32) == hash(np.dtype("float32"))
    assert len({kn.float32, np.dtype("float32"), kn.zeros(1).dtype}) == 1


def test_pickle_copy_and_immutability():
    for k in (kn.float32, kn.bfloat16, kn.uint16, kn.bool, kn.float8_e5m2):
        assert pickle.loads(pickle.dumps(k)) is k
        assert copy.copy(k) is k and copy.deepcopy(k) is k
    with pytest.raises(AttributeError):
        kn.float32.itemsize = 8
    x = pickle.loads(pickle.dumps(kn.ones(2, dtype=kn.int16)))
    assert x.dtype is kn.int16


def test_torch_spellings():
    assert kn.float is kn.float32 and kn.double is kn.float64 and kn.long is kn.int64
    assert kn.half is kn.float16 and kn.int is kn.int32 and kn.bool is kn.bool_
    assert kn.get_default_dtype() is kn.float32
    kn.set_default_dtype(kn.float64)
    try:
        assert kn.get_default_dtype() is kn.float64 and kn.ones(1).dtype is kn.float64
    finally:
        kn.set_default_dtype(kn.float32)
    assert kn.promote_types(kn.int32, kn.float16) is kn.float16  # torch: torch.float16
    assert kn.result_type(kn.ones(2, dtype=kn.int8), 2.5) is kn.float32  # torch: float32
    assert kn.can_cast(kn.float32, kn.int32) is False and kn.can_cast(kn.int64, kn.int8)
    assert kn.finfo(kn.float16).eps == 2.0**-10 and kn.iinfo(kn.int8).max == 127


def test_promote_types_over_every_pair_is_a_kiln_dtype():
    torch = pytest.importorskip("torch")
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16",
             "float32", "float64"]  # fmt: skip
    for a in names:
        for b in names:
            got = kn.promote_types(getattr(kn, a), getattr(kn, b))
            want = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert isinstance(got, kn.dtype) and repr(got) == repr(want).replace("torch", "kiln")


def test_dumps_and_checkpoints_round_trip(tmp_path):
    with kn.Graph().as_default() as g:
        x = kn.placeholder(kn.float16, (2,), name="x")
        y = x.to(kn.float32) * 2
    text = kn.dump(g)
    assert "f16" in str(text)
    state = {"w": kn.ones(2, dtype=kn.bfloat16), "i": kn.ones(2, dtype=kn.int16)}
    kn.save(state, tmp_path / "s.kn")
    back = kn.load(tmp_path / "s.kn")
    assert back["w"].dtype is kn.bfloat16 and back["i"].dtype is kn.int16
    assert y.dtype is kn.float32


def test_a_planned_programs_feed_check_compares_numpy_dtypes():
    # the per-call fast path compares each feed's NumPy dtype with the placeholder's: a kiln
    # dtype there cost two attribute probes by NumPy a call (2 us on the 100-op chain)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,))
        f = kn.function([x], x * 2)
    f(np.ones(2, np.float32))
    assert all(type(d) is np.dtype or isinstance(d, np.dtype) for d, _ in f.program._exact_feeds)
