"""Devices. Without a usable GPU, DeviceError says exactly why (no CuPy, a broken CuPy, no
driver, no device, an index out of range) at every way in, and nothing falls back to the CPU;
`kiln info` and `kiln bench --device cuda` say why too. On the simulated GPU of fake_cupy.py:
Variables move to the device once (logged, counted in the profile), feeds are copied in
through pinned memory, device arrays go in and out, the device is current while a program or
an eager op runs, and eager ops across devices raise, naming both tensors.
"""

import importlib.abc
import sys

import fake_cupy
import host_kernels
import numpy as np
import pytest

import kiln as kn
from kiln import cli, sysinfo
from kiln.runtime import cuda as runtime_cuda

NO_FALLBACK = "; kiln does not fall back to the cpu"


@pytest.fixture
def fresh(monkeypatch):
    """kiln forgets the CuPy it saw, before and after the test."""
    fake_cupy.reset_kiln()
    yield monkeypatch
    fake_cupy.reset_kiln()


class _BrokenCupy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "cupy":
            raise OSError("libcudart.so.12: cannot open shared object file")
        return None


def _no_cupy(mp):
    mp.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError


def _broken_cupy(mp):
    mp.delitem(sys.modules, "cupy", raising=False)
    mp.setattr(sys, "meta_path", [_BrokenCupy(), *sys.meta_path])


def _failing_runtime(status, text):
    def setup(mp):
        fake_cupy.install(mp)

        def count():
            raise fake_cupy.CUDARuntimeError(status, text)

        mp.setattr(fake_cupy.runtime, "getDeviceCount", count)

    return setup


def _no_devices(mp):
    fake_cupy.install(mp)
    mp.setattr(fake_cupy.runtime, "getDeviceCount", lambda: 0)


MISSING = {
    "no-cupy": (_no_cupy, "CuPy is not installed (import of cupy halted; None in sys.modules); "
                "install kiln[cuda] (cupy-cuda12x)"),
    "broken-cupy": (_broken_cupy, "CuPy failed to import: OSError: libcudart.so.12: cannot "
                    "open shared object file"),
    "no-driver": (_failing_runtime(35, "cudaErrorInsufficientDriver: CUDA driver version is "
                                   "insufficient for CUDA runtime version"),
                  "no usable CUDA driver: it is missing or older than CuPy's CUDA runtime "
                  "(cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA "
                  "runtime version)"),
    "no-device": (_failing_runtime(100, "cudaErrorNoDevice: no CUDA-capable device is "
                                   "detected"),
                  "no CUDA device: the driver finds none (cudaErrorNoDevice: no CUDA-capable "
                  "device is detected)"),
    "zero-devices": (_no_devices, "no CUDA device: the driver reports none"),
}  # fmt: skip


@pytest.fixture(params=sorted(MISSING))
def missing(request, fresh):
    """(reason) with CUDA made unusable one way."""
    setup, reason = MISSING[request.param]
    setup(fresh)
    return reason


def test_cuda_status_says_exactly_why(missing):
    assert runtime_cuda.cuda_status() == (False, missing, 0)
    assert not kn.cuda.is_available() and kn.cuda.device_count() == 0
    assert kn.cuda.why_unavailable() == missing
    assert kn.devices() == ["cpu"]


def test_every_way_to_ask_for_cuda_raises_the_reason_and_never_falls_back(missing):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,), name="x")
        y = x * 2.0
    attempts = {
        "cuda:0": [lambda: kn.Session(device="cuda"), lambda: kn.function([x], y, device="cuda"),
                   lambda: kn.tensor([1.0], device="cuda"), lambda: kn.ones(2).to("cuda"),
                   lambda: kn.ones(2).cuda(), lambda: kn.cuda.get_device_name(),
                   lambda: kn.cuda.memory_summary()],
        "cuda:1": [lambda: kn.zeros(2, device="cuda:1"), lambda: kn.Session(device="cuda:1"),
                   lambda: kn.ones(2).cuda(1)],
    }  # fmt: skip
    # As PyTorch's: memory figures are 0 and empty_cache does nothing without CUDA
    assert kn.cuda.memory_allocated() == kn.cuda.max_memory_allocated() == 0
    assert kn.cuda.memory_reserved() == 0 and kn.cuda.empty_cache() is None
    for device, calls in attempts.items():
        for call in calls:
            with pytest.raises(kn.DeviceError) as info:
                call()
            assert str(info.value) == f"cannot use device '{device}': {missing}{NO_FALLBACK}"
    for bad in ("cuda:x", "gpu", "cuda:-1", "cpu:1"):
        with pytest.raises(kn.DeviceError, match=f"unknown device '{bad}': use 'cpu', 'cuda'"):
            kn.function([x], y, device=bad)


