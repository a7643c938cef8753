"""PULL_MESSAGE: every store status and error answer, tag filtering and commit offsets.

The broker here is the served stand-in of ``helpers.serving_broker`` (a real MessageStore with
small files in tmp_path, the real topic / group / offset / client managers, the long-polling
service and the stats), served by a real RemotingServer on 127.0.0.1 with the pull and client
processors registered (``helpers.Serving``), and driven by rmq's RemotingClient.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import struct

import pytest

from rmq.common.config import BrokerRole
from rmq.common.message import iter_records
from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.common.sysflag import PULL_COMMIT_OFFSET, PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.bodies import (
    MessageModel,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
)
from rmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.context import BrokerContext
from rmq.store.store import GetMessageResult, GetMessageStatus
from tests.unit.broker.helpers import (
    GROUP,
    QUEUE_NUMS,
    TOPIC,
    Serving,
    heartbeat_request,
    pull_request,
    put,
    records,
    run,
)
from tests.unit.remoting.wire import cpp_request

pytestmark = pytest.mark.serving_broker

FAQ_HINT = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


def offsets(response: RemotingCommand) -> tuple[str, str, str, str]:
    """(suggestWhichBrokerId, nextBeginOffset, minOffset, maxOffset) as sent."""
    ext = response.ext_fields or {}
    return (ext["suggestWhichBrokerId"], ext["nextBeginOffset"], ext["minOffset"], ext["maxOffset"])


# -- found messages --------------------------------------------------------------------------


def test_found_messages_come_whole_with_string_offsets(broker: BrokerContext) -> None:
    stored = [put(broker, body=b"body-%d" % n) for n in range(5)]
    put(broker, queue_id=1)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=1, max_msg_nums=3)
        assert (response.code, response.remark) == (ResponseCode.SUCCESS, "FOUND")
        assert offsets(response) == ("0", "4", "0", "5")
        got = records(response)
        assert [(r.topic, r.queue_id, r.queue_offset, r.body) for r in got] == [
            (TOPIC, 0, n, b"body-%d" % n) for n in (1, 2, 3)
        ]
        assert [r.physical_offset for r in got] == [s.physical_offset for s in stored[1:4]]
        assert [r.tags for r in got] == ["TagA"] * 3

    run(scenario())
    assert broker.stats.get_transferred == 3


def test_tag_expression_selects_by_tags_code_and_counts_every_entry_scanned(
    broker: BrokerContext,
) -> None:
    for n, tag in enumerate(["TagA", "TagB", "TagC", "TagA", None, "TagB"]):
        put(broker, tag, body=b"m%d" % n)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            one_tag = await serving.pull(subscription="TagB")
            two_tags = await serving.pull(subscription=" TagA || TagC ")
            every = await serving.pull(subscription="*")
        assert [r.body for r in records(one_tag)] == [b"m1", b"m5"]
        assert offsets(one_tag)[1] == "6"
        assert [r.body for r in records(two_tags)] == [b"m0", b"m2", b"m3"]
        assert len(records(every)) == 6

    run(scenario())


def test_no_matching_tag_asks_to_retry_from_past_the_scanned_entries(
    broker: BrokerContext,
) -> None:
    for _ in range(3):
        put(broker, "TagA")

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(subscription="TagZ")
        assert (response.code, response.remark) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            "NO_MATCHED_MESSAGE",
        )
        assert offsets(response) == ("0", "3", "0", "3")
        assert response.body is None

    run(scenario())


def test_heartbeat_subscription_is_used_without_the_subscription_flag(
    broker: BrokerContext,
) -> None:
    put(broker, "TagA", body=b"a")
    put(broker, "TagB", body=b"b")
    subscription = SubscriptionData.from_expression(TOPIC, "TagB")

    async def scenario() -> None:
        async with Serving(broker) as serving:
            registered = await serving.invoke(heartbeat_request("c1", GROUP, [subscription]))
            assert registered.code == ResponseCode.SUCCESS
            response = await serving.pull(sys_flag=0, subscription="TagA")
        assert [r.body for r in records(response)] == [b"b"]

    run(scenario())


# -- nothing to return ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "code", "remark", "next_offset"),
    [
        (3, ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", "3"),
        (9, ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", "3"),
    ],
)
def test_pull_past_the_end(
    broker: BrokerContext, offset: int, code: ResponseCode, remark: str, next_offset: str
) -> None:
    for _ in range(3):
        put(broker)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=offset)
        assert (response.code, response.remark) == (code, remark)
        assert offsets(response) == ("0", next_offset, "0", "3")

    run(scenario())


@pytest.mark.parametrize(
    ("offset", "code", "next_offset"),
    [(0, ResponseCode.PULL_NOT_FOUND, "0"), (7, ResponseCode.PULL_OFFSET_MOVED, "0")],
)
def test_a_queue_never_written_moves_a_consumer_back_to_zero(
    broker: BrokerContext, offset: int, code: ResponseCode, next_offset: str
) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            never_written = await serving.pull(queue_id=2, offset=offset)
            broker.store.find_consume_queue(TOPIC, 3)
            empty = await serving.pull(queue_id=3, offset=offset)
        # never written: created empty by the pull, as Apache's findConsumeQueue does
        assert (never_written.code, never_written.remark) == (code, "NO_MESSAGE_IN_QUEUE")
        assert offsets(never_written) == ("0", next_offset, "0", "0")
        assert (empty.code, empty.remark) == (code, "NO_MESSAGE_IN_QUEUE")

    run(scenario())


def test_offsets_below_the_queue_minimum_and_removed_data(broker: BrokerContext) -> None:
    store = broker.store
    for n in range(400):
        put(broker, body=bytes(200) + b"%d" % n)
    # The first 64 KiB commitlog file holds about 200 records: every entry of the first
    # consume queue file (50 entries) points into it.  The two halves of a clean-up are run
    # apart on the store's parts to hold the moment between them.
    assert len(store.commitlog.delete_expired_files(0, clean_immediately=True, max_files=1)) == 1

    async def removing() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=0)
        assert (response.code, response.remark) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            "MESSAGE_WAS_REMOVING",
        )
        assert offsets(response)[1] == "50"

    run(removing())
    store.consume_queues.delete_expired(store.min_physical_offset())
    minimum = store.get_min_offset_in_queue(TOPIC, 0)
    assert minimum > 0

    async def too_small() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=0)
        assert (response.code, response.remark) == (
            ResponseCode.PULL_OFFSET_MOVED,
            "OFFSET_TOO_SMALL",
        )
        assert offsets(response) == ("0", str(minimum), str(minimum), "400")

    run(too_small())


def test_a_missing_consume_queue_file_is_not_found_with_the_next_file_offset(
    broker: BrokerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store answers this only when a consume queue file vanished under a live queue.
    missing = GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL, 50, 0, 80)
    monkeypatch.setattr(broker.store, "get_messages", lambda *args: missing)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=20)
        assert (response.code, response.remark) == (
            ResponseCode.PULL_NOT_FOUND,
            "OFFSET_FOUND_NULL",
        )
        assert offsets(response) == ("0", "50", "0", "80")

    run(scenario())


# -- which broker to pull from next -------------------------------------------------------------


def test_slave_reading_suggests_the_groups_broker_or_the_slow_consumer_broker(
    broker: BrokerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.broker_config.slave_read_enable = True
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name=GROUP, broker_id=3, which_broker_when_consume_slowly=2)
    )
    put(broker)
    real_get_messages = broker.store.get_messages

    async def scenario() -> None:
        async with Serving(broker) as serving:
            near = await serving.pull()
            monkeypatch.setattr(
                broker.store,
                "get_messages",
                lambda *args: dataclasses.replace(
                    real_get_messages(*args), suggest_pulling_from_slave=True
                ),
            )
            far_behind = await serving.pull()
        assert offsets(near)[0] == "3"
        assert offsets(far_behind)[0] == "2"

    run(scenario())


# -- commit offset piggyback ---------------------------------------------------------------------


def test_commit_offset_flag_stores_the_groups_offset_on_a_master(broker: BrokerContext) -> None:
    put(broker)

    async def scenario() -> None:
        async with Serving(broker) as serving:
            await serving.pull(queue_id=1, sys_flag=PULL_SUBSCRIPTION, commit_offset=5)
            assert broker.consumer_offset_manager.query(GROUP, TOPIC, 1) == -1
            await serving.pull(
                queue_id=1, sys_flag=PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET, commit_offset=5
            )
            assert broker.consumer_offset_manager.query(GROUP, TOPIC, 1) == 5
            broker.store_config.broker_role = BrokerRole.SLAVE
            await serving.pull(
                queue_id=1, sys_flag=PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET, commit_offset=9
            )
            assert broker.consumer_offset_manager.query(GROUP, TOPIC, 1) == 5

    run(scenario())


def test_a_slave_without_offset_check_asks_to_retry_instead_of_moving_the_offset(
    broker: BrokerContext,
) -> None:
    broker.store_config.broker_role = BrokerRole.SLAVE

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(offset=7)
        assert (response.code, response.remark) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            "NO_MESSAGE_IN_QUEUE",
        )

    run(scenario())


# -- refused pulls --------------------------------------------------------------------------------


def test_refusals_of_broker_group_and_topic(broker: BrokerContext) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name="WriteOnly", read_queue_nums=1, write_queue_nums=1, perm=PERM_WRITE)
    )
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name="CID_off", consume_enable=False)
    )

    async def scenario() -> None:
        async with Serving(broker) as serving:
            disabled = await serving.pull(group="CID_off")
            no_topic = await serving.pull(topic="Nope")
            write_only = await serving.pull(topic="WriteOnly")
            broker.broker_config.broker_permission = PERM_WRITE
            broker_closed = await serving.pull()
        assert (disabled.code, disabled.remark) == (
            ResponseCode.NO_PERMISSION,
            "subscription group no permission, CID_off",
        )
        assert (no_topic.code, no_topic.remark) == (
            ResponseCode.TOPIC_NOT_EXIST,
            f"topic[Nope] not exist, apply first please! {FAQ_HINT}",
        )
        assert (write_only.code, write_only.remark) == (
            ResponseCode.NO_PERMISSION,
            "the topic[WriteOnly] pulling message is forbidden",
        )
        assert (broker_closed.code, broker_closed.remark) == (
            ResponseCode.NO_PERMISSION,
            "the broker[127.0.0.1] pulling message is forbidden",
        )

    run(scenario())


def test_unknown_groups_are_created_unless_auto_creation_is_off(broker: BrokerContext) -> None:
    broker.broker_config.auto_create_subscription_group = False

    async def scenario() -> None:
        async with Serving(broker) as serving:
            refused = await serving.pull(group="CID_unknown")
            broker.broker_config.auto_create_subscription_group = True
            accepted = await serving.pull(group="CID_unknown")
        assert (refused.code, refused.remark) == (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [CID_unknown] does not exist, {FAQ_HINT}",
        )
        assert accepted.code == ResponseCode.PULL_NOT_FOUND
        assert broker.subscription_group_manager.find("CID_unknown", auto_create=False)

    run(scenario())


@pytest.mark.parametrize("queue_id", [-1, QUEUE_NUMS])
def test_queue_ids_outside_the_read_queues_are_illegal(
    broker: BrokerContext, queue_id: int
) -> None:
    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(queue_id=queue_id)
            client_addr = next(iter(serving.server.connections)).remote_addr
        assert (response.code, response.remark) == (
            ResponseCode.SYSTEM_ERROR,
            f"queueId[{queue_id}] is illegal, topic:[{TOPIC}] topicConfig.readQueueNums:[4] "
            f"consumer:[/{client_addr}]",
        )

    run(scenario())


def test_subscription_errors(broker: BrokerContext) -> None:
    newer = SubscriptionData.from_expression(TOPIC, "*")
    newer.sub_version = 100

    async def scenario() -> None:
        async with Serving(broker) as serving:
            empty_sql = await serving.pull(subscription="", expression_type="SQL92")
            sql = await serving.pull(subscription="a > 1", expression_type="SQL92")
            offline = await serving.pull(sys_flag=0)
            await serving.invoke(heartbeat_request("c1", GROUP, [newer]))
            other_topic = await serving.pull(topic="%RETRY%" + GROUP, sys_flag=0)
            stale = await serving.pull(sys_flag=0, sub_version=101)
            current = await serving.pull(sys_flag=0, sub_version=100)
        assert (empty_sql.code, empty_sql.remark) == (
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            "parse the consumer's subscription failed",
        )
        assert (sql.code, sql.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
        assert (offline.code, offline.remark) == (
            ResponseCode.SUBSCRIPTION_NOT_EXIST,
            f"the consumer's group info not exist{FAQ_HINT}",
        )
        assert (other_topic.code, other_topic.remark) == (
            ResponseCode.SUBSCRIPTION_NOT_EXIST,
            f"the consumer's subscription not exist{FAQ_HINT}",
        )
        assert (stale.code, stale.remark) == (
            ResponseCode.SUBSCRIPTION_NOT_LATEST,
            "the consumer's subscription not latest",
        )
        assert current.code == ResponseCode.PULL_NOT_FOUND

    run(scenario())


def test_broadcasting_groups_need_broadcast_permission(broker: BrokerContext) -> None:
    broker.subscription_group_manager.update(
        SubscriptionGroupConfig(group_name=GROUP, consume_broadcast_enable=False)
    )
    subscription = SubscriptionData.from_expression(TOPIC, "*")

    async def scenario() -> None:
        async with Serving(broker) as serving:
            await serving.invoke(
                heartbeat_request("c1", GROUP, [subscription], MessageModel.BROADCASTING)
            )
            response = await serving.pull(sys_flag=0)
        assert (response.code, response.remark) == (
            ResponseCode.NO_PERMISSION,
            f"the consumer group[{GROUP}] can not consume by broadcast way",
        )

    run(scenario())


def test_a_header_without_required_fields_is_a_system_error(broker: BrokerContext) -> None:
    request = pull_request()
    assert request.ext_fields is not None
    del request.ext_fields["queueOffset"]

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.invoke(request)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert "queueOffset" in (response.remark or "")

    run(scenario())


def test_a_read_only_topic_can_be_pulled(broker: BrokerContext) -> None:
    broker.topic_config_manager.update(
        TopicConfig(topic_name="ReadOnly", read_queue_nums=1, write_queue_nums=1, perm=PERM_READ)
    )
    put(broker, topic="ReadOnly")

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.pull(topic="ReadOnly")
        assert (response.code, len(records(response))) == (ResponseCode.SUCCESS, 1)

    run(scenario())


def test_a_binary_header_pull_is_answered_with_the_fast_codec_field_order(
    broker: BrokerContext,
) -> None:
    put(broker)
    request = pull_request()
    request.serialize_type = SerializeType.ROCKETMQ

    async def scenario() -> None:
        async with Serving(broker) as serving:
            response = await serving.invoke(request)
        assert response.serialize_type is SerializeType.ROCKETMQ
        assert list(response.ext_fields or {}) == [
            "suggestWhichBrokerId",
            "nextBeginOffset",
            "minOffset",
            "maxOffset",
        ]
        assert len(records(response)) == 1

    run(scenario())


def test_a_cpp_client_pull_with_numbers_in_its_header_gets_string_offsets(
    broker: BrokerContext,
) -> None:
    put(broker, body=b"from-cpp")
    ext_fields: dict[str, object] = {
        "AccessKey": "",
        "OnsChannel": "ALIYUN",
        "Signature": "x",
        "consumerGroup": GROUP,
        "topic": TOPIC,
        "queueId": 0,
        "queueOffset": "0",
        "maxMsgNums": 32,
        "sysFlag": PULL_COMMIT_OFFSET | PULL_SUSPEND | PULL_SUBSCRIPTION,
        "commitOffset": "0",
        "suspendTimeoutMillis": "15000",
        "subscription": "*",
        "subVersion": "0",
    }

    async def scenario() -> None:
        async with Serving(broker) as serving:
            reader, writer = await asyncio.open_connection("127.0.0.1", serving.server.port)
            writer.write(cpp_request(RequestCode.PULL_MESSAGE, 7, ext_fields))
            (length,) = struct.unpack(">i", await reader.readexactly(4))
            data = await reader.readexactly(length)
            writer.close()
        (word,) = struct.unpack_from(">i", data)
        header = json.loads(data[4 : 4 + word])
        assert (header["code"], header["opaque"], header["remark"]) == (0, 7, "FOUND")
        assert header["extFields"] == {
            "suggestWhichBrokerId": "0",
            "nextBeginOffset": "1",
            "minOffset": "0",
            "maxOffset": "1",
        }
        body = data[4 + word :]
        assert [record.body for _, record in iter_records(body)] == [b"from-cpp"]

    run(scenario())
