"""`torch.nn.modules.sparse`'s names."""

from ..layers import Embedding
from ..layers_torch import EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
