"""kiln on a CUDA GPU beside the same computations written by hand in CuPy, and in PyTorch
when it is importable, all measured in the same run on the same GPU.

(a) per-call overhead: chains of 1, 10 and 100 elementwise ops on float32[16];
(b) an MLP forward pass 784-512-512-10 on a batch of 128;
(c) an 8-op elementwise chain on two float32[4096,4096] (one generated kernel when fused),
    as a fraction of the device-to-device copy bandwidth measured in the same run;
(d) training steps (forward, softmax cross-entropy, backward, SGD): MLP 784-512-512-10 at
    batch 16, 128 and 1024, and MLP 16x1024 at batch 512.
kiln takes device arrays and returns them (`return_device_arrays=True`), as the CuPy code
does. Each time is the best of several repeats of a batch of calls, with the GPU synchronized
before and after each batch, in µs or ms per call.

    python bench/bench_gpu.py [--quick] [--device cuda:N]
"""

import argparse
import platform
import sys
import time

import numpy as np

import kiln as kn
from kiln.ops import fused_cuda
from kiln.passes.simplify import simplify

LR = 0.01
CHAIN_NAMES = ("sin", "cos", "tanh")


def per_call_seconds(fn, sync, repeats: int, min_batch_s: float) -> float:
    """Best-of-`repeats` time of one call; each repeat times a batch of calls lasting at least
    `min_batch_s`, between two synchronizations of the GPU."""
    fn()  # warm up: compiles, allocates, moves the variables to the GPU
    sync()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= min_batch_s:
            break
        number *= 2
    best = elapsed / number
    for _ in range(repeats - 1):
        sync()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / number)
    return best


class Suite:
    """The GPU, its array modules (CuPy, and PyTorch or None) and the timing settings."""

    def __init__(self, device: str, quick: bool):
        import cupy

        self.device = device
        self.cp = cupy
        self.index = int(device.split(":")[1]) if ":" in device else 0
        self.gpu = cupy.cuda.Device(self.index)
        self.gpu.use()
        self.torch = _torch()
        self.repeats, self.min_s = (2, 0.005) if quick else (7, 0.1)
        self.quick = quick

    def sync(self):
        self.gpu.synchronize()  # the whole device: CuPy's and PyTorch's streams

    def time(self, fn) -> float:
        return per_call_seconds(fn, self.sync, self.repeats, self.min_s)

    def row(self, name, kiln_fn, cupy_fn, torch_fn=None, unit=1e6, check=None) -> None:
        if check is not None:
            check()
        t_k, t_c = self.time(kiln_fn), self.time(cupy_fn)
        line = f"{name:<40} {t_k * unit:>10.1f} {t_c * unit:>10.1f} {t_k / t_c:>10.2f}x"
        if torch_fn is not None and self.torch is not None:
            t_t = self.time(torch_fn)
            line += f" {t_t * unit:>10.1f} {t_k / t_t:>10.2f}x"
        print(line, flush=True)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(_host(a), _host(b), rtol=rtol, atol=atol)


def _host(value):
    if hasattr(value, "get"):
        return value.get()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


# -- (a) and (b): per-call overhead, and a forward pass ---------------------------------------


def chain_case(s: Suite, n_ops: int):
    x_host = np.linspace(-1, 1, 16, dtype=np.float32)
    x = s.cp.asarray(x_host)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, (16,), name="x")
        y = p
        for i in range(n_ops):
            y = getattr(kn, CHAIN_NAMES[i % 3])(y)
        f = kn.function([p], y, device=s.device, return_device_arrays=True)

    def by_hand(m, v):
        for i in range(n_ops):
            v = getattr(m, CHAIN_NAMES[i % 3])(v)
        return v

    xt = s.torch.asarray(x_host, device=f"cuda:{s.index}") if s.torch else None
    return (lambda: f(x)), (lambda: by_hand(s.cp, x)), (lambda: by_hand(s.torch, xt))


