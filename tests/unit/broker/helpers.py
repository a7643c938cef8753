"""The harness the broker unit tests share.

* The broker's context (:func:`make_broker`): what ``build_broker_context`` builds for the
  controller, the same factory, around a real, started :class:`MessageStore` with small files
  in ``tmp_path``; no servers, timers or name servers (the registrations it asks for are
  recorded: :func:`registrations`).  The send, query and offset tests use it as built (broker
  IP ``BROKER_IP``, every record stamped ``STORE_TIME``); the tests served over a real
  connection (pull, long polling, client management) use :func:`serving_broker`, which adds
  ``TOPIC`` and uses the real clock.
* Driving a handler directly with a request decoded from wire bytes (:func:`call`,
  :func:`decoded`) and the SEND_MESSAGE request of the C++ client (:func:`send_v1`).
* :class:`Serving`: the pull and client processors on a RemotingServer at 127.0.0.1 with a
  RemotingClient talking to it, and the requests the served tests send.
* Fakes: a settable millisecond :class:`Clock` and a client :class:`FakeChannel`.

The fixtures built on these are in this package's ``conftest.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from rmq.common.config import (
    BrokerConfig,
    BrokerConfigs,
    MessageStoreConfig,
    NettyClientConfig,
    NettyServerConfig,
)
from rmq.common.javahash import java_hash
from rmq.common.message import MessageRecord, iter_records
from rmq.common.sysflag import PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
    TopicConfig,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.connection import Connection, RemotingEndpoint
from rmq.remoting.frame import decode_frame
from rmq.remoting.headers import PullMessageRequestHeader
from rmq.remoting.server import RemotingServer
from rmq.server.broker.context import BrokerContext, build_broker_context
from rmq.server.broker.processor.clientprocessor import ClientProcessor
from rmq.server.broker.processor.pullprocessor import PullMessageProcessor
from rmq.server.broker.processor.sendprocessor import SendMessageProcessor
from rmq.server.broker.topic.topicconfig import TopicConfigManager
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from tests.unit.remoting.wire import cpp_request

STORE_TIME = 1_700_000_000_000
BORN_TIME = 1_699_999_999_000
PEER = ("10.1.2.3", 40000)
BROKER_IP = "192.168.0.10"
BROKER_PORT = 10911
STORE_HOST = struct.pack(">4Bi", 192, 168, 0, 10, 10911)

TOPIC = "TopicTest"
GROUP = "CID_pull_test"
QUEUE_NUMS = 4
SUSPEND_AND_SUBSCRIPTION = PULL_SUSPEND | PULL_SUBSCRIPTION
SERVING_STORE = {
    "mapped_file_size_commit_log": 64 * 1024,
    "mapped_file_size_consume_queue": 50 * 20,
}
"""Store settings of :func:`serving_broker`: 64 KiB commitlog files, 50-entry queue files."""


# -- the broker's context -------------------------------------------------------------------


class Registrations:
    """The context's ``register_broker`` in the unit tests: records, for each registration
    the broker asks for, the names of the topics that registration would carry."""

    def __init__(self) -> None:
        self.topics: TopicConfigManager | None = None
        self.tables: list[set[str]] = []

    def __call__(self) -> None:
        assert self.topics is not None, "make_broker points the recorder at the topic table"
        self.tables.append(set(self.topics.topic_config_table))


def registrations(broker: BrokerContext) -> list[set[str]]:
    """The topic names of each registration ``broker`` asked for (see :class:`Registrations`)."""
    recorder = broker.register_broker
    assert isinstance(recorder, Registrations)
    return recorder.tables


def make_broker(
    root: Path,
    *,
    broker: dict[str, Any] | None = None,
    store: dict[str, Any] | None = None,
    clock: Callable[[], int] = lambda: STORE_TIME,
) -> BrokerContext:
    """The broker's context as :func:`build_broker_context` makes it for the controller, with
    its store started: no server, no timers, no name servers.

    ``broker`` and ``store`` override BrokerConfig / MessageStoreConfig settings; ``clock``
    stamps the stored records.  The registrations the broker asks for are recorded
    (:func:`registrations`).
    """
    broker_settings = {"broker_name": "broker-a", "broker_ip1": BROKER_IP, **(broker or {})}
    store_settings: dict[str, Any] = {
        "store_path_root_dir": str(root / "store"),
        "mapped_file_size_commit_log": 256 * 1024,
        "mapped_file_size_consume_queue": 100 * 20,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
        "flush_interval_commit_log": 20,
        "flush_interval_consume_queue": 20,
        **(store or {}),
    }
    configs = BrokerConfigs(
        BrokerConfig(**broker_settings),
        MessageStoreConfig(**store_settings),
        NettyServerConfig(listen_port=BROKER_PORT),
        NettyClientConfig(),
    )
    recorder = Registrations()
    context = build_broker_context(configs, register_broker=recorder, clock=clock)
    recorder.topics = context.topic_config_manager
    context.store.start()
    return context


@contextlib.contextmanager
def running_broker(
    root: Path,
    *,
    broker: dict[str, Any] | None = None,
    store: dict[str, Any] | None = None,
) -> Iterator[BrokerContext]:
    """:func:`make_broker`, with the store shut down at the end."""
    running = make_broker(root, broker=broker, store=store)
    try:
        yield running
    finally:
        running.store.shutdown()


@contextlib.contextmanager
def serving_broker(root: Path, **broker_settings: Any) -> Iterator[BrokerContext]:
    """The broker of the served tests: broker IP 127.0.0.1, the real clock, the small files
    of :data:`SERVING_STORE` and ``TOPIC`` with ``QUEUE_NUMS`` queues."""
    running = make_broker(
        root,
        broker={"broker_ip1": "127.0.0.1", **broker_settings},
        store=SERVING_STORE,
        clock=now_millis,
    )
    try:
        running.topic_config_manager.update(
            TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUE_NUMS, write_queue_nums=QUEUE_NUMS)
        )
        yield running
    finally:
        running.store.shutdown()


# -- handlers driven directly -----------------------------------------------------------------

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]


def call(
    handler: Handler, request: RemotingCommand, peer: tuple[str, int] = PEER
) -> RemotingCommand:
    """Run one handler on a connection from ``peer``; the handler must answer."""

    async def run() -> RemotingCommand | None:
        connection = Connection(RemotingEndpoint(max_frame_size=1 << 24, idle_timeout=None))
        connection.remote_address = peer
        return await handler(connection, request)

    response = asyncio.run(run())
    assert response is not None
    return response


def decoded(raw: bytes) -> RemotingCommand:
    """The command a connection would hand to a processor for this frame."""
    return decode_frame(memoryview(raw)[4:])


# -- sends ------------------------------------------------------------------------------------

SEP_NV, SEP_P = "\x01", "\x02"

USER_PROPS = {
    "UNIQ_KEY": "0A01020300002A9F0000000000000001",
    "WAIT": "true",
    "TAGS": "TagA",
    "KEYS": "order-1 order-2",
    "city": "Zürich",
}


def properties_text(pairs: dict[str, str]) -> str:
    return SEP_P.join(f"{name}{SEP_NV}{value}" for name, value in pairs.items())


def send_v1(
    topic: str = "TopicTest",
    body: bytes = b"hello rocketmq",
    *,
    queue_id: int = 0,
    props: dict[str, str] | None = None,
    code: int = RequestCode.SEND_MESSAGE,
    **fields: object,
) -> RemotingCommand:
    """A SEND_MESSAGE frame as the C++ client writes it (numbers as JSON numbers)."""
    ext: dict[str, object] = {
        "producerGroup": "PG",
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4,
        "queueId": queue_id,
        "sysFlag": 0,
        "bornTimestamp": BORN_TIME,
        "flag": 7,
        "properties": properties_text(USER_PROPS if props is None else props),
        "reconsumeTimes": 0,
        "unitMode": "false",
        "AccessKey": "",
        "Signature": "x",
        "OnsChannel": "ALIYUN",
    }
    ext.update(fields)
    return decoded(cpp_request(code, 1, ext, body))


def offset_of(msg_id: str) -> int:
    """The commitlog offset in an offset message id (store host + port + offset)."""
    raw = bytes.fromhex(msg_id)
    assert raw[:8] == STORE_HOST, "offset msg id = store host + port + physical offset"
    return int.from_bytes(raw[8:], "big")


def stored_offset(broker: BrokerContext, request: RemotingCommand) -> int:
    """Send ``request`` through the send processor; the commitlog offset of what it stored."""
    response = call(SendMessageProcessor(broker).send_message, request)
    assert response.code == ResponseCode.SUCCESS and response.ext_fields is not None
    return offset_of(response.ext_fields["msgId"])


def commitlog_bytes(broker: BrokerContext) -> bytes:
    """The content of the first commitlog file."""
    files = sorted((Path(broker.store_config.store_path_root_dir) / "commitlog").iterdir())
    return files[0].read_bytes()


def record_bytes(broker: BrokerContext, physical_offset: int) -> bytes:
    """The record at ``physical_offset`` of the first commitlog file, by its TOTALSIZE."""
    data = commitlog_bytes(broker)
    (size,) = struct.unpack_from(">i", data, physical_offset)
    return data[physical_offset : physical_offset + size]


# -- served over a real connection ------------------------------------------------------------


def run(scenario: Coroutine[Any, Any, None], timeout: float = 10.0) -> None:
    """Run an async scenario to completion within ``timeout`` seconds."""
    asyncio.run(asyncio.wait_for(scenario, timeout))


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until ``condition()`` holds (checked every few milliseconds)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def put(
    broker: BrokerContext,
    tag: str | None = "TagA",
    *,
    queue_id: int = 0,
    body: bytes = b"hello",
    topic: str = TOPIC,
) -> PutMessageResult:
    """Store one message and report its arrival, as the broker's store hook does."""
    properties = b"" if tag is None else b"TAGS\x01" + tag.encode()
    tags_code = 0 if tag is None else java_hash(tag)
    result = broker.store.put_message(
        InnerMessage(topic, queue_id, body, properties=properties, tags_code=tags_code)
    )
    assert result.status is PutMessageStatus.PUT_OK
    broker.pull_hold.notify_message_arriving(topic, queue_id, result.queue_offset + 1, tags_code)
    return result


