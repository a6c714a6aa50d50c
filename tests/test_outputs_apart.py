"""Outputs that the passes merge into one value still come back as arrays of their own.

`y1 = b + b; y2 = b + b` are two values in the user's program (and in the unplanned one), so
changing one result in place must leave the other alone. Common-subexpression elimination
and `x + -0.0 -> x` made them one node, and the program returned that node's array twice: an
in-place change to one output showed in the other. Found by a random eager-against-compiled
comparison (the programs below are three it drew). Expected values: the eager run's, which
are PyTorch's (two additions give two tensors), computed by hand here.
"""

import numpy as np

import kiln as kn


def test_graph_mode_fetches_of_merged_values_do_not_share_memory():
    with kn.Graph().as_default():
        b = kn.placeholder(kn.float64, (4,), name="b")
        y1 = b + b
        y2 = b + b  # the same value: CSE makes it y1's node
        y3 = y1 + -0.0  # simplify makes it y1
        f = kn.function([b], [y1, y2, y3])
        outs = f(np.ones(4))
    outs[0] += 100.0
    np.testing.assert_array_equal(outs[1], [2.0] * 4)
    np.testing.assert_array_equal(outs[2], [2.0] * 4)
    assert not any(np.shares_memory(p, q) for k, p in enumerate(outs) for q in outs[k + 1 :])


def test_the_same_value_fetched_twice_gives_two_arrays():
    with kn.Graph().as_default():
        b = kn.placeholder(kn.float64, (2,), name="b")
        y = b * 3.0
        f = kn.function([b], [y, y])
        first, second = f(np.ones(2))
    first[0] = 0.0
    assert second.tolist() == [3.0, 3.0]


def _two_sums(a, b):
    return b + b, b + b, a - a


def _sum_and_its_reshape(a, b):
    v2 = b + b
    v3 = b + b
    return v3, b, v2.reshape(v2.shape)


def _zero_plus(a, b):
    a.relu_()
    v2 = a - a
    v3 = v2 * a
    v3.zero_()
    return b, v3 + v2, v2  # v3 + v2 is v2 after simplification


def _bump_each(outs):
    """Each output plus 1000 (k + 1) in place, in turn; the values of all after each."""
    seen = []
    with kn.no_grad():
        for k, o in enumerate(outs):
            o.add_(1000.0 * (k + 1))
            seen.append([p.numpy().copy() for p in outs])
    return seen


def _inputs():
    rng = np.random.default_rng(0)
    return kn.tensor(rng.standard_normal((4, 4))), kn.tensor(rng.standard_normal(4))


def test_compiled_outputs_merged_by_the_passes_are_tensors_of_their_own():
    for fn in (_two_sums, _sum_and_its_reshape, _zero_plus):
        eager = _bump_each(fn(*_inputs()))
        compiled = kn.compile(fn)
        compiled(*_inputs())  # traces
        got = _bump_each(compiled(*_inputs()))
        for step_e, step_c in zip(eager, got):
            for e, c in zip(step_e, step_c):
                np.testing.assert_array_equal(c, e, err_msg=fn.__name__)
