"""Python ints that a dtype, or any 64-bit integer, cannot hold, taken as PyTorch takes them
where kiln let NumPy's OverflowError out (or computed a value PyTorch refuses): beyond 64 bits
every op's number raises OverflowError (`f32 + 2**64` too); in an integer dtype, fill values,
bounds and `tensor(...)` data raise RuntimeError ("value cannot be converted to type int8
without overflow"), bar an unsigned dtype's negatives down to minus its greatest, which wrap
(`full((2,), -1, dtype=uint8)` is 255); `tensor(...)` and item assignment raise ValueError
beyond int64. Binary ops' operands wrap (tests/test_edges_ints.py). Expected values are torch
2.13's, written out (`test_expected_are_torchs` reruns them)."""

import numpy as np
import pytest

import kiln as kn

BIG = 2**70


def _setitem(x, value):
    x[0] = value
    return x


def _fill(x, value):
    return x.fill_(value)


# name -> (fn(module, x), x's dtype, torch's result: values (x's dtype unless given as
# (dtype, values)) or the exception type); x is [1, 2]
CASES = {
    "int8 + 2**70": (lambda m, x: x + BIG, "int8", OverflowError),
    "f32 + 2**64": (lambda m, x: x + 2**64, "float32", OverflowError),
    "2**64 + f32": (lambda m, x: 2**64 + x, "float32", OverflowError),
    "f32 * 2**200": (lambda m, x: x * 2**200, "float32", OverflowError),
    "f32 + 2**63": (lambda m, x: x + 2**63, "float32", [2.0**63, 2.0**63]),
    "int8 + -2**63 - 1": (lambda m, x: x + (-(2**63) - 1), "int8", OverflowError),
    "f32 == 2**64": (lambda m, x: x == 2**64, "float32", OverflowError),
    "f32 ** 2**64": (lambda m, x: x ** 2**64, "float32", OverflowError),
    "alpha 2**64": (lambda m, x: m.add(x, 1, alpha=2**64), "float32", OverflowError),
    "where int8 1000": (lambda m, x: m.where(x > 1, x, 1000), "int8", RuntimeError),
    "where f32 2**64": (lambda m, x: m.where(x > 1, x, 2**64), "float32", OverflowError),
    "clamp int8 1000": (lambda m, x: m.clamp(x, max=1000), "int8", RuntimeError),
    "clamp uint8 min -1": (lambda m, x: m.clamp(x, min=-1), "uint8", [255, 255]),
    "masked_fill int8 1000": (lambda m, x: x.masked_fill(x > 1, 1000), "int8", RuntimeError),
    "masked_fill uint8 -1": (lambda m, x: x.masked_fill(x > 1, -1), "uint8", [1, 255]),
    "masked_fill f32 2**64": (lambda m, x: x.masked_fill(x > 1, 2**64), "float32",
                              OverflowError),
    "index_fill int8 200": (lambda m, x: x.index_fill(0, m.tensor([0]), 200), "int8",
                            RuntimeError),
    "fill_ int8 1000": (lambda m, x: _fill(x, 1000), "int8", RuntimeError),
    "fill_ int8 2**70": (lambda m, x: _fill(x, BIG), "int8", OverflowError),
    "fill_ f32 2**70": (lambda m, x: _fill(x, BIG), "float32", OverflowError),
    "fill_ uint8 -1": (lambda m, x: _fill(x, -1), "uint8", [255, 255]),
    "setitem int8 128": (lambda m, x: _setitem(x, 128), "int8", RuntimeError),
    "setitem uint8 -1": (lambda m, x: _setitem(x, -1), "uint8", [255, 2]),
    "setitem f32 2**63": (lambda m, x: _setitem(x, 2**63), "float32", ValueError),
    "full_like int8 1000": (lambda m, x: m.full_like(x, 1000), "int8", RuntimeError),
    "full_like uint8 -1": (lambda m, x: m.full_like(x, -1), "uint8", [255, 255]),
    "new_full int8 200": (lambda m, x: x.new_full((2,), 200), "int8", RuntimeError),
    # factories: x only gives the device of the call
    "full uint8 300": (lambda m, x: m.full((2,), 300, dtype=m.uint8), "int8", RuntimeError),
    "full uint8 -1": (lambda m, x: m.full((2,), -1, dtype=m.uint8), "int8",
                      ("uint8", [255, 255])),
    "full uint8 -256": (lambda m, x: m.full((2,), -256, dtype=m.uint8), "int8", RuntimeError),
    "full 2**63": (lambda m, x: m.full((2,), 2**63), "int8", RuntimeError),
    "full f32 2**64": (lambda m, x: m.full((2,), 2**64, dtype=m.float32), "int8",
                       OverflowError),
    "full -2**63": (lambda m, x: m.full((2,), -(2**63)), "int8", ("int64", [-(2**63)] * 2)),
    "tensor 2**70": (lambda m, x: m.tensor(BIG), "int8", ValueError),
    "tensor [1, 2**64]": (lambda m, x: m.tensor([1, 2**64]), "int8", ValueError),
    "tensor [2**70] int8": (lambda m, x: m.tensor([BIG], dtype=m.int8), "int8", ValueError),
    "tensor [128] int8": (lambda m, x: m.tensor([128], dtype=m.int8), "int8", RuntimeError),
    "tensor [-1, -255] uint8": (lambda m, x: m.tensor([-1, -255], dtype=m.uint8), "int8",
                                ("uint8", [255, 1])),
    "tensor [1.5, 2**70]": (lambda m, x: m.tensor([1.5, BIG]), "int8",
                            ("float32", [1.5, 2.0**70])),
    "tensor 2**70 f32": (lambda m, x: m.tensor([BIG], dtype=m.float32), "int8",
                         ("float32", [2.0**70])),
}  # fmt: skip

