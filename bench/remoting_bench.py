"""Micro benchmark of rmq.remoting: frame codec and request round trips over loopback.

    .venv/bin/python bench/remoting_bench.py [--seconds 1.0]

Prints one JSON object: encode/decode operations per second for a typical SEND_MESSAGE_V2
frame (JSON and ROCKETMQ headers), custom header decodes per second, and round trips per
second between a RemotingClient and a RemotingServer on 127.0.0.1, one request at a time
and 64 in flight.  Runs on uvloop when it is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import platform
import time
from collections.abc import Callable, Coroutine
from typing import Any

from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.frame import decode_frame, encode_frame
from rmq.remoting.headers import SendMessageRequestHeader
from rmq.remoting.server import RemotingServer


def loop_runner() -> tuple[str, Callable[[Coroutine[Any, Any, float]], float]]:
    """uvloop's `run` when it is installed, asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return "asyncio", asyncio.run
    return "uvloop", uvloop.run


def send_request(serialize_type: SerializeType) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="please_rename_unique_group_name",
        topic="BenchmarkTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="UNIQ_KEY\x017F0000010001B4AAC5DC1F4C6A0000\x02WAIT\x01true\x02TAGS\x01TagA",
        reconsume_times=0,
        bname="broker-a",
    )
    request = create_request(RequestCode.SEND_MESSAGE_V2, header, body=b"x" * 128)
    request.serialize_type = serialize_type
    return request


def rate(operation: Callable[[], object], seconds: float) -> float:
    """Calls per second of `operation`, measured for about `seconds`."""
    calls, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        for _ in range(1000):
            operation()
        calls += 1000
    return calls / elapsed


async def echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, body=request.body)


async def round_trips(seconds: float, in_flight: int) -> float:
    async with RemotingServer("127.0.0.1", 0) as server, RemotingClient() as client:
        server.register(RequestCode.HEART_BEAT, echo)
        addr = f"127.0.0.1:{server.port}"
        count = 0
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal count
            while time.perf_counter() < deadline:
                await client.invoke(addr, create_request(RequestCode.HEART_BEAT, body=b"ping"), 5)
                count += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    seconds = parser.parse_args().seconds

    results: dict[str, object] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    loop_name, run = loop_runner()
    results["loop"] = loop_name
    for serialize_type in SerializeType:
        request = send_request(serialize_type)
        frame = memoryview(encode_frame(request))[4:]
        name = serialize_type.name.lower()
        results[f"encode_send_frame_{name}_per_s"] = round(
            rate(functools.partial(encode_frame, request), seconds)
        )
        results[f"decode_send_frame_{name}_per_s"] = round(
            rate(functools.partial(decode_frame, frame), seconds)
        )
    decoded = decode_frame(memoryview(encode_frame(send_request(SerializeType.JSON)))[4:])
    results["decode_send_header_per_s"] = round(
        rate(lambda: decoded.read_header(SendMessageRequestHeader), seconds)
    )

    for in_flight in (1, 64):
        results[f"round_trips_{in_flight}_in_flight_per_s"] = round(
            run(round_trips(seconds, in_flight))
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
