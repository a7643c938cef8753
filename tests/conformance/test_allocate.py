"""rmq's six allocation strategies against Apache's Java classes on the same inputs.

One run of the `Allocations.run` driver (Apache 4.9.8's client classes, no cluster) computes
every client's share for every case; each test then asks rmq's strategy of the same name for
the same shares and compares them queue for queue, the strategy's name and the errors
included.  The cases cover uneven splits, more clients than queues, several brokers, machine
room broker names that split into one, two and three parts, and rooms with and without
clients of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmq.client.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateStrategy,
    MessageQueue,
)
from tests.conformance.java import run_driver

SECTION = "Allocation strategies (Apache's Java classes and rmq's, same inputs)"


def _queues(brokers: list[str], count: int, topic: str = "T") -> list[list[Any]]:
    return [[topic, broker, queue_id] for broker in brokers for queue_id in range(count)]


def _clients(count: int) -> list[str]:
    return sorted(f"10.0.0.{n}@{4000 + n}" for n in range(count))


def _cases() -> dict[str, list[dict[str, Any]]]:
    """Per strategy, its cases: the driver's spec format (Allocations.java)."""
    shapes = [
        (_queues(["broker-a"], 8), _clients(3)),
        (_queues(["broker-a", "broker-b"], 5), _clients(4)),
        (_queues(["broker-a"], 2), _clients(5)),
        (_queues(["broker-a", "broker-b", "broker-c"], 7), _clients(6)),
    ]
    rooms = ["hz@broker-a", "sh@broker-b", "hz@broker-c", "plain", "bj@x@y", "sh@", "@broker-d"]
    room_queues = _queues(rooms, 3)
    cases: dict[str, list[dict[str, Any]]] = {
        "AVG": [{"mqAll": mqs, "cidAll": cids} for mqs, cids in shapes],
        "AVG_BY_CIRCLE": [{"mqAll": mqs, "cidAll": cids} for mqs, cids in shapes],
        "CONSISTENT_HASH": [
            {"mqAll": mqs, "cidAll": cids, "virtualNodes": nodes}
            for mqs, cids in shapes
            for nodes in (1, 10, 33)
        ],
        "CONFIG": [{"mqAll": mqs, "cidAll": cids, "config": mqs[1::2]} for mqs, cids in shapes[:2]],
        "MACHINE_ROOM": [
            {"mqAll": room_queues, "cidAll": _clients(count), "idcs": idcs}
            for count in (1, 2, 4, 7)
            for idcs in (["hz"], ["hz", "sh"], ["bj", "none"], [""])
        ],
    }
    brokers = ["broker-a", "broker-b", "broker-c", "broker-d"]
    clients = _clients(5)
    placements = [
        (
            {"broker-a": "hz", "broker-b": "hz", "broker-c": "sh", "broker-d": "bj"},
            "hz sh hz sh hz",
        ),
        (
            {"broker-a": "hz", "broker-b": "sh", "broker-c": "sh", "broker-d": "gz"},
            "hz hz hz hz hz",
        ),
        (
            {"broker-a": "hz", "broker-b": "sh", "broker-c": "bj", "broker-d": "gz"},
            "gz bj sh hz hz",
        ),
        ({"broker-a": "hz", "broker-b": "", "broker-c": "sh", "broker-d": "bj"}, "hz sh hz sh hz"),
        ({"broker-a": "hz", "broker-b": "sh", "broker-c": "sh", "broker-d": "bj"}, "hz  sh hz sh"),
    ]
    cases["NEARBY"] = [
        {
            "mqAll": _queues(brokers, 3),
            "cidAll": clients,
            "inner": inner,
            "brokerRooms": broker_rooms,
            "clientRooms": dict(zip(clients, client_rooms.split(" "), strict=True)),
        }
        for broker_rooms, client_rooms in placements
        for inner in ("AVG", "AVG_BY_CIRCLE")
    ]
    return cases


CASES = _cases()


class _Resolver:
    def __init__(self, broker_rooms: dict[str, str], client_rooms: dict[str, str]) -> None:
        self.broker_rooms = broker_rooms
        self.client_rooms = client_rooms

    def broker_deploy_in(self, message_queue: MessageQueue) -> str:
        return self.broker_rooms[message_queue.broker_name]

    def consumer_deploy_in(self, client_id: str) -> str:
        return self.client_rooms[client_id]


def _mqs(rows: list[list[Any]]) -> list[MessageQueue]:
    return [MessageQueue(topic, broker, queue_id) for topic, broker, queue_id in rows]


def _strategy(name: str, case: dict[str, Any]) -> AllocateStrategy:
    """rmq's strategy for a case of the driver's spec."""
    if name == "AVG":
        return AllocateMessageQueueAveragely()
    if name == "AVG_BY_CIRCLE":
        return AllocateMessageQueueAveragelyByCircle()
    if name == "CONSISTENT_HASH":
        return AllocateMessageQueueConsistentHash(case["virtualNodes"])
    if name == "CONFIG":
        return AllocateMessageQueueByConfig(_mqs(case["config"]))
    if name == "MACHINE_ROOM":
        return AllocateMessageQueueByMachineRoom(case["idcs"])
    assert name == "NEARBY"
    resolver = _Resolver(case["brokerRooms"], case["clientRooms"])
    return AllocateMachineRoomNearby(_strategy(case["inner"], case), resolver)


def _rmq_answer(name: str, case: dict[str, Any]) -> dict[str, Any]:
    """rmq's answer in the driver's answer format."""
    strategy = _strategy(name, case)
    mq_all = _mqs(case["mqAll"])
    shares: list[Any] = []
    for cid in case["cidAll"]:
        try:
            share = strategy.allocate("G", cid, mq_all, case["cidAll"])
        except ValueError as exc:
            shares.append({"error": str(exc)})
            continue
        shares.append([[mq.broker_name, mq.queue_id] for mq in share])
    return {"name": strategy.name, "shares": shares}


@pytest.fixture(scope="module")
def apache_answers(java_home: Path) -> dict[str, list[dict[str, Any]]]:
    """Apache's answer to every case, by strategy."""
    spec_cases = [{**case, "strategy": name} for name, cases in CASES.items() for case in cases]
    answers = iter(run_driver("Allocations.run", {"cases": spec_cases}, home=java_home)["cases"])
    return {name: [next(answers) for _ in cases] for name, cases in CASES.items()}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.matrix(SECTION, name, "rmq")) for name in CASES]
)
def test_rmq_allocates_as_apache(
    name: str, apache_answers: dict[str, list[dict[str, Any]]]
) -> None:
    expected = apache_answers[name]
    assert any(share for answer in expected for share in answer["shares"]), "all shares empty"
    assert [_rmq_answer(name, case) for case in CASES[name]] == expected
