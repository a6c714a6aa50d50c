"""PyTorch's own recurrent-network tests (test_nn.py's test_RNN_*, test_LSTM_*, test_GRU_*,
test_rnn_*, the cell tests, and test/nn/test_packed_sequence.py) as an oracle: each behaviour
a scenario of its own (pt_oracle.py runs it on torch and on kiln, eagerly and under
`kn.compile`, and compares values, gradients, dtypes, shapes and exception types).
test_port_pt_nn.py has the weight lists and the dropout arguments; tests/test_rnn_oracle.py
and tests/test_nn_review_packed.py the common layouts.

Expected values: torch 2.13 (the oracle). Each module is built on torch under a fixed seed,
and kiln's twin loads torch's initial weights (through NumPy), so values compare.
"""

import numpy as np
import pytest
from pt_oracle import MODES, Leaf, Scenarios
from pt_rnn_common import grads, module, param_grads

f32, f64 = np.float32, np.float64
RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3, 4)).astype(f32)  # (T, N, H_in)
X2 = RNG.standard_normal((5, 4)).astype(f32)  # unbatched (T, H_in)
H = RNG.standard_normal((1, 3, 6)).astype(f32)  # (layers * directions, N, H)
C = RNG.standard_normal((1, 3, 6)).astype(f32)
XC = RNG.standard_normal((3, 4)).astype(f32)  # a cell's input (N, H_in)
HC = RNG.standard_normal((3, 6)).astype(f32)
PAD = RNG.standard_normal((4, 3, 2)).astype(f32)  # padded (T, B, *)

SCENARIOS = Scenarios()
case = SCENARIOS.case
SCENARIOS.eager_only["reset_parameters_redraws_in_place"] = "reads values as Python bools"
SCENARIOS.eager_only["rnn_dropout_between_layers_only_in_training"] = "reads a Python bool"
SCENARIOS.eager_only["rnn_weight_norm_and_parametrizations"] = (
    "weight_norm reads the weight's values when set up, here inside the compiled function"
)


# -- RNN, LSTM, GRU layers -------------------------------------------------------------------


@case("rnn_tanh_relu_values_and_grads", Leaf.of(X), Leaf.of(H))
def _(lib, x, h):
    got = []
    for nl in ("tanh", "relu"):
        m = module(lib, "RNN", 4, 6, nonlinearity=nl)
        out, hn = m(x, h)
        got += [out, hn, grads(lib, (out, hn), x, h)]
    return got


@case("rnn_multi_layer_bidirectional_batch_first", Leaf.of(X))
def _(lib, x):
    m = module(lib, "RNN", 4, 6, num_layers=2, bidirectional=True, batch_first=True)
    out, hn = m(x)
    return out, hn, grads(lib, (out, hn), x)


@case("lstm_initial_state_given_or_not", Leaf.of(X), Leaf.of(H), Leaf.of(C))
def _(lib, x, h, c):
    m = module(lib, "LSTM", 4, 6)
    out0, (h0, c0) = m(x)
    out, (hn, cn) = m(x, (h, c))
    return out0, h0, c0, out, hn, cn, grads(lib, (out, hn, cn), x, h, c)


@case("lstm_proj_size", Leaf.of(X))
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, proj_size=2, num_layers=2, bidirectional=True)
    out, (hn, cn) = m(x)
    return out, hn, cn, grads(lib, (out, hn, cn), x)


@case("lstm_proj_size_initial_state", Leaf.of(X), Leaf.of(H[:, :, :2]), Leaf.of(C))
def _(lib, x, h, c):
    m = module(lib, "LSTM", 4, 6, proj_size=2)
    out, (hn, cn) = m(x, (h, c))
    return out, hn, cn, grads(lib, (out, hn, cn), x, h, c)


@case("lstm_proj_size_wrong_state_shape", X, H, C)
def _(lib, x, h, c):
    # h must be (1, N, proj_size): torch raises RuntimeError
    return module(lib, "LSTM", 4, 6, proj_size=2)(x, (h, c))


@case("lstm_bias_false_batch_first", Leaf.of(X))
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, bias=False, batch_first=True, num_layers=2)
    out, (hn, cn) = m(x)
    return out, hn, cn, grads(lib, (out, hn, cn), x)


@case("lstm_unbatched", Leaf.of(X2), Leaf.of(H[:, 0]), Leaf.of(C[:, 0]))
def _(lib, x, h, c):
    m = module(lib, "LSTM", 4, 6, bidirectional=False)
    out0, (h0, c0) = m(x)
    out, (hn, cn) = m(x, (h, c))
    return out0, h0, c0, out, hn, cn, grads(lib, (out, hn, cn), x, h, c)