# the kiln error each built-in exception is, where kiln raises it
KILN_ERRORS = {
    OverflowError: kn.errors.ScalarOverflowError,
    RuntimeError: kn.errors.UsageError,
    ValueError: kn.errors.ArgumentError,
}
FACTORIES = {name for name in CASES if name.startswith(("full ", "tensor "))}


def _run(m, name, mode="eager"):
    fn, dtype, _ = CASES[name]
    x = np.array([1, 2], dtype)
    if mode == "graph":
        with kn.Graph().as_default():
            p = kn.placeholder(getattr(kn, dtype), (2,))
            y = fn(kn, p + 0)  # a value computed from the feed: in-place changes may take it
            return np.asarray(kn.function([p], y)(x))
    t = m.tensor(x)
    out = kn.compile(lambda t: fn(kn, t))(t) if mode == "compiled" else fn(m, t)
    return out.numpy()


def _check(name, mode):
    want = CASES[name][2]
    if isinstance(want, type):
        with pytest.raises(KILN_ERRORS[want]) as e:
            _run(kn, name, mode)
        assert isinstance(e.value, want)
        # the message names the value, and the dtype or the op
        return str(e.value)
    dtype, values = want if isinstance(want, tuple) else (CASES[name][1], want)
    got = _run(kn, name, mode)
    assert got.dtype == np.dtype(dtype), got.dtype
    np.testing.assert_array_equal(got, np.array(values, dtype))
    return None


@pytest.mark.parametrize("mode", ["eager", "graph", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_python_ints_as_torch_takes_them(name, mode):
    if mode == "graph" and name in FACTORIES:
        pytest.skip("a factory makes an eager tensor, the same in every mode")
    _check(name, mode)


def test_messages_name_the_op_the_value_and_the_dtype():
    text = _check("fill_ int8 1000", "eager")
    assert "int8" in text and "1000 is outside -128..127" in text and "op fill_" in text
    text = _check("f32 + 2**64", "eager")
    assert "18446744073709551616" in text and "float32" in text and "op add" in text
    text = _check("tensor [2**70] int8", "eager")
    assert "1180591620717411303424 is outside int64" in text
    text = _check("f32 * 2**200", "eager")  # a long int is cut short
    assert "(an int of 201 bits)" in text and "op mul" in text


def test_expected_are_torchs():
    torch = pytest.importorskip("torch")
    for name, (fn, dtype, want) in CASES.items():
        x = torch.tensor([1, 2], dtype=getattr(torch, dtype))
        if isinstance(want, type):
            with pytest.raises(want):
                fn(torch, x)
            continue
        dtype, values = want if isinstance(want, tuple) else (dtype, want)
        got = fn(torch, x)
        assert got.dtype == getattr(torch, dtype) and got.tolist() == values, name
