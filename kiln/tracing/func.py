"""`kn.func`: PyTorch's `torch.func` function transforms, `grad`, `grad_and_value`, `vjp`,
`jvp`, `jacrev`, `jacfwd`, `hessian`, `vmap` and `functional_call`. On eager Tensors `grad`,
`grad_and_value` and `vjp` run on the tape (so they nest: `grad(grad(f))`); on Symbols they
build into the graph. The others are kiln's transforms (kiln/tracing/transforms.py).

>>> import kiln as kn
>>> kn.func.grad(lambda x: (x**3).sum())(kn.tensor([1.0, 2.0]))
tensor([ 3., 12.])
>>> kn.func.grad(kn.func.grad(lambda x: x**3))(kn.tensor(2.0))
tensor(12.)
"""

from __future__ import annotations

import contextlib

from ..eager import autograd
from ..eager.grad_mode import inference_mode as differentiating
from ..eager.grad_mode import is_grad_enabled
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    DTypeMismatchError,
    ShapeMismatchError,
    UsageError,
    call_error,
)
from ..frontend.autodiff import grad as graph_grad
from ..frontend.core import lift
from ..graph.core import Symbol
from . import func_checks as checks
from .prints import tracing_now
from .structure import _unflatten, flatten
from .transforms import fresh as fresh_node
from .transforms import hessian_of, in_trace, jacfwd, jacrev, vmap
from .transforms import jvp as _jvp

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp",
           "vmap"]  # fmt: skip


def _positions(argnums, n: int) -> tuple[tuple, bool]:
    return checks.argnum_positions(argnums, n)


def _split_aux(out, has_aux: bool, what: str):
    if not has_aux:
        return out, None
    return checks.aux_pair(out, what)


def _detached(value):
    """`value` (aux: a tensor, or a tuple, list or dict of them) with its Tensors detached."""
    leaves, structure = _leaves(value)
    return _unflatten(structure, iter(a.detach() if isinstance(a, Tensor) else a for a in leaves))


def _traced(func, args, kwargs, positions):
    """(args with the differentiated ones replaced, those inputs flat, whether on Symbols, the
    structure of each differentiated argument). An argument may be a Tensor or a dict, list
    or tuple of them (a pytree, as torch.func's: `grad(loss)(params_dict, x)`). On Tensors
    each input becomes a fresh leaf that requires grad (of the same value, so an outer
    transform's history stays connected through it); on Symbols (and on Tensors in a
    kn.compile trace: the trace's constants or values of them) a fresh node of each
    (`transforms.fresh`: the argument apart from the value the function may close over)."""
    args = list(args)
    if tracing_now():  # in a kn.compile trace: differentiated in its graph, as its values
        for k in positions:
            args[k] = in_trace(args[k])
    structures, inputs = [], []
    for k in positions:
        leaves = []
        structures.append(flatten(args[k], f"argument {k}", leaves, [], []))
        inputs.append(leaves)
    if any(isinstance(x, Symbol) for leaves in inputs for x in leaves):
        flat = []
        for k, structure, leaves in zip(positions, structures, inputs):
            leaves = [fresh_node(a) if isinstance(a, Symbol) else a for a in leaves]
            args[k] = _unflatten(structure, iter(leaves))
            flat += leaves
        return args, flat, True, structures
    flat = []
    for k, structure, leaves in zip(positions, structures, inputs):
        fresh = []
        for a in leaves:
            if not isinstance(a, Tensor):
                raise ArgumentError(f"Thing passed to transform API must be Tensor, got {type(a)}")
            fresh.append(a if a.requires_grad else a.detach().requires_grad_(True))
        if not leaves:
            raise ArgumentError(f"Thing passed to transform API must be Tensor, got "
                                f"{type(args[k])}")  # fmt: skip
        args[k] = _unflatten(structure, iter(fresh))
        flat += fresh
    return args, flat, False, structures


