"""Structured control flow with JAX's names: `cond`, `while_loop`, `fori_loop`, `scan`.

On Symbols (graph mode, and under kn.compile) each traces its functions once into region
ops (kiln/ops/control.py) whose bodies capture the outer values they read; on eager Tensors
and arrays it runs as plain Python. Operands and results are pytrees: tuples, lists, dicts
and None, with Symbols, Tensors, arrays or numbers as leaves.
"""

from __future__ import annotations

import numpy as np

from .. import shapes as sh
from ..errors import DTypeError, GraphError, ShapeError
from ..graph import region as rg
from ..graph.core import Graph, Symbol, user_site
from ..graph.opdef import REGISTRY
from ..ops.control import same_shape, scan_types
from ..ops.core import bind
from .core import constant

__all__ = ["cond", "while_loop", "fori_loop", "scan", "tree_flatten", "tree_unflatten"]


# -- pytrees ---------------------------------------------------------------------------------


def tree_flatten(tree) -> tuple[list, object]:
    """(leaves, structure) of a pytree of tuples, lists, dicts (by sorted key) and None.

    >>> tree_flatten((1, {"b": 2, "a": [3]}, None))[0]
    [1, 3, 2]
    """
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if tree is None:
        return None
    if isinstance(tree, (tuple, list)):
        kind = type(tree)
        return (kind, tuple(_flatten(t, leaves) for t in tree))
    if isinstance(tree, dict):
        keys = tuple(sorted(tree))
        return (dict, keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return "*"


def tree_unflatten(structure, leaves):
    """The pytree of `structure` (from `tree_flatten`) with `leaves` in order.

    >>> tree_unflatten(tree_flatten((1, [2, 3]))[1], [4, 5, 6])
    (4, [5, 6])
    """
    return _unflatten(structure, iter(leaves))


def _unflatten(structure, leaves):
    if structure is None:
        return None
    if structure == "*":
        return next(leaves)
    if structure[0] is dict:
        _, keys, items = structure
        return {k: _unflatten(s, leaves) for k, s in zip(keys, items)}
    kind, items = structure
    values = [_unflatten(s, leaves) for s in items]
    if kind in (tuple, list):
        return kind(values)
    return kind(*values) if hasattr(kind, "_fields") else kind(values)  # a namedtuple


# -- tracing a body --------------------------------------------------------------------------


def _graph_of(*leaf_lists) -> Graph | None:
    """The graph to build into: the body being traced, else that of the first Symbol; None
    when there is no Symbol (eager: run as Python)."""
    inner = rg.innermost()
    for leaves in leaf_lists:
        for v in leaves:
            if isinstance(v, Symbol):
                return inner or v.graph
    return None


def _symbol(v, graph, dtype=None) -> Symbol:
    if isinstance(v, Symbol):
        return v
    with graph.as_default():
        return constant(getattr(v, "_data", v), dtype=dtype)


def _trace(fn, types, graph, names, what):
    """Traces `fn(*params)` into a new body nested in `graph`: (Region, captured Symbols of
    `graph`, output structure, output leaves as given)."""
    body = Graph()
    with rg.tracing(body, graph) as frame:
        params = []
        for (shape, dtype), name in zip(types, names):
            node = body.add_node(REGISTRY["placeholder"], (), {"shape": shape, "dtype": dtype},
                                 name, None, shape, dtype)  # fmt: skip
            params.append(node.out)
        result = fn(params)
        leaves, structure = tree_flatten(result)
        outs = []
        for k, v in enumerate(leaves):
            if isinstance(v, Symbol):
                outs.append(rg.capture(v))
            else:
                try:
                    outs.append(_symbol(v, body))
                except Exception as e:  # noqa: BLE001 -- reworded with the function's name
                    raise GraphError(f"{what} returned {type(v).__name__} as its result "
                                     f"{k}, not a value: {e}") from None  # fmt: skip
    body.inputs = params + [frame.captured[id(s)] for s in frame.outer]
    body.outputs = outs
    return rg.Region(body), list(frame.outer), structure, leaves


def _types(leaves) -> list:
    return [(tuple(s.shape), s.dtype) for s in leaves]


def _check_carry(what, init, outs, fix=None):
    """The body's carry must keep the init's structure, shapes and dtypes (as JAX's)."""
    if len(init) != len(outs):
        raise GraphError(f"{what}: the carry has {len(init)} values on entry, "
                         f"{len(outs)} on exit")  # fmt: skip
    for k, (a, b) in enumerate(zip(init, outs)):
        if a.dtype != b.dtype:
            raise DTypeError(f"{what}: carry value {k} enters the body as {a.type_str()} and "
                             f"leaves as {b.type_str()} ('{b.name}', created at {b.site}); "
                             "cast it to keep the carry's type")  # fmt: skip
        if not same_shape(a.shape, b.shape):  # a symbolic dim is checked when it runs
            raise ShapeError(
                f"{what}: carry value {k} enters the body as {a.type_str()} and leaves as "
                f"{b.type_str()} ('{b.name}', created at {b.site})"
            )


def _results(node, types) -> list:
    return [
        bind(REGISTRY["get"], node, index=k, shape=tuple(shape), dtype=dtype)
        for k, (shape, dtype) in enumerate(types)
    ]


def _as_symbols(leaves, graph, like=None) -> list:
    out = []
    for k, v in enumerate(leaves):
        dtype = like[k].dtype if like is not None and not isinstance(v, Symbol) else None
        out.append(_symbol(v, graph, dtype))
    return out


# -- scan ------------------------------------------------------------------------------------


def scan(f, init, xs, length=None, reverse: bool = False):
    """`(carry, ys)`: `carry, y = f(carry, x)` for each x of `xs` along its first axis (from
    the end if `reverse`), with the ys stacked; JAX's `lax.scan`. `xs` may be None with
    `length` given. On Symbols it builds one `scan` node whose body is `f` traced once.

    >>> import kiln as kn, numpy as np
    >>> def step(c, x):
    ...     return c + x, c * x
    >>> with kn.Graph().as_default():
    ...     xs = kn.placeholder(kn.float32, (4,), name="xs")
    ...     total, ys = kn.scan(step, kn.constant(np.float32(0)), xs)
    ...     f = kn.function([xs], [total, ys])
    >>> f(np.array([1, 2, 3, 4], np.float32))
    [array(10., dtype=float32), array([ 0.,  2.,  9., 24.], dtype=float32)]
    >>> total, ys = kn.scan(step, kn.tensor(0.0), kn.tensor([1.0, 2.0]))  # eagerly: Python
    >>> total.item(), ys.tolist()
    (3.0, [0.0, 2.0])
    """
    init_leaves, init_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
    n = _length(xs_leaves, length)
    graph = _graph_of(init_leaves, xs_leaves)
    if graph is None:
        return _scan_eager(f, init, xs_tree, xs_leaves, n, reverse)
    carry = _as_symbols(init_leaves, graph)
    xs_syms = _as_symbols(xs_leaves, graph)
    slices = [(tuple(x.shape[1:]), x.dtype) for x in xs_syms]
    num_carry = len(carry)
    out_tree = []

    def body(params):
        c = tree_unflatten(init_tree, params[:num_carry])
        x = tree_unflatten(xs_tree, params[num_carry:])
        result = f(c, x)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise GraphError(f"scan: f must return a pair (carry, y), got {type(result).__name__}")
        c_leaves, c_tree = tree_flatten(result[0])
        if c_tree != init_tree:
            raise GraphError(f"scan: f returns a carry of structure {c_tree}, not the init's "
                             f"{init_tree}")  # fmt: skip
        c_leaves = [_symbol(v, rg.innermost(), carry[k].dtype) if not isinstance(v, Symbol)
                    else v for k, v in enumerate(c_leaves)]  # fmt: skip
        y_leaves, y_tree = tree_flatten(result[1])
        out_tree.append(y_tree)
        return [*c_leaves, *y_leaves]

    names = [f"carry{k}" for k in range(num_carry)] + [f"x{k}" for k in range(len(xs_syms))]
    region, caps, _, _ = _trace(body, _types(carry) + slices, graph, names, "scan: f")
    _check_carry("scan", carry, region.outputs[:num_carry])
    node = bind(REGISTRY["scan"], *carry, *xs_syms, *caps, body=region, length=n,
                reverse=bool(reverse), num_carry=num_carry, num_xs=len(xs_syms))  # fmt: skip
    values = _results(node, scan_types(region, n, num_carry))
    return tree_unflatten(init_tree, values[:num_carry]), tree_unflatten(
        out_tree[0], values[num_carry:]
    )


def _length(xs_leaves, length):
    lengths = {x.shape[0] if len(x.shape) else None for x in map(_shaped, xs_leaves)}
    if None in lengths:
        raise ShapeError("scan: every xs value needs a leading axis to scan over")
    if length is not None:
        if isinstance(length, Symbol):
            raise ShapeError("scan: length must be static (an int); use while_loop otherwise")
        lengths.add(int(length))
    if len(lengths) != 1:
        why = "no xs and no length" if not lengths else f"leading axes {sorted(map(str, lengths))}"
        raise ShapeError(f"scan: the length must be one static value, got {why}")
    (n,) = lengths
    return n if isinstance(n, sh.Dim) else int(n)


def _shaped(v):
    return v if hasattr(v, "shape") else np.asarray(v)


def _scan_eager(f, init, xs_tree, xs_leaves, n, reverse):
    from .torch_shape import stack

    carry, ys = init, []
    for t in range(n - 1, -1, -1) if reverse else range(n):
        carry, y = f(carry, tree_unflatten(xs_tree, [x[t] for x in xs_leaves]))
        ys.append(tree_flatten(y))
    if not ys:
        raise ShapeError("scan of length 0 run eagerly: the ys' shapes are unknown")
    if reverse:
        ys.reverse()
    y_tree = ys[0][1]
    stacked = [_stack(stack, [leaves[k] for leaves, _ in ys]) for k in range(len(ys[0][0]))]
    return carry, tree_unflatten(y_tree, stacked)


def _stack(stack, values):
    if all(isinstance(v, (np.ndarray, np.generic, int, float, bool)) for v in values):
        return np.stack([np.asarray(v) for v in values])
    return stack(values)


# -- fori_loop -------------------------------------------------------------------------------


def fori_loop(lower, upper, body_fun, init_val):
    """`val = body_fun(i, val)` for i from `lower` to `upper` - 1; JAX's `lax.fori_loop`.

    With int bounds on Symbols it is a `scan` over the indices (so it has gradients); with
    Symbol bounds a `while_loop`. Eagerly `i` is a Python int.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float64, (), name="x")
    ...     y = kn.fori_loop(0, 3, lambda i, v: v * x + i, kn.constant(1.0, kn.float64))
    ...     f = kn.function([x], y)
    >>> f(np.float64(2.0))  # ((1*2 + 0)*2 + 1)*2 + 2
    array(12.)
    """
    leaves, _ = tree_flatten(init_val)
    dynamic = isinstance(lower, Symbol) or isinstance(upper, Symbol)
    graph = _graph_of(leaves, [lower, upper])
    if graph is None:
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    if dynamic:
        lo = _symbol(lower, graph, np.dtype(np.int64))
        hi = _symbol(upper, graph, np.dtype(np.int64))
        _, _, val = while_loop(
            lambda c: c[0] < c[1], lambda c: (c[0] + 1, c[1], body_fun(c[0], c[2])),
            (lo, hi, init_val),
        )  # fmt: skip
        return val
    indices = _symbol(np.arange(int(lower), max(int(upper), int(lower)), dtype=np.int64), graph)
    val, _ = scan(lambda v, i: (body_fun(i, v), None), init_val, indices)
    return val


# -- while_loop ------------------------------------------------------------------------------


def while_loop(cond_fun, body_fun, init_val):
    """`val = body_fun(val)` while `cond_fun(val)`; JAX's `lax.while_loop`. It has forward
    mode (`kn.jvp` carries the tangents with the carry) but no reverse-mode gradient (the trip
    count is not known in advance): use `fori_loop` with static bounds or `scan`.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (), name="x")
    ...     y = kn.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, x)
    ...     f = kn.function([x], y)
    >>> f(np.float32(3.0))
    array(192., dtype=float32)
    """
    leaves, tree = tree_flatten(init_val)
    graph = _graph_of(leaves)
    if graph is None:
        val = init_val
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val
    carry = _as_symbols(leaves, graph)
    n = len(carry)
    names = [f"carry{k}" for k in range(n)]

    def test(params):
        return cond_fun(tree_unflatten(tree, params))

    def step(params):
        out_leaves, out_tree = tree_flatten(body_fun(tree_unflatten(tree, params)))
        if out_tree != tree:
            raise GraphError(f"while_loop: body_fun returns structure {out_tree}, not {tree}")
        return [_symbol(v, rg.innermost(), carry[k].dtype) if not isinstance(v, Symbol) else v
                for k, v in enumerate(out_leaves)]  # fmt: skip

    cond_region, cond_caps, _, _ = _trace(test, _types(carry), graph, names, "cond_fun")
    (pred,) = cond_region.outputs if len(cond_region.outputs) == 1 else (None,)
    if pred is None or pred.shape != ():
        raise ShapeError(f"while_loop: cond_fun must return one scalar ({user_site()})")
    body_region, body_caps, _, _ = _trace(step, _types(carry), graph, names, "body_fun")
    _check_carry("while_loop", carry, body_region.outputs)
    node = bind(REGISTRY["while_loop"], *carry, *cond_caps, *body_caps, cond=cond_region,
                body=body_region, num_carry=n)  # fmt: skip
    return tree_unflatten(tree, _results(node, _types(carry)))


# -- cond ------------------------------------------------------------------------------------


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; JAX's `lax.cond`. On a
    Symbol predicate both functions are traced (they must give the same structure, shapes
    and dtypes) and only the branch taken runs.

    >>> import kiln as kn, numpy as np
    >>> with kn.Graph().as_default():
    ...     x = kn.placeholder(kn.float32, (2,), name="x")
    ...     y = kn.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x)
    ...     f = kn.function([x], y)
    >>> f(np.array([1, 2], np.float32)), f(np.array([-1, -2], np.float32))
    (array([2., 4.], dtype=float32), array([1., 2.], dtype=float32))
    """
    leaves, tree = tree_flatten(list(operands))
    graph = _graph_of([pred], leaves)
    if graph is None or not isinstance(pred, Symbol):
        value = pred._data if hasattr(pred, "_data") else pred
        return true_fun(*operands) if bool(np.asarray(value)) else false_fun(*operands)
    ops = _as_symbols(leaves, graph)
    names = [f"operand{k}" for k in range(len(ops))]

    def branch(fn):
        return lambda params: fn(*tree_unflatten(tree, params))

    t_region, t_caps, t_tree, _ = _trace(branch(true_fun), _types(ops), graph, names, "true_fun")
    f_region, f_caps, f_tree, _ = _trace(branch(false_fun), _types(ops), graph, names,
                                         "false_fun")  # fmt: skip
    if t_tree != f_tree:
        raise GraphError(f"cond: true_fun returns structure {t_tree}, false_fun {f_tree}")
    node = bind(REGISTRY["cond"], pred, *ops, *t_caps, *f_caps, branch_true=t_region,
                branch_false=f_region, num_operands=len(ops))  # fmt: skip
    return tree_unflatten(t_tree, _results(node, _types(t_region.outputs)))
