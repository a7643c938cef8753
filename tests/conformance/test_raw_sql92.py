"""SQL92 filtering on the broker as raw frames, differential: the same CHECK_CLIENT_CONFIG,
HEART_BEAT and PULL_MESSAGE requests to Apache's broker and to rmq's (both run with
``enablePropertyFilter=true``), the answers compared by code and by the messages delivered.

Both brokers get topic ``RawSqlTopic`` with one queue and ten messages, property ``a`` = 0..9
and tags T0 / T1 alternating.  The Apache answers are asserted to show what each test is
about, so two empty answers cannot pass.  Last, the consumer filters both brokers persist in
``consumerFilter.json`` are compared.  The remarks of expressions that do not compile are
Java's parser messages on one side and rmq's on the other: only their codes are compared.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from rmq.common import fastjson
from rmq.common.message import iter_records
from rmq.common.sysflag import PULL_SUBSCRIPTION
from rmq.remoting.bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from tests.conformance.clusters import Cluster
from tests.conformance.test_raw_queries import Broker
from tests.procs import RemotingSession

TOPIC = "RawSqlTopic"
ONLINE = "RawSqlOnline"
"""A consumer group whose heartbeat subscribes with ``a < 3 OR TAGS = 'T1'``."""
BROKEN = "RawSqlBroken"
"""A consumer group whose heartbeat subscribes with an expression that does not compile."""
CLIENT_ID = "127.0.0.1@RawSql92"
SUB_VERSION = 1_700_000_000_000
Outcome = tuple[int, str | None, list[int] | None, str | None]
"""Code, remark, the ``a`` of the messages delivered, and the next begin offset."""


def _send(broker: Broker, code: int, header: object | None, body: bytes) -> RemotingCommand:
    return broker.session.invoke(broker.cluster.broker_addr, code, header, body=body)


def _heartbeat(group: str, expression: str) -> bytes:
    subscription = SubscriptionData(
        topic=TOPIC, sub_string=expression, sub_version=SUB_VERSION, expression_type="SQL92"
    )
    return HeartbeatData(
        client_id=CLIENT_ID,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[subscription],
            )
        ],
    ).encode()


def _prepare(broker: Broker) -> None:
    create = CreateTopicRequestHeader(
        topic=TOPIC,
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    assert broker.ask(RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == ResponseCode.SUCCESS
    for a in range(10):
        send = SendMessageRequestHeader(
            producer_group="RawSqlProducer",
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=0,
            sys_flag=0,
            born_timestamp=SUB_VERSION,
            flag=0,
            properties=f"TAGS\x01T{a % 2}\x02a\x01{a}\x02WAIT\x01true",
        )
        response = _send(broker, RequestCode.SEND_MESSAGE, send, b"raw-sql92")
        assert response.code == ResponseCode.SUCCESS, response
    for group, expression in ((ONLINE, "a < 3 OR TAGS = 'T1'"), (BROKEN, "a >")):
        response = _send(broker, RequestCode.HEART_BEAT, None, _heartbeat(group, expression))
        assert response.code == ResponseCode.SUCCESS, response


@pytest.fixture(scope="module")
def brokers(apache: Cluster, rmq: Cluster) -> Iterator[dict[str, Broker]]:
    prepared = {}
    for cluster in (apache, rmq):
        prepared[cluster.kind] = Broker(cluster, RemotingSession())
        _prepare(prepared[cluster.kind])
    yield prepared
    for broker in prepared.values():
        broker.session.close()


def _pull(
    broker: Broker,
    group: str,
    *,
    expression: str | None = None,
    expression_type: str = "SQL92",
    sub_version: int = SUB_VERSION,
) -> Outcome:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=TOPIC,
        queue_id=0,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=PULL_SUBSCRIPTION if expression is not None else 0,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=expression,
        sub_version=sub_version,
        expression_type=expression_type,
    )
    response = broker.ask(RequestCode.PULL_MESSAGE, header)
    delivered = None
    if response.code == ResponseCode.SUCCESS and response.body:
        delivered = [int(record.properties["a"]) for _, record in iter_records(response.body)]
    fields = response.ext_fields or {}
    return response.code, response.remark, delivered, fields.get("nextBeginOffset")


def _both_pull(
    brokers: dict[str, Broker], group: str, **options: object
) -> tuple[Outcome, Outcome]:
    return (
        _pull(brokers["apache"], group, **options),  # type: ignore[arg-type]
        _pull(brokers["rmq"], group, **options),  # type: ignore[arg-type]
    )


def test_pull_with_its_own_expression(brokers: dict[str, Broker]) -> None:
    apache, rmq = _both_pull(
        brokers, "RawSqlPuller", expression="a BETWEEN 4 AND 7 AND TAGS <> 'T1'"
    )
    assert apache == (ResponseCode.SUCCESS, "FOUND", [4, 6], "10")
    assert rmq == apache


def test_pull_matching_nothing(brokers: dict[str, Broker]) -> None:
    apache, rmq = _both_pull(brokers, "RawSqlPuller", expression="a > 100")
    assert apache[0] == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert rmq == apache


def test_pull_with_an_expression_that_does_not_compile(brokers: dict[str, Broker]) -> None:
    # Apache builds no filter for it (its assert is off) and filters nothing.
    apache, rmq = _both_pull(brokers, "RawSqlPuller", expression="a >")
    assert apache[0] == ResponseCode.SUCCESS
    assert rmq == apache


def test_pull_by_the_heartbeat_filter(brokers: dict[str, Broker]) -> None:
    apache, rmq = _both_pull(brokers, ONLINE)
    assert apache == (ResponseCode.SUCCESS, "FOUND", [0, 1, 2, 3, 5, 7, 9], "10")
    assert rmq == apache


def test_pull_errors_of_heartbeat_filters(brokers: dict[str, Broker]) -> None:
    apache, rmq = _both_pull(brokers, BROKEN)
    assert apache[:2] == (
        ResponseCode.FILTER_DATA_NOT_EXIST,
        "The broker's consumer filter data is not exist!Your expression may be wrong!",
    )
    assert rmq == apache
    apache, rmq = _both_pull(brokers, ONLINE, sub_version=SUB_VERSION + 1)
    assert apache[0] == ResponseCode.SUBSCRIPTION_NOT_LATEST
    assert rmq == apache


_PARSE_FAILED = ResponseCode.SUBSCRIPTION_PARSE_FAILED


@pytest.mark.parametrize(
    ("expression", "expression_type", "code"),
    [
        ("a > 5 AND b IN ('x', 'y') OR c IS NULL", "SQL92", ResponseCode.SUCCESS),
        ("a > 'x'", "SQL92", _PARSE_FAILED),
        ("a = NULL", "SQL92", _PARSE_FAILED),
        ("(a > 1", "SQL92", _PARSE_FAILED),
        ("a > 1", "NOSUCHTYPE", _PARSE_FAILED),
        ("TagA || TagB", "TAG", ResponseCode.SUCCESS),
    ],
)
def test_check_client_config(
    brokers: dict[str, Broker], expression: str, expression_type: str, code: int
) -> None:
    subscription = SubscriptionData(
        topic=TOPIC, sub_string=expression, expression_type=expression_type
    )
    body = CheckClientRequestBody(
        client_id=CLIENT_ID, group="RawSqlCheck", subscription_data=subscription
    ).encode()
    apache, rmq = (
        _send(brokers[kind], RequestCode.CHECK_CLIENT_CONFIG, None, body).code
        for kind in ("apache", "rmq")
    )
    assert apache == code
    assert rmq == apache


def _topic_filters(cluster: Cluster) -> Any:
    """The RawSqlTopic entry of the broker's consumerFilter.json (None until written)."""
    path = cluster.store_dir / "config" / "consumerFilter.json"
    try:
        content = fastjson.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return content.get("filterDataByTopic", {}).get(TOPIC)


def test_consumer_filter_file_as_apache_writes_it(brokers: dict[str, Broker]) -> None:
    # Both brokers write the file every 10 s; the heartbeats of _prepare registered ONLINE.
    found = {}
    deadline = time.monotonic() + 60
    for kind, broker in brokers.items():
        while (entry := _topic_filters(broker.cluster)) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert entry is not None, f"{kind} wrote no filter of {TOPIC}"
        online = entry["groupFilterData"][ONLINE]
        assert online["bornTime"] > 0
        found[kind] = {**entry, "groupFilterData": {ONLINE: {**online, "bornTime": "<time>"}}}
    assert found["apache"]["groupFilterData"][ONLINE]["expression"] == "a < 3 OR TAGS = 'T1'"
    assert set(found["apache"]["groupFilterData"]) == {ONLINE}, "BROKEN does not compile"
    assert found["rmq"] == found["apache"]
