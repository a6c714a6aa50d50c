"""`kn.Generator`: a seeded random-number stream object, as PyTorch's `torch.Generator`, for
the data utilities' shuffles and splits (`DataLoader(generator=...)`, `random_split`)."""

from __future__ import annotations

import os

import numpy as np

from .errors import DTypeMismatchError, ShapeMismatchError, call_error

__all__ = ["Generator"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU generator seed
_STATE_BYTES = 16 + 16 + 1 + 4 + 8  # PCG64 state, increment, cached-uint32 flag and value, seed


class Generator:
    """A random-number generator object (CPU), as PyTorch's: `manual_seed(seed)` returns it,
    `get_state()`/`set_state()` save and restore it (a uint8 Tensor, for checkpoints).

    Its numbers are NumPy's PCG64 stream, not PyTorch's Mersenne Twister: the same seed
    gives the same shuffles in every kiln run, not those PyTorch would give.

    >>> import kiln as kn
    >>> g = kn.Generator().manual_seed(0)
    >>> state = g.get_state()
    >>> first = g.randperm(5).tolist()
    >>> _ = g.set_state(state); g.randperm(5).tolist() == first, g.initial_seed()
    (True, 0)
    """

    def __init__(self, device="cpu"):
        if str(device) != "cpu":
            raise ValueError(f"kn.Generator supports device='cpu' only, got {device!r}")
        self.device = "cpu"
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        """Reseeds the stream; returns the generator."""
        seed = int(seed)
        self._seed = seed
        self._bits = np.random.PCG64(seed & ((1 << 128) - 1))
        self._rng = np.random.Generator(self._bits)
        return self

    def seed(self) -> int:
        """Reseeds from the operating system's entropy; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The stream's state as a uint8 Tensor (`set_state` takes it back)."""
        from .eager.tensor import make

        state = self._bits.state
        data = (
            state["state"]["state"].to_bytes(16, "little")
            + state["state"]["inc"].to_bytes(16, "little")
            + bytes([state["has_uint32"]])
            + int(state["uinteger"]).to_bytes(4, "little")
            + (self._seed & ((1 << 64) - 1)).to_bytes(8, "little")
        )
        return make(np.frombuffer(data, np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restores a state from `get_state()` (a uint8 Tensor or array)."""
        from .checkpoint import as_numpy

        data = as_numpy(new_state)
        if data.dtype != np.uint8 or data.shape != (_STATE_BYTES,):
            raise call_error(
                DTypeMismatchError if data.dtype != np.uint8 else ShapeMismatchError,
                f"expected a uint8 tensor of {_STATE_BYTES} bytes (from get_state()), got "
                f"{data.dtype} of shape {data.shape}", "Generator.set_state",
            )  # fmt: skip
        raw = data.tobytes()
        self._bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[:16], "little"),
                      "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }  # fmt: skip
        self._seed = int.from_bytes(raw[37:], "little")
        return self

    def randperm(self, n: int) -> np.ndarray:
        """A random permutation of range(n), as int64."""
        return self._rng.permutation(int(n)).astype(np.int64)

    def randint(self, high: int, size: int) -> np.ndarray:
        """`size` integers drawn uniformly from [0, high)."""
        return self._rng.integers(0, int(high), int(size), dtype=np.int64)

    def __repr__(self):
        return f"<kiln.Generator seed={self._seed}>"


def seeded_generator() -> Generator:
    """A Generator seeded from kiln's global seed stream (`kn.manual_seed` makes it
    reproducible): PyTorch's samplers draw their seed from the global generator likewise."""
    from .ops.random import next_seed

    return Generator().manual_seed(next_seed())
