"""`einsum`: PyTorch's (and NumPy's) Einstein summation, as diagonals, sums, transposes,
reshapes and batched `matmul`s, so it is differentiable and runs wherever they do."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import ArgumentError, DTypeMismatchError, ShapeError, node_error
from ..graph.core import Symbol, user_site
from .autocast import autocast_op
from .core import call, lift
from .torch_shape import diagonal

__all__ = ["einsum"]


def _parse(equation: str, ndims: list[int]):
    """Labels per operand and of the output, with "..." spelled out as private labels."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise ShapeError(f"einsum(): {len(terms)} operand(s) in the equation, {len(ndims)} given")
    for t in (*terms, output):
        letters = t.replace("...", "")
        if not all(c.isalpha() for c in letters) or t.count("...") > 1:
            raise ShapeError(f"einsum(): invalid subscripts {t!r} in {equation!r}")
    ellipsis_dims = [n - len(t.replace("...", "")) for t, n in zip(terms, ndims)]
    for t, k, n in zip(terms, ellipsis_dims, ndims):
        if k < 0 or (k and "..." not in t):
            raise ShapeError(f"einsum(): subscripts {t!r} do not fit an operand of {n} dims")
    width = max([k for t, k in zip(terms, ellipsis_dims) if "..." in t], default=0)
    spread = [chr(0x2460 + j) for j in range(width)]  # private labels of the ellipsis dims
    labels = [list(t.replace("...", "".join(spread[width - k :]))) for t, k in
              zip(terms, ellipsis_dims)]  # fmt: skip
    if arrow:
        out = list(output.replace("...", "".join(spread)))
        if len(set(out)) != len(out):
            raise ShapeError(f"einsum(): output subscript appears more than once in {equation!r}")
        seen = {c for ls in labels for c in ls}
        for c in out:
            if c not in seen:
                raise ShapeError(f"einsum(): output subscript {c!r} does not appear in the inputs")
    else:
        counts = {}
        for c in (c for ls in labels for c in ls):
            counts[c] = counts.get(c, 0) + 1
        out = spread + sorted(c for c, n in counts.items() if n == 1 and c not in spread)
    return labels, out


