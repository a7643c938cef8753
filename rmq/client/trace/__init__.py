"""Message trace in rmq's client, as Apache 4.9's client writes it (see rmq/common/trace.py
for the records): a :class:`TraceDispatcher` batches trace records and sends them to the
trace topic in the background; its :meth:`TraceDispatcher.trace_producer` and
:meth:`TraceDispatcher.trace_consumer` hook a producer's sends (Pub records) and a push
consumer's listener calls (SubBefore / SubAfter records) into it.

    async with TraceDispatcher("127.0.0.1:9876", "my-group", "PRODUCE") as traces:
        async with Producer("my-group", "127.0.0.1:9876") as producer:
            traces.trace_producer(producer)
            await producer.send(Message("TopicA", b"hello"))
"""

from rmq.client.trace.dispatcher import TraceDispatcher
from rmq.client.trace.hooks import ConsumeTraceHook, SendTraceHook

__all__ = ["ConsumeTraceHook", "SendTraceHook", "TraceDispatcher"]
