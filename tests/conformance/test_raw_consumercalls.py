"""The admin requests a broker answers by calling its consumers, as raw frames, differential:
the same INVOKE_BROKER_TO_RESET_OFFSET (222), INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223),
GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) to Apache's broker and to
rmq's, the answers compared code, remark and body.

Both clusters get the same consumers (module fixture `consumers`): Apache's Java push consumer
of `JAVA_GROUP` (rmq.conformance.MqAdminClients, which also creates the topic, sends the
messages and waits until they are consumed and committed) and rmq's push consumer of
`RMQ_GROUP`, on the same topic.  The same client then answers through either broker, so an
answer that differs is the broker's doing; the last comparisons hold rmq's client against
Apache's (what a tool reads in a running info).  The Apache answers are asserted to show
what each test is about, so a comparison of two empty answers cannot pass.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.common import fastjson
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.conformance.clusters import BROKER_NAME, Cluster
from tests.conformance.mqadmin_run import Clients
from tests.procs import RemotingSession

TOPIC = "RawCTopic"
JAVA_GROUP = "RawCJavaGroup"
RMQ_GROUP = "RawCRmqGroup"
OFFLINE_GROUP = "RawCOffline"
"""Has committed offsets, never a member."""
MESSAGES = 4
KINDS = ("apache", "rmq")


class RmqConsumer:
    """rmq's push consumer of RMQ_GROUP on one cluster, on an event loop of its own thread,
    counting what its listener got."""

    def __init__(self, namesrv_addr: str) -> None:
        self.consumed = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.push = PushConsumer(
            RMQ_GROUP,
            namesrv_addr,
            instance_name="RawCRmq",
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            persist_consumer_offset_interval=0.2,
        )
        self.push.subscribe(TOPIC)
        self.push.register_listener(self._listener)
        self.call(self.push.start())

    async def _listener(self, messages: list[MessageExt]) -> ConsumeStatus:
        self.consumed += len(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    def call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def wait_consumed(self, count: int) -> None:
        async def wait() -> None:
            async with asyncio.timeout(20):
                while self.consumed < count:
                    await asyncio.sleep(0.05)

        self.call(wait())

    def close(self) -> None:
        self.call(self.push.shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Side:
    cluster: Cluster
    session: RemotingSession
    java: Clients
    rmq_consumer: RmqConsumer

    @property
    def java_client_id(self) -> str:
        client_id: str = self.java.ready["consumers"][JAVA_GROUP]
        return client_id

    @property
    def rmq_client_id(self) -> str:
        return self.rmq_consumer.push.instance.client_id

    def ask(self, code: int, header: object) -> RemotingCommand:
        return self.session.invoke(self.cluster.broker_addr, code, header, timeout=15)


@pytest.fixture(scope="module")
def consumers(
    apache: Cluster, rmq: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Side]]:
    root = tmp_path_factory.mktemp("raw-consumercalls")
    sides: dict[str, Side] = {}
    try:
        for cluster in (apache, rmq):
            java = _java_clients(cluster, root / cluster.kind)
            sides[cluster.kind] = Side(
                cluster, RemotingSession(), java, RmqConsumer(cluster.namesrv_addr)
            )
        for side in sides.values():
            side.rmq_consumer.wait_consumed(MESSAGES)
            _await_committed(side, RMQ_GROUP, MESSAGES)
            for queue_id in range(2):
                header = UpdateConsumerOffsetRequestHeader(
                    consumer_group=OFFLINE_GROUP, topic=TOPIC, queue_id=queue_id, commit_offset=1
                )
                assert side.ask(RequestCode.UPDATE_CONSUMER_OFFSET, header).code == 0
        yield sides
    finally:
        for side in sides.values():
            side.rmq_consumer.close()
            side.java.close()
            side.session.close()


def _await_committed(side: Side, group: str, total: int) -> None:
    """Wait until the broker has ``total`` as the sum of the group's offsets in TOPIC."""
    deadline = time.monotonic() + 20
    while True:
        offsets = []
        for queue_id in range(2):
            header = QueryConsumerOffsetRequestHeader(
                consumer_group=group, topic=TOPIC, queue_id=queue_id
            )
            response = side.ask(RequestCode.QUERY_CONSUMER_OFFSET, header)
            if response.code == ResponseCode.SUCCESS:
                offsets.append(response.read_header(QueryConsumerOffsetResponseHeader).offset)
        if sum(offsets) == total:
            return
        assert time.monotonic() < deadline, f"{group} committed {offsets} on {side.cluster.kind}"
        time.sleep(0.05)


