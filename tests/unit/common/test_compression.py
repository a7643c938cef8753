"""Body compression codecs selected by sysFlag."""

from __future__ import annotations

import importlib.util
import zlib

import pytest

from rmq.common.compression import (
    CompressionError,
    CompressionType,
    compress,
    compression_type_of,
    decompress,
    decompress_body,
)


def test_zlib_round_trip_is_a_standard_zlib_stream() -> None:
    body = b"RocketMQ " * 1000
    packed = compress(body)
    assert zlib.decompress(packed) == body
    assert decompress(packed, CompressionType.ZLIB) == body


def test_codec_from_sys_flag() -> None:
    assert compression_type_of(0x1) is CompressionType.ZLIB
    assert compression_type_of(0x301) is CompressionType.ZLIB
    assert compression_type_of(0x101) is CompressionType.LZ4
    assert compression_type_of(0x201) is CompressionType.ZSTD
    with pytest.raises(CompressionError, match="Unknown compress type value: 4"):
        compression_type_of(0x401)
    assert CompressionType.ZLIB.sys_flag_bits == 0x300


def test_codec_names() -> None:
    assert CompressionType.of(" zstd ") is CompressionType.ZSTD
    with pytest.raises(CompressionError, match="Unsupported compress type name: gzip"):
        CompressionType.of("gzip")


def test_decompress_body_only_when_flagged() -> None:
    raw = zlib.compress(b"payload")
    assert decompress_body(raw, 0) == raw
    assert decompress_body(raw, 0x1) == b"payload"
    with pytest.raises(CompressionError, match="cannot decompress ZLIB body"):
        decompress_body(b"not zlib", 0x1)


@pytest.mark.parametrize(
    ("ctype", "module"), [(CompressionType.LZ4, "lz4"), (CompressionType.ZSTD, "zstandard")]
)
def test_optional_codecs(ctype: CompressionType, module: str) -> None:
    body = b"abc" * 500
    if importlib.util.find_spec(module) is None:
        with pytest.raises(CompressionError, match=f"install the Python package '{module}'"):
            decompress_body(b"\x00" * 8, 0x1 | ctype.sys_flag_bits)
    else:
        assert decompress(compress(body, ctype), ctype) == body
