"""kiln's functions and methods name their parameters as PyTorch's do (API.md: the array API
is PyTorch's wherever PyTorch has the name), so that calls by keyword carry over.

For every callable of `torch.overrides.get_testing_overrides()` that kiln has too (as `kn.X`,
`kn.nn.functional.X`, `kn.linalg.X`, `kn.special.X`, a Tensor or a Symbol method), each name
of kiln's parameters must be one of PyTorch's for it: the names of the overrides' stand-in
signature, of torch's own Python signature where it has one, and of every overload its
docstring lists (torch's overrides list one overload only: `torch.max(input, dim, keepdim)` is
in the docstring). The remaining differences are in `ALLOWED`, each with its reason; an entry
that no longer differs fails the test, so the list cannot go stale.

The reverse direction: PyTorch's parameters that kiln lacks (the same sources, plus the
docstrings of torch's factories, which the overrides leave out), in `MISSING` with reasons.
`PYTHONPATH=. python tests/test_torch_signatures.py` prints them grouped."""

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
    ("torch", "adaptive_max_pool1d"): ({"input"}, "the stand-in says `inputs`; input= works"),
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
    ("linalg", "tensorinv"): ({"input"}, "torch's parser names it input (A= refused)"),
    ("torch", "as_strided_copy"): ({"input"}, "torch's parser: input= works (no stand-in)"),
    ("linalg", "tensorsolve"): ({"input", "other"}, "torch's parser: input, other (A= refused)"),
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
    ("special", "round"): ({"decimals"}, "torch.special.round(x, decimals=1) works"),
    ("linalg", "lstsq"): ({"input"}, "torch's parser names it input (stand-in self, docstring A)"),
    ("torch", "orgqr"): (
        {"input2"},
        "torch's parser names tau input2: torch.orgqr(a, input2=t) works",
    ),
    ("F", "scaled_dot_product_attention"): (
        {"is_causal", "scale", "enable_gqa"},
        "the overrides' stand-in lists 5 of torch's 8 parameters",
    ),
    # kiln/frontend/linalg*.py (torch.X spellings of kn.linalg functions, which name the
    # matrix A as torch.linalg does): torch.X names it input. To do there.
    **{
        ("torch", name): ({"A"}, "kn.X is kn.linalg's function: to rename in linalg*.py")
        for name in ("det", "inverse", "logdet", "slogdet")
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
        ("fft", torch.fft, kn.fft),
        ("Tensor", torch.Tensor, kn.Tensor),
        ("Symbol", torch.Tensor, Symbol),
    ]
    for f, dummy in torch.overrides.get_testing_overrides().items():
        name = getattr(f, "__name__", None)
        if name is None or name.startswith("__"):
            continue
        for label, tmod, kmod in spaces:
            short = name.removeprefix(f"{label}_")  # torch.linalg.det is `linalg_det`
            if getattr(tmod, short, None) is not f:
                continue
            name = short
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


# -- the reverse direction: PyTorch's parameters that kiln's functions lack -------------------


