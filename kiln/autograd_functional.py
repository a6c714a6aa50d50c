"""`kn.autograd.functional` of eager functions, as PyTorch's `torch.autograd.functional`:
`jacobian` and `hessian` (one reverse-mode pass per output element, through the tape), and the
products `vjp`, `jvp`, `vhp` and `hvp` (one or two passes; `jvp` and `hvp` by the double-backward
trick, as PyTorch computes them)."""

from __future__ import annotations

import numpy as np

from .eager import Tensor, enable_grad, ones_like, zeros
from .eager.autograd import grad as autograd_grad
from .errors import (
    ArgumentAssertionError,
    ArgumentTypeError,
    AutogradError,
    ShapeMismatchError,
    UnknownModeError,
    UsageError,
    call_error,
)
from .frontend import reshape, stack
from .graph.core import Symbol

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(values, what: str, fn_name: str) -> tuple[bool, tuple]:
    single = isinstance(values, Tensor)
    values = (values,) if single else tuple(values) if isinstance(values, (tuple, list)) else None
    if values is None or not all(isinstance(v, Tensor) for v in values):
        raise ArgumentTypeError(
            f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors"
        )
    return single, values


def _result(rows, out_single: bool, in_single: bool):
    """PyTorch's nesting: a Tensor, a tuple over inputs or outputs, or a tuple of tuples."""
    if out_single and in_single:
        return rows[0][0]
    if out_single:
        return tuple(rows[0])
    if in_single:
        return tuple(r[0] for r in rows)
    return tuple(tuple(r) for r in rows)


def _jacobian_rows(out, inputs, i: int, create_graph: bool, strict: bool) -> list:
    """[d out / d inputs[j]] for each j, of shape out.shape + inputs[j].shape."""
    flat = reshape(out, (-1,))
    per_input: list[list] = [[] for _ in inputs]
    for k in range(flat.shape[0]):
        if flat.requires_grad:
            grads = autograd_grad(flat[k], inputs, retain_graph=True, create_graph=create_graph,
                                  allow_unused=True)  # fmt: skip
        else:
            grads = (None,) * len(inputs)
        for j, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise call_error(
                        AutogradError, f"Output {i} of the user-provided function is "
                        f"independent of input {j}. This is not allowed in strict mode.",
                        "jacobian", out, inputs[j],
                    )  # fmt: skip
                g = zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
            per_input[j].append(g)
    results = []
    for j, x in enumerate(inputs):
        if per_input[j]:
            block = reshape(stack(per_input[j]), (*out.shape, *x.shape))
        else:  # an output with no elements
            block = zeros((*out.shape, *x.shape), dtype=x.dtype, device=x.device)
        results.append(block if create_graph else block.detach())
    return results


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):  # fmt: skip
    """The Jacobian of `func` at `inputs` (a Tensor or a tuple of them): for one input and
    one output a Tensor of shape `output.shape + input.shape`; tuples as PyTorch nests them.
    `vectorize` changes nothing for `strategy="reverse-mode"`; `strategy="forward-mode"`
    (with `vectorize=True`, and not with `create_graph` or `strict`, as PyTorch's) takes
    one jvp per input element.

    >>> import kiln as kn
    >>> kn.autograd.functional.jacobian(lambda x: x ** 2, kn.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    _check_strategy(strategy, vectorize, create_graph, strict)
    if _traced(inputs):  # inside kn.compile (or graph mode): the graph's transform
        from .tracing.transforms import jacrev

        single = isinstance(inputs, Symbol)
        return jacrev(func, 0 if single else tuple(range(len(inputs))))(
            *((inputs,) if single else inputs)
        )
    in_single, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if strategy == "forward-mode":  # (`_check_strategy` refused what it lacks)
        return _forward_jacobian(func, inputs, in_single)
    with enable_grad():
        # A new Tensor per input (PyTorch's rule), connected to the caller's when the result
        # must be differentiable with respect to it.
        inputs = tuple(x.clone() if create_graph and x.requires_grad
                       else x.detach().requires_grad_(True) for x in inputs)  # fmt: skip
        outputs = func(*inputs)
        out_single, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                        "jacobian")  # fmt: skip
        rows = [_jacobian_rows(out, inputs, i, create_graph, strict)
                for i, out in enumerate(outputs)]  # fmt: skip
    return _result(rows, out_single, in_single)


def _traced(inputs) -> bool:
    """Whether `inputs` (a value or a tuple of them) are graph values: a kn.compile trace's."""
    return any(isinstance(x, Symbol) for x in (inputs if isinstance(inputs, tuple) else (inputs,)))


