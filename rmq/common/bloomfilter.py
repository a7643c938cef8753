"""The bloom filter parameters Apache's broker gives each SQL92 consumer (``BloomFilter``).

Apache's ``ConsumerFilterManager`` builds one bloom filter per broker from
``maxErrorRateOfBloomFilter`` (f, in percent) and ``expectConsumerNumUseFilter`` (n): k =
ceil(log_0.5(f/100)) hash functions and m = n * log2(100/f) * log2(e) bits rounded up to
whole bytes (20 % and 32 consumers: k = 3, m = 112).  Every SQL92 consumer filter it stores
carries ``bloomFilterData``: the k bit positions of ``"<group>#<topic>"`` and m.  The
positions come from the first 64 bits of Guava's ``murmur3_128`` (seed 0) of the UTF-8 text,
split into two ints combined as ``h1 + i * h2`` (i = 1..k, Java int arithmetic, negative
values bit-flipped) modulo m.  :class:`BloomFilter` reproduces both, so ``consumerFilter.json``
carries what Apache's would.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

__all__ = ["BloomFilter", "murmur3_x64_128"]

_MASK64 = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_BLOCK = struct.Struct("<QQ")


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK64


def _fmix(value: int) -> int:
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & _MASK64
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & _MASK64
    return value ^ (value >> 33)


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK64, 31) * _C2) & _MASK64


def _mix_k2(k2: int) -> int:
    return (_rotl((k2 * _C2) & _MASK64, 33) * _C1) & _MASK64


def murmur3_x64_128(data: bytes, seed: int = 0) -> tuple[int, int]:
    """MurmurHash3 x64 128 of ``data``: the two unsigned 64-bit halves (h1, h2)."""
    h1 = h2 = seed & _MASK64
    whole = len(data) - len(data) % 16
    for k1, k2 in _BLOCK.iter_unpack(data[:whole]):
        h1 ^= _mix_k1(k1)
        h1 = (((_rotl(h1, 27) + h2) & _MASK64) * 5 + 0x52DCE729) & _MASK64
        h2 ^= _mix_k2(k2)
        h2 = (((_rotl(h2, 31) + h1) & _MASK64) * 5 + 0x38495AB5) & _MASK64
    tail = data[whole:]
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        k2 = int.from_bytes(tail[8:], "little")
        if k2:
            h2 ^= _mix_k2(k2)
        h1 ^= _mix_k1(k1)
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    return h1, h2


def _log(base: float, value: float) -> float:
    """Apache's ``logMN``: log of ``value`` to ``base``, computed as Java does."""
    return math.log(value) / math.log(base)


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(frozen=True, slots=True)
class BloomFilter:
    """Apache's bloom filter of ``error_rate_percent`` (f) and ``expected`` consumers (n)."""

    error_rate_percent: int
    expected: int

    @property
    def hash_count(self) -> int:
        """k: the number of bit positions per text."""
        return math.ceil(_log(0.5, self.error_rate_percent / 100))

    @property
    def bits(self) -> int:
        """m: the bit count, a whole number of bytes."""
        rate = self.error_rate_percent / 100
        bits = math.ceil(self.expected * _log(2, 1 / rate) * _log(2, math.e))
        return 8 * math.ceil(bits / 8)

    def bit_positions(self, text: str) -> list[int]:
        """The k bit positions of ``text`` (Apache's ``calcBitPositions``)."""
        hash64 = murmur3_x64_128(text.encode("utf-8"))[0]
        low, high = _java_int(hash64), _java_int(hash64 >> 32)
        bits = self.bits
        positions = []
        for i in range(1, self.hash_count + 1):
            combined = _java_int(low + i * high)
            if combined < 0:
                combined = ~combined
            positions.append(combined % bits)
        return positions
