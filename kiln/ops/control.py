"""Control flow: region ops that hold sub-graphs (`cond`, `while_loop`, `scan`), and `get`,
which projects one element of a node with several outputs (type `tuple`).

A region op's operands are its own values followed by its bodies' captures; its attrs hold
each body as a `Region` and the counts that split the operands. Its output is a tuple whose
elements `get[index, shape, dtype]` nodes read. The kernels run each body as its own compiled
program (`run_body`, installed by kiln/runtime/regions.py); gradients of region ops are
built by kiln/passes/region_grad.py (`vjp=None` here: autodiff dispatches on the "region" tag).
"""

from __future__ import annotations

from .. import dtypes as dt
from .. import shapes as sh
from ..errors import DTypeError, GraphError, NumericsError, ShapeError
from .core import bind, defop

_run_body = None  # how region ops run their bodies (`use_body_runner`)


def use_body_runner(run_body) -> None:
    """Makes `run_body(region, xp, into=False)` (the body's compiled program for the array
    module `xp`) how region ops run their bodies: kiln.runtime, which builds on this layer,
    gives its own when it is imported (kiln/runtime/regions.py)."""
    global _run_body
    _run_body = run_body


def _runner(region, xp, into=False):
    if _run_body is None:
        raise GraphError("region ops run through kiln.runtime (import kiln first)")
    return _run_body(region, xp, into)


def _in_iteration(error: NumericsError, what: str, k: int) -> NumericsError:
    """A body's NaN/Inf error (it names the body's node and site) with the iteration added."""
    return NumericsError(f"{error} (in {what}, iteration {k})")


def _buffers(xp, shapes, outputs) -> list:
    return [xp.empty(tuple(s), o.dtype) for s, o in zip(shapes, outputs)]


def same_shape(a, b) -> bool:
    """Shapes equal where both dims are known (a symbolic dim matches any dim)."""
    return len(a) == len(b) and all(
        x == y or isinstance(x, sh.Dim) or isinstance(y, sh.Dim) for x, y in zip(a, b)
    )


def _check(what, shapes, params):
    if len(shapes) != len(params):
        raise ShapeError(f"{what}: {len(shapes)} operands for a body of {len(params)} inputs")
    for k, (shape, p) in enumerate(zip(shapes, params)):
        if not same_shape(tuple(shape), p.shape):
            raise ShapeError(f"{what}: operand {k} has shape {tuple(shape)}, the body's input "
                             f"'{p.name}' {p.shape}")  # fmt: skip


def _check_dtypes(what, dtypes, params):
    for k, (d, p) in enumerate(zip(dtypes, params)):
        if d != p.dtype:
            raise DTypeError(f"{what}: operand {k} is {d}, the body's input '{p.name}' {p.dtype}")


# -- get -------------------------------------------------------------------------------------


def _get_shape(t, *, index, shape, dtype):
    if len(t) != 0:
        raise ShapeError("get reads an element of a tuple value")
    return tuple(shape)


def _get_dtype(t, *, index, shape, dtype):
    if t != dt.TUPLE:
        raise DTypeError(f"get reads an element of a tuple value, got {t}")
    return dtype


def _get_batch(args, batched, *, index, shape, dtype):
    """The element of a batched tuple (a multi-result op's batching rule keeps the batch
    axis first in every element; its first operand has it)."""
    (t,) = args
    n = t.node.inputs[0].shape[0]
    return bind(get, t, index=index, shape=(n, *shape), dtype=dtype)


get = defop(
    "get",
    _get_shape,
    _get_dtype,
    lambda xp, t, *, index, shape, dtype: t[index],
    views=(0,),
    batch=_get_batch,
    tags={"complex_linear"},
)


# -- scan ------------------------------------------------------------------------------------


def _scan_parts(shapes, num_carry, num_xs):
    return shapes[:num_carry], shapes[num_carry : num_carry + num_xs], shapes[num_carry + num_xs :]


