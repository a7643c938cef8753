"""Java ``String.hashCode`` as RocketMQ uses it: consume-queue tags codes and index key hashes.

Java hashes a string over its UTF-16 code units: ``h = 31*h + unit`` in signed 32-bit
arithmetic, so a character outside the Basic Multilingual Plane counts as two surrogate units.
Written out, ``h = sum(unit[i] * 31**(n-1-i)) mod 2**32``; we evaluate that sum in C with
``map(operator.mul, reversed(units), powers_of_31)`` instead of a per-character Python loop.
ASCII strings (nearly every tag and key) use their bytes as the code units directly; other
strings go through UTF-16 once.

Tags repeat across messages, so ``tags_code`` keeps a bounded cache.  Index keys
(``topic#key``) are hashed for every dispatched message and are mostly unique, but the keys a
producer sends one after another share all but their last characters (``order-10041``,
``order-10042``; a unique key is a fixed per-process prefix, the time and a counter in its last
four hex digits).  The hash extends over a suffix as ``h(head + tail) = h(head) * 31**len(tail)
+ h(tail)`` (mod 2**32), so ``index_key_hash`` caches the hash of an ASCII key's head (all but
the last four characters) and adds the four tail characters in line: a few hundred nanoseconds
instead of one to two microseconds for a 40-character key.  The head cache is a plain dict
emptied when it reaches its bound, so keys with nothing in common cost one insertion more than
an uncached hash.

``java_hash_order`` gives the order in which a Java ``HashMap`` / ``HashSet`` of strings (and a
``ConcurrentHashMap``) iterates its keys, which is the order fastjson writes them in;
``java_hash_order_by`` does the same for keys of any other ``hashCode``.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Final, TypeVar

from rmq.common import compiled

_MASK32: Final = 0xFFFFFFFF
_SIGN32: Final = 0x80000000
_UTF16_NATIVE: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_TAIL: Final = 4  # characters added to a cached head hash; index_key_hash spells out four
_HEAD_CACHE_SIZE: Final = 4096

K = TypeVar("K", bound=Hashable)


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


def _unsigned_hash(text: str) -> int:
    """``text.hashCode()`` as an unsigned 32-bit int."""
    if text.isascii():
        units: bytes | memoryview = text.encode("ascii")
    else:
        units = memoryview(text.encode(_UTF16_NATIVE)).cast("H")
    h: int = sum(map(operator.mul, reversed(units), _powers_for(len(units))))
    return h & _MASK32


def java_hash(text: str) -> int:
    """Return Java's ``text.hashCode()`` as a signed 32-bit int."""
    h = _unsigned_hash(text)
    return h - 0x100000000 if h & _SIGN32 else h


@functools.lru_cache(maxsize=4096)
def _cached_tags_code(tags: str) -> int:
    return java_hash(tags)


def tags_code(tags: str | None) -> int:
    """The consume-queue tags code of a TAGS value: 0 when absent or empty, else its hash."""
    if not tags:
        return 0
    return _cached_tags_code(tags)


# Unsigned hashes of ASCII key heads (a key without its last _TAIL characters).  Reads and
# writes of a dict are atomic, so threads share it without a lock.
_head_hashes: dict[str, int] = {}


def index_key_hash(key: str) -> int:
    """The index-file hash of a key string ``topic#key``: ``abs(hashCode)``, MIN_VALUE -> 0."""
    if len(key) > _TAIL and key.isascii():
        head = key[:-_TAIL]
        h = _head_hashes.get(head)
        if h is None:
            h = _unsigned_hash(head)
            if len(_head_hashes) >= _HEAD_CACHE_SIZE:
                _head_hashes.clear()
            _head_hashes[head] = h
        tail = key[-_TAIL:].encode("ascii")
        h = (h * 31**4 + tail[0] * 31**3 + tail[1] * 31**2 + tail[2] * 31 + tail[3]) & _MASK32
    else:
        h = _unsigned_hash(key)
    if h < _SIGN32:
        return h
    return 0x100000000 - h if h != _SIGN32 else 0


def java_hash_order(keys: Iterable[str], *, table_size: int = 16) -> list[str]:
    """``keys`` in the order a Java hash table of strings iterates them when they were put in
    this order (duplicates dropped): :func:`java_hash_order_by` with ``String.hashCode``."""
    return java_hash_order_by(keys, _unsigned_hash, table_size=table_size)


def java_hash_order_by(
    keys: Iterable[K], hash_code: Callable[[K], int], *, table_size: int = 16
) -> list[K]:
    """``keys`` in the order a Java hash table iterates them when they were put in this order
    (duplicates dropped): by bucket, ``(h ^ (h >>> 16)) & (size - 1)`` of the key's
    ``hashCode`` (``hash_code``, signed or unsigned), and in insertion order within a bucket.
    The table starts at ``table_size`` buckets (16 for ``new HashMap()`` / ``new HashSet()``)
    and doubles while it is more than three quarters full, as Java's does.  Buckets of eight
    keys and more, which Java turns into trees, are not modelled."""
    unique = list(dict.fromkeys(keys))
    size = table_size
    while len(unique) > size * 3 // 4:
        size *= 2

    def bucket(key: K) -> int:
        h = hash_code(key) & _MASK32
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(unique, key=bucket)


# The compiled twins (rmq.common.compiled); the functions above stay the reference.
_pure_java_hash = java_hash
_pure_index_key_hash = index_key_hash
_fast = compiled.load("rmq.common._speedups")
if _fast is not None:
    java_hash = _fast.java_hash
    index_key_hash = _fast.index_key_hash
