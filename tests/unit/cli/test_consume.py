"""`rmq consume` start positions, output templates and the printer's stopping rules."""

from __future__ import annotations

import base64
import datetime
import io
import json

import click
import pytest

from rmq.cli.consume import Printer
from rmq.cli.consume_format import compile_template, render_record
from rmq.cli.consume_read import StartKind, StartPosition, parse_start
from rmq.client.consumer import MessageExt
from rmq.common.message import MessageRecord
from tests.unit.cli.conftest import RunRmq

PROPERTIES = {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "UNIQ1", "名前": "値"}


def message(body: bytes = b"hello", queue_offset: int = 42, **properties: str) -> MessageExt:
    record = MessageRecord(
        total_size=0,
        magic=0,
        body_crc=0,
        queue_id=3,
        flag=0,
        queue_offset=queue_offset,
        physical_offset=1000,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        born_host="127.0.0.1:50000",
        store_timestamp=1_700_000_000_123,
        store_host="127.0.0.1:10911",
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic="Orders",
        properties=dict(properties or PROPERTIES),
        offset_msg_id="7F00000100002A9F00000000000003E8",
    )
    return MessageExt(record, "broker-a")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("first", StartPosition(StartKind.FIRST)),
        ("LAST", StartPosition(StartKind.LAST)),
        ("17", StartPosition(StartKind.OFFSET, 17)),
        ("-5", StartPosition(StartKind.FROM_END, 5)),
        ("@1700000000000", StartPosition(StartKind.TIMESTAMP, 1_700_000_000_000)),
        ("2023-11-14T22:13:20Z", StartPosition(StartKind.TIMESTAMP, 1_700_000_000_000)),
        ("@2023-11-14T22:13:20.5+00:00", StartPosition(StartKind.TIMESTAMP, 1_700_000_000_500)),
    ],
)
def test_start_positions(text: str, expected: StartPosition) -> None:
    assert parse_start(text) == expected


def test_a_time_without_a_zone_is_local() -> None:
    local = datetime.datetime(2024, 5, 1, 12, 0, 0)
    assert parse_start("2024-05-01T12:00:00") == StartPosition(
        StartKind.TIMESTAMP, int(local.timestamp() * 1000)
    )
    assert parse_start("2024-05-01").value == int(datetime.datetime(2024, 5, 1).timestamp() * 1000)


@pytest.mark.parametrize("text", ["yesterday", "@soon", "1.5", "--3", ""])
def test_bad_start_positions(text: str) -> None:
    with pytest.raises(click.BadParameter, match="is not first, last"):
        parse_start(text)


def test_template_fields_and_escapes() -> None:
    render = compile_template("%t|%k|%v|%g|%p|%o|%T|%i|%b|100%%\\t\\\\\\n")
    assert render(message()) == (
        b"Orders|k1 k2|hello|TagA|3|42|1700000000123|UNIQ1|broker-a|100%\t\\\n"
    )


def test_template_headers_and_raw_binary_bodies() -> None:
    msg = message(b"\x00\xff", TAGS="T", a="1")
    assert compile_template("%h:%v")(msg) == b"TAGS=T,a=1:\x00\xff"


def test_template_size_field_and_printf_widths() -> None:
    msg = message("héllo wörld".encode())
    assert compile_template("%S")(msg) == b"13"  # bytes, not characters
    assert compile_template("[%-8g|%8g|%5S|%.5v|%-7.3v]")(msg) == (
        "[TagA    |    TagA|   13|héllo|hél    ]".encode()
    )
    # a field longer than its width is not cut; .MAX cuts without padding
    assert compile_template("%2t %.2t")(msg) == b"Orders Or"


def test_widths_of_a_body_that_is_not_utf8_count_bytes() -> None:
    assert compile_template("%-4v|%.1v|%S")(message(b"\xff\xfe")) == b"\xff\xfe  |\xff|2"


def test_the_help_lists_every_field_with_its_meaning(rmq: RunRmq) -> None:
    from rmq.cli.consume_format import FIELDS

    text = " ".join(rmq("consume", "--help").stdout.split())
    for code, (meaning, _) in FIELDS.items():
        assert f"%{code} {meaning}" in text
    assert "%-20k" in text and "@-1h" in text


