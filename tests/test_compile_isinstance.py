"""Inside a kn.compile trace, the function's code sees its values' eager classes.

A traced tensor is a graph value (a Symbol). Before, `isinstance(x, kn.Tensor)` was False
there, so code branching on it (as PyTorch code does: `if isinstance(mask, torch.Tensor)`)
took another branch than eagerly and the compiled call gave another result, silently. The
expected values are the same function's eager results (torch 2.13 answers True in both
modes: tests/ports/test_port_pt_compile_state.py compares with it).
"""

import numpy as np

import kiln as kn


def masked(x, mask=None):
    if isinstance(mask, kn.Tensor):
        x = x.masked_fill(mask, 0.0)
    return x * 2


def test_a_branch_on_isinstance_is_taken_as_eagerly():
    x = kn.tensor([1.0, -2.0, 3.0])
    mask = kn.tensor([True, False, True])
    eager = masked(x, mask)
    compiled = kn.compile(masked)(x, mask)
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())
    np.testing.assert_array_equal(compiled.numpy(), [0.0, -4.0, 0.0])


def test_parameters_and_buffers_keep_their_classes():
    lin = kn.nn.Linear(2, 2)
    bn = kn.nn.BatchNorm1d(2)

    def classes(x):
        return (
            isinstance(x, kn.Tensor),
            isinstance(lin.weight, kn.nn.Parameter),
            isinstance(bn.running_mean, kn.nn.Parameter),
            isinstance(bn.running_mean, kn.Tensor),
            isinstance(x, kn.nn.Parameter),
            kn.is_tensor(x + 1),
            isinstance(x, (int, float)),
        )

    expected = classes(kn.ones(2))
    assert expected == (True, True, False, True, False, True, False)
    assert kn.compile(classes)(kn.ones(2)) == expected


def test_graph_mode_and_kiln_itself_still_see_symbols():
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2,))
    assert not isinstance(x, kn.Tensor)
    assert type(x) is kn.Symbol and isinstance(x, kn.Symbol)

    def inside(x):
        return isinstance(x, kn.Symbol), x.sum()

    is_symbol, total = kn.compile(inside)(kn.ones(3))
    assert (is_symbol, float(total)) == (True, 3.0)


def test_backward_hooks_traced_with_the_gradient_see_tensors():
    # a module's full backward hook runs while kn.compile traces the gradient: it sees its
    # gradients as kn.Tensors, as the eager hook does
    for compiled in (False, True):
        lin, seen = kn.nn.Linear(2, 1), []
        lin.register_full_backward_hook(
            lambda m, gi, go: seen.append(
                (isinstance(gi[0], kn.Tensor), isinstance(go[0], kn.Tensor))
            )
        )
        f = lambda x: lin(x).sum()
        step = kn.compile(f) if compiled else f
        step(kn.ones(3, 2, requires_grad=True)).backward()
        assert seen == [(True, True)]
