"""One MLP training step (784-512-512-10, batch 128, softmax cross-entropy, SGD) built three
ways from the same `kn.nn.MLP`: graph mode (`kn.function` with `kn.grad` and updates), eager
(the five-step loop: zero_grad, forward, loss, backward, step), and `kn.compile`:

- compiled step: forward, backward and the SGD update in one compiled function
  (`opt.minimize(loss)` inside it: the update becomes the program's assignment);
- compiled forward: forward and loss compiled, then `loss.backward()` through the compiled
  gradient program (one tape entry) and an eager `opt.step()`.

Prints ms per step and the ratios against graph mode (the issue's target: compiled step
<= 1.05x graph). Single-threaded; times are the best of several interleaved repeats.

    python bench/bench_compile_eager.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from bench_overhead import per_call_seconds  # noqa: E402

import kiln as kn  # noqa: E402

SIZES = [784, 512, 512, 10]
BATCH = 128
LR = 0.01


def make_model():
    kn.manual_seed(0)
    return kn.nn.MLP(SIZES)


def graph_step(model):
    """kn.function: the loss, with the SGD updates of every parameter."""
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (BATCH, SIZES[0]), name="x")
        labels = kn.placeholder(kn.int64, (BATCH,), name="labels")
        loss = kn.cross_entropy(model(x), labels)
        params = [p.variable_in(loss.graph) for p in model.parameters()]
        grads = kn.grad(loss, params)
        updates = {p: p - LR * g for p, g in zip(params, grads)}
        return kn.function([x, labels], loss, updates=updates)


def eager_step(model):
    opt = kn.optim.SGD(model.parameters(), lr=LR)

    def step(x, labels):
        opt.zero_grad()
        loss = kn.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return loss

    return step


def compiled_step(model):
    opt = kn.optim.SGD(lr=LR)

    @kn.compile
    def step(x, labels):
        loss = kn.cross_entropy(model(x), labels)
        opt.minimize(loss)
        return loss

    return step


def compiled_forward_step(model):
    opt = kn.optim.SGD(model.parameters(), lr=LR)
    forward = kn.compile(lambda x, labels: kn.cross_entropy(model(x), labels))

    def step(x, labels):
        opt.zero_grad()
        loss = forward(x, labels)
        loss.backward()
        opt.step()
        return loss

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per case")
    args = parser.parse_args()
    repeats, min_s = (1, 0.01) if args.quick else (7, 0.3)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    xt, lt = kn.tensor(x), kn.tensor(labels)
    ways = {
        "graph (kn.function + kn.grad)": (graph_step, (x, labels)),
        "eager (five-step loop)": (eager_step, (xt, lt)),
        "kn.compile: whole step": (compiled_step, (xt, lt)),
        "kn.compile: forward, tape backward": (compiled_forward_step, (xt, lt)),
    }
    steps, first = {}, {}
    for name, (build, inputs) in ways.items():
        model = make_model()
        steps[name] = (build(model), inputs)
        steps[name][0](*inputs)  # one step each from the same weights: the results agree
        first[name] = model[0].weight.numpy()
    reference = first["graph (kn.function + kn.grad)"]
    for name, weight in first.items():
        np.testing.assert_allclose(weight, reference, rtol=1e-5, atol=1e-6, err_msg=name)
    times = dict.fromkeys(steps, float("inf"))
    for _ in range(repeats):  # interleaved, so that a noisy moment does not favour one way
        for name, (step, inputs) in steps.items():
            t = per_call_seconds(lambda s=step, a=inputs: s(*a), 1, min_s)
            times[name] = min(times[name], t)
    graph = times["graph (kn.function + kn.grad)"]
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, SGD: one training step")
    print(f"{'way':<36} {'ms/step':>9} {'vs graph':>9}")
    for name, t in times.items():
        print(f"{name:<36} {t * 1e3:9.3f} {t / graph:8.3f}x")


if __name__ == "__main__":
    main()
