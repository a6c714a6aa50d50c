"""The op steps of the random programs of test_compile_fuzz.py (and so test_torch_fuzz.py):
reductions, products, sorting, indexing (by constant index tensors, masks, and 0-d integer
tensors, which index as ints do: views), softmax, cat/stack, ops of three values (addcmul,
where) and of a value with its own transpose or flip, broadcasting against Python scalars
and 0-d values, and integer/bool values. Each op runs on kiln Tensors, kiln Symbols (under
kn.compile) and torch tensors alike: it reaches its library's functions through `_lib`.

An op is drawn as `base(params)`: OPS1[base] = (fn(x, *params), params(shape, kind)) and
OPS2[base] = (fn(x, y, *params), params(shape_x, kind_x, shape_y, kind_y)), where `kind` is
"f" (floating), "i" (integer) or "b" (bool) and `params` lists the parameter tuples that fit
(none: the op does not apply). Output shapes and kinds come from running the op on kiln ones.
"""

import sys

import numpy as np

F, Z, B = "f", "i", "b"  # floating, integer (Z), bool


def _lib(x):
    """kiln (for Tensors and Symbols) or torch, whichever x belongs to."""
    return sys.modules[type(x).__module__.split(".")[0]]


def _dims(shape):
    return list(range(-len(shape), len(shape)))


def _distinct(x):
    """x with its ties broken (sort/topk/argsort order tied elements as they please): plus a
    small ramp for floats; times 16 plus the element's index for integers."""
    ramp = np.arange(x.numel()).reshape(tuple(x.shape))
    if x.is_floating_point():
        return x + x.new_tensor((ramp * 1e-3).tolist())
    return x.long() * 16 + x.new_tensor(ramp.tolist()).long()


def _reduce(kinds, keep=True):
    def params(shape, kind):
        if kind not in kinds or not shape:
            return []
        return [(d, k) for d in _dims(shape) for k in ((False, True) if keep else (False,))]

    return params


def _when(kinds, fits=lambda s: True, params=((),)):
    return lambda shape, kind: list(params) if kind in kinds and fits(shape) else []


def _sort_params(shape, kind):
    return [(d, s) for d in _dims(shape) for s in (False, True)] if kind in (F, Z) else []


def _topk_params(shape, kind):
    if kind not in (F, Z):
        return []
    return [(k, d, s) for d in _dims(shape) for k in (1, 2) if shape[d] >= k for s in (0, 1)]


def _var_params(shape, kind):
    if kind != F:
        return []
    return [(d, c, k) for d in _dims(shape) for c in (0, 1) for k in (False, True)]


