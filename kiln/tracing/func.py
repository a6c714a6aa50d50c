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
from ..eager.grad_mode import enable_grad
from ..eager.tensor import Tensor
from ..errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeMismatchError,
    ShapeMismatchError,
    call_error,
)
from ..frontend.autodiff import grad as graph_grad
from ..frontend.core import lift
from ..graph.core import Symbol
from .prints import tracing_now
from .structure import _unflatten, flatten
from .transforms import fresh as fresh_node
from .transforms import hessian_of as hessian
from .transforms import in_trace, jacfwd, jacrev, jvp, vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp",
           "vmap"]  # fmt: skip


def _positions(argnums, n: int) -> tuple[tuple, bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ArgumentError("argnums must be non-empty")
    for k in nums:
        if not -n <= k < n:
            raise ArgumentError(f"Got argnums={argnums} but only {n} positional inputs")
    return tuple(k % n for k in nums), single


def _split_aux(out, has_aux: bool, what: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ArgumentTypeError(f"{what}(f)(*args): output of function f should be a tuple: "
                                "(output, aux) if has_aux is True")  # fmt: skip
    return out


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
                raise ArgumentTypeError(
                    f"expected argument {k} to be a Tensor (or a dict, list or tuple of "
                    f"them), got {type(a).__name__}"
                )
            fresh.append(a if a.requires_grad else a.detach().requires_grad_(True))
        if not leaves:
            raise ArgumentTypeError(f"expected argument {k} to be a Tensor, got "
                                    f"{type(args[k]).__name__}")  # fmt: skip
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
        # inside another transform (its inputs require grad): keep the history for it
        nested = any(isinstance(a, Tensor) and a.requires_grad for a in args)
        args, inputs, symbolic, structures = _traced(func, args, kwargs, positions)
        with contextlib.nullcontext() if symbolic else enable_grad():
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, (Tensor, Symbol)) or _numel(out) != 1:
                raise call_error(ShapeMismatchError, "grad_and_value(f)(*args): Expected f(*args) "
                                 "to return a scalar Tensor, got tensor with "
                                 f"{len(getattr(out, 'shape', ()))} dims", "grad")  # fmt: skip
            if symbolic:
                grads = graph_grad(out, inputs, disconnected="zero")
            else:
                grads = autograd.grad(out, inputs, create_graph=True, allow_unused=True)
                grads = [g if g is not None else _zeros(x) for g, x in zip(grads, inputs)]
                if not nested:  # the outermost transform: plain values, as torch.func's
                    grads = [g.detach() for g in grads]
                    out = out.detach()
        grads = _grouped(grads, structures)
        grads = grads[0] if single else tuple(grads)
        return (grads, (out, aux)) if has_aux else (grads, out)

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
    # inside another transform (its inputs require grad): keep the history for it
    nested = any(isinstance(a, Tensor) and a.requires_grad
                 for p in primals for a in _leaves(p)[0])  # fmt: skip
    args, inputs, symbolic, structures = _traced(func, primals, {}, positions)
    with contextlib.nullcontext() if symbolic else enable_grad():
        out, aux = _split_aux(func(*args), has_aux, "vjp")
    flat, out_structure = _leaves(out)

    def vjp_fn(cotangents):
        cts, ct_structure = _leaves(cotangents)
        if len(cts) != len(flat):
            raise ArgumentError(f"Expected {len(flat)} cotangents, got {len(cts)}")
        if symbolic:
            cts = lift(*cts, context=flat)
            grads = graph_grad(list(flat), inputs, list(cts), disconnected="zero")
            return tuple(_grouped(grads, structures))
        with enable_grad() if nested else contextlib.nullcontext():
            grads = autograd.grad(flat, inputs, cts, retain_graph=True, allow_unused=True,
                                  create_graph=nested)  # fmt: skip
        grads = [(g if nested else g.detach()) if g is not None else _zeros(x)
                 for g, x in zip(grads, inputs)]  # fmt: skip
        return tuple(_grouped(grads, structures))

    if not (symbolic or nested):
        out = _unflatten(out_structure, iter(o.detach() for o in flat))
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


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
    primals = tuple(p.detach() if isinstance(p, Tensor) else p for p in primals)
    out = jvp(func, primals, tuple(_zeros(p) for p in primals))[0]

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):  # (PyTorch's RuntimeErrors)
            raise ShapeMismatchError(f"linearize: jvp_fn expected {len(primals)} tangents (one "
                                     f"per primal), got {len(tangents)}")  # fmt: skip
        for t, p in zip(tangents, primals):
            if isinstance(t, Tensor) and t.dtype != p.dtype:
                raise call_error(DTypeMismatchError, f"linearize: jvp_fn expected a tangent of "
                                 f"dtype {p.dtype}, got {t.dtype}", "linearize", t, p)  # fmt: skip
            if isinstance(t, Tensor) and t.shape != p.shape:
                raise call_error(ShapeMismatchError, f"linearize: jvp_fn expected a tangent of "
                                 f"shape {tuple(p.shape)}, got {tuple(t.shape)}", "linearize",
                                 t, p)  # fmt: skip
        return jvp(func, primals, tangents)[1]

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
        for name, value in d.items():
            if name in merged:
                raise ArgumentError(f"{name} appeared in multiple dictionaries")
            merged[name] = value
    known = dict(module.named_parameters()) | dict(module.named_buffers())
    if strict:
        missing = sorted(set(known) - set(merged))
        unexpected = sorted(set(merged) - set(known))
        if missing or unexpected:
            raise ArgumentError(
                f"Error(s) in reparametrizing for {type(module).__name__}: "
                f"missing keys {missing}, unexpected keys {unexpected}"
            )
    saved = []
    try:
        for name, value in merged.items():
            owner, _, attr = name.rpartition(".")
            target = module.get_submodule(owner) if owner else module
            where = _table(target, attr)
            saved.append((target, attr, where, target.__dict__[where][attr]))
            target.__dict__[where][attr] = value
        args = args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for target, attr, where, old in reversed(saved):
            target.__dict__[where][attr] = old


