"""`kn.autograd.gradcheck` and `gradgradcheck` of eager functions, as PyTorch's
`torch.autograd.gradcheck`: every derivative of the outputs' real (and imaginary) parts with
respect to the inputs' real (and imaginary) parts, by the tape and by central differences."""

from __future__ import annotations

import warnings

import numpy as np

from . import dtypes as dt
from .eager import Tensor, enable_grad, tensor
from .eager.autograd import grad as autograd_grad
from .errors import ArgumentError, AutogradError

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(AutogradError):
    """A gradient that differs from its finite-difference estimate (PyTorch's
    `torch.autograd.gradcheck.GradcheckError`, a RuntimeError)."""


def _as_tuple(values) -> tuple:
    return (values,) if isinstance(values, Tensor) else tuple(values)


def _checked_options(options: dict) -> None:
    """PyTorch's other options: the checks kiln does not make raise, the rest are accepted
    (`fast_mode`: kiln always checks every derivative, which PyTorch's slow mode does)."""
    for name in ("check_batched_grad", "check_batched_forward_grad", "check_forward_ad"):
        if options.pop(name, False):
            raise ArgumentError(f"gradcheck: {name}=True is not supported by kiln")
    for name in ("nondet_tol", "check_undefined_grad", "check_grad_dtypes", "fast_mode",
                 "check_backward_ad", "masked"):  # fmt: skip
        options.pop(name, None)
    if options:
        raise ArgumentError(f"gradcheck: unknown options {sorted(options)}")


def _parts(dtype) -> tuple:
    """The units of the real parts of a value: 1, and 1j for a complex one."""
    return (1.0, 1j) if np.dtype(dtype).kind == "c" else (1.0,)


def _numeric(func, inputs, i: int, outputs, eps: float) -> list[np.ndarray]:
    """For each output, the central differences of its elements (as complex numbers where
    it is complex) in each real part of input i's elements: shape (out.size, in.size,
    parts of the input)."""
    # copies that require grad as the inputs do (a func that differentiates, gradgradcheck's,
    # needs them to), whose memory is changed between calls
    base = [x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
            for x in inputs]  # fmt: skip
    flat = base[i]._data.reshape(-1)  # a view: writes reach base[i]
    units = _parts(base[i].dtype)
    result = [np.zeros((o.numel(), flat.size, len(units)), np.complex128) for o in outputs]
    for j in range(flat.size):
        saved = flat[j]
        for p, unit in enumerate(units):
            values = []
            for step in (eps, -eps):
                flat[j] = saved + unit * step
                with enable_grad():
                    outs = _as_tuple(func(*base))
                values.append([o.detach().numpy().reshape(-1) for o in outs])
            flat[j] = saved
            for k, (plus, minus) in enumerate(zip(*values)):
                result[k][:, j, p] = (plus - minus) / (2 * eps)
    return result


def _analytic(outputs, inputs, wrt) -> list[list[np.ndarray]]:
    """[output][input] the tape's derivatives of each output element's real (and imaginary)
    part in each real part of the input's elements, shaped as `_numeric`'s."""
    result = []
    for o in outputs:
        rows = [np.zeros((o.numel(), inputs[i].numel(), len(_parts(inputs[i].dtype))),
                         np.complex128) for i in wrt]  # fmt: skip
        for k in range(o.numel()):
            for out_unit in _parts(o.dtype):
                # a cotangent of unit at k: the gradient of the real value Re(conj(unit) o_k)
                seed = np.zeros(o.shape, o.dtype)
                seed.reshape(-1)[k] = out_unit
                grads = autograd_grad(o, [inputs[i] for i in wrt], tensor(seed),
                                      retain_graph=True, allow_unused=True)  # fmt: skip
                for row, g in zip(rows, grads):
                    if g is None:
                        continue
                    g = g.detach().numpy().reshape(-1)
                    # PyTorch's convention: d/dRe + i d/dIm of that real value
                    parts = (g.real, g.imag) if g.dtype.kind == "c" else (g,)
                    for p, part in enumerate(parts):
                        row[k, :, p] += out_unit * part
        result.append(rows)
    return result


