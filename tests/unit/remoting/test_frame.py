"""Frame encoding and decoding: JSON and ROCKETMQ headers, the splitter, malformed input."""

from __future__ import annotations

import json
import struct

import pytest

from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.errors import RemotingProtocolError
from rmq.remoting.frame import FrameSplitter, encode_frame, encode_header_parts
from rmq.remoting.headers import PullMessageRequestHeader, SendMessageResponseHeader
from tests.unit.remoting.wire import binary_header, binary_string, decode, frame


def _header_of(data: bytes) -> tuple[int, bytes]:
    """(serialize type byte, header bytes) of an encoded frame."""
    (word,) = struct.unpack_from(">I", data, 4)
    return word >> 24, data[8 : 8 + (word & 0xFFFFFF)]


# --- JSON headers ----------------------------------------------------------------------------


def test_json_header_is_written_like_fastjson() -> None:
    command = RemotingCommand(
        17, opaque=42, flag=1, remark="no route", ext_fields={"queueId": "2", "MSG_REGION": "R"}
    )
    expected_header = (
        b'{"code":17,"extFields":{"queueId":"2","MSG_REGION":"R"},"flag":1,"language":"JAVA",'
        b'"opaque":42,"remark":"no route","serializeTypeCurrentRPC":"JSON","version":409}'
    )
    assert encode_frame(command) == frame(expected_header)


def test_json_header_leaves_out_null_remark_and_ext_fields() -> None:
    serialize_type, header = _header_of(encode_frame(RemotingCommand(0, opaque=1)))
    assert serialize_type == 0
    assert json.loads(header) == {
        "code": 0,
        "flag": 0,
        "language": "JAVA",
        "opaque": 1,
        "serializeTypeCurrentRPC": "JSON",
        "version": 409,
    }


def test_json_round_trip_keeps_every_field_and_the_body() -> None:
    command = RemotingCommand(
        RequestCode.PULL_MESSAGE,
        language=LanguageCode.GO,
        version=401,
        opaque=2**31 - 1,
        flag=2,
        remark="héllo",
        ext_fields={"topic": "T", "queueId": "3"},
        body=b"\x00\x01body",
    )
    decoded = decode(encode_frame(command))
    assert decoded == command
    assert decoded.serialize_type is SerializeType.JSON


def test_header_parts_leave_room_for_a_body_written_separately() -> None:
    command = RemotingCommand(0, opaque=5, flag=1)
    body = [memoryview(b"abc"), memoryview(b"defg")]
    head = encode_header_parts(command, 7)
    decoded = decode(head + b"".join(body))
    assert decoded.opaque == 5
    assert decoded.body == b"abcdefg"


def test_body_segments_follow_the_body() -> None:
    command = RemotingCommand(0, body=b"12", body_segments=(memoryview(b"34"), b"5"))
    assert command.body_length == 5
    assert decode(encode_frame(command)).body == b"12345"


def test_ext_field_numbers_and_booleans_become_java_text() -> None:
    header = json.dumps(
        {
            "code": 11,
            "opaque": 9,
            "extFields": {
                "queueId": 3,
                "queueOffset": -12,
                "flagged": True,
                "off": False,
                "ratio": 1.5,
                "gone": None,
                "topic": "T",
            },
        }
    ).encode()
    decoded = decode(frame(header))
    assert decoded.ext_fields == {
        "queueId": "3",
        "queueOffset": "-12",
        "flagged": "true",
        "off": "false",
        "ratio": "1.5",
        "topic": "T",
    }


def test_json_header_may_end_in_a_newline() -> None:
    decoded = decode(frame(b'{"code":105,"opaque":7,"remark":""}\n'))
    assert (decoded.code, decoded.opaque, decoded.remark) == (105, 7, "")


def test_missing_json_fields_take_java_defaults() -> None:
    decoded = decode(frame(b"{}"))
    assert decoded == RemotingCommand(0, language=LanguageCode.JAVA, version=0, opaque=0, flag=0)


def test_unknown_language_reads_as_other() -> None:
    assert decode(frame(b'{"code":1,"language":"COBOL"}')).language is LanguageCode.OTHER


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (frame(b'{"code":1}', serialize_type=2), "unknown serialize type 2"),
        (frame(b'{"code":1}', serialize_type=0xFF), "unknown serialize type 255"),
        (frame(b"{not json"), "does not parse"),
        (frame(b""), "does not parse"),
        (frame(b"[1,2]"), "not an object"),
        (frame(b'{"code":"10"}'), "code is not an int32"),
        (frame(b'{"code":1,"opaque":4294967296}'), "opaque is not an int32"),
        (frame(b'{"code":1,"extFields":[]}'), "extFields is not an object"),
        (frame(b'{"code":1,"extFields":{"a":{"b":1}}}'), "value of a is not a string"),
        (frame(b'{"code":1,"language":3}'), "language is not a string"),
        (frame(b'{"code":1,"remark":[]}'), "remark is not a string"),
    ],
)
def test_malformed_json_frames_are_rejected(data: bytes, reason: str) -> None:
    with pytest.raises(RemotingProtocolError, match=reason):
        decode(data)


