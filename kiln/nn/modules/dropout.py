"""`torch.nn.modules.dropout`'s names (`_DropoutNd`: the base of every dropout layer)."""

from ..layers import Dropout, Dropout1d, Dropout2d, Dropout3d, _DropoutNd
from ..layers_misc import AlphaDropout, FeatureAlphaDropout

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "FeatureAlphaDropout", "_DropoutNd"]  # fmt: skip