def _report(k: int, i: int, analytic: np.ndarray, numeric: np.ndarray, bad) -> str:
    worst = np.unravel_index(np.argmax(np.where(bad, np.abs(analytic - numeric), -1)), bad.shape)
    e, j, p = (int(v) for v in worst)
    part = " (its imaginary part)" if p else ""
    return (
        f"Jacobian mismatch for output {k} with respect to input {i}: "
        f"{int(bad.sum())} of {bad.size} derivatives differ; worst: output element {e} in "
        f"input element {j}{part}: numerical {numeric[worst]:.6g}, analytical "
        f"{analytic[worst]:.6g}"
    )


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **options) -> bool:  # fmt: skip
    """Checks the gradients of `func` (eager Tensors to a Tensor or a tuple of them) at
    `inputs` against central differences, as PyTorch's `torch.autograd.gradcheck`: every
    derivative of every output element with respect to every element of each input that
    requires grad must satisfy `|analytical - numerical| <= atol + rtol * |numerical|`. A
    complex input is perturbed in its real and its imaginary part, and a complex output is
    checked through both parts (PyTorch's Wirtinger convention). Inputs should be float64
    or complex128 (others warn). Returns True; a mismatch raises GradcheckError, or returns
    False with `raise_exception=False`.

    >>> import kiln as kn
    >>> z = kn.tensor([1 + 2j, -0.5j], dtype=kn.complex128, requires_grad=True)
    >>> kn.autograd.gradcheck(lambda z: (z * z).abs(), (z,))
    True
    >>> kn.autograd.gradcheck(lambda z: z.real + z.imag.detach(), (z,), raise_exception=False)
    False
    """
    _checked_options(dict(options))
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ArgumentError("gradcheck expects at least one input tensor to require gradient, "
                            "but none of them have requires_grad=True")  # fmt: skip
    for i in wrt:
        if inputs[i].dtype not in (dt.float64, dt.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex: this check is likely to fail",
                stacklevel=2,
            )
    with enable_grad():
        outputs = [o for o in _as_tuple(func(*inputs))
                   if isinstance(o, Tensor) and dt.is_differentiable(o.dtype)]  # fmt: skip
        analytic = _analytic([o for o in outputs if o.requires_grad], inputs, wrt)
    connected = [o.requires_grad for o in outputs]
    for n, i in enumerate(wrt):
        numeric = _numeric(func, inputs, i, outputs, eps)
        rows = iter(analytic)
        for k, (num, linked) in enumerate(zip(numeric, connected)):
            ana = next(rows)[n] if linked else np.zeros_like(num)
            bad = ~(np.abs(ana - num) <= atol + rtol * np.abs(num))
            if bad.any():
                if not raise_exception:
                    return False
                raise GradcheckError(_report(k, i, ana, num, bad))
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, **options) -> bool:  # fmt: skip
    """Checks the second derivatives of `func`, as PyTorch's `torch.autograd.gradgradcheck`:
    `gradcheck` of the function of (inputs, grad_outputs) that gives the gradients of
    `func`'s outputs with cotangents `grad_outputs` (random ones, fixed for the check, when
    None; they are checked too).

    >>> import kiln as kn
    >>> x = kn.tensor([0.5, -1.0], dtype=kn.float64, requires_grad=True)
    >>> kn.autograd.gradgradcheck(lambda x: (x.exp() * x).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        with enable_grad():
            outputs = _as_tuple(func(*inputs))
        grad_outputs = []
        for o in outputs:
            values = rng.standard_normal((len(_parts(o.dtype)), *o.shape))
            values = values[0] + 1j * values[1] if len(values) == 2 else values[0]
            grad_outputs.append(tensor(np.asarray(values, o.dtype), requires_grad=True))
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        xs, cts = args[:n], args[n:]
        outputs = _as_tuple(func(*xs))
        grads = autograd_grad(outputs, [xs[i] for i in wrt], cts, create_graph=True,
                              allow_unused=True)  # fmt: skip
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, (*inputs, *grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, **options)  # fmt: skip
