"""Consumer offsets through a broker's own requests, for tests that damage and restore the
files a broker keeps them in (tests/integration/test_bad_settings.py and
tests/conformance/test_damaged_metadata.py)."""

from __future__ import annotations

from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.procs import RemotingSession, RmqProcess


def commit_offset(broker: RmqProcess, group: str, topic: str, offset: int) -> None:
    """UPDATE_CONSUMER_OFFSET of queue 0 of `topic` for `group`."""
    with RemotingSession() as session:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=0, commit_offset=offset
        )
        response = session.invoke(broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)
        assert response.code == ResponseCode.SUCCESS, response.remark


def committed_offset(broker: RmqProcess, group: str, topic: str) -> int | None:
    """The broker's answer to QUERY_CONSUMER_OFFSET (None: QUERY_NOT_FOUND)."""
    with RemotingSession() as session:
        header = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=0)
        response = session.invoke(broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, header)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.read_header(QueryConsumerOffsetResponseHeader).offset
