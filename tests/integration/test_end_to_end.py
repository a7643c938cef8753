"""Delays, retries, the DLQ, broadcasting, offset resets and queue allocation end to end: real
`rmq namesrv` and `rmq broker` processes (timings shortened by broker config), driven by the
`rmq` commands a user runs, and by rmq's client API where the CLI has no such consumer (one
that fails on purpose).

* Two `rmq consume -g G --allocate circle` processes on an 8-queue topic hold and print the
  queues Apache's circle strategy gives them: the client id sorting first the even ones.
* Delayed messages at three levels, parked when the broker is killed with SIGKILL, arrive
  after a restart on the same store: each stored in its topic no earlier than its born time
  plus its level's delay, each exactly once.
* A consumer that always answers RECONSUME_LATER gets the message again after the delays of
  levels 3, 4 and 5 in turn (never sooner), and after `maxReconsumeTimes` it goes to
  `%DLQ%<group>`, where `rmq consume %DLQ%<group> --from first -e` shows it.
* Two broadcasting `rmq consume --broadcast` processes (two hosts: two HOMEs) each get every
  message; each keeps its offsets in `~/.rocketmq_offsets/<ip>@DEFAULT/<group>/offsets.json`,
  and a restarted one resumes after what it printed.
* `rmq group reset-offsets --to first` while a consumer runs makes it read everything again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from rmq.client.consumer import (
    AllocateMessageQueueAveragelyByCircle,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    MessageQueue,
    PushConsumer,
)
from rmq.client.consumer.offsetstore import OffsetSerializeWrapper
from tests.integration.test_produce_consume import Cli, ndjson, topic_name
from tests.procs import RmqProcess, RmqProcesses

DEADLINE = 60.0


def cli_env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RMQ_") and key != "NAMESRV_ADDR"
    }
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home)}


class Lines:
    """The stdout lines of a running command, read by a thread so a test can wait for them
    with a deadline."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        self.process = process
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def take(self, count: int, timeout: float = DEADLINE) -> list[bytes]:
        """The next `count` lines (an AssertionError when they do not come in time)."""
        deadline = time.monotonic() + timeout
        lines: list[bytes] = []
        while len(lines) < count:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{len(lines)} of {count} lines in {timeout}s") from None
            if line is None:
                raise AssertionError(f"exited after {len(lines)} of {count} lines: {lines}")
            lines.append(line)
        return lines

    def finish(self, timeout: float = DEADLINE) -> tuple[int, list[bytes], str]:
        """Wait for the exit: its code, the lines not taken yet, its stderr."""
        code = self.process.wait(timeout)
        rest: list[bytes] = []
        while (line := self._lines.get(timeout=timeout)) is not None:
            rest.append(line)
        assert self.process.stderr is not None
        return code, rest, self.process.stderr.read().decode()


def start(cli: Cli, *args: str) -> Lines:
    return Lines(cli.popen(*args))