def _java_clients(cluster: Cluster, home: Path) -> Clients:
    spec = {
        "namesrv": cluster.namesrv_addr,
        "brokerName": BROKER_NAME,
        "topics": {TOPIC: 2},
        "groups": [JAVA_GROUP, RMQ_GROUP, OFFLINE_GROUP],
        "producerGroup": "RawCProducer",
        "messages": [
            {"topic": TOPIC, "queue": n % 2, "tags": "TagA", "keys": f"RawC-{n}", "body": f"c-{n}"}
            for n in range(MESSAGES)
        ],
        "consumers": [
            {
                "group": JAVA_GROUP,
                "instance": "RawCJava",
                "topic": TOPIC,
                "expression": "*",
                "expect": MESSAGES,
            }
        ],
    }
    return Clients(spec, home=home)


def _both(sides: dict[str, Side], code: int, header: object) -> dict[str, RemotingCommand]:
    return {kind: sides[kind].ask(code, header) for kind in KINDS}


def _answer(response: RemotingCommand) -> tuple[int, str | None]:
    return response.code, response.remark


def _json(response: RemotingCommand) -> Any:
    assert response.code == ResponseCode.SUCCESS, response
    assert response.body is not None
    return fastjson.loads(response.body)


# -- refusals -------------------------------------------------------------------------------


def test_the_refusals_of_reset_status_and_calls(consumers: dict[str, Side]) -> None:
    requests: list[tuple[int, object]] = [
        (
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            ResetOffsetRequestHeader(topic="RawCNoTopic", group=JAVA_GROUP, timestamp=-1),
        ),
        (
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            ResetOffsetRequestHeader(topic=TOPIC, group="RawCNoOffsets", timestamp=-1),
        ),
        (
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            ResetOffsetRequestHeader(topic=TOPIC, group=OFFLINE_GROUP, timestamp=5, is_force=True),
        ),
        (
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            GetConsumerRunningInfoRequestHeader(consumer_group=JAVA_GROUP, client_id="nobody@0"),
        ),
        (
            RequestCode.CONSUME_MESSAGE_DIRECTLY,
            ConsumeMessageDirectlyResultRequestHeader(
                consumer_group=OFFLINE_GROUP,
                client_id="nobody@0",
                msg_id=consumers["apache"].java.ready["sent"][0]["offsetMsgId"],
            ),
        ),
    ]
    for code, header in requests:
        if code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            # the message id names the message on each broker
            answers = {}
            for kind in KINDS:
                header.msg_id = consumers[kind].java.ready["sent"][0]["offsetMsgId"]  # type: ignore[attr-defined]
                answers[kind] = consumers[kind].ask(code, header)
        else:
            answers = _both(consumers, code, header)
        assert answers["apache"].code != ResponseCode.SUCCESS
        assert _answer(answers["rmq"]) == _answer(answers["apache"]), (code, header)


