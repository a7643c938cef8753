"""In-process cost of the name server's registration rounds and disconnects at scale.

Simulated brokers (JSON register bodies as rmq's broker encodes them) go through the name
server's REGISTER_BROKER handler and its connection-closed path on one event loop, with no
sockets.  Reported per phase: CPU seconds (process time), microseconds per topic, and the
longest stretch the event loop was held (a ticker task measures the gaps between its turns).
A round starts every broker's registration at once, so one turn of the loop runs a step of
each: the worst stall of a round is about the number of brokers times the longest step.
By default every broker serves topics of its own (the worst case for a walk of the whole
topic table); `--shared-topics` gives them all the same names.

    python bench/namesrv_scale.py --brokers 50 --topics 5000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any, cast

from rmq.common.config import NamesrvConfig, NamesrvConfigs, NettyServerConfig
from rmq.remoting.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.remoting.connection import Connection
from rmq.remoting.headers import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from rmq.server.namesrv.kvconfig import KVConfigManager
from rmq.server.namesrv.processor import NamesrvProcessor
from rmq.server.namesrv.routeinfo import RouteInfoManager


class FakeConnection:
    """Stands in for a broker's connection: compared by identity, never closed."""

    closed = False

    def __init__(self, n: int) -> None:
        self.remote_addr = f"10.1.{n // 256}.{n % 256}:40000"

    def __str__(self) -> str:
        return self.remote_addr


def topic_name(broker: int, i: int, shared: bool) -> str:
    return f"Topic_{i:05d}" if shared else f"B{broker:03d}_Topic_{i:05d}"


def register_body(broker: int, topics: int, counter: int, shared: bool) -> bytes:
    names = [topic_name(broker, i, shared) for i in range(topics)]
    table = {
        name: TopicConfig(topic_name=name, read_queue_nums=8, write_queue_nums=8) for name in names
    }
    table[f"broker-{broker}"] = TopicConfig(topic_name=f"broker-{broker}")
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table,
        data_version=DataVersion(timestamp=1_700_000_000_000 + broker, counter=counter),
    )
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=wrapper, filter_server_list=[]
    ).encode()


class LoopStall:
    """The longest gap between two turns of a task that only yields."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._running = True

    async def run(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(0)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last)
            last = now

    def stop(self) -> None:
        self._running = False


async def phase(name: str, work: Any, topics: int, results: dict[str, Any]) -> None:
    stall = LoopStall()
    ticker = asyncio.get_running_loop().create_task(stall.run())
    await asyncio.sleep(0)
    cpu, wall = time.process_time(), time.perf_counter()
    await work()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stall.stop()
    await ticker
    results[name] = {
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "us_per_topic": round(cpu / topics * 1e6, 2) if topics else None,
        "worst_loop_stall_ms": round(stall.worst * 1000, 1),
    }


async def main(brokers: int, topics: int, shared: bool) -> dict[str, Any]:
    routes = RouteInfoManager()
    processor = NamesrvProcessor(
        routes,
        KVConfigManager("/nonexistent/kv.json"),
        NamesrvConfigs(NamesrvConfig(), NettyServerConfig()),
    )
    connections = [FakeConnection(n) for n in range(brokers)]

    def request(n: int, body: bytes) -> Any:
        header = RegisterBrokerRequestHeader(
            broker_name=f"broker-{n}",
            broker_addr=f"10.0.{n // 256}.{n % 256}:10911",
            cluster_name="DefaultCluster",
            ha_server_addr=f"10.0.{n // 256}.{n % 256}:10912",
            broker_id=0,
            compressed=False,
            body_crc32=0,
        )
        return create_request(RequestCode.REGISTER_BROKER, header, body=body)

    bodies = [register_body(n, topics, 1, shared) for n in range(brokers)]
    changed = [register_body(n, topics, 2, shared) for n in range(brokers)]
    results: dict[str, Any] = {
        "brokers": brokers,
        "topics_per_broker": topics,
        "shared_topics": shared,
        "body_bytes": len(bodies[0]),
    }
    total = brokers * topics

    async def round_of(round_bodies: list[bytes]) -> None:
        # Every broker's registration is its own task, as the remoting server runs them.
        tasks = [
            asyncio.get_running_loop().create_task(
                processor.register_broker(
                    cast(Connection, connections[n]), request(n, round_bodies[n])
                )
            )
            for n in range(brokers)
        ]
        for response in await asyncio.gather(*tasks):
            assert response is not None and response.code == ResponseCode.SUCCESS, response

    await phase("first_registration", lambda: round_of(bodies), total, results)
    await phase("unchanged_round", lambda: round_of(bodies), total, results)
    await phase("changed_round", lambda: round_of(changed), total, results)

    async def lookups() -> None:
        for i in range(1000):
            header = GetRouteInfoRequestHeader(topic=topic_name(i % brokers, i % topics, shared))
            response = await processor.get_route_info_by_topic(
                cast(Connection, None), create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
            )
            assert response.code == ResponseCode.SUCCESS

    await phase("1000_route_lookups", lookups, 0, results)

    async def disconnect_all() -> None:
        for n, connection in enumerate(connections):
            routes.on_connection_closed(connection.remote_addr, connection)
            if n % 10 == 9:
                await asyncio.sleep(0)
        assert not routes.topic_queue_table

    await phase("disconnect_all", disconnect_all, total, results)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=50)
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument(
        "--shared-topics",
        action="store_true",
        help="every broker serves the same topic names (default: each its own)",
    )
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.brokers, args.topics, args.shared_topics)), indent=1))
