"""torch.compiler's, torch.jit's, torch.testing.make_tensor's and torch.amp.custom_fwd's names,
which ported code and test suites call: kiln's on its own mechanisms (kn.compile, its random
generator, kn.autocast). Expected values: PyTorch 2.13's on the same calls (the oracle tests
skip without torch), or by hand."""

import numpy as np
import pytest

import kiln as kn

# -- kn.compiler ---------------------------------------------------------------------------------


def test_is_compiling_is_true_while_traced_only():
    seen = []

    def f(x):
        seen.append(kn.compiler.is_compiling())
        return x * 2

    compiled = kn.compile(f)
    compiled(kn.ones(2))
    compiled(kn.ones(2))  # the cached program replays the trace's append (True), as
    f(kn.ones(2))  # torch.compile's does: its trace read is_compiling() as True
    assert seen == [True, True, False] and not kn.compiler.is_compiling()
    assert compiled.trace_count == 1


def test_disable_makes_kn_compile_run_eagerly_and_is_traced_inside_others():
    calls = []

    @kn.compiler.disable
    def helper(x):
        calls.append(1)
        return x + 1

    assert kn.compile(helper) is helper
    for _ in range(2):
        helper(kn.zeros(1))
    assert len(calls) == 2  # eager: each call runs it
    outer = kn.compile(lambda x: helper(x) * 3)
    assert outer(kn.zeros(2)).tolist() == [3.0, 3.0] == outer(kn.zeros(2)).tolist()
    assert kn.compiler.disable(recursive=False)(abs) is not None


def test_reset_drops_every_trace():
    f = kn.compile(lambda x: x - 1)
    f(kn.ones(3))
    f(kn.ones(3))
    assert f.trace_count == 1
    kn.compiler.reset()
    assert f(kn.ones(3)).tolist() == [0.0, 0.0, 0.0] and f.trace_count == 2


def test_import_forms():
    import kiln.compiler
    import kiln.jit

    assert kiln.compiler.is_compiling is kn.compiler.is_compiling
    assert kiln.jit.script is kn.jit.script


# -- kn.jit ----------------------------------------------------------------------------------------


