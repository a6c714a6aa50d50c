"""Integer and bool inputs that PyTorch refuses are refused, with the built-in type it raises.

kiln computed mean, var, std, var_mean, std_mean, softmax, log_softmax, lerp and dist of
integers (and median, cov, corrcoef of bools) in the default float, where torch 2.13 raises:
code that runs on kiln then failed on torch. With `dtype=` (mean, softmax) they are computed,
as torch's. `kn.trace(matrix)` is torch.trace (the sum of the diagonal); `kn.trace(fn, *args)`
stays kiln's tracing. A piece of split, chunk or unbind that requires grad is not changed in
place while autograd records (torch: "Output 0 of Split is a view and is being modified
inplace"); tensor_split's pieces may be, as torch's. Expected exception types and
messages: torch 2.13's (the last test checks them on torch).
"""

import pytest

import kiln as kn

# name -> (call, the built-in torch raises, a piece of its message)
CASES = {
    "mean": (lambda L: L.tensor([1, 2, 3]).mean(), RuntimeError, "could not infer output dtype"),
    "mean-bool": (lambda L: L.tensor([True]).mean(), RuntimeError, "Got: Bool"),
    "nanmean": (lambda L: L.tensor([1, 2]).nanmean(), RuntimeError, "but got Long"),
    "var": (lambda L: L.tensor([1, 2]).var(), RuntimeError, "std and var only support"),
    "std": (lambda L: L.tensor([1, 2]).std(dim=0), RuntimeError, "std and var only support"),
    "var_mean": (lambda L: L.var_mean(L.tensor([1, 2])), RuntimeError, "var_mean only"),
    "std_mean": (lambda L: L.std_mean(L.tensor([1, 2])), RuntimeError, "std_mean only"),
    "softmax": (lambda L: L.softmax(L.tensor([1, 2]), 0), NotImplementedError, "softmax"),
    "log_softmax": (lambda L: L.log_softmax(L.tensor([1, 2]), 0), NotImplementedError, "Long"),
    "lerp": (
        lambda L: L.lerp(L.tensor([1, 2]), L.tensor([3, 4]), 0.5),
        NotImplementedError,
        "lerp",
    ),  # fmt: skip
    "dist": (lambda L: L.dist(L.tensor([1, 2]), L.tensor([3, 4])), RuntimeError, "Got Long"),
    "median-bool": (lambda L: L.tensor([True, False]).median(), NotImplementedError, "Bool"),
    "cov-bool": (lambda L: L.cov(L.tensor([True, False])), RuntimeError, "bool dtype"),
    "cdist": (
        lambda L: L.cdist(L.ones(1, 2, dtype=L.int64), L.ones(1, 2)),
        RuntimeError,
        "X1 got: Long",
    ),
    "cdist-x2": (
        lambda L: L.cdist(L.ones(1, 2), L.ones(1, 2, dtype=L.bool)),
        RuntimeError,
        "X2 got: Bool",
    ),
    "normalize": (
        lambda L: L.nn.functional.normalize(L.tensor([3, 4]), dim=0),
        RuntimeError,
        "Got Long",
    ),
    "gelu": (lambda L: L.nn.functional.gelu(L.tensor([1, 2])), NotImplementedError, "'Long'"),
    "gelu-bool": (lambda L: L.nn.functional.gelu(L.tensor([True])), NotImplementedError, "'Bool'"),
    "silu": (lambda L: L.nn.functional.silu(L.tensor([1, 2])), NotImplementedError, "silu_cpu"),
    "softplus": (
        lambda L: L.nn.functional.softplus(L.tensor([1])),
        NotImplementedError,
        "softplus",
    ),
    "elu": (lambda L: L.nn.functional.elu(L.tensor([True])), NotImplementedError, "elu_cpu"),
    "kthvalue-bool": (lambda L: L.tensor([True, False]).kthvalue(1), NotImplementedError, "Bool"),
    "trapezoid-bool": (lambda L: L.trapezoid(L.tensor([True, False])), RuntimeError, "bool input"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_torch_refuses(name):
    call, error, message = CASES[name]
    with pytest.raises(error, match=message):
        call(kn)


def test_activations_and_distances_refused_under_compile_and_in_graph_mode_too():
    F = kn.nn.functional
    for fn in (F.gelu, F.silu, F.elu, F.softplus, lambda v: F.normalize(v, dim=0)):
        with pytest.raises(RuntimeError, match="not implemented for|Got Long"):
            kn.compile(fn)(kn.tensor([1, 2]))
        with kn.Graph().as_default():
            x = kn.placeholder(kn.int64, (1, 2), name="x")
            with pytest.raises(RuntimeError, match=r"\(op (gelu|silu|elu|softplus|normalize)"):
                fn(x)
            with pytest.raises(RuntimeError, match="X1 got: Long"):
                kn.cdist(x, kn.ones(1, 2))
    # floats still compute (values by hand: silu(0) = 0, gelu(0) = 0, elu(0) = 0)
    assert F.silu(kn.zeros(2)).tolist() == [0.0, 0.0]
    assert F.gelu(kn.zeros(1)).tolist() == [0.0] and F.elu(kn.zeros(1)).tolist() == [0.0]
    assert kn.kthvalue(kn.tensor([3, 1, 2]), 2).values.item() == 2  # integers: torch too
    assert kn.trapezoid(kn.tensor([1, 2, 4])).item() == 4.5  # (1+2)/2 + (2+4)/2, torch too


@pytest.mark.parametrize("name", ["mean", "softmax"])
def test_refused_under_compile_and_in_graph_mode_too(name):
    call, error, message = CASES[name]
    with pytest.raises(error, match=message):
        kn.compile(lambda x: x.mean() if name == "mean" else x.softmax(0))(kn.tensor([1, 2]))
    with kn.Graph().as_default():
        x = kn.placeholder(kn.int64, (2,), name="x")
        with pytest.raises(error, match=message):
            x.mean() if name == "mean" else x.softmax(0)


def test_with_a_dtype_they_are_computed():
    x = kn.tensor([1, 2, 4])
    assert x.mean(dtype=kn.float32).item() == pytest.approx(7 / 3)
    assert kn.softmax(x, 0, dtype=kn.float64).sum().item() == pytest.approx(1.0)
    assert kn.logsumexp(x, 0).dtype == kn.float32  # torch accepts integers here


def test_trace_of_a_matrix_is_torchs_trace():
    assert kn.trace(kn.tensor([[1, 2], [3, 4]])).item() == 5
    assert kn.trace(lambda v: v * 2, kn.ones(2)).graph is not None  # kiln's tracing


def _change_piece(L, split, requires_grad=True):
    x = L.ones(4, requires_grad=requires_grad) * 1
    piece = split(x)[0]
    piece.mul_(2)
    return x


PIECES = {
    "split": (lambda x: x.split(2), "Output 0 of Split is a view"),
    "chunk": (lambda x: x.chunk(2), "Output 0 of Split is a view"),
    "split_sizes": (lambda x: x.split([1, 3]), "Output 0 of SplitWithSizes is a view"),
    "unbind": (lambda x: x.unbind(0), "Output 0 of Unbind is a view"),
}


@pytest.mark.parametrize("name", sorted(PIECES))
def test_a_piece_of_a_multi_output_view_op_is_not_changed_in_place_while_recording(name):
    split, message = PIECES[name]
    with pytest.raises(RuntimeError, match=message):
        _change_piece(kn, split)
    assert _change_piece(kn, split, requires_grad=False).tolist()[0] == 2.0  # nothing records
    assert kn.tensor_split(kn.ones(4, requires_grad=True) * 1, 2)[0].mul_(2).requires_grad


def test_the_expected_refusals_are_torchs():
    torch = pytest.importorskip("torch")
    for call, error, message in CASES.values():
        with pytest.raises(error, match=message):
            call(torch)
    for split, message in PIECES.values():
        with pytest.raises(RuntimeError, match=message):
            _change_piece(torch, split)
        assert _change_piece(torch, split, requires_grad=False).tolist()[0] == 2.0


def _use_piece_after_base_changed(L, how):
    b = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
    base = b * 1
    piece = base.unbind(0)[1]
    if how == "detach":
        base.detach().mul_(2)
    elif how == "no_grad":
        with L.no_grad():
            base.mul_(2)
    elif how == ".data":
        base.data.mul_(2)  # (not counted by the version counter)
    (piece * 3).backward()
    return b.grad.tolist()


def test_a_piece_used_after_its_base_changed_unrecorded_is_refused():
    # regression (torch-fuzz programs 13418, 49340, 54770, 83479): a piece of unbind used in a
    # recorded op after its base changed in place through detach() or under no_grad was
    # differentiated; torch 2.13 refuses it there ("Output 1 of Unbind is a view and its base
    # or another view of its base has been modified inplace"), as after a recorded change
    for how in ("detach", "no_grad"):
        with pytest.raises(RuntimeError, match="Output 1 of Unbind is a view and its base"):
            _use_piece_after_base_changed(kn, how)
    assert _use_piece_after_base_changed(kn, ".data") == [0.0, 3.0, 0.0]
    assert _use_piece_after_base_changed(kn, "unchanged") == [0.0, 3.0, 0.0]


def test_a_piece_compared_with_another_dtype_after_its_base_changed_computes():
    # regression (torch-fuzz program 117631): a comparison records nothing, so torch 2.13 lets
    # a piece of unbind whose base changed in place take part, in any dtype; kiln's cast of
    # the float64 piece to compare with a float32 tensor was recorded and refused it
    b = kn.tensor([1.0, -2.0, 3.0], dtype=kn.float64, requires_grad=True) * 1
    piece = b.unbind(0)[1]
    b.zero_()
    a = kn.tensor([[0.5, -3.0]], requires_grad=True)
    assert (piece > a).tolist() == [[False, True]]  # (the piece's memory: -2.0 was zeroed)


def test_a_piece_of_a_piece_is_used_while_nothing_changed():
    # regression (torch-fuzz programs 132419, 133356, 138470): unbind of a chunk's piece was
    # refused as if its base had changed (this session's version check read the first piece's
    # mark); torch 2.13 differentiates it. After an unrecorded change it is refused.
    b = kn.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    inner = b.chunk(2)[1].unbind(0)[1]
    (inner * 3).backward()
    assert b.grad.tolist() == [0.0, 0.0, 0.0, 3.0]
    inner = b.chunk(2)[1].unbind(0)[0]
    b.detach().mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and its base"):
        inner * 3


def test_an_as_strided_view_of_a_piece_is_not_changed_in_place_while_recording():
    # regression (torch-fuzz program 255534): as_strided of a piece of split did not carry the
    # piece's mark, so relu_ on it was recorded; torch 2.13 refuses it as on the piece itself
    b = kn.tensor([0.5, -1.0, 2.0, -3.0], requires_grad=True)
    view = b.tanh().split(2)[0].as_strided((2,), (1,))
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        view.relu_()


def test_a_piece_used_after_its_base_changed_unrecorded_as_torch():
    torch = pytest.importorskip("torch")
    for how in ("detach", "no_grad"):
        with pytest.raises(RuntimeError, match="Output 1 of Unbind is a view and its base"):
            _use_piece_after_base_changed(torch, how)
    assert _use_piece_after_base_changed(torch, ".data") == [0.0, 3.0, 0.0]


def _view_made_without_grad(L, base_grad, value_grad):
    x = L.ones(4, requires_grad=base_grad) * 1
    with L.no_grad():
        piece = x[:2]
    piece.mul_(L.full((2,), 2.0, requires_grad=value_grad))
    return x


def test_a_view_made_under_no_grad_is_not_changed_in_place_with_grad_on():
    # torch 2.13: "A view was created in no_grad mode and is being modified inplace with grad
    # mode enabled" when the base or the value requires grad; allowed when neither does
    for base_grad, value_grad in ((True, False), (False, True)):
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            _view_made_without_grad(kn, base_grad, value_grad)
    assert _view_made_without_grad(kn, False, False).tolist() == [2.0, 2.0, 1.0, 1.0]
    x = kn.ones(4, requires_grad=True) * 1
    with kn.no_grad():  # view and in-place op both under no_grad: allowed, not recorded
        x.split(2)[0].mul_(2)
    assert x.tolist() == [2.0, 2.0, 1.0, 1.0]
    x.detach()[:2].add_(1)  # a detached tensor's views are not the base's autograd views
    assert x.tolist() == [3.0, 3.0, 1.0, 1.0]


def test_views_made_under_no_grad_as_torchs():
    torch = pytest.importorskip("torch")
    for base_grad, value_grad in ((True, False), (False, True)):
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            _view_made_without_grad(torch, base_grad, value_grad)
    assert _view_made_without_grad(torch, False, False).tolist() == [2.0, 2.0, 1.0, 1.0]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_without_a_size_refuse_as_torch(name):
    # torch 2.13: `torch.zeros()` raises TypeError ('missing 1 required positional
    # arguments: "size"'); kiln made a 0-d tensor. `zeros(())` and `size=()` are the 0-d one
    with pytest.raises(TypeError, match="size"):
        getattr(kn, name)()
    assert getattr(kn, name)(()).shape == getattr(kn, name)(size=()).shape == ()