def _check_strategy(strategy, vectorize: bool, create_graph: bool, strict: bool) -> None:
    """PyTorch's refusals of a jacobian's strategy and the options forward mode lacks."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ArgumentAssertionError(
            f'Expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}'
        )
    if strategy == "reverse-mode":
        return
    if not vectorize:
        raise UnknownModeError("Computing Jacobian using forward-AD or forward-over-reverse "
                               "Hessian is only implemented for `vectorize=True`.")  # fmt: skip
    if create_graph:
        raise UnknownModeError(
            "kn.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet).'
        )
    if strict:
        raise UsageError(
            "kn.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet).'
        )


def _forward_jacobian(func, inputs, in_single: bool):
    """`jacobian` by forward mode: one `kn.func.jvp` per input element (a one-hot tangent),
    its output tangents the Jacobian's columns."""
    from .tracing.transforms import jvp  # NOTE: lazy: the tracing package builds on this one

    columns: list = [[] for _ in inputs]  # per input: per element, the outputs' tangents
    probe = None
    for j, x in enumerate(inputs):
        for e in range(x.numel()):
            tangents = [zeros(tuple(v.shape), dtype=v.dtype, device=v.device) for v in inputs]
            tangents[j].view(-1)[e] = 1
            probe, out_tangents = jvp(func, inputs, tuple(tangents))
            single = isinstance(out_tangents, Tensor)
            columns[j].append((out_tangents,) if single else tuple(out_tangents))
    if probe is None:  # inputs without elements: the outputs' shapes from one call
        with enable_grad():
            probe = func(*(x.detach() for x in inputs))
    _, outputs = _as_tuple(probe, "outputs of the user-provided function", "jacobian")
    rows = []
    for i, out in enumerate(outputs):
        row = []
        for j, x in enumerate(inputs):
            cols = [c[i] for c in columns[j]]
            block = stack(cols, -1) if cols else zeros((*out.shape, 0), dtype=out.dtype)
            row.append(reshape(block, (*out.shape, *x.shape)).detach())
        rows.append(row)
    return _result(rows, isinstance(probe, Tensor), in_single)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):  # fmt: skip
    """The Hessian of `func` (which returns a single-element Tensor) at `inputs`: for one
    input of shape S a Tensor of shape S + S; for a tuple of inputs a tuple of tuples.

    >>> import kiln as kn
    >>> kn.autograd.functional.hessian(lambda x: x[0] ** 2 * x[1], kn.tensor([3.0, 5.0]))
    tensor([[10.,  6.],
            [ 6.,  0.]])
    """
    if _traced(inputs):  # in kn.compile: the graph's transform
        from .tracing.transforms import hessian_of

        if isinstance(inputs, Symbol):
            return hessian_of(func)(inputs)
        return hessian_of(func, tuple(range(len(inputs))))(*inputs)
    in_single, inputs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or int(np.prod(out.shape)) != 1:
            got = f" of shape {tuple(out.shape)}" if isinstance(out, Tensor) else ""
            raise call_error(
                ShapeMismatchError, "The function given to hessian should return a single "
                f"element Tensor, got {type(out).__name__}{got}", "hessian", out,
            )  # fmt: skip
        if not out.requires_grad:
            if strict:
                raise call_error(
                    AutogradError, "The output of the user-provided function is independent "
                    "of input 0. This is not allowed in strict mode.", "hessian", out,
                )  # fmt: skip
            return tuple(zeros(tuple(x.shape), dtype=x.dtype, device=x.device) for x in xs)
        grads = autograd_grad(out.reshape(()), xs, create_graph=True, allow_unused=True)
        return tuple(zeros(tuple(x.shape), dtype=x.dtype, device=x.device) if g is None else g
                     for g, x in zip(grads, xs))  # fmt: skip

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)  # fmt: skip
    return result[0][0] if in_single else result  # result[i][j]: d(d out/d x_i)/d x_j


def _fresh(inputs, create_graph: bool) -> tuple:
    """A new Tensor per input (PyTorch's rule), connected to the caller's when the result must
    be differentiable with respect to it."""
    return tuple(x.clone() if create_graph and x.requires_grad
                 else x.detach().requires_grad_(True) for x in inputs)  # fmt: skip