@case("lstm_unbatched_bidirectional_proj", Leaf.of(X2))
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, bidirectional=True, proj_size=3, num_layers=2)
    out, (hn, cn) = m(x)
    return out, hn, cn, grads(lib, (out, hn, cn), x)


@case("lstm_unbatched_3d_state_refused", X2, H, C)
def _(lib, x, h, c):
    return module(lib, "LSTM", 4, 6)(x, (h, c))


@case("gru_values_and_grads", Leaf.of(X), Leaf.of(np.concatenate([H, H]) * 0.5))
def _(lib, x, h):
    m = module(lib, "GRU", 4, 6, num_layers=2)
    out, hn = m(x, h)
    return out, hn, grads(lib, (out, hn), x, h)


@case("gru_bidirectional_unbatched_bias_false", Leaf.of(X2))
def _(lib, x):
    m = module(lib, "GRU", 4, 6, bidirectional=True, bias=False)
    out, hn = m(x)
    return out, hn, grads(lib, (out, hn), x)


@case("rnn_float64", Leaf.of(X.astype(f64)))
def _(lib, x):
    m = module(lib, "GRU", 4, 6, dtype=lib.float64)
    out, hn = m(x)
    m2 = module(lib, "LSTM", 4, 6, dtype=lib.float64, proj_size=2)
    out2, (h2, c2) = m2(x)
    return out, hn, out2, h2, c2, grads(lib, (out, hn, out2), x)


@case("rnn_module_double", Leaf.of(X.astype(f64)))
def _(lib, x):
    m = module(lib, "RNN", 4, 6).double()
    out, hn = m(x)
    return out, hn, [p.dtype for p in m.parameters()]


@case("rnn_param_grads", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, num_layers=2, bidirectional=True, proj_size=3)
    out, (hn, cn) = m(x)
    return param_grads(lib, m, (out, hn, cn))


@case("rnn_input_size_mismatch", X[..., :3])
def _(lib, x):
    return module(lib, "GRU", 4, 6)(x)


@case("rnn_hidden_batch_mismatch", X, H[:, :2])
def _(lib, x, h):
    return module(lib, "RNN", 4, 6)(x, h)


@case("rnn_hidden_layers_mismatch", X, np.concatenate([H, H]))
def _(lib, x, h):
    return module(lib, "GRU", 4, 6)(x, h)


@case("rnn_4d_input_refused", X[None])
def _(lib, x):
    return module(lib, "RNN", 4, 6)(x)


@case("rnn_dropout_eval_is_identity", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, num_layers=3, dropout=0.7).eval()
    out, (hn, cn) = m(x)
    return out, hn, cn


@case("rnn_dropout_one_zeroes_between_layers", X)
def _(lib, x):
    # p=1 drops every value between layers: layer 2 sees zeros
    m = module(lib, "RNN", 4, 6, num_layers=2, dropout=1.0)
    m.train()
    out, hn = m(x)
    return out, hn


@case("rnn_state_dict_keys", X)
def _(lib, x):
    got = []
    for m in (module(lib, "LSTM", 4, 6, num_layers=2, bidirectional=True, proj_size=2),
              module(lib, "GRU", 4, 6, bias=False), module(lib, "RNN", 4, 6)):  # fmt: skip
        sd = m.state_dict()
        got.append((list(sd), [tuple(v.shape) for v in sd.values()]))
    return got


ERRONEOUS = {
    "nonlinearity": ("RNN", 4, 6, {"nonlinearity": "sigmoid"}),
    "gru_proj_size": ("GRU", 4, 6, {"proj_size": 2}),
    "proj_size_not_smaller": ("LSTM", 4, 6, {"proj_size": 6}),
    "proj_size_negative": ("LSTM", 4, 6, {"proj_size": -1}),
    "dropout_over_one": ("LSTM", 4, 6, {"dropout": 1.5}),
    "hidden_size_zero": ("RNN", 4, 0, {}),
    "num_layers_zero": ("RNN", 4, 6, {"num_layers": 0}),
    "num_layers_float": ("RNN", 4, 6, {"num_layers": 1.5}),
    "hidden_size_float": ("RNN", 4, 6.0, {}),
}
for _name, (_cls, *_args, _kwargs) in ERRONEOUS.items():

    @case(f"rnn_constructor_refuses_{_name}", X)
    def _(lib, x, cls=_cls, args=_args, kwargs=_kwargs):
        return getattr(lib.nn, cls)(*args, **kwargs)