def pull_request(
    *,
    topic: str = TOPIC,
    group: str = GROUP,
    queue_id: int = 0,
    offset: int = 0,
    max_msg_nums: int = 32,
    sys_flag: int = PULL_SUBSCRIPTION,
    commit_offset: int = 0,
    suspend_ms: int = 0,
    subscription: str | None = "*",
    sub_version: int = 0,
    expression_type: str | None = None,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_msg_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_ms,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
    )
    return create_request(RequestCode.PULL_MESSAGE, header)


def heartbeat_request(
    client_id: str,
    group: str,
    subscriptions: list[SubscriptionData],
    model: MessageModel = MessageModel.CLUSTERING,
) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=model,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=subscriptions,
            )
        ],
    )
    return create_request(RequestCode.HEART_BEAT, body=data.encode())


class Serving:
    """The pull and client processors of ``broker`` on a RemotingServer at 127.0.0.1, with
    the connection-closed callbacks the broker registers, and a client talking to it."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self.server = RemotingServer("127.0.0.1", 0)
        self.client_processor = ClientProcessor(broker)
        handlers = {
            **PullMessageProcessor(broker).handlers(),
            **self.client_processor.handlers(),
        }
        for code, handler in handlers.items():
            self.server.register(code, handler)
        self.server.on_connection_closed(broker.pull_hold.channel_closed)
        self.server.on_connection_closed(self.client_processor.channel_closed)
        self.client = RemotingClient()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def __aenter__(self) -> Serving:
        await self.server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.client.close()
        await self.server.close()

    async def invoke(self, request: RemotingCommand, timeout: float = 5.0) -> RemotingCommand:
        return await self.client.invoke(self.addr, request, timeout)

    async def pull(self, **fields: Any) -> RemotingCommand:
        return await self.invoke(pull_request(**fields))


def records(response: RemotingCommand) -> list[MessageRecord]:
    assert response.body is not None
    return [record for _, record in iter_records(response.body)]


# -- fakes ------------------------------------------------------------------------------------


class Clock:
    """A millisecond clock the test sets (``clock.now += 60_000``)."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class FakeChannel:
    """A client connection as the ClientManager sees it."""

    def __init__(self, remote_addr: str) -> None:
        self.remote_addr = remote_addr
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"FakeChannel({self.remote_addr})"
