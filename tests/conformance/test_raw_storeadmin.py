"""Store maintenance, stats items and half-message resume as raw frames, differential: the
same requests to Apache's broker and to rmq's, the answers compared code, remark and body.

* CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG, CLEAN_UNUSED_TOPIC: the whole answer.
  On the session brokers nothing is old enough to go, so what they delete is the unit tests'
  (tests/unit/broker/test_storeadmin.py); here the answers and the unused topic's queue.
* VIEW_BROKER_STATS_DATA: the items three sends fill, once each broker's 10 s sampling has
  seen them, and Apache's error for items that do not exist.
* RESUME_CHECK_HALF_MESSAGE: a half message put back with no checks counted, found again by
  its key in the half topic; and the answer for message ids that point at nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from rmq.client.api import create_topic_request
from rmq.common import fastjson
from rmq.common.message import iter_records
from rmq.remoting.bodies import TopicConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    DeleteTopicRequestHeader,
    GetMaxOffsetRequestHeader,
    QueryMessageRequestHeader,
    ResumeCheckHalfMessageRequestHeader,
    SendMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from tests.conformance.clusters import CLUSTER, Cluster
from tests.procs import RemotingSession

STATS_TOPIC = "RawStatsTopic"
UNUSED_TOPIC = "RawUnusedTopic"
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
HALF_KEY = "RawResumeHalfKey"
SENDS = 3
RESUME_ERROR = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


@dataclass
class Broker:
    cluster: Cluster
    session: RemotingSession

    def ask(
        self, code: int, header: object | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        return self.session.invoke(self.cluster.broker_addr, code, header, body=body)

    def send(self, topic: str, properties: str, body: bytes = b"raw-storeadmin") -> str:
        """SEND_MESSAGE; the offset message id of what was stored."""
        header = SendMessageRequestHeader(
            producer_group="RawStoreAdminProducer",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=0,
            sys_flag=0,
            born_timestamp=1_700_000_000_000,
            flag=0,
            properties=properties,
        )
        response = self.ask(RequestCode.SEND_MESSAGE, header, body)
        assert response.code == ResponseCode.SUCCESS and response.ext_fields is not None, response
        return response.ext_fields["msgId"]


def _create_topic(broker: Broker, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC as mqadmin sends it, one queue."""
    config = TopicConfig(topic_name=topic, read_queue_nums=1, write_queue_nums=1)
    response = broker.session.send(broker.cluster.broker_addr, create_topic_request(config))
    assert response.code == ResponseCode.SUCCESS, response


@pytest.fixture(scope="module")
def brokers(apache: Cluster, rmq: Cluster) -> Iterator[dict[str, Broker]]:
    """Both brokers, each with STATS_TOPIC holding SENDS messages sent at the same time."""
    prepared = {cluster.kind: Broker(cluster, RemotingSession()) for cluster in (apache, rmq)}
    for broker in prepared.values():
        _create_topic(broker, STATS_TOPIC)
        for _ in range(SENDS):
            broker.send(STATS_TOPIC, "TAGS\x01TagA\x02WAIT\x01true")
    yield prepared
    for broker in prepared.values():
        broker.session.close()


def _answer(response: RemotingCommand) -> tuple[int, str | None, bytes | None]:
    body = bytes(response.body) if response.body is not None else None
    return response.code, response.remark, body


def _both(
    brokers: dict[str, Broker], code: int, header: object | None = None
) -> tuple[tuple[int, str | None, bytes | None], tuple[int, str | None, bytes | None]]:
    return _answer(brokers["apache"].ask(code, header)), _answer(brokers["rmq"].ask(code, header))


