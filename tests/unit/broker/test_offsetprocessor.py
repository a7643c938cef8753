"""QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET, including the rule for new groups."""

from __future__ import annotations

import pytest

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.offsetprocessor import ConsumerOffsetProcessor, offset_in_disk
from tests.unit.broker.helpers import call, decoded, send_v1, stored_offset
from tests.unit.remoting.wire import cpp_request

NOT_FOUND = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


@pytest.fixture
def processor(broker: BrokerContext) -> ConsumerOffsetProcessor:
    return ConsumerOffsetProcessor(broker)


def send(broker: BrokerContext, queue_id: int = 0, body: bytes = b"m") -> int:
    return stored_offset(broker, send_v1(queue_id=queue_id, body=body))


def query(group: str = "CG", topic: str = "TopicTest", queue_id: int = 0) -> RemotingCommand:
    ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id}
    return decoded(cpp_request(RequestCode.QUERY_CONSUMER_OFFSET, 1, ext))


def update(offset: int, group: str = "CG", queue_id: int = 0) -> RemotingCommand:
    ext = {
        "consumerGroup": group,
        "topic": "TopicTest",
        "queueId": queue_id,
        "commitOffset": offset,
    }
    return decoded(cpp_request(RequestCode.UPDATE_CONSUMER_OFFSET, 2, ext))


def test_committed_offset_is_answered(
    broker: BrokerContext, processor: ConsumerOffsetProcessor
) -> None:
    committed = call(processor.update_consumer_offset, update(42, queue_id=3))
    answered = call(processor.query_consumer_offset, query(queue_id=3))

    assert (committed.code, committed.ext_fields) == (ResponseCode.SUCCESS, {})
    assert answered.code == ResponseCode.SUCCESS
    assert answered.ext_fields == {"offset": "42"}
    assert broker.consumer_offset_manager.query("CG", "TopicTest", 3) == 42


def test_new_group_on_a_young_queue_starts_at_zero(
    broker: BrokerContext, processor: ConsumerOffsetProcessor
) -> None:
    send(broker)
    send(broker)

    response = call(processor.query_consumer_offset, query())

    assert (response.code, response.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})


def test_new_group_on_an_empty_queue_starts_at_zero(processor: ConsumerOffsetProcessor) -> None:
    response = call(processor.query_consumer_offset, query(topic="NothingYet"))

    assert (response.code, response.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})


def test_new_group_when_the_first_message_is_no_longer_hot(
    broker: BrokerContext, processor: ConsumerOffsetProcessor
) -> None:
    send(broker)
    send(broker, queue_id=1, body=b"x" * 4000)
    processor._memory = 100 * 100 // broker.store_config.access_message_in_memory_max_ratio

    response = call(processor.query_consumer_offset, query())

    assert (response.code, response.remark) == (ResponseCode.QUERY_NOT_FOUND, NOT_FOUND)
    assert response.ext_fields == {}


def test_offset_in_disk_measures_from_the_commitlog_end(broker: BrokerContext) -> None:
    store = broker.store
    first = send(broker, body=b"a" * 100)
    send(broker, queue_id=1, body=b"b" * 1000)
    behind = store.max_physical_offset() - first
    ratio = broker.store_config.access_message_in_memory_max_ratio

    assert offset_in_disk(store, "TopicTest", 0, 0, memory=(behind - 1) * 100 // ratio)
    assert not offset_in_disk(store, "TopicTest", 0, 0, memory=behind * 100 // ratio + 100)
    assert not offset_in_disk(store, "TopicTest", 0, 1, memory=0)
    assert not offset_in_disk(store, "Unknown", 0, 0, memory=0)
