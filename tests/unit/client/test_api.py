"""rmq.client.api against a real remoting server on 127.0.0.1 with scripted answers: what each
call puts on the wire, what it returns, and that unexpected answers raise with the remark."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from rmq.client import api
from rmq.client.errors import MQBrokerError, MQClientError, RouteNotFound
from rmq.common.message import encode_record_into, record_size
from rmq.common.msgid import pack_host
from rmq.common.sysflag import build_pull_flag
from rmq.remoting.bodies import (
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ProducerData,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingConnectError
from rmq.remoting.headers import (
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from rmq.remoting.server import RemotingServer
from tests.unit.client.fakes import (
    LOOPBACK,
    FakeNamesrv,
    closed_port_addr,
    offset_msg_id,
    route_of,
    run,
)

Answer = Callable[[RemotingCommand], RemotingCommand | None]
TIMEOUT = 3.0
MQ = MessageQueue("TopicA", "broker-a", 2)


async def serve(
    code: int, answer: Answer, call: Callable[[RemotingClient, str], Awaitable[None]]
) -> list[RemotingCommand]:
    """Serve `code` with `answer` on a fresh server, run `call(client, addr)` and return the
    requests the server received."""
    received: list[RemotingCommand] = []

    async def handler(_: Connection, request: RemotingCommand) -> RemotingCommand | None:
        request.body = bytes(request.body) if request.body is not None else None
        received.append(request)
        return answer(request)

    server = RemotingServer(LOOPBACK, 0)
    server.register(code, handler)
    async with server, RemotingClient() as client:
        await call(client, f"{LOOPBACK}:{server.port}")
    return received


def send_header(*, batch: bool = False) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="PG",
        topic="TopicA",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=3,
        properties="WAIT\x01true",
        reconsume_times=0,
        batch=batch,
        bname="broker-a",
    )


def send_answer(code: int, queue_id: int = 2) -> Answer:
    def answer(_: RemotingCommand) -> RemotingCommand:
        header = SendMessageResponseHeader(
            msg_id=offset_msg_id(10911, 4096), queue_id=queue_id, queue_offset=77
        )
        response = create_response(code, None, header)
        response.add_ext_field("MSG_REGION", "RegionX")
        response.add_ext_field("TRACE_ON", "false")
        return response

    return answer


# --- name server calls -----------------------------------------------------------------------


def test_get_topic_route_decodes_the_route_and_raises_route_not_found_with_the_remark() -> None:
    async def scenario() -> None:
        namesrv = FakeNamesrv()
        namesrv.routes["TopicA"] = route_of({"broker-a": "127.0.0.1:10911"}, queues=8)
        await namesrv.start()
        try:
            async with RemotingClient() as client:
                route = await api.get_topic_route(client, namesrv.addr, "TopicA", TIMEOUT)
                with pytest.raises(RouteNotFound) as missing:
                    await api.get_topic_route(client, namesrv.addr, "Nope", TIMEOUT)
        finally:
            await namesrv.close()
        assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [("broker-a", 8)]
        assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
        assert missing.value.code == ResponseCode.TOPIC_NOT_EXIST
        assert missing.value.topic == "Nope"
        assert missing.value.remark == "No topic route info in name server for the topic: Nope"

    run(scenario())


def test_a_name_server_error_raises_client_error_with_code_and_remark() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQClientError) as error:
            await api.get_broker_cluster_info(client, addr, TIMEOUT)
        assert (error.value.code, error.value.remark) == (ResponseCode.SYSTEM_ERROR, "disk on fire")
        assert "disk on fire" in str(error.value)

    run_and_collect(
        RequestCode.GET_BROKER_CLUSTER_INFO,
        lambda _: create_response(ResponseCode.SYSTEM_ERROR, "disk on fire"),
        call,
    )


# --- sends -----------------------------------------------------------------------------------


def test_send_message_uses_code_310_with_short_keys_and_builds_the_result() -> None:
    results: list[api.SendResult] = []

    async def call(client: RemotingClient, addr: str) -> None:
        results.append(
            await api.send_message(
                client,
                addr,
                MQ,
                api.send_request(send_header(), b"\x00\xffbody"),
                TIMEOUT,
                msg_id="UNIQ1",
            )
        )

    [request] = run_and_collect(RequestCode.SEND_MESSAGE_V2, send_answer(0), call)
    assert request.ext_fields is not None
    assert request.ext_fields["a"] == "PG"
    assert request.ext_fields["b"] == "TopicA"
    assert request.ext_fields["e"] == "2"
    assert request.ext_fields["m"] == "false"
    assert request.ext_fields["n"] == "broker-a"
    assert "producerGroup" not in request.ext_fields
    assert request.body == b"\x00\xffbody"
    [result] = results
    assert result.status is api.SendStatus.SEND_OK
    assert result.msg_id == "UNIQ1"
    assert result.offset_msg_id == offset_msg_id(10911, 4096)
    assert result.message_queue == MQ
    assert result.queue_offset == 77
    assert (result.region_id, result.trace_on) == ("RegionX", False)


def test_send_batch_uses_code_320_with_m_true() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        await api.send_message(
            client,
            addr,
            MQ,
            api.send_request(send_header(batch=True), b"batch"),
            TIMEOUT,
            msg_id="A,B",
        )

    [request] = run_and_collect(RequestCode.SEND_BATCH_MESSAGE, send_answer(0), call)
    assert request.code == RequestCode.SEND_BATCH_MESSAGE
    assert request.ext_fields is not None and request.ext_fields["m"] == "true"


@pytest.mark.parametrize("batch", [False, True])
def test_a_send_request_template_gives_the_v2_request_of_the_equal_header(batch: bool) -> None:
    template = api.SendRequestTemplate("PG", "TopicA", "TBW102", 4)
    request = template.request(MQ, 1, 1_700_000_000_000, 3, "WAIT\x01true", b"body", batch=batch)
    batch_text = "true" if batch else "false"
    expected = {  # SendMessageRequestHeaderV2's short keys, in their order
        "a": "PG",
        "b": "TopicA",
        "c": "TBW102",
        "d": "4",
        "e": "2",
        "f": "1",
        "g": "1700000000000",
        "h": "3",
        "i": "WAIT\x01true",
        "j": "0",
        "k": "false",
        "m": batch_text,
        "n": "broker-a",
    }
    assert list((request.ext_fields or {}).items()) == list(expected.items())
    assert request.code == (
        RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    )
    assert request.body == b"body"
    header = send_header(batch=batch)
    header.sys_flag = 1
    assert request.ext_fields == api.send_request(header, b"body").ext_fields
    assert template.request(MQ, 1, 1, 3, "", b"").opaque != request.opaque


def test_send_result_takes_the_queue_id_the_broker_answered() -> None:
    results: list[api.SendResult] = []

    async def call(client: RemotingClient, addr: str) -> None:
        results.append(
            await api.send_message(
                client, addr, MQ, api.send_request(send_header(), b"x"), TIMEOUT, msg_id="U"
            )
        )

    run_and_collect(RequestCode.SEND_MESSAGE_V2, send_answer(0, queue_id=5), call)
    assert results[0].message_queue == MessageQueue("TopicA", "broker-a", 5)


@pytest.mark.parametrize(
    "code",
    [
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    ],
)
def test_stored_but_not_safe_answers_are_results_with_their_status(code: ResponseCode) -> None:
    results: list[api.SendResult] = []

    async def call(client: RemotingClient, addr: str) -> None:
        results.append(
            await api.send_message(
                client, addr, MQ, api.send_request(send_header(), b"x"), TIMEOUT, msg_id="U"
            )
        )

    run_and_collect(RequestCode.SEND_MESSAGE_V2, send_answer(code), call)
    assert results[0].status.name == code.name


def test_a_refused_send_raises_broker_error_with_code_remark_and_address() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQBrokerError) as error:
            await api.send_message(
                client, addr, MQ, api.send_request(send_header(), b"x"), TIMEOUT, msg_id="U"
            )
        assert error.value.code == ResponseCode.NO_PERMISSION
        assert error.value.remark == "the broker[127.0.0.1] sending message is forbidden"
        assert error.value.addr == addr
        assert addr in str(error.value) and "sending message is forbidden" in str(error.value)

    run_and_collect(
        RequestCode.SEND_MESSAGE_V2,
        lambda _: create_response(
            ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending message is forbidden"
        ),
        call,
    )


def test_send_message_oneway_marks_the_request_oneway() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        await api.send_message_oneway(client, addr, api.send_request(send_header(), b"fire"))
        await client.invoke(addr, create_heartbeat_probe(), TIMEOUT)

    received: list[RemotingCommand] = []

    async def scenario() -> None:
        async def keep(_: Connection, request: RemotingCommand) -> RemotingCommand | None:
            received.append(request)
            return create_response(ResponseCode.SUCCESS)

        server = RemotingServer(LOOPBACK, 0)
        server.register(RequestCode.SEND_MESSAGE_V2, keep)
        server.register(RequestCode.HEART_BEAT, keep)
        async with server, RemotingClient() as client:
            await call(client, f"{LOOPBACK}:{server.port}")

    run(scenario())
    send = next(r for r in received if r.code == RequestCode.SEND_MESSAGE_V2)
    assert send.is_oneway


def create_heartbeat_probe() -> RemotingCommand:
    """A request answered by the same server, sent after a oneway one so that the test
    knows the oneway request has been read."""
    return create_request(RequestCode.HEART_BEAT, body=b"{}")


# --- pulls and offsets -----------------------------------------------------------------------


def stored_record(body: bytes, queue_offset: int) -> bytes:
    """One stored record as a broker returns it (built with the record codec)."""
    topic = b"TopicA"
    properties = b"TAGS\x01t\x02UNIQ_KEY\x01ABC"
    size = record_size(len(body), len(topic), len(properties), False, False)
    buf = bytearray(size)
    encode_record_into(
        buf,
        0,
        queue_id=2,
        flag=0,
        queue_offset=queue_offset,
        physical_offset=1000 + queue_offset,
        sys_flag=0,
        born_timestamp=1,
        born_host=pack_host("127.0.0.1", 5000),
        store_timestamp=2,
        store_host=pack_host("127.0.0.1", 10911),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=body,
        topic_bytes=topic,
        properties_bytes=properties,
    )
    return bytes(buf)


def pull_header() -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group="CG",
        topic="TopicA",
        queue_id=2,
        queue_offset=5,
        max_msg_nums=32,
        sys_flag=build_pull_flag(commit_offset=False, suspend=False, subscription=True),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.SUCCESS, api.PullStatus.FOUND),
        (ResponseCode.PULL_NOT_FOUND, api.PullStatus.NO_NEW_MSG),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, api.PullStatus.NO_MATCHED_MSG),
        (ResponseCode.PULL_OFFSET_MOVED, api.PullStatus.OFFSET_ILLEGAL),
    ],
)
def test_pull_message_maps_the_four_pull_answers(code: int, status: api.PullStatus) -> None:
    body = stored_record(b"\x01\x02", 5) + stored_record(b"second", 6)
    results: list[api.PullResult] = []

    def answer(_: RemotingCommand) -> RemotingCommand:
        header = PullMessageResponseHeader(
            suggest_which_broker_id=0, next_begin_offset=7, min_offset=0, max_offset=9
        )
        return create_response(code, "FOUND", header, body=body if code == 0 else None)

    async def call(client: RemotingClient, addr: str) -> None:
        results.append(await api.pull_message(client, addr, pull_header(), TIMEOUT))

    run_and_collect(RequestCode.PULL_MESSAGE, answer, call)
    [result] = results
    assert result.status is status
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (7, 0, 9)
    if status is api.PullStatus.FOUND:
        records = result.records()
        assert [(r.queue_offset, r.body) for r in records] == [(5, b"\x01\x02"), (6, b"second")]
        assert records[0].uniq_key == "ABC"
    else:
        assert result.body is None and result.records() == []


def test_pull_message_raises_for_other_answers() -> None:
    async def call(client: RemotingClient, addr: str) -> None:
        with pytest.raises(MQBrokerError) as error:
            await api.pull_message(client, addr, pull_header(), TIMEOUT)
        assert error.value.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
        assert error.value.remark == "the consumer's subscription not latest"

    run_and_collect(
        RequestCode.PULL_MESSAGE,
        lambda _: create_response(
            ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
        ),
        call,
    )


def test_query_consumer_offset_returns_the_offset_or_none_when_not_found() -> None:
    answers = iter(
        [
            create_response(
                ResponseCode.SUCCESS, None, QueryConsumerOffsetResponseHeader(offset=42)
            ),
            create_response(ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe"),
        ]
    )
    offsets: list[int | None] = []

    async def call(client: RemotingClient, addr: str) -> None:
        for _ in range(2):
            offsets.append(await api.query_consumer_offset(client, addr, "CG", MQ, TIMEOUT))

    [request, _] = run_and_collect(RequestCode.QUERY_CONSUMER_OFFSET, lambda _: next(answers), call)
    assert offsets == [42, None]
    assert request.ext_fields == {
        "consumerGroup": "CG",
        "topic": "TopicA",
        "queueId": "2",
        "bname": "broker-a",
    }


def test_update_consumer_offset_oneway_carries_the_offset() -> None:
    received: list[RemotingCommand] = []

    async def scenario() -> None:
        async def keep(_: Connection, request: RemotingCommand) -> RemotingCommand:
            received.append(request)
            return create_response(ResponseCode.SUCCESS)

        server = RemotingServer(LOOPBACK, 0)
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, keep)
        async with server, RemotingClient() as client:
            addr = f"{LOOPBACK}:{server.port}"
            await api.update_consumer_offset_oneway(client, addr, "CG", MQ, 99)
            await api.update_consumer_offset(client, addr, "CG", MQ, 100, TIMEOUT)

    run(scenario())
    assert [r.is_oneway for r in received] == [True, False]
    assert [r.ext_fields and r.ext_fields["commitOffset"] for r in received] == ["99", "100"]


# --- heartbeats, groups, locks ---------------------------------------------------------------


def test_heartbeat_and_unregister_use_the_java_keys() -> None:
    versions: list[int] = []

    async def scenario() -> None:
        received: dict[int, RemotingCommand] = {}

        async def keep(_: Connection, request: RemotingCommand) -> RemotingCommand:
            request.body = bytes(request.body) if request.body is not None else None
            received[request.code] = request
            return create_response(ResponseCode.SUCCESS)

        server = RemotingServer(LOOPBACK, 0)
        server.register(RequestCode.HEART_BEAT, keep)
        server.register(RequestCode.UNREGISTER_CLIENT, keep)
        async with server, RemotingClient() as client:
            addr = f"{LOOPBACK}:{server.port}"
            heartbeat = HeartbeatData(
                client_id="10.0.0.1@x", producer_data_set=[ProducerData(group_name="PG")]
            )
            versions.append(await api.send_heartbeat(client, addr, heartbeat, TIMEOUT))
            await api.unregister_client(client, addr, "10.0.0.1@x", TIMEOUT, producer_group="PG")
        body = received[RequestCode.HEART_BEAT].body
        assert body is not None and b'"clientID":"10.0.0.1@x"' in body
        assert received[RequestCode.UNREGISTER_CLIENT].ext_fields == {
            "clientID": "10.0.0.1@x",
            "producerGroup": "PG",
        }

    run(scenario())
    assert versions == [409]


def test_lock_batch_mq_returns_the_locked_queues() -> None:
    other = MessageQueue("TopicA", "broker-a", 3)

    def answer(request: RemotingCommand) -> RemotingCommand:
        asked = LockBatchRequestBody.decode(request.body or b"")
        assert (asked.consumer_group, asked.client_id) == ("CG", "client-1")
        assert sorted(asked.mq_set) == [MQ, other]
        return create_response(
            ResponseCode.SUCCESS, body=LockBatchResponseBody(lock_ok_mq_set=[MQ]).encode()
        )

    locked: list[list[MessageQueue]] = []

    async def call(client: RemotingClient, addr: str) -> None:
        locked.append(await api.lock_batch_mq(client, addr, "CG", "client-1", [MQ, other], TIMEOUT))

    run_and_collect(RequestCode.LOCK_BATCH_MQ, answer, call)
    assert locked == [[MQ]]


def test_get_max_offset_reads_the_offset_and_keeps_the_remark_of_errors() -> None:
    answers = iter(
        [
            create_response(ResponseCode.SUCCESS, None, GetMaxOffsetResponseHeader(offset=12)),
            create_response(ResponseCode.SYSTEM_ERROR, "queueId[9] is illegal"),
        ]
    )

    async def call(client: RemotingClient, addr: str) -> None:
        assert await api.get_max_offset(client, addr, MQ, TIMEOUT) == 12
        with pytest.raises(MQBrokerError, match=r"queueId\[9\] is illegal"):
            await api.get_max_offset(client, addr, MQ, TIMEOUT)

    run_and_collect(RequestCode.GET_MAX_OFFSET, lambda _: next(answers), call)


def test_an_unreachable_address_raises_the_remoting_connect_error() -> None:
    async def scenario() -> None:
        addr = await closed_port_addr()
        async with RemotingClient() as client:
            with pytest.raises(RemotingConnectError):
                await api.get_min_offset(client, addr, MQ, TIMEOUT)

    run(scenario())


def run_and_collect(
    code: int, answer: Answer, call: Callable[[RemotingClient, str], Awaitable[None]]
) -> list[RemotingCommand]:
    """`serve` run to completion: the requests the server received."""
    received: list[list[RemotingCommand]] = []

    async def scenario() -> None:
        received.append(await serve(code, answer, call))

    run(scenario())
    return received[0]
