"""Raw reads of one broker's store for tests of damaged and full stores: the bodies of a queue
(PULL_MESSAGE) and the messages a key finds (QUERY_MESSAGE), asked over a `RemotingSession`
of either implementation's broker.
"""

from __future__ import annotations

from rmq.common.message import iter_records
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.headers import QueryMessageRequestHeader
from tests.procs import RemotingSession, RmqProcess, pull_header


def pull_bodies(
    session: RemotingSession, broker: RmqProcess, topic: str, queue_id: int = 0
) -> list[bytes]:
    """Every body of queue ``queue_id`` of ``topic``, in queue order."""
    bodies: list[bytes] = []
    while True:
        header = pull_header(topic, "RawPullGroup", queue_id=queue_id, queue_offset=len(bodies))
        answer = session.invoke(broker.addr, RequestCode.PULL_MESSAGE, header, timeout=10)
        if answer.code != ResponseCode.SUCCESS:
            return bodies
        bodies.extend(bytes(record.body or b"") for _, record in iter_records(answer.body))


def query_by_key(session: RemotingSession, broker: RmqProcess, topic: str, key: str) -> list[bytes]:
    """The bodies of the messages of ``topic`` the broker's index finds under ``key``."""
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=32, begin_timestamp=0, end_timestamp=2**62
    )
    answer = session.invoke(broker.addr, RequestCode.QUERY_MESSAGE, header, timeout=10)
    if answer.code != ResponseCode.SUCCESS or answer.body is None:
        return []
    return [bytes(record.body or b"") for _, record in iter_records(answer.body)]
