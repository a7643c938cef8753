"""The property string codec and its Java decoding quirks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common.properties import (
    decode_properties,
    decode_properties_bytes,
    encode_properties,
    encode_properties_bytes,
    merge_batch_properties,
    user_property_error,
)


def java_string2message_properties(text: str) -> dict[str, str]:
    """Java's index-based walk, step by step, as the oracle for the decoder."""
    result: dict[str, str] = {}
    index = 0
    while index < len(text):
        new_index = text.find("\x02", index)
        if new_index < 0:
            new_index = len(text)
        if new_index - index >= 3:
            kv_sep = text.find("\x01", index)
            if index < kv_sep < new_index - 1:
                result[text[index:kv_sep]] = text[kv_sep + 1 : new_index]
        index = new_index + 1
    return result


def test_encode_joins_pairs_without_trailing_separator() -> None:
    assert encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"}) == "TAGS\x01TagA\x02KEYS\x01k1 k2"
    assert encode_properties({}) == ""
    assert encode_properties({"A": None, "B": "1"}) == "B\x011"
    assert encode_properties_bytes({"名": "值"}) == "名\x01值".encode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("A\x011", {"A": "1"}),
        ("A\x01", {}),  # empty value dropped
        ("\x011", {}),  # empty name dropped
        ("AB", {}),  # no separator
        ("A\x011\x02\x02B\x012\x02", {"A": "1", "B": "2"}),  # empty segments skipped
        ("A\x01x\x01y", {"A": "x\x01y"}),  # value keeps later 0x01
        ("A\x011\x02A\x012", {"A": "2"}),  # later duplicate wins
        ("A\x02B\x01b", {"B": "b"}),  # separator search does not leak into the next segment
    ],
)
def test_decode_follows_java_rules(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected
    assert java_string2message_properties(text) == expected


@given(st.text(alphabet="ab\x01\x02é", max_size=40))
def test_decode_matches_java_walk(text: str) -> None:
    assert decode_properties(text) == java_string2message_properties(text)


names = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1)


@given(st.dictionaries(names, names, max_size=8))
def test_round_trip(properties: dict[str, str]) -> None:
    assert decode_properties(encode_properties(properties)) == properties
    data = encode_properties_bytes(properties)
    assert decode_properties_bytes(memoryview(data)) == properties


def test_bytes_decoding_replaces_malformed_utf8() -> None:
    assert decode_properties_bytes(b"K\x01\xff\xfeok") == {"K": "\ufffd\ufffdok"}
    assert decode_properties_bytes(bytearray("键\x01值😀".encode())) == {"键": "值😀"}
    assert decode_properties_bytes(b"") == {}


def test_merge_batch_properties() -> None:
    batch = b"WAIT\x01true\x02CLUSTER\x01c"
    assert merge_batch_properties(b"KEYS\x01k", batch) == b"KEYS\x01k\x02" + batch
    assert merge_batch_properties(b"KEYS\x01k\x02", batch) == b"KEYS\x01k\x02" + batch
    assert merge_batch_properties(b"", batch) == batch
    assert merge_batch_properties(memoryview(b"KEYS\x01k"), b"") == b"KEYS\x01k"


def test_user_property_error_matches_java_messages() -> None:
    assert (
        user_property_error("TAGS", "x")
        == "The Property<TAGS> is used by system, input another please"
    )
    blank = "The name or value of property can not be null or blank string!"
    assert user_property_error(" \t", "x") == blank
    assert user_property_error("color", "  ") == blank
    assert user_property_error("color", "red") is None
    # The broker may set these, and so may users.
    assert user_property_error("TRANSACTION_CHECK_TIMES", "1") is None
