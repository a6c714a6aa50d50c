"""kiln's functions and methods name their parameters as PyTorch's do (API.md: the array API
is PyTorch's wherever PyTorch has the name), so that calls by keyword carry over.

For every callable of `torch.overrides.get_testing_overrides()` that kiln has too (as `kn.X`,
`kn.nn.functional.X`, `kn.linalg.X`, `kn.special.X`, a Tensor or a Symbol method), each name
of kiln's parameters must be one of PyTorch's for it: the names of the overrides' stand-in
signature, of torch's own Python signature where it has one, and of every overload its
docstring lists (torch's overrides list one overload only: `torch.max(input, dim, keepdim)` is
in the docstring). The remaining differences are in `ALLOWED`, each with its reason; an entry
that no longer differs fails the test, so the list cannot go stale."""

import inspect
import re

import numpy as np
import pytest

import kiln as kn
from kiln.graph.core import Symbol

torch = pytest.importorskip("torch")

# kiln's NumPy spellings, taken as well as PyTorch's (`kn.sum(x, axis=0, keepdims=True)`).
ALIASES = {"axis", "keepdims", "ddof"}

# (namespace, name): (kiln's parameters PyTorch lacks, why they stay)
ALLOWED = {
    ("torch", "trace"): (
        {"fn", "device"},
        "kn.trace is kiln's tracer (API.md), not the diagonal sum",
    ),
    ("torch", "trapz"): ({"dx"}, "torch.trapz(y, *, dx, dim): an overload its docstring omits"),
    ("torch", "bernoulli"): ({"p"}, "torch.bernoulli(input, p): an overload its docstring omits"),
    ("torch", "adaptive_max_pool1d"): ({"input", "return_indices"}, "the stand-in says `inputs`"),
    ("torch", "split_with_sizes"): ({"split_sizes"}, "torch's C names: split_sizes= works"),
    ("Tensor", "split_with_sizes"): ({"split_sizes"}, "torch's C names: split_sizes= works"),
    ("torch", "unsafe_split_with_sizes"): ({"split_sizes"}, "torch's C names: split_sizes= works"),
    ("Tensor", "unsafe_split_with_sizes"): ({"split_sizes"}, "torch's C names: split_sizes= works"),
    ("torch", "unsafe_split"): ({"split_size"}, "torch's C names: split_size= works"),
    ("torch", "cholesky_solve"): ({"input"}, "torch's C names (input, input2): input= works"),
    ("Tensor", "resize_as_"): ({"the_template"}, "torch's C name: the_template= works"),
    ("Tensor", "to_sparse"): (
        {"sparse_dim"},
        "torch's C name (its docstring: sparseDims): sparse_dim= works",
    ),
    ("torch", "embedding"): (
        {"indices"},
        "torch.embedding(weight, indices): the stand-in is wrong",
    ),
    ("torch", "convolution"): ({"output_padding"}, "the stand-in misspells it output_adding"),
    ("torch", "embedding_bag"): (
        {"indices", "include_last_offset"},
        "torch.embedding_bag(weight, indices, offsets, ...): the stand-in is F.embedding_bag's",
    ),
    ("torch", "lstm"): (
        {"input", "batch_first"},
        "torch.lstm(input, hx, params, ..., batch_first): the stand-in is the packed overload",
    ),
    **{
        ("torch", f"{name}_copy"): (
            {"input"},
            "torch.X_copy(input=...) works: the stand-in says self",
        )
        for name in (
            "alias detach diagonal expand permute select slice split split_with_sizes "
            "squeeze t transpose unbind unfold unsqueeze view_as_real view_as_complex"
        ).split()
    },  # fmt: skip
    ("torch", "view_copy"): (
        {"input", "size"},
        "torch.view_copy(input, size): the stand-in is the dtype overload, naming self",
    ),
    ("torch", "log_softmax"): ({"dtype"}, "torch.log_softmax(x, 0, dtype=...) works"),
    ("Tensor", "log_softmax"): ({"dtype"}, "x.log_softmax(0, dtype=...) works"),
    **{
        (space, name): ({"unbiased"}, "the (dim, unbiased, keepdim) overload: unbiased= works")
        for space, name in [
            ("torch", "std"),
            ("torch", "var"),
            ("torch", "std_mean"),
            ("torch", "var_mean"),
            ("Tensor", "std"),
            ("Tensor", "var"),
        ]
    },  # fmt: skip
    **{
        ("torch", name): ({"return_indices"}, "kn.max_poolNd is F.max_poolNd (return_indices=)")
        for name in ("max_pool1d", "max_pool2d", "max_pool3d")
    },
    **{
        (space, name): (
            {"sections"},
            "C signatures (input, sections) and (input, indices): "
            "indices_or_sections= is refused, sections= works",
        )
        for space in ("torch", "Tensor")
        for name in ("dsplit", "hsplit", "vsplit")
    },  # fmt: skip
    **{
        (space, "view"): ({"size"}, "C signature view(size): x.view(size=(3, 2)) works")
        for space in ("torch", "Tensor")  # "torch": Symbol's view, reported under torch
    },
    ("F", "scaled_dot_product_attention"): (
        {"is_causal", "scale", "enable_gqa"},
        "the overrides' stand-in lists 5 of torch's 8 parameters",
    ),
    # kiln/frontend/linalg*.py (torch.X spellings of kn.linalg functions, which name the
    # matrix A as torch.linalg does): torch.X names it input. To do there.
    **{
        ("torch", name): ({"A"}, "kn.X is kn.linalg's function: to rename in linalg*.py")
        for name in ("cholesky", "det", "inverse", "logdet", "orgqr", "slogdet")
    },
}
# kiln's elementwise functions take out= on every spelling (the Tensor methods are the same
# functions), where PyTorch's methods and a few functions (isnan, relu) have none.
EXTRA_OUT = {"out"}