def test_kiln_info_and_bench_say_why_without_cuda(missing, capsys):
    rows = dict(sysinfo.report()[0])
    assert rows["cuda"] == f"not usable: {missing}; kiln runs on the cpu only"
    assert rows["devices"] == "cpu"
    assert cli.main(["info"]) == 0
    assert f"not usable: {missing}" in capsys.readouterr().out
    assert cli.main(["bench", "--device", "cuda"]) == cli.EXIT_FAILED
    assert f"--device cuda: cannot use device 'cuda:0': {missing}" in capsys.readouterr().err


# -- the simulated GPU ---------------------------------------------------------------------------


@pytest.fixture
def gpu(fresh):
    if not host_kernels.have_compiler():
        pytest.skip("no g++ to compile kiln's generated kernels for the simulated GPU")
    return fake_cupy.install(fresh)


def test_devices_out_of_range_and_the_cuda_module(gpu):
    assert kn.devices() == ["cpu", "cuda:0", "cuda:1"] and kn.cuda.device_count() == 2
    with pytest.raises(kn.DeviceError) as info:
        kn.tensor([1.0], device="cuda:2")
    assert str(info.value) == "device 'cuda:2' is out of range: 2 CUDA device(s) (cuda:0, cuda:1)"
    assert kn.cuda.get_device_name(1) == "Fake GPU"
    before = kn.cuda.memory_allocated()
    t = kn.zeros(1000, device="cuda")
    assert kn.cuda.memory_allocated() >= before + 4000 and kn.cuda.max_memory_allocated() > 0
    assert "cuda:0 (Fake GPU)" in kn.cuda.memory_summary() and "host to device" in (
        kn.cuda.memory_summary())  # fmt: skip
    kn.cuda.synchronize()
    kn.cuda.empty_cache()
    del t
    rows = dict(sysinfo.report()[0])
    assert rows["cuda"] == "usable, 2 device(s)" and rows["cupy"] == "13.0.0+fake"
    assert rows["cuda driver"] == "12.4" and rows["cuda runtime"] == "12.2"
    assert rows["cuda:1"] == "Fake GPU, 80.0 GiB, compute capability 9.0"


def _model(device, **options):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, ("batch", 3), name="x")
        w = kn.Variable(np.full((3, 2), 0.5, np.float32), name="w")
        y = kn.tanh(x @ w) + 1.0
        f = kn.function([x], y, updates={w: w * 0.5}, device=device, **options)
    return f, x, y, w


def test_a_variable_moves_to_the_device_once_logged_and_counted(gpu, capsys, monkeypatch):
    monkeypatch.setenv("KILN_DEBUG", "1")
    f, x, y, w = _model("cuda")
    xb = np.ones((4, 3), np.float32)
    pinned = fake_cupy.STATS["pinned_allocs"]
    for _ in range(3):
        out = f(xb)
    assert type(out) is np.ndarray and w.device == "cuda:0"
    assert isinstance(w._value, fake_cupy.ndarray)
    np.testing.assert_allclose(w.numpy(), np.full((3, 2), 0.5**4, np.float32))
    moves = [line for line in capsys.readouterr().err.splitlines() if "moved" in line]
    assert moves == ["kiln: variable 'w' (24 B) moved from cpu to cuda:0"]
    transfers = f.profile(xb).transfers
    assert transfers["variables moved"] == (1, 24)
    assert transfers["feeds in"] == (4, 4 * 48) and transfers["outputs out"][0] == 4
    assert fake_cupy.STATS["pinned_allocs"] > pinned, "feeds are staged through pinned memory"
    assert "transfers, variables moved: 1 copies, 24 bytes" in str(f.profile(xb))
    cpu = kn.function([x], y, device="cpu")  # a CPU function of the Variable takes it back
    np.testing.assert_allclose(cpu(xb), np.tanh(xb @ w.numpy()) + 1.0, rtol=1e-6)
    assert w.device == "cpu" and "moved from cuda:0 to cpu" in capsys.readouterr().err
    w.assign(np.ones((3, 2), np.float32))
    assert w.device == "cpu"


