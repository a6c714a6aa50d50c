"""kiln's exceptions and the one format every error message uses."""

from __future__ import annotations


class KilnError(Exception):
    """Base class of every error kiln raises on purpose."""


class ShapeError(KilnError, ValueError, RuntimeError):
    """Shapes that cannot work together (build time, or when feeds bind symbolic dims).
    PyTorch raises RuntimeError there (`cat`, `matmul`, `view`, broadcasting): this is both."""


class ShapeMismatchError(ShapeError, RuntimeError):
    """A shape or memory layout that does not fit where PyTorch raises RuntimeError: `item()`
    or `bool()` of several elements, `view()` of an incompatible layout, an in-place result of
    another shape, a write into a broadcast (shared-memory) view, an input of the wrong number
    of dims for a layer. Both a ShapeError and a RuntimeError."""


class ShapeAssertionError(ShapeError, AssertionError):
    """Shapes that a PyTorch function checks with `assert` (AssertionError):
    MultiheadAttention's query, key, value and key_padding_mask of the wrong number of dims or
    of sizes that do not fit. Both a ShapeError and an AssertionError."""


class UnsupportedShapeError(ShapeError, NotImplementedError):
    """A number of dims (or of sizes) a function has no form for where PyTorch raises
    NotImplementedError (`F.pad` in reflect mode of one (left, right) pair on a 4-D input):
    a ShapeError and a NotImplementedError (a RuntimeError) both."""


class DTypeError(KilnError, TypeError):
    """A dtype an op does not accept, or a cast that would lose information."""


class UnsupportedDTypeError(DTypeError, NotImplementedError):
    """An op that has no kernel for a dtype (`&` on floats, `-` on bools). PyTorch raises
    NotImplementedError ("not implemented for 'Float'") or RuntimeError there; NotImplementedError
    is a RuntimeError, so this is all three."""


class DimTypeError(ShapeError, TypeError):
    """A dim argument of the wrong type (a tuple where the op takes one int): PyTorch's
    argument parser raises TypeError there."""


class DTypeMismatchError(DTypeError, RuntimeError):
    """Operands whose dtypes must be equal and are not: PyTorch's matrix products do not
    promote (float32 @ float64 raises RuntimeError there), so this is both a DTypeError and a
    RuntimeError."""


class DeviceError(KilnError, RuntimeError):
    """A device that is unusable or tensors on different devices."""


class DeviceNotBuiltError(DeviceError, AssertionError):
    """A device type PyTorch names that kiln has no backend for (`xpu`, `mtia`): PyTorch,
    built without it, fails an assertion there ("Torch not compiled with XPU enabled"), so this
    is both a DeviceError and an AssertionError."""


class ArgumentAssertionError(KilnError, AssertionError):
    """An argument of a type or value a function asserts against: PyTorch's `sym_max`,
    `sym_min` and `sym_ite` check their arguments with `assert` (AssertionError), so this is
    one, as are the checks of `EmbeddingBag`'s `padding_idx` and `from_pretrained`'s table."""


class GraphError(KilnError, RuntimeError):
    """A graph that is malformed, frozen, or cannot be run as asked."""


class SymbolAttributeError(GraphError, AttributeError):
    """A Tensor attribute a graph value (Symbol) cannot have, with why (`x.grad`: it has no
    autograd tape): an AttributeError too, so `getattr(x, "grad", None)` still answers."""


class AutogradError(KilnError, RuntimeError):
    """Eager autograd refused, where PyTorch's autograd raises RuntimeError: backward from a
    tensor without a grad_fn or from a non-scalar without a gradient, an in-place change of a
    leaf that requires grad, an inference tensor saved for backward, a missing derivative."""


class UnrecordedStepError(AutogradError, NotImplementedError):
    """An optimizer step that PyTorch records with `differentiable=True` (of a tensor with a
    history), which kiln's autograd does not: NotImplementedError, a RuntimeError too."""


class MissingDerivativeError(AutogradError, NotImplementedError):
    """A derivative that is not defined (`igamma` with respect to its first input, an op
    without a vjp): PyTorch raises NotImplementedError ("the derivative for ... is not
    implemented"), a RuntimeError too."""