def init_weights(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [
        ((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def mlp_forward_case(s: Suite, batch=128, sizes=(784, 512, 512, 10)):
    weights = init_weights(sizes)
    x_host = np.random.default_rng(1).standard_normal((batch, sizes[0])).astype(np.float32)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.float32, ("batch", sizes[0]), name="x")
        h = p
        for i, (w, b) in enumerate(weights):
            h = h @ kn.Variable(w, name=f"w{i}") + kn.Variable(b, name=f"b{i}")
            h = kn.relu(h) if i < len(weights) - 1 else h
        f = kn.function([p], h, device=s.device, return_device_arrays=True)

    def by_hand(m, v, params, relu):
        for i, (w, b) in enumerate(params):
            v = m.matmul(v, w) + b
            v = relu(v) if i < len(params) - 1 else v
        return v

    x, cw = s.cp.asarray(x_host), [(s.cp.asarray(w), s.cp.asarray(b)) for w, b in weights]
    kiln_fn = lambda: f(x)  # noqa: E731
    cupy_fn = lambda: by_hand(s.cp, x, cw, lambda v: s.cp.maximum(v, 0))  # noqa: E731
    torch_fn = None
    if s.torch:
        dev = f"cuda:{s.index}"
        tw = [(s.torch.asarray(w, device=dev), s.torch.asarray(b, device=dev)) for w, b in weights]
        xt = s.torch.asarray(x_host, device=dev)
        torch_fn = lambda: by_hand(s.torch, xt, tw, s.torch.relu)  # noqa: E731
    return kiln_fn, cupy_fn, torch_fn, lambda: _close(kiln_fn(), cupy_fn())


# -- (c) fusion against the copy bandwidth ----------------------------------------------------


def fused_chain(a, b, m):
    """bench_fusion's 8-op chain: tanh((a*b + a) * 0.5) - b, relu'd, squared, + 1."""
    t = m.tanh((a * b + a) * 0.5) - b
    t = m.clamp_min(t, 0.0) if m.__name__ == "torch" else m.maximum(t, 0.0)
    return t * t + 1.0


def fusion_rows(s: Suite, n: int) -> None:
    cp = s.cp
    rng = np.random.default_rng(0)
    a_host, b_host = (rng.standard_normal((n, n), np.float32) for _ in range(2))
    a, b = cp.asarray(a_host), cp.asarray(b_host)
    with kn.Graph().as_default():
        pa, pb = (kn.placeholder(kn.float32, (n, n), name=name) for name in "ab")
        y = fused_chain(pa, pb, kn)
        fused = kn.function([pa, pb], y, device=s.device, return_device_arrays=True)
        plain = kn.function([pa, pb], y, device=s.device, return_device_arrays=True,
                            passes=[("simplify", simplify)])  # fmt: skip
    kernels_before = len(fused_cuda._BY_TEXT)
    _close(fused(a, b), fused_chain(a, b, cp), rtol=1e-5, atol=1e-6)
    one_kernel = len(fused_cuda._BY_TEXT) > kernels_before
    dst = cp.empty_like(a)

    def copy():
        dst.data.copy_from_device_async(a.data, a.nbytes)

    t_copy = s.time(copy)
    t_fused, t_plain, t_cupy = (s.time(fn) for fn in (
        lambda: fused(a, b), lambda: plain(a, b), lambda: fused_chain(a, b, cp)))  # fmt: skip
    copy_bw = 2 * a.nbytes / t_copy  # a copy reads and writes each byte once
    fused_bw = 3 * a.nbytes / t_fused  # the fused kernel reads a and b, writes the result
    print(f"(c) 8 ops on 2 x f32[{n},{n}]: device-to-device copy {t_copy * 1e6:.0f} µs "
          f"({copy_bw / 1e9:.0f} GB/s)")  # fmt: skip
    print(f"    kiln fused {t_fused * 1e6:.0f} µs ({fused_bw / 1e9:.0f} GB/s, "
          f"{fused_bw / copy_bw:.0%} of copy bandwidth; "
          f"{'one generated kernel' if one_kernel else 'NOT one generated kernel'}); "
          f"kiln unfused {t_plain * 1e6:.0f} µs; CuPy by hand {t_cupy * 1e6:.0f} µs "
          f"(kiln fused / CuPy {t_fused / t_cupy:.2f}x)")  # fmt: skip
    if s.torch:
        ta, tb = (s.torch.asarray(v) for v in (a, b))  # zero-copy: __cuda_array_interface__
        t_torch = s.time(lambda: fused_chain(ta, tb, s.torch))
        print(f"    PyTorch eager {t_torch * 1e6:.0f} µs (kiln fused / PyTorch "
              f"{t_fused / t_torch:.2f}x)")  # fmt: skip


# -- (d) training steps -----------------------------------------------------------------------


def kiln_step(s: Suite, sizes, batch, weights):
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (batch, sizes[0]), name="x")
        labels = kn.placeholder(kn.int64, (batch,), name="labels")
        params, h = [], x
        for k, (w0, b0) in enumerate(weights):
            w, b = kn.Variable(w0.copy(), name=f"w{k}"), kn.Variable(b0.copy(), name=f"b{k}")
            params += [w, b]
            h = h @ w + b
            h = kn.relu(h) if k < len(weights) - 1 else h
        loss = kn.cross_entropy(h, labels)
        updates = {p: p - LR * g for p, g in zip(params, kn.grad(loss, params))}
        f = kn.function([x, labels], loss, updates=updates, device=s.device,
                        return_device_arrays=True)  # fmt: skip
    return f, params


class CupyStep:
    """bench_training's NumPy step in CuPy: preallocated buffers, in-place updates; the loss
    stays on the GPU, as kiln's does."""

    def __init__(self, cp, sizes, batch, weights):
        self.cp = cp
        self.w = [cp.asarray(w) for w, _ in weights]
        self.b = [cp.asarray(b) for _, b in weights]
        self.h = [cp.empty((batch, n), cp.float32) for n in sizes]
        self.g = [cp.empty((batch, n), cp.float32) for n in sizes]
        self.gw = [cp.empty_like(w) for w in self.w]
        self.rows = cp.arange(batch)

    def __call__(self, x, labels):
        cp, h, g, n, rows = self.cp, self.h, self.g, len(self.w), self.rows
        h[0] = x
        for k in range(n):
            cp.matmul(h[k], self.w[k], out=h[k + 1])
            h[k + 1] += self.b[k]
            if k < n - 1:
                cp.maximum(h[k + 1], 0, out=h[k + 1])
        shifted = h[n] - h[n].max(axis=1, keepdims=True)
        exp = cp.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = cp.mean(cp.log(total[:, 0]) - shifted[rows, labels])
        cp.divide(exp, total, out=g[n])
        g[n][rows, labels] -= 1
        g[n] /= len(labels)
        for k in range(n - 1, -1, -1):
            cp.matmul(h[k].T, g[k + 1], out=self.gw[k])
            gb = g[k + 1].sum(axis=0)
            if k > 0:
                cp.matmul(g[k + 1], self.w[k].T, out=g[k])
                g[k] *= h[k] > 0
            self.w[k] -= LR * self.gw[k]
            self.b[k] -= LR * gb
        return loss


def torch_step(torch, index, weights):
    dev = f"cuda:{index}"
    params = [torch.tensor(v, device=dev, requires_grad=True) for pair in weights for v in pair]

    def step(x, labels):
        h = x
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            h = torch.relu(h) if k < len(params) - 2 else h
        loss = torch.nn.functional.cross_entropy(h, labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(LR * g)
        return loss

    return step


def training_row(s: Suite, name, sizes, batch) -> None:
    rng = np.random.default_rng(1)
    x_host = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels_host = rng.integers(0, sizes[-1], batch)
    weights = init_weights(sizes)
    x, labels = s.cp.asarray(x_host), s.cp.asarray(labels_host)
    f, params = kiln_step(s, sizes, batch, weights)
    ref = CupyStep(s.cp, sizes, batch, weights)

    def check():  # one step each, then the losses and the first weights agree
        _close(f(x, labels), ref(x, labels), rtol=1e-4, atol=1e-5)
        _close(params[0].numpy(), ref.w[0], rtol=1e-4, atol=1e-5)

    torch_fn = None
    if s.torch:
        step = torch_step(s.torch, s.index, weights)
        xt, lt = s.torch.asarray(x), s.torch.asarray(labels)
        torch_fn = lambda: step(xt, lt)  # noqa: E731
    s.row(name, lambda: f(x, labels), lambda: ref(x, labels), torch_fn, unit=1e3, check=check)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test")
    parser.add_argument("--device", default="cuda", help="cuda or cuda:N (default: cuda)")
    args = parser.parse_args()
    try:
        kn.runtime.get_backend(args.device)
    except kn.DeviceError as e:
        print(f"bench_gpu: {e}", file=sys.stderr)
        return 1
    device = args.device if ":" in args.device else "cuda:0"
    s = Suite(device, args.quick)
    torch_note = f"PyTorch {s.torch.__version__}" if s.torch else "PyTorch not importable"
    print(f"kiln {kn.__version__}, CuPy {s.cp.__version__}, {torch_note}, Python "
          f"{platform.python_version()}; {device}: {kn.cuda.get_device_name(s.index)}; "
          f"best of {s.repeats} repeats")  # fmt: skip
    header = f"{'case':<40} {'kiln':>10} {'CuPy':>10} {'kiln/CuPy':>10}"
    header += f" {'PyTorch':>10} {'kiln/PT':>10}" if s.torch else ""
    print(f"{header}  (µs per call)")
    for n_ops in (1, 10, 100):
        s.row(f"(a) chain of {n_ops} elementwise ops, f32[16]", *chain_case(s, n_ops))
    kiln_fn, cupy_fn, torch_fn, check = mlp_forward_case(s)
    s.row("(b) MLP 784-512-512-10 forward, batch 128", kiln_fn, cupy_fn, torch_fn, check=check)
    fusion_rows(s, 1024 if args.quick else 4096)
    print(f"{header}  (ms per step)")
    mlp = [784, 512, 512, 10]
    for batch in (16, 128, 1024):
        training_row(s, f"(d) MLP 784-512-512-10, batch {batch}", mlp, batch)
    training_row(s, "(d) MLP 16x1024, batch 512", [1024] * 17, 512)
    print(kn.cuda.memory_summary(device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
