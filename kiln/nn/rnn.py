"""Recurrent layers with PyTorch's API, weights and gate order: `RNN`, `LSTM`, `GRU`, each a
`kn.scan` over time per layer and direction (one region op in a graph; a Python loop eagerly).

The input projections of all time steps are one matmul before the scan; the scan's body
adds the recurrent term and applies the cell. Parameters are PyTorch's: `weight_ih_l{k}`
(gates * hidden, input), `weight_hh_l{k}` (gates * hidden, hidden), `bias_ih_l{k}` and
`bias_hh_l{k}` (with `_reverse` for the second direction), gates stacked in PyTorch's order
(LSTM: input, forget, cell, output; GRU: reset, update, new), all drawn from
U(-1/sqrt(hidden), 1/sqrt(hidden)); so a torch state_dict loads as it is. An LSTM with
`proj_size` also has `weight_hr_l{k}` (proj_size, hidden) and carries h_t = W_hr h'_t.
A PackedSequence input (`kn.nn.utils.rnn`) is run padded, each sequence's steps past its
end masked.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import dtypes as dt
from .. import frontend as F
from .. import init
from ..errors import ArgumentError, DTypeMismatchError, ShapeError
from ..frontend.autocast import lower_precision
from ..frontend.control import scan
from ..frontend.nn_functional import dropout as _dropout
from ..ops.core import scalar
from .module import Module, Parameter
from .utils.rnn import PackedSequence, pack_steps, padded_steps

__all__ = ["RNN", "LSTM", "GRU", "RNNBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """The layers, directions and parameters every recurrent layer shares (PyTorch's)."""

    def __init__(
        self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
        bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
        bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None,
    ):  # fmt: skip
        super().__init__()
        if proj_size < 0:
            raise ArgumentError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size and mode != "LSTM":
            raise ArgumentError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ArgumentError("proj_size has to be smaller than hidden_size")
        if (
            isinstance(dropout, bool)
            or not isinstance(dropout, numbers.Number)
            or not (0 <= dropout <= 1)
        ):
            raise ArgumentError(f"dropout should be a number in range [0, 1], got {dropout}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got dropout="
                f"{dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        if hidden_size <= 0 or num_layers <= 0:
            raise ArgumentError("hidden_size and num_layers must be positive")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        dtype = dt.as_dtype(dtype or dt.DEFAULT_FLOAT)
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size  # LSTM with proj_size: h_t = W_hr (o * tanh(c_t))
        bound = 1.0 / math.sqrt(hidden_size)
        draw = init.uniform(-bound, bound)
        self._all_weights = []  # PyTorch's: each layer's and direction's parameter names
        for layer in range(num_layers):
            for suffix in self._suffixes(layer):
                size = input_size if layer == 0 else out_size * self._directions
                shapes = {"weight_ih": (gate_size, size), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes.update(weight_hr=(proj_size, hidden_size))
                for name, shape in shapes.items():
                    setattr(self, name + suffix, Parameter(draw(shape, dtype)))
                self._all_weights.append([name + suffix for name in shapes])
        self._flat_weights_names = [name for names in self._all_weights for name in names]
        if device is not None:
            self.to(device)

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> list:
        return [f"_l{layer}"] + ([f"_l{layer}_reverse"] if self.bidirectional else [])

    @property
    def all_weights(self) -> list:
        """Each layer's and direction's parameters, in PyTorch's order (weight_ih, weight_hh,
        bias_ih, bias_hh, weight_hr).

        >>> import kiln as kn
        >>> [len(w) for w in kn.nn.LSTM(2, 3, num_layers=2).all_weights]
        [4, 4]
        """
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    def reset_parameters(self) -> None:
        """Redraws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) in
        place, as PyTorch's.

        >>> import kiln as kn
        >>> gru = kn.nn.GRU(2, 4)
        >>> gru.reset_parameters()
        >>> bool(gru.weight_hh_l0.abs().max() <= 0.5)
        True
        """
        from . import init as nn_init  # NOTE: lazy: kiln.nn.init imports this package's parts

        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            nn_init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """PyTorch's call that packs the weights for cuDNN: kiln keeps them as they are, so
        there is nothing to do (as PyTorch on the CPU)."""

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text

    def _run(self, input, states):  # noqa: A002 -- PyTorch's name
        """(output, final states): `states` is one (layers * directions, N, H) value per state
        (h; LSTM: h and c), or None for zeros. A PackedSequence input gives a PackedSequence
        output and each sequence's own final states (in the batch's original order)."""
        self._check_dtypes(input.data if isinstance(input, PackedSequence) else input, states)
        if isinstance(input, PackedSequence):
            return self._run_packed(input, states)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ArgumentError(
                f"{type(self).__name__}: expected a 2-d or 3-d input, got "
                f"{input.ndim}-d of shape {tuple(input.shape)}"
            )
        (input,) = lower_precision(input)  # noqa: A001 -- under autocast: the low dtype
        if states is not None:
            states = list(lower_precision(*states))
            if not batched:
                for s in states:
                    if s.ndim != 2:
                        raise ShapeError(
                            f"{type(self).__name__}: For unbatched 2-D input, hx should also "
                            f"be 2-D but got {s.ndim}-D tensor"
                        )
                states = [F.unsqueeze(s, 1) for s in states]
        x = input if batched else F.unsqueeze(input, 1)
        if x.shape[1 if batched and self.batch_first else 0] == 0:
            raise ShapeError(f"{type(self).__name__}: Expected sequence length to be larger "
                             f"than 0 in RNN, got input of shape {tuple(input.shape)}")  # fmt: skip
        if batched and self.batch_first:
            self._check_sizes(x.shape[-1], x.shape[0], states)
        else:
            self._check_sizes(x.shape[-1], x.shape[1], states)
        if batched and self.batch_first:
            x = F.transpose(x, 0, 1)  # (L, N, H_in)
        x, finals = self._layers(x, states)
        if batched and self.batch_first:
            x = F.transpose(x, 0, 1)
        if not batched:
            x = F.squeeze(x, 1)
            finals = [F.squeeze(f, 1) for f in finals]
        return x, finals

    def _run_packed(self, packed, states):
        """The layers over a PackedSequence: its steps padded into (T, N, H_in) in sorted
        batch order, each sequence's steps past its end masked (its state kept, its output
        0), then packed again; `states` in and out are in the original batch order."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if data.ndim != 2:
            raise ArgumentError(
                f"{type(self).__name__}: expected packed data of 2 dims (steps, input_size), "
                f"got shape {tuple(data.shape)}"
            )
        (data,) = lower_precision(data)
        sizes = np.asarray(batch_sizes.tolist(), np.int64)
        steps = len(sizes)
        x = padded_steps(data, sizes, steps)
        lengths = (sizes[None, :] > np.arange(int(sizes[0]))[:, None]).sum(1)
        mask = (np.arange(steps)[:, None] < lengths[None, :])[:, :, None]  # (T, N, 1)
        self._check_sizes(data.shape[-1], int(sizes[0]), states)
        if states is not None:
            states = list(lower_precision(*states))
            if sorted_indices is not None:
                order = np.asarray(sorted_indices.tolist(), np.int64)
                states = [s[:, order] for s in states]
        x, finals = self._layers(x, states, mask)
        if unsorted_indices is not None:
            order = np.asarray(unsorted_indices.tolist(), np.int64)
            finals = [f[:, order] for f in finals]
        out = PackedSequence(pack_steps(x, sizes), batch_sizes, sorted_indices,
                             unsorted_indices)  # fmt: skip
        return out, finals

    # -- PyTorch's checks, for subclasses that call them ---------------------------------

    def check_input(self, input, batch_sizes) -> None:  # noqa: A002
        """Raises (RuntimeError) unless `input` has 2 dims (packed data, `batch_sizes`
        given) or 3 and `input_size` features.

        >>> import kiln as kn
        >>> kn.nn.GRU(3, 4).check_input(kn.zeros(5, 2, 3), None)
        """
        want = 2 if batch_sizes is not None else 3
        if input.ndim != want:
            raise ShapeError(f"input must have {want} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {input.shape[-1]}")  # fmt: skip

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:  # noqa: A002
        """(layers * directions, batch, proj_size or hidden_size) for `input`.

        >>> import kiln as kn
        >>> kn.nn.LSTM(3, 4, proj_size=2).get_expected_hidden_size(kn.zeros(5, 2, 3), None)
        (1, 2, 2)
        """
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * self._directions, batch, self.proj_size or self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg: str = "Expected hidden size {}, got {}") -> None:  # fmt: skip
        """Raises (RuntimeError) unless `hx` has the shape `expected_hidden_size`."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise ShapeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:  # noqa: A002
        """`check_input` and `check_hidden_size` (LSTM: of h and of c)."""
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode != "LSTM":
            self.check_hidden_size(hidden, expected)
            return
        self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")  # fmt: skip

    def get_expected_cell_size(self, input, batch_sizes) -> tuple:  # noqa: A002
        """An LSTM's (layers * directions, batch, hidden_size) for `input`."""
        *head, _ = self.get_expected_hidden_size(input, batch_sizes)
        return (*head, self.hidden_size)

    def permute_hidden(self, hx, permutation):
        """`hx` (LSTM: both states) with its batch (dim 1) in the order `permutation`
        (None: as it is).

        >>> import kiln as kn
        >>> kn.nn.RNN(1, 1).permute_hidden(kn.tensor([[[1.0], [2.0]]]), kn.tensor([1, 0])).tolist()
        [[[2.0], [1.0]]]
        """
        if permutation is None:
            return hx
        if self.mode == "LSTM":
            return tuple(F.index_select(h, 1, permutation) for h in hx)
        return F.index_select(hx, 1, permutation)

    def _check_dtypes(self, input, states) -> None:  # noqa: A002
        """PyTorch's checks (outside autocast): the input has the weights' dtype (else
        ValueError), each initial state the input's (else a RuntimeError); kiln would
        otherwise promote."""
        from ..frontend.autocast import _state

        if _state.enabled:
            return
        weight = self._flat_weights[0].dtype
        if input.dtype != weight:
            raise ArgumentError(
                f"{type(self).__name__}: RNN input dtype ({input.dtype}) does not match weight "
                f"dtype ({weight}). Convert input: input.to({weight}), or convert model: "
                f"model.to({input.dtype})"
            )
        for k, state in enumerate(states or ()):
            if state.dtype != input.dtype:
                raise DTypeMismatchError(
                    f"{type(self).__name__}: expected hidden[{k}] of the input's dtype "
                    f"{input.dtype}, got {state.dtype}"
                )

    def _check_sizes(self, features, batch, states) -> None:
        """PyTorch's checks of the input's feature size and of each initial state's shape
        (layers * directions, batch, size): kiln would otherwise broadcast a wrong one."""
        if isinstance(features, int) and features != self.input_size:
            raise ShapeError(
                f"{type(self).__name__}: input.size(-1) must be equal to input_size. "
                f"Expected {self.input_size}, got {features}"
            )
        if states is None:
            return
        total = self.num_layers * self._directions
        sizes = [self.proj_size or self.hidden_size, self.hidden_size]
        for k, (state, size) in enumerate(zip(states, sizes)):
            want = (total, batch, size)
            got = tuple(state.shape)
            if all(isinstance(n, int) for n in (*want, *got)) and got != want:
                which = f"hidden[{k}]" if len(states) > 1 else "hidden"
                raise ShapeError(
                    f"{type(self).__name__}: Expected {which} size {want}, got {list(got)}"
                )

    def _layers(self, x, states, mask=None):
        """Every layer and direction over x (L, N, H_in): (output (L, N, D * H), finals)."""
        n = x.shape[1]
        total = self.num_layers * self._directions
        if states is None:
            zero = F.broadcast_to(scalar(0, x), (total, n, self.proj_size or self.hidden_size))
            states = [zero]
            if self.mode == "LSTM":
                states.append(F.broadcast_to(scalar(0, x), (total, n, self.hidden_size)))
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(self._suffixes(layer)):
                k = layer * self._directions + d
                carry = tuple(s[k] for s in states)
                carry, ys = self._direction(x, carry, suffix, reverse=d == 1, mask=mask)
                outputs.append(ys)
                for f, c in zip(finals, carry):
                    f.append(c)
            x = outputs[0] if len(outputs) == 1 else F.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        return x, [F.stack(f) for f in finals]

    def _direction(self, x, carry, suffix, reverse, mask=None):
        """One layer in one direction: the input projections of every step at once, then
        the recurrence as a scan; where `mask` (L, N, 1) is False a step keeps the state and
        outputs 0 (a packed sequence past its end: the reverse direction then starts at
        each sequence's own last step)."""
        w_ih, w_hh = getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)
        b_ih = getattr(self, "bias_ih" + suffix) if self.bias else None
        b_hh = getattr(self, "bias_hh" + suffix) if self.bias else None
        w_ih, w_hh, b_ih, b_hh = lower_precision(w_ih, w_hh, b_ih, b_hh)  # under autocast
        xw = F.matmul(x, F.t(w_ih))
        if b_ih is not None:
            xw = xw + b_ih
        base = _CELLS[self.mode]
        w_hh_t = F.t(w_hh)
        cell = base
        if self.proj_size:
            (w_hr,) = lower_precision(getattr(self, "weight_hr" + suffix))
            w_hr_t = F.t(w_hr)

            def cell(x_t, state, w_hh_t, b_hh):
                h, c = base(x_t, state, w_hh_t, b_hh)
                return F.matmul(h, w_hr_t), c

        def step(state, x_t):
            new = cell(x_t, state, w_hh_t, b_hh)
            return new, new[0]

        def masked_step(state, inputs):
            x_t, live = inputs
            new = cell(x_t, state, w_hh_t, b_hh)
            new = tuple(F.where(live, a, b) for a, b in zip(new, state))
            return new, F.where(live, new[0], 0.0)

        if mask is None:
            return scan(step, carry, xw, reverse=reverse)
        return scan(masked_step, carry, (xw, mask), reverse=reverse)


def _recurrent(h, w_hh_t, b_hh):
    r = F.matmul(h, w_hh_t)
    return r if b_hh is None else r + b_hh


def _rnn_tanh(x_t, state, w_hh_t, b_hh):
    return (F.tanh(x_t + _recurrent(state[0], w_hh_t, b_hh)),)


def _rnn_relu(x_t, state, w_hh_t, b_hh):
    return (F.relu(x_t + _recurrent(state[0], w_hh_t, b_hh)),)


def _lstm(x_t, state, w_hh_t, b_hh):
    h, c = state
    i, f, g, o = F.chunk(x_t + _recurrent(h, w_hh_t, b_hh), 4, -1)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    return F.sigmoid(o) * F.tanh(c), c


def _gru(x_t, state, w_hh_t, b_hh):
    (h,) = state
    xr, xz, xn = F.chunk(x_t, 3, -1)
    hr, hz, hn = F.chunk(_recurrent(h, w_hh_t, b_hh), 3, -1)
    r = F.sigmoid(xr + hr)
    z = F.sigmoid(xz + hz)
    n = F.tanh(xn + r * hn)
    return ((1.0 - z) * n + z * h,)


_CELLS = {"RNN_TANH": _rnn_tanh, "RNN_RELU": _rnn_relu, "LSTM": _lstm, "GRU": _gru}


class RNN(RNNBase):
    """An Elman RNN, `h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)` (or relu), as
    PyTorch's `nn.RNN`: `forward(input, hx=None)` returns `(output, h_n)`.

    >>> import kiln as kn
    >>> rnn = kn.nn.RNN(4, 3, num_layers=2, batch_first=True)
    >>> out, h_n = rnn(kn.randn(5, 7, 4))
    >>> tuple(out.shape), tuple(h_n.shape)
    ((5, 7, 3), (2, 5, 3))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None):  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device,
                         dtype=dtype)  # fmt: skip
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002 -- PyTorch's name
        output, (h_n,) = self._run(input, None if hx is None else [hx])
        return output, h_n


class LSTM(RNNBase):
    """A long short-term memory layer as PyTorch's `nn.LSTM` (gates i, f, g, o):
    `forward(input, hx=None)` with `hx = (h_0, c_0)` returns `(output, (h_n, c_n))`.

    >>> import kiln as kn
    >>> lstm = kn.nn.LSTM(4, 3, bidirectional=True)
    >>> out, (h_n, c_n) = lstm(kn.randn(7, 5, 4))
    >>> tuple(out.shape), tuple(h_n.shape), tuple(c_n.shape)
    ((7, 5, 6), (2, 5, 3), (2, 5, 3))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        output, (h_n, c_n) = self._run(input, None if hx is None else list(hx))
        return output, (h_n, c_n)


class GRU(RNNBase):
    """A gated recurrent unit layer as PyTorch's `nn.GRU` (gates r, z, n):
    `forward(input, hx=None)` returns `(output, h_n)`.

    >>> import kiln as kn
    >>> gru = kn.nn.GRU(4, 3)
    >>> out, h_n = gru(kn.randn(7, 4))  # unbatched: (L, H_in)
    >>> tuple(out.shape), tuple(h_n.shape)
    ((7, 3), (1, 3))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        output, (h_n,) = self._run(input, None if hx is None else [hx])
        return output, h_n