def test_header_length_beyond_the_frame_is_rejected() -> None:
    header = b'{"code":1}'
    data = struct.pack(">iI", 4 + len(header), len(header) + 1) + header
    with pytest.raises(RemotingProtocolError, match="exceeds the frame"):
        decode(data)


def test_frame_without_header_length_is_rejected() -> None:
    with pytest.raises(RemotingProtocolError, match="no header length"):
        decode(struct.pack(">i", 2) + b"\x00\x00")


# --- responses the C++ client can read -------------------------------------------------------


def test_responses_carry_string_ext_fields_in_a_plain_json_header() -> None:
    response = create_response(
        ResponseCode.SUCCESS,
        header=SendMessageResponseHeader(msg_id="0A00", queue_id=2, queue_offset=17),
    )
    response.add_ext_field("MSG_REGION", "DefaultRegion")
    response.opaque = 3
    data = encode_frame(response)
    # The C++ client takes the whole second int as the header length: no serialize byte.
    (length, header_length) = struct.unpack_from(">iI", data)
    assert header_length == len(data) - 8 == length - 4
    parsed = json.loads(data[8:])
    assert parsed["extFields"] == {
        "msgId": "0A00",
        "queueId": "2",
        "queueOffset": "17",
        "MSG_REGION": "DefaultRegion",
    }
    assert all(isinstance(value, str) for value in parsed["extFields"].values())
    assert (parsed["code"], parsed["opaque"], parsed["flag"]) == (0, 3, 1)


# --- ROCKETMQ binary headers -----------------------------------------------------------------


def test_binary_header_layout_follows_the_spec() -> None:
    command = RemotingCommand(
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        language=LanguageCode.CPP,
        version=409,
        opaque=77,
        flag=2,
        remark="r✓",
        ext_fields={"topic": "TopicA", "k": "vv"},
        body=b"BODY",
        serialize_type=SerializeType.ROCKETMQ,
    )
    header = binary_header(
        105, 1, 409, 77, 2, "r✓".encode(), [(b"topic", b"TopicA"), (b"k", b"vv")]
    )
    assert encode_frame(command) == frame(header, b"BODY", serialize_type=1)


def test_binary_header_without_remark_or_ext_fields_writes_zero_lengths() -> None:
    command = RemotingCommand(0, opaque=1, flag=1, serialize_type=SerializeType.ROCKETMQ)
    expected = struct.pack(">hbhiiii", 0, 0, 409, 1, 1, 0, 0)
    assert encode_frame(command) == frame(expected, serialize_type=1)


def test_fast_codec_header_fields_come_first_in_java_order() -> None:
    header = PullMessageRequestHeader(
        consumer_group="G",
        topic="T",
        queue_id=1,
        queue_offset=100,
        max_msg_nums=32,
        sys_flag=3,
        commit_offset=90,
        suspend_timeout_millis=15000,
        subscription="*",
        sub_version=5,
        expression_type="TAG",
        bname="b0",
    )
    request = create_request(RequestCode.PULL_MESSAGE, header)
    request.add_ext_field("extra", "x")
    request.serialize_type = SerializeType.ROCKETMQ
    expected_order = [
        b"consumerGroup",
        b"topic",
        b"queueId",
        b"queueOffset",
        b"maxMsgNums",
        b"sysFlag",
        b"commitOffset",
        b"suspendTimeoutMillis",
        b"subscription",
        b"subVersion",
        b"expressionType",
        b"bname",
        b"extra",
    ]
    values = [b"G", b"T", b"1", b"100", b"32", b"3", b"90", b"15000", b"*", b"5", b"TAG", b"b0"]
    expected = binary_header(
        11, 0, 409, request.opaque, 0, b"", list(zip(expected_order, [*values, b"x"], strict=True))
    )
    assert encode_frame(request) == frame(expected, serialize_type=1)


