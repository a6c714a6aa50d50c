"""PyTorch's spectral tests (test_spectral_ops.py) as an oracle: `kn.fft`'s transforms (their
`n`/`s`, `dim` and `norm`, padding and trimming, result dtypes, gradients of real and complex
inputs, empty and size-1 dims, errors), the frequency helpers and shifts, each a scenario run
on torch and on kiln (pt_oracle.py), eagerly and under `kn.compile`. stft/istft and the window
functions: test_port_pt_fft_stft.py.

Expected values: torch 2.13 (the oracle). Floats agree within rtol 1e-5.
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios

rng = np.random.default_rng(0)
f32, f64 = np.float32, np.float64

R = rng.standard_normal((3, 8)).astype(f32)
R5 = rng.standard_normal((2, 5)).astype(f32)
R3D = rng.standard_normal((2, 3, 4)).astype(f32)
R64 = rng.standard_normal((4, 6)).astype(f64)
C = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))).astype(np.complex64)
C3D = (rng.standard_normal((2, 4, 5)) + 1j * rng.standard_normal((2, 4, 5))).astype(np.complex64)
INTS = np.arange(12, dtype=np.int64).reshape(3, 4)
B = np.array([[True, False, True, True]])
EMPTY = np.zeros((0, 4), f32)
ONE = rng.standard_normal((4, 1)).astype(f32)
NORMS = (None, "backward", "ortho", "forward")

SCENARIOS = Scenarios()
case = SCENARIOS.case


def _all_norms(lib, fn, x, **kw):
    return tuple(fn(x, norm=nm, **kw).resolve_conj() for nm in NORMS)


def _resolved(ys):
    """`ys` with torch's lazy conjugations (ihfft's results, complex gradients) applied."""
    return tuple(y.resolve_conj() if y.is_complex() else y for y in ys)


# -- 1-D transforms: norm, n (padding and trimming), dim --------------------------------------


@case("fft_norms", C)
def _(lib, x):
    return _all_norms(lib, lib.fft.fft, x) + _all_norms(lib, lib.fft.ifft, x)


@case("rfft_irfft_norms", R)
def _(lib, x):
    return _all_norms(lib, lib.fft.rfft, x) + _all_norms(lib, lib.fft.irfft, lib.fft.rfft(x))


@case("hfft_ihfft_norms", C, R)
def _(lib, c, r):
    return _all_norms(lib, lib.fft.hfft, c) + _all_norms(lib, lib.fft.ihfft, r)


@case("fft_n_pad_trim_dim", R, C)
def _(lib, r, c):
    return _resolved(
        (
            lib.fft.fft(r, n=12),
            lib.fft.fft(r, n=3, dim=0),
            lib.fft.ifft(c, n=4, dim=-1),
            lib.fft.fft(c, n=9, dim=0),
            lib.fft.rfft(r, n=5),
            lib.fft.rfft(r, n=11, dim=1),
            lib.fft.irfft(c, n=7),
            lib.fft.irfft(c, n=3, dim=0),
            lib.fft.hfft(c, n=5),
            lib.fft.ihfft(r, n=7),
            lib.fft.ihfft(r, n=2, dim=0),
        )
    )


@case("irfft_default_n_odd_input", R5)
def _(lib, x):
    z = lib.fft.rfft(x)
    return lib.fft.irfft(z), lib.fft.irfft(z, n=5), lib.fft.hfft(z), lib.fft.hfft(z, 5)


# -- dtypes ------------------------------------------------------------------------------------


@case("dtypes_float64_and_complex", R64, C)
def _(lib, r, c):
    return _resolved(
        (
            lib.fft.fft(r),
            lib.fft.rfft(r),
            lib.fft.ihfft(r),
            lib.fft.irfft(c),
            lib.fft.hfft(c),
            lib.fft.fft(c.to(lib.complex128)),
            lib.fft.irfft(c.to(lib.complex128)),
        )
    )


@case("integer_and_bool_inputs_promote", INTS, B)
def _(lib, i, b):
    return _resolved(
        (
            lib.fft.fft(i),
            lib.fft.rfft(i),
            lib.fft.ihfft(i),
            lib.fft.irfft(i),
            lib.fft.hfft(i),
            lib.fft.fftn(i),
            lib.fft.rfft2(i),
            lib.fft.fft(b),
            lib.fft.rfft(b),
        )
    )


@case("float16_refused", R)
def _(lib, x):
    return lib.fft.fft(x.half())


@case("rfft_of_complex_refused", C)
def _(lib, x):
    return lib.fft.rfft(x)


@case("ihfft_of_complex_refused", C)
def _(lib, x):
    return lib.fft.ihfft(x)


# -- 2-D / N-D ---------------------------------------------------------------------------------


@case("fft2_fftn_s_dim_norm", R3D, C3D)
def _(lib, r, c):
    return (lib.fft.fft2(r), lib.fft.fft2(c, s=(3, 7)), lib.fft.fft2(c, dim=(0, 2), norm="ortho"),
            lib.fft.ifft2(c, norm="forward"), lib.fft.fftn(r), lib.fft.fftn(c, s=(3, 3)),
            lib.fft.fftn(c, dim=(2, 0)), lib.fft.ifftn(c, s=(-1, 6), dim=(0, 1)),
            lib.fft.fftn(r, dim=1), lib.fft.ifftn(c, s=(2, 2, 2), norm="ortho"))  # fmt: skip


@case("rfftn_irfftn_s_dim", R3D, C3D)
def _(lib, r, c):
    return (lib.fft.rfft2(r), lib.fft.rfftn(r), lib.fft.rfftn(r, s=(3, 6)),
            lib.fft.rfftn(r, dim=(2, 0)), lib.fft.rfft2(r, dim=(0, 1), norm="forward"),
            lib.fft.irfft2(c), lib.fft.irfftn(c), lib.fft.irfftn(c, s=(3, 9)),
            lib.fft.irfftn(c, dim=(2, 0)), lib.fft.irfft2(c, s=(5, 5), norm="ortho"))  # fmt: skip


@case("hfftn_ihfftn_s_dim", R3D, C3D)
def _(lib, r, c):
    return _resolved((lib.fft.ihfft2(r), lib.fft.ihfftn(r), lib.fft.ihfftn(r, s=(3, 6)),
            lib.fft.ihfftn(r, dim=(2, 0), norm="ortho"), lib.fft.hfft2(c), lib.fft.hfftn(c),
            lib.fft.hfftn(c, s=(3, 9)), lib.fft.hfftn(c, dim=(2, 0), norm="forward"),
            lib.fft.hfft2(c, s=(5, 5))))  # fmt: skip


@case("fftn_empty_dim_list_is_identity", C)
def _(lib, x):
    return lib.fft.fftn(x, dim=()), lib.fft.ifftn(x, dim=[])


@case("rfftn_empty_dim_list_refused", R)
def _(lib, x):
    return lib.fft.rfftn(x, dim=())


# -- gradients ---------------------------------------------------------------------------------


@case("real_input_gradients", Leaf.of(R))
def _(lib, x):
    w = lib.arange(1.0, 9.0) * 0.1
    ys = (lib.fft.fft(x).real * w, lib.fft.fft(x, n=5).imag.sum(), lib.fft.rfft(x).abs() * w[:5],
          lib.fft.rfft(x, n=11, norm="ortho").imag, lib.fft.ihfft(x).real * w[:5],
          lib.fft.fftn(x, s=(2, 6)).imag, lib.fft.rfft2(x).real)  # fmt: skip
    return _resolved(lib.autograd.grad(y.sum(), x)[0] for y in ys)


@case("complex_input_gradients", Leaf.of(C))
def _(lib, x):
    w = lib.arange(1.0, 7.0) * 0.1
    ys = (lib.fft.fft(x).real * w, lib.fft.ifft(x, norm="ortho").imag * w,
          lib.fft.irfft(x) * lib.arange(10.0), lib.fft.irfft(x, n=7),
          lib.fft.hfft(x) * lib.arange(10.0), lib.fft.irfft2(x) * lib.arange(10.0),
          lib.fft.fft2(x, s=(2, 8)).abs())  # fmt: skip
    return _resolved(lib.autograd.grad(y.sum(), x)[0] for y in ys)


@case("irfft_gradient_of_odd_n", Leaf.of(C))
def _(lib, x):
    y = lib.fft.irfft(x, n=11) * lib.arange(11.0)
    return _resolved(lib.autograd.grad(y.sum(), x))


@case("nd_complex_gradients", Leaf.of(C3D))
def _(lib, x):
    w = lib.arange(60.0).reshape(3, 4, 5) * 0.01
    ys = (lib.fft.irfftn(x, s=(3, 4, 5)) * w, lib.fft.hfftn(x, s=(3, 4, 5)) * w,
          lib.fft.ifftn(x, dim=(0, 2), norm="forward").real,
          lib.fft.hfft2(x, s=(4, 5), norm="ortho") * w[0],
          lib.fft.irfft2(x, s=(3, 8)).cos())  # fmt: skip
    return _resolved(lib.autograd.grad(y.sum(), x)[0] for y in ys)


@case("nd_real_gradients", Leaf.of(R3D))
def _(lib, x):
    ys = (lib.fft.ihfftn(x).imag, lib.fft.ihfft2(x, s=(3, 5)).real.exp(),
          lib.fft.rfftn(x, dim=(0, 2), norm="forward").abs(), lib.fft.fftn(x).angle(),
          lib.fft.rfft(x, n=2).real)  # fmt: skip
    return tuple(lib.autograd.grad(y.sum(), x)[0] for y in ys)


@case("tensor_methods_and_out", R, C)
def _(lib, r, c):
    out = lib.empty(0, dtype=lib.complex64)
    lib.fft.fft(r, n=4, out=out)
    out2 = lib.empty(0)
    lib.fft.irfft(c, out=out2)
    return out, out2, lib.fft.fftfreq(3, out=lib.empty(0)), r.stft(4, return_complex=True)


@case("complex128_through_all", C.astype(np.complex128))
def _(lib, x):
    return _resolved((lib.fft.fft(x), lib.fft.irfft(x), lib.fft.hfft(x), lib.fft.ifftn(x),
                      lib.fft.irfft2(x), lib.fft.ihfft(x.real), lib.fft.rfft(x.real)))  # fmt: skip


# -- empty and size-1 dims ---------------------------------------------------------------------


@case("size_one_dims", ONE)
def _(lib, x):
    return _resolved((lib.fft.fft(x), lib.fft.rfft(x), lib.fft.ihfft(x), lib.fft.fft2(x),
            lib.fft.rfftn(x), lib.fft.irfft(x, n=1), lib.fft.irfft(x, n=2)))  # fmt: skip


@case("zero_d_input_fftn_is_identity", np.array(1.5, f32))
def _(lib, x):
    return lib.fft.fftn(x), lib.fft.ifftn(x, norm="ortho")


@case("zero_d_input_fft_refused", np.array(1.5, f32))
def _(lib, x):
    return lib.fft.fft(x)


@case("empty_transformed_dim_refused", EMPTY)
def _(lib, x):
    return lib.fft.fft(x, dim=0)


@case("irfft_of_one_point_refused", ONE)
def _(lib, x):
    return lib.fft.irfft(x)


# -- errors ------------------------------------------------------------------------------------


@case("n_zero_refused", R)
def _(lib, x):
    return lib.fft.fft(x, n=0)


@case("n_negative_refused", R)
def _(lib, x):
    return lib.fft.rfft(x, n=-1)


@case("dim_out_of_range_refused", R)
def _(lib, x):
    return lib.fft.fft(x, dim=2)


@case("repeated_dims_refused", R3D)
def _(lib, x):
    return lib.fft.fftn(x, dim=(0, -3))


@case("s_and_dim_lengths_differ_refused", R3D)
def _(lib, x):
    return lib.fft.fftn(x, s=(2, 2), dim=(0,))


@case("s_longer_than_ndim_refused", R)
def _(lib, x):
    return lib.fft.fftn(x, s=(2, 2, 2))


@case("float_n_refused", R)
def _(lib, x):
    return lib.fft.rfft(x, n=5.0)


@case("dim_list_of_a_1d_transform_refused", R)
def _(lib, x):
    return lib.fft.fft(x, dim=[0])


@case("bad_norm_refused", R)
def _(lib, x):
    return lib.fft.fft(x, norm="bogus")


@case("bad_norm_refused_irfft", C)
def _(lib, x):
    return lib.fft.irfft(x, norm="bogus")


@case("bad_norm_refused_hfft", C)
def _(lib, x):
    return lib.fft.hfft(x, norm="bogus")


@case("bad_norm_refused_without_dims", C)
def _(lib, x):
    return lib.fft.fftn(x, dim=(), norm="bogus")


@case("n_minus_one_refused_irfft", C)
def _(lib, x):
    return lib.fft.irfft(x, n=-1)


@case("s_minus_one_keeps_the_size", R, C)
def _(lib, r, c):
    return lib.fft.fftn(r, s=(-1, 5)), lib.fft.rfftn(r, s=(-1, -1)), lib.fft.irfftn(c, s=(-1,))


@case("empty_transformed_dim_refused_fft2", np.zeros((2, 0), f32))
def _(lib, x):
    return lib.fft.fft2(x)


@case("empty_transformed_dim_refused_rfft", np.zeros((3, 0), f32))
def _(lib, x):
    return lib.fft.rfft(x)


@case("empty_transformed_dim_padded_by_n", np.zeros((2, 0), f32))
def _(lib, x):
    return lib.fft.fft(x, n=4), lib.fft.rfft(x, n=3), lib.fft.irfft(x.to(lib.complex64), n=4)


@case("bfloat16_refused", R)
def _(lib, x):
    return lib.fft.rfft(x.bfloat16())


# -- frequencies and shifts --------------------------------------------------------------------


@case("fftfreq_rfftfreq")
def _(lib):
    return (lib.fft.fftfreq(5), lib.fft.fftfreq(6, d=0.5), lib.fft.rfftfreq(7, 2.0),
            lib.fft.fftfreq(4, dtype=lib.float64), lib.fft.rfftfreq(4, dtype=lib.float64),
            lib.fft.fftfreq(1), lib.fft.rfftfreq(1), lib.fft.fftfreq(0))  # fmt: skip


@case("fftfreq_half_dtypes")
def _(lib):
    b, rb = lib.fft.fftfreq(4, dtype=lib.bfloat16), lib.fft.rfftfreq(5, dtype=lib.bfloat16)
    return b.dtype, b.float(), rb.dtype, rb.float(), lib.fft.fftfreq(4, dtype=lib.float16)


@case("s_as_an_int", R, C)
def _(lib, r, c):
    return (
        lib.fft.fftn(r, s=5),
        lib.fft.rfftn(r, s=6),
        lib.fft.irfftn(c, s=4),
        lib.fft.ifft2(c, s=3, dim=0),
    )


@case("fftfreq_requires_grad")
def _(lib):
    f = lib.fft.fftfreq(4, requires_grad=True)
    return f.requires_grad, f.is_leaf, lib.fft.rfftfreq(4, requires_grad=True).requires_grad


@case("fftfreq_integer_dtype_refused")
def _(lib):
    return lib.fft.fftfreq(4, dtype=lib.int64)


@case("fftfreq_complex_dtype_refused")
def _(lib):
    return lib.fft.fftfreq(4, dtype=lib.complex64)


@case("fftfreq_negative_n_refused")
def _(lib):
    return lib.fft.fftfreq(-1)


@case("fftshift_ifftshift", R3D)
def _(lib, x):
    return (lib.fft.fftshift(x), lib.fft.ifftshift(x), lib.fft.fftshift(x, dim=1),
            lib.fft.ifftshift(x, dim=(0, -1)), lib.fft.fftshift(lib.fft.fftfreq(5)),
            lib.fft.ifftshift(lib.fft.fftfreq(6)))  # fmt: skip


@case("fftshift_of_no_dims_refused", R)
def _(lib, x):
    return lib.fft.fftshift(x, dim=())


@case("fftshift_gradient", Leaf.of(R))
def _(lib, x):
    y = lib.fft.fftshift(x) * lib.arange(24.0).reshape(3, 8)
    return lib.autograd.grad(y.sum(), x)[0]


# -- layouts -----------------------------------------------------------------------------------


@case("strides_of_transposed_inputs", R3D)
def _(lib, x):
    t = x.transpose(0, 2)
    return tuple(y.stride() for y in (lib.fft.fft(t), lib.fft.rfft(t), lib.fft.fftn(t, dim=(0, 1)),
                                      lib.fft.rfft(t, dim=0)))  # fmt: skip


@case("strides_of_channels_last_rfft", rng.standard_normal((2, 3, 4, 5)).astype(f32))
def _(lib, x):
    y = x.contiguous(memory_format=lib.channels_last)
    return tuple(z.stride() for z in (lib.fft.rfft(y), lib.fft.fft(y), lib.fft.rfft2(y),
                                      lib.fft.rfft(y, dim=1)))  # fmt: skip


def test_empty_batch_dims_give_empty_results():
    # (torch 2.13's CPU build refuses these through its MKL backend; kiln transforms the 0
    # signals: the shapes and dtypes are PyTorch's rules, as NumPy's)
    import kiln as kn

    x = kn.zeros(0, 4)
    got = (kn.fft.fft(x), kn.fft.rfft(x), kn.fft.irfft(x), kn.fft.ihfft(x), kn.fft.fftn(x, dim=1))
    assert [tuple(y.shape) for y in got] == [(0, 4), (0, 3), (0, 6), (0, 3), (0, 4)]
    assert [str(y.dtype) for y in got] == ["kiln.complex64"] * 2 + ["kiln.float32"] + [
        "kiln.complex64"
    ] * 2


@case("strides_of_transforms_over_outer_dims", R, C3D)
def _(lib, r, c):
    t = c.transpose(0, 2)
    return tuple(y.stride() for y in (
        lib.fft.fft(r, dim=0), lib.fft.rfft(r, dim=0), lib.fft.ifft(c, n=7, dim=1),
        lib.fft.irfftn(t, dim=(2, 0)), lib.fft.ihfftn(t.real, dim=(2, 1)),
        lib.fft.hfftn(t, dim=(0, 1)), lib.fft.fftn(t, s=(3, 2), dim=(1, 0)),
        lib.fft.fft2(c, dim=(0, 1)), lib.fft.ihfft(t.real, dim=1)))  # fmt: skip


@case("strides_of_expanded_and_flipped_inputs", R3D)
def _(lib, x):
    e = x[:, :1].expand(2, 3, 4)
    return tuple(y.stride() for y in (lib.fft.fft(e, dim=0), lib.fft.rfft(e, dim=1),
                                      lib.fft.fftn(x.flip(1), dim=(0, 2))))  # fmt: skip


# -- the test ----------------------------------------------------------------------------------

SCENARIOS.eager_only.update({
    "fftfreq_requires_grad": "a factory's leaf flags, an eager matter",
})  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
