"""The cluster the `rmq mqadmin` integration tests run against, and a way to run the command.

`mqadmin_cluster` (module-scoped; tests/integration/conftest.py makes it visible to every
integration module) starts `rmq namesrv` and two `rmq broker`s, broker-a and broker-b, in the
one cluster `DefaultCluster`; creates `TOPIC` with 4 queues on both; sends `MESSAGES`
messages with keys `MqaKey-<n>` and tags `TagA`/`TagB` (one per queue: queue n % 4 of
broker-a for even n, of broker-b for odd n), and starts two `rmq consume TOPIC -g GROUP`
processes, the group's running members, returning once the group's committed offsets cover
every message.  Tests must not change this shared state (create topics and groups of their
own for commands that change things).

`MqadminCluster.run("topicRoute", "-t", TOPIC)` runs `rmq mqadmin topicRoute -n <namesrv>
-t MqaTopic` as a subprocess (`namesrv=False` leaves -n out) and returns the
CompletedProcess (text, stdout and stderr captured).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rmq.client import api
from rmq.client.admin import AdminClient
from rmq.client.api.send import SendResult
from rmq.client.errors import RouteNotFound
from rmq.client.message import Message
from rmq.client.producer import Producer, QueueSelector
from rmq.remoting.bodies import MessageQueue, TopicConfig, TopicRouteData
from rmq.remoting.client import RemotingClient
from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcess, RmqProcesses, rmq_command

CLUSTER = "DefaultCluster"
BROKERS = ("broker-a", "broker-b")
TOPIC = "MqaTopic"
QUEUES = 4
GROUP = "MqaGroup"
PRODUCER_GROUP = "MqaProducerGroup"
MESSAGES = 8
MEMBERS = 2
TIMEOUT = 5.0


@dataclass
class MqadminCluster:
    """The running cluster: addresses, what was sent, and `run` for `rmq mqadmin`."""

    namesrv_addr: str
    broker_addrs: dict[str, str]
    """Broker name -> address."""
    sent: list[SendResult]
    """The messages sent, in order: message n has keys `MqaKey-<n>`."""
    home: Path
    consumers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(
        self, command: str, *args: str, namesrv: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """`rmq mqadmin command [-n namesrv] args...`, output captured."""
        argv = [command, *(["-n", self.namesrv_addr] if namesrv else []), *args]
        return run_mqadmin(argv, home=self.home, timeout=timeout)


def run_mqadmin(
    args: Sequence[str], *, home: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`rmq mqadmin args...` with HOME set to `home` and no NAMESRV_ADDR."""
    env = {key: value for key, value in os.environ.items() if key != "NAMESRV_ADDR"}
    return cli_run(
        rmq_command(["mqadmin", *args]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, "HOME": str(home)},
        check=False,
    )


async def _create_topic(namesrv_addr: str, broker_addrs: Sequence[str]) -> None:
    config = TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    async with AdminClient(namesrv_addr) as admin:
        await admin.create_or_update_topic(config, cluster=CLUSTER)
        async with asyncio.timeout(20):
            while True:
                try:
                    route = await admin.topic_route(TOPIC)
                except RouteNotFound:  # the brokers have not registered it yet
                    route = TopicRouteData()
                if {data.broker_addrs.get(0) for data in route.broker_datas} >= set(broker_addrs):
                    return
                await asyncio.sleep(0.1)


def _queue_of(n: int) -> QueueSelector:
    wanted = MessageQueue(TOPIC, BROKERS[n % 2], n // 2)

    def select(queues: Sequence[MessageQueue], message: Message) -> MessageQueue:
        assert wanted in queues, queues
        return wanted

    return select


async def _send(namesrv_addr: str) -> list[SendResult]:
    """One message per queue: message n to queue n // 2 of broker-a (even n) or broker-b."""
    results = []
    async with Producer(PRODUCER_GROUP, namesrv_addr) as producer:
        for n in range(MESSAGES):
            message = Message(
                TOPIC, f"mqadmin-{n}".encode(), tags="TagA" if n % 2 == 0 else "TagB",
                keys=[f"MqaKey-{n}"],
            )  # fmt: skip
            results.append(await producer.send(message, selector=_queue_of(n)))
    return results


async def _committed(broker_addrs: dict[str, str]) -> int:
    """The group's committed offsets summed over every queue of the topic (-1 while one has
    none)."""
    remoting = RemotingClient()
    try:
        total = 0
        for name, addr in broker_addrs.items():
            for queue_id in range(QUEUES):
                mq = MessageQueue(TOPIC, name, queue_id)
                offset = await api.query_consumer_offset(remoting, addr, GROUP, mq, TIMEOUT)
                if offset is None:
                    return -1
                total += offset
        return total
    finally:
        await remoting.close()


def _start_consumers(cluster: MqadminCluster, root: Path) -> None:
    for member in range(MEMBERS):
        out = (root / f"consumer-{member}.out").open("wb")
        cluster.consumers.append(
            subprocess.Popen(
                rmq_command(["consume", TOPIC, "-n", cluster.namesrv_addr, "-g", GROUP]),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )
        out.close()
    deadline = time.monotonic() + 60
    while asyncio.run(_committed(cluster.broker_addrs)) != MESSAGES:
        for consumer in cluster.consumers:
            assert consumer.poll() is None, f"rmq consume exited: {root}"
        assert time.monotonic() < deadline, "the group did not commit every message in 60 s"
        time.sleep(0.2)


def _stop_consumers(consumers: list[subprocess.Popen[bytes]]) -> None:
    for consumer in consumers:
        if consumer.poll() is None:
            consumer.send_signal(signal.SIGINT)
    for consumer in consumers:
        try:
            consumer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            consumer.kill()
            consumer.wait(timeout=30)


@pytest.fixture(scope="module")
def mqadmin_cluster(module_processes: RmqProcesses) -> Iterator[MqadminCluster]:
    """The shared cluster of the module docstring."""
    namesrv = module_processes.start_namesrv("mqa-namesrv")
    brokers: list[RmqProcess] = [
        module_processes.start_broker(name, namesrv=namesrv) for name in BROKERS
    ]
    addrs = {process.name: process.addr for process in brokers}
    asyncio.run(_create_topic(namesrv.addr, list(addrs.values())))
    sent = asyncio.run(_send(namesrv.addr))
    home = module_processes.root / "mqadmin-home"
    home.mkdir(exist_ok=True)
    cluster = MqadminCluster(namesrv.addr, addrs, sent, home)
    try:
        _start_consumers(cluster, module_processes.root)
        yield cluster
    finally:
        _stop_consumers(cluster.consumers)
    for process in brokers:
        process.stop_cleanly()
    namesrv.stop_cleanly()
