"""Scenarios after PyTorch's own autograd tests (test/test_autograd.py), written anew: each is
a function of `lib` run once with PyTorch and once with kiln (`import kiln as kn`), and the
two outcomes must agree: values and gradients, requires_grad / is_leaf / grad_fn presence,
and, where PyTorch refuses, the built-in exception type. torch 2.13 is the oracle.

Values are small exact numbers (sums and products of a few halves and integers), so they are
compared with rtol=1e-6.
"""

import numpy as np
import pytest
from port_common import identity

import kiln as kn

TOL = {"rtol": 1e-6, "atol": 1e-7}


def _builtin(exc_type):
    """The first built-in exception class of `exc_type`'s MRO (kiln's errors subclass one)."""
    return next(c for c in exc_type.__mro__ if c.__module__ == "builtins")


def outcome(fn, lib):
    """`fn(lib)`'s result as plain data (arrays, numbers, bools, None, nested lists), or
    ("raises", exception type) where it raises."""
    try:
        result = fn(lib)
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return ("raises", type(e))
    return _plain(result)


def _plain(v):
    if isinstance(v, tuple) and v[:1] == ("raises",):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "shape") and hasattr(v, "detach"):
        a = v.detach()
        return ("tensor", str(v.dtype).split(".")[-1], np.array(a.numpy(), copy=True))
    if isinstance(v, np.ndarray):
        return ("tensor", str(v.dtype), v)
    return v


def _compare(t, k, where="result"):
    if isinstance(t, tuple) and t[:1] == ("raises",):
        assert isinstance(k, tuple) and k[:1] == ("raises",), f"{where}: torch raises {t[1]}"
        assert issubclass(k[1], _builtin(t[1])), f"{where}: torch raises {t[1]}, kiln {k[1]}"
        return
    assert not (isinstance(k, tuple) and k[:1] == ("raises",)), f"{where}: kiln raises {k[1]}"
    if isinstance(t, tuple) and t[:1] == ("tensor",):
        assert isinstance(k, tuple) and k[:1] == ("tensor",), f"{where}: {k!r} is no tensor"
        assert k[1] == t[1], f"{where}: dtype {k[1]}, torch {t[1]}"
        assert k[2].shape == t[2].shape, f"{where}: shape {k[2].shape}, torch {t[2].shape}"
        np.testing.assert_allclose(k[2], t[2], err_msg=where, **TOL)
        return
    if isinstance(t, list):
        assert isinstance(k, list) and len(k) == len(t), f"{where}: {k!r} vs torch {t!r}"
        for i, (a, b) in enumerate(zip(t, k)):
            _compare(a, b, f"{where}[{i}]")
        return
    assert k == t, f"{where}: kiln {k!r}, torch {t!r}"


def same(torch, fn):
    """`fn` has the same outcome with PyTorch and with kiln."""
    _compare(outcome(fn, torch), outcome(fn, kn))


# -- custom autograd.Function: the gradients backward returns -----------------------------


def _function_returning(lib, grad):
    """A Function doubling its input whose backward returns `grad(lib, grad_output)`."""

    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad(lib, grad_output)

    return Double


@pytest.mark.parametrize(
    "shape, grad",
    [
        ((2, 3), lambda lib, g: lib.ones(1, 3)),  # broadcastable to the input: refused
        ((2, 3), lambda lib, g: lib.ones(3)),
        ((3,), lambda lib, g: lib.tensor(5.0)),
        ((5, 5), lambda lib, g: lib.ones(10)),
        ((1, 3), lambda lib, g: lib.ones(2, 3)),  # the input broadcasts to it: summed
        ((3,), lambda lib, g: lib.ones(4, 2, 3)),
        ((), lambda lib, g: lib.ones(3)),
        ((2,), lambda lib, g: 3.0),  # a number: refused
    ],
    ids=[
        "1x3_for_2x3",
        "3_for_2x3",
        "0d_for_3",
        "10_for_5x5",
        "2x3_for_1x3",
        "4x2x3_for_3",
        "3_for_0d",
        "number",
    ],  # fmt: skip
)
def test_a_function_gradient_of_another_shape_is_summed_or_refused_as_torch(torch, shape, grad):
    """PyTorch sums a gradient to its input's shape where the input broadcasts to it, and
    refuses any other shape (RuntimeError); kiln broadcast the gradient to the input instead,
    so a (1, 3) gradient for a (2, 3) input gave ones where PyTorch refuses, and a (2, 3)
    gradient for a (1, 3) input was refused where PyTorch gives [[2, 2, 2]]."""

    def run(lib):
        x = lib.ones(shape, requires_grad=True)
        _function_returning(lib, grad).apply(x).sum().backward()
        return x.grad

    same(torch, run)