def _scan_shape(*shapes, body, length, reverse, num_carry, num_xs):
    carry, xs, caps = _scan_parts(shapes, num_carry, num_xs)
    if (
        isinstance(length, bool)
        or not isinstance(length, (int, sh.Dim))
        or (isinstance(length, int) and length < 0)
    ):
        raise ShapeError(f"scan: the length must be a non-negative int, got {length!r}")
    for x in xs:
        if len(x) == 0 or not (x[0] == length or isinstance(x[0], sh.Dim)
                               or isinstance(length, sh.Dim)):  # fmt: skip
            raise ShapeError(f"scan over length {length}: an xs operand has shape {tuple(x)}")
    _check("scan", [*carry, *(x[1:] for x in xs), *caps], body.inputs)
    outs = body.outputs
    if len(outs) < num_carry:
        raise ShapeError(f"scan: the body gives {len(outs)} values for {num_carry} carried")
    for k, (c, o) in enumerate(zip(carry, outs)):
        if not same_shape(tuple(c), o.shape):
            raise ShapeError(f"scan: carry {k} enters the body as {tuple(c)}, leaves as {o.shape}")
    return ()


def _scan_dtype(*dtypes, body, length, reverse, num_carry, num_xs):
    _check_dtypes("scan", dtypes, body.inputs)
    for k, (d, o) in enumerate(zip(dtypes[:num_carry], body.outputs)):
        if d != o.dtype:
            raise DTypeError(f"scan: carry {k} enters the body as {d}, leaves as {o.dtype}")
    return dt.TUPLE


def scan_types(body, length, num_carry) -> list:
    """(shape, dtype) of each element of a scan's result: the carry, then the stacked ys."""
    outs = body.outputs
    return [(o.shape, o.dtype) for o in outs[:num_carry]] + [
        ((length, *o.shape), o.dtype) for o in outs[num_carry:]
    ]


def _scan_impl(xp, *arrays, body, length, reverse, num_carry, num_xs):
    """Each step writes the new carry into one of two buffers (the other holds the carry it
    reads) and its ys into their slots of the stacked results: no step allocates."""
    carry = list(arrays[:num_carry])
    xs = arrays[num_carry : num_carry + num_xs]
    caps = list(arrays[num_carry + num_xs :])
    outs = body.outputs
    if length == 0:  # the carry is the init (copied: a result never aliases an operand)
        carry = [xp.array(c, copy=True) for c in carry]
        return (*carry, *(xp.empty((0, *_static(o.shape)), o.dtype) for o in outs[num_carry:]))
    program = _runner(body, xp, into=True)
    order = range(length - 1, -1, -1) if reverse else range(length)
    shapes = program.output_shapes([*carry, *(x[order[0]] for x in xs), *caps])
    ys = [xp.empty((length, *s), o.dtype) for s, o in zip(shapes[num_carry:], outs[num_carry:])]
    pair = [_buffers(xp, shapes, outs[:num_carry]), None]
    for step, t in enumerate(order):
        if pair[step % 2] is None:
            pair[step % 2] = _buffers(xp, shapes, outs[:num_carry])
        dst = pair[step % 2]
        try:
            program.run([*carry, *(x[t] for x in xs), *caps], host=False,
                        outs=[*dst, *(y[t, ...] for y in ys)])  # fmt: skip
        except NumericsError as e:
            raise _in_iteration(e, "the scan's body", t) from None
        carry = dst
    return (*carry, *ys)


def _static(shape) -> tuple:
    if not sh.is_static(shape):
        raise ShapeError(f"scan of length 0 cannot give ys of shape {shape} (a symbolic dim)")
    return tuple(shape)


scan = defop("scan", _scan_shape, _scan_dtype, _scan_impl, tags=("region", "complex_linear"))


# -- while_loop ------------------------------------------------------------------------------


def _while_shape(*shapes, cond, body, num_carry):
    n_cond = len(cond.inputs) - num_carry
    carry = shapes[:num_carry]
    _check("while_loop cond", [*carry, *shapes[num_carry : num_carry + n_cond]], cond.inputs)
    _check("while_loop body", [*carry, *shapes[num_carry + n_cond :]], body.inputs)
    if len(cond.outputs) != 1 or cond.outputs[0].shape != ():
        raise ShapeError("while_loop: cond_fun must return one scalar")
    if len(body.outputs) != num_carry:
        raise ShapeError(f"while_loop: body_fun gives {len(body.outputs)} values, not {num_carry}")
    for k, (c, o) in enumerate(zip(carry, body.outputs)):
        if not same_shape(tuple(c), o.shape):
            raise ShapeError(f"while_loop: carry {k} enters as {tuple(c)}, leaves as {o.shape}")
    return ()


