"""`Module.register_backward_hook`, PyTorch's deprecated module hook, against PyTorch 2.13
(skipped without torch): it runs on the gradients of the last op of each call (the
`grad_fn` of the first result, through `Node.register_hook`), with torch's FutureWarnings
where those cannot be the module's. Every expected value is torch's, on the same data."""

import warnings

import numpy as np
import pytest

import kiln as kn

torch = pytest.importorskip("torch")

X = np.array([[-1.0, 2.0, 0.5], [3.0, -0.5, 1.0]], np.float32)
WEIGHT = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)


def _linear(lib):
    m = lib.nn.Linear(3, 2, bias=False)
    with torch.no_grad() if lib is torch else kn.no_grad():
        m.weight.copy_(lib.tensor(WEIGHT))
    return m


def _sequential(lib):
    m = lib.nn.Sequential(_linear(lib), lib.nn.ReLU())
    return m


MODULES = {
    "relu": lambda lib: lib.nn.ReLU(),
    "sigmoid": lambda lib: lib.nn.Sigmoid(),
    "tanh": lambda lib: lib.nn.Tanh(),
    "linear-no-bias": _linear,  # one matrix product: (x, weight.T)
    "sequential": _sequential,  # two modules: the hook sees the ReLU's op only
}


def _numpy(grads):
    return [None if g is None else g.detach().numpy().copy() for g in grads]


def _run(lib, name, through_op):
    """The hook's (grad_input, grad_output), the FutureWarnings of the call, x.grad."""
    m = MODULES[name](lib)
    seen = []
    m.register_backward_hook(lambda mod, gi, go: seen.append((_numpy(gi), _numpy(go))))
    x = lib.tensor(X, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = m(x * 1.0 if through_op else x)
    weights = lib.tensor(np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)))
    (y * weights).sum().backward()
    future = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    return seen, future, x.grad.numpy()


@pytest.mark.parametrize("through_op", [True, False], ids=["input-from-an-op", "leaf-input"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_legacy_backward_hook_sees_torchs_gradients_and_warnings(name, through_op):
    """The same grad_input (one per input of the last op, None where none flows) and
    grad_output, to 1e-6, and the same FutureWarnings (a leaf input, or several ops: the
    'multiple autograd Nodes' one)."""
    want_seen, want_warn, want_grad = _run(torch, name, through_op)
    got_seen, got_warn, got_grad = _run(kn, name, through_op)
    assert got_warn == want_warn
    assert len(got_seen) == len(want_seen) == 1
    for got, want in zip(got_seen[0], want_seen[0]):
        assert [g is None for g in got] == [w is None for w in want]
        for g, w in zip(got, want):
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # float32 sigmoid, tanh
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-6)


def test_a_returned_grad_input_replaces_the_ops_as_torch():
    got = {}
    for lib in (torch, kn):
        m = lib.nn.Tanh()
        m.register_backward_hook(lambda mod, gi, go: (gi[0] * 0 + 7,))
        x = lib.tensor(X, requires_grad=True)
        m(x * 2).sum().backward()
        got[lib] = x.grad.numpy()
    np.testing.assert_array_equal(got[kn], got[torch])  # 7 * 2 everywhere


def test_a_module_takes_one_kind_of_backward_hook_as_torch():
    for lib, error in ((torch, RuntimeError), (kn, kn.errors.UsageError)):
        m = lib.nn.ReLU()
        m.register_backward_hook(lambda *a: None)
        with pytest.raises(error, match="Cannot use both regular backward hooks and full"):
            m.register_full_backward_hook(lambda *a: None)
        m = lib.nn.ReLU()
        m.register_full_backward_hook(lambda *a: None)
        with pytest.raises(error, match="Cannot use both regular backward hooks and full"):
            m.register_backward_hook(lambda *a: None)


def test_removed_legacy_hook_no_longer_runs_and_no_grad_attaches_nothing():
    m, seen = kn.nn.ReLU(), []
    handle = m.register_backward_hook(lambda *a: seen.append(1))
    with kn.no_grad():
        m(kn.tensor(X))
    m(kn.tensor(X, requires_grad=True) * 1).sum().backward()
    handle.remove()
    m(kn.tensor(X, requires_grad=True) * 1).sum().backward()
    assert seen == [1]


def test_legacy_hook_in_graph_mode_says_it_does_not_run():
    m = kn.nn.ReLU()
    m.register_backward_hook(lambda *a: None)
    with kn.Graph().as_default():
        x = kn.placeholder(kn.float32, (2, 3), name="x")
        with pytest.warns(UserWarning, match="do not run in graph mode or under kn.compile"):
            m(x)


def test_node_register_hook_matches_torch():
    """`grad_fn.register_hook(fn(grad_inputs, grad_outputs))`: the op's inputs' gradients
    after summing back to their shapes (a broadcast add), None for a constant operand."""
    got = {}
    for lib in (torch, kn):
        a = lib.tensor(X, requires_grad=True)
        b = lib.tensor(np.float32([1.0, 2.0, 3.0]), requires_grad=True)
        y = a + b
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append((_numpy(gi), _numpy(go))))
        (y * 2).sum().backward()
        got[lib] = seen
    (gi_k, go_k), (gi_t, go_t) = got[kn][0], got[torch][0]
    assert [g.shape for g in gi_k] == [g.shape for g in gi_t] == [(2, 3), (3,)]
    for g, w in zip(gi_k + go_k, gi_t + go_t):
        np.testing.assert_array_equal(g, w)
