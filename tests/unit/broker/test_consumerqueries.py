"""ConsumerQueryProcessor: the consumer and producer queries, driven with requests against a
broker context with a real store (every record stamped STORE_TIME), and rmq's client API for
them against the same processor served over a real connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmq.client import api
from rmq.client.errors import MQBrokerError
from rmq.common import fastjson
from rmq.common.javahash import java_hash
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from rmq.remoting.server import RemotingServer
from rmq.server.broker.client.clientmanager import ClientChannelInfo
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.consumerqueries import JAVA_LONG_MAX, ConsumerQueryProcessor
from tests.unit.broker.helpers import STORE_TIME, FakeChannel, call, put, run, running_broker

TOPIC = "TopicQ"
ORDER_TOPIC = "TopicOrdered"
GROUP = "GroupQ"


@pytest.fixture
def processor(broker: BrokerContext) -> ConsumerQueryProcessor:
    broker.topic_config_manager.update(
        TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2)
    )
    return ConsumerQueryProcessor(broker)


def ask(
    processor: ConsumerQueryProcessor, code: int, header: object | None = None
) -> RemotingCommand:
    return call(processor.handlers()[code], create_request(code, header))


def body(processor: ConsumerQueryProcessor, code: int, header: object | None = None) -> Any:
    response = ask(processor, code, header)
    assert response.code == ResponseCode.SUCCESS, response
    assert response.body is not None
    return fastjson.loads(response.body)


def go_online(broker: BrokerContext, group: str, topic: str, client_id: str = "c1") -> None:
    """A consumer of ``group`` subscribed to ``topic`` with ``TagA``."""
    broker.client_manager.register_consumer(
        group,
        ClientChannelInfo(FakeChannel("10.0.0.9:5000"), client_id, LanguageCode.JAVA, 409),
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        [SubscriptionData.from_expression(topic, "TagA")],
        is_notify=False,
    )


def commit(broker: BrokerContext, group: str, topic: str, *offsets: int) -> None:
    for queue_id, offset in enumerate(offsets):
        broker.consumer_offset_manager.commit("test", group, topic, queue_id, offset)


# -- QUERY_TOPIC_CONSUME_BY_WHO ----------------------------------------------------------------


def test_consume_by_who_joins_online_groups_and_groups_with_offsets(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    header = QueryTopicConsumeByWhoRequestHeader(topic=TOPIC)
    assert body(processor, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header) == {"groupList": []}
    go_online(broker, "OnlineG", TOPIC)
    go_online(broker, "ElsewhereG", "OtherTopic")
    commit(broker, GROUP, TOPIC, 3)
    commit(broker, "OtherG", "OtherTopic", 1)
    groups = body(processor, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header)["groupList"]
    assert sorted(groups) == [GROUP, "OnlineG"]


# -- QUERY_CONSUME_TIME_SPAN -------------------------------------------------------------------


def test_time_span_of_an_unknown_topic_is_topic_not_exist(
    processor: ConsumerQueryProcessor,
) -> None:
    header = QueryConsumeTimeSpanRequestHeader(topic="NoSuchTopic", group=GROUP)
    response = ask(processor, RequestCode.QUERY_CONSUME_TIME_SPAN, header)
    assert (response.code, response.remark) == (
        ResponseCode.TOPIC_NOT_EXIST,
        "topic[NoSuchTopic] not exist",
    )


def test_time_span_per_queue_with_apaches_delay_rules(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    for _ in range(3):
        put(broker, queue_id=0, topic=TOPIC)
    header = QueryConsumeTimeSpanRequestHeader(topic=TOPIC, group=GROUP)
    spans = body(processor, RequestCode.QUERY_CONSUME_TIME_SPAN, header)["consumeTimeSpanSet"]
    assert [span["messageQueue"]["queueId"] for span in spans] == [0, 1]
    first, empty = spans
    # no offset: consumed "up to" the first message, delay measured from Apache's -1
    assert (first["minTimeStamp"], first["maxTimeStamp"], first["consumeTimeStamp"]) == (
        STORE_TIME,
        STORE_TIME,
        STORE_TIME,
    )
    assert first["delayTime"] == STORE_TIME + 1
    # an empty queue: no times, and offset -1 is still "behind" its max offset 0
    assert (empty["minTimeStamp"], empty["maxTimeStamp"], empty["consumeTimeStamp"]) == (-1,) * 3
    assert empty["delayTime"] == STORE_TIME + 1
    commit(broker, GROUP, TOPIC, 3, 0)
    spans = body(processor, RequestCode.QUERY_CONSUME_TIME_SPAN, header)["consumeTimeSpanSet"]
    assert (spans[0]["consumeTimeStamp"], spans[0]["delayTime"]) == (STORE_TIME, 0)
    assert spans[1]["delayTime"] == 0  # offset 0 of an empty queue is not behind
    commit(broker, GROUP, TOPIC, 1)
    spans = body(processor, RequestCode.QUERY_CONSUME_TIME_SPAN, header)["consumeTimeSpanSet"]
    assert spans[0]["delayTime"] == 0  # the broker's clock is the messages' store time


# -- GET_SYSTEM_TOPIC_LIST_FROM_BROKER ----------------------------------------------------------


def test_system_topics_in_the_order_apaches_broker_writes_them(
    processor: ConsumerQueryProcessor,
) -> None:
    topics = body(processor, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    # what Apache 4.9.8's broker-a of DefaultCluster answers (tests/conformance/test_raw_queries)
    assert topics == {
        "topicList": [
            "SCHEDULE_TOPIC_XXXX",
            "RMQ_SYS_TRANS_HALF_TOPIC",
            "RMQ_SYS_TRACE_TOPIC",
            "DefaultCluster_REPLY_TOPIC",
            "RMQ_SYS_TRANS_OP_HALF_TOPIC",
            "BenchmarkTest",
            "TRANS_CHECK_MAX_TIME_TOPIC",
            "OFFSET_MOVED_EVENT",
            "TBW102",
            "broker-a",
            "SELF_TEST_TOPIC",
            "DefaultCluster",
        ]
    }


def test_system_topics_name_the_brokers_own_topics(tmp_path: Path) -> None:
    settings = {
        "broker_cluster_name": "ClusterX",
        "broker_name": "broker-x",
        "trace_topic_enable": True,
        "msg_trace_topic_name": "MyTrace",
    }
    with running_broker(tmp_path, broker=settings) as broker:
        topics = body(ConsumerQueryProcessor(broker), RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    assert {"ClusterX", "broker-x", "MyTrace", "ClusterX_REPLY_TOPIC"} <= set(topics["topicList"])
    assert "brokerAddr" not in topics


# -- QUERY_CORRECTION_OFFSET ---------------------------------------------------------------------


def correction(processor: ConsumerQueryProcessor, **fields: Any) -> RemotingCommand:
    header = QueryCorrectionOffsetHeader(topic=TOPIC, **fields)
    return ask(processor, RequestCode.QUERY_CORRECTION_OFFSET, header)


def test_correction_offset_is_the_lowest_offset_of_the_unfiltered_groups(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    for _ in range(5):
        put(broker, queue_id=0, topic=TOPIC)
    put(broker, queue_id=1, topic=TOPIC)
    commit(broker, "G1", TOPIC, 4, 1)
    commit(broker, "G2", TOPIC, 2, 1)
    commit(broker, "G3", TOPIC, 1)
    answer = correction(processor, compare_group="G1")
    assert fastjson.loads(answer.body or b"") == {"correctionOffsets": {0: 1, 1: 1}}
    answer = correction(processor, compare_group="G1", filter_groups="G3,G2")
    assert fastjson.loads(answer.body or b"") == {"correctionOffsets": {0: 4, 1: 1}}
    # a compare group that is itself filtered is not compared
    answer = correction(processor, compare_group="G3", filter_groups="G3")
    assert fastjson.loads(answer.body or b"") == {"correctionOffsets": {0: 2, 1: 1}}
    # nothing is removed from the offset table (Apache drops the filter groups' offsets)
    assert broker.consumer_offset_manager.query("G3", TOPIC, 0) == 1


def test_a_compare_group_behind_the_store_gets_long_max_or_an_error(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    put(broker, queue_id=0, topic=TOPIC)
    commit(broker, "Behind", TOPIC, -1)
    response = correction(processor, compare_group="Behind")
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == f"no group has an offset of queue 0 of {TOPIC} in the store"
    commit(broker, "Ahead", TOPIC, 1)
    answer = correction(processor, compare_group="Behind")
    assert fastjson.loads(answer.body or b"") == {"correctionOffsets": {0: JAVA_LONG_MAX}}


# -- CLONE_GROUP_OFFSET --------------------------------------------------------------------------


def clone(processor: ConsumerQueryProcessor, dest: str, **fields: Any) -> None:
    header = CloneGroupOffsetRequestHeader(src_group=GROUP, dest_group=dest, **fields)
    assert ask(processor, RequestCode.CLONE_GROUP_OFFSET, header).code == ResponseCode.SUCCESS


def test_clone_group_offset_copies_one_topic_under_apaches_conditions(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    offsets = broker.consumer_offset_manager
    commit(broker, GROUP, TOPIC, 5, 6)
    commit(broker, GROUP, "Unconfigured", 7)
    clone(processor, "Copy", topic=TOPIC)
    assert offsets.query_offsets("Copy", TOPIC) == {0: 5, 1: 6}
    clone(processor, "NoTopic")
    clone(processor, "NoTopic", topic="  ")
    clone(processor, "NoTopic", topic="Unconfigured")
    assert offsets.topics_of_group("NoTopic") == set()
    go_online(broker, GROUP, "OtherTopic")  # online, but not on TOPIC
    clone(processor, "Online", topic=TOPIC)
    assert offsets.query_offsets("Online", TOPIC) is None
    clone(processor, "Online", topic=TOPIC, offline=True)
    assert offsets.query_offsets("Online", TOPIC) == {0: 5, 1: 6}


# -- GET_BROKER_CONSUME_STATS --------------------------------------------------------------------


def test_broker_consume_stats_list_every_group_with_its_topics(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name=ORDER_TOPIC, read_queue_nums=1, write_queue_nums=1, order=True)
    )
    for name in (GROUP, "Idle"):
        broker.subscription_group_manager.update(SubscriptionGroupConfig(group_name=name))
    for queue_id in (0, 0, 0, 1):
        put(broker, queue_id=queue_id, topic=TOPIC)
    put(broker, topic=ORDER_TOPIC)
    commit(broker, GROUP, TOPIC, 1, 1)
    commit(broker, GROUP, ORDER_TOPIC, 0)
    commit(broker, GROUP, "Unconfigured", 4)
    header = GetConsumeStatsInBrokerHeader(is_order=False)
    answer = body(processor, RequestCode.GET_BROKER_CONSUME_STATS, header)
    assert answer["brokerAddr"] == broker.broker_addr
    assert answer["totalDiff"] == (3 - 1) + 0 + 1
    stats = {name: value for entry in answer["consumeStatsList"] for name, value in entry.items()}
    assert stats["Idle"] == []
    by_topic = {
        next(iter(one["offsetTable"])).__fastjson_key__()["topic"]: one for one in stats[GROUP]
    }
    assert set(by_topic) == {TOPIC, ORDER_TOPIC}
    wrappers = {
        queue.__fastjson_key__()["queueId"]: wrapper
        for queue, wrapper in by_topic[TOPIC]["offsetTable"].items()
    }
    assert wrappers == {
        0: {"brokerOffset": 3, "consumerOffset": 1, "lastTimestamp": STORE_TIME},
        1: {"brokerOffset": 1, "consumerOffset": 1, "lastTimestamp": STORE_TIME},
    }
    assert list(by_topic[ORDER_TOPIC]["offsetTable"].values()) == [
        {"brokerOffset": 1, "consumerOffset": 0, "lastTimestamp": 0}
    ]
    only_order = body(
        processor,
        RequestCode.GET_BROKER_CONSUME_STATS,
        GetConsumeStatsInBrokerHeader(is_order=True),
    )
    assert only_order["totalDiff"] == 1
    ordered = {
        name: value for entry in only_order["consumeStatsList"] for name, value in entry.items()
    }
    assert len(ordered[GROUP]) == 1
    go_online(broker, GROUP, TOPIC)  # online on TOPIC only: its other topics are skipped
    online = body(processor, RequestCode.GET_BROKER_CONSUME_STATS, header)
    assert online["totalDiff"] == 2


# -- QUERY_CONSUME_QUEUE -------------------------------------------------------------------------


def test_query_consume_queue_answers_entries_and_the_groups_subscription(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    results = [put(broker, tag, queue_id=0, topic=TOPIC) for tag in ("TagA", "TagB", None)]
    header = QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=0, index=1, count=5)
    answer = body(processor, RequestCode.QUERY_CONSUME_QUEUE, header)
    assert answer == {
        "maxQueueIndex": 3,
        "minQueueIndex": 0,
        "queueData": [
            {
                "eval": False,
                "physicOffset": results[1].physical_offset,
                "physicSize": results[1].wrote_bytes,
                "tagsCode": java_hash("TagB"),
            },
            {
                "eval": False,
                "physicOffset": results[2].physical_offset,
                "physicSize": results[2].wrote_bytes,
                "tagsCode": 0,
            },
        ],
    }
    header.consumer_group = GROUP
    header.count = 0
    answer = body(processor, RequestCode.QUERY_CONSUME_QUEUE, header)
    assert (answer["queueData"], answer["filterData"]) == ([], f"{GROUP}@{TOPIC} is not online!")
    assert "subscriptionData" not in answer
    go_online(broker, GROUP, TOPIC)
    answer = body(processor, RequestCode.QUERY_CONSUME_QUEUE, header)
    assert answer["filterData"] == "null"
    assert answer["subscriptionData"]["subString"] == "TagA"


def test_query_consume_queue_outside_the_queue(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    put(broker, queue_id=0, topic=TOPIC)
    missing = QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=1, index=0, count=1)
    response = ask(processor, RequestCode.QUERY_CONSUME_QUEUE, missing)
    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        f"1@{TOPIC} is not exist!",
    )
    for index in (1, -1):
        beyond = QueryConsumeQueueRequestHeader(topic=TOPIC, queue_id=0, index=index, count=1)
        response = ask(processor, RequestCode.QUERY_CONSUME_QUEUE, beyond)
        assert (response.code, response.remark, response.body) == (
            ResponseCode.SUCCESS,
            f"Index {index} of 0@{TOPIC} is not exist!",
            None,
        )


# -- GET_ALL_PRODUCER_INFO -----------------------------------------------------------------------


def test_all_producer_info_lists_every_group_with_its_clients(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    assert body(processor, RequestCode.GET_ALL_PRODUCER_INFO) == {"data": {}}
    for client_id, addr in (("p1", "10.0.0.1:1000"), ("p2", "10.0.0.2:2000")):
        info = ClientChannelInfo(FakeChannel(addr), client_id, LanguageCode.CPP, 413)
        broker.client_manager.register_producer("PG", info)
    answer = body(processor, RequestCode.GET_ALL_PRODUCER_INFO)
    assert answer == {
        "data": {
            "PG": [
                {
                    "clientId": "p1",
                    "language": "CPP",
                    "lastUpdateTimestamp": answer["data"]["PG"][0]["lastUpdateTimestamp"],
                    "remoteIP": "/10.0.0.1:1000",
                    "version": 413,
                },
                {
                    "clientId": "p2",
                    "language": "CPP",
                    "lastUpdateTimestamp": answer["data"]["PG"][1]["lastUpdateTimestamp"],
                    "remoteIP": "/10.0.0.2:2000",
                    "version": 413,
                },
            ]
        }
    }
    assert all(one["lastUpdateTimestamp"] > 0 for one in answer["data"]["PG"])


# -- the client API, served ----------------------------------------------------------------------


def test_the_client_api_reads_every_answer(
    broker: BrokerContext, processor: ConsumerQueryProcessor
) -> None:
    put(broker, queue_id=0, topic=TOPIC)
    put(broker, queue_id=0, topic=TOPIC)
    commit(broker, GROUP, TOPIC, 1, 0)
    broker.subscription_group_manager.update(SubscriptionGroupConfig(group_name=GROUP))
    broker.client_manager.register_producer(
        "PG", ClientChannelInfo(FakeChannel("10.0.0.1:1000"), "p1", LanguageCode.JAVA, 409)
    )

    async def scenario() -> None:
        server = RemotingServer("127.0.0.1", 0)
        for code, handler in processor.handlers().items():
            server.register(code, handler)
        async with server, RemotingClient() as client:
            addr = f"127.0.0.1:{server.port}"
            assert await api.query_topic_consume_by_who(client, addr, TOPIC, 3) == [GROUP]
            spans = await api.query_consume_time_span(client, addr, TOPIC, GROUP, 3)
            assert [span.consume_time_stamp for span in spans] == [STORE_TIME, -1]
            assert "TBW102" in await api.get_system_topic_list_from_broker(client, addr, 3)
            assert await api.query_correction_offset(client, addr, TOPIC, GROUP, ["X"], 3) == {
                0: 1,
                1: 0,
            }
            await api.clone_group_offset(client, addr, GROUP, "Copy", TOPIC, False, 3)
            assert broker.consumer_offset_manager.query_offsets("Copy", TOPIC) == {0: 1, 1: 0}
            stats = await api.fetch_consume_stats_in_broker(client, addr, False, 3)
            assert stats.total_diff == 1 and stats.broker_addr == broker.broker_addr
            cq = await api.query_consume_queue(client, addr, TOPIC, 0, 0, 2, None, 3)
            assert cq is not None and cq.queue_data is not None
            assert len(cq.queue_data) == 2 and cq.queue_data[0].physic_offset == 0
            assert await api.query_consume_queue(client, addr, TOPIC, 0, 9, 2, None, 3) is None
            producers = await api.get_all_producer_info(client, addr, 3)
            assert [info.remote_ip for info in producers.data["PG"]] == ["/10.0.0.1:1000"]
            with pytest.raises(MQBrokerError) as refused:
                await api.query_consume_time_span(client, addr, "NoSuchTopic", GROUP, 3)
            assert refused.value.code == ResponseCode.TOPIC_NOT_EXIST

    run(scenario())