def _while_dtype(*dtypes, cond, body, num_carry):
    n_cond = len(cond.inputs) - num_carry
    _check_dtypes("while_loop cond", dtypes[: num_carry + n_cond], cond.inputs)
    _check_dtypes("while_loop body", [*dtypes[:num_carry], *dtypes[num_carry + n_cond :]],
                  body.inputs)  # fmt: skip
    for k, (d, o) in enumerate(zip(dtypes, body.outputs)):
        if d != o.dtype:
            raise DTypeError(f"while_loop: carry {k} enters the body as {d}, leaves as {o.dtype}")
    return dt.TUPLE


def _while_impl(xp, *arrays, cond, body, num_carry):
    """Two carry buffers, as scan's: each iteration writes into the one it does not read."""
    n_cond = len(cond.inputs) - num_carry
    test, step = _runner(cond, xp), _runner(body, xp, into=True)
    carry = [xp.array(c, copy=True) for c in arrays[:num_carry]]
    cond_caps = list(arrays[num_carry : num_carry + n_cond])
    body_caps = list(arrays[num_carry + n_cond :])
    pair = [carry, None]
    k, count = 0, 0
    while True:
        try:
            if not bool(test.run([*carry, *cond_caps], host=False)[0]):
                break
            k ^= 1
            if pair[k] is None:
                shapes = step.output_shapes([*carry, *body_caps])
                pair[k] = _buffers(xp, shapes, body.outputs)
            carry = step.run([*carry, *body_caps], host=False, outs=pair[k])
        except NumericsError as e:
            raise _in_iteration(e, "the while_loop's cond or body", count) from None
        count += 1
    return tuple(carry)


while_loop = defop(
    "while_loop", _while_shape, _while_dtype, _while_impl, tags=("region", "complex_linear")
)


# -- cond ------------------------------------------------------------------------------------


def _branch_operands(items, num_operands, branch_true):
    """(the true branch's operands, the false branch's) from the node's operands after pred."""
    n_true = len(branch_true.inputs) - num_operands
    ops = list(items[:num_operands])
    return ops + list(items[num_operands : num_operands + n_true]), ops + list(
        items[num_operands + n_true :]
    )


def _cond_shape(pred, *shapes, branch_true, branch_false, num_operands):
    if len(pred) != 0:
        raise ShapeError(f"cond: the predicate must be a scalar, got shape {tuple(pred)}")
    on_true, on_false = _branch_operands(shapes, num_operands, branch_true)
    _check("cond true_fun", on_true, branch_true.inputs)
    _check("cond false_fun", on_false, branch_false.inputs)
    a, b = branch_true.outputs, branch_false.outputs
    if len(a) != len(b) or any(not same_shape(x.shape, y.shape) for x, y in zip(a, b)):
        raise ShapeError(
            "cond: true_fun and false_fun give different shapes: "
            f"{[x.shape for x in a]} and {[y.shape for y in b]}"
        )
    return ()


def _cond_dtype(pred, *dtypes, branch_true, branch_false, num_operands):
    on_true, on_false = _branch_operands(dtypes, num_operands, branch_true)
    _check_dtypes("cond true_fun", on_true, branch_true.inputs)
    _check_dtypes("cond false_fun", on_false, branch_false.inputs)
    a, b = branch_true.outputs, branch_false.outputs
    if any(x.dtype != y.dtype for x, y in zip(a, b)):
        raise DTypeError(
            "cond: true_fun and false_fun give different dtypes: "
            f"{[f'{x.dtype}' for x in a]} and {[f'{y.dtype}' for y in b]}"
        )
    return dt.TUPLE


def _cond_impl(xp, pred, *arrays, branch_true, branch_false, num_operands):
    on_true, on_false = _branch_operands(arrays, num_operands, branch_true)
    branch, operands = (branch_true, on_true) if bool(pred) else (branch_false, on_false)
    try:
        return tuple(_runner(branch, xp).run(operands, host=False))
    except NumericsError as e:
        raise NumericsError(
            f"{e} (in the cond's {'true' if bool(pred) else 'false'} branch)"
        ) from None


cond = defop("cond", _cond_shape, _cond_dtype, _cond_impl, tags=("region", "complex_linear"))