def _torch_names(f, dummy, name) -> set:
    names = {
        p.name for p in (_params(dummy) or []) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    names |= {p.name for p in (_params(f) or []) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return (names | _doc_names(f, name)) - {"self"}


def _factories():
    """PyTorch's functions outside the overrides (factories, `tensor`, ...) that kiln has:
    their names come from torch's docstring alone."""
    for f in torch.overrides.get_ignored_functions():
        for label, tmod, kmod in (("torch", torch, kn), ("fft", torch.fft, kn.fft)):
            name = getattr(f, "__name__", "_").removeprefix(f"{label}_")
            if name.startswith("_") or getattr(tmod, name, None) is not f:
                continue
            k = getattr(kmod, name, None)
            if k is not None and callable(k) and not isinstance(k, type):
                yield label, name, f, None, k


def _missing():
    """{(namespace, name): PyTorch's parameter names that kiln's function does not take}.
    A kiln function with **kwargs takes them all; methods never take out= (PyTorch's do not),
    and a Symbol method is reported under "Tensor" with the eager method."""
    out = {}
    for label, name, f, dummy, k in (*_pairs(), *_factories()):
        kp = _params(k)
        if kp is None or any(p.kind == p.VAR_KEYWORD for p in kp):
            continue
        method = label in ("Tensor", "Symbol")
        ours = {p.name for p in (kp[1:] if method else kp)}
        wanted = _torch_names(f, dummy, name) - (ALIASES | ({"input", "out"} if method else set()))
        lacking = wanted - ours
        if lacking:
            key = ("Tensor" if method else label, name)
            out[key] = out.get(key, set()) | lacking
    return out


# Why a PyTorch parameter stays missing (the reasons MISSING gives)
SPELLING = (
    "a spelling from torch's docstring or overrides stand-in (an old name, another overload's, "
    "the out tuple's fields) where kiln takes torch's current name: not checked call by call"
)
LEGACY = "PyTorch's deprecated size_average/reduce (use reduction=)"
CUDNN = "torch.batch_norm/layer_norm's internal cudnn_enabled flag"
OUT_DTYPE = "out_dtype=: PyTorch's CUDA-only low-precision output of its matrix products"
OUT_DTYPE_OR_SPELLING = OUT_DTYPE + "; " + SPELLING
NO_OUT = "the stand-in lists out=, but torch 2.13 refuses it (unexpected keyword 'out')"
NO_OUT_OR_SPELLING = NO_OUT + "; " + SPELLING
INPLACE = "inplace= of F.relu/F.dropout in torch.X's stand-in; torch.X itself has none"
KILN_OWN = "kiln's own API of that name (kn.compile, kn.cond, kn.vmap, kn.save)"
ORGQR = "torch.orgqr's docstring says tau; its parser takes input2 (tau= refused), as kiln"
TORCH_FORM = "kn.X is kn.linalg.X, which takes A as torch.linalg.X does; torch.X takes input"
LINALG_A = "the stand-in says input; torch.linalg.X's parser takes A (input= refused), as kiln"
LINALG_INPUT = "torch's docstring says A; its parser takes input (A= refused), as kiln"
TENSOR_LINALG = (
    "torch's docstring says A, B (its stand-in a, b); its parser takes input, other (A= "
    "refused), as kiln"
)

# (namespace, name): (PyTorch's parameters kiln does not take, why)
MISSING = {
    **{
        ("torch", name): (
            names,
            "the overrides' stand-in names them so; torch's own function "
            "(which kiln's follows) takes a, or b, t, f",
        )
        for name, names in (
            ("sym_float", {"input"}),
            ("sym_int", {"input"}),
            ("sym_not", {"input"}),
            ("sym_ite", {"a", "c"}),
        )
    },  # fmt: skip
    ("linalg", "tensorinv"): ({"a", "A"}, TENSOR_LINALG),
    ("linalg", "tensorsolve"): ({"a", "b", "A", "B"}, TENSOR_LINALG),
    **{
        ("linalg", name): ({"input"}, LINALG_A)
        for name in (
            "det",
            "diagonal",
            "inv",
            "inv_ex",
            "lu",
            "lu_factor",
            "lu_factor_ex",
            "qr",
            "slogdet",
            "svd",
            "svdvals",
        )  # fmt: skip
    },
    **{
        ("linalg", name): ({"A"}, LINALG_INPUT)
        for name in (
            "cholesky",
            "cholesky_ex",
            "eig",
            "eigvals",
            "eigh",
            "eigvalsh",
            "householder_product",
            "ldl_factor",
            "ldl_factor_ex",
            "matrix_rank",
            "matrix_exp",
            "matrix_norm",
            "solve_triangular",
        )
    },
    ("linalg", "cond"): ({"A", "ord"}, LINALG_INPUT + "; ord: " + SPELLING),
    ("linalg", "pinv"): ({"A"}, LINALG_INPUT),
    ("linalg", "vector_norm"): ({"input"}, "torch.linalg.vector_norm takes x (kiln's) and input"),
    ("linalg", "vecdot"): ({"input", "other"}, SPELLING + " (torch.linalg.vecdot takes x, y)"),
    ("linalg", "matrix_power"): ({"A"}, LINALG_INPUT),
    ("linalg", "lstsq"): (
        {"A", "B", "cond"},
        "torch's docstring says (A, B), its parser takes (input, b) as kiln (A=, B= and the "
        "stand-in's cond= refused)",
    ),
    ("Tensor", "bmm"): ({"out_dtype", "batch2"}, OUT_DTYPE_OR_SPELLING),
    ("Tensor", "broadcast_to"): ({"shape"}, SPELLING),
    ("Tensor", "cholesky_solve"): ({"input1"}, SPELLING),
    ("Tensor", "diag_embed"): ({"diagonal"}, NO_OUT_OR_SPELLING),
    ("Tensor", "div"): ({"value"}, SPELLING),
    ("Tensor", "divide"): ({"value"}, SPELLING),
    ("Tensor", "dot"): ({"other"}, SPELLING),
    ("Tensor", "dsplit"): ({"indices_or_sections", "split_size_or_sections"}, SPELLING),
    ("Tensor", "floor_divide"): ({"value"}, SPELLING),
    ("Tensor", "fmod"): ({"divisor"}, SPELLING),
    ("Tensor", "histogram"): ({"max", "min"}, SPELLING),
    ("Tensor", "hsplit"): ({"indices_or_sections", "split_size_or_sections"}, SPELLING),
    ("Tensor", "index_copy"): ({"tensor2"}, SPELLING),
    ("Tensor", "index_reduce"): ({"include_input"}, SPELLING),
    ("Tensor", "isfinite"): ({"tensor"}, SPELLING),
    ("Tensor", "isinf"): ({"tensor"}, SPELLING),
    ("Tensor", "isreal"): ({"tensor"}, SPELLING),
    ("Tensor", "logsumexp"): ({"names"}, SPELLING),
    ("Tensor", "lu"): ({"A"}, SPELLING),
    ("Tensor", "lu_solve"): ({"b"}, SPELLING),
    ("Tensor", "masked_scatter"): ({"tensor"}, SPELLING),
    ("Tensor", "matmul"): ({"tensor2"}, SPELLING),
    ("Tensor", "mm"): ({"out_dtype"}, OUT_DTYPE),
    ("Tensor", "msort"): ({"descending"}, SPELLING),
    ("Tensor", "mul"): ({"value"}, SPELLING),
    ("Tensor", "multiply"): ({"value"}, SPELLING),
    ("Tensor", "narrow"): ({"dimension"}, SPELLING),
    ("Tensor", "narrow_copy"): ({"length", "dimension", "start"}, SPELLING),
    ("Tensor", "orgqr"): ({"tau"}, ORGQR),
    ("torch", "orgqr"): ({"tau"}, ORGQR),
    ("torch", "ormqr"): (
        {"tau", "other"},
        "torch.ormqr's docstring says tau, other; its parser takes input2, input3 (as kiln)",
    ),
    ("Tensor", "permute"): ({"dim"}, SPELLING),
    ("Tensor", "relu"): ({"inplace"}, INPLACE),
    ("Tensor", "remainder"): ({"divisor"}, SPELLING),
    ("Tensor", "resize_as_"): ({"tensor", "other"}, SPELLING),
    ("Tensor", "resize_as"): ({"other"}, SPELLING),
    ("Tensor", "split"): ({"tensor", "split_size_or_sections"}, SPELLING),
    ("Tensor", "split_with_sizes"): ({"tensor", "split_size_or_sections"}, SPELLING),
    ("Tensor", "swapaxes"): ({"dim1", "dim0"}, SPELLING),
    ("Tensor", "swapdims"): ({"axis1", "axis0"}, SPELLING),
    ("Tensor", "take"): ({"indices"}, SPELLING),
    ("Tensor", "to"): ({"kwargs", "args", "other"}, SPELLING),
    ("Tensor", "to_sparse"): ({"sparseDims"}, SPELLING),
    ("Tensor", "topk"): ({"descending"}, SPELLING),
    ("Tensor", "true_divide"): ({"value"}, SPELLING),
    ("Tensor", "type_as"): ({"tensor"}, SPELLING),
    ("Tensor", "unsafe_split"): ({"tensor", "split_size_or_sections"}, SPELLING),
    ("Tensor", "unsafe_split_with_sizes"): ({"tensor", "split_size_or_sections"}, SPELLING),
    ("Tensor", "vsplit"): ({"indices_or_sections", "split_size_or_sections"}, SPELLING),
    ("Tensor", "where"): ({"y", "x"}, SPELLING),
    ("Tensor", "xlogy"): ({"y", "x"}, SPELLING),
    ("torch", "adaptive_max_pool1d"): ({"inputs"}, SPELLING),
    ("torch", "addmm"): ({"out_dtype"}, OUT_DTYPE),
    ("torch", "alpha_dropout"): ({"inplace"}, INPLACE),
    ("torch", "baddbmm"): ({"out_dtype"}, OUT_DTYPE),
    ("torch", "batch_norm"): ({"cudnn_enabled"}, CUDNN),
    ("torch", "binary_cross_entropy_with_logits"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "bmm"): ({"out_dtype"}, OUT_DTYPE),
    ("torch", "broadcast_to"): ({"shape"}, SPELLING),
    ("torch", "cholesky_inverse"): ({"L"}, SPELLING),
    ("torch", "cholesky_solve"): ({"L", "B", "input1"}, SPELLING),
    ("torch", "compile"): ({"model"}, KILN_OWN),
    ("torch", "cond"): ({"true_fn", "false_fn"}, KILN_OWN),
    ("torch", "convolution"): ({"output_adding"}, SPELLING),
    ("torch", "cosine_embedding_loss"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "dequantize"): ({"tensor"}, SPELLING),
    ("torch", "det"): ({"input"}, TORCH_FORM),
    ("torch", "diag_embed"): ({"diagonal", "out"}, NO_OUT_OR_SPELLING),
    ("torch", "dot"): ({"other"}, SPELLING),
    ("torch", "dropout"): ({"inplace"}, INPLACE),
    ("torch", "dsplit"): ({"indices_or_sections"}, SPELLING),
    ("torch", "embedding"): (
        {"input", "max_norm", "norm_type"},
        "the stand-in is F.embedding's: torch.embedding refuses input=, max_norm=, norm_type=",
    ),
    ("torch", "embedding_bag"): (
        {"input", "max_norm", "norm_type"},
        "the stand-in is F.embedding_bag's: torch.embedding_bag refuses max_norm=, norm_type=",
    ),
    ("torch", "fmod"): ({"a", "b"}, SPELLING),
    ("torch", "full_like"): ({"out"}, NO_OUT),
    ("torch", "hinge_embedding_loss"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "histogram"): ({"max", "min"}, SPELLING),
    ("torch", "hsplit"): ({"indices_or_sections"}, SPELLING),
    ("torch", "imag"): ({"out"}, NO_OUT),
    ("torch", "index_reduce"): ({"include_input"}, SPELLING),
    ("torch", "inverse"): ({"input"}, TORCH_FORM),
    ("torch", "isfinite"): ({"tensor"}, SPELLING),
    ("torch", "isin"): ({"te", "e"}, SPELLING),
    ("torch", "isinf"): ({"tensor"}, SPELLING),
    ("torch", "kl_div"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "kthvalue"): ({"values"}, SPELLING),
    ("torch", "layer_norm"): ({"cudnn_enabled"}, CUDNN),
    ("torch", "logdet"): ({"input"}, TORCH_FORM),
    ("torch", "logsumexp"): ({"names"}, SPELLING),
    ("torch", "lstm"): (
        {"data", "batch_sizes"},
        "torch.lstm's packed overload (data, batch_sizes): kiln has the padded one",
    ),
    ("torch", "margin_ranking_loss"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "matrix_exp"): ({"A"}, LINALG_INPUT),
    ("torch", "max"): ({"values"}, SPELLING),
    ("torch", "max_pool1d_with_indices"): ({"return_indices"}, SPELLING),
    ("torch", "median"): ({"values"}, SPELLING),
    ("torch", "min"): ({"values"}, SPELLING),
    ("torch", "msort"): ({"descending"}, SPELLING),
    ("torch", "nanmedian"): ({"values"}, SPELLING),
    ("torch", "nuclear_norm"): (
        {"dtype", "p"},
        "the docstring's forms: torch.nuclear_norm refuses p= and dtype= (TypeError)",
    ),
    ("torch", "pca_lowrank"): ({"input"}, SPELLING),
    ("torch", "permute"): ({"dim"}, SPELLING),
    ("torch", "polar"): ({"ang"}, SPELLING),
    ("torch", "positive"): ({"out"}, NO_OUT),
    ("torch", "real"): ({"out"}, NO_OUT),
    ("torch", "relu"): ({"inplace"}, INPLACE),
    ("torch", "remainder"): ({"a", "b"}, SPELLING),
    ("torch", "result_type"): ({"tensor1", "tensor2"}, SPELLING),
    ("torch", "searchsorted"): ({"values"}, SPELLING),
    ("torch", "slogdet"): ({"input"}, TORCH_FORM),
    ("torch", "squeeze"): ({"out"}, NO_OUT),
    ("torch", "std_mean"): ({"out"}, NO_OUT),
    ("torch", "svd_lowrank"): ({"input"}, SPELLING),
    ("torch", "swapaxes"): ({"dim1", "dim0"}, SPELLING),
    ("torch", "swapdims"): ({"axis1", "axis0"}, SPELLING),
    ("torch", "topk"): ({"descending", "values"}, SPELLING),
    ("torch", "triangular_solve"): ({"input"}, SPELLING),
    ("torch", "triplet_margin_loss"): ({"reduce", "size_average"}, LEGACY),
    ("torch", "true_divide"): ({"divisor", "dividend"}, SPELLING),
    ("torch", "unsafe_split"): ({"split_size_or_sections"}, SPELLING),
    ("torch", "unsafe_split_with_sizes"): ({"tensor", "split_size_or_sections"}, SPELLING),
    ("torch", "unsqueeze"): ({"out"}, NO_OUT),
    ("torch", "var_mean"): ({"out"}, NO_OUT),
    ("torch", "vmap"): ({"func"}, "kiln names the function `f`, as its other transforms"),
    ("torch", "vsplit"): ({"indices_or_sections"}, SPELLING),
    ("torch", "where"): ({"y", "x"}, SPELLING),
    ("torch", "xlogy"): ({"y", "x"}, SPELLING),
}


def test_pytorchs_parameters_that_kiln_lacks_are_listed():
    found = _missing()
    unexpected = {k: v for k, v in found.items() if k not in MISSING or v != MISSING[k][0]}
    assert not unexpected, f"PyTorch parameters kiln lacks, not in MISSING: {unexpected}"
    stale = [k for k in MISSING if k not in found]
    assert not stale, f"MISSING entries kiln now takes (shorten the list): {stale}"


# -- out= wherever PyTorch takes it, found by calling ----------------------------------------

# Arguments tried in turn until torch's function accepts them (its docstrings omit out= on a
# few functions, `take`, `softmax`, ...: calling finds them)
_X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], np.float32)
_SQ = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
_V = np.array([0.5, 0.25], np.float32)
_TRIALS = [
    (_X,), (_X, 1), (_X, _X), (_X, _X, _X), (_SQ,), (_SQ, _SQ), (_V,), (_V, _V),
    (_X, 0, np.array([[0, 1, 0]])), (_X, 0, np.array([0])), (_SQ, 2), (_X, 0.5), ([_X, _X],),
    (np.abs(_X) + 0.5, 0.5), (np.array([0, 1]),), (np.array([0, 1]), np.array([0, 1])), (3,),
    (2, 2),
]  # fmt: skip
# torch's factories (outside the overrides); the other functions called are the overrides' ones
# (tensor functions: calling torch.set_printoptions and the like would change torch's state)
_FACTORIES = set(
    "arange empty eye full linspace logspace ones rand randint randn randperm range zeros "
    "fftfreq rfftfreq".split()
)


