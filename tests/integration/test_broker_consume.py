"""Long polling seen from the Apache C++ client, through real `rmq namesrv` + `rmq broker`.

A push consumer that is already waiting (its pulls parked on an empty topic) gets new
messages at once, not when its parked pulls time out.  The client acceptance cases (every
message exactly once and intact, tag filter, orderly consumption, two members splitting the
queues) are in tests/interop/test_cpp_broker.py, whose helpers this module shares.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.interop.cpp_client import unique_name
from tests.interop.test_cpp_broker import assert_intact, message, produce, waiting_consumers
from tests.procs import RmqProcess, RmqProcesses

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("consume-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


def test_a_waiting_consumer_gets_new_messages_at_once(
    broker: RmqProcess, namesrv: RmqProcess
) -> None:
    topic = unique_name("ConsumeLive")
    messages = [message(n) for n in range(200)]
    (consumer,) = waiting_consumers(broker, namesrv, topic, 1, count=len(messages), linger=0)

    with consumer:
        started = time.monotonic()
        produce(namesrv, topic, messages, producers=1)
        received = consumer.wait().result["messages"]
        elapsed = time.monotonic() - started

    assert_intact(received, topic, messages)
    # Parked pulls are held for 15 s: only a wake-up on arrival answers this fast.
    assert elapsed < 10, f"took {elapsed:.1f} s"
