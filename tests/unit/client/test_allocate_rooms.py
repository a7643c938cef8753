"""The allocation strategies with parameters: by config, by machine room, machine-room nearby.

The tables are Apache 4.9.8's answers for the same inputs (tests/conformance/test_allocate.py
compares many more cases with the Java classes themselves).
"""

from __future__ import annotations

import pytest

from rmq.client.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateStrategy,
    MessageQueue,
)


def queues(brokers: list[str], count: int) -> list[MessageQueue]:
    return [MessageQueue("T", broker, queue_id) for broker in brokers for queue_id in range(count)]


def clients(count: int) -> list[str]:
    return [f"10.0.0.{n}@{4000 + n}" for n in range(count)]


def shares(strategy: AllocateStrategy, mqs: list[MessageQueue], cids: list[str]) -> list[str]:
    """Each client's share as "broker:queueId ..." text."""
    return [
        " ".join(f"{mq.broker_name}:{mq.queue_id}" for mq in strategy.allocate("G", cid, mqs, cids))
        for cid in cids
    ]


def test_by_config_gives_every_client_its_configured_list_whatever_the_group() -> None:
    fixed = queues(["broker-b"], 2)
    strategy = AllocateMessageQueueByConfig(fixed)
    assert strategy.name == "CONFIG"
    assert shares(strategy, queues(["broker-a"], 8), clients(3)) == ["broker-b:0 broker-b:1"] * 3
    assert strategy.allocate("G", "not-a-member", [], []) == fixed


ROOMS = ["hz@broker-a", "sh@broker-b", "hz@broker-c", "plain", "bj@x@y", "sh@", "@broker-d"]


@pytest.mark.parametrize(
    ("idcs", "client_count", "expected"),
    [
        (
            ["hz"],
            2,
            [
                "hz@broker-a:0 hz@broker-a:1 hz@broker-a:2",
                "hz@broker-c:0 hz@broker-c:1 hz@broker-c:2",
            ],
        ),
        (
            ["hz", "sh"],
            2,
            [
                "hz@broker-a:0 hz@broker-a:1 hz@broker-a:2 sh@broker-b:0 hz@broker-c:2",
                "sh@broker-b:1 sh@broker-b:2 hz@broker-c:0 hz@broker-c:1",
            ],
        ),
        (
            ["hz"],
            4,
            [
                "hz@broker-a:0 hz@broker-c:1",
                "hz@broker-a:1 hz@broker-c:2",
                "hz@broker-a:2",
                "hz@broker-c:0",
            ],
        ),
        ([""], 2, ["@broker-d:0 @broker-d:2", "@broker-d:1"]),
        (["bj", "plain"], 2, ["", ""]),
    ],
)
def test_by_machine_room_shares_the_rooms_queues_blocks_first_then_the_tail(
    idcs: list[str], client_count: int, expected: list[str]
) -> None:
    # "bj@x@y" splits in three and "sh@" in one (Java drops the trailing empty part), so
    # neither is in a room; the tail queues go one each to the first clients.
    strategy = AllocateMessageQueueByMachineRoom(idcs)
    assert strategy.name == "MACHINE_ROOM"
    assert shares(strategy, queues(ROOMS, 3), clients(client_count)) == expected


class Rooms:
    def __init__(self, broker_rooms: dict[str, str], client_rooms: list[str]) -> None:
        self.broker_rooms = broker_rooms
        self.client_rooms = dict(zip(clients(len(client_rooms)), client_rooms, strict=True))

    def broker_deploy_in(self, message_queue: MessageQueue) -> str:
        return self.broker_rooms[message_queue.broker_name]

    def consumer_deploy_in(self, client_id: str) -> str:
        return self.client_rooms[client_id]


BROKERS = ["broker-a", "broker-b", "broker-c", "broker-d"]


def test_machine_room_nearby_keeps_a_rooms_queues_in_the_room_and_shares_orphans() -> None:
    rooms = Rooms(
        {"broker-a": "hz", "broker-b": "hz", "broker-c": "sh", "broker-d": "bj"},
        ["hz", "sh", "hz", "sh", "hz"],
    )
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), rooms)
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"
    # hz's six queues among hz's three clients, sh's three among sh's two, and bj (no
    # client there) among all five.
    assert shares(strategy, queues(BROKERS, 3), clients(5)) == [
        "broker-a:0 broker-a:1 broker-d:0",
        "broker-c:0 broker-c:1 broker-d:1",
        "broker-a:2 broker-b:0 broker-d:2",
        "broker-c:2",
        "broker-b:1 broker-b:2",
    ]
    circle = AllocateMachineRoomNearby(AllocateMessageQueueAveragelyByCircle(), rooms)
    assert circle.name == "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"
    assert shares(circle, queues(BROKERS, 3), clients(5))[3] == "broker-c:1"


def test_machine_room_nearby_refuses_a_queue_or_client_without_a_room() -> None:
    no_broker_room = Rooms({"broker-a": "hz", "broker-b": ""}, ["hz"])
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), no_broker_room)
    with pytest.raises(ValueError, match=r"Machine room is null for mq MessageQueue \[topic=T"):
        strategy.allocate("G", clients(1)[0], queues(BROKERS[:2], 1), clients(1))
    no_client_room = Rooms({"broker-a": "hz"}, ["hz", ""])
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), no_client_room)
    with pytest.raises(ValueError, match=r"Machine room is null for consumer id 10\.0\.0\.1@4001"):
        strategy.allocate("G", clients(1)[0], queues(BROKERS[:1], 1), clients(2))
    assert strategy.allocate("G", "absent@1", queues(BROKERS[:1], 1), clients(2)) == []
