"""`--trace` and `--trace-topic` of `rmq produce` and `rmq consume`: message trace as Apache's
clients write it (rmq/client/trace).

`rmq produce --trace` writes a Pub record per message sent; `rmq consume --trace` a SubBefore
record before each batch is printed and a SubAfter record after it (success when all of it
was printed), under the consumer group (`-g`, else the tools' group TOOLS_CONSUMER; see
consume_trace.py).  The records go to RMQ_SYS_TRACE_TOPIC, or to `--trace-topic TOPIC`
(which implies `--trace`).  Trace records are sent in the background and never fail or slow
the command: records that cannot be sent are counted and reported in one warning at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rmq.client.producer import Producer
    from rmq.client.trace import TraceDispatcher

TraceOption = Annotated[
    bool,
    typer.Option(
        "--trace", help="Write message trace records (to RMQ_SYS_TRACE_TOPIC by default)."
    ),
]
TraceTopicOption = Annotated[
    str | None,
    typer.Option(
        "--trace-topic",
        metavar="TOPIC",
        help="Write the trace records to TOPIC (implies --trace).",
        show_default=False,
    ),
]


def trace_topic(trace: bool, topic: str | None) -> str | None:
    """The trace topic the options ask for; None when tracing is off."""
    from rmq.common.naming import RMQ_SYS_TRACE_TOPIC

    if topic:
        return topic
    return RMQ_SYS_TRACE_TOPIC if trace else None


async def start_dispatcher(
    namesrv_addrs: str, group: str, kind: str, topic: str | None
) -> TraceDispatcher | None:
    """A started trace dispatcher when `topic` is set, else None."""
    if topic is None:
        return None
    from rmq.client.trace import TraceDispatcher

    dispatcher = TraceDispatcher(namesrv_addrs, group, kind, topic)
    await dispatcher.start()
    return dispatcher


async def trace_producer(
    producer: Producer, namesrv_addrs: str, topic: str | None
) -> TraceDispatcher | None:
    """Trace `producer`'s sends to `topic` (nothing when it is None); the dispatcher to shut
    down after the producer."""
    dispatcher = await start_dispatcher(namesrv_addrs, producer.group, "PRODUCE", topic)
    if dispatcher is not None:
        dispatcher.trace_producer(producer)
    return dispatcher