def stack_module_state(models) -> tuple[dict, dict]:
    """`(params, buffers)` of `models` (modules of one class, all training or all evaluating):
    each a dict by name of the models' tensors stacked along a new first dim, as torch.func's
    (for `vmap(functional_call)` over an ensemble). The stacks are new leaves; a parameter's
    requires grad where every model's does.

    >>> import kiln as kn
    >>> params, buffers = kn.func.stack_module_state([kn.nn.Linear(2, 1) for _ in range(3)])
    >>> params["weight"].shape, params["bias"].requires_grad
    (kiln.Size([3, 1, 2]), True)
    """
    from ..frontend.torch_shape import stack  # NOTE: lazy: the frontend builds on tracing

    models = list(models)
    if not models:
        raise ArgumentError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise ArgumentError("stack_module_state: Expected all models to have the same "
                            "training/eval mode.")  # fmt: skip
    if len({type(m) for m in models}) != 1:
        raise ArgumentError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors):
        leaf = stack([t.detach() for t in tensors])
        return leaf.requires_grad_(True) if all(t.requires_grad for t in tensors) else leaf

    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return (
        {name: stacked([p[name] for p in params]) for name in params[0]},
        {name: stacked([b[name] for b in buffers]) for name in buffers[0]},
    )


def _table(module, attr: str) -> str:
    for where in ("_parameters", "_buffers"):
        if attr in module.__dict__.get(where, {}):
            return where
    raise ArgumentError(f"{type(module).__name__} has no parameter or buffer {attr!r}")


def _numel(x) -> int:
    n = 1
    for d in x.shape:
        n *= d if isinstance(d, int) else 2
    return n


def _zeros(x):
    from ..eager.factories import zeros_like

    return zeros_like(x)