class _Gated(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = kn.nn.Linear(3, 2)

    @kn.jit.ignore
    def note(self, x):
        return x

    @kn.jit.export
    def double(self, x):
        return 2 * x

    def forward(self, x):
        if kn.jit.is_scripting():
            return x
        return self.note(self.fc(x)).relu()


def test_script_keeps_the_object_and_trace_compiles_it():
    kn.manual_seed(0)
    m = _Gated()
    assert kn.jit.script(m) is m
    x = kn.randn(4, 3)
    traced = kn.jit.trace(m, x)
    assert type(traced).__name__ == "OptimizedModule"
    np.testing.assert_array_equal(traced(x).detach().numpy(), m(x).detach().numpy())
    f = kn.jit.trace(lambda a: a.sum(0), (x,))
    np.testing.assert_allclose(f(x).numpy(), x.sum(0).numpy(), rtol=1e-6)
    assert kn.jit.annotate(list, [1]) == [1] and kn.jit.wait(kn.jit.fork(max, 1, 2)) == 2
    assert kn.jit.ignore(drop=True)(abs) is abs and kn.jit.unused(abs) is abs


# -- kn.testing.make_tensor ------------------------------------------------------------------------

RANGES = [  # dtype, (low, high) of make_tensor's defaults (torch.testing's documented table)
    (kn.float32, (-9, 9)), (kn.float64, (-9, 9)), (kn.float16, (-9, 9)),
    (kn.bfloat16, (-9, 9)), (kn.int8, (-9, 9)), (kn.int64, (-9, 9)), (kn.uint8, (0, 9)),
    (kn.bool, (0, 1)),
]  # fmt: skip


@pytest.mark.parametrize("dtype, bounds", RANGES, ids=str)
def test_make_tensor_draws_in_the_default_ranges(dtype, bounds):
    kn.manual_seed(1)
    t = kn.testing.make_tensor(64, 8, dtype=dtype, device="cpu")
    assert t.shape == (64, 8) and t.dtype == dtype and t.is_contiguous()
    v = t.float().numpy()
    assert v.min() >= bounds[0] and v.max() <= bounds[1]
    if dtype.is_floating_point:
        assert len(np.unique(v)) > 100  # uniform floats, high exclusive (but for rounding)
        assert v.max() < 9 or dtype.itemsize == 2
    else:
        assert set(np.unique(v)) == set(range(bounds[0], bounds[1] + 1))  # every integer


def test_make_tensor_options():
    kn.manual_seed(2)
    mk = kn.testing.make_tensor
    t = mk((3, 4), dtype=kn.float32, device="cpu", noncontiguous=True)
    assert t.shape == (3, 4) and t.stride() == (8, 2) and not t.is_contiguous()
    assert mk(5, dtype=kn.float32, device="cpu", low=2, high=3).min().item() >= 2
    z = mk(2000, dtype=kn.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert 0 not in z.tolist() and set(z.tolist()) == {-1, 1}
    g = mk(2, 2, dtype=kn.complex64, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf and g.dtype == kn.complex64
    c = mk(2, 3, 4, 5, dtype=kn.float32, device="cpu", memory_format=kn.channels_last)
    assert c.stride() == (60, 1, 15, 3)
    assert mk(2, dtype=kn.float32, device="cpu", low=-1e39, high=1e39).isfinite().all()
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 2 >= 1"):
        mk(2, dtype=kn.float32, device="cpu", low=2, high=1)
    with pytest.raises(ValueError, match="requires_grad=True` is not supported"):
        mk(2, dtype=kn.int32, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        mk(2, dtype=kn.float32, device="cpu", noncontiguous=True, memory_format=kn.channels_last)


def test_make_tensor_strides_and_errors_match_torch():
    torch = pytest.importorskip("torch")
    from torch.testing import make_tensor

    for shape in [(3, 4), (5,), (2, 1, 3), (1,), ()]:
        ours = kn.testing.make_tensor(shape, dtype=kn.float32, device="cpu", noncontiguous=True)
        theirs = make_tensor(shape, dtype=torch.float32, device="cpu", noncontiguous=True)
        assert ours.stride() == theirs.stride() and ours.shape == theirs.shape
        assert ours.storage_offset() == theirs.storage_offset()
    for kwargs in [dict(low=float("nan")), dict(low=300, high=400), dict(low=5, high=5)]:
        with pytest.raises(ValueError) as ours:
            kn.testing.make_tensor(2, dtype=kn.int8, device="cpu", **kwargs)
        with pytest.raises(ValueError) as theirs:
            make_tensor(2, dtype=torch.int8, device="cpu", **kwargs)
        assert str(ours.value).replace("kiln.", "") == str(theirs.value).replace("torch.", "")


# -- kn.amp.custom_fwd / custom_bwd -------------------------------------------------------------


def _square(lib, cast_inputs):
    seen = {}

    class Square(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            seen["fwd"] = lib.is_autocast_enabled("cpu")
            return (x @ w) * x

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            seen["bwd"] = lib.is_autocast_enabled("cpu")
            return g * (x @ w) + (g * x) @ w.T, x.T @ (g * x)

    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        y = Square.apply(x, w)
    y.sum().backward()
    return (str(y.dtype).split(".")[-1], y.float().tolist(), x.grad.tolist(), w.grad.tolist(),
            seen["fwd"], seen["bwd"])  # fmt: skip


@pytest.mark.parametrize("cast", [None, "float32"])
def test_custom_fwd_and_bwd_match_torch(cast):
    torch = pytest.importorskip("torch")
    ours = _square(kn, None if cast is None else kn.float32)
    theirs = _square(torch, None if cast is None else torch.float32)
    assert ours == theirs
    assert ours[-2:] == ((True, True) if cast is None else (False, False))  # by hand too


def test_is_autocast_available():
    assert kn.amp.is_autocast_available("cpu") and kn.amp.is_autocast_available("cuda")
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        kn.amp.is_autocast_available("tpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        kn.amp.custom_fwd(device_type=3)


def test_finfo_of_complex_dtypes_is_their_parts():
    # torch.finfo(torch.complex64) is float32's (PyTorch 2.13); kiln raised TypeError
    assert kn.finfo(kn.complex64).dtype == "float32" and kn.finfo(kn.complex128).bits == 64
    assert kn.finfo(kn.complex64).eps == kn.finfo(kn.float32).eps