def test_status_of_a_group_never_online(consumers: dict[str, Side]) -> None:
    header = GetConsumerStatusRequestHeader(topic=TOPIC, group=OFFLINE_GROUP)
    answers = _both(consumers, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
    # Apache's broker fails with a NullPointerException (no group info); rmq answers the same
    # code with the remark Apache gives a group whose members all left.
    assert answers["apache"].code == ResponseCode.SYSTEM_ERROR
    assert "NullPointerException" in (answers["apache"].remark or "")
    assert _answer(answers["rmq"]) == (
        ResponseCode.SYSTEM_ERROR,
        f"No Any Consumer online in the consumer group: [{OFFLINE_GROUP}]",
    )


# -- calls answered by the Java consumer -----------------------------------------------------


def test_status_gives_each_members_offsets(consumers: dict[str, Side]) -> None:
    for group in (JAVA_GROUP, RMQ_GROUP):
        header = GetConsumerStatusRequestHeader(topic=TOPIC, group=group)
        answers = _both(consumers, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
        apache, rmq = (_json(answers[kind]) for kind in KINDS)
        # the client ids are the same on both sides: one host, the same instance names
        member = (
            consumers["apache"].java_client_id
            if group == JAVA_GROUP
            else consumers["apache"].rmq_client_id
        )
        assert list(apache["consumerTable"]) == [member]
        assert sum(apache["consumerTable"][member].values()) == MESSAGES
        assert rmq == apache
        assert _answer(answers["rmq"]) == _answer(answers["apache"])


_HASH = re.compile(r"(/0x[0-9a-f]+)?@[0-9a-f]+\b")
_VOLATILE_PROPERTIES = {
    # when the consumer started, and the timestamp 30 minutes before
    "PROP_CONSUMER_START_TIMESTAMP",
    "consumeTimestamp",
    # the cluster's own name server
    "PROP_NAMESERVER_ADDR",
    "namesrvAddr",
}
_VOLATILE_QUEUE_FIELDS = {"lastPullTimestamp", "lastConsumeTimestamp", "lastLockTimestamp"}


def _steady(info: dict[str, Any]) -> dict[str, Any]:
    """A running info without what differs between two runs of the same consumer: start and
    pull times, rates, name server addresses and Java object identities."""
    properties = {
        key: _HASH.sub("@<hash>", value)
        for key, value in info["properties"].items()
        if key not in _VOLATILE_PROPERTIES
    }
    queues = [
        (mq, {k: v for k, v in pq.items() if k not in _VOLATILE_QUEUE_FIELDS})
        for mq, pq in info["mqTable"].items()
    ]
    subscriptions = [
        {k: v for k, v in sub.items() if k != "subVersion"} for sub in info["subscriptionSet"]
    ]
    return {
        "properties": properties,
        "subscriptionSet": subscriptions,
        "mqTable": queues,
        "statusTable": sorted(info["statusTable"]),
        "jstack": "jstack" in info,
    }


def _await_running_info(side: Side, header: object, queues: int) -> RemotingCommand:
    """The Java consumer's running info once its rebalance holds `queues` queues: the retry
    topic's queue comes with a route update and the next rebalance, which on a loaded machine
    may land after the fixture's messages were consumed."""
    deadline = time.monotonic() + 45
    while True:
        answer = side.ask(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        held = len(_json(answer)["mqTable"])
        if held == queues:
            return answer
        assert time.monotonic() < deadline, f"{side.cluster.kind}: {held} queues rebalanced"
        time.sleep(0.2)


def test_running_info_is_the_consumers_own(consumers: dict[str, Side]) -> None:
    header = GetConsumerRunningInfoRequestHeader(
        consumer_group=JAVA_GROUP, client_id=consumers["apache"].java_client_id
    )
    # the topic's two queues and the retry topic's one
    answers = {kind: _await_running_info(consumers[kind], header, 3) for kind in KINDS}
    apache, rmq = (_json(answers[kind]) for kind in KINDS)
    assert apache["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert _answer(answers["rmq"]) == _answer(answers["apache"])
    ours, theirs = _steady(rmq), _steady(apache)
    differing = {
        key: (ours["properties"].get(key), theirs["properties"].get(key))
        for key in ours["properties"].keys() | theirs["properties"].keys()
        if ours["properties"].get(key) != theirs["properties"].get(key)
    }
    assert differing == {}
    assert ours == theirs


def test_consume_directly_on_either_client(consumers: dict[str, Side]) -> None:
    answers = {}
    for kind in KINDS:
        side = consumers[kind]
        for which, group, client_id in (
            ("java", JAVA_GROUP, side.java_client_id),
            ("rmq", RMQ_GROUP, side.rmq_client_id),
        ):
            header = ConsumeMessageDirectlyResultRequestHeader(
                consumer_group=group,
                client_id=client_id,
                msg_id=side.java.ready["sent"][1]["offsetMsgId"],
            )
            answers[kind, which] = side.ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
    apache_java = answers["apache", "java"]
    assert _json(apache_java)["consumeResult"] == "CR_SUCCESS"
    for key, answer in answers.items():
        # how long the listener took is its own business
        assert {**_json(answer), "spentTimeMills": 0} == {
            **_json(apache_java),
            "spentTimeMills": 0,
        }, key
        assert _answer(answer) == _answer(apache_java), key


def test_rmqs_running_info_has_the_shape_of_javas(consumers: dict[str, Side]) -> None:
    side = consumers["apache"]
    java_answer = side.ask(
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        GetConsumerRunningInfoRequestHeader(
            consumer_group=JAVA_GROUP, client_id=side.java_client_id
        ),
    )
    java = _json(java_answer)
    ours_answer = side.ask(
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        GetConsumerRunningInfoRequestHeader(consumer_group=RMQ_GROUP, client_id=side.rmq_client_id),
    )
    ours = _json(ours_answer)
    assert _answer(ours_answer) == _answer(java_answer)
    assert list(ours) == list(java)  # the same properties, in the same order
    # rmq's properties are the settings it has, under Java's names: a subset of Java's
    assert set(ours["properties"]) <= set(java["properties"])
    for key in (
        "PROP_CONSUME_TYPE",
        "PROP_CONSUMEORDERLY",
        "PROP_THREADPOOL_CORE_SIZE",
        "messageModel",
        "consumeFromWhere",
    ):
        assert ours["properties"][key] == java["properties"][key], key
    assert [list(sub) for sub in ours["subscriptionSet"]] == [
        list(sub) for sub in java["subscriptionSet"]
    ]
    # both sorted as Java's TreeSet sorts them: "topic@expression"
    assert [sub["topic"] for sub in ours["subscriptionSet"]] == [f"%RETRY%{RMQ_GROUP}", TOPIC]
    java_queues = list(java["mqTable"].values())
    for pq in ours["mqTable"].values():
        assert list(pq) == list(java_queues[0])
    assert [list(status) for status in ours["statusTable"].values()] == [
        list(status) for status in java["statusTable"].values()
    ]
    # queues in TreeMap order
    order = [(mq["topic"], mq["brokerName"], mq["queueId"]) for mq in ours["mqTable"]]
    assert order == sorted(order) and len(order) == len(java["mqTable"])


# -- the reset, last: it moves both groups back --------------------------------------------


def test_reset_offset_moves_the_members_back(consumers: dict[str, Side]) -> None:
    for group in (JAVA_GROUP, RMQ_GROUP):
        header = ResetOffsetRequestHeader(topic=TOPIC, group=group, timestamp=0, is_force=True)
        answers = _both(consumers, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
        apache = answers["apache"]
        assert apache.code == ResponseCode.SUCCESS
        assert apache.body is not None and b"offsetTable" in bytes(apache.body)
        # byte for byte: the queues in Java's HashMap order
        assert (answers["rmq"].code, answers["rmq"].remark, bytes(answers["rmq"].body or b"")) == (
            apache.code,
            apache.remark,
            bytes(apache.body),
        ), group
    # rmq's consumer takes the reset on either broker: everything comes again
    for side in consumers.values():
        side.rmq_consumer.wait_consumed(2 * MESSAGES)
