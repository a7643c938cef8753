"""mqadmin's queryMsgTraceById: a message's trace, printed as mqadmin 4.9.8 prints it.

The rows are rmq/client/adminops/trace.py's.  Each Pub row prints under its own
`#ProducerGroup` header followed by an empty line; then the SubAfter rows, grouped by
consumer group in a Java `HashMap`'s order of the group names, each group under a
`#ConsumerGroup` header and followed by an empty line.  SubBefore rows are not printed.  Times
are local `yyyy-MM-dd HH:mm:ss`.
"""

from __future__ import annotations

from rmq.cli.mqadmin.consumertext import date_time
from rmq.cli.mqadmin.javafmt import jprintf
from rmq.cli.mqadmin.registry import Invocation, Opt, failing, subcommand
from rmq.common.naming import RMQ_SYS_TRACE_TOPIC

ROW = "%-10s %-20s %-20s %-20s %-10s %-10s%n"


@subcommand(
    15,
    "queryMsgTraceById",
    "query a message trace",
    Opt("i", "msgId", True, True, "Message Id"),
    Opt("t", "traceTopic", True, False, "The name value of message trace topic"),
    alias="QueryMsgTraceById",
)
async def query_msg_trace_by_id(inv: Invocation) -> None:
    from rmq.client.adminops.trace import query_trace
    from rmq.common.javahash import java_hash_order

    with failing("QueryMsgTraceByIdSubCommand", "command failed"):
        msg_id = inv.value("i") or ""
        trace_topic = inv.value("t") if inv.has("t") else RMQ_SYS_TRACE_TOPIC
        async with inv.admin() as admin:
            views = await query_trace(admin, msg_id, trace_topic or "")
        consumers: dict[str, list[tuple[str, str, str, str, str]]] = {}
        for view in views:
            row = (
                view.group,
                view.client_host,
                date_time(view.timestamp),
                f"{view.cost_time}ms",
                view.status,
            )
            if view.msg_type == "Pub":
                jprintf(
                    inv.out,
                    ROW,
                    "#Type",
                    "#ProducerGroup",
                    "#ClientHost",
                    "#SendTime",
                    "#CostTimes",
                    "#Status",
                )
                jprintf(inv.out, ROW, "Pub", *row)
                inv.out.write("\n")
            if view.msg_type == "SubAfter":
                consumers.setdefault(view.group, []).append(row)
        for group in java_hash_order(consumers):
            jprintf(
                inv.out,
                ROW,
                "#Type",
                "#ConsumerGroup",
                "#ClientHost",
                "#ConsumerTime",
                "#CostTimes",
                "#Status",
            )
            for sub in consumers[group]:
                jprintf(inv.out, ROW, "Sub", *sub)
            inv.out.write("\n")