def test_binary_round_trip() -> None:
    command = RemotingCommand(
        ResponseCode.PULL_NOT_FOUND,
        language=LanguageCode.RUST,
        version=612,
        opaque=-5,
        flag=1,
        remark="OFFSET_OVERFLOW_ONE",
        ext_fields={"nextBeginOffset": "8", "ключ": "значение"},
        body=b"xyz",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert decode(encode_frame(command)) == command


def test_binary_zero_length_strings_read_as_null() -> None:
    header = binary_header(10, 0, 1, 1, 0, b"", [(b"empty", b""), (b"", b"nokey"), (b"k", b"v")])
    decoded = decode(frame(header, serialize_type=1))
    assert decoded.remark is None
    assert decoded.ext_fields == {"k": "v"}


def test_binary_unknown_language_byte_reads_as_other() -> None:
    header = binary_header(10, 99, 1, 1, 0, b"", [])
    assert decode(frame(header, serialize_type=1)).language is LanguageCode.OTHER


def test_binary_non_positive_ext_length_means_no_ext_fields() -> None:
    header = struct.pack(">hbhii", 10, 0, 1, 1, 0) + binary_string(b"") + struct.pack(">i", -3)
    assert decode(frame(header, serialize_type=1)).ext_fields is None


def _fixed() -> bytes:
    return struct.pack(">hbhii", 10, 0, 1, 1, 0)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (_fixed()[:10], "truncated"),
        (_fixed() + struct.pack(">i", -1) + struct.pack(">i", 0), "remark length -1"),
        (_fixed() + struct.pack(">i", 1000) + struct.pack(">i", 0), "remark length 1000"),
        (_fixed() + struct.pack(">i", 6) + b"ab" + struct.pack(">i", 0), "truncated"),
        (_fixed() + struct.pack(">i", 0) + struct.pack(">i", 500), "extFields length 500"),
        (
            _fixed() + struct.pack(">ii", 0, 7) + struct.pack(">h", -1) + b"\x00" * 5,
            "key length -1",
        ),
        (
            _fixed() + struct.pack(">ii", 0, 7) + struct.pack(">h", 8) + b"\x00" * 5,
            "key length 8",
        ),
        (
            _fixed() + struct.pack(">ii", 0, 7) + binary_string(b"k", short=True) + b"\xff" * 4,
            "value length -1",
        ),
        (
            _fixed()
            + struct.pack(">ii", 0, 8)
            + binary_string(b"k", short=True)
            + struct.pack(">i", 9)
            + b"v",
            "value length 9",
        ),
        (
            _fixed() + struct.pack(">ii", 0, 8) + binary_string(b"k", short=True) + b"\x00\x00",
            "truncated",
        ),
        (_fixed() + binary_string(b"\xff\xfe") + struct.pack(">i", 0), "not UTF-8"),
    ],
)
def test_malformed_binary_headers_are_rejected(header: bytes, reason: str) -> None:
    with pytest.raises(RemotingProtocolError, match=reason):
        decode(frame(header, serialize_type=1))


# --- splitting a stream into frames ----------------------------------------------------------


def _frames(count: int) -> list[bytes]:
    return [frame(b'{"code":%d}' % i, b"body" * i) for i in range(count)]


def test_splitter_cuts_one_chunk_into_its_frames() -> None:
    frames = _frames(4)
    splitter = FrameSplitter()
    assert [bytes(f) for f in splitter.feed(b"".join(frames))] == [f[4:] for f in frames]


def test_splitter_reassembles_frames_fed_byte_by_byte() -> None:
    frames = _frames(3)
    splitter = FrameSplitter()
    received = []
    for byte in b"".join(frames):
        received += [bytes(f) for f in splitter.feed(bytes([byte]))]
    assert received == [f[4:] for f in frames]


def test_splitter_keeps_a_partial_frame_for_the_next_chunk() -> None:
    first, second = _frames(2)
    splitter = FrameSplitter()
    data = first + second
    cut = len(first) + 6
    assert [bytes(f) for f in splitter.feed(data[:cut])] == [first[4:]]
    assert [bytes(f) for f in splitter.feed(data[cut:])] == [second[4:]]


def test_splitter_accepts_a_frame_of_exactly_the_maximum_size() -> None:
    data = frame(b"{}", b"x" * 54)
    assert len(data) == 64
    assert len(FrameSplitter(64).feed(data)) == 1


@pytest.mark.parametrize(
    ("length_word", "reason"),
    [(61, "exceeds the maximum of 64"), (3, "less than 4"), (-1, "less than 4")],
)
def test_splitter_rejects_bad_lengths(length_word: int, reason: str) -> None:
    with pytest.raises(RemotingProtocolError, match=reason):
        FrameSplitter(64).feed(struct.pack(">i", length_word))
