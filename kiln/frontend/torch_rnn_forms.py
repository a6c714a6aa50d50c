"""PyTorch's top-level recurrent functions: the cells `rnn_tanh_cell`, `rnn_relu_cell`,
`lstm_cell`, `gru_cell`, and the layers `lstm`, `gru`, `rnn_tanh`, `rnn_relu` over PyTorch's
flat weight list (`nn.LSTM`'s `_flat_weights` order), on eager Tensors, on Symbols in graph
mode and under `kn.compile`, built on kiln.nn.rnn's cells and `kn.scan`. The layers also take
PyTorch's packed form `(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
bidirectional)` (a PackedSequence's fields; the final states in its sorted batch order).

>>> import kiln as kn
>>> kn.rnn_tanh_cell(kn.zeros(1, 2), kn.zeros(1, 3), kn.ones(3, 2), kn.ones(3, 3)).shape
kiln.Size([1, 3])
"""

from __future__ import annotations

from ..eager.tensor import Tensor
from ..errors import ArgumentTypeError, ShapeError, UsageError
from ..graph.core import Symbol
from .core import lift
from .torch_nn_forms import K

__all__ = ["gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh",
           "rnn_tanh_cell"]  # fmt: skip


# -- recurrent cells and layers --------------------------------------------------------------


