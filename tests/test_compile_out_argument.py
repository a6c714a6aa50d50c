"""`out=` inside a kn.compile'd function writes its buffer as eager code does (it was
refused as a graph value): an argument buffer is changed in the caller's tensor and the
function's return of it is that tensor. Expected values: torch 2.13 run on the same inputs,
and kiln eager."""

import pytest

import kiln as kn
from kiln.errors import ArgumentTypeError


def _add_into(lib):
    def f(a, b, buf):
        r = lib.add(a, b, out=buf)
        return r, r is buf, buf * 1

    return f


@pytest.mark.parametrize("compiled", [False, True])
def test_add_out_into_an_argument_buffer(compiled):
    torch = pytest.importorskip("torch")
    ta, tb, tbuf = torch.arange(3.0), torch.ones(3), torch.zeros(3)
    tr, t_same, tcopy = _add_into(torch)(ta, tb, tbuf)
    f = _add_into(kn)
    g = kn.compile(lambda a, b, buf: f(a, b, buf)[::2]) if compiled else None
    for _ in range(2):  # the second call runs the cached program
        a, b, buf = kn.arange(3.0), kn.ones(3), kn.zeros(3)
        if compiled:
            r, copy = g(a, b, buf)
            same = r is buf
        else:
            r, same, copy = f(a, b, buf)
    assert buf.tolist() == tbuf.tolist() == [1.0, 2.0, 3.0]
    assert copy.tolist() == tcopy.tolist()
    assert same and t_same and tr is tbuf


def test_factory_and_named_tuple_out_under_compile():
    torch = pytest.importorskip("torch")
    tv, ti, tbuf = torch.zeros(2), torch.zeros(2, dtype=torch.int64), torch.zeros(3)
    x = [[1.0, 3.0], [4.0, 2.0]]
    torch.max(torch.tensor(x), 1, out=(tv, ti))
    torch.arange(3, out=tbuf)

    @kn.compile
    def g(x, v, i, buf):
        kn.max(x, 1, out=(v, i))
        kn.arange(3, out=buf)
        return v.sum() + buf.sum()

    for _ in range(2):
        v, i, buf = kn.zeros(2), kn.zeros(2, dtype=kn.int64), kn.zeros(3)
        s = g(kn.tensor(x), v, i, buf)
    assert (v.tolist(), i.tolist(), buf.tolist()) == (tv.tolist(), ti.tolist(), tbuf.tolist())
    assert s.item() == tv.sum().item() + tbuf.sum().item()


def test_out_requiring_grad_refuses_under_compile_as_eagerly():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.add(torch.ones(2, requires_grad=True), 1, out=torch.zeros(2))

    @kn.compile
    def g(a, buf):
        return kn.add(a, 1, out=buf)

    with pytest.raises(kn.errors.AutogradError, match="don't support automatic differentiation"):
        g(kn.ones(2, requires_grad=True), kn.zeros(2))


def test_graph_mode_out_still_refuses():
    x = kn.placeholder(kn.float32, (2,))
    with pytest.raises(ArgumentTypeError, match="out= takes an eager tensor"):
        kn.add(x, 1, out=x)


@pytest.mark.parametrize("how", ["parameter", "no_grad", "detach"])
def test_out_from_a_module_under_compile_as_eagerly(how):
    """A result computed from a Parameter that requires grad refuses out= (torch 2.13's
    RuntimeError, kiln's AutogradError), eagerly and compiled; under no_grad or after
    detach() it writes the buffer, which is returned."""
    torch = pytest.importorskip("torch")

    def make(lib):
        lin = lib.nn.Linear(2, 2)

        def f(x, buf):
            if how == "no_grad":
                with lib.no_grad():
                    return lib.add(lin(x), 1, out=buf)
            y = lin(x).detach() if how == "detach" else lin(x)
            return lib.add(y, 1, out=buf)

        return f

    runs = [(torch, make(torch)), (kn, make(kn)), (kn, kn.compile(make(kn)))]
    for lib, f in runs:
        for _ in range(2):
            buf = lib.zeros(1, 2)
            if how == "parameter":
                with pytest.raises(RuntimeError, match="don't support automatic differ"):
                    f(lib.ones(1, 2), buf)
            else:
                r = f(lib.ones(1, 2), buf)
                assert r is buf and not r.requires_grad
