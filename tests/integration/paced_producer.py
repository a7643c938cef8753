"""A steady load for replication tests: `python -m tests.integration.paced_producer NAMESRV
TOPIC RATE SECONDS [BODY_SIZE]` sends RATE messages a second for SECONDS with rmq's client.

Every 10 ms a tick sends RATE/100 messages as one batch (SEND_BATCH_MESSAGE); ticks do not
wait for each other (at most 64 batches in flight), so a slow answer does not lower the
rate.  At the end one JSON object on stdout: `sent`, `acked`, `failed`, `seconds`
(from the first tick to the last answer) and `rate` (acked per second).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from rmq.client.message import Message
from rmq.client.producer import Producer

TICK = 0.01
MAX_IN_FLIGHT = 64


async def run(namesrv: str, topic: str, rate: int, seconds: float, size: int) -> dict[str, float]:
    per_tick = max(1, round(rate * TICK))
    body = b"x" * size
    producer = Producer("PacedProducer", namesrv)
    await producer.start()
    acked = failed = sent = 0
    slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def one_batch() -> None:
        nonlocal acked, failed
        try:
            await producer.send_batch([Message(topic, body) for _ in range(per_tick)])
            acked += per_tick
        except Exception:
            failed += per_tick
        finally:
            slots.release()

    tasks = []
    started = time.monotonic()
    try:
        tick = 0
        while (now := time.monotonic()) < started + seconds:
            due = started + tick * TICK
            if due > now:
                await asyncio.sleep(due - now)
            await slots.acquire()
            tasks.append(asyncio.create_task(one_batch()))
            sent += per_tick
            tick += 1
        await asyncio.gather(*tasks)
    finally:
        await producer.shutdown()
    elapsed = time.monotonic() - started
    return {
        "sent": sent,
        "acked": acked,
        "failed": failed,
        "seconds": elapsed,
        "rate": acked / elapsed,
    }


def main() -> None:
    namesrv, topic, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    size = int(sys.argv[5]) if len(sys.argv) > 5 else 128
    print(json.dumps(asyncio.run(run(namesrv, topic, rate, seconds, size))), flush=True)


if __name__ == "__main__":
    main()
