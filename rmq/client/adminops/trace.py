"""Message trace admin operation: the trace rows of one message id, as mqadmin 4.9.8's
queryMsgTraceById finds them.

The traces of a message are in trace messages of the trace topic (RMQ_SYS_TRACE_TOPIC unless
another is named) whose keys include the message id: a key query (`query_messages`, at most
64 trace messages stored up to now) finds them, and each one's body holds records about many
messages, of which the rows of this id are kept (`rmq.common.trace.trace_views`), in the order
the brokers answered and the records were written.  Each row's client host is the address the
trace message was born at, as Apache's TraceView takes it.
"""

from __future__ import annotations

from rmq.client.admin import AdminClient
from rmq.client.adminops.message import query_messages
from rmq.common.naming import RMQ_SYS_TRACE_TOPIC
from rmq.common.timeutil import now_millis
from rmq.common.trace import TraceView, trace_views

TRACE_QUERY_MAX = 64


def born_ip(host: str) -> str:
    """The address of an `ip:port` / `[ipv6]:port` host, without the port."""
    return host.rsplit(":", 1)[0].strip("[]")


async def query_trace(
    admin: AdminClient, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC
) -> list[TraceView]:
    """The trace rows of `msg_id` in `trace_topic`; MQClientError NO_MESSAGE when no trace
    message names it."""
    records = await query_messages(
        admin, trace_topic, msg_id, max_num=TRACE_QUERY_MAX, end=now_millis()
    )
    views: list[TraceView] = []
    for record in records:
        body = record.decompressed_body() or b""
        views.extend(trace_views(msg_id, body, born_ip(record.born_host)))
    return views