def test_two_outputs_with_a_gradient_to_sum(torch):
    def run(lib):
        class Pair(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * 2, y * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga.expand(2, 3), gb

        x, y = lib.ones(1, 3, requires_grad=True), lib.ones(3, requires_grad=True)
        a, b = Pair.apply(x, y)
        (a.sum() + b.sum()).backward()
        return x.grad, y.grad

    same(torch, run)


def _square_once_differentiable(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad_output):
            (a,) = ctx.saved_tensors
            return 2 * grad_output * a

    return Square


@pytest.mark.parametrize("weight", ["x", "w", "ones"])
def test_once_differentiable_refuses_a_second_derivative_through_it(torch, weight):
    """With create_graph, a once_differentiable backward whose incoming gradient requires
    grad gives a result that requires grad and refuses (RuntimeError) a backward through
    it, as PyTorch's. kiln gave a result without history: d/dx of d(x^3)/dx computed through
    `Square(x) * x` came out [2, 4] (the Function's part silently dropped) where PyTorch
    refuses; with a weight `w` the gradient did not require grad."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = {"x": x, "w": lib.tensor([3.0, 4.0], requires_grad=True), "ones": lib.ones(2)}
        y = _square_once_differentiable(lib).apply(x) * w[weight]
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        out = [g, g.requires_grad]
        if g.requires_grad:
            out.append(outcome(lambda lib: g.sum().backward(), lib))
        return out + [x.grad]

    same(torch, run)


# -- grad mode switches as decorators ----------------------------------------------------


def _generator_modes(lib, switch, outer):
    """The grad (and inference) modes seen inside a decorated generator and by the loop that
    drives it."""
    seen = []

    def modes():
        return (lib.is_grad_enabled(), lib.is_inference_mode_enabled())

    @switch(lib)
    def numbers():
        for i in range(2):
            seen.append(("inside", *modes()))
            yield i

    with outer(lib):
        for _ in numbers():
            seen.append(("loop", *modes()))
    seen.append(("after", *modes()))
    return seen


@pytest.mark.parametrize(
    "switch, outer",
    [
        (lambda lib: lib.no_grad(), lambda lib: lib.enable_grad()),
        (lambda lib: lib.enable_grad(), lambda lib: lib.no_grad()),
        (lambda lib: lib.inference_mode(), lambda lib: lib.enable_grad()),
        (lambda lib: lib.set_grad_enabled(False), lambda lib: lib.enable_grad()),
    ],
    ids=["no_grad", "enable_grad", "inference_mode", "set_grad_enabled"],
)
def test_a_decorated_generator_runs_its_body_in_the_mode(torch, switch, outer):
    """A grad-mode decorator on a generator function applies to the generator's body at each
    step and gives the caller its own mode back at each yield, as PyTorch's; kiln applied it
    only while the generator object was made, so a `@no_grad()` generator's body recorded
    gradients (is_grad_enabled() True inside)."""
    same(torch, lambda lib: _generator_modes(lib, switch, outer))


def test_set_grad_enabled_as_a_decorator_leaves_the_mode_alone_until_the_call(torch):
    """`@set_grad_enabled(False)` on a function: PyTorch restores the mode the call to
    set_grad_enabled changed, so only the decorated function runs without grad; in kiln grad
    mode stayed off after the decoration, and later ops silently recorded nothing."""

    def run(lib):
        x = lib.ones(2, requires_grad=True)

        @lib.set_grad_enabled(False)
        def double(a):
            return a * 2

        after_decoration = lib.is_grad_enabled()
        y = x * 3
        return [after_decoration, double(x).requires_grad, y.requires_grad, lib.is_grad_enabled()]

    same(torch, run)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_a_switch_as_a_decorator_without_parentheses(torch, name):
    """`@torch.no_grad` (no call) decorates the function itself, as PyTorch's; kiln raised
    TypeError."""

    def run(lib):
        x = lib.ones(2, requires_grad=True)

        @getattr(lib, name)
        def double(a):
            return a * 2, lib.is_grad_enabled()

        with lib.no_grad():
            inside_no_grad = double(x)
        return [double(x), inside_no_grad, double.__name__]

    same(torch, run)


# -- requires_grad, .grad ----------------------------------------------------------------


def _raises(fn):
    """The first built-in exception class `fn()` raises, or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return _builtin(type(e))
    return None


def test_requires_grad_true_on_a_non_leaf_is_a_no_op(torch):
    """PyTorch refuses `requires_grad_(False)` on a non-leaf, but `requires_grad_()` and
    `requires_grad_(True)` return it as it is (the setter `requires_grad = True` is refused
    still). kiln raised RuntimeError for all."""

    def run(lib):
        x = lib.ones(2, requires_grad=True)
        z = x * 3
        out = [_raises(lambda: z.requires_grad_(False))]
        out += [z.requires_grad_() is z, z.requires_grad_(True) is z, z.requires_grad]
        out.append(_raises(lambda: setattr(z, "requires_grad", True)))
        z.sum().backward()
        return out + [z.is_leaf, x.grad]

    same(torch, run)


def test_del_grad_clears_it(torch):
    """`del x.grad` sets it to None, as PyTorch's; kiln raised AttributeError."""

    def run(lib):
        x = lib.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        before = x.grad
        del x.grad
        (x * 3).sum().backward()
        return [before, x.grad]

    same(torch, run)


# -- views ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index", [slice(None), Ellipsis, (slice(None), slice(None))], ids=["colon", "ellipsis", "2"]
)
def test_a_full_slice_is_a_view_with_its_own_history(torch, index):
    """`x[:]` (and `x[...]`, `x[:, :]`) is a new view of x, as PyTorch's: a hook on it sees
    only the gradient that flows through it, and requires_grad_() on a view of a plain tensor
    leaves the tensor alone. kiln returned x itself: with `h = x[:]` doubling its gradient in
    a hook, `(3 * x + h).sum()` gave x.grad [8, 8] where PyTorch gives [5, 5]."""

    def run(lib):
        x = lib.tensor([[1.0, 2.0]], requires_grad=True)
        h = x[index]
        out = [h is x, h._base is x, h.is_leaf, h.grad_fn is not None]
        h.register_hook(lambda g: g * 2)
        (x * 3 + h).sum().backward()
        a = lib.ones(1, 2)
        b = a[index]
        b.requires_grad_()
        return out + [x.grad, a.requires_grad, b.requires_grad]

    same(torch, run)


