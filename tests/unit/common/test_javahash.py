"""Java String.hashCode, tags codes and index key hashes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common.javahash import index_key_hash, java_hash, java_hash_order, tags_code


def reference_hash(text: str) -> int:
    """Java's definition, step by step over big-endian UTF-16 code units with int wrap-around."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) % 2**32
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TagA", 2598919),
        ("TagB", 2598920),
        ("*", 42),
        ("", 0),
        ("hello", 99162322),
        ("TopicTest#OrderID001", -1231272886),
        ("polygenelubricants", -(2**31)),
        # U+1F600 is the surrogate pair D83D DE00: 0xD83D * 31 + 0xDE00.
        ("\U0001f600", 0xD83D * 31 + 0xDE00),
        # "é" is one UTF-16 unit 0xE9.
        ("é", 0xE9),
    ],
)
def test_known_java_hash_values(text: str, expected: int) -> None:
    assert java_hash(text) == expected


@given(st.text(max_size=300))
def test_java_hash_matches_utf16_definition(text: str) -> None:
    assert java_hash(text) == reference_hash(text)


def test_long_strings_hash_like_java() -> None:
    text = "key-ü-" * 3000
    assert java_hash(text) == reference_hash(text)


def test_tags_code_is_zero_without_tags() -> None:
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == 2598919
    assert tags_code("TagA || TagB") == reference_hash("TagA || TagB")


def test_index_key_hash_is_absolute_value_with_min_value_zero() -> None:
    assert index_key_hash("TopicTest#OrderID001") == 1231272886
    assert index_key_hash("TopicTest#OrderID001") % 5_000_000 == 1272886
    assert index_key_hash("TagA") == 2598919
    assert index_key_hash("polygenelubricants") == 0


def reference_index_key_hash(key: str) -> int:
    h = reference_hash(key)
    return 0 if h == -(2**31) else abs(h)


@given(
    st.sampled_from(["TopicTest#", "T#", "%RETRY%group#", "Topic-ü#"]),
    st.text(max_size=40) | st.from_regex(r"order-[0-9]{1,8}", fullmatch=True),
)
def test_index_key_hash_matches_java(topic_prefix: str, key: str) -> None:
    assert index_key_hash(topic_prefix + key) == reference_index_key_hash(topic_prefix + key)


def test_index_key_hash_of_keys_sharing_a_head_and_after_the_head_cache_fills() -> None:
    prefix = "BenchmarkTest#0A0000010001000000010" + "8F1A2B3"
    for counter in range(0, 0x10000, 97):
        key = f"{prefix}{counter:04X}"
        assert index_key_hash(key) == reference_index_key_hash(key)
    for n in range(10_000):  # more distinct heads than the cache holds
        key = f"T#{n * 7919:012d}key{n}"
        assert index_key_hash(key) == reference_index_key_hash(key)
    assert index_key_hash("TopicTest#OrderID001") == 1231272886


GROUPS = [f"Group{i}" for i in range(20)]


def test_java_hash_order_is_javas_iteration_order() -> None:
    # printed by Java 17: new HashSet<>() after add("Group0") .. add("Group19") (resized to 32)
    assert java_hash_order(GROUPS) == [
        *("Group11", "Group10", "Group1", "Group17", "Group2", "Group16", "Group19", "Group0"),
        *("Group18", "Group5", "Group13", "Group6", "Group12", "Group3", "Group15", "Group4"),
        *("Group14", "Group9", "Group7", "Group8"),
    ]
    # ... and by new ConcurrentHashMap<>(1024), whose table has 2048 buckets
    assert java_hash_order(GROUPS, table_size=2048) == [
        *("Group1", "Group2", "Group0", "Group5", "Group6", "Group3", "Group4", "Group9"),
        *("Group7", "Group8", "Group11", "Group10", "Group17", "Group16", "Group19", "Group18"),
        *("Group13", "Group12", "Group15", "Group14"),
    ]


def test_java_hash_order_keeps_insertion_order_within_a_bucket() -> None:
    # RawQGroup2 and RawQFiltered share bucket 7 of 16; Java iterates them as added
    assert java_hash_order(["RawQGroup2", "RawQFiltered", "RawQGroup", "RawQGroup2"]) == [
        "RawQGroup2",
        "RawQFiltered",
        "RawQGroup",
    ]
    assert java_hash_order(["RawQFiltered", "RawQGroup2", "RawQGroup"])[:2] == [
        "RawQFiltered",
        "RawQGroup2",
    ]
