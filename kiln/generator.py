"""`kn.Generator`: a seeded random-number stream object, as PyTorch's `torch.Generator`, for
the data utilities' shuffles and splits (`DataLoader(generator=...)`, `random_split`)."""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from .array_types import device as _device
from .errors import ArgumentError, DTypeMismatchError, ShapeMismatchError, call_error

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
            raise ArgumentError(f"kn.Generator supports device='cpu' only, got {device!r}")
        self.device = _device("cpu")  # a device object, as PyTorch's (`g.device.type`)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        """Reseeds the stream; returns the generator."""
        seed = int(seed)
        self._seed = seed
        self._bits = np.random.PCG64(seed & ((1 << 128) - 1))
        self._rng = np.random.Generator(self._bits)
        self._normals = _EMPTY  # float32 normals drawn ahead (see `normal`)
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
            + self._normals.tobytes()  # the normals drawn ahead, in order (little-endian)
        )
        return make(np.frombuffer(data, np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restores a state from `get_state()` (a uint8 Tensor or array)."""
        from .checkpoint import as_numpy

        data = as_numpy(new_state)
        if (
            data.dtype != np.uint8
            or data.ndim != 1
            or data.size < _STATE_BYTES
            or (data.size - _STATE_BYTES) % 4
        ):
            raise call_error(
                DTypeMismatchError if data.dtype != np.uint8 else ShapeMismatchError,
                f"expected a uint8 tensor of {_STATE_BYTES} bytes plus 4 per normal drawn "
                f"ahead (from get_state()), got {data.dtype} of shape {data.shape}",
                "Generator.set_state",
            )  # fmt: skip
        raw = data.tobytes()
        self._normals = np.frombuffer(raw[_STATE_BYTES:], "<f4").astype(np.float32)
        self._bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[:16], "little"),
                      "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }  # fmt: skip
        self._seed = int.from_bytes(raw[37:_STATE_BYTES], "little")
        return self

    def next_seed(self) -> int:
        """A seed for one random op, drawn from this stream (`generator=` arguments)."""
        return int(self._rng.integers(0, 2**63 - 1))

    def randperm(self, n: int) -> np.ndarray:
        """A random permutation of range(n), as int64."""
        return self._rng.permutation(int(n)).astype(np.int64)

    def randint(self, high: int, size: int) -> np.ndarray:
        """`size` integers drawn uniformly from [0, high)."""
        return self._rng.integers(0, int(high), int(size), dtype=np.int64)

    # -- the eager random factories' draws (`kn.randn(..., generator=g)`; without a generator,
    # `default_generator`'s): one stream, drawn in order and never reseeded, so the same seed
    # gives the same sequence of draws.

    def _normal(self, shape, dtype) -> np.ndarray:
        """Samples of N(0, 1) of `shape` as `dtype` (a float dtype). float32 (and narrower)
        values come from `_box_muller` blocks of this stream, taken in order; float64 from
        NumPy's ziggurat on it."""
        if dtype is _F64 or dtype == _F64:
            return self._rng.standard_normal(shape)
        n = math.prod(shape)
        with _lock:
            ahead = self._normals
            if n <= len(ahead):  # the common case: a slice of the block drawn ahead
                self._normals = ahead[n:]
                values = ahead[:n].copy()
            else:
                blocks = -(-(n - len(ahead)) // _BLOCK)  # block by block: one stream
                drawn = [ahead, *(_box_muller(self._bits, _BLOCK) for _ in range(blocks))]
                drawn = np.concatenate(drawn)
                values, self._normals = drawn[:n].copy(), drawn[n:]
        if len(shape) != 1:
            values = values.reshape(shape)
        return values if dtype is _F32 or dtype == _F32 else values.astype(dtype)

    def _uniform(self, shape, dtype) -> np.ndarray:
        """Samples of U[0, 1) of `shape` as `dtype` (a float dtype)."""
        if dtype is _F32 or dtype is _F64 or dtype in (_F32, _F64):
            return self._rng.random(shape, dtype=dtype)
        return self._rng.random(shape, dtype=_F32).astype(dtype)

    def _integers(self, low: int, high: int, shape) -> np.ndarray:
        """int64 samples of `shape` drawn uniformly from [low, high): uniforms of 53 bits
        scaled and floored (faster here than NumPy's `integers`)."""
        n = high - low
        u = self._rng.random(shape)
        u *= n
        values = u.astype(np.int64)  # floor, as u * n >= 0
        # NOTE: u * n < n for u < 1 and n < 2**53 (rounded to nearest), but may reach n beyond
        if n >= 1 << 53:
            np.minimum(values, n - 1, out=values)
        if low:
            values += low
        return values

    def __repr__(self):
        return f"<kiln.Generator seed={self._seed}>"


# PyTorch draws float normals on the CPU the same way (Box-Muller on float uniforms), which is
# about 3x faster than NumPy's ziggurat sampler for float32: 3.2 ns a value in blocks of 16384
# against 9 ns. A block is the unit of the stream: `_normal` takes values from the block drawn
# ahead, in order, so draws of 3 and then 5 values are the first 8 of the stream.
_BLOCK = 1 << 14
_TWO_PI = np.float32(2 * np.pi)
_UNIT = np.float32(2.0**-24)
_EMPTY = np.empty(0, np.float32)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_lock = threading.Lock()


def _box_muller(bits, n: int) -> np.ndarray:
    """`n` (even) float32 samples of N(0, 1) from the bit generator `bits`: uniforms of 24
    bits u1, u2 give sqrt(-2 log(1 - u1)) times cos(2 pi u2) and sin(2 pi u2)."""
    half = n // 2
    u = bits.random_raw(half).view(np.uint32)  # n uniform 32-bit words
    np.right_shift(u, 8, out=u)
    u = np.multiply(u, _UNIT, dtype=np.float32, casting="unsafe")  # [0, 1) in steps of 2^-24
    radius, angle = u[:half], u[half:]
    np.subtract(1, radius, out=radius)  # (0, 1]: log is finite
    np.log(radius, out=radius)
    radius *= -2
    np.sqrt(radius, out=radius)
    angle *= _TWO_PI
    out = np.empty(n, np.float32)
    np.cos(angle, out=out[:half])
    np.sin(angle, out=out[half:])
    out[:half] *= radius
    out[half:] *= radius
    return out


default_generator = Generator()  # the eager factories' stream; `kn.manual_seed` reseeds it


def seeded_generator() -> Generator:
    """A Generator seeded from kiln's global seed stream (`kn.manual_seed` makes it
    reproducible): PyTorch's samplers draw their seed from the global generator likewise."""
    from .ops.random import next_seed

    return Generator().manual_seed(next_seed())