def _grouped(grads, structures):
    """The flat gradients in the structures of the differentiated arguments."""
    found = iter(grads)
    return [_unflatten(structure, found) for structure in structures]


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """`func`'s gradient with respect to the argument(s) `argnums` and its value: a function
    returning `(gradient, value)` (`((gradient, value), aux)`... as torch.func: with
    `has_aux`, `(gradient, (value, aux))`). `func` returns a one-element tensor.

    >>> import kiln as kn
    >>> g, v = kn.func.grad_and_value(lambda x: (x * x).sum())(kn.tensor([3.0]))
    >>> g.tolist(), v.item()
    ([6.0], 9.0)
    """

    def wrapped(*args, **kwargs):
        positions, single = _positions(argnums, len(args))
        # inside another transform (its inputs require grad, in grad mode): keep the history
        # for it. The transform itself differentiates in any mode (under no_grad or
        # inference_mode too, as torch.func's)
        nested = is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad
                                           for p in args for a in _leaves(p)[0])  # fmt: skip
        args, inputs, symbolic, structures = _traced(func, args, kwargs, positions)
        with differentiating(False):
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(out, (Tensor, Symbol)):
                raise UsageError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                 f"Tensor, got {type(out)}")  # fmt: skip
            if len(out.shape):  # (one element of another shape too, as torch.func's)
                raise call_error(ShapeMismatchError, "grad_and_value(f)(*args): Expected f(*args) "
                                 "to return a scalar Tensor, got tensor with "
                                 f"{len(out.shape)} dims. Maybe you wanted to use the vjp or "
                                 "jacrev APIs instead?", "grad")  # fmt: skip
            if symbolic:
                grads = graph_grad(out, inputs, disconnected="zero")
            else:
                # (the outermost transform needs no graph of the gradient: its values are
                # plain, as torch.func's; an inner one keeps it for the outer one)
                grads = [None] * len(inputs)  # (an output that does not depend on them: zeros)
                if out.requires_grad:
                    grads = autograd.grad(out, inputs, create_graph=nested, allow_unused=True)
                grads = [g if g is not None else _zeros(x) for g, x in zip(grads, inputs)]
                if not nested:
                    grads = [g.detach() for g in grads]
                    out = out.detach()
                    aux = _detached(aux) if has_aux else aux
        grads = _grouped(grads, structures)
        grads = grads[0] if single else tuple(grads)
        return (grads, (out, aux)) if has_aux else (grads, out)

    wrapped.__wrapped__ = func  # (what a compiled form around it captures: func's tensors)
    return wrapped


