"""Per-op overhead of eager mode beside a hand-written NumPy loop (issue 5's target: <= 2x).

(a) chains of 1, 10 and 100 unary ops (sin, cos, tanh, ...) on float32[16], where the time is
all overhead: eager Tensors without grad, the same with NumPy arrays through kiln (no
Tensor), and Tensors that require grad (forward only, and forward + backward);
(b) chains of 100 binary ops on float32[16]: Tensor with Tensor, and Tensor with a Python
float, each beside its NumPy loop;
(c) one SGD training step of an MLP 784-128-10 on a batch of 64 (forward, backward, update)
beside the same step written by hand in NumPy;
(d) the tape: a 200-op elementwise chain on float32[16] (bench_fusion's chain: mul, add, tanh,
mul, sub, exp), forward without grad and forward + backward() with requires_grad=True,
beside PyTorch eager (when importable) and the NumPy loop;
(e) factories and random numbers (`randn(1000)`, `zeros(1000)`, ...) beside PyTorch's;
(f) one AdamW training step written the PyTorch way (nn.Sequential(Linear(64, 128), ReLU(),
Linear(128, 10)), F.cross_entropy, zero_grad / backward / step, batch 16, float32) beside
PyTorch's, and its parts: one Linear's forward, cross_entropy's forward, the forward pass,
backward(), opt.step() and opt.zero_grad(); with --step-parts, each part timed within the
step, kiln's and PyTorch's rounds alternating.
Single-threaded; each time is the best of several repeats, in microseconds per call. In (d)
and (e) the repeats of kiln and its peers alternate, and each row gives the spread of the
per-repeat ratio kiln / PyTorch (the machine's load moves both alike).

    python bench/bench_eager.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_overhead import per_call_seconds  # noqa: E402

import kiln as kn  # noqa: E402

CHAIN = ((kn.sin, np.sin), (kn.cos, np.cos), (kn.tanh, np.tanh))


def chain(fns, n_ops):
    def run(v):
        for i in range(n_ops):
            v = fns[i % len(fns)](v)
        return v

    return run


def chain_cases(n_ops: int):
    value = np.linspace(-1, 1, 16, dtype=np.float32)
    x = kn.from_numpy(value)
    w = kn.tensor(value, requires_grad=True)
    kiln_chain = chain([k for k, _ in CHAIN], n_ops)
    numpy_chain = chain([n for _, n in CHAIN], n_ops)

    def backward():
        kiln_chain(w).sum().backward()

    return {
        "NumPy loop": lambda: numpy_chain(value),
        "eager Tensor, no grad": lambda: kiln_chain(x),
        "kiln on NumPy arrays": lambda: kiln_chain(value),
        "eager, requires grad (forward)": lambda: kiln_chain(w),
        "eager, forward + backward": backward,
    }


def binary_cases(n_ops: int = 100):
    """(name, kiln chain, NumPy chain): `n_ops` alternating products and sums, of two
    arrays or of an array and Python floats."""
    a = np.linspace(-1, 1, 16, dtype=np.float32)
    b = np.linspace(0.5, 1, 16, dtype=np.float32)
    x, y = kn.from_numpy(a), kn.from_numpy(b)

    def with_tensor(v, w):
        for i in range(n_ops):
            v = v * w if i % 2 else v + w
        return v

    def with_scalar(v):
        for i in range(n_ops):
            v = v * 0.5 if i % 2 else v + 1.0
        return v

    return (
        ("a*b, a+b", lambda: with_tensor(x, y), lambda: with_tensor(a, b)),
        ("a*0.5, a+1.0", lambda: with_scalar(x), lambda: with_scalar(a)),
    )


def mlp_step_case(batch: int = 64, sizes=(784, 128, 10), lr: float = 0.01):
    """kiln eager and NumPy versions of one SGD step of an MLP with ReLU and cross-entropy."""
    kn.manual_seed(0)
    model = kn.nn.MLP(list(sizes))
    opt = kn.optim.SGD(model.parameters(), lr=lr)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, sizes[0]), np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    xt, lt = kn.from_numpy(x), kn.from_numpy(labels)
    w1, b1, w2, b2 = (p.numpy() for p in model.parameters())

    def kiln_step():
        opt.zero_grad()
        loss = kn.cross_entropy(model(xt), lt)
        loss.backward()
        opt.step()
        return loss.item()

    def numpy_step():
        h = x @ w1.T + b1
        a = np.maximum(h, 0)
        z = a @ w2.T + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(batch), labels]).mean()
        dz = p
        dz[np.arange(batch), labels] -= 1
        dz /= batch
        da = (dz @ w2) * (h > 0)
        for param, grad in ((w2, dz.T @ a), (b2, dz.sum(0)), (w1, da.T @ x), (b1, da.sum(0))):
            param -= lr * grad
        return float(loss)

    return kiln_step, numpy_step


# (d): one step of the chain, written once for kiln, PyTorch and NumPy (bench_fusion's).
TAPE_STEPS = (
    lambda v, a, m: v * a,
    lambda v, a, m: v + 0.5,
    lambda v, a, m: m.tanh(v),
    lambda v, a, m: v * 1.5,
    lambda v, a, m: v - a,
    lambda v, a, m: m.exp(v),
)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def tape_cases(torch, n_ops: int = 200):
    """{row: {peer: callable}}: the chain without grad, and forward + backward."""
    rng = np.random.default_rng(0)
    x_v, a_v = (rng.uniform(-1, 1, 16).astype(np.float32) for _ in range(2))

    def chain(v, a, m):
        for i in range(n_ops):
            v = TAPE_STEPS[i % len(TAPE_STEPS)](v, a, m)
        return v

    def backward(lib, x, a):
        def run():
            x.grad = a.grad = None
            chain(x, a, lib).sum().backward()

        return run

    x, a = kn.tensor(x_v), kn.tensor(a_v)
    xg, ag = kn.tensor(x_v, requires_grad=True), kn.tensor(a_v, requires_grad=True)
    forward = {"kiln": lambda: chain(x, a, kn), "NumPy": lambda: chain(x_v, a_v, np)}
    both = {"kiln": backward(kn, xg, ag)}
    if torch is not None:
        tx, ta = torch.tensor(x_v), torch.tensor(a_v)
        tgx, tga = (torch.tensor(v, requires_grad=True) for v in (x_v, a_v))
        forward["PyTorch"] = lambda: chain(tx, ta, torch)
        both["PyTorch"] = backward(torch, tgx, tga)
        both["PyTorch"]()
        both["kiln"]()
        np.testing.assert_allclose(xg.grad.numpy(), tgx.grad.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(ag.grad.numpy(), tga.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(forward["kiln"]().numpy(), forward["NumPy"](), rtol=1e-5)
    return {f"(d) {n_ops}-op chain, f32[16], no grad": forward,
            f"(d) {n_ops}-op chain, f32[16], forward + backward": both}  # fmt: skip


FACTORIES = ("randn(1000)", "rand(1000)", "randint(0, 10, (1000,))", "randn(16)",
             "zeros(1000)", "ones(1000)", "empty(1000)", "full((1000,), 2.0)", "arange(1000)",
             "tensor([1.0, 2.0, 3.0])")  # fmt: skip
NUMPY_FACTORIES = {
    "randn(1000)": "rng.standard_normal(1000, np.float32)",
    "rand(1000)": "rng.random(1000, np.float32)",
    "randint(0, 10, (1000,))": "rng.integers(0, 10, 1000)",
    "randn(16)": "rng.standard_normal(16, np.float32)",
    "zeros(1000)": "np.zeros(1000, np.float32)",
    "ones(1000)": "np.ones(1000, np.float32)",
    "empty(1000)": "np.empty(1000, np.float32)",
    "full((1000,), 2.0)": "np.full(1000, 2.0, np.float32)",
    "arange(1000)": "np.arange(1000)",
    "tensor([1.0, 2.0, 3.0])": "np.array([1.0, 2.0, 3.0], np.float32)",
}


def factory_cases(torch):
    """{row: {peer: callable}}: each factory in kiln, PyTorch and NumPy (a persistent
    `np.random.Generator` for the random ones)."""
    names = {"kn": kn, "np": np, "rng": np.random.default_rng(0), "torch": torch}
    rows = {}
    for call in FACTORIES:
        row = {"kiln": eval(f"lambda: kn.{call}", names)}  # noqa: S307 — our own strings
        if torch is not None:
            row["PyTorch"] = eval(f"lambda: torch.{call}", names)  # noqa: S307
        row["NumPy"] = eval(f"lambda: {NUMPY_FACTORIES[call]}", names)  # noqa: S307
        rows[f"(e) {call}"] = row
    return rows


def training_step_cases(torch, batch: int = 16, sizes=(64, 128, 10)):
    """{row: {peer: callable}}: (f), an AdamW step of nn.Sequential(Linear, ReLU, Linear) with
    F.cross_entropy, in kiln and (when importable) PyTorch from the same weights, and its parts.
    Both libraries' first two steps are checked to agree before anything is timed."""
    rng = np.random.default_rng(0)
    x_v = rng.standard_normal((batch, sizes[0]), np.float32)
    y_v = rng.integers(0, sizes[-1], batch)

    def build(lib, weights=None):
        nn = lib.nn
        model = nn.Sequential(
            nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2])
        )
        if weights is not None:
            with lib.no_grad():
                for p, w in zip(model.parameters(), weights):
                    p.copy_(lib.tensor(w))
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = lib.tensor(x_v), lib.tensor(y_v)
        F = nn.functional

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        h_logits = model(x).detach()
        parts = {
            "step": step,
            "Linear(64, 128) forward": lambda: model[0](x),
            "F.cross_entropy forward": lambda: F.cross_entropy(h_logits, y),
            "model(x) forward": lambda: model(x),
            "forward + cross_entropy + backward()": lambda: F.cross_entropy(model(x), y).backward(),
            "opt.step()": opt.step,
            "opt.zero_grad()": opt.zero_grad,
        }
        return model, parts

    kn.manual_seed(0)
    k_model, k_parts = build(kn)
    peers = {"kiln": k_parts}
    if torch is not None:
        weights = [p.detach().numpy().copy() for p in k_model.parameters()]
        t_model, t_parts = build(torch, weights)
        peers["PyTorch"] = t_parts
        for _ in range(2):  # the same losses and the same updated weights, two steps
            k_loss, t_loss = k_parts["step"](), t_parts["step"]()
            np.testing.assert_allclose(k_loss.item(), t_loss.item(), rtol=1e-5)
            for kp, tp in zip(k_model.parameters(), t_model.parameters()):
                np.testing.assert_allclose(kp.detach().numpy(), tp.detach().numpy(),
                                           rtol=1e-5, atol=1e-6)  # fmt: skip
        ce = "F.cross_entropy forward"
        np.testing.assert_allclose(k_parts[ce]().item(), t_parts[ce]().item(), rtol=1e-5)
    label = f"(f) MLP {'-'.join(map(str, sizes))} AdamW, b{batch}"
    return {f"{label}: {part}" if part == "step" else f"(f)   {part}":
            {peer: parts[part] for peer, parts in peers.items()} for part in k_parts}  # fmt: skip


