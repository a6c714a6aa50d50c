"""Module API scenarios after PyTorch's own `test/test_nn.py` (TestNN): registration rules,
containers, state_dict and its hooks, deepcopy, RNN and Embedding arguments. Each scenario is
written once against a module argument `lib` and run with PyTorch and with kiln; torch 2.13
is the oracle for every value, key list, shape, dtype and exception class compared here.
"""

import copy

from port_common import to_numpy

import kiln as kn


def outcome(fn, lib):
    """`fn(lib)` made comparable: tensors as (shape, dtype name, values), containers
    recursively, an exception as the name of its class."""
    try:
        return _plain(fn(lib))
    except Exception as e:  # noqa: BLE001 (the class is the result compared)
        return ("raised", type(e))


def _plain(v):
    if hasattr(v, "detach") and hasattr(v, "shape"):
        a = to_numpy(v)
        return ("tensor", tuple(a.shape), a.dtype.name, a.tolist())
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def same(fn, torch):
    """`fn` gives the same outcome with torch and with kiln (kiln's exception classes
    subclass the built-in class torch raises)."""
    want, got = outcome(fn, torch), outcome(fn, kn)
    if isinstance(want, tuple) and want[:1] == ("raised",):
        assert isinstance(got, tuple) and got[:1] == ("raised",), got
        assert issubclass(got[1], want[1]), (got[1], want[1])
        return
    assert got == want


# -- containers ------------------------------------------------------------------------------


def sequential_insert_negative(lib):
    """Sequential.insert(-1, m) puts m before the last child, as list.insert does."""
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.ELU())
    s.insert(-1, nn.Sigmoid())
    s.insert(-4, nn.GELU())
    return [type(m).__name__ for m in s], list(s._modules)


def test_sequential_insert_negative_index(torch):
    same(sequential_insert_negative, torch)


# -- copying ---------------------------------------------------------------------------------


def deepcopy_drops_parameter_grad(lib):
    """copy.deepcopy of a module: its Parameters are new leaves without `.grad`, shared
    Parameters and submodules stay shared in the copy."""
    nn = lib.nn
    m = nn.Linear(2, 2)
    m.tied = m.weight
    m(lib.ones(1, 2)).sum().backward()
    c = copy.deepcopy(m)
    shared = (c.tied is c.weight, c.weight is not m.weight, c.weight.requires_grad)
    return c.weight.grad is None, c.bias.grad is None, shared, m.weight.grad is not None


def test_deepcopy_drops_parameter_grad(torch):
    same(deepcopy_drops_parameter_grad, torch)


# -- layer arguments -------------------------------------------------------------------------


def embedding_weight_shape_checked(lib):
    return lib.nn.Embedding(3, 3, _weight=lib.ones(3, 2))


def test_embedding_weight_shape_is_checked(torch):
    same(embedding_weight_shape_checked, torch)


def embedding_weight_dtype_kept(lib):
    """`_weight` keeps its dtype where no dtype is given."""
    nn, w = lib.nn, lib.ones(3, 2, dtype=lib.float64)
    return nn.Embedding(3, 2, _weight=w).weight.dtype == lib.float64, nn.EmbeddingBag(
        3, 2, _weight=w
    ).weight.dtype == lib.float64


def test_embedding_weight_keeps_its_dtype(torch):
    same(embedding_weight_dtype_kept, torch)


def embedding_bag_weight_shape_checked(lib):
    return lib.nn.EmbeddingBag(3, 3, _weight=lib.ones(3, 2))


def test_embedding_bag_weight_shape_is_checked(torch):
    same(embedding_bag_weight_shape_checked, torch)