def test_device_arrays_in_and_out(gpu):
    f, x, y, w = _model("cuda", return_device_arrays=True)
    xb = np.ones((4, 3), np.float32)
    out = f(gpu.asarray(xb))
    assert isinstance(out, fake_cupy.ndarray)
    np.testing.assert_allclose(out.get(), np.tanh(xb @ np.full((3, 2), 0.5)) + 1.0, rtol=1e-6)
    assert "feeds in" not in f.program.transfers.snapshot(), "a device feed is not copied"
    with kn.Session(device="cuda", return_device_arrays=True) as sess:
        assert isinstance(sess.run(y, {x: xb}), fake_cupy.ndarray)
    with kn.Session(device="cuda") as sess:
        assert type(sess.run(w)) is np.ndarray
    with pytest.raises(kn.DeviceError, match="a CUDA array"):
        kn.function([x], y)(gpu.asarray(xb))


def test_a_program_on_cuda_1_runs_there(gpu):
    f, x, y, w = _model("cuda:1")
    xb = np.ones((4, 3), np.float32)
    f(xb)  # the simulated GPU refuses kernels on another device's arrays
    assert w.device == "cuda:1" and w._value.device.id == 1
    with gpu.cuda.Device(1):
        on_1 = gpu.asarray(xb)
    g = kn.function([x], y, device="cuda:0")
    np.testing.assert_allclose(g(on_1), np.tanh(xb @ w.numpy()) + 1.0, rtol=1e-6)
    assert w.device == "cuda:0"


def test_eager_tensors_move_and_ops_run_on_their_device(gpu):
    a = kn.tensor([[1.0, -2.0]], device="cuda")
    assert a.device == "cuda:0" and "device='cuda:0'" in repr(a)
    b = a.cuda(1)
    assert b.device == "cuda:1" and b._data.device.id == 1
    c = (b * 2.0).sum()
    assert c.device == "cuda:1" and c._data.device.id == 1 and c.item() == -2.0
    np.testing.assert_array_equal(b.cpu().numpy(), [[1.0, -2.0]])
    positive = b > 0
    kn.ones(1, device="cuda:0") * 2.0  # GPU 0 is current now
    assert positive.any().item() and not positive.all().item()
    with pytest.raises(TypeError, match="Use Tensor.cpu()"):
        a.numpy()
    with pytest.raises(kn.DeviceError, match="requires grad"):
        kn.ones(2, requires_grad=True).cuda()
    with kn.no_grad():
        assert kn.ones(2, requires_grad=True).cuda().device == "cuda:0"


def test_eager_autograd_on_cuda_1_stays_on_cuda_1(gpu):
    x = kn.tensor([1.0, 2.0, 3.0], device="cuda:1", requires_grad=True)
    y = (kn.tanh(x) * x).sum()
    kn.ones(1, device="cuda:0") * 2.0  # GPU 0 is current when backward starts
    y.backward()
    assert x.grad.device == "cuda:1" and x.grad._data.device.id == 1
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    expected = np.tanh(xs) + xs * (1 - np.tanh(xs) ** 2)
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected, rtol=1e-6)


def test_eager_ops_across_devices_name_both_tensors(gpu):
    for left, right in (("cpu", "cuda:0"), ("cuda:0", "cuda:1")):
        a, b = kn.ones(3, device=left), kn.ones((2, 3), device=right)
        with pytest.raises(kn.DeviceError) as info:
            a + b
        text = str(info.value)
        assert "Expected all tensors to be on the same device" in text
        assert f"{left} and {right}" in text and "op add" in text
        assert f"f32[3] on {left}" in text and f"f32[2,3] on {right}" in text