def _take_diagonals(x, labels):
    """A label repeated within one operand takes its diagonal (`ii->i`)."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)
        x = diagonal(x, 0, i, j)
        labels = [lab for k, lab in enumerate(labels) if k not in (i, j)] + [c]
    return x, labels


def _sum_out(x, labels, keep):
    axes = tuple(k for k, c in enumerate(labels) if c not in keep)
    if not axes:
        return x, labels
    unsigned = x.dtype.kind == "u"
    x = call("reduce_sum", x, axes=axes, keepdims=False)
    if unsigned:  # PyTorch's sums of unsigned integers are int64 (NumPy's uint64: same bits)
        x = call("cast", x, dtype=np.dtype(np.int64))
    return x, [c for c in labels if c in keep]


def _permute(x, labels, order):
    perm = tuple(labels.index(c) for c in order)
    if perm != tuple(range(len(perm))):
        x = call("transpose", x, perm=perm)
    return x


def _contract(a, la, b, lb, keep):
    """a and b contracted over their shared labels that are not kept: one batched matmul."""
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    if summed and a.dtype != b.dtype:  # PyTorch's bmm does not promote (its products.py)
        raise node_error(
            DTypeMismatchError,
            f"einsum(): expected scalar type {a.dtype} but found {b.dtype} (operands summed over"
            " a shared subscript have one dtype, as PyTorch's: cast one with .to(dtype))",
            op="einsum",
            name=None,
            site=user_site(),
            inputs=[v for v in (a, b) if isinstance(v, Symbol)],
        )
    if a.dtype != b.dtype:  # PyTorch's promotion (it multiplies them), not NumPy's matmul's
        target = dt.result_type(a, b)
        a, b = (v if v.dtype == target else call("cast", v, dtype=target) for v in (a, b))
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    size = {**dict(zip(lb, b.shape)), **dict(zip(la, a.shape))}
    dims = lambda cs: tuple(size[c] for c in cs)  # noqa: E731
    prod = lambda cs: sh.dim_product(dims(cs))  # noqa: E731
    a = call("reshape", _permute(a, la, batch + a_only + summed),
             shape=(prod(batch), prod(a_only), prod(summed)))  # fmt: skip
    b = call("reshape", _permute(b, lb, batch + summed + b_only),
             shape=(prod(batch), prod(summed), prod(b_only)))  # fmt: skip
    out = call("reshape", call("matmul", a, b), shape=dims(batch) + dims(a_only) + dims(b_only))
    return out, batch + a_only + b_only


def _broadcast(xs, labels):
    """Size-1 dims broadcast against the same label's size elsewhere (as PyTorch's einsum)."""
    size = {}
    for x, ls in zip(xs, labels):
        for c, d in zip(ls, x.shape):
            if d != 1:
                if c in size and isinstance(d, int) and isinstance(size[c], int) and d != size[c]:
                    raise ShapeError(f"einsum(): subscript {c!r} has size {d} for one operand "
                                     f"and {size[c]} for another")  # fmt: skip
                size.setdefault(c, d)
    out = []
    for x, ls in zip(xs, labels):
        target = tuple(size.get(c, 1) if d == 1 else d for c, d in zip(ls, x.shape))
        out.append(x if target == tuple(x.shape) else call("broadcast_to", x, shape=target))
    return out


def _sublist_letters(labels) -> str:
    """PyTorch's letters of sublist labels: 0-25 are A-Z, 26-51 a-z, Ellipsis `...`."""
    out = []
    for label in labels:
        if label is Ellipsis:
            out.append("...")
        elif isinstance(label, int) and 0 <= label < 52:
            out.append(chr(ord("A") + label) if label < 26 else chr(ord("a") + label - 26))
        else:
            raise ArgumentError(f"einsum(): subscript in subscript list is not within the valid "
                                f"range [0, 52) (or Ellipsis), got {label!r}")  # fmt: skip
    return "".join(out)


def _from_sublists(args) -> tuple:
    """`einsum(op0, sub0, op1, sub1, ..., [out])` as (equation, operands)."""
    operands, inputs = args[0::2], args[1::2]
    out = None
    if len(args) % 2:  # an odd count: the last is the output's sublist
        operands, out = operands[:-1], args[-1]
    equation = ",".join(_sublist_letters(sub) for sub in inputs)
    if out is not None:
        equation += "->" + _sublist_letters(out)
    return equation, tuple(operands)


@autocast_op("lower")
def einsum(equation: str, *operands):
    """Sums of products over the labelled dims of `operands`, as `equation` says (`"ij,jk->ik"`
    is a matrix product; `...` stands for broadcast dims; no `->`: the labels seen once, in
    alphabetical order). PyTorch's sublist form, `einsum(a, [0, 1], b, [1, 2], [0, 2])`, is
    taken too.

    >>> import kiln as kn
    >>> a, b = kn.ones(2, 3), kn.ones(3, 4)
    >>> tuple(kn.einsum("ij,jk->ik", a, b).shape), kn.einsum("ii", kn.eye(3))
    ((2, 4), tensor(3.))
    """
    if not isinstance(equation, str):  # the sublist form: op, [labels], op, [labels]..., [out]
        equation, operands = _from_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    xs = list(lift(*operands))
    labels, out = _parse(equation, [x.ndim for x in xs])
    pairs = [_take_diagonals(x, ls) for x, ls in zip(xs, labels)]
    xs, labels = [p[0] for p in pairs], [p[1] for p in pairs]
    xs = _broadcast(xs, labels)
    x, lx = xs[0], labels[0]
    for k in range(len(xs)):
        later = {c for ls in labels[k + 1 :] for c in ls} | set(out)
        if k == 0:
            x, lx = _sum_out(x, lx, later)
            continue
        b, lb = _sum_out(xs[k], labels[k], later | set(lx))
        x, lx = _sum_out(x, lx, later | set(lb))
        x, lx = _contract(x, lx, b, lb, later)
    x, lx = _sum_out(x, lx, set(out))
    return _permute(x, lx, out)