def test_pickling_keeps_values_and_requires_grad_only(torch):
    """A pickled tensor comes back as a leaf with its values and requires_grad, as PyTorch's:
    a non-leaf or a view pickles (kiln failed on the history's functions), and `.grad` is not
    carried (kiln carried it)."""
    import pickle

    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.grad = lib.ones(3)
        out = []
        for t in (x, x * 2, x[1:], lib.tensor([4.0])):
            c = pickle.loads(pickle.dumps(t))
            out += [c, c.requires_grad, c.is_leaf, c.grad, c._base is None]
        return out

    same(torch, run)


def test_numpy_of_a_tensor_that_requires_grad_under_no_grad(torch):
    """PyTorch refuses `x.numpy()` (and np.asarray) of a tensor that requires grad only while
    grad mode is on; kiln refused it under no_grad too."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out = [_raises(x.numpy), _raises(lambda: np.asarray(x))]
        with lib.no_grad():
            out += [x.numpy(), np.asarray(x), np.asarray(x * 2)]
        return out

    same(torch, run)


def test_a_function_returning_its_input_under_no_grad_gives_a_tensor_without_grad(torch):
    """Under no_grad, a Function whose forward returns its input gives a tensor that does
    not require grad, as PyTorch's; kiln returned the input itself, which requires grad, so
    a later backward through it reached x (x.grad [2, 2]) where PyTorch refuses."""

    def run(lib):
        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad

        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            y = Same.apply(x)
        out = [y is x, y.requires_grad, y.grad_fn, x.requires_grad]
        return out + [_raises(lambda: (y * 2).sum().backward()), x.grad]

    same(torch, run)


def test_in_place_change_of_a_view_of_a_function_output(torch):
    """A view of a custom Function's output changed in place: the gradient of the rest of
    the output still reaches the Function, as PyTorch's. kiln linked the output as a view of
    the forward's value (which has no history), so the in-place change rebuilt the history
    from that value: the Function's backward got zeros for the elements not changed
    (a.grad [3, 5, 0, 0] where PyTorch gives [3, 5, 4, 5])."""

    def run(lib):
        class Times1(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 1

            @staticmethod
            def backward(ctx, grad):
                return grad

        a = lib.tensor([1.0, 2.0, 3.0, 5.0], requires_grad=True)
        p = Times1.apply(a)
        t1, t2 = p[0:2], p[2:4]
        t1 += 3
        (t1 * t2).sum().backward()
        return [a.grad, p, p.grad_fn is not None]

    same(torch, run)


@pytest.mark.parametrize("changed", ["first", "second", "both"])
def test_in_place_change_of_an_output_of_a_two_output_function(torch, changed):
    """`t1, t2 = Two.apply(a, b)` then `t1 += 3`: PyTorch's backward gets both outputs'
    gradients ([4, 7] and [4, 5]); kiln's got zeros for the one not changed (its outputs are
    pieces of one packed value, views of the forward's values without history), so a.grad
    was [4, 7] instead of [8, 12] and b.grad [0, 0] instead of [4, 5]."""

    def run(lib):
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a.clone(), a + b

            @staticmethod
            def backward(ctx, ga, gab):
                return ga + gab, gab

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 5.0], requires_grad=True)
        t1, t2 = Two.apply(a, b)
        if changed in ("first", "both"):
            t1 += 3
        if changed in ("second", "both"):
            t2 += 3
        (t1 * t2).sum().backward()
        return [a.grad, b.grad, t1, t2]

    same(torch, run)


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
def test_a_dirty_input_not_returned_is_refused(torch, grad):
    """A Function that marks an input dirty (changed in place) but does not return it is
    refused (RuntimeError), as PyTorch's: the input's history would not tell the change. kiln
    ran it, leaving the changed input with its old history."""

    def run(lib):
        class AddInto(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                a.add_(b)
                ctx.mark_dirty(a)
                return a.clone(), a + b

            @staticmethod
            def backward(ctx, ga, gab):
                return ga + gab, ga + 2 * gab

        a = lib.ones(2, requires_grad=True)
        b = lib.ones(2, requires_grad=grad)
        return _raises(lambda: AddInto.apply(a.clone(), b))

    same(torch, run)


@pytest.mark.parametrize("where", ["tensor", "view"])
def test_retain_grad_follows_an_in_place_change(torch, where):
    """`y.retain_grad()` then `y.mul_(3)`: `.grad` is the gradient of y's new value, as
    PyTorch's (the retain moves to the new history); kiln kept the gradient of the old
    value (y.grad [3, 3, 3] where PyTorch gives [1, 1, 1]). On a view changed in place
    whose gradient the backward does not compute, PyTorch leaves `.grad` None."""

    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        t = y if where == "tensor" else y[:2]
        t.retain_grad()
        t.mul_(3)
        (y * 1).sum().backward()
        return [t.grad, x.grad]

    same(torch, run)


# -- under kn.compile ---------------------------------------------------------------------


def _full_slice_hook_loss(lib, x):
    h = x[:]
    h.register_hook(lambda g: g * 2)
    return (x * 3 + h).sum()


def _two_output_function_changed_loss(lib, a, b):
    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, gab

    t1, t2 = Two.apply(a, b)
    t1 += 3
    return (t1 * t2).sum()


def _function_grad_to_sum_loss(lib, x):
    class Expand(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.expand(2, 3)

    return Expand.apply(x).sum()


@pytest.mark.parametrize(
    "loss, args",
    [
        (_full_slice_hook_loss, ([[1.0, 2.0]],)),
        (_two_output_function_changed_loss, ([1.0, 2.0], [3.0, 5.0])),
        (_function_grad_to_sum_loss, ([[1.0, 1.0, 1.0]],)),
    ],
    ids=["full_slice_hook", "two_output_function_changed", "function_grad_to_sum"],
)
def test_compiled_losses_give_torchs_gradients(torch, loss, args):
    """The scenarios above as a kn.compile'd loss (backward outside), twice (the second call
    runs the cached program), against eager PyTorch. Under kn.compile, `x[:]` returned x
    itself too, so the hook on it doubled x's whole gradient ([8, 8]; PyTorch [5, 5])."""

    def run(lib, jit):
        xs = [lib.tensor(a, requires_grad=True) for a in args]
        f = jit(lambda *a: loss(lib, *a))
        out = []
        for _ in range(2):
            for x in xs:
                x.grad = None
            value = f(*xs)
            value.backward()
            out.append([value] + [x.grad for x in xs])
        return out

    _compare(
        outcome(lambda lib: run(lib, identity), torch),
        outcome(lambda lib: run(lib, kn.compile), kn),
    )


