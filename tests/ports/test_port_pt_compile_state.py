"""PyTorch's dynamo tests (test/dynamo/test_functions.py, test_misc.py) as an oracle, the
cases about state: what a compiled function changes and reads outside its return value
(the lists and dicts it is passed, objects' attributes, globals and closure cells that change
between calls, module attributes and buffers, tensors changed in place, outputs that alias
inputs, random draws) is what eager code changes and reads, on every call. Expected values:
torch 2.13 eagerly (the oracle) where the code is plain torch code, else kiln eagerly (the
same function, not compiled). test_port_pt_compile.py has the scenarios about results.
"""

import copy
import warnings

import numpy as np
import pytest

import kiln as kn
from kiln.errors import UsageError

f32 = np.float32
A = np.arange(10, dtype=f32) - 3
B = np.linspace(-1, 2, 10).astype(f32)
M = np.arange(20, dtype=f32).reshape(2, 10) / 7


def _values(x):
    if isinstance(x, dict):
        return {k: _values(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_values(v) for v in x]
    return x.tolist() if hasattr(x, "tolist") else x


# -- lists and dicts passed in, changed by the function (test_list_slice, dict mutation) ----


def _containers(lib, compiled):
    xs, d = [lib.tensor(A)], {"a": lib.tensor(B)}

    def fn(x, xs, d):
        xs.append(x + 1)
        d["b"] = x * 2
        d["a"].add_(1)
        xs.append(x)  # the argument tensor itself
        return len(xs)

    f = kn.compile(fn) if compiled else fn
    x0 = lib.tensor(A)
    r1, r2 = f(x0, xs, d), f(lib.tensor(B), xs, d)
    return r1, r2, _values(xs), _values(d), xs[2] is x0


@pytest.mark.parametrize("compiled", [False, True])
def test_list_and_dict_arguments_changed_inside_are_the_callers(compiled):
    # regression: the trace changed lists and dicts rebuilt around its placeholders, so a
    # compiled call left the caller's list and dict as they were (len(xs) stayed 1)
    torch = pytest.importorskip("torch")
    assert _containers(kn, compiled) == _containers(torch, False)


def _pops(lib, compiled):
    xs = [lib.tensor(A), lib.tensor(B), 3]

    def fn(xs):
        y = xs.pop(0)
        xs[0] = xs[0] * 2
        return y + 1

    f = kn.compile(fn) if compiled else fn
    first = f(xs)
    return _values(first), _values(xs)


@pytest.mark.parametrize("compiled", [False, True])
def test_list_argument_popped_and_set_inside(compiled):
    torch = pytest.importorskip("torch")
    assert _pops(kn, compiled) == _pops(torch, False)


def test_list_argument_stores_each_calls_value_with_its_gradient():
    # the appended value is each call's, on the tape as a returned one would be
    f = kn.compile(lambda x, acc: acc.append((x * 3).sum()) or x * 2)
    acc = []
    for v in (1.0, 2.0):
        f(kn.tensor([v, v], requires_grad=True), acc)
    assert [a.item() for a in acc] == [6.0, 12.0]
    x = kn.tensor([1.0, 4.0], requires_grad=True)
    f(x, acc)
    acc[-1].backward()
    assert acc[-1].item() == 15.0 and x.grad.tolist() == [3.0, 3.0]


def test_list_argument_changed_on_numpy_inputs():
    f = kn.compile(lambda x, acc: acc.append(x * 2) or x)
    acc = []
    f(np.ones(2, f32), acc)
    assert len(acc) == 1 and isinstance(acc[0], np.ndarray) and acc[0].tolist() == [2.0, 2.0]


class _Obj:
    pass


def _attrs(lib, compiled):
    o = _Obj()
    o.n = 0

    def fn(x, o):
        o.y = x * 2
        o.n += 1
        return x + o.n

    f = kn.compile(fn) if compiled else fn
    return [f(lib.tensor(A), o).tolist() for _ in range(3)], o.y.tolist(), o.n


@pytest.mark.parametrize("compiled", [False, True])
def test_object_argument_attributes_set_inside(compiled):
    torch = pytest.importorskip("torch")
    assert _attrs(kn, compiled) == _attrs(torch, False)


# -- globals and closures that change between calls (test_global_state, update_global) -----

SCALE, FLAG, _variable = 1.0, True, 0
SHIFT = kn.ones(10)


def _use_globals(x):
    if FLAG:
        return x * SCALE + SHIFT
    return x - SCALE


def test_globals_changed_between_calls():
    global SCALE, FLAG, SHIFT
    f = kn.compile(_use_globals)
    try:
        for step, (SCALE, FLAG) in enumerate([(1.0, True), (2.0, True), (2.0, False), (3, False),
                                              (3, True), (3, True), (3, True)]):  # fmt: skip
            if step == 5:
                SHIFT.add_(1)  # changed in place
            if step == 6:
                SHIFT = kn.full((10,), 7.0)  # replaced
            x = kn.tensor(A)
            got, want = f(x), _use_globals(x)
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), step
    finally:
        SCALE, FLAG, SHIFT = 1.0, True, kn.ones(10)


def _update_global(x):
    global _variable
    _variable += 1
    return x * _variable


def test_global_counter_updated_inside():
    global _variable
    _variable = 0
    f = kn.compile(_update_global)
    compiled = [f(kn.tensor(A)).tolist() for _ in range(3)]
    assert _variable == 3
    _variable = 0
    assert compiled == [_update_global(kn.tensor(A)).tolist() for _ in range(3)]