def step_parts(torch, rounds: int, steps: int = 100, batch: int = 16, sizes=(64, 128, 10)):
    """(f) within the step: each part of the AdamW step (zero_grad, forward, loss, backward,
    step) timed apart around its call, kiln's and PyTorch's rounds of `steps` steps
    alternating in one process; the best round of each part, µs."""
    rng = np.random.default_rng(0)
    x_v = rng.standard_normal((batch, sizes[0]), np.float32)
    y_v = rng.integers(0, sizes[-1], batch)
    libs = {"kiln": kn} if torch is None else {"kiln": kn, "PyTorch": torch}
    runs = {}
    for name, lib in libs.items():
        nn = lib.nn
        model = nn.Sequential(
            nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2])
        )
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
        runs[name] = (nn.functional, lib.tensor(x_v), lib.tensor(y_v), model, opt)
    parts = ("zero_grad", "forward", "loss", "backward", "step")
    best = {name: dict.fromkeys(parts, float("inf")) for name in runs}
    clock = time.perf_counter
    for _ in range(rounds):
        for name, (F, x, y, model, opt) in runs.items():
            sums = dict.fromkeys(parts, 0.0)
            for _ in range(steps):
                t0 = clock()
                opt.zero_grad()
                t1 = clock()
                z = model(x)
                t2 = clock()
                loss = F.cross_entropy(z, y)
                t3 = clock()
                loss.backward()
                t4 = clock()
                opt.step()
                t5 = clock()
                for part, t in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                    sums[part] += t
            for part in parts:
                best[name][part] = min(best[name][part], sums[part] / steps * 1e6)
    print(f"\n(f) within the step, µs, best of {rounds} alternating rounds of {steps} steps")
    print(f"{'':<8}" + "".join(f"{p:>11}" for p in (*parts, "sum")))
    for name, b in best.items():
        cells = "".join(f"{v:>11.1f}" for v in (*b.values(), sum(b.values())))
        print(f"{name:<8}{cells}")


