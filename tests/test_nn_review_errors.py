"""Inputs PyTorch refuses that kiln computed something for (silently): an RNN initial state of
the wrong batch size or layer count (kiln broadcast or sliced it), and instance norm over one
spatial element (kiln gave zeros). Each case raises in torch and now in kiln."""

import pytest

import kiln as kn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "build, call",
    [
        (lambda nn: nn.LSTM(3, 2), lambda lib, m: m(lib.ones(4, 1, 3),
                                                      (lib.zeros(1, 2, 2), lib.zeros(1, 2, 2)))),
        (lambda nn: nn.LSTM(3, 2), lambda lib, m: m(lib.ones(4, 1, 3),
                                                      (lib.zeros(1, 1, 2), lib.zeros(1, 1, 3)))),
        (lambda nn: nn.GRU(3, 2), lambda lib, m: m(lib.ones(4, 1, 3), lib.zeros(2, 1, 2))),
        (lambda nn: nn.RNN(3, 2, batch_first=True),
         lambda lib, m: m(lib.ones(5, 4, 3), lib.zeros(1, 4, 2))),
        (lambda nn: nn.GRU(3, 2), lambda lib, m: m(lib.ones(4, 3), lib.zeros(1, 1, 2))),
        (lambda nn: nn.GRU(3, 2), lambda lib, m: m(lib.ones(4, 1, 5))),
        (lambda nn: nn.GRU(3, 2), lambda lib, m: m(
            lib.nn.utils.rnn.pack_padded_sequence(lib.ones(4, 2, 3), [4, 2]), lib.zeros(1, 3, 2))),
    ],
)  # fmt: skip
def test_rnn_state_shape_checked_like_torch(build, call):
    for lib in (torch, kn):
        with pytest.raises(RuntimeError, match="size|hx should also be 2-D"):
            call(lib, build(lib.nn))


def test_rnn_right_states_still_run():
    m = kn.nn.LSTM(3, 2, num_layers=2, bidirectional=True, batch_first=True)
    out, (h, c) = m(kn.ones(5, 4, 3), (kn.zeros(4, 5, 2), kn.zeros(4, 5, 2)))
    assert tuple(out.shape) == (5, 4, 4) and tuple(h.shape) == (4, 5, 2)


@pytest.mark.parametrize("shape", [(2, 3, 1), (2, 3, 1, 1)])
def test_instance_norm_one_spatial_element_raises_like_torch(shape):
    for lib in (torch, kn):
        cls = lib.nn.InstanceNorm1d if len(shape) == 3 else lib.nn.InstanceNorm2d
        with pytest.raises(ValueError, match="more than 1 spatial element"):
            cls(3)(lib.ones(*shape))
        with pytest.raises(ValueError, match="more than 1 spatial element"):
            lib.nn.functional.instance_norm(lib.ones(*shape))
    # with running statistics in eval mode there is nothing to compute from the input
    m = kn.nn.InstanceNorm1d(3, track_running_stats=True).eval()
    assert tuple(m(kn.ones(2, 3, 1)).shape) == (2, 3, 1)
