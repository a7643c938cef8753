"""The broker's consumer and producer queries as raw frames, differential: the same requests to
Apache's broker and to rmq's, the answers compared code, remark and body.

Both brokers get the same state first (`_prepare`): topic `RawQTopic` with two queues and
three messages, offsets of three groups, a producer and a consumer that stay connected through
the session's connection.  Each test then sends the same requests to both and compares the
parsed bodies; the normalisation rules say what legitimately differs and why.  The Apache
answers are asserted to show what each test is about, so a comparison of two empty answers
cannot pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from rmq.common import fastjson
from rmq.common.javahash import java_hash
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    CreateTopicRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
    SendMessageRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.conformance.clusters import Cluster
from tests.procs import RemotingSession

TOPIC = "RawQTopic"
GROUP = "RawQGroup"
"""A subscription group with offsets 1 and 0 on the two queues; never online."""
GROUP2 = "RawQGroup2"
"""A subscription group with offsets 2 and 1."""
FILTERED = "RawQFiltered"
"""Offsets 0 and 0; only the last test names it as a filter group (Apache then drops them)."""
ONLINE = "RawQOnline"
"""A consumer subscribed to TOPIC, connected through the session."""
PRODUCER = "RawQProducer"
CLIENT_ID = "127.0.0.1@RawQueries"
SUB_VERSION = 1_700_000_000_000
OFFSETS = {GROUP: (1, 0), GROUP2: (2, 1), FILTERED: (0, 0)}


@dataclass
class Broker:
    cluster: Cluster
    session: RemotingSession

    def ask(self, code: int, header: object | None = None) -> RemotingCommand:
        return self.session.invoke(self.cluster.broker_addr, code, header)

    def body(self, code: int, header: object | None = None) -> Any:
        response = self.ask(code, header)
        assert response.code == ResponseCode.SUCCESS, (self.cluster.kind, response)
        assert response.body is not None
        return fastjson.loads(response.body)


def _prepare(broker: Broker) -> None:
    create = CreateTopicRequestHeader(
        topic=TOPIC,
        default_topic="TBW102",
        read_queue_nums=2,
        write_queue_nums=2,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    assert broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == ResponseCode.SUCCESS
    for queue_id, tags in ((0, "TagA"), (0, "TagB"), (1, "TagA")):
        send = SendMessageRequestHeader(
            producer_group=PRODUCER,
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=SUB_VERSION,
            flag=0,
            properties=f"TAGS\x01{tags}\x02WAIT\x01true",
        )
        response = broker.session.invoke(
            broker.cluster.broker_addr, RequestCode.SEND_MESSAGE, send, body=b"raw-queries"
        )
        assert response.code == ResponseCode.SUCCESS, response
    for group in (GROUP, GROUP2):
        config = SubscriptionGroupConfig(group_name=group).encode()
        response = broker.session.invoke(
            broker.cluster.broker_addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config
        )
        assert response.code == ResponseCode.SUCCESS, response
    for group, offsets in OFFSETS.items():
        for queue_id, offset in enumerate(offsets):
            header = UpdateConsumerOffsetRequestHeader(
                consumer_group=group, topic=TOPIC, queue_id=queue_id, commit_offset=offset
            )
            assert broker.ask(RequestCode.UPDATE_CONSUMER_OFFSET, header).code == 0
    heartbeat = HeartbeatData(
        client_id=CLIENT_ID,
        producer_data_set=[ProducerData(group_name=PRODUCER)],
        consumer_data_set=[
            ConsumerData(
                group_name=ONLINE,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[
                    SubscriptionData(
                        topic=TOPIC,
                        sub_string="TagA",
                        tags_set=["TagA"],
                        code_set=[java_hash("TagA")],
                        sub_version=SUB_VERSION,
                    )
                ],
            )
        ],
    )
    response = broker.session.invoke(
        broker.cluster.broker_addr, RequestCode.HEART_BEAT, body=heartbeat.encode()
    )
    assert response.code == ResponseCode.SUCCESS, response


@pytest.fixture(scope="module")
def brokers(apache: Cluster, rmq: Cluster) -> Iterator[dict[str, Broker]]:
    """Both brokers with the same state, each with the session that keeps its clients
    connected."""
    prepared = {}
    for cluster in (apache, rmq):
        prepared[cluster.kind] = Broker(cluster, RemotingSession())
        _prepare(prepared[cluster.kind])
    yield prepared
    for broker in prepared.values():
        broker.session.close()


def _times(value: Any) -> Any:
    """A store time or delay as what it says, not its value: the two brokers stored the
    messages at different moments."""
    if not isinstance(value, int) or value <= 0:
        return value
    return "<time>"


def _both(brokers: dict[str, Broker], code: int, header: object | None = None) -> tuple[Any, Any]:
    return brokers["apache"].body(code, header), brokers["rmq"].body(code, header)


def test_query_topic_consume_by_who_lists_online_and_offset_groups_in_java_order(
    brokers: dict[str, Broker],
) -> None:
    header = QueryTopicConsumeByWhoRequestHeader(topic=TOPIC)
    apache, rmq = _both(brokers, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header)
    assert set(apache["groupList"]) >= {GROUP, GROUP2, ONLINE}
    assert rmq == apache  # the order too: both are Java HashSets


def test_system_topic_list_is_byte_identical(brokers: dict[str, Broker]) -> None:
    apache = brokers["apache"].ask(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    rmq = brokers["rmq"].ask(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    assert apache.body is not None and rmq.body is not None
    assert b"DefaultCluster_REPLY_TOPIC" in bytes(apache.body)
    assert (rmq.code, rmq.remark, bytes(rmq.body)) == (
        apache.code,
        apache.remark,
        bytes(apache.body),
    )


def test_consume_time_span_per_queue(brokers: dict[str, Broker]) -> None:
    header = QueryConsumeTimeSpanRequestHeader(topic=TOPIC, group=GROUP)
    answers = _both(brokers, RequestCode.QUERY_CONSUME_TIME_SPAN, header)
    apache, rmq = (
        [
            {
                key: _times(value)
                for key, value in span.items()
                # the formatted copies of the times: dropped with the times they format
                if not key.endswith("Str")
            }
            for span in answer["consumeTimeSpanSet"]
        ]
        for answer in answers
    )
    assert [span["delayTime"] for span in apache] == ["<time>", "<time>"]
    assert rmq == apache
    unknown = QueryConsumeTimeSpanRequestHeader(topic="RawQNoSuchTopic", group=GROUP)
    replies = [
        broker.ask(RequestCode.QUERY_CONSUME_TIME_SPAN, unknown) for broker in brokers.values()
    ]
    assert {(reply.code, reply.remark) for reply in replies} == {
        (ResponseCode.TOPIC_NOT_EXIST, "topic[RawQNoSuchTopic] not exist")
    }


def _consume_stats(answer: Any, groups: set[str]) -> tuple[list[str], dict[str, Any]]:
    """The group order and, for `groups`, the stats with their times normalised."""
    order = [group for entry in answer["consumeStatsList"] for group in entry]
    stats = {}
    for entry in answer["consumeStatsList"]:
        for group, topic_stats in entry.items():
            if group in groups:
                stats[group] = [
                    {
                        "consumeTps": one["consumeTps"],
                        "offsetTable": {
                            str(queue): {key: _times(value) for key, value in wrapper.items()}
                            for queue, wrapper in one["offsetTable"].items()
                        },
                    }
                    for one in topic_stats
                ]
    return order, stats


@pytest.mark.parametrize("is_order", [False, True])
def test_broker_consume_stats(brokers: dict[str, Broker], is_order: bool) -> None:
    header = GetConsumeStatsInBrokerHeader(is_order=is_order)
    apache, rmq = _both(brokers, RequestCode.GET_BROKER_CONSUME_STATS, header)
    ours = {GROUP, GROUP2, ONLINE}
    apache_order, apache_stats = _consume_stats(apache, ours)
    rmq_order, rmq_stats = _consume_stats(rmq, ours)
    assert len(apache_stats[GROUP]) == (0 if is_order else 1)
    assert rmq_stats == apache_stats
    # the queues of each topic in Java's HashMap order too
    assert [[list(one["offsetTable"]) for one in value] for value in rmq_stats.values()] == [
        [list(one["offsetTable"]) for one in value] for value in apache_stats.values()
    ]
    # other tests of the session add groups of their own: the order of the common ones
    common = set(apache_order) & set(rmq_order)
    assert [g for g in rmq_order if g in common] == [g for g in apache_order if g in common]
    # the address each broker reports is its own; totalDiff sums every group of the session
    assert apache["brokerAddr"] == brokers["apache"].cluster.broker_addr
    assert rmq["brokerAddr"] == brokers["rmq"].cluster.broker_addr


def test_query_consume_queue(brokers: dict[str, Broker]) -> None:
    online = QueryConsumeQueueRequestHeader(
        topic=TOPIC, queue_id=0, index=0, count=5, consumer_group=ONLINE
    )
    apache, rmq = _both(brokers, RequestCode.QUERY_CONSUME_QUEUE, online)
    assert apache["filterData"] == "null" and len(apache["queueData"]) == 2
    for answer in (apache, rmq):
        # commitlog offsets depend on what else the session stored: kept relative
        first = answer["queueData"][0]["physicOffset"]
        for entry in answer["queueData"]:
            entry["physicOffset"] -= first
    assert rmq == apache
    offline = QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=1, index=0, count=1)
    assert _both(brokers, RequestCode.QUERY_CONSUME_QUEUE, offline)[0]["queueData"]
    nobody = QueryConsumeQueueRequestHeader(
        topic=TOPIC, queue_id=1, index=0, count=0, consumer_group="RawQNobody"
    )
    apache, rmq = _both(brokers, RequestCode.QUERY_CONSUME_QUEUE, nobody)
    assert apache["filterData"] == "RawQNobody@RawQTopic is not online!"
    assert rmq == apache
    for header in (
        QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=0, index=7, count=1),
        QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=9, index=0, count=1),
    ):
        apache_reply = brokers["apache"].ask(RequestCode.QUERY_CONSUME_QUEUE, header)
        rmq_reply = brokers["rmq"].ask(RequestCode.QUERY_CONSUME_QUEUE, header)
        assert apache_reply.remark is not None and "is not exist!" in apache_reply.remark
        assert (rmq_reply.code, rmq_reply.remark, rmq_reply.body) == (
            apache_reply.code,
            apache_reply.remark,
            None,
        )


def test_all_producer_info(brokers: dict[str, Broker]) -> None:
    apache, rmq = _both(brokers, RequestCode.GET_ALL_PRODUCER_INFO)
    for kind, answer in (("apache", apache), ("rmq", rmq)):
        (info,) = answer["data"][PRODUCER]
        # the session's own end of the connection, a different port for each broker
        assert info["remoteIP"].startswith("/127.0.0.1:"), (kind, info)
        info["remoteIP"] = "/127.0.0.1:<port>"
        info["lastUpdateTimestamp"] = _times(info["lastUpdateTimestamp"])
    assert list(rmq["data"][PRODUCER][0]) == list(apache["data"][PRODUCER][0])
    assert rmq["data"][PRODUCER] == apache["data"][PRODUCER]


def _offset(broker: Broker, group: str, queue_id: int) -> tuple[int, str | None]:
    header = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=TOPIC, queue_id=queue_id)
    reply = broker.ask(RequestCode.QUERY_CONSUMER_OFFSET, header)
    offset = reply.ext_fields.get("offset") if reply.ext_fields else None
    return reply.code, offset


def test_clone_group_offset(brokers: dict[str, Broker]) -> None:
    clones = [
        CloneGroupOffsetRequestHeader(src_group=GROUP2, dest_group="RawQClone", topic=TOPIC),
        # no topic: Apache copies nothing
        CloneGroupOffsetRequestHeader(src_group=GROUP2, dest_group="RawQCloneAll"),
    ]
    results = {}
    for kind, broker in brokers.items():
        for header in clones:
            assert broker.ask(RequestCode.CLONE_GROUP_OFFSET, header).code == ResponseCode.SUCCESS
        results[kind] = [
            _offset(broker, group, queue_id)
            for group in ("RawQClone", "RawQCloneAll")
            for queue_id in (0, 1)
        ]
    assert results["apache"][:2] == [(ResponseCode.SUCCESS, "2"), (ResponseCode.SUCCESS, "1")]
    assert results["rmq"] == results["apache"]


def test_query_correction_offset_last(brokers: dict[str, Broker]) -> None:
    """Runs last in the module: a filter group makes Apache drop that group's offsets."""
    plain = QueryCorrectionOffsetHeader(compare_group=GROUP2, topic=TOPIC)
    apache, rmq = _both(brokers, RequestCode.QUERY_CORRECTION_OFFSET, plain)
    assert apache == {"correctionOffsets": {0: 0, 1: 0}}
    assert rmq == apache
    filtered = QueryCorrectionOffsetHeader(
        filter_groups=f"{FILTERED},RawQClone", compare_group=GROUP2, topic=TOPIC
    )
    apache, rmq = _both(brokers, RequestCode.QUERY_CORRECTION_OFFSET, filtered)
    assert apache == {"correctionOffsets": {0: 1, 1: 0}}
    assert rmq == apache
    # Apache removed the filter groups' offsets from its table while answering; rmq keeps
    # them (docs/spec-notes.md)
    key = f"{TOPIC}@{FILTERED}"
    assert key not in brokers["apache"].body(RequestCode.GET_ALL_CONSUMER_OFFSET)["offsetTable"]
    assert key in brokers["rmq"].body(RequestCode.GET_ALL_CONSUMER_OFFSET)["offsetTable"]