@case("rnn_flatten_parameters_and_repr", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, num_layers=2, proj_size=2, batch_first=True, dropout=0.5)
    m.flatten_parameters()
    return repr(m), repr(module(lib, "RNN", 4, 6, nonlinearity="relu", bias=False))


@case("rnn_zero_batch", Leaf.of(np.zeros((5, 0, 4), f32)))
def _(lib, x):
    got = []
    for name in ("RNN", "LSTM", "GRU"):
        out, state = module(lib, name, 4, 6)(x)
        got += [out, state]
    outs = [got[0], got[2], got[3][0], got[4]]
    return got, grads(lib, outs, x)


@case("rnn_nonlinearity_attribute_and_positional", X)
def _(lib, x):
    nn = lib.nn
    a, b, c = nn.RNN(4, 6), nn.RNN(4, 6, nonlinearity="relu"), nn.RNN(4, 6, 2, "relu")
    return a.nonlinearity, b.nonlinearity, c.nonlinearity, c.num_layers, repr(c)


@case("rnn_dropout_attribute_changed_after_construction", X)
def _(lib, x):
    # p changed to 0 (and to 1 in training): the next call uses it
    m = module(lib, "GRU", 4, 6, num_layers=2, dropout=0.3)
    m.dropout = 0.0
    out0, h0 = m(x)
    m.dropout = 1.0
    out1, h1 = m(x)
    return out0, h0, out1, h1


@case("rnn_initial_zero_state_is_no_state", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, num_layers=2, bidirectional=True, proj_size=3)
    z = lib.zeros(4, 3, 3), lib.zeros(4, 3, 6)
    return m(x), m(x, z)


@case("rnn_backward_twice_retaining_the_graph", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6)
    out, (h, c) = m(x)
    total = out.sum() + h.sum() + c.sum()
    total.backward(retain_graph=True)
    first = [p.grad.clone() for p in m.parameters()]
    total.backward()
    return first, [p.grad for p in m.parameters()]


@case("lstm_proj_wrong_cell_state_size", X, H[:, :, :2], C[:, :, :2])
def _(lib, x, h, c):
    # c must be (1, N, hidden_size) even with proj_size
    return module(lib, "LSTM", 4, 6, proj_size=2)(x, (h, c))


@case("rnn_hidden_size_mismatch", X, H[:, :, :5])
def _(lib, x, h):
    return module(lib, "GRU", 4, 6)(x, h)


@case("rnn_parameters_order_and_named", X)
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, num_layers=2, bidirectional=True, proj_size=2, bias=False)
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()]


@case("rnn_float64_input_to_float32_module", X.astype(f64))
def _(lib, x):
    return module(lib, "GRU", 4, 6)(x)


@case("rnn_float64_state_to_float32_module", X, H.astype(f64))
def _(lib, x, h):
    return module(lib, "RNN", 4, 6)(x, h)


@case("lstm_float64_cell_state_to_float32_module", X, H, C.astype(f64))
def _(lib, x, h, c):
    return module(lib, "LSTM", 4, 6)(x, (h, c))


@case("rnn_integer_input_refused", (X * 10).astype(np.int64))
def _(lib, x):
    return module(lib, "RNN", 4, 6)(x)


@case("cell_float64_input_to_float32_cell", XC.astype(f64))
def _(lib, x):
    return module(lib, "LSTMCell", 4, 6)(x)


@case("lstm_functional_flat_weights_with_projection", Leaf.of(X), Leaf.of(H[:, :, :2]), Leaf.of(C))
def _(lib, x, h, c):
    m = module(lib, "LSTM", 4, 6, proj_size=2)
    out, hn, cn = lib.lstm(x, (h, c), m._flat_weights, True, 1, 0.0, False, False, False)
    return out, hn, cn, grads(lib, (out, hn, cn), x, h, c)


@case("lstm_functional_projection_layers_directions_no_bias", Leaf.of(X))
def _(lib, x):
    m = module(lib, "LSTM", 4, 6, proj_size=3, num_layers=2, bidirectional=True, bias=False)
    hc = lib.zeros(4, 3, 3), lib.zeros(4, 3, 6)
    out, hn, cn = lib.lstm(x, hc, m._flat_weights, False, 2, 0.0, False, True, False)
    return out, hn, cn, grads(lib, (out, hn, cn), x)


