"""java.util.Properties parsing and writing (broker.conf, namesrv.conf, config bodies)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common import javaprops


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# a comment\n! another\n   # indented comment\n\n \t \nbrokerName=broker-a\n"
    assert javaprops.loads(text) == {"brokerName": "broker-a"}


def test_comment_line_ending_in_backslash_continues_nothing() -> None:
    assert javaprops.loads("# note \\\nlistenPort=10911") == {"listenPort": "10911"}


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        ("key=value", "key", "value"),
        ("key:value", "key", "value"),
        ("key value", "key", "value"),
        ("key\tvalue", "key", "value"),
        ("key = value", "key", "value"),
        ("key  :  value", "key", "value"),
        ("key = = value", "key", "= value"),
        ("key : =value", "key", "=value"),
        ("key =", "key", ""),
        ("key", "key", ""),
        ("   key=value", "key", "value"),
        ("key=value  ", "key", "value  "),
        ("key=a=b:c", "key", "a=b:c"),
        ("a\\=b=c", "a=b", "c"),
        ("a\\:b:c", "a:b", "c"),
        ("a\\ b c", "a b", "c"),
        ("=value", "", "value"),
    ],
)
def test_key_value_separators(line: str, key: str, value: str) -> None:
    assert javaprops.loads(line) == {key: value}


def test_line_terminators() -> None:
    assert javaprops.loads("a=1\rb=2\r\nc=3\n") == {"a": "1", "b": "2", "c": "3"}


def test_continuation_joins_lines_and_drops_leading_blanks() -> None:
    text = "messageDelayLevel=1s 5s \\\n        10s \\\n\t30s\nnext=x"
    assert javaprops.loads(text) == {"messageDelayLevel": "1s 5s 10s 30s", "next": "x"}


def test_continuation_with_crlf() -> None:
    assert javaprops.loads("k=a\\\r\n  b\r\nz=1") == {"k": "ab", "z": "1"}


def test_even_backslashes_do_not_continue() -> None:
    assert javaprops.loads("path=C:\\\\dir\\\\\nnext=1") == {"path": "C:\\dir\\", "next": "1"}


def test_odd_backslash_run_continues() -> None:
    assert javaprops.loads("k=a\\\\\\\nb") == {"k": "a\\b"}


def test_continuation_line_is_never_a_comment() -> None:
    assert javaprops.loads("k=a\\\n  #b") == {"k": "a#b"}


def test_continuation_into_a_blank_line_ends_the_value() -> None:
    assert javaprops.loads("k=a\\\n\nz=1") == {"k": "a", "z": "1"}


def test_continuation_backslash_on_the_last_line_is_dropped() -> None:
    assert javaprops.loads("k=a\\") == {"k": "a"}


def test_a_line_holding_only_a_backslash_is_blank() -> None:
    assert javaprops.loads("\\\n#comment\nk=v") == {"k": "v"}


def test_escapes() -> None:
    text = "k=tab\\tnl\\ncr\\rff\\f\\u00e9\\u4E2D\\q\\\\\\#\\!"
    assert javaprops.loads(text) == {"k": "tab\tnl\ncr\rff\fé中q\\#!"}


def test_surrogate_pair_escape_is_one_character() -> None:
    assert javaprops.loads("emoji=\\ud83d\\ude00") == {"emoji": "😀"}


def test_raw_unicode_is_kept() -> None:
    assert javaprops.loads("名字=值 é") == {"名字": "值 é"}


def test_malformed_unicode_escape_is_an_error() -> None:
    with pytest.raises(javaprops.PropertiesSyntaxError, match="line 2"):
        javaprops.loads("ok=1\nbad=\\u12G4")


def test_later_duplicate_wins_and_keeps_first_position() -> None:
    assert list(javaprops.loads("a=1\nb=2\na=3").items()) == [("a", "3"), ("b", "2")]


def test_dumps_escapes_like_properties_store() -> None:
    props = {"a b": " x=y#z!:\n", "é": "😀\t\\", "plain": "v  v "}
    expected = "a\\ b=\\ x\\=y\\#z\\!\\:\\n\n\\u00E9=\\uD83D\\uDE00\\t\\\\\nplain=v  v \n"
    assert javaprops.dumps(props) == expected


def test_dumps_output_is_ascii() -> None:
    assert javaprops.dumps({"k": "中文\x01\x7f"}).isascii()


@given(st.dictionaries(st.text(), st.text(), max_size=8))
def test_round_trip(props: dict[str, str]) -> None:
    assert javaprops.loads(javaprops.dumps(props)) == props
