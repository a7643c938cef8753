"""The shared renderer: exact text of every -o format."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmq.cli.errors import RmqError
from rmq.cli.output import OutputFormat, column_header, plain, plain_table, render, rich_table

ROWS: list[dict[str, Any]] = [
    {"topic": "orders", "queueId": 0, "tags": None, "keys": ["k1", "k2"], "body": b"\x00\xffhi"},
    {"topic": "café", "queueId": 1, "tags": "TagA", "keys": [], "body": b""},
]
COLUMNS = ("topic", "queueId", "tags")
WIDE = ("keys", "body")


def rendered(data: Any, output: OutputFormat | None, **kwargs: Any) -> str:
    out = io.StringIO()
    render(data, columns=COLUMNS, wide_columns=WIDE, output=output, file=out, **kwargs)
    return out.getvalue()


def test_json_is_pretty_complete_and_in_schema_order() -> None:
    assert rendered(ROWS, OutputFormat.JSON, title="ignored") == (
        "[\n"
        "  {\n"
        '    "topic": "orders",\n'
        '    "queueId": 0,\n'
        '    "tags": null,\n'
        '    "keys": [\n'
        '      "k1",\n'
        '      "k2"\n'
        "    ],\n"
        '    "body": "AP9oaQ=="\n'
        "  },\n"
        "  {\n"
        '    "topic": "café",\n'
        '    "queueId": 1,\n'
        '    "tags": "TagA",\n'
        '    "keys": [],\n'
        '    "body": ""\n'
        "  }\n"
        "]\n"
    )
    assert rendered({"name": "a", "active": True}, OutputFormat.JSON) == (
        '{\n  "name": "a",\n  "active": true\n}\n'
    )
    assert rendered([], OutputFormat.JSON) == "[]\n"


def test_ndjson_is_one_compact_object_per_line() -> None:
    assert rendered(ROWS, OutputFormat.NDJSON, title="ignored") == (
        '{"topic":"orders","queueId":0,"tags":null,"keys":["k1","k2"],"body":"AP9oaQ=="}\n'
        '{"topic":"café","queueId":1,"tags":"TagA","keys":[],"body":""}\n'
    )
    assert rendered({"name": "a"}, OutputFormat.NDJSON) == '{"name":"a"}\n'
    assert rendered([], OutputFormat.NDJSON) == ""


def test_ndjson_streams_each_line_before_the_next_row_is_built() -> None:
    out = io.StringIO()

    def rows() -> Iterator[dict[str, int]]:
        yield {"queueOffset": 0}
        assert out.getvalue() == '{"queueOffset":0}\n'
        yield {"queueOffset": 1}

    render(rows(), columns=("queueOffset",), output=OutputFormat.NDJSON, file=out)
    assert out.getvalue() == '{"queueOffset":0}\n{"queueOffset":1}\n'


def test_yaml_keeps_order_and_unicode() -> None:
    assert rendered(ROWS, OutputFormat.YAML, title="ignored") == (
        "- topic: orders\n"
        "  queueId: 0\n"
        "  tags: null\n"
        "  keys:\n"
        "  - k1\n"
        "  - k2\n"
        "  body: AP9oaQ==\n"
        "- topic: café\n"
        "  queueId: 1\n"
        "  tags: TagA\n"
        "  keys: []\n"
        "  body: ''\n"
    )


def test_table_shows_columns_with_headers_one_row_per_line() -> None:
    assert rendered(ROWS, OutputFormat.TABLE) == (
        "TOPIC   QUEUE ID  TAGS\norders  0\ncafé    1         TagA\n"
    )


def test_wide_adds_the_wide_columns() -> None:
    assert rendered(ROWS, OutputFormat.WIDE) == (
        "TOPIC   QUEUE ID  TAGS  KEYS   BODY\n"
        "orders  0               k1,k2  AP9oaQ==\n"
        "café    1         TagA\n"
    )


def test_table_title_and_single_object() -> None:
    text = rendered(
        {"topic": "orders", "queueId": 3, "tags": True}, OutputFormat.TABLE, title="Route"
    )
    assert text == "Route\nTOPIC     orders\nQUEUE ID  3\nTAGS      true\n"


def test_table_does_not_interpret_markup() -> None:
    text = rendered([{"topic": "[bold]x[/bold]"}], OutputFormat.TABLE)
    assert text.splitlines()[1] == "[bold]x[/bold]"


def test_default_format_is_table_unless_rmq_output_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RMQ_OUTPUT", raising=False)
    assert rendered(ROWS, None) == rendered(ROWS, OutputFormat.TABLE)
    monkeypatch.setenv("RMQ_OUTPUT", "NDJSON")
    assert rendered(ROWS, None) == rendered(ROWS, OutputFormat.NDJSON)
    assert rendered(ROWS, OutputFormat.YAML).startswith("- topic: orders\n")
    monkeypatch.setenv("RMQ_OUTPUT", "xml")
    with pytest.raises(RmqError) as raised:
        rendered(ROWS, None)
    assert raised.value.exit_code == 2
    assert raised.value.line() == (
        "rmq: error: invalid output format 'xml' from RMQ_OUTPUT; "
        "use one of table, wide, json, ndjson, yaml"
    )


def test_plain_normalises_values_the_same_way_for_every_format() -> None:
    value = {1: (OutputFormat.JSON, bytearray(b"\x01")), "m": memoryview(b"ab"), "x": 1.5}
    assert plain(value) == {"1": ["json", "AQ=="], "m": "YWI=", "x": 1.5}


def test_column_header() -> None:
    assert column_header("commitLogOffset") == "COMMIT LOG OFFSET"
    assert column_header("broker_name") == "BROKER NAME"
    assert column_header("msgId") == "MSG ID"


ASCII_CELL = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
ANY_CELL = st.text(st.characters(codec="utf-8"), max_size=6)
KEYS = st.lists(
    st.from_regex(r"[a-z][a-zA-Z0-9_\[\]]{0,10}", fullmatch=True),
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(max_examples=150, deadline=None)
@given(
    keys=KEYS,
    cells=st.lists(st.lists(st.one_of(ASCII_CELL, ANY_CELL), min_size=4, max_size=4), max_size=5),
    title=st.one_of(st.none(), ASCII_CELL, ANY_CELL),
    single=st.booleans(),
)
def test_the_plain_table_is_what_rich_prints(
    keys: list[str], cells: list[list[str]], title: str | None, single: bool
) -> None:
    """Off a terminal tables are laid out without rich where they can be: byte for byte what
    rich prints, or left to rich (non-ASCII text, long titles, headers rich would parse)."""
    rows = [dict(zip(keys, row, strict=False)) for row in cells]
    obj: dict[str, Any] | list[dict[str, Any]] = rows[0] if single and rows else rows
    fast, reference = io.StringIO(), io.StringIO()
    render(obj, columns=keys, output=OutputFormat.TABLE, title=title, file=fast)
    rich_table(
        plain(obj) if isinstance(obj, dict) else [plain(r) for r in obj], keys, title, reference
    )
    assert fast.getvalue() == reference.getvalue()


def test_plain_tables_leave_to_rich_what_only_rich_lays_out() -> None:
    assert plain_table([["A", "B"], ["x", "y"]], "T", header=True) == ["T", "A  B", "x  y"]
    assert plain_table([["A", "B"], ["café", "y"]], None, header=True) is None
    assert plain_table([["A", "B"], ["x", "y"]], "a title wider", header=True) is None
    assert plain_table([["[A]", "B"], ["x", "y"]], None, header=True) is None
    assert plain_table([["[A]", "B"]], None, header=False) == ["[A]  B"]