@case("reset_parameters_redraws_in_place", X)
def _(lib, x):
    # torch's draws differ from kiln's: compared are the bound, the change, the identities
    got = []
    for name, args in (("LSTM", (4, 6, 2, True, False, 0.0, True, 3)), ("GRU", (4, 6)),
                       ("RNNCell", (4, 6)), ("LSTMCell", (4, 6)),
                       ("GRUCell", (4, 6, False))):  # fmt: skip
        m = module(lib, name, *args)
        before = [(p, p.detach().clone()) for p in m.parameters()]
        m.reset_parameters()
        after = list(m.parameters())
        got.append([(p is q, bool((q.abs() <= 6**-0.5).all()), bool((q != old).any()), q.dtype)
                    for (p, old), q in zip(before, after)])  # fmt: skip
    return got


@case("functional_layers_batch_first_bidirectional", Leaf.of(X))
def _(lib, x):
    got = []
    for name, fn in (("GRU", lib.gru), ("RNN", lib.rnn_tanh), ("RNN", lib.rnn_relu)):
        m = module(lib, name, 4, 6, num_layers=2, bidirectional=True)
        w = m._flat_weights
        got.append(fn(x, lib.zeros(4, 5, 6), w, True, 2, 0.0, False, True, True))
        got.append(fn(x, lib.zeros(4, 3, 6), w, True, 2, 0.0, False, True, False))
    return got, grads(lib, [t for g in got for t in g], x)


@case("functional_layers_on_packed_data", Leaf.of(X), Leaf.of(np.concatenate([H, C]) * 0.5))
def _(lib, x, h):
    # the packed form (data, batch_sizes, hx, params, ...): states in the sorted order
    p = lib.nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2])
    m = module(lib, "GRU", 4, 6, num_layers=2)
    out, hn = lib.gru(p.data, p.batch_sizes, h, m._flat_weights, True, 2, 0.0, False, False)
    lstm = module(lib, "LSTM", 4, 6, bidirectional=True)
    out2, h2, c2 = lib.lstm(p.data, p.batch_sizes, (h, h), lstm._flat_weights, True, 1, 0.0,
                            False, True)  # fmt: skip
    return out, hn, out2, h2, c2, grads(lib, (out, hn, out2, h2, c2), x, h)


@case("functional_wrong_weight_count", X, H)
def _(lib, x, h):
    m = module(lib, "RNN", 4, 6)
    return lib.rnn_tanh(x, h, m._flat_weights[:3], True, 1, 0.0, False, False, False)


@case("rnn_check_methods_for_subclasses", X, H, C)
def _(lib, x, h, c):
    lstm = module(lib, "LSTM", 4, 6, proj_size=2, batch_first=True)
    gru = module(lib, "GRU", 4, 6)
    lstm.check_input(x, None)
    gru.check_forward_args(x, h, None)
    got = [lstm.get_expected_hidden_size(x, None), lstm.get_expected_cell_size(x, None),
           gru.get_expected_hidden_size(x[0], lib.tensor([3, 1])),
           gru.permute_hidden(h, lib.tensor([2, 0, 1])),
           lstm.permute_hidden((h, c), lib.tensor([1, 2, 0])),
           gru.permute_hidden(h, None)]  # fmt: skip
    for bad in (lambda: gru.check_input(x[0], None), lambda: gru.check_input(x[..., :3], None),
                lambda: gru.check_hidden_size(h, (2, 3, 6)),
                lambda: lstm.check_forward_args(x, (h[:, :, :2], h), None)):  # fmt: skip
        try:
            bad()
        except RuntimeError:
            got.append("RuntimeError")
    return got


@case("rnn_weight_norm_and_parametrizations", Leaf.of(X))
def _(lib, x):
    utils = lib.nn.utils
    m = utils.weight_norm(module(lib, "LSTM", 4, 6), "weight_hh_l0")
    out, (h, c) = m(x)
    g = module(lib, "GRU", 4, 6)
    utils.parametrizations.weight_norm(g, "weight_ih_l0")
    out2, h2 = g(x)
    names = sorted(n for n, _ in m.named_parameters())
    return out, h, c, out2, h2, names, grads(lib, (out, h, c, out2), x)


@case("rnn_dropout_between_layers_only_in_training", X)
def _(lib, x):
    m = module(lib, "RNN", 4, 6, num_layers=2, dropout=0.5)
    train_out, _ = m(x)
    m.eval()
    eval_out, _ = m(x)
    # values are random in training; compared: that training differs and eval is deterministic
    return bool((train_out != eval_out).any()), tuple(train_out.shape), m(x)[0]