class SavedTensorError(AutogradError):
    """A saved value that backward needs is gone (a second backward without `retain_graph`)
    or was changed in place since the op saved it."""


class NumericsError(KilnError, FloatingPointError, RuntimeError):
    """A NaN or Inf produced while numerics checks are on (`check_numerics=True`,
    `KILN_CHECKS=2`), where the run that found it changed no Variable; or a non-finite norm that
    `clip_grad_norm_(error_if_nonfinite=True)` refuses. PyTorch raises RuntimeError for the
    latter, so this is both a FloatingPointError and a RuntimeError."""


class GraphFormatError(KilnError, ValueError):
    """A graph file (JSON) that is malformed, truncated or hostile."""


class IndexOutOfRangeError(KilnError, IndexError, RuntimeError):
    """An index, class label or id outside its dimension, found when the kernel runs (it
    depends on the data). PyTorch raises IndexError (embedding, index_select, cross_entropy)
    or RuntimeError (gather, one_hot) there: this is both. `reason` is the message without
    the node's context, which graph mode adds."""

    reason: str = ""


class IntegerDivisionByZeroError(KilnError, ZeroDivisionError, RuntimeError):
    """An integer `//`, `%`, `fmod` or `div(rounding_mode=...)` by zero, found when the kernel
    runs on the CPU, where PyTorch raises `RuntimeError: ZeroDivisionError` (NumPy warns and
    gives 0): this is both a ZeroDivisionError and a RuntimeError. `reason` is the message
    without the node's context, which graph mode adds."""

    reason: str = ""


class IndexDTypeError(DTypeError, IndexError):
    """An index tensor of a dtype the op does not take (index_fill's int32), where PyTorch
    raises IndexError: this is one, and a DTypeError."""


class IndexOutOfBoundsError(ShapeError, IndexOutOfRangeError):
    """An int index outside its dim, or more indices than dims, found when the op is built
    (`x[5]` of a dim of size 3). PyTorch raises IndexError there: this is one, and a
    ShapeError, as every error of a shape rule is."""


class _CalledAt:
    """Adds the user's line that made the call, `(called at train.py:12)`, to the message:
    the one format's location, for errors a function raises about its own arguments. `site`
    keeps it (None where no frame outside kiln called)."""

    site: str | None = None

    def __init__(self, message: str = ""):
        from .graph.core import user_site  # errors.py is imported by every layer: on use

        self.site = user_site()
        known = not self.site or f"called at {self.site}" in message  # (`call_error`'s)
        super().__init__(message if known else f"{message} (called at {self.site})")

    def __reduce__(self):  # pickled and rebuilt with the message it has, site included
        return (_rebuilt, (type(self), str(self), self.site))


def _rebuilt(cls, message, site):
    error = Exception.__new__(cls)
    Exception.__init__(error, message)
    error.site = site
    return error


class ArgumentError(_CalledAt, KilnError, ValueError):
    """A Python argument with a value the function does not take: a hyperparameter out of
    range (`lr=-1`, `dropout(p=2)`), options that conflict, a size or mode kiln does not know.
    PyTorch raises ValueError there: this is one."""


class UnknownModeError(ArgumentError, NotImplementedError):
    """A mode name the function does not know where PyTorch raises NotImplementedError
    (`F.pad(x, p, mode="typo")`: "Unrecognised padding mode typo"): an ArgumentError (a
    ValueError) and a NotImplementedError (a RuntimeError) both."""


class ArgumentTypeError(_CalledAt, KilnError, TypeError):
    """A Python argument of a type the function does not take (a string where a number goes,
    a `gradient=` that is not a tensor), or an unknown keyword. PyTorch raises TypeError
    there: this is one."""


class ScalarOverflowError(_CalledAt, KilnError, OverflowError):
    """A Python int that no 64-bit integer holds (below -2**63, or 2**64 and above) given as
    an op's number: PyTorch raises OverflowError converting it, whatever the tensor's dtype."""