def test_relative_start_positions() -> None:
    import time

    before = int(time.time() * 1000)
    position = parse_start("@-1h30m")
    after = int(time.time() * 1000)
    assert position.kind is StartKind.TIMESTAMP
    assert before - 5_400_000 <= position.value <= after - 5_400_000


def test_template_json_is_the_record() -> None:
    assert compile_template("json") is render_record


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("%x", "unknown field %x"),
        ("50%", "unknown field %"),
        ("\\q", "unknown escape \\q"),
        ("%-5%", "unknown field %-5%"),
        ("%.k", "unknown field %.: use"),
    ],
)
def test_bad_templates(template: str, error: str) -> None:
    with pytest.raises(click.BadParameter, match=error.replace("\\", "\\\\")):
        compile_template(template)


def test_record_lines_hold_the_message_record() -> None:
    line = render_record(message(b"\xff\xfe"))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    data = json.loads(line)
    assert base64.b64decode(data["body"]) == b"\xff\xfe"
    assert data["bodyEncoding"] == "base64"
    assert (data["topic"], data["brokerName"], data["queueId"], data["queueOffset"]) == (
        "Orders",
        "broker-a",
        3,
        42,
    )
    assert (data["msgId"], data["tags"], data["keys"]) == ("UNIQ1", "TagA", ["k1", "k2"])
    assert data["properties"]["名前"] == "値"


def test_printer_stops_at_its_limit() -> None:
    out = io.BytesIO()
    printer = Printer(out, compile_template("%o\\n"), limit=3)
    assert printer.write([message(queue_offset=n) for n in (1, 2)]) == 2
    assert not printer.stopped.is_set()
    assert printer.write([message(queue_offset=n) for n in (3, 4)]) == 1
    assert printer.stopped.is_set()
    assert printer.write([message(queue_offset=5)]) == 0
    assert out.getvalue() == b"1\n2\n3\n"


class ClosedPipe(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError


def test_printer_stops_when_the_reader_goes_away() -> None:
    printer = Printer(ClosedPipe(), compile_template("%o\\n"), limit=None)
    assert printer.write([message()]) == 0
    assert printer.broken_pipe and printer.stopped.is_set()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--from", "yesterday"], "Invalid value for '--from'"),
        (["-f", "%z"], "Invalid value for '-f' / '--format'"),
        (["--reset"], "--reset needs -g GROUP"),
        (["-g", "bad group"], "Invalid value for '-g' / '--group'"),
        (["-c", "0"], "Invalid value for '--count' / '-c'"),
        (["-g", "G", "--allocate", "hash"], "Invalid value for '--allocate'"),
        (["--allocate", "circle"], "--allocate needs -g GROUP"),
        (["-o", "json"], "rmq consume prints NDJSON message records, one per line"),
        (["-o", "table"], "for another layout use a template, e.g. --format"),
        (["-o", "ndjson", "-f", "%v"], "-o ndjson and --format TEMPLATE exclude each other"),
        (["--from", "-1h"], "@-<duration> (@-1h: an hour ago"),
        (["--from", "@-1y"], "Invalid value for '--from'"),
    ],
)
def test_bad_usage_exits_2_before_connecting(rmq: RunRmq, args: list[str], error: str) -> None:
    result = rmq("consume", "Orders", *args, "-n", "127.0.0.1:1")
    assert result.returncode == 2, result.stderr
    assert error in result.stderr
    assert result.stdout == ""


def test_every_allocate_word_names_a_strategy_of_the_client() -> None:
    from rmq.cli.consume import ALLOCATE_STRATEGIES
    from rmq.client.consumer import strategy_by_name

    names = {word: strategy_by_name(name).name for word, name in ALLOCATE_STRATEGIES.items()}
    assert names == {
        "averagely": "AVG",
        "circle": "AVG_BY_CIRCLE",
        "consistent-hash": "CONSISTENT_HASH",
    }
