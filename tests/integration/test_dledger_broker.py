"""Three `rmq broker` processes in one DLedger group (`enableDLegerCommitLog=true`) with a
name server: the broker follows leadership as Apache's does.

* The leader registers as brokerId 0 once its log is dispatched, the followers as
  selfId + 1; a send to a follower is refused with SERVICE_NOT_AVAILABLE; a message sent
  to the master is pulled from every node (slaves serve reads) at its queue offset, and
  found there by its offset msgId and by its key; every broker stops cleanly (exit 0).
* kill -9 of the master under a running producer, 3 times (20 under the stress marker):
  a new master is registered and takes sends, every message acknowledged SEND_OK is read
  from the group at the queue offset it was given, no queue offset holds two messages, and
  the time from each kill to the first accepted send is measured (printed, and held under
  a generous bound: DLedger's own timings make it 6-10 s).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from rmq.common.message import MessageRecord, iter_records
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    QueryMessageRequestHeader,
    SendMessageResponseHeader,
    ViewMessageRequestHeader,
)
from tests.procs import (
    RemotingSession,
    RmqProcess,
    RmqProcesses,
    free_port,
    pull_header,
    registered_brokers,
    send_header,
    unique,
)

QUEUES = 4
FAILOVER_BOUND_S = 30.0
"""Kill to first accepted send: DLedger waits 6 s without heartbeats, then votes."""


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.05)


@dataclass
class Group:
    namesrv: RmqProcess
    brokers: list[RmqProcess]
    processes: RmqProcesses

    def ids(self) -> dict[int, str]:
        try:
            return registered_brokers(self.namesrv.addr)
        except (RemotingError, OSError):
            return {}

    def master(self) -> str | None:
        return self.ids().get(0)

    def by_addr(self, addr: str) -> int:
        return next(i for i, b in enumerate(self.brokers) if b.addr == addr)


def start_group(rmq_processes: RmqProcesses) -> Group:
    namesrv = rmq_processes.start_namesrv()
    name = unique("dl")
    dledger_ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{port}" for i, port in enumerate(dledger_ports))
    brokers = [
        rmq_processes.start_broker(
            f"{name}-n{i}",
            namesrv=namesrv,
            props={
                "brokerName": name,
                "enableDLegerCommitLog": "true",
                "dLegerGroup": name,
                "dLegerPeers": peers,
                "dLegerSelfId": f"n{i}",
            },
        )
        for i in range(3)
    ]
    group = Group(namesrv, brokers, rmq_processes)
    wait_for("a master and two slaves", lambda: len(group.ids()) == 3 and 0 in group.ids())
    return group


def send(
    session: RemotingSession, addr: str, topic: str, body: bytes, queue_id: int
) -> RemotingCommand:
    header = send_header(topic, {"KEYS": body.decode()}, queue_id=queue_id)
    return session.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body=body, timeout=5.0)


def pull_one(
    session: RemotingSession, addr: str, topic: str, queue_id: int, offset: int
) -> list[MessageRecord]:
    response = session.invoke(
        addr,
        RequestCode.PULL_MESSAGE,
        pull_header(topic, "DLedgerCheck", queue_id=queue_id, queue_offset=offset),
    )
    if response.code != ResponseCode.SUCCESS:
        return []
    return [record for _, record in iter_records(response.body or b"")]


def test_the_leader_is_master_followers_are_slaves_that_refuse_sends_and_serve_reads(
    rmq_processes: RmqProcesses,
) -> None:
    group = start_group(rmq_processes)
    master = group.master()
    assert master is not None
    slaves = [b.addr for b in group.brokers if b.addr != master]
    topic = unique("DLedgerTopic")
    with RemotingSession(timeout=10) as session:
        sent = send(session, master, topic, b"m-0", 1)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        answer = sent.read_header(SendMessageResponseHeader)
        assert answer.queue_offset == 0
        refused = send(session, slaves[0], topic, b"m-1", 1)
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE, refused.remark
        for addr in (master, *slaves):

            def pulled(addr: str = addr) -> bool:
                return [r.body for r in pull_one(session, addr, topic, 1, 0)] == [b"m-0"]

            wait_for(f"m-0 on {addr}", pulled, 30.0)
            viewed = session.invoke(
                addr,
                RequestCode.VIEW_MESSAGE_BY_ID,
                ViewMessageRequestHeader(offset=int(answer.msg_id[16:], 16)),
            )
            assert viewed.code == ResponseCode.SUCCESS, viewed.remark
            ((_, record),) = list(iter_records(viewed.body or b""))
            assert record.body == b"m-0" and record.offset_msg_id == answer.msg_id
            found = session.invoke(
                addr,
                RequestCode.QUERY_MESSAGE,
                QueryMessageRequestHeader(
                    topic=topic, key="m-0", max_num=32, begin_timestamp=0, end_timestamp=2**62
                ),
            )
            assert found.code == ResponseCode.SUCCESS, found.remark
            assert [r.body for _, r in iter_records(found.body or b"")] == [b"m-0"]
    ids = group.ids()
    for broker in group.brokers:
        if broker.addr != master:
            self_id = int(broker.name.rsplit("-n", 1)[1])
            assert ids[self_id + 1] == broker.addr
    for broker in group.brokers:
        broker.stop_cleanly()


@dataclass
class Producer:
    """Sends one message after another to whatever the name server lists as master."""

    group: Group
    topic: str
    acked: list[tuple[int, int, bytes, str, float]] = field(default_factory=list)
    """(queue id, queue offset, body, broker address, time acknowledged)."""
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)

    def wait_more(self, count: int) -> None:
        """Wait until ``count`` more sends were acknowledged."""
        target = len(self.acked) + count
        wait_for(f"{count} more sends", lambda: len(self.acked) >= target, 30.0)

    def wait_first_since(self, since: float, not_from: str) -> float:
        """When the first send after ``since`` was acknowledged by another broker than
        ``not_from`` (waits for it)."""
        deadline = time.monotonic() + FAILOVER_BOUND_S
        while True:
            times = [a[4] for a in self.acked[-200:] if a[3] != not_from and a[4] > since]
            if times:
                return min(times)
            assert time.monotonic() < deadline, f"no new master within {FAILOVER_BOUND_S}s"
            time.sleep(0.01)

    def run(self) -> None:
        n = 0
        master: str | None = None
        try:
            with RemotingSession(timeout=5) as session:
                while not self.stop.is_set():
                    if master is None:
                        master = self.group.master()
                        if master is None:
                            time.sleep(0.05)
                            continue
                    body = f"p-{n}".encode()
                    queue_id = n % QUEUES
                    n += 1
                    try:
                        response = send(session, master, self.topic, body, queue_id)
                    except (RemotingError, OSError):
                        master = None
                        continue
                    if response.code != ResponseCode.SUCCESS:
                        master = None
                        time.sleep(0.05)
                        continue
                    answer = response.read_header(SendMessageResponseHeader)
                    self.acked.append(
                        (answer.queue_id, answer.queue_offset, body, master, time.monotonic())
                    )
        except BaseException as error:
            self.errors.append(error)


def kill_masters(rmq_processes: RmqProcesses, kills: int) -> None:
    group = start_group(rmq_processes)
    producer = Producer(group, unique("DLedgerFailover"))
    thread = threading.Thread(target=producer.run, daemon=True)
    thread.start()
    failovers = []
    try:
        for _ in range(kills):
            producer.wait_more(20)
            master = producer.acked[-1][3]
            index = group.by_addr(master)
            group.brokers[index].kill()
            killed = time.monotonic()
            first = producer.wait_first_since(killed, master)
            failovers.append(first - killed)
            group.brokers[index] = rmq_processes.restart_broker(group.brokers[index], group.namesrv)
        producer.wait_more(20)
    finally:
        producer.stop.set()
        thread.join(15)
    assert not producer.errors, producer.errors
    print(f"\nfailover (kill -9 to first accepted send), s: {[round(f, 2) for f in failovers]}")

    by_slot: dict[tuple[int, int], bytes] = {}
    for queue_id, offset, body, _, _ in producer.acked:
        assert (queue_id, offset) not in by_slot, f"queue offset {queue_id}/{offset} given twice"
        by_slot[(queue_id, offset)] = body
    reader = group.master()
    assert reader is not None
    ids = group.ids()
    assert len(ids) == 3 and set(ids) - {0} <= {1, 2, 3}, f"one master, two slaves: {ids}"
    with RemotingSession(timeout=10) as session:
        for (queue_id, offset), body in sorted(by_slot.items()):
            records = pull_one(session, reader, producer.topic, queue_id, offset)
            assert records and records[0].queue_offset == offset, (queue_id, offset)
            assert records[0].body == body, (queue_id, offset, records[0].body, body)
        for queue_id in range(QUEUES):
            offsets: list[int] = []
            while True:
                records = pull_one(session, reader, producer.topic, queue_id, len(offsets))
                if not records:
                    break
                offsets.extend(r.queue_offset for r in records)
            assert offsets == list(range(len(offsets))), f"queue {queue_id} offsets repeat"


def test_killing_the_master_under_a_producer_loses_no_acknowledged_message(
    rmq_processes: RmqProcesses,
) -> None:
    kill_masters(rmq_processes, 3)


@pytest.mark.stress
def test_twenty_master_kills_lose_no_acknowledged_message(rmq_processes: RmqProcesses) -> None:
    kill_masters(rmq_processes, int(os.environ.get("RMQ_DLEDGER_KILLS", "20")))