def interleaved(row: dict, repeats: int, min_batch_s: float) -> dict:
    """{peer: [seconds per call of each repeat]}, the peers' repeats alternating."""
    numbers = {}
    for name, fn in row.items():
        fn()  # warm up
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - start >= min_batch_s / len(row):
                break
            number *= 2
        numbers[name] = number
    times = {name: [] for name in row}
    for _ in range(repeats):
        for name, fn in row.items():
            number = numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    return times


def print_peers(rows: dict, repeats: int, min_batch_s: float) -> None:
    print(f"{'case':<54} {'kiln':>9} {'PyTorch':>9} {'NumPy':>9}   kiln/PyTorch (spread)")
    for label, row in rows.items():
        times = interleaved(row, repeats, min_batch_s)
        best = {name: min(ts) * 1e6 for name, ts in times.items()}
        cells = [
            f"{best[n]:>9.1f}" if n in best else f"{'-':>9}" for n in ("kiln", "PyTorch", "NumPy")
        ]
        ratio = ""
        if "PyTorch" in times:
            per = sorted(k / t for k, t in zip(times["kiln"], times["PyTorch"]))
            ratio = f"{best['kiln'] / best['PyTorch']:.2f}x ({per[0]:.2f}-{per[-1]:.2f})"
        print(f"{label:<54} {' '.join(cells)}   {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test")
    parser.add_argument("--only", metavar="TEXT", help="only rows (d)-(f) whose label holds TEXT")
    parser.add_argument("--step-parts", metavar="ROUNDS", type=int, default=0,
                        help="also time (f)'s parts within the step, best of ROUNDS")  # fmt: skip
    args = parser.parse_args()
    repeats, min_batch_s = (2, 0.002) if args.quick else (7, 0.05)
    print(f"kiln {kn.__version__}, NumPy {np.__version__}, Python {platform.python_version()}; "
          f"single-threaded; best of {repeats} repeats")  # fmt: skip
    if args.only is None:
        numpy_rows(repeats, min_batch_s)
    torch = _torch()
    print(f"\nµs per call; best of {repeats} alternating repeats"
          + ("" if torch is None else f"; PyTorch {torch.__version__}"))  # fmt: skip
    rows = {**tape_cases(torch), **factory_cases(torch), **training_step_cases(torch)}
    if args.only is not None:
        rows = {label: row for label, row in rows.items() if args.only in label}
    print_peers(rows, repeats, min_batch_s)
    if args.step_parts:
        step_parts(torch, args.step_parts)


