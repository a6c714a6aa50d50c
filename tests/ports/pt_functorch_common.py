"""What the ports of PyTorch's torch.func tests share (test_port_pt_functorch_transforms.py,
_jacobians.py, _modules.py): their inputs and the forms their results are compared in."""

import numpy as np

f32 = np.float32
RNG = np.random.default_rng(21)
X = RNG.normal(size=(3,)).astype(f32)
Y = RNG.normal(size=(3,)).astype(f32)
M = RNG.normal(size=(2, 3)).astype(f32)
XB = RNG.normal(size=(4, 3)).astype(f32)
S = np.array(0.7, f32)
IX = np.arange(3, dtype=np.int64)
JM = RNG.normal(size=(3, 4)).astype(np.float64)  # float64: jacobians of long op chains
W6 = np.arange(6, dtype=f32).reshape(2, 3) / 10
W33 = RNG.normal(size=(3, 3)).astype(f32)


def sorted_items(d):
    """A dict's items by key (assert_same compares tuples).

    >>> sorted_items({"b": 1, "a": 2})
    (('a', 2), ('b', 1))
    """
    return tuple((k, d[k]) for k in sorted(d))


def plain(tree):
    """`tree` with its dicts as their items by key, and its type names (assert_same compares
    tuples and lists).

    >>> plain({"a": [1, (2,)]})
    ('dict', (('a', ('list', (1, ('tuple', (2,))))),))
    """
    if isinstance(tree, dict):
        return ("dict", tuple((k, plain(tree[k])) for k in sorted(tree)))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(plain(v) for v in tree))
    return tree