def _poll(condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """The first true value of ``condition()``, asked every 0.2 s until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


# -- store maintenance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG],
    ids=["CLEAN_EXPIRED_CONSUMEQUEUE", "DELETE_EXPIRED_COMMITLOG"],
)
def test_store_maintenance_answers_alike(brokers: dict[str, Broker], code: int) -> None:
    apache, rmq = _both(brokers, code)
    assert apache == (ResponseCode.SUCCESS, None, None)
    assert rmq == apache


def test_clean_unused_topic_drops_the_queues_of_a_topic_without_config(
    brokers: dict[str, Broker],
) -> None:
    answers: list[tuple[object, str | None, bytes | None]] = []
    for broker in brokers.values():
        _create_topic(broker, UNUSED_TOPIC)
        broker.send(UNUSED_TOPIC, "WAIT\x01true")
        # DELETE_TOPIC_IN_BROKER cleans unused topics itself; a topic config deleted behind
        # its back is what CLEAN_UNUSED_TOPIC is for, and a re-created config without the
        # queues' messages shows that its queue went: its max offset is 0 again.
        delete = DeleteTopicRequestHeader(topic=UNUSED_TOPIC)
        assert broker.ask(RequestCode.DELETE_TOPIC_IN_BROKER, delete).code == ResponseCode.SUCCESS
        answers.append(_answer(broker.ask(RequestCode.CLEAN_UNUSED_TOPIC)))
        _create_topic(broker, UNUSED_TOPIC)
        max_offset = broker.ask(
            RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=UNUSED_TOPIC, queue_id=0)
        )
        assert max_offset.ext_fields is not None
        answers.append(("maxOffset", max_offset.ext_fields["offset"], None))
    apache, rmq = answers[:2], answers[2:]
    assert apache == [(ResponseCode.SUCCESS, None, None), ("maxOffset", "0", None)]
    assert rmq == apache


# -- VIEW_BROKER_STATS_DATA --------------------------------------------------------------------


def _sampled(broker: Broker, name: str, key: str) -> dict[str, Any] | None:
    """The item's windows once its minute window has counted all SENDS messages."""
    header = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
    response = broker.ask(RequestCode.VIEW_BROKER_STATS_DATA, header)
    assert response.code == ResponseCode.SUCCESS and response.body is not None, response
    data = fastjson.loads(bytes(response.body).decode())
    assert isinstance(data, dict)
    minute_sum = data["statsMinute"]["sum"]
    return data if minute_sum and (name.endswith("SIZE") or minute_sum == SENDS) else None


def _window(window: dict[str, Any]) -> dict[str, Any]:
    """A window with its rate as the time it spans: each broker's 10 s timer fires on its own
    schedule, so a window may have seen one or more samples; the span is a multiple of 10 s."""
    sampled = dict(window)
    tps = sampled.pop("tps")
    sampled["span_s"] = round(sampled["sum"] / tps) if tps else 0
    return sampled


@pytest.mark.parametrize("name", ["TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE"])
def test_stats_item_of_three_sends(brokers: dict[str, Broker], name: str) -> None:
    apache = _poll(lambda: _sampled(brokers["apache"], name, STATS_TOPIC), "Apache's sample")
    rmq = _poll(lambda: _sampled(brokers["rmq"], name, STATS_TOPIC), "rmq's sample")
    assert list(rmq) == list(apache) == ["statsDay", "statsHour", "statsMinute"]
    apache_minute, rmq_minute = _window(apache["statsMinute"]), _window(rmq["statsMinute"])
    assert apache_minute["span_s"] in range(10, 70, 10), apache
    assert rmq_minute["span_s"] in range(10, 70, 10), rmq
    del apache_minute["span_s"], rmq_minute["span_s"]
    assert rmq_minute == apache_minute
    if name == "TOPIC_PUT_NUMS":
        assert apache_minute == {"avgpt": 1.0, "sum": SENDS}
    for window in ("statsHour", "statsDay"):
        # Sampled every 10 min / 1 h from each broker's start: empty, or all three sends.
        for data in (apache, rmq):
            assert data[window]["sum"] in (0, apache_minute["sum"]), data


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("TOPIC_PUT_NUMS", "RawNoSuchTopic"),
        ("GROUP_GET_NUMS", f"{STATS_TOPIC}@RawNoSuchGroup"),
        ("GROUP_GET_FROM_DISK_NUMS", f"{STATS_TOPIC}@RawNoSuchGroup"),
        ("COMMERCIAL_SEND_TIMES", STATS_TOPIC),
        ("RAW_NO_SUCH_STATS", CLUSTER),
    ],
)
def test_stats_items_that_do_not_exist(brokers: dict[str, Broker], name: str, key: str) -> None:
    header = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
    apache, rmq = _both(brokers, RequestCode.VIEW_BROKER_STATS_DATA, header)
    assert apache == (ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist", None)
    assert rmq == apache


# -- RESUME_CHECK_HALF_MESSAGE -----------------------------------------------------------------


def _half_copies(broker: Broker) -> list[dict[str, str]]:
    """The properties of every record in the half topic indexed under HALF_KEY."""
    header = QueryMessageRequestHeader(
        topic=HALF_TOPIC, key=HALF_KEY, max_num=64, begin_timestamp=0, end_timestamp=2**62
    )
    response = broker.ask(RequestCode.QUERY_MESSAGE, header)
    if response.code != ResponseCode.SUCCESS or response.body is None:
        return []
    return [record.properties for _, record in iter_records(response.body)]


def _resumed_copies(broker: Broker) -> list[dict[str, str]]:
    """The copies a resume appended: the transaction check (every second here) appends copies
    of its own with the count going up from 1; only a resumed one counts 0."""
    return [props for props in _half_copies(broker) if props.get("TRANSACTION_CHECK_TIMES") == "0"]


def test_resume_check_half_message_puts_it_back_with_no_checks_counted(
    brokers: dict[str, Broker],
) -> None:
    resumed = {}
    for kind, broker in brokers.items():
        msg_id = broker.send(
            "RawResumeTopic",
            f"TRAN_MSG\x01true\x02PGROUP\x01RawResumeGroup\x02KEYS\x01{HALF_KEY}\x02WAIT\x01true",
        )
        header = ResumeCheckHalfMessageRequestHeader(msg_id=msg_id)
        answer = _answer(broker.ask(RequestCode.RESUME_CHECK_HALF_MESSAGE, header))
        copy = _poll(functools.partial(_resumed_copies, broker), f"{kind}'s resumed half message")
        resumed[kind] = (
            answer,
            {key: copy[0].get(key) for key in ("REAL_TOPIC", "PGROUP", "KEYS")},
        )
    assert resumed["apache"] == (
        (ResponseCode.SUCCESS, None, None),
        {"REAL_TOPIC": "RawResumeTopic", "PGROUP": "RawResumeGroup", "KEYS": HALF_KEY},
    )
    assert resumed["rmq"] == resumed["apache"]


@pytest.mark.parametrize(
    "msg_id",
    [None, "RAWNOTAMESSAGEID", "7F00000100002A9F00000000FFFFFFFF"],
    ids=["missing", "not-hex", "beyond-the-commitlog"],
)
def test_resume_check_of_no_message(brokers: dict[str, Broker], msg_id: str | None) -> None:
    header = ResumeCheckHalfMessageRequestHeader(msg_id=msg_id)
    apache, rmq = _both(brokers, RequestCode.RESUME_CHECK_HALF_MESSAGE, header)
    assert apache == (ResponseCode.SYSTEM_ERROR, RESUME_ERROR, None)
    assert rmq == apache
