"""Message body compression: the codecs named by sysFlag bits 8-10.

A compressed body (sysFlag COMPRESSED_FLAG) is stored exactly as the producer sent it; readers
decompress.  ZLIB (type 3, and type 0 from writers that predate the type bits) is a standard
zlib stream handled by the standard library.  LZ4 (an LZ4 frame) and ZSTD (a zstd frame) need
the optional ``lz4`` / ``zstandard`` packages; they are imported on first use and their absence
is reported as a ``CompressionError`` saying which package to install.
"""

from __future__ import annotations

import enum
import importlib
import zlib
from typing import Any

from rmq.common.sysflag import COMPRESSED_FLAG, compression_type_value

DEFAULT_COMPRESS_LEVEL = 5
DEFAULT_COMPRESS_BODY_OVER = 4096


class CompressionError(ValueError):
    """A body cannot be compressed or decompressed (bad data, unknown or unavailable codec)."""


class CompressionType(enum.IntEnum):
    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @property
    def sys_flag_bits(self) -> int:
        """The sysFlag bits a producer sets with COMPRESSED_FLAG for this codec."""
        return int(self) << 8

    @classmethod
    def of(cls, name: str) -> CompressionType:
        """Parse a codec name as ``rocketmq.message.compressType`` does (case-insensitive)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise CompressionError(f"Unsupported compress type name: {name}") from None


_MODULES = {CompressionType.LZ4: "lz4.frame", CompressionType.ZSTD: "zstandard"}
_PACKAGES = {CompressionType.LZ4: "lz4", CompressionType.ZSTD: "zstandard"}


def compression_type_of(sys_flag: int) -> CompressionType:
    """The codec of a compressed body, from its sysFlag."""
    value = compression_type_value(sys_flag)
    try:
        return CompressionType(value)
    except ValueError:
        raise CompressionError(f"Unknown compress type value: {value}") from None


def _codec_module(ctype: CompressionType) -> Any:
    try:
        return importlib.import_module(_MODULES[ctype])
    except ImportError:
        raise CompressionError(
            f"the body is {ctype.name}-compressed; install the Python package "
            f"'{_PACKAGES[ctype]}' to read it"
        ) from None


def compress(
    data: bytes, ctype: CompressionType = CompressionType.ZLIB, level: int = DEFAULT_COMPRESS_LEVEL
) -> bytes:
    """Compress a body the way the Java producer does for ``ctype``."""
    if ctype is CompressionType.ZLIB:
        return zlib.compress(data, level)
    module = _codec_module(ctype)
    if ctype is CompressionType.LZ4:
        return bytes(module.compress(data))
    return bytes(module.ZstdCompressor(level=level).compress(data))


def decompress(data: bytes | memoryview, ctype: CompressionType) -> bytes:
    """Decompress a body; corrupt data raises ``CompressionError``."""
    try:
        if ctype is CompressionType.ZLIB:
            return zlib.decompress(data)
        module = _codec_module(ctype)
        if ctype is CompressionType.LZ4:
            return bytes(module.decompress(data))
        return bytes(module.ZstdDecompressor().decompressobj().decompress(data))
    except CompressionError:
        raise
    except Exception as exc:
        raise CompressionError(f"cannot decompress {ctype.name} body: {exc}") from exc


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """The body a consumer sees: decompressed when the sysFlag says it is compressed."""
    if not sys_flag & COMPRESSED_FLAG:
        return body
    return decompress(body, compression_type_of(sys_flag))
