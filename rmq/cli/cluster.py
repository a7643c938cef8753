"""`rmq cluster`: the clusters and their brokers.

    rmq cluster list      every broker of every cluster with mqadmin clusterList's figures
    rmq cluster broker-status|rt|consume-stats|write-perm|clean-*|delete-expired-commitlog
                          the broker verbs, in rmq.cli.cluster_verbs
    rmq cluster up 2m-2s-sync|2m-2s-async|2m-noslave
                          a local cluster in the foreground, in rmq.cli.cluster_up

`list` makes one admin API call (`AdminClient.cluster_list`): the name server's cluster info,
then GET_BROKER_RUNTIME_INFO from every broker, masters and slaves.  A broker that does not
answer keeps its row, with its figures empty and the reason in `error` (a warning on stderr
says so too), and the command still exits 0: the listing is the cluster's state, not an
operation that failed.  The table shows the traffic figures formatted the way mqadmin prints
them (TPS with two decimals, hours since the oldest stored message, commitlog disk ratio with
four); json/ndjson/yaml give the raw values under the names documented in docs/admin.md.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rmq.cli.main import command_app
from rmq.cli.output import OutputOption
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import record, run_admin, show

log = logging.getLogger(__name__)

app = command_app(help="Inspect clusters and their brokers.")

COLUMNS = (
    "cluster",
    "brokerName",
    "brokerId",
    "addr",
    "role",
    "version",
    "inTps",
    "outTps",
    "pageCacheLockTimeMs",
    "hours",
    "commitlogDiskRatio",
)
WIDE_COLUMNS = (
    "sendQueueSize",
    "sendQueueHeadWaitMs",
    "pullQueueSize",
    "pullQueueHeadWaitMs",
    "inTotalYesterday",
    "outTotalYesterday",
    "inTotalToday",
    "outTotalToday",
    "term",
    "committedIndex",
    "error",
)


@app.callback()
def cluster() -> None:
    """Inspect clusters and their brokers."""


@app.command("list")
def list_brokers(namesrv: NamesrvOption = None, output: OutputOption = None) -> None:
    """List every broker with its runtime figures.

    For each broker of each cluster: id, address, role, version, put and get TPS, page cache
    lock time, hours since the oldest stored message and commitlog disk ratio.  The role is
    MASTER or SLAVE, or the DLedger node's (LEADER, FOLLOWER, CANDIDATE) on an rmq broker with
    enableDLegerCommitLog.  -o wide adds the send/pull thread pool queues, yesterday's and
    today's message totals, and the DLedger term and committed index.
    """
    statuses = run_admin(resolve_namesrv(namesrv), lambda admin: admin.cluster_list())
    for status in statuses:
        if status.error is not None:
            log.warning(
                "broker %s (%s) did not answer: %s", status.addr, status.broker_name, status.error
            )
    data = [record(status, exclude=("runtime_info",)) for status in statuses]
    now = time.time() * 1000
    show(
        data,
        table_rows=[_for_people(row, now) for row in data],
        columns=COLUMNS,
        wide_columns=WIDE_COLUMNS,
        output=output,
    )


def _for_people(row: dict[str, Any], now_millis: float) -> dict[str, Any]:
    earliest = row["earliestMessageTimestamp"]
    return {
        **row,
        "inTps": _fixed(row["inTps"], 2),
        "outTps": _fixed(row["outTps"], 2),
        "hours": _fixed((now_millis - earliest) / 3_600_000, 2)
        if earliest and earliest > 0
        else "",
        "commitlogDiskRatio": _fixed(row["commitlogDiskRatio"], 4),
    }


def _fixed(value: float | None, decimals: int) -> str:
    return "" if value is None else f"{value:.{decimals}f}"
