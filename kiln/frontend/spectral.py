"""The short-time Fourier transform and its inverse, PyTorch's `torch.stft` and `torch.istft`:
frames of the signal (`unfold`), windowed, through `kn.fft`; the inverse overlaps and adds
the frames back (`fold`) and divides by the summed squared window. Composites: their
gradients come from the ops they are made of."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeMismatchError, ShapeError, UsageError, call_error
from . import fft as F
from . import math as m
from . import shape as s
from .complex_numbers import view_as_complex, view_as_real
from .core import lift

__all__ = ["istft", "stft"]


def _window(window, win_length: int, n_fft: int, like, fn: str):
    """The window (ones if None) zero-padded in the middle of `n_fft` points."""
    if window is None:
        window = np.ones(win_length, dt.to_real(like.dtype))
    (w,) = lift(window, context=(like,))
    if w.ndim != 1 or w.shape[0] != win_length:
        raise call_error(
            ShapeError, f"{fn}: expected a 1D window tensor of size equal to win_length="
            f"{win_length}, but got window with size {list(w.shape)}", fn, w,
        )  # fmt: skip
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        w = s.pad(w, ((left, n_fft - win_length - left),))
    return w


def _lengths(n_fft, hop_length, win_length, fn):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if n_fft <= 0 or hop <= 0 or not 0 < win <= n_fft:  # (PyTorch's RuntimeError)
        raise UsageError(
            f"{fn}: expected 0 < n_fft, 0 < hop_length and 0 < win_length <= n_fft, got "
            f"n_fft={n_fft}, hop_length={hop}, win_length={win}"
        )
    return hop, win


def stft(
    input, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,  # noqa: A002
    pad_mode: str = "reflect", normalized: bool = False, onesided=None, return_complex=None,
    align_to_window=None,
):  # fmt: skip
    """The short-time Fourier transform of a signal (L,) or batch (B, L): (B?, n_fft // 2 + 1
    or n_fft, frames), as PyTorch's `torch.stft` (frames every `hop_length` samples, windowed,
    the signal padded by n_fft // 2 at both ends with `pad_mode` when `center`). Without
    `center`, a window shorter than n_fft sits in the middle of each n_fft frame; with
    `align_to_window` each frame's samples start where the window does instead (frame t
    windows samples t * hop_length onwards).

    >>> import kiln as kn
    >>> kn.stft(kn.ones(8), 4, return_complex=True).shape  # 1 + 8 // hop frames, hop = 4 // 4
    kiln.Size([3, 9])
    """
    from ..nn import functional as nnf

    (x,) = lift(input)
    if x.dtype.kind not in "fc":  # (PyTorch's RuntimeError)
        raise call_error(
            DTypeMismatchError, "stft: expected a tensor of floating point or complex values, "
            f"got {x.dtype}", "stft", x,
        )  # fmt: skip
    if return_complex is None:
        if x.dtype.kind != "c" and not (window is not None and lift(window)[0].dtype.kind == "c"):
            raise call_error(
                UsageError, "stft requires the return_complex parameter be given for real "
                "inputs, and will further require that return_complex=True in a future "
                "PyTorch release.", "stft", x,
            )  # fmt: skip
        return_complex = True
    if x.ndim not in (1, 2):
        raise call_error(ShapeError, f"stft: expected a 1D or 2D tensor, got {x.ndim}D", "stft", x)
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    batched = x.ndim == 2
    if not batched:
        x = s.reshape(x, (1, x.shape[0]))
    if center and align_to_window is not None:
        raise call_error(UsageError, "stft align_to_window should only be set when center = "
                         "false", "stft", x)  # fmt: skip
    if center:
        pad = n_fft // 2
        x = s.reshape(nnf.pad(s.reshape(x, (x.shape[0], 1, x.shape[1])), (pad, pad),
                              mode=pad_mode), (x.shape[0], -1))  # fmt: skip
    if align_to_window and win < n_fft:  # zeros before and after: the window's slot reads t*hop
        left = (n_fft - win) // 2
        x = nnf.pad(x, (left, n_fft - win - left))
    length = x.shape[1]
    if not 0 < n_fft <= length:
        raise call_error(
            ShapeError, f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}", "stft", x
        )  # fmt: skip
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, x, "stft")  # (B, T, n_fft)
    real = frames.dtype.kind != "c"
    onesided = real if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if onesided:
        if not real:
            raise call_error(
                UsageError, "Cannot have onesided output if window or input is complex",
                "stft", x,
            )  # fmt: skip
        spectrum = F.rfft(frames, dim=-1, norm=norm)
    else:
        spectrum = F.fft(frames, dim=-1, norm=norm)
    out = s.transpose(spectrum, 1, 2)
    if not batched:
        out = s.reshape(out, tuple(out.shape[1:]))
    return out if return_complex else view_as_real(out)


def istft(
    input, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,  # noqa: A002
    normalized: bool = False, onesided=None, length=None, return_complex: bool = False,
):  # fmt: skip
    """The inverse of `stft`: the signal whose short-time transform is `input` (B?, freqs,
    frames), by overlap-add divided by the summed squared window, as PyTorch's `torch.istft`;
    with `return_complex` (and a two-sided `input`) a complex signal.

    >>> import kiln as kn
    >>> x = kn.arange(8.0)
    >>> window = kn.hann_window(4)
    >>> y = kn.istft(kn.stft(x, 4, window=window, return_complex=True), 4, window=window)
    >>> bool(kn.allclose(y, x[:8], atol=1e-5))
    True
    """
    from ..nn import functional as nnf

    (z,) = lift(input)
    if z.dtype.kind != "c":
        if z.ndim and z.shape[-1] == 2:
            raise call_error(
                UsageError, "istft requires a complex-valued input tensor matching the output "
                "from stft with return_complex=True.", "istft", z,
            )  # fmt: skip
        z = view_as_complex(z)
    if z.ndim not in (2, 3):
        raise call_error(
            ShapeError, f"istft: expected a 2D or 3D tensor, got {z.ndim}D", "istft", z
        )
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    batched = z.ndim == 3
    if not batched:
        z = s.reshape(z, (1, *z.shape))
    freqs, frames_n = z.shape[1], z.shape[2]
    onesided = freqs != n_fft if onesided is None else onesided
    if onesided and freqs != n_fft // 2 + 1:
        raise call_error(
            ShapeError, f"istft: expected the frequency dimension (3rd to the last) of the input "
            f"tensor to match n_fft / 2 + 1 when onesided=True, but got {freqs}", "istft", z,
        )  # fmt: skip
    if not onesided and freqs != n_fft:
        raise call_error(
            ShapeError, f"istft: expected the frequency dimension (3rd to the last) of the input "
            f"tensor to match n_fft when onesided=False, but got {freqs}", "istft", z,
        )  # fmt: skip
    complex_window = window is not None and lift(window)[0].dtype.kind == "c"
    if return_complex and onesided:
        raise call_error(UsageError, "Cannot have onesided output if window or input is "
                         "complex", "istft", z)  # fmt: skip
    if complex_window and not return_complex:
        raise call_error(UsageError, "Complex windows are incompatible with "
                         "return_complex=False", "istft", z)  # fmt: skip
    norm = "ortho" if normalized else "backward"
    spectrum = s.transpose(z, 1, 2)  # (B, T, freqs)
    if return_complex:  # a complex signal: the inverse of the whole spectrum
        frames = F.ifft(spectrum, n=n_fft, dim=-1, norm=norm)
    else:  # a real signal: its half spectrum, as PyTorch's (the rest is ignored)
        frames = F.irfft(spectrum[:, :, : n_fft // 2 + 1], n=n_fft, dim=-1, norm=norm)
    values = _window_values(window, win, n_fft)
    dtype = dt.promote(frames.dtype, values.dtype)  # (a float64 window: a float64 signal)
    if dtype != frames.dtype:
        frames = m.cast(frames, dtype)
    values = values.astype(dtype)
    total = n_fft + hop * (frames_n - 1)

    def overlap_add(frames):  # (B, T, n_fft) -> (B, total)
        out = nnf.fold(s.transpose(frames, 1, 2), output_size=(1, total),
                       kernel_size=(1, n_fft), stride=(1, hop))  # fmt: skip
        return s.reshape(out, (out.shape[0], total))

    # a window that requires grad: its gradient through the frames and the envelope too
    graded = getattr(window, "requires_grad", False) and not hasattr(window, "graph")
    w = lift(values, context=(frames,))[0]
    if graded:
        w = m.cast(_window(window, win, n_fft, frames, "istft"), dtype)
    frames = frames * w
    signal = overlap_add(frames)
    envelope = _envelope(values, n_fft, hop, frames_n, total)
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + int(length)
    usable = envelope[start : min(end, total)]
    if usable.size and np.abs(usable).min() < 1e-11:
        raise call_error(
            UsageError, "istft: window overlap add min: "
            f"{float(np.abs(usable).min())} (the window fails the NOLA condition)", "istft", z,
        )  # fmt: skip
    (env,) = lift(envelope.astype(signal.dtype if envelope.dtype.kind == "c"
                                  else dt.to_real(signal.dtype)), context=(signal,))  # fmt: skip
    if graded:  # Σ_t window²(n - t·hop) of the window itself
        env = overlap_add(s.reshape(w * w, (1, 1, n_fft)).expand(1, frames_n, n_fft))[0]
    signal = signal[:, start : min(end, total)] / env[start : min(end, total)]
    if end > total:
        signal = s.pad(signal, ((0, 0), (0, end - total)))
    return signal if batched else s.reshape(signal, (signal.shape[1],))


def _window_values(window, win_length: int, n_fft: int) -> np.ndarray:
    """istft's window as an array (ones if None), zero-padded in the middle of `n_fft` points:
    the overlap-add divides by its squares, so it must be a value, not a graph input."""
    if window is None:
        values = np.ones(win_length, np.float32)  # (promotes to any signal's dtype)
    elif hasattr(window, "graph"):  # a Symbol: only a constant has a value
        if window.op.name != "constant":
            raise UsageError("istft: the window must be a constant (a tensor or an array)")
        values = np.asarray(window.node.attrs["value"].array)
    else:
        values = np.asarray(window.detach().numpy() if hasattr(window, "detach") else window)
    if values.shape != (win_length,):
        raise ShapeError(
            f"istft: expected a 1D window tensor of size equal to win_length={win_length}, "
            f"but got window with size {list(values.shape)}"
        )
    left = (n_fft - win_length) // 2
    return np.pad(values, (left, n_fft - win_length - left))


def _envelope(window, n_fft, hop, frames_n, total):
    """Σ_t window²(n - t·hop): what the overlap-add of the windowed frames is divided by (of
    a complex window, its complex square, as PyTorch's: the frames carry window² then)."""
    squared = window.astype(np.complex128 if window.dtype.kind == "c" else np.float64) ** 2
    env = np.zeros(total, squared.dtype)
    for t in range(frames_n):
        env[t * hop : t * hop + n_fft] += squared
    return env
