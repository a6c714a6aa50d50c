"""PyTorch's functions for autocast's state (`set_autocast_enabled`, `set_autocast_dtype`, the
older per-device spellings, the cache and nesting), `set_default_tensor_type` and the `sym_*`
helpers on numbers, against PyTorch 2.13 (the oracle): the same calls give the same answers."""

import warnings

import pytest

import kiln as kn

torch = pytest.importorskip("torch")


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


@pytest.fixture(autouse=True)
def _restore():
    """Every library's autocast state and default dtype as they were, whatever a test set."""
    yield
    for lib in (torch, kn):
        for device, dtype in (("cpu", lib.bfloat16), ("cuda", lib.float16)):
            lib.set_autocast_enabled(device, False)
            lib.set_autocast_dtype(device, dtype)
        lib.set_autocast_cache_enabled(True)
        lib.set_default_dtype(lib.float32)


def _script(lib):
    """The answers of a sequence of autocast state calls on lib (torch or kiln)."""
    out = [lib.is_autocast_enabled("cpu"), _name(lib.get_autocast_dtype("cpu"))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out += [lib.is_autocast_cpu_enabled(), _name(lib.get_autocast_cpu_dtype())]
        out += [_name(lib.get_autocast_gpu_dtype())]
        lib.set_autocast_enabled("cpu", True)
        x = lib.ones(2, 2)
        out += [lib.is_autocast_enabled("cpu"), lib.is_autocast_cpu_enabled(), _name((x @ x).dtype)]
        lib.set_autocast_dtype("cpu", lib.float16)
        out += [_name(lib.get_autocast_dtype("cpu")), _name((x @ x).dtype)]
        lib.set_autocast_enabled("cpu", False)
        out += [lib.is_autocast_enabled("cpu"), _name((x @ x).dtype)]
        lib.set_autocast_cpu_dtype(lib.bfloat16)
        lib.set_autocast_cpu_enabled(True)
        out += [lib.is_autocast_enabled("cpu"), _name((x @ x).dtype)]
        with lib.autocast("cpu", enabled=False):
            out += [lib.is_autocast_enabled("cpu")]
        out += [lib.is_autocast_enabled("cpu")]  # restored on exit
        lib.set_autocast_cpu_enabled(False)
        lib.set_autocast_enabled(True)  # the one-argument form: CUDA's
        out += [lib.is_autocast_enabled("cuda"), lib.is_autocast_enabled()]
        lib.set_autocast_enabled(False)
        lib.set_autocast_gpu_dtype(lib.bfloat16)
        out += [_name(lib.get_autocast_dtype("cuda"))]
        out += [lib.autocast_increment_nesting(), lib.autocast_increment_nesting()]
        out += [lib.autocast_decrement_nesting(), lib.autocast_decrement_nesting()]
        out += [lib.is_autocast_cache_enabled(), lib.clear_autocast_cache()]
        lib.set_autocast_cache_enabled(False)
        out += [lib.is_autocast_cache_enabled()]
    deprecated = sum(issubclass(w.category, DeprecationWarning) for w in caught)
    return out, deprecated


def test_autocast_state_functions_answer_as_pytorchs():
    want, want_warnings = _script(torch)
    got, got_warnings = _script(kn)
    assert got == want
    assert got_warnings == want_warnings  # the older spellings warn as PyTorch's


def test_autocast_set_outside_a_block_casts_under_compile():
    kn.set_autocast_enabled("cpu", True)
    f = kn.compile(lambda a: a @ a)
    assert f(kn.ones(2, 2)).dtype == kn.bfloat16
    kn.set_autocast_enabled("cpu", False)


def test_set_default_tensor_type_as_pytorchs():
    with pytest.warns(UserWarning, match="deprecated"):  # (PyTorch warns once a process)
        kn.set_default_tensor_type("kiln.DoubleTensor")
    kn.set_default_dtype(kn.float32)
    for lib, prefix in ((torch, "torch"), (kn, "kiln")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.set_default_tensor_type(f"{prefix}.DoubleTensor")
            assert _name(lib.get_default_dtype()) == "float64"
            assert _name(lib.ones(1).dtype) == "float64"
            with pytest.raises(TypeError):
                lib.set_default_tensor_type(f"{prefix}.LongTensor")
            with pytest.raises(TypeError):
                lib.set_default_tensor_type(3)
            lib.set_default_tensor_type(f"{prefix}.FloatTensor")
            assert _name(lib.get_default_dtype()) == "float32"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_int", (5,)), ("sym_float", (3,)),
        ("sym_max", (2, 3)), ("sym_max", (3, 2.5)), ("sym_max", (2.0, 3)), ("sym_min", (2, 3)),
        ("sym_min", (2, 3.5)), ("sym_min", (True, 3)), ("sym_not", (True,)), ("sym_not", (0,)),
        ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1.5, 2.5)), ("sym_sum", ([1, 2, 3],)),
        ("sym_sum", (1, 2.5)), ("sym_sum", ([],)), ("sym_sum", ((4, 5),)), ("sym_sqrt", (4,)),
        ("sym_sqrt", (2.0,)),
    ],
)  # fmt: skip
def test_sym_helpers_on_numbers_as_pytorchs(name, args):
    want = getattr(torch, name)(*args)
    got = getattr(kn, name)(*args)
    assert got == want and type(got) is type(want)


def test_python2_division_operator_names_as_pytorchs():
    # torch.Tensor keeps __div__, __rdiv__ and __idiv__ (true division); the OpInfo sweep
    # compares __rdiv__'s samples
    for lib in (torch, kn):
        x = lib.tensor([1.0, 2.0])
        assert x.__div__(2).tolist() == [0.5, 1.0] and x.__rdiv__(3).tolist() == [3.0, 1.5]
        assert x.__idiv__(2) is x and x.tolist() == [0.5, 1.0]