def _cell(mode, input, hx, w_ih, w_hh, b_ih, b_hh):  # noqa: A002
    from ..nn.rnn import _CELLS

    xw = K.matmul(input, K.t(w_ih))
    if b_ih is not None:
        xw = xw + b_ih
    return _CELLS[mode](xw, hx, K.t(w_hh), b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One Elman step, `tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)`.

    >>> import kiln as kn
    >>> kn.rnn_tanh_cell(kn.zeros(1, 2), kn.zeros(1, 3), kn.ones(3, 2), kn.ones(3, 3)).tolist()
    [[0.0, 0.0, 0.0]]
    """
    return _cell("RNN_TANH", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One Elman step with relu, `relu(input w_ih^T + b_ih + hx w_hh^T + b_hh)`.

    >>> import kiln as kn
    >>> kn.rnn_relu_cell(kn.ones(1, 2), kn.zeros(1, 1), kn.ones(1, 2), kn.ones(1, 1)).tolist()
    [[2.0]]
    """
    return _cell("RNN_RELU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One LSTM step (gates i, f, g, o): `hx = (h, c)`, returns `(h', c')`.

    >>> import kiln as kn
    >>> h, c = kn.lstm_cell(kn.zeros(1, 2), (kn.zeros(1, 1), kn.ones(1, 1)),
    ...                     kn.zeros(4, 2), kn.zeros(4, 1))
    >>> round(c.item(), 4), round(h.item(), 4)
    (0.5, 0.2311)
    """
    h, c = hx
    return _cell("LSTM", input, (h, c), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One GRU step (gates r, z, n): returns `h'`.

    >>> import kiln as kn
    >>> kn.gru_cell(kn.zeros(1, 2), kn.ones(1, 1), kn.zeros(3, 2), kn.zeros(3, 1)).tolist()
    [[0.5]]
    """
    return _cell("GRU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def _packed_rnn(mode, data, batch_sizes, states, params, has_biases, num_layers, dropout,
                train, bidirectional):  # fmt: skip
    """The packed form `(data, batch_sizes, hx, params, has_biases, num_layers, dropout,
    train, bidirectional)`: the steps padded (batch in sorted order), each sequence's steps
    past its end masked (its state kept), packed again; the states in the sorted order."""
    import numpy as np

    from ..nn.utils.rnn import _concrete, pack_steps, padded_steps

    sizes = _concrete(batch_sizes, f"{mode.lower()}: batch_sizes")
    (data,) = lift(data)
    if data.ndim != 2 or sizes.ndim != 1 or not len(sizes):
        raise ShapeError(f"{mode.lower()}: expected packed data (steps, input_size) and 1-d "
                         f"batch_sizes, got shapes {tuple(data.shape)} and "
                         f"{sizes.shape}")  # fmt: skip
    steps = len(sizes)
    lengths = (sizes[None, :] > np.arange(int(sizes[0]))[:, None]).sum(1)
    mask = (np.arange(steps)[:, None] < lengths[None, :])[:, :, None]  # (T, N, 1)
    x = padded_steps(data, sizes, steps)
    out, *finals = _flat_rnn(mode, x, states, params, has_biases, num_layers, dropout, train,
                             bidirectional, False, mask)  # fmt: skip
    return (pack_steps(out, sizes), *finals)


def _flat_rnn(mode, input, states, params, has_biases, num_layers, dropout, train,  # noqa: A002
              bidirectional, batch_first, mask=None):  # fmt: skip
    """The multi-layer recurrence of `torch.lstm`/`gru`/`rnn_*` on PyTorch's flat weight
    list (per layer and direction: w_ih, w_hh[, b_ih, b_hh]); where `mask` (T, N, 1) is
    False a step keeps its state and outputs 0."""
    from ..nn.rnn import _CELLS

    if any(isinstance(s, (Tensor, Symbol)) is False for s in states):
        raise ArgumentTypeError(f"{mode.lower()}: expected hx of Tensors, got "
                                f"{[type(s).__name__ for s in states]}")  # fmt: skip
    per = 4 if has_biases else 2
    # an LSTM whose h is narrower than its c has projections: w_hr after each group
    proj = mode == "LSTM" and states[0].shape[-1] != states[1].shape[-1]
    per += proj
    directions = 2 if bidirectional else 1
    params = list(params)
    if len(params) != per * directions * num_layers:
        raise UsageError(f"{mode.lower()}: expected {per * directions * num_layers} weights "
                            f"for {num_layers} layer(s), got {len(params)}")  # fmt: skip
    (x,) = lift(input)
    batched = x.ndim == 3
    if not batched:
        x, states = x.unsqueeze(1), [s.unsqueeze(1) for s in states]
    elif batch_first:
        x = K.transpose(x, 0, 1)
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            k = layer * directions + d
            w_ih, w_hh, *biases = params[k * per : (k + 1) * per]
            w_hr = biases.pop() if proj else None
            b_ih, b_hh = biases if biases else (None, None)
            xw = K.matmul(x, K.t(w_ih))
            xw = xw if b_ih is None else xw + b_ih
            w_hh_t, cell = K.t(w_hh), _CELLS[mode]
            if proj:
                w_hr_t = K.t(w_hr)

                def cell(x_t, state, w_hh_t, b_hh, base=cell, w_hr_t=w_hr_t):
                    h, c = base(x_t, state, w_hh_t, b_hh)
                    return K.matmul(h, w_hr_t), c

            def step(state, x_t, cell=cell, w_hh_t=w_hh_t, b_hh=b_hh):
                new = cell(x_t, state, w_hh_t, b_hh)
                return new, new[0]

            def masked_step(state, inputs, cell=cell, w_hh_t=w_hh_t, b_hh=b_hh):
                x_t, live = inputs
                new = cell(x_t, state, w_hh_t, b_hh)
                new = tuple(K.where(live, a, b) for a, b in zip(new, state))
                return new, K.where(live, new[0], 0.0)

            carry = tuple(s[k] for s in states)
            if mask is None:
                carry, ys = K.scan(step, carry, xw, reverse=d == 1)
            else:
                carry, ys = K.scan(masked_step, carry, (xw, mask), reverse=d == 1)
            outputs.append(ys)
            for f, c in zip(finals, carry):
                f.append(c)
        x = outputs[0] if len(outputs) == 1 else K.cat(outputs, -1)
        if dropout and train and layer < num_layers - 1:
            x = K.dropout(x, dropout, True)
    if not batched:
        return (x.squeeze(1), *[K.stack(f).squeeze(1) for f in finals])
    if batch_first:
        x = K.transpose(x, 0, 1)
    return (x, *[K.stack(f) for f in finals])


def lstm(input, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,  # noqa: A002
         bidirectional: bool, batch_first: bool):  # fmt: skip
    """`torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`: an LSTM over PyTorch's flat weights (`nn.LSTM`'s `_flat_weights`), `hx =
    (h_0, c_0)` of shape (layers * directions, N, H); returns `(output, h_n, c_n)`. An h_0
    narrower than c_0 (proj_size) means each group of weights ends with its `weight_hr`.

    >>> import kiln as kn
    >>> h0 = kn.zeros(1, 2, 3)
    >>> ws = [kn.zeros(12, 4), kn.zeros(12, 3), kn.zeros(12), kn.zeros(12)]
    >>> out, h, c = kn.lstm(kn.ones(5, 2, 4), (h0, h0), ws, True, 1, 0.0, False, False, False)
    >>> tuple(out.shape), tuple(h.shape), tuple(c.shape)
    ((5, 2, 3), (1, 2, 3), (1, 2, 3))
    """
    if isinstance(hx, (Tensor, Symbol)):  # the packed form: hx is batch_sizes
        # (its arguments one place on: hx in `params`, params in `has_biases`, ...)
        return _packed_rnn("LSTM", input, hx, list(params), has_biases, num_layers, dropout,
                           train, bidirectional, batch_first)  # fmt: skip
    h0, c0 = hx
    return _flat_rnn("LSTM", input, [h0, c0], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)  # fmt: skip


def gru(input, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,  # noqa: A002
        bidirectional: bool, batch_first: bool):  # fmt: skip
    """`torch.gru(input, hx, params, ...)`: a GRU over PyTorch's flat weights; returns
    `(output, h_n)`.

    >>> import kiln as kn
    >>> ws = [kn.zeros(9, 4), kn.zeros(9, 3)]
    >>> out, h = kn.gru(kn.ones(5, 4), kn.ones(1, 3), ws, False, 1, 0.0, False, False, False)
    >>> out[-1].tolist(), tuple(h.shape)
    ([0.03125, 0.03125, 0.03125], (1, 3))
    >>> data, sizes = kn.ones(3, 4), kn.tensor([2, 1])  # packed: lengths 2 and 1
    >>> out, h = kn.gru(data, sizes, kn.ones(1, 2, 3), ws, False, 1, 0.0, False, False)
    >>> tuple(out.shape), h[0, :, 0].tolist()
    ((3, 3), [0.25, 0.5])
    """
    if isinstance(params, (Tensor, Symbol)):  # the packed form: hx is batch_sizes
        return _packed_rnn("GRU", input, hx, [params], has_biases, num_layers, dropout,
                           train, bidirectional, batch_first)  # fmt: skip
    return _flat_rnn("GRU", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)  # fmt: skip


def rnn_tanh(input, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,  # noqa: A002
             bidirectional: bool, batch_first: bool):  # fmt: skip
    """`torch.rnn_tanh(input, hx, params, ...)`: an Elman RNN (tanh) over PyTorch's flat
    weights; returns `(output, h_n)`.

    >>> import kiln as kn
    >>> ws = [kn.zeros(3, 4), kn.zeros(3, 3)]
    >>> out, h = kn.rnn_tanh(kn.ones(5, 4), kn.ones(1, 3), ws, False, 1, 0.0, False, False,
    ...                      False)
    >>> out[0].tolist()
    [0.0, 0.0, 0.0]
    """
    if isinstance(params, (Tensor, Symbol)):  # the packed form: hx is batch_sizes
        return _packed_rnn("RNN_TANH", input, hx, [params], has_biases, num_layers, dropout,
                           train, bidirectional, batch_first)  # fmt: skip
    return _flat_rnn("RNN_TANH", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)  # fmt: skip


def rnn_relu(input, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,  # noqa: A002
             bidirectional: bool, batch_first: bool):  # fmt: skip
    """`torch.rnn_relu(input, hx, params, ...)`: an Elman RNN (relu) over PyTorch's flat
    weights; returns `(output, h_n)`.

    >>> import kiln as kn
    >>> ws = [kn.ones(1, 1), kn.zeros(1, 1)]
    >>> out, h = kn.rnn_relu(kn.ones(2, 1), kn.zeros(1, 1), ws, False, 1, 0.0, False, False,
    ...                      False)
    >>> out.tolist()
    [[1.0], [1.0]]
    """
    if isinstance(params, (Tensor, Symbol)):  # the packed form: hx is batch_sizes
        return _packed_rnn("RNN_RELU", input, hx, [params], has_biases, num_layers, dropout,
                           train, bidirectional, batch_first)  # fmt: skip
    return _flat_rnn("RNN_RELU", input, [hx], params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)  # fmt: skip
