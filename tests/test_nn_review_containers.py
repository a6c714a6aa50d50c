"""kiln's containers and module repr against PyTorch's: Sequential `+ += * *=`, ModuleList `+`,
`pop`; ParameterDict's key order from a plain dict (PyTorch sorts it: the order of
`parameters()` and `state_dict()`); the repr of a module with a multi-line extra_repr or an
extra_repr and children. Expected values are what torch gives for the same code."""

from collections import OrderedDict

import pytest

import kiln as kn

torch = pytest.importorskip("torch")

LIBS = [torch, kn]


def _names(seq):
    return [type(m).__name__ for m in seq], list(seq._modules)


def _both(build):
    t, k = build(torch), build(kn)
    assert k == t, (t, k)
    return k


def test_sequential_arithmetic_like_torch():
    def build(lib):
        nn = lib.nn
        a, b = nn.Sequential(nn.ReLU(), nn.Tanh()), nn.Sequential(nn.ELU())
        out = [_names(a + b), _names(a * 2), _names(2 * a)]
        c = nn.Sequential(OrderedDict([("x", nn.ReLU())]))
        c += b
        out.append(_names(c))
        a *= 3
        out.append(_names(a))
        out.append((a[0] is a[2], len(list((nn.Sequential(nn.Linear(2, 2)) * 2).parameters()))))
        return out

    _both(build)


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "kiln"])
def test_sequential_arithmetic_errors(lib):
    s = lib.nn.Sequential(lib.nn.ReLU())
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential"):
        s + lib.nn.ModuleList([lib.nn.ReLU()])
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        s * 0
    with pytest.raises(TypeError):
        s * 1.5


def test_modulelist_add_and_pop_like_torch():
    def build(lib):
        nn = lib.nn
        ml = nn.ModuleList([nn.ReLU(), nn.Tanh()]) + [nn.ELU()]
        out = [type(ml).__name__, _names(ml)]
        out.append(type(ml.pop(0)).__name__)
        out.append(_names(ml))
        s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU())
        out.append(type(s.pop(1)).__name__)
        out.append(_names(s))
        return out

    _both(build)


def test_parameter_dict_sorts_a_plain_dict_like_torch():
    def build(lib):
        nn = lib.nn
        plain = nn.ParameterDict({"b": nn.Parameter(lib.ones(2)), "a": lib.zeros(1)})
        ordered = nn.ParameterDict(OrderedDict([("b", lib.ones(2)), ("a", lib.zeros(1))]))
        pairs = nn.ParameterDict([("d", lib.ones(1)), ("c", lib.ones(1))])
        plain.update({"z": lib.ones(1), "y": lib.ones(1)})
        return [list(plain.keys()), [n for n, _ in plain.named_parameters()],
                list(plain.state_dict()), list(ordered.keys()), list(pairs.keys())]  # fmt: skip

    _both(build)


def test_parameter_containers_repr_like_torch():
    def build(lib):
        nn = lib.nn
        pl = nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(4)])
        pd = nn.ParameterDict({"w": lib.ones(3), "b": lib.zeros(1, dtype=lib.float64)})
        return [repr(pl).replace("torch.", "kiln."), repr(pd).replace("torch.", "kiln.")]

    _both(build)


def test_module_repr_with_extra_repr_and_children_like_torch():
    def build(lib):
        nn = lib.nn

        class Block(nn.Module):
            def __init__(self, lines):
                super().__init__()
                self.lines = lines
                self.lin = nn.Linear(2, 3)

            def extra_repr(self):
                return "\n".join(self.lines)

        class Leaf(nn.Module):
            def extra_repr(self):
                return "alpha=1\nbeta=2"

        return [repr(Block(["scale=2"])), repr(Block(["a=1", "b=2"])), repr(Block([])),
                repr(Leaf()), repr(nn.Sequential(Leaf()))]  # fmt: skip

    _both(build)