def numpy_rows(repeats: int, min_batch_s: float) -> None:
    """(a)-(c): kiln beside the NumPy loop."""
    print(f"{'case':<54} {'µs/call':>9} {'µs/op':>7} {'vs NumPy':>9}")
    for n in (1, 10, 100):
        cases = chain_cases(n)
        np.testing.assert_allclose(cases["eager Tensor, no grad"]().numpy(),
                                   cases["NumPy loop"](), rtol=1e-5, atol=1e-6)  # fmt: skip
        base = per_call_seconds(cases["NumPy loop"], repeats, min_batch_s)
        for name, fn in cases.items():
            t = base if name == "NumPy loop" else per_call_seconds(fn, repeats, min_batch_s)
            label = f"chain of {n}, f32[16]: {name}"
            print(f"{label:<54} {t * 1e6:>9.1f} {t * 1e6 / n:>7.2f} {t / base:>8.2f}x")
    for name, kiln_fn, numpy_fn in binary_cases():
        np.testing.assert_allclose(kiln_fn().numpy(), numpy_fn(), rtol=1e-5, atol=1e-6)
        base = per_call_seconds(numpy_fn, repeats, min_batch_s)
        t = per_call_seconds(kiln_fn, repeats, min_batch_s)
        for label, time_s in (("NumPy loop", base), ("eager Tensor, no grad", t)):
            label = f"chain of 100 {name}, f32[16]: {label}"
            print(f"{label:<54} {time_s * 1e6:>9.1f} {time_s * 1e6 / 100:>7.2f} "
                  f"{time_s / base:>8.2f}x")  # fmt: skip
    kiln_step, numpy_step = mlp_step_case()
    assert abs(kiln_step() - numpy_step()) < 1e-4  # the same first step
    for name, fn in (("MLP 784-128-10 SGD step, batch 64: NumPy", numpy_step),
                     ("MLP 784-128-10 SGD step, batch 64: eager", kiln_step)):  # fmt: skip
        t = per_call_seconds(fn, repeats, min_batch_s)
        base = t if name.endswith("NumPy") else base
        print(f"{name:<54} {t * 1e6:>9.1f} {'':>7} {t / base:>8.2f}x")


if __name__ == "__main__":
    main()
