"""A broker killed with SIGKILL while the Apache C++ client sends loses no acknowledged message.

Real `rmq namesrv` + `rmq broker` processes.  The broker's commitlog files are 256 KiB and its
consume queue files hold 500 entries, so both roll over many times during a run.  One C++
producer process sends `MESSAGES` messages (each with its number in body and keys) round robin
over the queues, choosing each message's queue itself (an orderly send with the client's own
retries off), so every attempt is the driver's: it re-sends a failed message until it is
acknowledged and records every acknowledgement (message id, queue, queue offset).  While it
sends, the broker is killed with SIGKILL three times, each time after
another `KILL_EVERY` acknowledgements; the `abort` file stays behind and the broker restarted
on the same configuration, port and store recovers abnormally.

Then a C++ push consumer in a fresh group reads the whole topic, and:

* every queue's offsets run densely from 0 to the broker's max offset, each consumed once;
* every acknowledged message is there, intact, at the queue and queue offset its
  acknowledgement gave, under the message id it gave;
* only a message whose send was retried (its first acknowledgement lost with the broker) may
  be stored twice;
* after a clean stop, the offline validator finds nothing wrong with the store.

A SIGKILL ends the process, not the machine: what reached the page cache survives it, so
every acknowledgement must survive with ASYNC_FLUSH just as with SYNC_FLUSH.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import pytest

from rmq.store.offline.reader import StoreReader
from tests.integration.test_broker_admin import create_topic, wait_for_route
from tests.interop.cpp_client import CppProcess, run_cpp, start_cpp, unique_name
from tests.procs import RemotingSession, RmqProcesses, queue_offset_ranges

pytestmark = pytest.mark.interop

MESSAGES = 3000
KILLS = 3
KILL_EVERY = 600
QUEUES = 4
STORE_PROPS = {
    "mappedFileSizeCommitLog": 256 * 1024,
    "mappedFileSizeConsumeQueue": 500 * 20,
}


def message(n: int) -> dict[str, Any]:
    """Message ``n``: about 600 bytes, every 25th over 4 KiB (sent compressed)."""
    filler = f"{n:08d}" * (700 if n % 25 == 0 else 70)
    return {
        "body": f"dur-{n}-{filler}",
        "tags": f"Tag{n % 3}",
        "keys": f"dur-{n} step-{n % 10}",
        "orderly_arg": n,
    }


def number(body: str) -> int:
    return int(body.split("-")[1])


def wait_for_acks(producer: CppProcess, acks: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while producer.progress() < acks:
        assert producer.popen.poll() is None, f"the producer ended early: {producer.wait()}"
        assert time.monotonic() < deadline, f"{producer.progress()} of {acks} acknowledgements"
        time.sleep(0.01)


@pytest.mark.parametrize("flush_disk_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_acknowledged_messages_survive_three_broker_kills(
    rmq_processes: RmqProcesses, flush_disk_type: str
) -> None:
    namesrv = rmq_processes.start_namesrv()
    broker = rmq_processes.start_broker(
        "durable-broker", namesrv=namesrv, props={"flushDiskType": flush_disk_type, **STORE_PROPS}
    )
    store = broker.home / "store"
    topic = unique_name("Durable")
    with RemotingSession() as session:
        create_topic(session, broker, topic, QUEUES)
        wait_for_route(session, namesrv, topic)
    messages = [message(n) for n in range(MESSAGES)]
    spec = {
        "namesrv": namesrv.addr,
        "topic": topic,
        "messages": messages,
        "mode": "orderly",
        "orderly_retries": 0,
        "retry_for": 60,
        "retry_interval": 0.1,
        "send_timeout_ms": 2000,
    }

    with start_cpp("produce", spec, timeout=240) as producer:
        for kill in range(1, KILLS + 1):
            wait_for_acks(producer, kill * KILL_EVERY)
            broker.kill()
            assert (store / "abort").exists()
            broker = rmq_processes.restart_broker(broker, namesrv)
            assert broker.log_text().count("abnormal recovery") == kill
        results = producer.wait().result["results"]

    assert [r for r in results if not r["ok"]] == []
    assert max(r["attempts"] for r in results) > 1, "no send was hit by a kill"
    ranges = queue_offset_ranges(broker.addr, topic, range(QUEUES))
    stored = sum(high for _, high in ranges.values())
    received = run_cpp(
        "consume",
        {"namesrv": namesrv.addr, "topic": topic, "count": stored, "linger": 1, "max_wait": 60},
        timeout=90,
    ).result["messages"]

    consumed: dict[int, list[int]] = defaultdict(list)
    for got in received:
        consumed[got["queue_id"]].append(got["queue_offset"])
    assert {queue_id: sorted(offsets) for queue_id, offsets in consumed.items()} == {
        queue_id: list(range(low, high)) for queue_id, (low, high) in ranges.items()
    }
    assert all(low == 0 for low, _ in ranges.values())
    positions = {(got["queue_id"], got["queue_offset"]): got for got in received}
    for n, ack in enumerate(results):
        got = positions[ack["queue_id"], ack["offset"]]
        assert (got["msg_id"], got["body"], got["keys"], got["tags"]) == (
            ack["msg_id"],
            messages[n]["body"],
            messages[n]["keys"],
            messages[n]["tags"],
        ), f"acknowledged message {n} lost: {ack}"
    copies = Counter(number(got["body"]) for got in received)
    assert set(copies) == set(range(MESSAGES))
    assert [n for n, count in copies.items() if count > 1 and results[n]["attempts"] == 1] == []

    broker.stop_cleanly()
    with StoreReader(store) as reader:
        report = reader.validate()
        assert report.ok, "\n".join(str(problem) for problem in report.problems)
        assert len(reader.commitlog_files()) > 2
        for queue_id, (low, high) in ranges.items():
            assert reader.queue_offsets(topic, queue_id) == (low, high)
            assert len(reader.consume_queue_files(topic, queue_id)) > 1
    assert report.records >= stored
