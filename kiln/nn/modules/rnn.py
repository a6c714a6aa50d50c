"""`torch.nn.modules.rnn`'s names."""

from ..layers_torch import GRUCell, LSTMCell, RNNCell, RNNCellBase
from ..rnn import GRU, LSTM, RNN, RNNBase

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]