def poll(condition: Any, what: str, timeout: float = DEADLINE) -> Any:
    """Call `condition` until it returns something true; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("e2e-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


@pytest.fixture(scope="module")
def cli(namesrv: RmqProcess, broker: RmqProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return Cli(namesrv.addr, cli_env(tmp_path_factory.mktemp("e2e-home")))


def create_topic(cli: Cli, broker: RmqProcess, topic: str, queues: int) -> None:
    cli.ok(
        "topic",
        "update",
        "-t",
        topic,
        "--broker",
        broker.addr,
        "-r",
        str(queues),
        "-w",
        str(queues),
    )


# --- allocation ------------------------------------------------------------------------------


def test_two_circle_consumers_print_the_queues_apaches_circle_strategy_gives_them(
    cli: Cli, broker: RmqProcess
) -> None:
    topic, group = topic_name("Circle"), topic_name("circle")
    create_topic(cli, broker, topic, 8)
    consumers = [
        start(
            cli, "consume", topic, "-g", group, "--allocate", "circle", "-f", "%p %v\\n", "-c", "8"
        )
        for _ in range(2)
    ]

    def settled() -> dict[str, Any] | None:
        described = cli.run("group", "describe", group, "-t", topic, "-o", "json")
        if described.returncode != 0:  # until the first consumer registered the group
            return None
        state = json.loads(described.stdout)
        ids = sorted(member["clientId"] for member in state["members"])
        holders = [queue["clientId"] for queue in state["queues"]]
        return state if len(ids) == 2 and holders == [ids[n % 2] for n in range(8)] else None

    state = poll(settled, "the two consumers holding alternate queues")
    first_id = min(member["clientId"] for member in state["members"])
    pid_of_first = int(first_id.split("@")[1].split("#")[0])
    mqs = [MessageQueue(topic, broker.name, n) for n in range(8)]
    circle = AllocateMessageQueueAveragelyByCircle()
    expected_first = [mq.queue_id for mq in circle.allocate(group, "a", mqs, ["a", "b"])]
    assert expected_first == [0, 2, 4, 6]

    cli.produce(topic, [{"body": f"m{n}", "queueId": n % 8} for n in range(16)])
    printed = {}
    for consumer in consumers:
        code, lines, errors = consumer.finish()
        assert code == 0, errors
        printed[consumer.process.pid] = Counter(int(line.split()[0]) for line in lines)
    assert printed.pop(pid_of_first) == Counter({n: 2 for n in (0, 2, 4, 6)})
    assert list(printed.values()) == [Counter({n: 2 for n in (1, 3, 5, 7)})]


# --- delays across a broker restart ----------------------------------------------------------

DELAYS_MS = {1: 4000, 2: 5000, 3: 6000}


def test_delayed_messages_survive_a_broker_kill_and_arrive_on_time_exactly_once(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    namesrv = rmq_processes.start_namesrv("delay-namesrv")
    levels = " ".join(f"{ms // 1000}s" for ms in DELAYS_MS.values())
    broker = rmq_processes.start_broker(
        "delay-broker", namesrv=namesrv, props={"messageDelayLevel": levels}
    )
    cli = Cli(namesrv.addr, cli_env(tmp_path / "cli"))
    topic = topic_name("Delayed")
    create_topic(cli, broker, topic, 2)
    records: list[dict[str, Any]] = [
        {"body": f"L{level}-{n}", "delayLevel": level} for level in DELAYS_MS for n in range(3)
    ]
    cli.produce(topic, records)
    broker.kill()
    killed_ms = time.time() * 1000

    broker = rmq_processes.restart_broker(broker, namesrv)
    consumer = start(cli, "consume", topic, "--from", "first", "-c", "9")
    arrived = []
    for line in consumer.take(9):
        arrived.append((time.time() * 1000, json.loads(line)))
    code, rest, errors = consumer.finish()
    assert (code, rest) == (0, []), errors

    assert Counter(record["body"] for _, record in arrived) == Counter(r["body"] for r in records)
    for received_ms, record in arrived:
        due = record["bornTimestamp"] + DELAYS_MS[int(record["body"][1])]
        assert killed_ms < due, "the broker was killed after a message was due"
        assert record["storeTimestamp"] >= due, record
        assert received_ms >= due, record
    again = cli.consume(topic, "--from", "first", "-e")
    assert sorted(record["body"] for record in again) == sorted(r["body"] for r in records)


# --- retries and the DLQ ---------------------------------------------------------------------

RETRY_LEVELS = "1s 1s 1s 2s 3s 9s"
"""Levels 3, 4 and 5 (the first three retries) wait 1 s, 2 s and 3 s."""
RETRY_DELAYS_MS = [1000, 2000, 3000]


async def fail_every_time(namesrv_addr: str, topic: str, group: str) -> list[tuple[float, int]]:
    """Consume `topic` as `group` (maxReconsumeTimes 3), answering RECONSUME_LATER to every
    delivery; returns (time in ms, reconsume times) of each delivery, once the fourth came and
    the consumer has had time to send it on to the DLQ."""
    deliveries: list[tuple[float, int]] = []
    fourth = asyncio.Event()

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        for message in messages:
            deliveries.append((time.time() * 1000, message.reconsume_times))
        if len(deliveries) >= len(RETRY_DELAYS_MS) + 1:
            fourth.set()
        return ConsumeStatus.RECONSUME_LATER

    consumer = PushConsumer(
        group,
        namesrv_addr,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=len(RETRY_DELAYS_MS),
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    async with consumer:
        await asyncio.wait_for(fourth.wait(), DEADLINE)
    return deliveries


def test_a_failing_message_comes_back_after_the_retry_delays_then_lands_in_the_dlq(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    namesrv = rmq_processes.start_namesrv("retry-namesrv")
    broker = rmq_processes.start_broker(
        "retry-broker", namesrv=namesrv, props={"messageDelayLevel": RETRY_LEVELS}
    )
    cli = Cli(namesrv.addr, cli_env(tmp_path / "cli"))
    topic, group = topic_name("Failing"), topic_name("failing")
    create_topic(cli, broker, topic, 1)
    cli.produce(topic, [{"body": "poison", "keys": ["order-7"]}])

    deliveries = asyncio.run(fail_every_time(namesrv.addr, topic, group))
    assert [times for _, times in deliveries] == [0, 1, 2, 3]
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(deliveries)]
    for gap, delay in zip(gaps, RETRY_DELAYS_MS, strict=True):
        assert gap >= delay, (gaps, RETRY_DELAYS_MS)

    def in_dlq() -> list[Any]:
        return cli.consume(f"%DLQ%{group}", "--from", "first", "-e")

    dead = poll(in_dlq, f"the message in %DLQ%{group}")
    # The broker counts the send-back that moved it too, as Apache's does.
    assert [(r["body"], r["keys"], r["reconsumeTimes"]) for r in dead] == [
        ("poison", ["order-7"], 4)
    ]
    assert dead[0]["properties"]["ORIGIN_MESSAGE_ID"]
    assert dead[0]["properties"]["RETRY_TOPIC"] == topic


# --- broadcasting ----------------------------------------------------------------------------


def test_broadcasting_consumers_each_get_everything_and_resume_from_local_offsets(
    cli: Cli, broker: RmqProcess, tmp_path: Path
) -> None:
    topic, group = topic_name("Broadcast"), topic_name("broadcast")
    create_topic(cli, broker, topic, 4)
    cli.produce(topic, [{"body": f"m{n}"} for n in range(20)])
    hosts = [Cli(cli.namesrv, cli_env(tmp_path / f"host-{n}")) for n in range(2)]
    consumers = [
        start(host, "consume", topic, "-g", group, "--broadcast", "-f", "%v\\n", "-c", "20")
        for host in hosts
    ]
    for consumer in consumers:
        code, lines, errors = consumer.finish()
        assert code == 0, errors
        assert Counter(lines) == Counter(f"m{n}\n".encode() for n in range(20))

    for host in hosts:
        [offsets_file] = Path(host.env["HOME"], ".rocketmq_offsets").glob(
            f"*@DEFAULT/{group}/offsets.json"
        )
        table = OffsetSerializeWrapper.decode(offsets_file.read_bytes()).offset_table
        last_of_each_queue = ndjson(cli.ok("consume", topic, "--from=-1", "-e"))
        assert {mq.queue_id: offset for mq, offset in table.items()} == {
            record["queueId"]: record["queueOffset"] + 1 for record in last_of_each_queue
        }

    cli.produce(topic, [{"body": f"n{n}"} for n in range(8)])
    resumed = start(
        hosts[0], "consume", topic, "-g", group, "--broadcast", "-f", "%v\\n", "-c", "8"
    )
    code, lines, errors = resumed.finish()
    assert code == 0, errors
    assert Counter(lines) == Counter(f"n{n}\n".encode() for n in range(8))


# --- an online offset reset ------------------------------------------------------------------


def test_resetting_offsets_while_a_consumer_runs_makes_it_read_again(
    cli: Cli, broker: RmqProcess
) -> None:
    topic, group = topic_name("Reset"), topic_name("reset")
    create_topic(cli, broker, topic, 4)
    bodies = [f"m{n}\n".encode() for n in range(12)]
    cli.produce(topic, [{"body": body.decode().strip()} for body in bodies])
    consumer = start(cli, "consume", topic, "-g", group, "--from", "first", "-f", "%v\\n")
    try:
        assert Counter(consumer.take(12)) == Counter(bodies)

        def committed() -> bool:
            state = json.loads(cli.ok("group", "describe", group, "-t", topic, "-o", "json"))
            return state["totalLag"] == 0 and len(state["queues"]) == 4

        poll(committed, "the 12 messages committed")
        cli.ok("group", "reset-offsets", group, "-t", topic, "--to", "first", "-y")
        assert Counter(consumer.take(12)) == Counter(bodies)
    finally:
        consumer.process.send_signal(signal.SIGTERM)
    code, rest, errors = consumer.finish()
    assert (code, rest) == (0, []), errors
