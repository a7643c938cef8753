"""Store maintenance, the stats items and half-message resume (storeadmin.py, statsitems.py).

The requests are driven through the processor's handlers with frames as Apache's tools send
them; the stats items are fed by the real send, send-back and pull processors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common import fastjson
from rmq.common.msgid import offset_msg_id
from rmq.common.naming import LMQ_PREFIX, RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from rmq.remoting.bodies import TopicConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.processor.pullprocessor import PullMessageProcessor
from rmq.server.broker.processor.storeadmin import StoreAdminProcessor
from rmq.server.broker.stats.statsitems import BrokerStatsItems, SampledWindow
from tests.unit.broker.helpers import (
    STORE_HOST,
    TOPIC,
    Clock,
    call,
    make_broker,
    pull_request,
    put,
    send_v1,
    stored_offset,
)

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
GROUP = "CID_stats"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def broker(tmp_path: Path, clock: Clock) -> Iterator[BrokerContext]:
    context = make_broker(
        tmp_path,
        store={"disk_max_used_space_ratio": 95, "file_reserved_time": 0},
        clock=clock,
    )
    context.topic_config_manager.update(
        TopicConfig(topic_name=TOPIC, read_queue_nums=4, write_queue_nums=4)
    )
    yield context
    context.store.shutdown()


def stats_request(name: str, key: str) -> RemotingCommand:
    return create_request(
        RequestCode.VIEW_BROKER_STATS_DATA,
        ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key),
    )


def view(broker: BrokerContext, name: str, key: str) -> dict[str, dict[str, object]]:
    processor = StoreAdminProcessor(broker)
    response = call(processor.view_broker_stats_data, stats_request(name, key))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert response.body is not None
    document = fastjson.loads(bytes(response.body).decode())
    assert isinstance(document, dict)
    return document


# -- the sampled windows ---------------------------------------------------------------------


def test_window_counts_from_a_zero_snapshot_one_interval_before_the_first() -> None:
    window = SampledWindow(10_000, 7)
    assert window.snapshot().sum == 0 and window.snapshot().tps == 0.0
    window.sample(100_000, times=2, value=8)
    snapshot = window.snapshot()
    assert (snapshot.sum, snapshot.times, snapshot.tps, snapshot.avgpt) == (8, 2, 0.8, 4.0)


def test_window_keeps_its_last_seven_snapshots(clock: Clock) -> None:
    items = BrokerStatsItems("C", clock=clock)
    for _ in range(10):
        items.put("T", 0, 3, 300)
        clock.now += 10_000
        items.sample_minute()
    item = items.item("TOPIC_PUT_NUMS", "T")
    assert item is not None
    minute = item.minute.snapshot()
    # Seven snapshots span the last 60 s: the puts of the last six intervals.
    assert (minute.sum, minute.times, minute.tps, minute.avgpt) == (18, 6, 0.3, 3.0)
    hour = item.hour.snapshot()
    assert (hour.sum, hour.tps) == (0, 0.0)  # not sampled yet
    items.sample_hour()
    items.sample_day()
    assert item.hour.snapshot().sum == 30 and item.day.snapshot().sum == 30
    assert item.hour.snapshot().tps == pytest.approx(30 / 600)


def test_broker_counters_count_values_not_times(clock: Clock) -> None:
    items = BrokerStatsItems("DefaultCluster", clock=clock)
    items.put("T", 0, 2, 10)
    items.get("G", "T", 5, 50)
    items.sample_minute()
    for name, total in (("BROKER_PUT_NUMS", 2), ("BROKER_GET_NUMS", 5)):
        item = items.item(name, "DefaultCluster")
        assert item is not None
        snapshot = item.minute.snapshot()
        assert (snapshot.sum, snapshot.times, snapshot.avgpt) == (total, 0, 0.0)


def test_deleted_topics_and_groups_lose_their_items(clock: Clock) -> None:
    items = BrokerStatsItems("C", clock=clock)
    items.put("T", 0, 1, 10)
    items.put("T2", 0, 1, 10)
    items.get("G", "T", 1, 10)
    items.get("G2", "T2", 1, 10)
    items.pull_latency("G", "T", 0, 5)
    items.send_back("G2", "T", RMQ_SYS_SCHEDULE_TOPIC, 2, 100)
    items.topic_deleted("T")
    for name, key in (
        ("TOPIC_PUT_NUMS", "T"),
        ("GROUP_GET_NUMS", "T@G"),
        ("GROUP_GET_LATENCY", "0@T@G"),
        ("SNDBCK_PUT_NUMS", "T@G2"),
    ):
        assert items.item(name, key) is None
    assert items.item("TOPIC_PUT_NUMS", "T2") is not None
    assert items.item("QUEUE_PUT_NUMS", f"{RMQ_SYS_SCHEDULE_TOPIC}@2") is not None
    items.group_deleted("G2")
    assert items.item("GROUP_GET_NUMS", "T2@G2") is None
    assert items.item("TOPIC_PUT_NUMS", "T2") is not None


# -- VIEW_BROKER_STATS_DATA --------------------------------------------------------------------


def test_sends_and_pulls_fill_the_items_apache_names(broker: BrokerContext, clock: Clock) -> None:
    for _ in range(3):
        stored_offset(broker, send_v1(TOPIC, b"x" * 10))
    stored_offset(broker, send_v1(TOPIC, props={"DELAY": "3", "TAGS": "a"}))
    pulled = call(PullMessageProcessor(broker).pull_message, pull_request(topic=TOPIC, group=GROUP))
    assert pulled.code == ResponseCode.SUCCESS
    clock.now += 10_000
    broker.stats.items.sample_minute()

    put_nums = view(broker, "TOPIC_PUT_NUMS", TOPIC)
    assert put_nums["statsMinute"] == {"avgpt": 1.0, "sum": 3, "tps": 0.3}
    assert put_nums["statsHour"] == {"avgpt": 0.0, "sum": 0, "tps": 0.0}
    assert put_nums["statsDay"] == {"avgpt": 0.0, "sum": 0, "tps": 0.0}
    assert list(put_nums) == ["statsDay", "statsHour", "statsMinute"]
    sizes = view(broker, "TOPIC_PUT_SIZE", TOPIC)["statsMinute"]
    assert sizes["sum"] == sum(entry_sizes(broker, TOPIC, 0))
    assert view(broker, "TOPIC_PUT_SIZE", RMQ_SYS_SCHEDULE_TOPIC)["statsMinute"]["sum"] == sum(
        entry_sizes(broker, RMQ_SYS_SCHEDULE_TOPIC, 2)
    )
    assert view(broker, "TOPIC_PUT_NUMS", RMQ_SYS_SCHEDULE_TOPIC)["statsMinute"]["sum"] == 1
    assert view(broker, "QUEUE_PUT_NUMS", f"{RMQ_SYS_SCHEDULE_TOPIC}@2")["statsMinute"]["sum"] == 1
    assert view(broker, "BROKER_PUT_NUMS", "DefaultCluster")["statsMinute"]["sum"] == 4
    got = view(broker, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")["statsMinute"]
    assert got == {"avgpt": 3.0, "sum": 3, "tps": 0.3}
    assert view(broker, "BROKER_GET_NUMS", "DefaultCluster")["statsMinute"]["sum"] == 3
    latency = broker.stats.items.item("GROUP_GET_LATENCY", f"0@{TOPIC}@{GROUP}")
    assert latency is not None and latency.minute.snapshot().times == 1  # one pull found some
    assert broker.stats.items.group_get_tps(GROUP, TOPIC) == pytest.approx(0.3)


def entry_sizes(broker: BrokerContext, topic: str, queue_id: int) -> list[int]:
    """The sizes of the records a consume queue points at."""
    queue = broker.store.get_consume_queue(topic, queue_id)
    assert queue is not None
    entries = [queue.entry_at(offset) for offset in range(queue.max_offset)]
    return [entry.size for entry in entries if entry is not None]


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("TOPIC_PUT_NUMS", "NoSuchTopic"),
        ("NO_SUCH_STATS", TOPIC),
        ("GROUP_GET_FROM_DISK_NUMS", f"{TOPIC}@{GROUP}"),
        ("COMMERCIAL_SEND_TIMES", TOPIC),
    ],
)
def test_unknown_items_are_a_system_error(broker: BrokerContext, name: str, key: str) -> None:
    put(broker, topic=TOPIC)
    stored_offset(broker, send_v1(TOPIC))
    response = call(StoreAdminProcessor(broker).view_broker_stats_data, stats_request(name, key))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == f"The stats <{name}> <{key}> not exist"


# -- store maintenance -------------------------------------------------------------------------


def fill_first_commitlog_file(broker: BrokerContext, topic: str) -> None:
    """Messages of ``topic`` up to the end of the first commitlog file, then messages of
    ``Filler`` until the commitlog has a second file."""
    size = broker.store_config.mapped_file_size_commit_log
    while broker.store.max_physical_offset() < size - 5000:
        put(broker, topic=topic, body=b"x" * 1000)
    while broker.store.max_physical_offset() < size:
        put(broker, topic="Filler", body=b"x" * 1000)


def test_clean_expired_consume_queue_drops_queues_below_the_commitlog(
    broker: BrokerContext,
) -> None:
    put(broker, topic=RMQ_SYS_SCHEDULE_TOPIC)
    fill_first_commitlog_file(broker, "Old")
    put(broker, topic="New")
    broker.store.execute_delete_files_manually()
    broker.store.run_cleanup(time.time() + 60)
    assert broker.store.min_physical_offset() > 0
    assert broker.store.get_consume_queue("Old", 0) is not None
    response = call(
        StoreAdminProcessor(broker).clean_expired_consume_queue,
        create_request(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE),
    )
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    assert broker.store.get_consume_queue("Old", 0) is None
    assert "Old" not in broker.store.topics()
    assert not (Path(broker.store_config.store_path_root_dir) / "consumequeue/Old/0").exists()
    assert broker.store.get_consume_queue("New", 0) is not None
    assert broker.store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, 0) is not None
    assert put(broker, topic="Old").queue_offset == 0  # its queue offset was forgotten too


def test_delete_expired_commitlog_deletes_on_the_next_runs_whatever_the_hour(
    broker: BrokerContext,
) -> None:
    fill_first_commitlog_file(broker, TOPIC)
    tomorrow = time.localtime(time.time() + 86_400)[:3]
    noon = time.mktime((*tomorrow, 12, 0, 0, 0, 0, -1))  # deleteWhen is 04
    assert broker.store.run_cleanup(noon).commitlog_files == []
    response = call(
        StoreAdminProcessor(broker).delete_expired_commitlog,
        create_request(RequestCode.DELETE_EXPIRED_COMMITLOG),
    )
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    assert broker.store.min_physical_offset() == 0
    result = broker.store.run_cleanup(noon)
    assert result.manual and len(result.commitlog_files) == 1
    assert broker.store.min_physical_offset() > 0


def test_clean_unused_topic_keeps_configured_and_system_topics(broker: BrokerContext) -> None:
    kept = [TOPIC, RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC, f"{LMQ_PREFIX}q"]
    for topic in [*kept, "Unused"]:
        put(broker, topic=topic)
    put(broker, topic="Unused")
    response = call(
        StoreAdminProcessor(broker).clean_unused_topic,
        create_request(RequestCode.CLEAN_UNUSED_TOPIC),
    )
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    assert broker.store.topics() == sorted(kept)
    assert put(broker, topic="Unused").queue_offset == 0


def test_clean_unused_topic_forgets_stats_only_when_asked(tmp_path: Path, clock: Clock) -> None:
    context = make_broker(tmp_path, broker={"auto_delete_unused_stats": True}, clock=clock)
    try:
        context.topic_config_manager.update(TopicConfig(topic_name="Gone"))
        stored_offset(context, send_v1("Gone"))
        context.topic_config_manager.delete("Gone")
        call(
            StoreAdminProcessor(context).clean_unused_topic,
            create_request(RequestCode.CLEAN_UNUSED_TOPIC),
        )
        assert context.stats.items.item("TOPIC_PUT_NUMS", "Gone") is None
    finally:
        context.store.shutdown()


# -- RESUME_CHECK_HALF_MESSAGE -----------------------------------------------------------------


def resume(broker: BrokerContext, msg_id: str | None) -> tuple[int, str | None]:
    request = create_request(
        RequestCode.RESUME_CHECK_HALF_MESSAGE, ResumeCheckHalfMessageRequestHeader(msg_id=msg_id)
    )
    response = call(StoreAdminProcessor(broker).resume_check_half_message, request)
    return response.code, response.remark


def test_resume_puts_the_half_message_back_with_no_checks_counted(broker: BrokerContext) -> None:
    properties = {
        "TRAN_MSG": "true",
        "PGROUP": "PG",
        "TAGS": "TagA",
        "TRANSACTION_CHECK_TIMES": "4",
    }
    offset = stored_offset(broker, send_v1(TOPIC, b"half body", props=properties))
    half = broker.store.look_message_by_offset(offset)
    assert half is not None and half.topic == HALF_TOPIC

    assert resume(broker, offset_msg_id(STORE_HOST, offset)) == (ResponseCode.SUCCESS, None)

    queue = broker.store.get_consume_queue(HALF_TOPIC, 0)
    assert queue is not None and queue.max_offset == 2
    entry = queue.entry_at(1)
    assert entry is not None
    again = broker.store.look_message_by_offset(entry.physical_offset)
    assert again is not None
    assert again.body == b"half body"
    assert again.properties["TRANSACTION_CHECK_TIMES"] == "0"
    assert again.properties["REAL_TOPIC"] == TOPIC
    assert {k: v for k, v in again.properties.items() if k != "TRANSACTION_CHECK_TIMES"} == {
        k: v for k, v in half.properties.items() if k != "TRANSACTION_CHECK_TIMES"
    }
    assert (again.flag, again.sys_flag, again.born_timestamp, again.born_host) == (
        half.flag,
        half.sys_flag,
        half.born_timestamp,
        half.born_host,
    )


@pytest.mark.parametrize(
    "msg_id",
    [None, "", "not-a-message-id", offset_msg_id(STORE_HOST, 1 << 30)],
    ids=["missing", "empty", "not-hex", "beyond-the-commitlog"],
)
def test_resume_of_no_message_is_apaches_exception_answer(
    broker: BrokerContext, msg_id: str | None
) -> None:
    stored_offset(broker, send_v1(TOPIC))
    assert resume(broker, msg_id) == (
        ResponseCode.SYSTEM_ERROR,
        "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
    )
