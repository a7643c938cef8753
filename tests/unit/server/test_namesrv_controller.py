"""NamesrvController without sockets: brokers leaving in numbers are dropped one per turn of
the event loop, whether their connections closed or they expired."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import cast

from rmq.common.config import NamesrvConfig, NamesrvConfigs, NettyServerConfig
from rmq.remoting.bodies import DataVersion, TopicConfig
from rmq.remoting.connection import Connection
from rmq.server.namesrv.server import NamesrvController


class FakeConnection:
    def __init__(self, n: int) -> None:
        self.remote_addr = f"10.2.0.{n}:50000"


def controller_with_brokers(
    tmp_path: Path, count: int
) -> tuple[NamesrvController, list[FakeConnection]]:
    configs = NamesrvConfigs(
        NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"), broker_channel_expired_time=1000),
        NettyServerConfig(listen_port=0),
    )
    controller = NamesrvController(configs)
    connections = [FakeConnection(n) for n in range(count)]
    for n, connection in enumerate(connections):
        controller.routes.register_broker(
            "DefaultCluster",
            f"10.1.0.{n}:10911",
            f"broker-{n}",
            0,
            None,
            DataVersion(timestamp=1, counter=1),
            [TopicConfig(topic_name=f"B{n}T{i}") for i in range(50)],
            None,
            connection,
        )
    return controller, connections


def live_counts_per_turn(controller: NamesrvController, turns: int) -> list[int]:
    """The number of live brokers after each of `turns` turns of the loop, with the
    controller's clean-up task running."""

    async def watch() -> list[int]:
        cleanup = asyncio.get_running_loop().create_task(controller._clean_up_forever())
        counts = []
        for _ in range(turns):
            await asyncio.sleep(0)
            counts.append(len(controller.routes.broker_live_table))
        cleanup.cancel()
        return counts

    return asyncio.run(watch())


def test_closed_connections_are_cleaned_one_broker_per_turn(tmp_path: Path) -> None:
    controller, connections = controller_with_brokers(tmp_path, 6)
    for connection in connections:
        controller._connection_closed(cast(Connection, connection))
    counts = live_counts_per_turn(controller, 12)
    assert counts[-1] == 0
    assert all(before - after <= 1 for before, after in itertools.pairwise([6, *counts]))
    assert controller.routes.topic_queue_table == {}


def test_expired_brokers_are_dropped_one_per_turn(tmp_path: Path) -> None:
    controller, _ = controller_with_brokers(tmp_path, 5)
    for live in controller.routes.broker_live_table.values():
        live.last_update_timestamp -= 5000
    counts: list[int] = []

    async def run() -> int:
        scan = asyncio.get_running_loop().create_task(controller.scan_not_active_brokers())
        while not scan.done():
            counts.append(len(controller.routes.broker_live_table))
            await asyncio.sleep(0)
        return await scan

    assert asyncio.run(run()) == 5
    assert all(before - after <= 1 for before, after in itertools.pairwise(counts))
    assert controller.routes.topic_queue_table == {}


def test_a_stopping_name_server_leaves_the_route_table_alone(tmp_path: Path) -> None:
    controller, connections = controller_with_brokers(tmp_path, 2)
    controller._stopping = True
    for connection in connections:
        controller._connection_closed(cast(Connection, connection))
    assert live_counts_per_turn(controller, 3) == [2, 2, 2]