def _lib_args(lib, args):
    return [lib.tensor(a) if isinstance(a, np.ndarray) else
            [lib.tensor(b) for b in a] if isinstance(a, list) else a for a in args]  # fmt: skip


def _out_like(lib, r):
    def empty(t):
        return lib.empty(0, dtype=getattr(lib, str(t.dtype).split(".")[-1]))

    return tuple(empty(t) for t in r) if isinstance(r, tuple) else empty(r)


def _torch_out_calls():
    """(label, name, torch's result, whether torch returns None with out=, kiln's function,
    the arguments) of the calls torch answers with out= (an empty out of its result's dtype)."""
    overridden = set(torch.overrides.get_testing_overrides())
    spaces = [("torch", torch, kn), ("special", torch.special, kn.special),
              ("linalg", torch.linalg, kn.linalg), ("fft", torch.fft, kn.fft)]  # fmt: skip
    for label, tmod, kmod in spaces:
        for name in sorted(dir(tmod)):
            f, k = getattr(tmod, name), getattr(kmod, name, None)
            if k is None or not callable(f) or isinstance(f, type):
                continue
            if f not in overridden and name not in _FACTORIES:
                continue
            for args in _TRIALS:
                try:
                    r = f(*_lib_args(torch, args))
                except Exception:
                    continue
                if not isinstance(r, torch.Tensor) and not (
                    isinstance(r, tuple) and r and all(isinstance(t, torch.Tensor) for t in r)
                ):
                    break
                try:
                    returned = f(*_lib_args(torch, args), out=_out_like(torch, r))
                except Exception:
                    break  # torch refuses out= here
                yield label, name, r, returned is None, k, args
                break


def test_out_wherever_torch_takes_it():
    import warnings

    missing, wrong = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, name, r, returns_none, k, args in _torch_out_calls():
            out = _out_like(kn, r)
            try:
                got = k(*_lib_args(kn, args), out=out)
            except Exception as e:
                missing.append(f"{label}.{name}: {type(e).__name__}: {e}"[:160])
                continue
            if returns_none:  # PyTorch's list-valued out= forms (unbind_copy...) return None
                same = got is None
            else:
                same = got is out or (
                    isinstance(out, tuple) and all(a is b for a, b in zip(got, out))
                )
            if not same:
                wrong.append(f"{label}.{name}")
    assert not missing, f"out= refused where torch takes it: {missing}"
    assert not wrong, f"out= not returned: {wrong}"


if __name__ == "__main__":  # print what kiln lacks, grouped by namespace
    found = _missing()
    print(f"{len(found)} functions lack {sum(map(len, found.values()))} of PyTorch's parameters")
    for space in sorted({s for s, _ in found}):
        print(f"\n[{space}]")
        for (s, name), names in sorted(found.items()):
            if s == space:
                print(f"  {name}: {', '.join(sorted(names))}")
