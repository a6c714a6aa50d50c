"""Each op's declared effects are present and honest: every elementwise op declares its scalar
lowering (or says why it has none), a lowering's ufunc is really the op's kernel, and every
input that a kernel's result can share memory with is declared in `views`.
"""

import numpy as np
import pytest
from op_table import CASES
from test_ops import build, make_inputs

from kiln.graph.opdef import REGISTRY, OpDef
from kiln.ops.core import same_dtype, same_shape
from kiln.ops.lowering import Lowering

# Ops whose kernel returns a view of an input it does not declare: (op -> reason); strict
# xfails, so declaring the view makes the row fail until its entry is removed.
UNDECLARED_VIEWS: dict[str, str] = {}


def is_fusable(op: OpDef) -> bool:
    """An op the fusers may put in a program (as kiln/ops/fused.py checks its equations)."""
    return "elementwise" in op.tags and not op.tags & {"fused", "random", "source"}


def missing_lowerings(ops) -> list[str]:
    """Fusable ops without a declared lowering: none, or one that lowers nothing and does not
    say why (`Lowering(not_lowered=...)` is the deliberate way to have none)."""
    missing = []
    for op in ops:
        low = op.lowering
        declared = isinstance(low, Lowering) and (
            low.not_lowered or low.ufunc or low.numba or low.cuda
        )
        if is_fusable(op) and not declared:
            missing.append(op.name)
    return missing


def _op(name, tags=("elementwise",), lowering=None):
    """An unregistered OpDef, for checking the checker."""
    return OpDef(name, same_shape, same_dtype, lambda xp, x, out=None: x, tags=frozenset(tags),
                 lowering=lowering)  # fmt: skip


def test_every_elementwise_op_declares_its_lowering():
    missing = missing_lowerings(REGISTRY.values())
    assert not missing, (
        f"elementwise ops without `lowering=` (see docs/compiler.md, 'How to declare an op's "
        f"lowering'; `Lowering(not_lowered='why')` where there is none): {missing}"
    )


def test_a_forgotten_lowering_is_reported_and_a_deliberate_none_is_not():
    forgotten = _op("forgotten")
    empty = _op("empty", lowering=Lowering())
    deliberate = _op("deliberate", lowering=Lowering(not_lowered="draws from a stream"))
    random = _op("noise", tags=("elementwise", "random"))
    ufunc_only = _op("ufunc_only", lowering=Lowering(ufunc="floor_divide"))
    found = missing_lowerings([forgotten, empty, deliberate, random, ufunc_only])
    assert found == ["forgotten", "empty"]


def test_a_lowering_that_says_why_declares_nothing_else():
    with pytest.raises(ValueError, match="declares nothing else"):
        Lowering(ufunc="add", not_lowered="because")


def test_lowerings_are_consistent():
    for op in REGISTRY.values():
        low = op.lowering
        if not is_fusable(op):
            assert low is None, f"{op.name}: only fusable elementwise ops are lowered"
            continue
        if low is None:
            continue  # reported by test_every_elementwise_op_declares_its_lowering
        if low.ufunc is not None:
            assert isinstance(getattr(np, low.ufunc, None), np.ufunc), f"{op.name}: {low.ufunc}"
        assert not low.exact or low.ufunc or low.numba, f"{op.name}: exact without numba form"
        assert not (low.ufunc and low.numba), f"{op.name}: a ufunc's numba form is the ufunc"


# -- effects against the kernels, row by row -------------------------------------------------


def _kernel_values(case, dtype):
    """(node, input arrays, result) of each node of the row's graph, kernels run without out."""
    arrays = make_inputs(case, dtype)
    graph, inputs, _ = build(case, arrays)
    values = {id(s): a for s, a in zip(inputs, arrays)}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            if node.op.name in ("placeholder", "variable"):
                continue  # no kernel: the runtime supplies the value
            attrs = dict(node.attrs)
            if "random" in node.op.tags:
                attrs["key"] = (attrs["seed"], 0)
            ins = [values[id(i)] for i in node.inputs]
            result = node.op.impl(np, *ins, **attrs)
            values[id(node.out)] = result
            yield node, ins, result


def _view_params():
    out = []
    for case in CASES:
        reason = UNDECLARED_VIEWS.get(case.op)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _view_params())
def test_declared_views_cover_every_alias_a_kernel_returns(case):
    """An undeclared alias would be planned as a fresh value: its buffer reused or written
    in place while the input it shares is still live."""
    for dtype in case.dtypes:
        for node, ins, result in _kernel_values(case, dtype):
            declared = [ins[k] for k in node.op.views]
            parts = result if isinstance(result, tuple) else (result,)  # a region op's tuple
            for k, a in enumerate(ins):
                if k in node.op.views or not any(np.shares_memory(p, a) for p in parts):
                    continue
                # sharing through a declared input that itself overlaps this one is declared
                if any(np.shares_memory(a, d) for d in declared):
                    continue
                raise AssertionError(
                    f"{case.id} ({dtype}): {node.op.name}'s kernel returns memory of its input "
                    f"{k} ({a.dtype}{list(a.shape)}), not in its views {node.op.views}"
                )


@pytest.mark.parametrize(
    "case", [c for c in CASES if is_fusable(REGISTRY[c.op])], ids=lambda c: c.id
)
def test_a_lowered_ufunc_is_the_ops_kernel(case):
    """`Lowering.ufunc`: the fused CPU code calls the ufunc bare in place of the kernel."""
    for dtype in case.dtypes:
        for node, ins, result in _kernel_values(case, dtype):
            ufunc = node.op.lowering.ufunc if node.op.lowering else None
            if ufunc is None or node.attrs:
                continue
            with np.errstate(all="ignore"):
                want = np.asarray(getattr(np, ufunc)(*ins))
            got = np.asarray(result)
            assert got.dtype == want.dtype, f"{case.id} ({dtype}): {node.op.name}"
            np.testing.assert_array_equal(got, want, err_msg=f"{case.id} ({dtype})")