def grad(func, argnums=0, has_aux: bool = False):
    """The function computing `func`'s gradient with respect to the argument(s) `argnums`
    (with `has_aux`, `(gradient, aux)`). Nests: `grad(grad(f))` is the second derivative.

    >>> import kiln as kn
    >>> kn.func.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(kn.tensor([2.0]),
    ...                                                           kn.tensor([5.0]))
    (tensor([5.]), tensor([2.]))
    """
    transformed = grad_and_value(func, argnums, has_aux)

    def wrapped(*args, **kwargs):
        grads, value = transformed(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    wrapped.__wrapped__ = func  # (what a compiled form around it captures: func's tensors)
    return wrapped


def vjp(func, *primals, has_aux: bool = False):
    """`(func(*primals), vjp_fn)`: `vjp_fn(cotangent)` gives the tuple of `cotangent`'s
    products with the jacobian, one per primal (eager Tensors).

    >>> import kiln as kn
    >>> out, fn = kn.func.vjp(lambda x: x**2, kn.tensor([1.0, 3.0]))
    >>> fn(kn.ones(2))
    (tensor([2., 6.]),)

    In a trace (`kn.compile`, or inside `vmap`, whose function may close over its traced
    values) and on Symbols it builds into the graph: `vjp_fn` adds the backward pass there.
    """
    positions = tuple(range(len(primals)))
    # primals on another gradient path (inside another transform, or leaves that require
    # grad): vjp_fn's products keep that history where it runs in grad mode; the output
    # keeps it where vjp runs in grad mode (nested). The function runs in grad mode anyway
    connected = any(isinstance(a, Tensor) and a.requires_grad
                    for p in primals for a in _leaves(p)[0])  # fmt: skip
    nested = connected and is_grad_enabled()
    args, inputs, symbolic, structures = _traced(func, primals, {}, positions)
    with differentiating(False):
        out, aux = _split_aux(func(*args), has_aux, "vjp(f, *primals)")
    checks.only_tensors(checks.leaves_of(out), "vjp(f, *primals)")
    flat, out_structure = _leaves(out)
    checks.differentiable_outputs(flat, "vjp(f, ...)")

    def vjp_fn(cotangents):
        cts, ct_structure = _leaves(cotangents)
        if len(cts) != len(flat) or ct_structure != out_structure:
            raise UsageError("Expected pytree structure of cotangents to be the same as pytree "
                             f"structure of outputs to the function ({len(cts)} cotangents for "
                             f"{len(flat)} outputs)")  # fmt: skip
        if symbolic:
            cts = lift(*cts, context=flat)
            with differentiating(False):
                grads = graph_grad(list(flat), inputs, list(cts), disconnected="zero")
            return tuple(_grouped(grads, structures))
        # the products keep a history where the primals' do (nested), or where a cotangent
        # requires grad (`grad(lambda t: vjp_fn(t)[0])`: linear in it)
        track = is_grad_enabled() and (connected or any(isinstance(c, Tensor) and
                                                        c.requires_grad for c in cts))  # fmt: skip
        pairs = [(y, c) for y, c in zip(flat, cts) if isinstance(y, Tensor) and y.requires_grad]
        grads = [None] * len(inputs)
        if pairs:  # (outputs that do not depend on the primals get no cotangent)
            with differentiating(False) if track else contextlib.nullcontext():
                ys, cs = [y for y, _ in pairs], [c for _, c in pairs]
                grads = autograd.grad(ys, inputs, cs, retain_graph=True, allow_unused=True,
                                      create_graph=track)  # fmt: skip
        grads = [(g if track else g.detach()) if g is not None else _zeros(x)
                 for g, x in zip(grads, inputs)]  # fmt: skip
        return tuple(_grouped(grads, structures))

    if not (symbolic or nested):
        out = _unflatten(out_structure, iter(o.detach() for o in flat))
        aux = _detached(aux) if has_aux else aux
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def hessian(func, argnums=0):
    """The second derivatives of `func` by the argument(s) `argnums` (forward over reverse),
    shape `out.shape + arg.shape + arg.shape`; an argument that is a tuple, list or dict of
    tensors gives them in its structure twice, as torch.func's (`jacfwd(jacrev(func))`).

    >>> import kiln as kn
    >>> kn.func.hessian(lambda p: (p[0] ** 2 * p[1]).sum())((kn.tensor(1.0), kn.tensor(3.0)))
    ((tensor(6.), tensor(2.)), (tensor(2.), tensor(0.)))
    """
    plain = hessian_of(func, argnums)
    nested = jacfwd(jacrev(func, argnums), argnums)

    def wrapped(*args, **kwargs):
        positions, _ = checks.argnum_positions(argnums, len(args))
        if all(isinstance(args[k], (Tensor, Symbol)) for k in positions):
            return plain(*args, **kwargs)
        return nested(*args, **kwargs)

    wrapped.__wrapped__ = func  # (what a compiled form around it captures: func's tensors)
    return wrapped


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """`(func(*primals), the Jacobian-vector product along tangents)` (with `has_aux`, aux
    third), as `kn.jvp` computes it, with torch.func's checks: primals and tangents are
    tuples of one structure, and func returns tensors.

    >>> import kiln as kn
    >>> kn.func.jvp(lambda x: x**2, (kn.tensor([1.0, 3.0]),), (kn.ones(2),))[1]
    tensor([2., 6.])
    """
    where = "jvp(f, primals, tangents)"
    for what, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple):
            raise UsageError(f"{where}: Expected {what} to be a tuple. E.g. it should be valid "
                             "to call f(*primals).")  # fmt: skip
    if not _leaves(primals)[0] and not any(isinstance(p, Tensor) for p in primals):
        raise UsageError(f"{where}: Expected primals to contain at least one Tensor.")
    if _leaves(primals)[1] != _leaves(tangents)[1]:
        raise UsageError(f"{where}: Expected primals and tangents to have the same python "
                         "structure. For example, if primals is a tuple of 3 tensors, tangents "
                         "also must be.")  # fmt: skip

    def checked(*args):
        out = func(*args)
        if has_aux:
            checks.aux_pair(out, where)
        checks.only_tensors(checks.leaves_of(out[0] if has_aux else out), where)
        return out

    return _jvp(checked, primals, tangents, strict=strict, has_aux=has_aux)