@case("rnn_empty_sequence_refused", X[:0])
def _(lib, x):
    return module(lib, "GRU", 4, 6)(x)


@case("rnn_empty_sequence_batch_first_refused", X[:, :0])
def _(lib, x):
    return module(lib, "LSTM", 4, 6, batch_first=True)(x)


# -- cells -----------------------------------------------------------------------------------


@case("cells_values_and_grads", Leaf.of(XC), Leaf.of(HC), Leaf.of(HC * 0.5))
def _(lib, x, h, c):
    got = []
    for name, state in (("RNNCell", h), ("LSTMCell", (h, c)), ("GRUCell", h)):
        out = module(lib, name, 4, 6)(x, state)
        outs = out if isinstance(out, tuple) else (out,)
        got += [out, grads(lib, outs, x, h, c) if name == "LSTMCell" else grads(lib, outs, x, h)]
    return got


@case("cells_hx_none_and_unbatched", Leaf.of(XC[0]), Leaf.of(HC[0]))
def _(lib, x, h):
    got = []
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        m = module(lib, name, 4, 6)
        got.append(m(x))
        got.append(m(x[None]))
        state = (h, h) if name == "LSTMCell" else h
        got.append(m(x, state))
    got.append(grads(lib, [t for g in got for t in (g if isinstance(g, tuple) else (g,))], x, h))
    return got


@case("rnn_cell_relu_bias_false", Leaf.of(XC), Leaf.of(HC))
def _(lib, x, h):
    m = module(lib, "RNNCell", 4, 6, nonlinearity="relu", bias=False)
    out = m(x, h)
    return out, grads(lib, (out,), x, h), list(m.state_dict()), m.bias_ih is None


@case("cells_float64", Leaf.of(XC.astype(f64)))
def _(lib, x):
    out = [module(lib, n, 4, 6, dtype=lib.float64)(x) for n in ("RNNCell", "LSTMCell", "GRUCell")]
    return out, grads(lib, (out[0], *out[1], out[2]), x)


@case("cells_zero_hidden_size", Leaf.of(XC))
def _(lib, x):
    got = []
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        got.append(lib.nn.__dict__[name](4, 0)(x))
    return got


@case("cells_bias_false_grads", Leaf.of(XC), Leaf.of(HC))
def _(lib, x, h):
    got = []
    for name in ("LSTMCell", "GRUCell"):
        m = module(lib, name, 4, 6, bias=False)
        out = m(x, (h, h) if name == "LSTMCell" else h)
        got += [out, grads(lib, out if isinstance(out, tuple) else (out,), x, h)]
    return got


@case("lstm_cell_one_state_refused", XC, HC)
def _(lib, x, h):
    return module(lib, "LSTMCell", 4, 6)(x, (h,))


@case("cell_state_dtype_differs", XC, HC.astype(f64))
def _(lib, x, h):
    return module(lib, "RNNCell", 4, 6)(x, h)


@case("cell_input_size_mismatch", XC[:, :3])
def _(lib, x):
    return module(lib, "GRUCell", 4, 6)(x)


@case("cell_hidden_batch_mismatch", XC, HC[:2])
def _(lib, x, h):
    return module(lib, "RNNCell", 4, 6)(x, h)


@case("cell_hidden_size_mismatch", XC, HC[:, :5])
def _(lib, x, h):
    return module(lib, "LSTMCell", 4, 6)(x, (h, h))


@case("cell_3d_input_refused", X)
def _(lib, x):
    return module(lib, "GRUCell", 4, 6)(x)


@case("cell_unbatched_with_2d_state_refused", XC[0], HC)
def _(lib, x, h):
    return module(lib, "RNNCell", 4, 6)(x, h)


@case("cell_bad_nonlinearity", XC)
def _(lib, x):
    # built, refused when run (RuntimeError)
    return lib.nn.RNNCell(4, 6, nonlinearity="gelu")(x)


@case("cell_repr_and_state_dict", XC)
def _(lib, x):
    ms = [module(lib, "RNNCell", 4, 6, nonlinearity="relu"), module(lib, "LSTMCell", 4, 6),
          module(lib, "GRUCell", 4, 6, bias=False)]  # fmt: skip
    return [(repr(m), list(m.state_dict())) for m in ms]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SCENARIOS.names())
def test_matches_torch(torch, name, mode):
    SCENARIOS.check(torch, name, mode)
