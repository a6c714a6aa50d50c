"""The MLP training step of bench_training.py (784-512-512-10, SGD, softmax cross-entropy,
float32) in TensorFlow 1.x graph mode (`tf.compat.v1`: placeholders, Variables, a Session
running the optimizer's train op), beside kiln's step and the step's GEMMs alone (the floor),
measured interleaved in one run, single-threaded (TensorFlow's intra- and inter-op pools of
one thread). Issue 17 asks kiln's step never to be slower than TF1's. Needs TensorFlow
(`pip install tensorflow-cpu`); without it the script says so and exits.

    python bench/bench_peer_tf1.py [--quick]
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from bench_overhead import per_call_seconds  # noqa: E402
from bench_training import LR, GemmFloor, init_weights, kiln_step  # noqa: E402

SIZES = [784, 512, 512, 10]


def tf1_step(tf, sizes, batch, weights):
    """A callable running one TF1 training step (the optimizer's train op) and returning the
    loss, and a function giving its first layer's weight."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, (batch, sizes[0]))
        labels = v1.placeholder(tf.int64, (batch,))
        h, variables = x, []
        for k, (w0, b0) in enumerate(weights):
            w, b = v1.Variable(w0), v1.Variable(b0)
            variables.append(w)
            h = tf.matmul(h, w) + b
            if k < len(weights) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h)
        )
        train = v1.train.GradientDescentOptimizer(LR).minimize(loss)
        init = v1.global_variables_initializer()
    config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    session = v1.Session(graph=graph, config=config)
    session.run(init)

    def step(xv, yv):
        return session.run([loss, train], {x: xv, labels: yv})[0]

    return step, lambda: session.run(variables[0])


def case(tf, batch, repeats, min_s):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    weights = init_weights(SIZES)
    f, params = kiln_step(SIZES, batch, weights)
    g, first_weight = tf1_step(tf, SIZES, batch, weights)
    loss_k, loss_t = float(f(x, labels)), float(g(x, labels))  # same start, same step
    assert abs(loss_k - loss_t) < 1e-4 * max(1.0, abs(loss_t)), (loss_k, loss_t)
    np.testing.assert_allclose(params[0].numpy(), first_weight(), rtol=1e-4, atol=1e-5)
    floor = GemmFloor(SIZES, batch, weights)
    best = [float("inf")] * 3
    for _ in range(repeats):  # interleaved: a busy moment hits all three alike
        for j, fn in enumerate((lambda: f(x, labels), lambda: g(x, labels), floor)):
            best[j] = min(best[j], per_call_seconds(fn, 1, min_s))
    t_k, t_t, t_f = best
    print(f"MLP 784-512-512-10 step, b{batch:<4} kiln {t_k * 1e3:7.3f} ms  TF1 {t_t * 1e3:7.3f} ms"
          f"  GEMMs {t_f * 1e3:7.3f} ms  kiln/TF1 {t_k / t_t:.3f}x  kiln/floor {t_k / t_f:.3f}x"
          f"  TF1/floor {t_t / t_f:.3f}x", flush=True)  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per case")
    args = parser.parse_args()
    try:
        import tensorflow as tf
    except ImportError:
        print("TensorFlow is not installed (pip install tensorflow-cpu): nothing to compare")
        return 0
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    print(f"TensorFlow {tf.__version__}, tf.compat.v1 graph mode, one thread", flush=True)
    repeats, min_s = (1, 0.01) if args.quick else (7, 0.2)
    for batch in (128, 16):
        case(tf, batch, repeats, min_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