def _params(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


_SIGNATURE_LINE = re.compile(r"^\s*(?:\.\. (?:function|method):: )?(?:[\w.]*\.)?(\w+)\((.*)\)")


def _doc_names(fn, name) -> set:
    """Parameter names of every `name(...)` signature line in `fn`'s docstring."""
    names = set()
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        m = _SIGNATURE_LINE.match(line)
        if m is None or m.group(1) != name:
            continue
        for part in m.group(2).split(")")[0].split(","):
            part = part.split("=")[0].split(":")[0].strip().lstrip("*")
            if part.isidentifier():
                names.add(part)
    return names


def _pairs():
    import torch.nn.functional as F

    spaces = [
        ("torch", torch, kn),
        ("F", F, kn.nn.functional),
        ("linalg", torch.linalg, kn.linalg),
        ("special", torch.special, kn.special),
        ("Tensor", torch.Tensor, kn.Tensor),
        ("Symbol", torch.Tensor, Symbol),
    ]
    for f, dummy in torch.overrides.get_testing_overrides().items():
        name = getattr(f, "__name__", None)
        if name is None or name.startswith("__"):
            continue
        for label, tmod, kmod in spaces:
            if getattr(tmod, name, None) is not f:
                continue
            k = getattr(kmod, name, None)
            if k is None or not callable(k) or isinstance(k, type):
                continue
            yield label, name, f, dummy, k


def _differences():
    out = {}
    for label, name, f, dummy, k in _pairs():
        kp = _params(k)
        if kp is None:
            continue
        method = label in ("Tensor", "Symbol")
        if method:
            kp = kp[1:]
        torch_names = {p.name for p in (_params(dummy) or [])}
        torch_names |= {p.name for p in (_params(f) or [])}
        torch_names |= _doc_names(f, name)
        if method:  # the function's names too: kiln's methods are its functions
            torch_names |= {p.name for p in (_params(getattr(torch, name, None)) or [])}
            torch_names |= _doc_names(getattr(torch, name, None), name)
        ours = [p.name for p in kp if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        extra = {n for n in ours if n not in torch_names and n not in ALIASES | EXTRA_OUT}
        if extra:
            out[("torch" if label == "Symbol" else label, name)] = extra
    return out


def test_parameter_names_are_pytorchs():
    diffs = _differences()
    unexpected = {k: v for k, v in diffs.items() if k not in ALLOWED or v != ALLOWED[k][0]}
    assert not unexpected, f"kiln parameter names PyTorch does not have: {unexpected}"
    stale = [k for k in ALLOWED if k not in diffs]
    assert not stale, f"ALLOWED entries that no longer differ: {stale}"


# Calls by keyword that PyTorch accepts (each checked against torch below, then kiln's value
# against torch's).
KEYWORD_CALLS = [
    "m.add(input=x, other=y)",
    "m.mul(input=x, other=2.0)",
    "m.pow(x, exponent=2)",
    "x.pow(exponent=2)",
    "m.where(x > 0, input=x, other=y)",
    "x.where(x > 0, other=y)",
    "m.exp(input=x)",
    "m.sum(input=x, dim=0, keepdim=True)",
    "m.argmax(input=x, dim=1, keepdim=True)",
    "m.logsumexp(input=x, dim=0)",
    "m.reshape(input=x, shape=(3, 2))",
    "m.transpose(input=x, dim0=0, dim1=1)",
    "m.flip(input=x, dims=(0,))",
    "x.flip(dims=(0, 1))",
    "m.permute(input=x, dims=(1, 0))",
    "x.permute(dims=(1, 0))",
    "x.expand(size=(2, 2, 3))",
    "x.repeat(repeats=(2, 1))",
    "m.tile(input=x, dims=(2,))",
    "m.broadcast_to(input=x, size=(2, 2, 3))",
    "m.clamp(input=x, min=0.0)",
    "m.matmul(input=x, other=y.T)",
    "m.logical_xor(input=x, other=y)",
    "m.zeros_like(input=x)",
    "m.full_like(input=x, fill_value=3.0)",
    "m.softmax(input=x, dim=0)",
    "m.dropout(input=x, p=0.5, train=False)",
    "m.nn.functional.gelu(input=x)",
    "m.embedding(weight=x, indices=m.tensor([1, 0]))",
    "m.dsplit(m.ones(2, 2, 2), sections=2)[0]",
    "x.float(memory_format=m.preserve_format)",
    "m.isin(elements=x, test_elements=y)",
    "m.dot(input=x[0], tensor=y[0])",
    "x.std(dim=0, unbiased=False)",
    "x.view(size=(3, 2))",
    "x.view(dtype=m.int32)",
    "x.reshape(shape=(3, 2))",
    "x.clone().resize_(size=(3, 2))",
    "m.swapaxes(x, axis0=0, axis1=1)",
    "x.swapaxes(axis0=0, axis1=1)",
]


@pytest.mark.parametrize("expr", KEYWORD_CALLS)
def test_keyword_calls_as_in_pytorch(expr):
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    b = np.array([[2.0, 1.0, -1.0], [3.0, 0.0, 2.0]], np.float32)
    want = eval(expr, {"m": torch, "x": torch.tensor(a), "y": torch.tensor(b)})
    got = eval(expr, {"m": kn, "x": kn.tensor(a), "y": kn.tensor(b)})
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