def test_closure_cells_changed_between_calls():
    k, s = [1.0], 2

    def f(x):
        return x * s + k[0]

    cf = kn.compile(f)
    for s, k[0] in [(2, 1.0), (3, 1.0), (3, 5.0), (2.5, -1)]:  # noqa: B007, B020
        x = kn.tensor(A)
        assert cf(x).tolist() == f(x).tolist(), (s, k)


# -- modules: attributes, buffers, submodules and parameters changed between calls ---------


class _Net(kn.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = kn.nn.Linear(10, 3)
        self.scale, self.use_relu = 1.0, False
        self.register_buffer("count", kn.zeros(()))

    def forward(self, x):
        self.count += 1
        y = self.lin(x) * self.scale
        return (y.relu() if self.use_relu else y), self.count


def test_module_attributes_buffers_and_parameters_between_calls():
    kn.manual_seed(0)
    net = _Net()
    twin = copy.deepcopy(net)
    compiled = kn.compile(twin)
    x = kn.tensor(M)

    def same():
        (a, n), (b, m) = net(x), compiled(x)
        assert a.tolist() == b.tolist() and n.item() == m.item()

    for scale, relu in [(1.0, False), (2.0, False), (2.0, True), (1.0, True)]:
        net.scale = twin.scale = scale
        net.use_relu = twin.use_relu = relu
        same()
    net.lin = kn.nn.Linear(10, 3)
    twin.lin = copy.deepcopy(net.lin)
    same()
    with kn.no_grad():
        net.lin.weight.mul_(2)
        twin.lin.weight.mul_(2)
    same()
    net.eval()
    twin.eval()
    same()
    assert net.count.item() == twin.count.item() == 7


# -- outputs aliasing inputs and each other: a change through one is seen by the others -----

ALIASING = {
    "input_itself": lambda t, x: x,
    "view": lambda t, x: x.view(2, 5),
    "pair_of_one_value": lambda t, x: (x + 1,) * 2,
    "two_views": lambda t, x: (x[2:], x[:5]),
    "reshape": lambda t, x: x.reshape(5, 2),
    "detach": lambda t, x: x.detach(),
    "one_value_twice": lambda t, x: (lambda y: (y, y))(x * 2),
    "contiguous": lambda t, x: x.contiguous(),
    "flatten": lambda t, x: x.flatten(),
    "unsqueeze_squeeze": lambda t, x: x.unsqueeze(0).squeeze(0),
    "to_same_dtype": lambda t, x: x.to(x.dtype),
    "inplace_then_returned": lambda t, x: x.mul_(2),
}


def _alias(lib, fn, compiled):
    x = lib.tensor(A.copy())
    f = kn.compile(lambda x: fn(kn, x)) if compiled else (lambda x: fn(lib, x))
    r = f(x)
    (r[0] if isinstance(r, tuple) else r).add_(100)
    return x.tolist(), _values(r)


@pytest.mark.parametrize("name", sorted(ALIASING))
def test_outputs_alias_as_in_eager_code(name):
    torch = pytest.importorskip("torch")
    fn = ALIASING[name]
    assert _alias(kn, fn, True) == _alias(torch, fn, False)


def test_inputs_changed_in_place_are_the_callers():
    torch = pytest.importorskip("torch")

    def fn(t, x, y):
        x.add_(1)
        y[0] = 5
        x[2:4].mul_(y[:2])
        return x * 2

    def run(lib, compiled):
        f = kn.compile(lambda x, y: fn(kn, x, y)) if compiled else (lambda x, y: fn(lib, x, y))
        x, y = lib.tensor(A), lib.tensor(B)
        outs = [f(x, y).tolist() for _ in range(2)]
        return outs, x.tolist(), y.tolist()

    assert run(kn, True) == run(torch, False)


# -- random draws on the host while tracing: kiln's initializers ----------------------------

HOST_DRAWS = {
    "module_made_inside": lambda x: kn.nn.Linear(2, 2)(x),
    "nn_init_inside": lambda x: x @ kn.nn.init.xavier_uniform_(kn.empty(2, 2)),
    "random_of_a_tensor_made_inside": lambda x: kn.empty(2).random_(0, 1000) + x,
}


@pytest.mark.parametrize("name", sorted(HOST_DRAWS))
def test_host_draws_inside_run_eagerly_as_eager_code(name):
    # regression: the initializers drew once, on the host, while tracing, and every call of
    # the compiled function returned those same "random" weights; now the function runs
    # eagerly (with a warning, as for Python's random module), drawing what eager code draws
    # and leaving the seed stream where eager code leaves it
    fn = HOST_DRAWS[name]
    kn.manual_seed(0)
    eager = [fn(kn.ones(2)).tolist() for _ in range(2)]
    after = kn.rand(2).tolist()
    kn.manual_seed(0)
    compiled = kn.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(kn.ones(2)).tolist() for _ in range(2)]
    assert got == eager and eager[0] != eager[1]
    assert kn.rand(2).tolist() == after
    assert any("kiln's host draws" in str(w.message) for w in caught)


# -- refusals that name their cause ----------------------------------------------------------


def test_branch_on_a_traced_value_is_refused_naming_it():
    f = kn.compile(lambda x: x * 2 if x.sum() > 0 else -x)
    with pytest.raises(kn.GraphError, match="truth value of Symbol"):
        f(kn.tensor(A))


def test_one_tensor_passed_twice_and_changed_is_refused_naming_it():
    def fn(a, b):
        a.add_(1)
        return b * 2

    x = kn.tensor(A)
    with pytest.raises(UsageError, match="argument 'b' shares memory with it"):
        kn.compile(fn)(x, x)
    assert x.tolist() == A.tolist()  # (a refused call changes nothing)
