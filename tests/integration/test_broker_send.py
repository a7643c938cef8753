"""Raw frames against real `rmq namesrv` + `rmq broker` processes: what the C++ client does
not send (V2 headers in ROCKETMQ binary form, batches), lookups, consumer offsets, an
unknown request code and a malformed frame.

Requests are written byte by byte (tests/unit/remoting/wire.py) on plain sockets and the
answers are read back the same way, so the broker's framing is checked without rmq's own
remoting code on the client side.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import GetRouteInfoRequestHeader
from tests.procs import LOOPBACK, RemotingSession, RmqProcess, RmqProcesses
from tests.unit.remoting.wire import binary_header, cpp_request, frame

TIMEOUT = 5.0
SEP_NV, SEP_P = "\x01", "\x02"


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("send-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


class RawConnection:
    """A plain socket speaking frames built by hand."""

    def __init__(self, process: RmqProcess) -> None:
        self.sock = socket.create_connection((LOOPBACK, process.port), timeout=TIMEOUT)

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return data

    def read_frame(self) -> tuple[int, bytes, bytes]:
        """(serialize type, header bytes, body) of the next frame."""
        length, word = struct.unpack(">iI", self._read_exactly(8))
        rest = self._read_exactly(length - 4)
        header_length = word & 0xFFFFFF
        return word >> 24, rest[:header_length], rest[header_length:]

    def json_call(self, data: bytes) -> tuple[dict[str, object], bytes]:
        self.send(data)
        serialize_type, header, body = self.read_frame()
        assert serialize_type == 0
        return json.loads(header), body

    def closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


@pytest.fixture
def connection(broker: RmqProcess) -> Iterator[RawConnection]:
    raw = RawConnection(broker)
    yield raw
    raw.close()


def props(pairs: dict[str, str]) -> str:
    return SEP_P.join(f"{name}{SEP_NV}{value}" for name, value in pairs.items())


def v2_fields(topic: str, queue_id: int, properties: str, batch: bool) -> list[tuple[str, str]]:
    return [
        ("a", "PG"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", str(queue_id)),
        ("f", "0"),
        ("g", str(int(time.time() * 1000))),
        ("h", "0"),
        ("i", properties),
        ("j", "0"),
        ("k", "false"),
        ("m", "true" if batch else "false"),
    ]


def json_request(code: int, opaque: int, ext: dict[str, str], body: bytes = b"") -> bytes:
    header = {
        "code": code,
        "extFields": ext,
        "flag": 0,
        "language": "JAVA",
        "opaque": opaque,
        "version": 409,
    }
    return frame(json.dumps(header).encode(), body)


def parse_binary_header(header: bytes) -> tuple[int, int, int, str, list[tuple[str, str]]]:
    """(code, opaque, flag, remark, extFields entries in order), spec §1.3."""
    code, _language, _version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", header)
    pos = 17
    remark = header[pos : pos + remark_len].decode()
    pos += remark_len
    (area_len,) = struct.unpack_from(">i", header, pos)
    pos += 4
    end = pos + area_len
    entries = []
    while pos < end:
        (key_len,) = struct.unpack_from(">h", header, pos)
        key = header[pos + 2 : pos + 2 + key_len].decode()
        pos += 2 + key_len
        (value_len,) = struct.unpack_from(">i", header, pos)
        entries.append((key, header[pos + 4 : pos + 4 + value_len].decode()))
        pos += 4 + value_len
    assert pos == len(header)
    return code, opaque, flag, remark, entries


def record_fields(record: bytes) -> tuple[str, bytes, dict[str, str]]:
    """(topic, body, properties) of a stored record (IPv4 hosts), spec §3.1."""
    (body_len,) = struct.unpack_from(">i", record, 84)
    body = record[88 : 88 + body_len]
    topic_len = record[88 + body_len]
    topic_pos = 89 + body_len
    topic = record[topic_pos : topic_pos + topic_len].decode()
    (props_len,) = struct.unpack_from(">h", record, topic_pos + topic_len)
    raw = record[topic_pos + topic_len + 2 : topic_pos + topic_len + 2 + props_len].decode()
    return topic, body, dict(item.split(SEP_NV, 1) for item in raw.split(SEP_P) if item)


def physical_offset(msg_id: str) -> int:
    return int.from_bytes(bytes.fromhex(msg_id)[8:], "big")


def test_v2_send_with_a_binary_header_is_answered_in_binary(connection: RawConnection) -> None:
    fields = v2_fields("BinarySend", 1, props({"TAGS": "TagA", "WAIT": "true"}), batch=False)
    encoded = [(key.encode(), value.encode()) for key, value in fields]
    header = binary_header(RequestCode.SEND_MESSAGE_V2, 0, 409, 77, 0, b"", encoded)
    connection.send(frame(header, b"binary hello", serialize_type=1))

    serialize_type, response_header, body = connection.read_frame()

    assert serialize_type == 1
    code, opaque, flag, remark, entries = parse_binary_header(response_header)
    assert (code, opaque, flag & 1, remark, body) == (ResponseCode.SUCCESS, 77, 1, "", b"")
    keys = [key for key, _ in entries]
    assert keys[:3] == ["msgId", "queueId", "queueOffset"]
    ext = dict(entries)
    assert (ext["queueId"], ext["queueOffset"]) == ("1", "0")
    assert (ext["MSG_REGION"], ext["TRACE_ON"]) == ("DefaultRegion", "true")


def test_cpp_style_send_then_view_and_query(connection: RawConnection) -> None:
    ext: dict[str, object] = {
        "producerGroup": "PG",
        "topic": "CppStyle",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4,
        "queueId": 0,
        "sysFlag": 0,
        "bornTimestamp": int(time.time() * 1000),
        "flag": 0,
        "properties": props({"KEYS": "order-9", "UNIQ_KEY": "C0A8", "WAIT": "true"}),
        "reconsumeTimes": 0,
        "unitMode": "false",
    }
    response, _ = connection.json_call(cpp_request(RequestCode.SEND_MESSAGE, 3, ext, b"cpp body"))

    assert response["code"] == ResponseCode.SUCCESS and response["opaque"] == 3
    fields = response["extFields"]
    assert isinstance(fields, dict)
    assert all(isinstance(value, str) for value in fields.values())
    offset = physical_offset(fields["msgId"])

    view, record = connection.json_call(
        cpp_request(RequestCode.VIEW_MESSAGE_BY_ID, 4, {"offset": offset})
    )
    assert view["code"] == ResponseCode.SUCCESS
    topic, body, properties = record_fields(record)
    assert (topic, body) == ("CppStyle", b"cpp body")
    assert properties["CLUSTER"] == "DefaultCluster" and "WAIT" not in properties

    query_ext = {
        "topic": "CppStyle",
        "key": "order-9",
        "maxNum": "32",
        "beginTimestamp": "0",
        "endTimestamp": str(2**62),
    }
    found, records = connection.json_call(json_request(RequestCode.QUERY_MESSAGE, 5, query_ext))
    assert found["code"] == ResponseCode.SUCCESS
    assert records == record


def test_batch_send(connection: RawConnection) -> None:
    inner = [(b"one", props({"UNIQ_KEY": "B1", "KEYS": "b1"})), (b"two", ""), (b"three", "")]
    body = b"".join(
        struct.pack(">iiiii", 22 + len(data) + len(p.encode()), 0, 0, 0, len(data))
        + data
        + struct.pack(">h", len(p.encode()))
        + p.encode()
        for data, p in inner
    )
    ext = dict(v2_fields("BatchSend", 2, props({"WAIT": "true"}), batch=True))

    response, _ = connection.json_call(json_request(RequestCode.SEND_BATCH_MESSAGE, 6, ext, body))

    assert response["code"] == ResponseCode.SUCCESS
    fields = response["extFields"]
    assert isinstance(fields, dict)
    assert (fields["queueId"], fields["queueOffset"]) == ("2", "0")
    msg_ids = fields["msgId"].split(",")
    bodies = []
    for opaque, msg_id in enumerate(msg_ids, start=100):
        request = cpp_request(
            RequestCode.VIEW_MESSAGE_BY_ID, opaque, {"offset": physical_offset(msg_id)}
        )
        _, record = connection.json_call(request)
        topic, stored, properties = record_fields(record)
        assert topic == "BatchSend" and properties["WAIT"] == "true"
        bodies.append(stored)
    assert bodies == [b"one", b"two", b"three"]


def test_consumer_offsets(connection: RawConnection) -> None:
    query = {"consumerGroup": "FreshGroup", "topic": "OffsetTopic", "queueId": 0}
    fresh, _ = connection.json_call(cpp_request(RequestCode.QUERY_CONSUMER_OFFSET, 10, query))
    assert (fresh["code"], fresh["extFields"]) == (ResponseCode.SUCCESS, {"offset": "0"})

    update = {**query, "commitOffset": 12}
    oneway = json.loads(cpp_request(RequestCode.UPDATE_CONSUMER_OFFSET, 11, update)[8:])
    oneway["flag"] = 2
    connection.send(frame(json.dumps(oneway).encode()))
    answer, _ = connection.json_call(cpp_request(RequestCode.QUERY_CONSUMER_OFFSET, 12, query))

    assert answer["opaque"] == 12, "a oneway request gets no answer"
    assert answer["extFields"] == {"offset": "12"}


def test_auto_created_topic_reaches_the_name_server(
    connection: RawConnection, namesrv: RmqProcess, broker: RmqProcess
) -> None:
    ext = dict(v2_fields("AutoRouted", 0, "", batch=False))
    response, _ = connection.json_call(json_request(RequestCode.SEND_MESSAGE_V2, 20, ext, b"x"))
    assert response["code"] == ResponseCode.SUCCESS

    deadline = time.monotonic() + 10
    with RemotingSession(TIMEOUT) as session:
        while True:
            route = session.invoke(
                namesrv.addr,
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader(topic="AutoRouted"),
            )
            if route.code == ResponseCode.SUCCESS:
                break
            assert time.monotonic() < deadline, "the new topic never reached the name server"
            time.sleep(0.1)
    assert broker.addr.encode() in bytes(route.body or b"")


def test_unknown_code_and_malformed_frame(broker: RmqProcess) -> None:
    healthy = RawConnection(broker)
    broken = RawConnection(broker)
    try:
        response, _ = healthy.json_call(json_request(9999, 30, {}))
        assert response["code"] == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert response["remark"] == " request type 9999 not supported"

        broken.send(struct.pack(">iI", 8, 7 << 24 | 4) + b"\x00\x00\x00\x00")
        broken.sock.settimeout(TIMEOUT)
        assert broken.closed_by_peer()

        again, _ = healthy.json_call(json_request(9999, 31, {}))
        assert again["opaque"] == 31
    finally:
        healthy.close()
        broken.close()
