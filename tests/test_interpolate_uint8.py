"""uint8 images in `F.interpolate(mode="bilinear" | "bicubic")`, antialiased or not, equal
torch 2.13's CPU results bit for bit (its fixed-point kernels: int16 weights, the width
resampled first and rounded to uint8, then the height); kiln refused uint8 there before.
Expected values: torch 2.13 itself on the same images, sizes and options; for an input kept
in its size, the input. torch's generic path for more than 4 channels repeats the first row
when the output is 1 pixel wide (its vertical loop reads one row's taps): those cases are
left out, kiln gives what torch's 1 to 4 channel path gives."""

import numpy as np
import pytest

import kiln as kn


def _cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        channels = int(rng.choice([1, 3, 4, 5]))
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        x = rng.integers(0, 256, (2, channels, h, w)).astype(np.uint8)
        if rng.random() < 0.5:  # a smooth image, whose rounding is closer to ties
            x = np.clip(np.cumsum(rng.integers(-50, 50, x.shape), -1) + 128, 0, 255)
        options = dict(mode=str(rng.choice(["bilinear", "bicubic"])),
                       antialias=bool(rng.random() < 0.5),
                       align_corners=bool(rng.random() < 0.3))  # fmt: skip
        if rng.random() < 0.6:
            options["size"] = tuple(int(v) for v in rng.integers(1, 50, 2))
            if channels > 4 and options["size"][1] == 1:
                options["size"] = (options["size"][0], 2)
        else:
            options["scale_factor"] = tuple(float(v) for v in rng.choice(
                [0.5, 0.75, 1.0, 1.5, 2.0, 3.0], 2))  # fmt: skip
            options["recompute_scale_factor"] = bool(rng.random() < 0.3)
            if channels > 4 and int(w * options["scale_factor"][1]) == 1:
                options["scale_factor"] = (options["scale_factor"][0], 2.0)
            if min(int(h * options["scale_factor"][0]), int(w * options["scale_factor"][1])) < 1:
                continue  # an empty output: refused by both
        yield x.astype(np.uint8), options


@pytest.mark.parametrize("seed", range(4))
def test_uint8_bilinear_bicubic_match_torch_exactly(seed):
    torch = pytest.importorskip("torch")
    for x, options in _cases(seed, 40):
        want = torch.nn.functional.interpolate(torch.tensor(x), **options).numpy()
        got = kn.nn.functional.interpolate(kn.tensor(x), **options)
        assert got.dtype == kn.uint8
        np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{x.shape} {options}")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_large_antialiased_downscale_matches_torch(mode):
    """Many taps per output (100 -> 7): the weights' sum and precision as torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = np.clip(np.cumsum(rng.integers(-30, 31, (1, 3, 100, 90)), -2) + 128, 0, 255)
    x = x.astype(np.uint8)
    for size in [(7, 9), (33, 90), (100, 13)]:
        want = torch.nn.functional.interpolate(
            torch.tensor(x), size=size, mode=mode, antialias=True
        ).numpy()
        got = kn.nn.functional.interpolate(kn.tensor(x), size=size, mode=mode, antialias=True)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(size))


def test_uint8_same_size_is_the_input_and_compile_and_graph_agree():
    x = np.random.default_rng(2).integers(0, 256, (1, 3, 9, 7)).astype(np.uint8)
    same = kn.nn.functional.interpolate(kn.tensor(x), size=(9, 7), mode="bicubic")
    np.testing.assert_array_equal(same.numpy(), x)
    options = dict(size=(4, 11), mode="bicubic", antialias=True)
    eager = kn.nn.functional.interpolate(kn.tensor(x), **options).numpy()
    compiled = kn.compile(lambda t: kn.nn.functional.interpolate(t, **options))
    np.testing.assert_array_equal(compiled(kn.tensor(x)).numpy(), eager)
    with kn.Graph().as_default():
        p = kn.placeholder(kn.uint8, x.shape, name="x")
        y = kn.nn.functional.interpolate(p, **options)
        np.testing.assert_array_equal(kn.Session().run(y, {p: x}), eager)


def test_uint8_linear_and_trilinear_still_refused():
    """torch 2.13 refuses uint8 in linear, trilinear and area modes; so does kiln."""
    with pytest.raises(TypeError, match="floating-point"):
        kn.nn.functional.interpolate(kn.zeros(1, 1, 4, dtype=kn.uint8), size=8, mode="linear")