OPS1 = {
    # reductions
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), _reduce((F, Z, B))),
    "sum_all": (lambda x: x.sum(), _when((F, Z, B))),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), _reduce((F,))),
    "mean_all": (lambda x: x.mean(), _when((F,))),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), _reduce((F, Z))),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), _reduce((F, Z))),
    "max_values": (lambda x, d, k: x.max(d, keepdim=k).values, _reduce((F, Z))),
    "max_indices": (lambda x, d, k: x.max(d, keepdim=k).indices, _reduce((F, Z))),
    "min_values": (lambda x, d, k: x.min(d, keepdim=k)[0], _reduce((F, Z))),
    "min_indices": (lambda x, d, k: x.min(d, keepdim=k)[1], _reduce((F, Z))),
    "max_all": (lambda x: x.max(), _when((F, Z))),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), _reduce((F, Z))),
    "logsumexp": (lambda x, d, k: x.logsumexp(d, keepdim=k), _reduce((F,))),
    "var": (lambda x, d, c, k: x.var(d, correction=c, keepdim=k), _var_params),
    "std": (lambda x, d, c, k: x.std(d, correction=c, keepdim=k), _var_params),
    "norm": (
        lambda x, p, d, k: x.norm(p=p, dim=d, keepdim=k),
        lambda s, kind: [(p, d, k) for p in (1, 2) for d, k in _reduce((F,))(s, kind)],
    ),
    "cumsum": (lambda x, d, k: x.cumsum(d), _reduce((F, Z, B), keep=False)),
    "cumprod": (lambda x, d, k: x.cumprod(d), _reduce((F, Z), keep=False)),
    "argmax": (lambda x, d, k: x.argmax(d, keepdim=k), _reduce((F, Z))),
    "argmin": (lambda x, d, k: x.argmin(d, keepdim=k), _reduce((F, Z))),
    "argmax_all": (lambda x: x.argmax(), _when((F, Z))),
    # sorting and reordering
    "sort_values": (lambda x, d, s: _distinct(x).sort(d, descending=s).values, _sort_params),
    "sort_indices": (lambda x, d, s: _distinct(x).sort(d, descending=s)[1], _sort_params),
    "argsort": (lambda x, d, s: _distinct(x).argsort(d, descending=s), _sort_params),
    "topk_values": (lambda x, k, d, s: _distinct(x).topk(k, d, bool(s)).values, _topk_params),
    "topk_indices": (lambda x, k, d, s: _distinct(x).topk(k, d, bool(s)).indices, _topk_params),
    "flip": (lambda x, d: x.flip(d), lambda s, kind: [(d,) for d in _dims(s)]),
    "flip_all": (lambda x: x.flip(list(range(x.dim()))), _when((F, Z, B))),
    "roll": (
        lambda x, n, d: x.roll(n, d),
        lambda s, kind: [(n, d) for d in _dims(s) for n in (1, -2, 5)],
    ),
    "roll_flat": (lambda x: x.roll(3), _when((F, Z, B))),
    "tril": (lambda x, k: x.tril(k), _when((F, Z, B), lambda s: len(s) == 2, ((0,), (-1,), (1,)))),
    "triu": (lambda x, k: x.triu(k), _when((F, Z, B), lambda s: len(s) == 2, ((0,), (1,)))),
    # products of a value with itself
    "einsum_t": (lambda x: _lib(x).einsum("ij->ji", x), _when((F,), lambda s: len(s) == 2)),
    "einsum_diag": (
        lambda x: _lib(x).einsum("ii->i", x),
        _when((F,), lambda s: len(s) == 2 and s[0] == s[1]),
    ),
    "einsum_sum": (lambda x: _lib(x).einsum("ij->i", x), _when((F,), lambda s: len(s) == 2)),
    # indexing with constant integer tensors and masks
    "take_rows": (
        lambda x: x[x.new_tensor([2, 0, 3, 0]).long()],
        _when((F, Z, B), lambda s: len(s) >= 1 and s[0] >= 4),
    ),
    "take_points": (
        lambda x: x[x.new_tensor([[0], [3]]).long(), x.new_tensor([1, 2, 1]).long()],
        _when((F, Z, B), lambda s: len(s) == 2 and s[0] >= 4 and s[1] >= 3),
    ),
    "take_cols": (
        lambda x: x[:, x.new_tensor([-1, 1]).long()],
        _when((F, Z, B), lambda s: len(s) == 2 and s[1] >= 2),
    ),
    "mask_const": (
        lambda x: x[x.new_tensor([1, 0, 1, 1]).bool()],
        _when((F, Z, B), lambda s: len(s) >= 1 and s[0] == 4),
    ),
    "mask_positive": (lambda x: x[x > 0], _when((F, Z))),
    "masked_fill": (lambda x: x.masked_fill(x < 0, 2), _when((F, Z))),
    # integer and bool values
    "long3": (lambda x: (x * 3).long(), _when((F,))),
    "int3": (lambda x: (x * 3).int(), _when((F,))),
    "long": (lambda x: x.long(), _when((Z, B))),
    "float": (lambda x: x.float(), _when((F, Z, B))),
    "double": (lambda x: x.double(), _when((F, Z, B))),
    "bool": (lambda x: x.bool(), _when((Z,))),
    "gt0": (lambda x: x > 0, _when((F, Z))),
    "le_half": (lambda x: x <= 0.5, _when((F, Z))),
    "eq1": (lambda x: x == 1, _when((F, Z, B))),
    "floordiv": (lambda x, n: x // n, _when((F, Z), params=((3,), (-2,), (0.75,)))),
    "mod": (lambda x, n: x % n, _when((F, Z), params=((3,), (-3,), (0.75,)))),
    "rfloordiv": (lambda x: 7 // (x.abs() + 1), _when((Z,))),
    "rmod": (lambda x: -7 % (x.abs() + 1), _when((Z,))),
    "invert": (lambda x: ~x, _when((Z, B))),
    "and_int": (lambda x, n: x & n, _when((Z, B), params=((5,), (True,)))),
    "or_int": (lambda x, n: n | x, _when((Z, B), params=((2,), (False,)))),
    "xor_int": (lambda x, n: x ^ n, _when((Z, B), params=((3,), (True,)))),
    # Python scalars on either side, and 0-d tensors
    "add_s": (lambda x, n: x + n, _when((F, Z, B), params=((2,), (1.5,), (True,)))),
    "rsub_s": (lambda x, n: n - x, _when((F, Z), params=((2,), (1.5,), (True,)))),
    "mul_s": (lambda x, n: x * n, _when((F, Z, B), params=((3,), (2.5,), (False,)))),
    "rmul_s": (lambda x, n: n * x, _when((F, Z, B), params=((-1,), (0.5,), (True,)))),
    "div_s": (lambda x, n: x / n, _when((F, Z, B), params=((4,), (0.5,), (True,)))),
    "pow_s": (lambda x, n: x**n, _when((F, Z), params=((2,), (3,)))),
    "radd_s": (lambda x, n: n + x, _when((F, Z, B), params=((1,), (0.25,), (False,)))),
    "add_0d": (lambda x, v: x + x.new_tensor(v), _when((F, Z, B), params=((2,), (0.5,)))),
    "mul_0d_f64": (
        lambda x: x * x.new_tensor(1.5, dtype=_lib(x).float64),
        _when((F, Z, B)),
    ),
    "add_0d_long": (lambda x: x + x.new_tensor(3).long(), _when((F, Z, B))),
    "where_s": (lambda x, n: _lib(x).where(x > 0, x, n), _when((F, Z), params=((0,), (0.5,)))),
    # indexing by a 0-d integer tensor (a view, as by an int), softmax, cat/stack, ops of
    # three values and of a value with its transpose or flip (TensorIterator's layouts)
    "index_0d": (
        lambda x, i: x[x.new_tensor(i).long()],
        _when((F, Z, B), lambda s: len(s) >= 1 and s[0] >= 2, ((1,), (-1,))),
    ),
    "index_0d_col": (
        lambda x: x[:, x.new_tensor(-1).long()],
        _when((F, Z, B), lambda s: len(s) == 2),
    ),
    "softmax": (lambda x, d: x.softmax(d), _reduce((F,), keep=False)),
    "cat_self": (lambda x, d: _lib(x).cat([x, x * 2], d), _reduce((F, Z), keep=False)),
    "stack_self": (lambda x: _lib(x).stack([x, x + 1], -1), _when((F, Z))),
    "addcmul_self": (
        lambda x: x.addcmul(x, x.flip(0), value=0.5),
        _when((F,), lambda s: len(s) >= 1),
    ),
    "where_flip": (
        lambda x: _lib(x).where(x > 0, x, x.flip(0)),
        _when((F, Z), lambda s: len(s) >= 1),
    ),
    "t_plus": (lambda x: x.t() + x, _when((F, Z), lambda s: len(s) == 2 and s[0] == s[1])),
}


def _same_ndim_fits(sx, sy):
    return len(sx) == len(sy) and len(sx) >= 1 and all(a >= b for a, b in zip(sx, sy))


def _gather_params(sx, kx, sy, ky):
    if ky != Z or len(sx) != len(sy) or not sx:
        return []
    return [(d,) for d in _dims(sx) if all(b <= a for k, (a, b) in enumerate(zip(sx, sy))
                                           if k != d % len(sx))]  # fmt: skip


def _scatter_params(sx, kx, sy, ky):
    if kx != F or ky != F or not _same_ndim_fits(sx, sy):
        return []
    return [(d,) for d in _dims(sx)]


def _einsum_params(sx, kx, sy, ky):
    if kx != F or ky != F:
        return []
    out = []
    if len(sx) == 2 and len(sy) == 2 and sx[1] == sy[0]:
        out.append(("ij,jk->ik",))
    if len(sx) == 2 and sx == sy:
        out.append(("ij,ij->i",))
        out.append(("ij,ij->",))
    if len(sx) == 2 and len(sy) == 1 and sx[1] == sy[0]:
        out.append(("ij,j->i",))
    if len(sx) == 1 and len(sy) == 1:
        out.append(("i,j->ij",))
        if sx == sy:
            out.append(("i,i->",))
    return out


def _matmul_fits(sx, kx, sy, ky):
    if kx != F or ky != F or not sx or not sy or sx[-1] != sy[-2 if len(sy) > 1 else 0]:
        return []
    return [()]


def _cat_params(sx, kx, sy, ky):
    if kx != ky or kx == B or len(sx) != len(sy) or not sx:
        return []
    return [(d,) for d in _dims(sx)
            if all(a == b for k, (a, b) in enumerate(zip(sx, sy)) if k != d % len(sx))]  # fmt: skip


def _binary(kinds):
    def params(sx, kx, sy, ky):
        try:
            np.broadcast_shapes(sx, sy)
        except ValueError:
            return []
        return [()] if kx in kinds and ky in kinds else []

    return params


OPS2 = {
    "matmul": (lambda x, y: x @ y, _matmul_fits),
    "matmul_method": (lambda x, y: x.matmul(y), _matmul_fits),
    "mm": (
        lambda x, y: x.mm(y),
        lambda sx, kx, sy, ky: _matmul_fits(sx, kx, sy, ky) if len(sx) == len(sy) == 2 else [],
    ),
    "outer": (
        lambda x, y: x.outer(y),
        lambda sx, kx, sy, ky: [()] if len(sx) == len(sy) == 1 and kx == ky == F else [],
    ),
    "einsum": (lambda x, y, p: _lib(x).einsum(p, x, y), _einsum_params),
    "div": (lambda x, y: x / y, _binary((F,))),
    "maximum": (lambda x, y: _lib(x).maximum(x, y), _binary((F, Z))),
    "gt": (lambda x, y: x > y, _binary((F, Z, B))),
    "ne": (lambda x, y: x != y, _binary((F, Z, B))),
    "add_mixed": (lambda x, y: x + y, _binary((F, Z, B))),
    "mul_mixed": (lambda x, y: x * y, _binary((F, Z, B))),
    "and": (lambda x, y: x & y, _binary((Z, B))),
    "or": (lambda x, y: x | y, _binary((Z, B))),
    "xor": (lambda x, y: x ^ y, _binary((Z, B))),
    "floordiv_t": (lambda x, y: x // (y.abs() + 1), _binary((Z,))),
    "mod_t": (lambda x, y: x % (y.abs() + 1), _binary((Z,))),
    "where": (
        lambda x, y: _lib(x).where(x, y, -y),
        lambda sx, kx, sy, ky: _binary((F, Z, B))(sx, kx, sy, ky) if kx == B and ky != B else [],
    ),
    "where_0": (
        lambda x, y, n: _lib(x).where(x, y, n),
        lambda sx, kx, sy, ky: (
            [(0,), (0.5,)] if kx == B and ky != B and _binary((F, Z, B))(sx, kx, sy, ky) else []
        ),  # fmt: skip
    ),
    "index_by": (
        lambda x, y: x[y % x.shape[0]],
        lambda sx, kx, sy, ky: [()] if ky == Z and len(sx) >= 1 and sx[0] >= 1 else [],
    ),
    "index_by_2": (
        lambda x, y: x[y % x.shape[0], (y.flip(0) if y.dim() else y) % x.shape[1]],
        lambda sx, kx, sy, ky: [()] if ky == Z and len(sx) == 2 else [],
    ),
    "mask_by": (
        lambda x, y: x[y],
        lambda sx, kx, sy, ky: [()] if ky == B and 1 <= len(sy) and sx[: len(sy)] == sy else [],
    ),
    "index_select": (
        lambda x, y, d: x.index_select(d, y % x.shape[d]),
        lambda sx, kx, sy, ky: [(d,) for d in _dims(sx)] if ky == Z and len(sy) == 1 else [],
    ),
    "gather": (lambda x, y, d: x.gather(d, y % x.shape[d]), _gather_params),
    "scatter": (lambda x, y, d: x.scatter(d, _distinct(y).argsort(d), y), _scatter_params),
    "scatter_add": (
        lambda x, y, d: x.scatter_add(d, _distinct(y).argsort(d) // 2, y),
        _scatter_params,
    ),
    "masked_fill_by": (
        lambda x, y: x.masked_fill(y, -0.5),
        lambda sx, kx, sy, ky: [()] if ky == B and kx == F and _broadcasts_to(sy, sx) else [],
    ),
    "index_0d_by": (  # a 0-d index the program computes
        lambda x, y: x[(y.sum() % x.shape[0]).long()],
        lambda sx, kx, sy, ky: [()] if ky == Z and len(sx) >= 1 and sx[0] >= 1 else [],
    ),
    "cat": (lambda x, y, d: _lib(x).cat([x, y], d), _cat_params),
    "atan2": (lambda x, y: x.atan2(y), _binary((F,))),
    "minimum": (lambda x, y: _lib(x).minimum(x, y), _binary((F, Z))),
    "where_of": (lambda x, y: _lib(x).where(x > 0, x, y), _binary((F,))),
}


def _broadcasts_to(sy, sx):
    try:
        return np.broadcast_shapes(sx, sy) == tuple(sx)
    except ValueError:
        return False


# In-place changes that read a second value (of any shape and kind): name -> (change(x, y),
# fits(shape_x, kind_x, shape_y, kind_y))
INPLACE2 = {
    "setitem_index": (
        lambda x, y: x.__setitem__(y % x.shape[0], 5),
        lambda sx, kx, sy, ky: ky == Z and len(sx) >= 1 and kx in (F, Z),
    ),
    "index_put_accumulate": (
        lambda x, y: x.index_put_((y % x.shape[0],), x.new_tensor(1.5), accumulate=True),
        lambda sx, kx, sy, ky: ky == Z and len(sx) >= 1 and kx == F,
    ),
    "masked_fill_by_": (
        lambda x, y: x.masked_fill_(y, -2.0),
        lambda sx, kx, sy, ky: ky == B and kx == F and _broadcasts_to(sy, sx),
    ),
    "setitem_mask": (
        lambda x, y: x.__setitem__(y, 3),
        lambda sx, kx, sy, ky: (
            ky == B and kx in (F, Z) and 1 <= len(sy) and tuple(sx[: len(sy)]) == tuple(sy)
        ),  # fmt: skip
    ),
    "scatter_value_": (
        lambda x, y: x.scatter_(0, y % x.shape[0], 2.0),
        lambda sx, kx, sy, ky: ky == Z and kx == F and _same_ndim_fits(sx, sy),
    ),
    "scatter_add_": (
        lambda x, y: x.scatter_add_(-1, y % x.shape[-1], x.new_ones(tuple(y.shape))),
        lambda sx, kx, sy, ky: ky == Z and kx == F and _same_ndim_fits(sx, sy),
    ),
    "index_fill_": (
        lambda x, y: x.index_fill_(0, y % x.shape[0], -3.0),
        lambda sx, kx, sy, ky: ky == Z and kx == F and len(sy) == 1 and len(sx) >= 1,
    ),
}

# In-place changes of integer and bool values: name -> (change(x), kinds)
INPLACE_INT = {
    "add_int_": (lambda x: x.add_(2), (Z,)),
    "mul_int_": (lambda x: x.mul_(3), (Z,)),
    "ifloordiv": (lambda x: x.__ifloordiv__(2), (Z,)),
    "iand": (lambda x: x.__iand__(5), (Z, B)),
    "ior": (lambda x: x.__ior__(True), (B,)),
    "fill_int_": (lambda x: x.fill_(7), (Z, B)),
    "add_float_into_int_": (lambda x: x.add_(1.5), (Z, B)),
    "masked_fill_int_": (lambda x: x.masked_fill_(x > 0, -1), (Z,)),
    "neg_": (lambda x: x.neg_(), (Z,)),
}
