"""Function transforms: `jvp` (forward mode), `vmap`, and the batched jacobians `jacrev`,
`jacfwd` (and `hessian(f)`), with JAX's names. On Symbols they build into the graph; on
Tensors `jvp` runs on the tape (the double-backward trick) and the others run their graph form
through `kn.compile` (traced once per input signature).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..eager import autograd
from ..eager.grad_mode import inference_mode, is_grad_enabled
from ..eager.tensor import Tensor
from ..errors import ArgumentError, ArgumentTypeError, GraphError, ShapeError, UsageError
from ..frontend.autodiff import grad, jacobian_fwd, jacobian_rev, jvp_graph
from ..frontend.core import call, lift
from ..frontend.functionalize import CHANGES
from ..graph.core import Symbol, get_default_graph
from ..ops.core import unbatched_to
from ..passes.vectorize import vectorize
from . import func_checks as checks
from . import vmap_forms as forms
from .prints import tracing_now
from .scalars import TracedScalar
from .structure import _unflatten, flatten
from .trace import CompiledFunction

__all__ = ["jvp", "vmap", "jacrev", "jacfwd"]


def _leaves(value, what: str) -> tuple[list, object]:
    leaves, paths, statics = [], [], []
    structure = flatten(value, what, leaves, paths, statics)
    return leaves, structure


def _tuple(values) -> tuple:
    return tuple(values) if isinstance(values, (tuple, list)) else (values,)


def jvp(f, primals, tangents, *, strict=False, has_aux=False):
    """`(f(*primals), tangent of f's outputs)` for the primals moving along `tangents`
    (forward mode: the Jacobian-vector product). `f` returns a Symbol, a Tensor, or tuples,
    lists and dicts of them; integer outputs get zero tangents. On Symbols it builds into
    the graph (forward mode node by node: kiln/passes/forward.py); on Tensors it runs
    eagerly, by the double-backward trick on the tape (as `torch.autograd.functional.jvp`),
    and returns detached Tensors, or, where a primal or tangent requires grad (in grad mode:
    inside `kn.func.grad` or another `jvp`), Tensors that keep their history, as
    torch.func's. With `has_aux` (torch.func's), `f` returns
    `(output, aux)` and jvp `(output, tangent, aux)`, aux as `f` gave it (its Tensors
    detached). With `strict` (torch.func's), an output that does not depend on the primals
    raises.

    >>> import kiln as kn
    >>> y, dy = kn.jvp(lambda x: x ** 3, (kn.tensor(2.0),), (kn.tensor(1.0),))
    >>> y, dy
    (tensor(8.), tensor(12.))
    """
    primals, tangents = _tuple(primals), _tuple(tangents)
    if len(primals) != len(tangents):
        raise ArgumentError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    if any(isinstance(p, (dict, list, tuple)) for p in primals):
        # a primal may be a dict, list or tuple of tensors (a pytree, as torch.func's:
        # `jvp(f, (params,), (tangents,))`), its tangent of the same structure
        primals, structure = _leaves(primals, "primals")
        flat_tangents, tangent_structure = _leaves(tangents, "tangents")
        if len(flat_tangents) != len(primals) or tangent_structure != structure:
            raise ArgumentError("jvp: Expected primals and tangents to have the same python "
                                "structure")  # fmt: skip
        tangents = tuple(flat_tangents)

        def f(*leaves, _f=f):
            return _f(*_unflatten(structure, iter(leaves)))

    for i, (p, t) in enumerate(zip(primals, tangents)):
        if tuple(np.shape(p) if not hasattr(p, "shape") else p.shape) != tuple(
            np.shape(t) if not hasattr(t, "shape") else t.shape
        ):
            raise ShapeError(
                f"jvp: tangent {i} has shape {tuple(t.shape)}, its primal {tuple(p.shape)}"
            )
    if has_aux:
        found = []

        def f(*args, _f=f):
            out = _f(*args)
            checks.aux_pair(out, "jvp(f, primals, tangents)")
            found.append(out[1])
            return out[0]

    symbolic = any(isinstance(p, Symbol) for p in (*primals, *tangents))
    unrelated: list = []  # the outputs that do not depend on the primals
    if symbolic:  # (in a transform's trace a tangent may be a Symbol and its primal not)
        with inference_mode(False):  # (it differentiates in any grad mode)
            out = _jvp_graph(f, primals, tangents, unrelated)
    else:
        out = _jvp_eager(f, primals, tangents, unrelated)
    if strict and unrelated:
        raise UsageError(
            "jvp(f, primals, tangents, strict=True): The output of f is independent of the "
            "inputs. This is not allowed with strict=True."
        )
    if not has_aux:
        return out
    aux = found[0]
    if symbolic:
        return (*out, aux)
    leaves, structure = _leaves(aux, "aux")
    leaves = [a.detach() if isinstance(a, Tensor) else a for a in leaves]
    return (*out, _unflatten(structure, iter(leaves)))


def _jvp_graph(f, primals, tangents, unrelated: list):
    xs = lift(*primals, context=[t for t in tangents if isinstance(t, Symbol)])
    xs = [fresh(x) for x in xs]
    out = f(*xs)
    leaves, structure = _leaves(out, "output")
    ts = [lift(t, context=xs, dtype=x.dtype)[0] for t, x in zip(tangents, xs)]
    ts = [t if t.dtype == x.dtype else call("cast", t, dtype=x.dtype) for t, x in zip(ts, xs)]
    pairs = [(x, t) for x, t in zip(xs, ts) if dt.is_differentiable(x.dtype)]
    ys = [y for y in leaves if dt.is_differentiable(y.dtype)]
    primals: dict = {}  # a loop's result read from the loop that also gives its tangent
    found = iter(jvp_graph(ys, [x for x, _ in pairs], [t for _, t in pairs], primals)
                 if ys else [])  # fmt: skip
    out_tangents = []
    for y in leaves:
        jv = next(found) if dt.is_differentiable(y.dtype) else None
        if jv is None:
            unrelated.append(y)
        out_tangents.append(jv if jv is not None else call("broadcast_to", _zero(y), shape=y.shape))
    if primals:
        out = _unflatten(structure, iter(primals.get(id(y), y) for y in leaves))
    return out, _unflatten(structure, iter(out_tangents))


def fresh(x: Symbol) -> Symbol:
    """A new node of `x`'s value, what a transform differentiates with respect to: the
    transformed function's argument apart from `x` itself, which the function may also read
    from its closure (`grad(lambda a: (a * x).sum())(x)` differentiates `a` alone, as
    torch.func's); gradients of an outer transform pass through it to `x`."""
    return call("cast", x, dtype=x.dtype)


def _zero(y):
    from ..ops.core import scalar

    return scalar(0, y)


def _jvp_eager(f, primals, tangents, unrelated: list):
    numpy_in = not any(isinstance(p, Tensor) for p in primals)
    # inside another transform (a primal or tangent that requires grad, in grad mode: jvp
    # of jvp, grad of jvp) the results keep their history, as torch.func's do
    outer = is_grad_enabled() and any(
        isinstance(v, Tensor) and v.requires_grad for v in (*primals, *tangents)
    )
    xs = []
    for p in primals:
        x = _tensor(p)
        if outer and x.requires_grad:
            x = x.view_as(x)  # (the outer history runs through it)
        else:
            x = x.detach()
            if dt.is_differentiable(x.dtype):
                x.requires_grad_(True)
        xs.append(x)
    with inference_mode(False):  # (it differentiates in any grad mode: no_grad, inference)
        out = f(*xs)
        leaves, structure = _leaves(out, "output")
        ys = [y for y in leaves if isinstance(y, Tensor) and y.requires_grad]
        us = [_zeros_like(y, requires_grad=True) for y in ys]
        wrt = [(x, _tensor(t)) for x, t in zip(xs, tangents) if x.requires_grad]
        grads = autograd.grad(ys, [x for x, _ in wrt], us, create_graph=True, allow_unused=True)
    pairs = [(g, t.to(g.dtype) if t.dtype != g.dtype else t)
             for g, (_, t) in zip(grads, wrt) if g is not None and g.requires_grad]  # fmt: skip
    jvs = [None] * len(us)
    if pairs and us:
        gs, ts = zip(*pairs)
        with inference_mode(False):
            jvs = autograd.grad(list(gs), us, list(ts), allow_unused=True, create_graph=outer)
    found = {id(y): jv for y, jv in zip(ys, jvs)}
    outs, out_tangents = [], []
    for y in leaves:
        jv = found.get(id(y))
        if jv is None:
            unrelated.append(y)
        if not outer:
            y, jv = (y.detach() if isinstance(y, Tensor) else y), (None if jv is None
                                                                   else jv.detach())  # fmt: skip
        outs.append(y)
        out_tangents.append(jv if jv is not None else _zeros_like(_tensor(y)))
    if numpy_in:
        outs = [o.numpy() if isinstance(o, Tensor) else o for o in outs]
        out_tangents = [t.numpy() for t in out_tangents]
    return _unflatten(structure, iter(outs)), _unflatten(structure, iter(out_tangents))


def _tensor(value) -> Tensor:
    from ..eager.factories import tensor

    return value if isinstance(value, Tensor) else tensor(np.asarray(value))


def _zeros_like(t, requires_grad=False):
    from ..eager.factories import zeros_like

    return zeros_like(t, requires_grad=requires_grad)


# -- transforms that return functions: their graph form, compiled for Tensors --------------------


def _transform(graph_form, name: str, fn):
    """A function that runs `graph_form` on Symbols and, on Tensors or arrays, its compiled
    form (one `kn.compile` per transformed function, traced once per input signature)."""
    compiled = []

    def transformed(*args, **kwargs):  # (keyword arguments reach the function unmapped)
        leaves, _ = _leaves((args, kwargs), "arg")
        # (the transform differentiates in any grad mode: no_grad, inference_mode; its
        # results keep a gradient path in grad mode alone)
        outer_grad = is_grad_enabled()
        with inference_mode(False):
            if tracing_now():  # inside a trace (its function may close over traced values)
                return graph_form(*in_trace(args), **in_trace(kwargs))
            if any(isinstance(x, Symbol) for x in leaves):
                return graph_form(*args, **kwargs)
            if not compiled:
                compiled.append(CompiledFunction(graph_form))
            out = compiled[0](*args, **kwargs)
        if outer_grad:
            return out
        found, structure = _leaves(out, "output")
        return _unflatten(structure, iter(o.detach() if isinstance(o, Tensor) else o
                                          for o in found))  # fmt: skip

    graph_form.__wrapped__ = fn  # (what the compiled form captures: fn's tensors, `guards`)
    transformed.__name__ = f"{name}({getattr(fn, '__name__', 'f')})"
    transformed.__doc__ = f"`{name}` of {getattr(fn, '__name__', 'a function')}."
    return transformed


def in_trace(values):
    """`values` (a tuple, list or dict of them) with their Tensors and arrays as constants of
    the graph a `kn.compile` trace builds now: a transform called there on values builds into
    that graph, where its function may read the trace's Symbols."""
    from ..frontend.core import _traced, constant

    leaves, structure = _leaves(values, "argument")
    graph = get_default_graph()
    out = []
    for a in leaves:
        a = _traced(a)  # a module's parameter or buffer: its value in the trace
        if isinstance(a, (Tensor, np.ndarray)):
            a = constant(a.detach().numpy() if isinstance(a, Tensor) else a, graph=graph)
        out.append(a)
    return _unflatten(structure, iter(out))


def _axes(in_axes, n_args: int) -> tuple:
    if isinstance(in_axes, (int, type(None))):
        return (in_axes,) * n_args
    in_axes = tuple(in_axes)
    if len(in_axes) != n_args:
        raise ArgumentError(f"vmap: in_axes has {len(in_axes)} entries for {n_args} arguments")
    return in_axes


def _to_front(x, axis: int):
    axis = axis % x.ndim
    if axis == 0:
        return x
    perm = (axis, *(i for i in range(x.ndim) if i != axis))
    return call("transpose", x, perm=perm)


def _from_front(x, axis: int):
    axis = axis % x.ndim
    if axis == 0:
        return x
    rest = list(range(1, x.ndim))
    perm = (*rest[:axis], 0, *rest[axis:])
    return call("transpose", x, perm=perm)


_GIVEN = object()  # (vmap's in_dims and out_dims when not given: None is a value)


def _leaf_axes(axis, whole, n_leaves: int, i: int, f=None, whole_dims=None) -> list:
    """The mapped axis of each leaf of argument `i`: `axis`, or, where `axis` is a dict, list
    or tuple of the argument's structure (torch.func's nested in_dims), each leaf's own."""
    if axis is None or isinstance(axis, int):
        if axis is not None and isinstance(whole, (list, tuple, dict)):
            forms.check_leaves_mapped(f, whole_dims, whole, axis, i)
        return [axis] * n_leaves
    found: list = []

    def walk(ax, value):
        if ax is None or isinstance(ax, int):
            if ax is not None:
                forms.check_leaves_mapped(f, whole_dims, value, ax, i)
            found.extend([ax] * len(_leaves(value, "arg")[0]))
        elif isinstance(ax, dict) and isinstance(value, dict) and set(ax) == set(value):
            for key in value:  # (flatten's order: the argument's)
                walk(ax[key], value[key])
        elif (isinstance(ax, (list, tuple)) and isinstance(value, (list, tuple))
              and len(ax) == len(value)):  # fmt: skip
            for a, v in zip(ax, value):
                walk(a, v)
        else:
            raise ArgumentError(f"vmap: in_dims for argument {i} ({axis!r}) must be an int, "
                                "None, or a structure matching the argument's")  # fmt: skip

    walk(axis, whole)
    return found


def vmap(f, in_axes=0, out_axes=0, randomness="error", *, chunk_size=None, in_dims=_GIVEN,
         out_dims=_GIVEN):  # fmt: skip
    """`f` mapped over an axis of its arguments (`in_axes`: an int for all, or one per
    positional argument, None for one that is not mapped) without a Python loop: `f` is built
    once on one example and the nodes between are vectorized by their ops' batching rules
    (`OpDef.batch`; an op without one raises, naming it). Its outputs carry the mapped axis at
    `out_axes`. On Tensors and arrays it runs compiled (see `kn.compile`), so `f` must be
    traceable. PyTorch's keywords `in_dims` and `out_dims` are `in_axes` and `out_axes`;
    `randomness` and `chunk_size` change nothing (the whole batch is one vectorized graph).

    >>> import kiln as kn, numpy as np
    >>> dots = kn.vmap(lambda a, b: kn.sum(a * b))
    >>> dots(np.ones((3, 2), np.float32), np.full((3, 2), 2.0, np.float32))
    array([4., 4., 4.], dtype=float32)
    """

    if in_dims is not _GIVEN:
        in_axes = in_dims
    if out_dims is not _GIVEN:
        out_axes = out_dims
    if in_axes is None:
        raise ArgumentError(f"vmap({getattr(f, '__name__', 'f')}, in_dims=None, ...)"
                            "(<inputs>): expected `in_dims` to be int or a (potentially nested) "
                            "tuple matching the structure of inputs, got: NoneType.")  # fmt: skip
    forms.check_chunk_size(chunk_size)

    def graph_form(*args, **kwargs):
        forms.check_randomness(randomness)
        forms.check_in_dims(f, in_axes)
        forms.check_out_dims(f, out_axes)
        axes = _axes(in_axes, len(args))
        mapped = [(i, a) for i, (a, ax) in enumerate(zip(args, axes)) if ax is not None]
        if not mapped:
            raise ArgumentError("vmap: Expected at least one Tensor to vmap over")
        examples, firsts, n = [], list(args), None
        for i, whole in mapped:
            # a dict, list or tuple of tensors (a pytree, as torch.func's) maps each leaf, at
            # the argument's axis or at each leaf's (in_dims of the argument's structure)
            leaves, structure = [whole], None
            if isinstance(whole, (list, tuple, dict)):
                leaves = []
                structure = flatten(whole, f"argument {i}", leaves, [], [])
            leaf_axes = _leaf_axes(axes[i], whole, len(leaves), i, f, in_axes)
            fronts = []
            for a, axis in zip(leaves, leaf_axes):
                if axis is None:
                    fronts.append(a)
                    continue
                forms.check_mapped(f, in_axes, a, axis, i)
                front = _to_front(a, axis)
                size = front.shape[0]
                if n is not None and isinstance(n, int) and isinstance(size, int) and n != size:
                    raise ShapeError("vmap: Expected all tensors to have the same size in the "
                                     f"mapped dimension, got sizes {[n, size]} for the mapped "
                                     "dimension")  # fmt: skip
                n = size if n is None else n
                if size == 0:  # an empty batch: the function runs on one example of zeros,
                    # its results keep none of it (sliced to size 0 below)
                    front = call("broadcast_to", _zero(front), shape=(1, *front.shape[1:]))
                # one example, a value of its own (not a view of the argument: a change in
                # place of it changes the batch's, written back below)
                first = fresh(call("index", front, spec=(("int", 0),)))
                examples.append((first.node, front, a, axis, first))
                fronts.append(first)
            firsts[i] = fronts[0] if structure is None else _unflatten(structure, iter(fronts))
        if n is None:
            raise ArgumentError("vmap: Expected at least one Tensor to vmap over")
        empty = n == 0
        n = 1 if empty else n
        graph = get_default_graph()
        since = len(graph.nodes)
        CHANGES.append([])
        try:
            out = f(*firsts, **kwargs)
        finally:
            changes = CHANGES.pop()
        batched = forms.random_values(graph, since, n, randomness)
        # (keyed by the examples' nodes: a change in place makes the object another value)
        batched.update((id(node.out), front) for node, front, *_ in examples)
        forms.check_changes(changes, batched)
        found = []  # (leaf, out_dim) of each output, in order

        def collect(leaf, dim):
            if isinstance(leaf, TracedScalar):
                raise UsageError(
                    "vmap: It looks like you're calling .item() on a Tensor. We don't support "
                    "vmap over calling .item() on a Tensor, please try to rewrite what you're "
                    "doing with other operations."
                )
            found.append((leaf, dim))
            return leaf

        forms.walk_outputs(f, out, out_axes, collect)
        values = [_graph_value(y, graph) for y, _ in found]
        ys = [v for v in values if v is not None]
        changed = [
            (first, a, axis) for node, _, a, axis, first in examples if first.node is not node
        ]
        done = iter(vectorize(ys + [first for first, _, _ in changed], batched) if ys or changed
                    else [])  # fmt: skip
        results = []
        for (y, dim), v in zip(found, values):
            b = next(done) if v is not None else None
            if dim is None:
                if b is not None:
                    raise forms.batched_for_none(f)
                results.append(y)
            elif v is None:
                raise forms.not_a_tensor(f, y)
            else:
                o = b if b is not None else unbatched_to(v, n)
                if empty:
                    o = call("index", o, spec=(("slice", 0, 0, None),))
                results.append(_from_front(o, forms.out_dim_checked(dim, o.ndim)))
        for first, a, axis in changed if not empty else ():  # an example changed in place:
            b = next(done)  # the argument changes
            a.copy_(_from_front(b if b is not None else unbatched_to(first, n), axis))
        placed = iter(results)
        return forms.walk_outputs(f, out, out_axes, lambda leaf, dim: next(placed))

    return _transform(graph_form, "vmap", f)


def _graph_value(y, graph):
    """An output of vmap's function as a value of its graph (a Tensor it made eagerly, or
    closed over: a constant), or None where it is not a tensor."""
    if isinstance(y, Symbol):
        return y
    if isinstance(y, Tensor):
        from ..frontend import trace_locals
        from ..frontend.core import _traced, constant

        value = trace_locals.symbol_of(y)  # a Tensor made in the trace and changed there
        value = _traced(y) if value is None else value  # a module's value in the trace
        if isinstance(value, Symbol):
            return value
        return constant(y.detach().numpy(), graph=graph)
    return None


def _argnums(argnums, n_args: int) -> tuple:
    return checks.argnum_positions(argnums, n_args)[0]


def _jacobian_transform(f, argnums, name, build, has_aux=False):
    def graph_form(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        # an argument may be a dict, list or tuple of tensors (a pytree, as torch.func's:
        # `jacrev(f)(params, x)`): its jacobian is one per leaf, in its structure
        wrt, structures, i = [], [], 0
        for k in nums:
            leaves, structure = _leaves(args[k], f"argument {k}")
            if not leaves or not all(isinstance(a, Symbol) for a in leaves):
                raise GraphError(f"{name}: argument {k} is a {type(args[k]).__name__}")
            for a in leaves:
                checks.differentiable_input(a, name)
                if a.dtype.kind == "c":  # PyTorch's torch.func refuses complex values
                    raise UsageError(f"{name}: Expected all inputs to be real but received "
                                     f"complex tensor at flattened input idx: {i}")  # fmt: skip
                i += 1
            leaves = [fresh(a) for a in leaves]
            args = (*args[:k], _unflatten(structure, iter(leaves)), *args[k + 1 :])
            wrt.append(leaves)
            structures.append(structure)
        out = f(*args, **kwargs)
        if has_aux:
            out, aux = checks.aux_pair(out, f"{name}(f)(*args)")
        where = "jvp(f, primals, tangents)" if name == "jacfwd" else "vjp(f, *primals)"
        checks.only_tensors(checks.leaves_of(out), where)
        # one jacobian per output (a tuple, list or dict of them as torch.func's)
        ys, structure = _leaves(out, "output")
        # (a Tensor made eagerly or closed over: a constant, whose jacobian is zeros)
        ys = [_graph_value(y, wrt[0][0].graph) if isinstance(y, Tensor) else y for y in ys]
        for i, y in enumerate(ys):
            if not isinstance(y, Symbol):
                raise GraphError(f"{name}: the function must return Symbols, got "
                                 f"{type(y).__name__}")  # fmt: skip
            if y.dtype.kind == "c":
                raise UsageError(f"{name}: Expected all outputs to be real but received complex "
                                 f"tensor at flattened input idx: {i}")  # fmt: skip
            if not dt.is_float(y.dtype):
                raise GraphError(f"{name}: cannot differentiate an output of dtype {y.dtype}")
        found = []
        for y in ys:
            with y.graph.name_scope(name):
                jacs = iter(build(y, [a for leaves in wrt for a in leaves]))
            per_arg = [_unflatten(structure, jacs) for structure in structures]
            found.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _unflatten(structure, iter(found))
        return (jac, aux) if has_aux else jac

    return _transform(graph_form, name, f)


def jacrev(f, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The function giving the jacobian of `f` with respect to argument `argnums` (or a
    tuple of them), shape `out.shape + arg.shape`, by reverse mode: one backward pass with a
    batch of cotangents (the identity's rows), vectorized. An `f` returning a tuple, list or
    dict of outputs gives one jacobian per output, in that structure; with `has_aux`, `f`
    returns `(output, aux)` and so does the function, aux as it is (torch.func's).
    `chunk_size` changes nothing (the whole batch of cotangents is one vectorized graph).

    >>> import kiln as kn, numpy as np
    >>> kn.jacrev(lambda x: x ** 2)(np.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """
    checks.check_chunk_size(chunk_size, "jacrev")
    return _jacobian_transform(f, argnums, "jacrev", jacobian_rev, has_aux)


def jacfwd(f, argnums=0, has_aux=False, *, randomness="error"):
    """As `jacrev`, by forward mode: one forward pass (`kn.jvp`'s) with a batch of tangents
    (the identity's rows), vectorized; cheaper when the output has more elements than the
    argument. `randomness` changes nothing (as `vmap`'s).

    >>> import kiln as kn, numpy as np
    >>> kn.jacfwd(lambda x: kn.stack([x[0] * x[1], x[0]]))(np.array([2.0, 5.0]))
    array([[5., 2.],
           [1., 0.]])
    """
    return _jacobian_transform(f, argnums, "jacfwd", jacobian_fwd, has_aux)


def hessian_of(f, argnums=0):
    """`kn.hessian(f)`: the function giving the second derivatives of `f` with respect to
    argument `argnums`, forward over reverse (jacfwd of the gradient, or of jacrev where `f`
    is not a scalar: shape `out.shape + arg.shape + arg.shape`, as torch.func's); for a
    tuple of argnums a tuple of tuples, `[i][j]` the derivative by arguments i and j."""
    single = isinstance(argnums, int)

    def build(y, xs):
        if single and len(xs) != 1 or not single and len(xs) != len(argnums):
            raise ArgumentTypeError(f"hessian: the arguments {argnums} must be tensors")
        # of a scalar: jacfwd of the gradient; of others jacfwd of jacrev, as torch.func's
        gs = grad(y, xs, disconnected="zero") if not y.shape else jacobian_rev(y, xs)
        if single:
            return jacobian_fwd(gs[0], xs)
        return [tuple(jacobian_fwd(g, xs)) for g in gs]  # [i][j]: d(d y/d x_i)/d x_j

    return _jacobian_transform(f, argnums, "hessian", build)
