"""`kn.autograd.functional.jacobian` and `hessian` of eager functions, as PyTorch's
`torch.autograd.functional`: one reverse-mode pass per output element, through the tape."""

from __future__ import annotations

import numpy as np

from .eager import Tensor, enable_grad, zeros
from .eager.autograd import grad as autograd_grad
from .errors import ArgumentError, ArgumentTypeError, AutogradError, ShapeMismatchError, call_error
from .frontend import reshape, stack

__all__ = ["hessian", "jacobian"]


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
    `vectorize` is accepted and changes nothing; only `strategy="reverse-mode"` exists.

    >>> import kiln as kn
    >>> kn.autograd.functional.jacobian(lambda x: x ** 2, kn.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    if strategy != "reverse-mode":
        raise ArgumentError(
            f"kn.autograd.functional.jacobian computes strategy='reverse-mode' only, got "
            f"{strategy!r} (kn.jacfwd differentiates in forward mode)"
        )
    in_single, inputs = _as_tuple(inputs, "inputs", "jacobian")
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


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):  # fmt: skip
    """The Hessian of `func` (which returns a single-element Tensor) at `inputs`: for one
    input of shape S a Tensor of shape S + S; for a tuple of inputs a tuple of tuples.

    >>> import kiln as kn
    >>> kn.autograd.functional.hessian(lambda x: x[0] ** 2 * x[1], kn.tensor([3.0, 5.0]))
    tensor([[10.,  6.],
            [ 6.,  0.]])
    """
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
                      strategy=outer_jacobian_strategy)  # fmt: skip
    return result[0][0] if in_single else result  # result[i][j]: d(d out/d x_i)/d x_j