def test_autograd_grad_of_a_hooked_non_leaf_the_backward_ends_at(torch):
    """autograd.grad(out, y) of a non-leaf y with a tensor hook: where the backward goes no
    further than y, PyTorch runs y's hooks before taking its gradient ([6, 6] with a hook
    doubling it); where it goes on (x is asked for too), it takes the gradient as it
    arrives and the hook changes only what flows on. kiln took it before the hooks in both
    cases ([3, 3] in the first)."""

    def run(lib):
        out = []
        for names in (["y"], ["x"], ["y", "x"], ["x", "y"]):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.register_hook(lambda g: g * 2)
            inputs = [{"x": x, "y": y}[n] for n in names]
            out.append(list(lib.autograd.grad((y * 3).sum(), inputs)))
        return out

    same(torch, run)


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non_leaf"])
@pytest.mark.parametrize("change", ["size", "dtype"])
def test_a_hook_that_changes_the_gradients_size_or_type_is_refused(torch, leaf, change):
    """A tensor hook returning a gradient of another shape or dtype is refused, as PyTorch's
    (RuntimeError "hook ... has changed the size of value"); kiln stored a (3,) gradient in
    the .grad of a (2,) leaf, and a float64 one in a float32 leaf's .grad."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        t = x if leaf else x * 1
        t.register_hook(lambda g: lib.ones(3) if change == "size" else g.double())
        return [_raises(lambda: (t * 2).sum().backward()), x.grad]

    same(torch, run)


def test_grad_fn_metadata_is_a_dict_kept_with_the_node(torch):
    """`grad_fn.metadata`: PyTorch's dict for the user's data on a node (kiln raised
    AttributeError)."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.grad_fn.metadata["step"] = 3
        z = y + 1
        return [y.grad_fn.metadata, z.grad_fn.next_functions[0][0].metadata, z.grad_fn.metadata]

    same(torch, run)


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non_leaf"])
def test_a_hook_returning_no_tensor_is_a_type_error(torch, leaf):
    """PyTorch raises TypeError ("expected Variable, but hook returned 'float'"); kiln raised
    AttributeError later."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        t = x if leaf else x * 1
        t.register_hook(lambda g: 3.0)
        return [_raises(lambda: (t * 2).sum().backward()), x.grad]

    same(torch, run)


@pytest.mark.parametrize(
    "options",
    [{}, {"reduction": "sum"}, {"ignore_index": 1}, {"label_smoothing": 0.2}, {"weight": True}],
    ids=["mean", "sum", "ignore_index", "label_smoothing", "weight"],
)
def test_second_derivative_of_cross_entropy(torch, options):
    """A Hessian-vector product through F.cross_entropy with class indices (create_graph,
    then autograd.grad of the gradient): PyTorch differentiates its backward; kiln refused
    (MissingDerivativeError: no derivative for log_softmax_take_grad). Float64 logits, values
    compared with rtol=1e-6."""

    def run(lib):
        logits = lib.tensor(
            [[0.3, -0.7, 1.2], [-1.1, 0.4, 0.9], [0.5, 0.5, -0.2]],
            dtype=lib.float64,
            requires_grad=True,
        )
        kw = dict(options)
        if kw.pop("weight", False):
            kw["weight"] = lib.tensor([0.5, 2.0, 1.0], dtype=lib.float64)
        loss = lib.nn.functional.cross_entropy(logits, lib.tensor([0, 2, 1]), **kw)
        (g,) = lib.autograd.grad(loss, logits, create_graph=True)
        v = lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0], [2.0, 1.0, -1.0]], dtype=lib.float64)
        (hv,) = lib.autograd.grad((g * v).sum(), logits)
        return [loss, g, hv]

    same(torch, run)


@pytest.mark.parametrize("weights", [[1.0, 1.0, 1.0], [1.0, -2.0, 0.5], [-1.0, -1.0, -3.0]])
def test_second_derivative_of_logcumsumexp(torch, weights):
    """The Hessian of sum(w * logcumsumexp(x)): PyTorch's is full; kiln's was diagonal where
    every weight had one sign (w = ones: [[1.98, 0, 0], ...] for torch's [[0.419, -0.251,
    -0.168], ...]): the backward's part for the absent sign is a scan of -inf values, whose
    own derivative is NaN, and that NaN cotangent was then masked to zero. As PyTorch's, the
    absent part is now the dtype's lowest finite value. Float64, checked against finite
    differences of torch's gradient too."""

    def run(lib):
        x = lib.tensor([0.3, -0.5, 1.0], dtype=lib.float64, requires_grad=True)
        y = lib.logcumsumexp(x, 0)
        (g,) = lib.autograd.grad((y * lib.tensor(weights, dtype=lib.float64)).sum(), x,
                                 create_graph=True)  # fmt: skip
        rows = [lib.autograd.grad(g[i], x, retain_graph=True)[0] for i in range(3)]
        return [g, lib.stack(rows)]

    same(torch, run)


@pytest.mark.parametrize("loss", ["logsigmoid", "bce_with_logits"])
def test_second_derivative_at_zero_of_logsigmoid_and_bce_with_logits(torch, loss):
    """d2/dx2 logsigmoid(x) at x = 0 is -1/4 (PyTorch's); kiln gave 0, its stable form
    `max(x, 0) + log1p(exp(-|x|))` having |x|'s zero derivative there. BCE with logits (same
    form) at a logit of 0, a zero-initialized output layer's: 1/4, kiln 0. Float64."""

    def run(lib):
        x = lib.tensor([0.0, 0.5, -2.0], dtype=lib.float64, requires_grad=True)
        if loss == "logsigmoid":
            y = lib.nn.functional.logsigmoid(x)
        else:
            t = lib.tensor([1.0, 0.0, 1.0], dtype=lib.float64)
            y = lib.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return [y, g, h]

    same(torch, run)
