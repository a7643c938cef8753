"""Message and pull sysFlag helpers."""

from __future__ import annotations

from rmq.common import sysflag


def test_message_flag_bits_match_the_spec_table() -> None:
    assert [
        sysflag.COMPRESSED_FLAG,
        sysflag.MULTI_TAGS_FLAG,
        sysflag.TRANSACTION_PREPARED_TYPE,
        sysflag.TRANSACTION_COMMIT_TYPE,
        sysflag.TRANSACTION_ROLLBACK_TYPE,
        sysflag.BORNHOST_V6_FLAG,
        sysflag.STOREHOSTADDRESS_V6_FLAG,
        sysflag.NEED_UNWRAP_FLAG,
        sysflag.INNER_BATCH_FLAG,
        sysflag.COMPRESSION_LZ4_TYPE,
        sysflag.COMPRESSION_ZSTD_TYPE,
        sysflag.COMPRESSION_ZLIB_TYPE,
    ] == [0x1, 0x2, 0x4, 0x8, 0xC, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0x300]


def test_transaction_type_reads_and_replaces_bits_2_and_3() -> None:
    flag = sysflag.COMPRESSED_FLAG | sysflag.TRANSACTION_PREPARED_TYPE | 0x30
    assert sysflag.transaction_type(flag) == sysflag.TRANSACTION_PREPARED_TYPE
    committed = sysflag.with_transaction_type(flag, sysflag.TRANSACTION_COMMIT_TYPE)
    assert committed == sysflag.COMPRESSED_FLAG | sysflag.TRANSACTION_COMMIT_TYPE | 0x30
    assert sysflag.transaction_type(0x33) == sysflag.TRANSACTION_NOT_TYPE


def test_compression_type_value_defaults_to_zlib() -> None:
    assert sysflag.compression_type_value(0x1) == 3
    assert sysflag.compression_type_value(0x101) == 1
    assert sysflag.compression_type_value(0x201) == 2
    assert sysflag.compression_type_value(0x301) == 3
    assert sysflag.is_compressed(0x301)
    assert not sysflag.is_compressed(0x300)


def test_pull_flag() -> None:
    assert sysflag.build_pull_flag(commit_offset=True, suspend=True, subscription=True) == 0x7
    assert sysflag.build_pull_flag(commit_offset=False, suspend=True, subscription=False) == 0x2
    assert (
        sysflag.build_pull_flag(
            commit_offset=False,
            suspend=False,
            subscription=True,
            class_filter=True,
            lite_pull=True,
        )
        == 0x1C
    )
    assert sysflag.clear_commit_offset_flag(0x7) == 0x6
