"""PyTorch's packed-sequence tests (test/nn/test_packed_sequence.py and the packed cases of
test_nn.py's RNN tests) as an oracle: `pack_padded_sequence`, `pad_packed_sequence`,
`pack_sequence`, `pad_sequence`, `unpad_sequence`, `unpack_sequence`, `PackedSequence`'s
methods, and RNN, LSTM and GRU run on a PackedSequence (outputs and final states in the
batch's original order), each a scenario that pt_oracle.py runs on torch and on kiln, eagerly
and under `kn.compile`, comparing values, gradients, dtypes, shapes and exception types.
tests/test_nn_review_packed.py has the common round trips.

Expected values: torch 2.13 (the oracle). Lengths are Python lists or tensors made inside the
scenario (concrete under `kn.compile` too, as PyTorch wants them on the CPU).
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios
from pt_rnn_common import grads, module

f32 = np.float32
RNG = np.random.default_rng(1)
PAD = RNG.standard_normal((4, 3, 2)).astype(f32)  # padded (T, B, *)
SEQ = RNG.standard_normal((5, 4)).astype(f32)  # rows of sequences of feature size 4
X = RNG.standard_normal((5, 3, 4)).astype(f32)  # an RNN's padded input (T, B, H_in)
H = RNG.standard_normal((2, 3, 6)).astype(f32)

SCENARIOS = Scenarios()
case = SCENARIOS.case


def utils(lib):
    return lib.nn.utils.rnn


def fields(p):
    return p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices


# -- pack_padded_sequence ---------------------------------------------------------------------


@case("pack_padded_sorted_lengths_list_and_tensor", Leaf.of(PAD))
def _(lib, x):
    u = utils(lib)
    a = u.pack_padded_sequence(x, [4, 2, 1])
    b = u.pack_padded_sequence(x, lib.tensor([4, 2, 1]))
    c = u.pack_padded_sequence(x.transpose(0, 1), lib.tensor([4, 4, 3]), batch_first=True)
    return fields(a), fields(b), fields(c), grads(lib, (a.data, c.data), x)


@case("pack_padded_unsorted", Leaf.of(PAD))
def _(lib, x):
    u = utils(lib)
    a = u.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
    b = u.pack_padded_sequence(x.transpose(0, 1), [1, 3, 3], batch_first=True,
                               enforce_sorted=False)  # fmt: skip
    return fields(a), fields(b), grads(lib, (a.data * 2, b.data), x)


@case("pack_padded_unsorted_refused_when_enforced", PAD)
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, [2, 4, 1])


@case("pack_padded_zero_length", PAD)
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, [4, 2, 0])


@case("pack_padded_lengths_count_mismatch", PAD)
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, [4, 2])


@case("pack_padded_lengths_2d", PAD)
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, lib.tensor([[4, 2, 1]]))


@case("pack_padded_integer_data", PAD.astype(np.int64))
def _(lib, x):
    return fields(utils(lib).pack_padded_sequence(x, [3, 3, 2], enforce_sorted=False))


@case("pack_padded_2d_input_unsorted_refused", PAD[:3, :, 0])
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, [1, 3, 2])


@case("pack_padded_2d_input", Leaf.of(PAD[:3, :, 0]))
def _(lib, x):
    u = utils(lib)
    p = u.pack_padded_sequence(x, [1, 3, 2], enforce_sorted=False)
    return fields(p), u.pad_packed_sequence(p, batch_first=True), grads(lib, (p.data,), x)


@case("pack_padded_empty_input", PAD[:0, :0, 0])
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, [])


@case("pack_padded_empty_batch_first", np.zeros((0, 1, 10), f32))
def _(lib, x):
    return utils(lib).pack_padded_sequence(x, lib.ones(11, 14, 14, 2), True)


@case("pack_padded_float_lengths", Leaf.of(PAD))
def _(lib, x):
    u = utils(lib)
    return fields(u.pack_padded_sequence(x, lib.tensor([3.7, 4.0, 1.2]), enforce_sorted=False))


@case("pack_padded_sorted_unenforced_has_identity_indices", PAD)
def _(lib, x):
    return fields(utils(lib).pack_padded_sequence(x, [4, 2, 2], enforce_sorted=False))


# -- pad_packed_sequence ----------------------------------------------------------------------


@case("pad_packed_total_length_padding_value_batch_first", Leaf.of(PAD))
def _(lib, x):
    u = utils(lib)
    p = u.pack_padded_sequence(x, [3, 4, 1], enforce_sorted=False)
    a = u.pad_packed_sequence(p)
    b = u.pad_packed_sequence(p, batch_first=True, padding_value=-2.5, total_length=6)
    return a, b, grads(lib, (a[0], b[0] * 3), x)


@case("pad_packed_total_length_too_short", PAD)
def _(lib, x):
    u = utils(lib)
    return u.pad_packed_sequence(u.pack_padded_sequence(x, [4, 2, 1]), total_length=3)


@case("pad_packed_integer_padding_value", PAD.astype(np.int64))
def _(lib, x):
    u = utils(lib)
    return u.pad_packed_sequence(u.pack_padded_sequence(x, [4, 2, 1]), padding_value=7)


@case("pad_packed_total_length_negative_or_zero", PAD)
def _(lib, x):
    u = utils(lib)
    p = u.pack_padded_sequence(x, [4, 2, 1])
    got = []
    for total in (-1, 0):
        try:
            u.pad_packed_sequence(p, batch_first=True, total_length=total)
        except ValueError:
            got.append("ValueError")
    return got


@case("pad_packed_casts_of_integer_sequences", PAD.astype(np.int32))
def _(lib, x):
    u = utils(lib)
    p = u.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
    names = ("double", "float", "long", "int", "short", "char", "byte")
    return [u.pad_packed_sequence(getattr(p, n)()) for n in names]


@case("packed_to_same_dtype_and_device_is_itself", PAD.astype(np.int32))
def _(lib, x):
    p = utils(lib).pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
    return p.to("cpu", dtype=lib.int32) is p, p.cpu() is p, fields(p.to(dtype=lib.int64))


# -- pack_sequence, pad_sequence, unpad_sequence, unpack_sequence -----------------------------


@case("pad_sequence_sides_and_batch_first", Leaf.of(SEQ))
def _(lib, x):
    u = utils(lib)
    seqs = [x[:3], x[3:], x[:1]]
    got = [u.pad_sequence(seqs), u.pad_sequence(seqs, batch_first=True, padding_value=1.5),
           u.pad_sequence(seqs, padding_side="left"),
           u.pad_sequence(seqs, True, -1.0, "left")]  # fmt: skip
    return got, grads(lib, got, x)


@case("pad_sequence_of_a_tensor_and_of_1d", SEQ)
def _(lib, x):
    u = utils(lib)
    return u.pad_sequence(x), u.pad_sequence([x[0], x[1, :2]], batch_first=True)


@case("pad_sequence_bad_side", SEQ)
def _(lib, x):
    return utils(lib).pad_sequence([x[:2], x[2:]], padding_side="middle")


@case("pad_sequence_trailing_dims_differ", SEQ)
def _(lib, x):
    return utils(lib).pad_sequence([x[:2], x[2:, :3]])


@case("pad_sequence_dtypes", PAD.astype(np.int32))
def _(lib, x):
    u = utils(lib)
    return u.pad_sequence([x[0], x[1, :1]], padding_value=2), u.pad_sequence(
        [x[0] > 0, x[1, :2] > 0]
    )


@case("pad_sequence_of_a_non_iterable", SEQ)
def _(lib, x):
    return utils(lib).pad_sequence(5)


@case("pad_sequence_of_a_tuple_and_a_3d_tensor", SEQ[:2, :2])
def _(lib, x):
    u = utils(lib)
    return u.pad_sequence((x[None, 0], x[None, 1])), u.pad_sequence(x[:, None])


@case("pad_sequence_of_an_empty_list", SEQ)
def _(lib, x):
    return utils(lib).pad_sequence([])


@case("pack_sequence_of_an_empty_list", SEQ)
def _(lib, x):
    return utils(lib).pack_sequence([])


@case("pad_sequence_of_0d_tensors", SEQ)
def _(lib, x):
    return utils(lib).pad_sequence([x[0, 0], x[1, 1]])


@case("pad_sequence_mixed_dtypes_takes_the_first", Leaf.of(SEQ))
def _(lib, x):
    # the result has the first sequence's dtype (torch copies the others into it)
    u = utils(lib)
    a = u.pad_sequence([x[:2], x[2:].double()])
    b = u.pad_sequence([x[:2].double(), x[2:]], batch_first=True, padding_side="left")
    c = u.pad_sequence([(x[:2] * 10).long(), x[2:]])
    return a, b, c, grads(lib, (a, b), x)


@case("pad_values_cast_to_the_sequences_dtype", SEQ)
def _(lib, x):
    # an int sequence padded with 1.5 gets 1, a packed one with 2.7 gets 2; bools pad True
    u = utils(lib)
    ints = [lib.tensor([1, 2]), lib.tensor([3])]
    return (u.pad_sequence(ints, padding_value=1.5),
            u.pad_sequence([x[0] > 0, x[1, :1] > 0], padding_value=True),
            u.pad_packed_sequence(u.pack_sequence(ints), padding_value=2.7),
            u.pack_padded_sequence(x[:3], (3.0, 2.0, 2.0)).batch_sizes)  # fmt: skip


@case("pack_sequence_sorted_and_not", Leaf.of(SEQ))
def _(lib, x):
    u = utils(lib)
    a = u.pack_sequence([x[:3], x[3:], x[:1]])
    b = u.pack_sequence([x[:1], x[1:4], x[4:]], enforce_sorted=False)
    return fields(a), fields(b), grads(lib, (a.data, b.data), x)


@case("pack_sequence_unsorted_refused", SEQ)
def _(lib, x):
    return utils(lib).pack_sequence([x[:1], x[1:]])


@case("unpack_and_unpad_sequence", Leaf.of(SEQ))
def _(lib, x):
    u = utils(lib)
    seqs = [x[:1], x[1:4], x[4:]]
    back = u.unpack_sequence(u.pack_sequence(seqs, enforce_sorted=False))
    padded = u.pad_sequence(seqs, batch_first=True)
    cut = u.unpad_sequence(padded, lib.tensor([1, 3, 1]), batch_first=True)
    cut2 = u.unpad_sequence(padded.transpose(0, 1), lib.tensor([1, 3, 1]))
    return back, cut, cut2, grads(lib, (*back, *cut), x)


# -- PackedSequence ---------------------------------------------------------------------------


@case("packed_sequence_casts_and_to", SEQ)
def _(lib, x):
    p = utils(lib).pack_sequence([x[:1], x[1:4], x[4:]], enforce_sorted=False)
    got = [fields(p.to(lib.float64)), fields(p.double()), fields(p.to("cpu")), p.is_cuda,
           p.to(lib.float32) is p, p.to("cpu") is p]  # fmt: skip
    for name in ("float", "half", "long", "int", "short", "char", "byte", "cpu"):
        got.append(fields(getattr(p, name)()))
    return got


@case("packed_sequence_infers_unsorted_indices", SEQ)
def _(lib, x):
    ps = utils(lib).PackedSequence
    p = ps(x, lib.tensor([3, 2]), lib.tensor([1, 2, 0]))
    q = ps((x, lib.tensor([3, 2])))
    inverse = utils(lib).invert_permutation
    return fields(p), p.is_pinned(), fields(q), inverse(lib.tensor([2, 0, 1])), inverse(None)


@case("packed_sequence_is_a_tuple", SEQ)
def _(lib, x):
    p = utils(lib).pack_sequence([x[:3], x[3:]])
    data, sizes, s, u = p
    return len(p), isinstance(p, tuple), data, sizes, s, u, p._fields


# -- recurrent layers on a PackedSequence -----------------------------------------------------

LENGTHS = [3, 5, 2]


@case("packed_rnn_outputs_and_states_original_order", Leaf.of(X), Leaf.of(H))
def _(lib, x, h):
    u = utils(lib)
    got = []
    for name, kwargs in (("RNN", {"num_layers": 2}), ("GRU", {"bidirectional": True}),
                         ("RNN", {"bidirectional": True, "nonlinearity": "relu"})):  # fmt: skip
        m = module(lib, name, 4, 6, **kwargs)
        out, hn = m(u.pack_padded_sequence(x, LENGTHS, enforce_sorted=False), h)
        padded = u.pad_packed_sequence(out)
        got += [fields(out), padded, hn, grads(lib, (padded[0], hn), x, h)]
    return got


@case("packed_lstm_states_given_or_not", Leaf.of(X), Leaf.of(H), Leaf.of(H * 0.5))
def _(lib, x, h, c):
    u = utils(lib)
    m = module(lib, "LSTM", 4, 6, bidirectional=True)
    p = u.pack_padded_sequence(x, LENGTHS, enforce_sorted=False)
    out0, (h0, c0) = m(p)
    out, (hn, cn) = m(p, (h, c))
    return fields(out0), h0, c0, fields(out), hn, cn, grads(lib, (out.data, hn, cn), x, h, c)


@case("packed_lstm_proj_size_batch_first", Leaf.of(X))
def _(lib, x):
    u = utils(lib)
    m = module(lib, "LSTM", 4, 6, proj_size=2, num_layers=2, batch_first=True)
    p = u.pack_padded_sequence(x.transpose(0, 1), LENGTHS, batch_first=True, enforce_sorted=False)
    out, (hn, cn) = m(p)
    padded = u.pad_packed_sequence(out, batch_first=True)
    return padded, hn, cn, grads(lib, (padded[0], hn, cn), x)


@case("packed_lstm_proj_bidirectional_given_states", Leaf.of(X), Leaf.of(H[:, :, :3]), Leaf.of(H))
def _(lib, x, h, c):
    u = utils(lib)
    m = module(lib, "LSTM", 4, 6, proj_size=3, bidirectional=True)
    p = u.pack_padded_sequence(x, LENGTHS, enforce_sorted=False)
    out, (hn, cn) = m(p, (h, c))
    return fields(out), hn, cn, grads(lib, (out.data, hn, cn), x, h, c)


@case("packed_sorted_input_gru", Leaf.of(X))
def _(lib, x):
    u = utils(lib)
    m = module(lib, "GRU", 4, 6, num_layers=2, bidirectional=True)
    out, hn = m(u.pack_padded_sequence(x, [5, 3, 3]))
    return fields(out), hn, grads(lib, (out.data, hn), x)


@case("packed_wrong_state_batch", X, H[:, :2])
def _(lib, x, h):
    u = utils(lib)
    return module(lib, "GRU", 4, 6, num_layers=2)(u.pack_padded_sequence(x, [5, 3, 3]), h)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_compiled_module_on_packed_input_and_its_parameter_grads(torch, name):
    """A module built outside `kn.compile`, run compiled on a PackedSequence made inside:
    the padded outputs, final states and every parameter's gradient are torch's."""
    from port_common import to_numpy

    import kiln as kn

    kwargs = {"num_layers": 2, "bidirectional": True}
    tm, km = module(torch, name, 4, 6, **kwargs), module(kn, name, 4, 6, **kwargs)

    def run(lib, m, x):
        u = lib.nn.utils.rnn
        out, state = m(u.pack_padded_sequence(x, [3, 5, 2], enforce_sorted=False))
        padded, _ = u.pad_packed_sequence(out, batch_first=True)
        states = state if isinstance(state, tuple) else (state,)
        return padded, *states

    want = run(torch, tm, torch.tensor(X))
    sum(w.sum() for w in want).backward()

    @kn.compile
    def step(x):
        got = run(kn, km, x)
        sum(g.sum() for g in got).backward()
        return got

    got = step(kn.tensor(X))
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_numpy(g), to_numpy(w), rtol=1e-5, atol=1e-6)
    for (n, tp), (_, kp) in zip(tm.named_parameters(), km.named_parameters()):
        np.testing.assert_allclose(to_numpy(kp.grad), to_numpy(tp.grad), rtol=1e-4, atol=1e-5,
                                   err_msg=n)  # fmt: skip