def _vectors(v, like: tuple, fn_name: str, what: str) -> tuple:
    """`v` as a tuple matching `like` (a Tensor per entry, of its shape); `v=None` only where
    `like` is one single-element Tensor (then v is 1)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise call_error(
                UsageError, f"The vector v can only be None if {what} a single Tensor "
                "with a single element.", fn_name, *like,
            )  # fmt: skip
        return (ones_like(like[0]),)
    _, v = _as_tuple(v, "v", fn_name)
    if len(v) != len(like):
        raise call_error(UsageError, f"v is a tuple of invalid length: should be "
                         f"{len(like)} but got {len(v)}.", fn_name, *v)  # fmt: skip
    for vi, x in zip(v, like):
        if tuple(vi.shape) != tuple(x.shape):
            raise call_error(
                ShapeMismatchError, f"v has invalid size: should be {list(x.shape)} but got "
                f"{list(vi.shape)}.", fn_name, vi, x,
            )  # fmt: skip
    return v


def _backward(outs, xs, grads, create_graph: bool, strict: bool, fn_name: str) -> tuple:
    """d(sum outs * grads)/d xs, zeros for an input the outputs do not depend on."""
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
    if strict and len(pairs) != len(outs):
        raise call_error(
            AutogradError, "Output 0 of the user-provided function does not require gradients. "
            "The outputs must be computed in a differentiable manner from the input when "
            "running in strict mode.", fn_name, *outs,
        )  # fmt: skip
    found = (None,) * len(xs)
    if pairs:
        found = autograd_grad([o for o, _ in pairs], xs, [g for _, g in pairs],
                              create_graph=True, allow_unused=True)  # fmt: skip
    if strict and any(g is None for g in found):
        raise call_error(
            AutogradError, "The output of the user-provided function is independent of an "
            "input. This is not allowed in strict mode.", fn_name, *xs,
        )  # fmt: skip
    return tuple(zeros(tuple(x.shape), dtype=x.dtype, device=x.device) if g is None else g
                 for g, x in zip(found, xs))  # fmt: skip


def _finish(values: tuple, single: bool, create_graph: bool):
    values = tuple(v if create_graph else v.detach() for v in values)
    return values[0] if single else values


def _call(func, inputs, fn_name: str, create_graph: bool):
    in_single, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _fresh(inputs, create_graph)
    out_single, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                    fn_name)  # fmt: skip
    return in_single, inputs, out_single, outputs


def _graph_product(func, inputs, v, kind: str):
    """vjp/jvp/vhp/hvp of graph values (inside kn.compile, or graph mode): `kn.grad` (twice
    for the Hessian products, whose Hessian is symmetric) and `kn.jvp`, nested as the eager
    forms nest their results."""
    from .frontend import stop_gradient
    from .frontend.autodiff import grad as graph_grad
    from .tracing.transforms import jvp as graph_jvp

    in_single = not isinstance(inputs, (tuple, list))
    xs = (inputs,) if in_single else tuple(inputs)
    vs = None if v is None else ((v,) if not isinstance(v, (tuple, list)) else tuple(v))
    if (
        vs is not None
    ):  # constants of the product (one may be an input too: `hvp(f, (x, v), (v, x))`)
        vs = tuple(stop_gradient(w) for w in vs)
    if kind == "jvp":
        out, tangent = graph_jvp(func, xs, vs)
        return out, tangent
    out = func(*xs)
    if kind == "vjp":
        outs = out if isinstance(out, (tuple, list)) else (out,)
        grads = graph_grad(list(outs), list(xs), grad_ys=None if vs is None else list(vs))
    else:
        first = graph_grad(out, list(xs))
        dot = None
        for g, w in zip(first, vs):
            term = (g * w).sum()
            dot = term if dot is None else dot + term
        grads = graph_grad(dot, list(xs))
    return out, grads[0] if in_single else tuple(grads)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), the vector-Jacobian product v^T J): the gradient of the outputs
    weighted by `v` (shaped as the outputs; `None` for one single-element output), shaped as
    the inputs. Both are detached unless `create_graph`.

    >>> import kiln as kn
    >>> out, g = kn.autograd.functional.vjp(lambda x: x ** 2, kn.tensor([1.0, 3.0]), kn.ones(2))
    >>> g
    tensor([2., 6.])
    """
    if _traced(inputs):  # inside kn.compile: the graph's derivatives
        return _graph_product(func, inputs, v, "vjp")
    with enable_grad():
        in_single, inputs, out_single, outputs = _call(func, inputs, "vjp", create_graph)
        v = _vectors(v, outputs, "vjp", "the user-provided function returns")
        grads = _backward(outputs, inputs, v, create_graph, strict, "vjp")
    return _finish(outputs, out_single, create_graph), _finish(grads, in_single, create_graph)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), the Jacobian-vector product J v): the directional derivative of the
    outputs along `v` (shaped as the inputs; `None` for one single-element input), shaped as
    the outputs, by differentiating v^T-weighted gradients twice as PyTorch does.

    >>> import kiln as kn
    >>> out, d = kn.autograd.functional.jvp(lambda x: x ** 2, kn.tensor([1.0, 3.0]), kn.ones(2))
    >>> d
    tensor([2., 6.])
    """
    if _traced(inputs):  # inside kn.compile: the graph's derivatives
        return _graph_product(func, inputs, v, "jvp")
    with enable_grad():
        in_single, inputs, out_single, outputs = _call(func, inputs, "jvp", create_graph)
        v = _vectors(v, inputs, "jvp", "the input to the user-provided function is")
        dummies = tuple(zeros(tuple(o.shape), dtype=o.dtype, device=o.device)
                        .requires_grad_(True) for o in outputs)  # fmt: skip
        grads = _backward(outputs, inputs, dummies, True, strict, "jvp")
        directional = _backward([g for g in grads], dummies, v, create_graph, False, "jvp")
    return (_finish(outputs, out_single, create_graph),
            _finish(directional, out_single, create_graph))  # fmt: skip


def _scalar_gradient(func, inputs, fn_name: str, create_graph: bool, strict: bool):
    in_single, inputs, _, outputs = _call(func, inputs, fn_name, create_graph)
    out = outputs[0]
    if len(outputs) != 1 or out.numel() != 1:
        raise call_error(
            ShapeMismatchError, f"The Tensor returned by the function given to {fn_name} "
            "should contain a single element", fn_name, *outputs,
        )  # fmt: skip
    grads = _backward((out,), inputs, (ones_like(out),), True, strict, fn_name)
    return in_single, inputs, out, grads


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), v^T H): the product of `v` (shaped as the inputs) with the Hessian of
    `func`, which returns a single-element Tensor; shaped as the inputs.

    >>> import kiln as kn
    >>> out, p = kn.autograd.functional.vhp(lambda x: (x ** 3).sum(), kn.tensor([1.0, 2.0]),
    ...                                     kn.ones(2))
    >>> p
    tensor([ 6., 12.])
    """
    if _traced(inputs):  # inside kn.compile: the graph's derivatives
        return _graph_product(func, inputs, v, "vhp")
    with enable_grad():
        in_single, inputs, out, grads = _scalar_gradient(func, inputs, "vhp", create_graph,
                                                         strict)  # fmt: skip
        v = _vectors(v, inputs, "vhp", "the input to the user-provided function is")
        product = _backward(grads, inputs, v, create_graph, False, "vhp")
    return _finish((out,), True, create_graph), _finish(product, in_single, create_graph)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(*inputs), H v): the Hessian of `func` (which returns a single-element Tensor)
    times `v` (shaped as the inputs), by the double-backward trick as PyTorch computes it.

    >>> import kiln as kn
    >>> out, p = kn.autograd.functional.hvp(lambda x: (x ** 3).sum(), kn.tensor([1.0, 2.0]),
    ...                                     kn.ones(2))
    >>> p
    tensor([ 6., 12.])
    """
    if _traced(inputs):  # inside kn.compile: the graph's derivatives
        return _graph_product(func, inputs, v, "hvp")
    with enable_grad():
        in_single, inputs, out, grads = _scalar_gradient(func, inputs, "hvp", create_graph,
                                                         strict)  # fmt: skip
        v = _vectors(v, inputs, "hvp", "the input to the user-provided function is")
        dummies = tuple(zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
                        .requires_grad_(True) for x in inputs)  # fmt: skip
        vhp_dummy = _backward(grads, inputs, dummies, True, False, "hvp")
        product = _backward(vhp_dummy, dummies, v, create_graph, False, "hvp")
    return _finish((out,), True, create_graph), _finish(product, in_single, create_graph)