def _leaves(value) -> tuple[list, object]:
    leaves = []
    return leaves, flatten(value, "output", leaves, [], [])


def replace_all_batch_norm_modules_(root):
    """Makes every BatchNorm module in `root` (itself included) keep no running statistics,
    in place (its `running_mean`, `running_var` and `num_batches_tracked` None,
    `track_running_stats` False), as torch.func's patch for vmap over such a model; returns
    `root`.

    >>> import kiln as kn
    >>> net = kn.func.replace_all_batch_norm_modules_(kn.nn.Sequential(kn.nn.BatchNorm1d(2)))
    >>> net[0].running_mean is None, net[0].track_running_stats
    (True, False)
    """
    from ..nn.layers import _BatchNorm  # NOTE: lazy: nn builds on tracing

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def linearize(func, *primals):
    """`(func(*primals), jvp_fn)`: `jvp_fn(*tangents)` gives the Jacobian-vector product of
    func at `primals` along `tangents` (shaped as the primals), as `kn.func.jvp` computes it
    (each call differentiates func again at the same primals).

    >>> import kiln as kn
    >>> out, jvp_fn = kn.func.linearize(lambda x: x**2, kn.tensor([1.0, 3.0]))
    >>> out, jvp_fn(kn.ones(2))
    (tensor([1., 9.]), tensor([2., 6.]))
    """
    leaves, structure = _leaves(primals)
    leaves = [p.detach() if isinstance(p, Tensor) else p for p in leaves]
    primals = _unflatten(structure, iter(leaves))
    out = _jvp(func, primals, _unflatten(structure, iter(_zeros(p) for p in leaves)))[0]

    def jvp_fn(*tangents):
        found, tangent_structure = _leaves(tangents)
        if tangent_structure != structure:  # (PyTorch's RuntimeErrors)
            raise ShapeMismatchError(
                "linearize: expected the tangents to have the same argspec as the primals (one "
                "tangent per primal, of its structure)"
            )
        for i, (t, p) in enumerate(zip(found, leaves)):
            if t.dtype != p.dtype:
                raise call_error(DTypeMismatchError, f"linearize: tangent:{i} with dtype "
                                 f"{t.dtype} in flattened pytree doesn't match the dtype "
                                 f"{p.dtype} of the corresponding primal", "linearize", t,
                                 p)  # fmt: skip
            if tuple(t.shape) != tuple(p.shape):
                raise call_error(ShapeMismatchError, f"linearize: tangent:{i} with shape "
                                 f"{tuple(t.shape)} in flattened pytree doesn't match the shape "
                                 f"{tuple(p.shape)} of the corresponding primal", "linearize", t,
                                 p)  # fmt: skip
        return _jvp(func, primals, tangents)[1]

    return out, jvp_fn


def functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):  # fmt: skip
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the tensors of
    `parameter_and_buffer_dicts` (a dict, or a tuple of dicts, by qualified name); the
    module's own are put back afterwards.

    >>> import kiln as kn
    >>> lin = kn.nn.Linear(2, 1)
    >>> w = {"weight": kn.ones(1, 2), "bias": kn.zeros(1)}
    >>> kn.func.functional_call(lin, w, (kn.tensor([[1.0, 2.0]]),)).tolist()
    [[3.0]]
    """
    dicts = parameter_and_buffer_dicts
    merged = {}
    for d in dicts if isinstance(dicts, (tuple, list)) else (dicts,):
        repeated = sorted(set(merged) & set(d))
        if repeated:
            raise ArgumentError(f"{repeated} appeared in multiple dictionaries; behavior of "
                                "functional call is ambiguous")  # fmt: skip
        merged.update(d)
    known = dict(module.named_parameters(remove_duplicate=False))
    known |= dict(module.named_buffers(remove_duplicate=False))
    if strict:
        missing, unexpected = sorted(set(known) - set(merged)), sorted(set(merged) - set(known))
        found = (("Unexpected", unexpected), ("Missing", missing))
        errors = [f"{what} key(s): {', '.join(map(repr, keys))}." for what, keys in found if keys]
        if errors:
            raise UsageError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                             + "\n\t".join(errors))  # fmt: skip
    if tie_weights:
        merged = _untied(known, merged)
    saved = []
    try:
        for name, value in merged.items():
            owner, _, attr = name.rpartition(".")
            target = module.get_submodule(owner) if owner else module
            where = _table(target, attr)
            table = target.__dict__ if where is None else target.__dict__[where]
            saved.append((table, attr, table.get(attr, _ABSENT)))
            table[attr] = value
        args = args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old in reversed(saved):
            if old is _ABSENT:
                del table[attr]
            else:
                table[attr] = old


_ABSENT = object()


def _untied(known: dict, given: dict) -> dict:
    """`given` with the value of each name also under the names tied to it (one tensor
    registered under several names: `dec.weight = enc.weight`), as torch.func's
    tie_weights; refuses different values for names tied together."""
    names_of: dict = {}
    for name, tensor in known.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    out = dict(given)
    for name in sorted(set(given) & set(tied)):
        also = tied[name] & set(given)
        if len({id(given[n]) for n in also}) > 1:
            raise ArgumentError(f"functional_call got multiple values for keys {sorted(also)}, "
                                "which are tied. Consider using tie_weights=False")  # fmt: skip
        for other in tied[name]:
            out[other] = given[name]
    return out


def stack_module_state(models) -> tuple[dict, dict]:
    """`(params, buffers)` of `models` (modules of one class, all training or all evaluating):
    each a dict by name of the models' tensors stacked along a new first dim, as torch.func's
    (for `vmap(functional_call)` over an ensemble). The stacks are new leaves; a parameter's
    requires grad where the models' do (they must agree).

    >>> import kiln as kn
    >>> params, buffers = kn.func.stack_module_state([kn.nn.Linear(2, 1) for _ in range(3)])
    >>> params["weight"].shape, params["bias"].requires_grad
    (kiln.Size([3, 1, 2]), True)
    """
    from ..frontend.torch_shape import stack  # NOTE: lazy: the frontend builds on tracing

    models = list(models)
    if not models:  # (PyTorch's RuntimeErrors)
        raise UsageError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise UsageError("stack_module_state: Expected all models to have the same "
                         "training/eval mode.")  # fmt: skip
    if len({type(m) for m in models}) != 1:
        raise UsageError("stack_module_state: Expected all models to be of the same class.")

    def stacked(name, tensors):
        flags = {t.requires_grad for t in tensors}
        if len(flags) != 1:
            raise UsageError(f"Expected {name} from each model to have the same .requires_grad")
        leaf = stack([t.detach() for t in tensors])
        return leaf.requires_grad_(True) if flags == {True} else leaf

    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return (
        {name: stacked(name, [p[name] for p in params]) for name in params[0]},
        {name: stacked(name, [b[name] for b in buffers]) for name in buffers[0]},
    )


def _table(module, attr: str) -> str | None:
    """Where module keeps `attr`: its parameters or buffers, else None (its own attributes:
    a name that is neither is set there for the call, as torch.func's)."""
    for where in ("_parameters", "_buffers"):
        if attr in module.__dict__.get(where, {}):
            return where
    return None


def _numel(x) -> int:
    n = 1
    for d in x.shape:
        n *= d if isinstance(d, int) else 2
    return n


def _zeros(x):
    from ..eager.factories import zeros_like

    return zeros_like(x)
