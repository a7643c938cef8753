"""Java ``String.hashCode`` as RocketMQ uses it: consume-queue tags codes and index key hashes.

Java hashes a string over its UTF-16 code units: ``h = 31*h + unit`` in signed 32-bit
arithmetic, so a character outside the Basic Multilingual Plane counts as two surrogate units.
Written out, ``h = sum(unit[i] * 31**(n-1-i)) mod 2**32``; we evaluate that sum in C with
``map(operator.mul, reversed(units), powers_of_31)`` instead of a per-character Python loop.
ASCII strings (nearly every tag and key) use their bytes as the code units directly; other
strings go through UTF-16 once.

Tags repeat across messages, so ``tags_code`` keeps a bounded cache; index keys
(``topic#key``) are mostly unique and are hashed without one.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading

_MASK32 = 0xFFFFFFFF
_SIGN32 = 0x80000000
_INT_MIN = -0x80000000
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def _powers_of_31(count: int) -> list[int]:
    powers = [1] * count
    for i in range(1, count):
        powers[i] = (powers[i - 1] * 31) & _MASK32
    return powers


# _powers[i] == 31**i mod 2**32.  A published list is never mutated: longer strings swap in a
# longer list under the lock, so concurrent readers always see a consistent table.
_powers = _powers_of_31(256)
_powers_lock = threading.Lock()


def _powers_for(length: int) -> list[int]:
    global _powers
    powers = _powers
    if len(powers) < length:
        with _powers_lock:
            if len(_powers) < length:
                _powers = _powers_of_31(max(length, 2 * len(_powers)))
            powers = _powers
    return powers


def java_hash(text: str) -> int:
    """Return Java's ``text.hashCode()`` as a signed 32-bit int."""
    if text.isascii():
        units: bytes | memoryview = text.encode("ascii")
    else:
        units = memoryview(text.encode(_UTF16_NATIVE)).cast("H")
    h: int = sum(map(operator.mul, reversed(units), _powers_for(len(units)))) & _MASK32
    return h - 0x100000000 if h & _SIGN32 else h


@functools.lru_cache(maxsize=4096)
def _cached_tags_code(tags: str) -> int:
    return java_hash(tags)


def tags_code(tags: str | None) -> int:
    """The consume-queue tags code of a TAGS value: 0 when absent or empty, else its hash."""
    if not tags:
        return 0
    return _cached_tags_code(tags)


def index_key_hash(key: str) -> int:
    """The index-file hash of a key string ``topic#key``: ``abs(hashCode)``, MIN_VALUE -> 0."""
    h = java_hash(key)
    if h == _INT_MIN:
        return 0
    return -h if h < 0 else h