class UsageError(_CalledAt, KilnError, RuntimeError):
    """A call PyTorch refuses with RuntimeError: an argument out of range that PyTorch checks
    in its kernels (`softshrink` with a negative lambda, `random_` with from >= to, a
    probability outside [0, 1]), or a call out of order (`GradScaler.unscale_()` after
    `step()`, LBFGS's `step()` without a closure)."""


def describe_types(symbols) -> str:
    """`x:f32[batch,3], w:f32[3,4]` for a sequence of Symbols (or anything with type_str);
    a string stands for itself (eager mode's `f32[3] on cpu`)."""
    return ", ".join(s if isinstance(s, str) else f"{s.name}:{s.type_str()}" for s in symbols)


def node_message(
    message: str,
    *,
    op: str,
    name: str | None = None,
    site: str | None = None,
    inputs=(),
    called: bool = False,
) -> str:
    """kiln's one-paragraph format: what failed, which node, where, on what.

    Graph mode names the node and where the user created it; eager mode has no node names, and
    an error of a call (`backward()`) says where it was called (`called=True`).

    >>> node_message("shapes differ", op="add", name="add_1", site="m.py:3")
    "shapes differ (node 'add_1', op add, created at m.py:3)"
    >>> node_message("no grad", op="backward", site="m.py:9", called=True,
    ...              inputs=["f32[3] on cpu"])
    'no grad (op backward, called at m.py:9); inputs: f32[3] on cpu'
    """
    verb = "called" if called else "created"
    where = [f"node '{name}'" if name else None, f"op {op}", f"{verb} at {site}" if site else None]
    text = f"{message} ({', '.join(w for w in where if w)})"
    if inputs:
        text += f"; inputs: {describe_types(inputs)}"
    return text


def node_error(cls, message: str, **context):
    """`cls` with the message in the one format (`node_message`'s keywords: op, name, site,
    inputs, called).

    >>> str(node_error(ShapeError, "shapes differ", op="add", name="add_1", site="m.py:3"))
    "shapes differ (node 'add_1', op add, created at m.py:3)"
    """
    return cls(node_message(message, **context))


class LinAlgError(KilnError, RuntimeError):
    """A factorization that cannot be completed: a matrix that is not positive-definite
    (`cholesky`), as PyTorch's `torch.linalg.LinAlgError` (a RuntimeError)."""


class DistError(KilnError, RuntimeError):
    """A failure of `kiln.distributed` (PyTorch's `torch.distributed.DistError`)."""


class DistBackendError(DistError):
    """A collective that failed or did not complete within the process group's timeout:
    another rank died, raised, or did not call it (PyTorch's `DistBackendError`)."""


def call_error(cls, message: str, op: str, *values):
    """`cls` in the one format for a check a function makes itself (not an op's shape rule):
    the op, the user's line that called it, and the values among `values` that are Symbols
    (`x:f32[2,3]`) or eager tensors (`f32[2,3] on cpu`); other values are left out.

    >>> import kiln as kn
    >>> e = call_error(ShapeMismatchError, "bad", "glu", kn.zeros(3), 2.0)
    >>> str(e).replace(e.site, "SITE"), isinstance(e, RuntimeError)
    ('bad (op glu, called at SITE); inputs: f32[3] on cpu', True)
    """
    from . import dtypes as dt  # errors.py is imported by every layer: it imports on use
    from . import shapes as sh
    from .graph.core import user_site

    inputs = []
    for v in values:
        if hasattr(v, "type_str"):  # a Symbol
            inputs.append(v)
        elif hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "device"):
            inputs.append(f"{dt.short_name(v.dtype)}{sh.format_shape(v.shape)} on {v.device}")
    site = user_site()
    error = node_error(cls, message, op=op, site=site, called=True, inputs=inputs)
    error.site = site
    return error


class LayoutError(KilnError, NotImplementedError):
    """An op given a tensor of a layout it has no form for (a sparse tensor where only strided
    ones work): PyTorch raises NotImplementedError (a RuntimeError) there."""
