"""One connection writing 20,000 pulls without reading the answers, against Apache's broker and
rmq's: what each answers, and what the flood costs it in anonymous memory (RssAnon).

Apache keeps reading and queues every answer in Netty's outbound buffer (its pull pool queue
holds 100,000 requests; past it, or past 5 s waiting there, SYSTEM_BUSY); rmq stops reading the
connection while its write buffer is over the high-water mark.  Both must answer every pull
once the client reads, with codes of the same kinds (SUCCESS, or SYSTEM_BUSY), and keep
serving another client during the flood.  The figures are printed for docs/reliability.md.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter

import pytest

from rmq.remoting.codes import ResponseCode
from tests.conformance.clusters import Cluster
from tests.conformance.conftest import Differential
from tests.floods import (
    MB,
    check_still_serving,
    flood,
    pull_request,
    read_command,
    send_message,
    wire_bytes,
)
from tests.procs import LOOPBACK, RemotingSession

TOPIC = "FloodPullTopic"
PULLS = 20_000
BUSY_KINDS = {ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY}


def unread_pulls(cluster: Cluster) -> tuple[Counter[int], int, int]:
    """The flood against `cluster`: the answer codes, and RssAnon before and during it."""
    broker = cluster.broker
    with RemotingSession(timeout=10.0) as session:
        for _ in range(4):
            sent = send_message(session, broker.addr, TOPIC, b"f" * 1024)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
    requests = wire_bytes(pull_request(TOPIC, 0, max_msg_nums=4)) * PULLS
    before = broker.rss_anon()
    with socket.create_connection((LOOPBACK, broker.port)) as flooder:
        sent_bytes = flood(flooder, requests, seconds=5.0)
        check_still_serving(broker, TOPIC, f"beside the flood on {cluster.kind}".encode())
        during = broker.rss_anon()
        flooder.settimeout(120.0)  # per read: a busy machine can hold a JVM broker that long
        rest = threading.Thread(target=flooder.sendall, args=(requests[sent_bytes:],))
        rest.start()  # the rest of the pulls go out while their answers are read
        codes = Counter(read_command(flooder).code for _ in range(PULLS))
        rest.join()
    print(f"{cluster.kind}: RssAnon {before / MB:.0f} -> {during / MB:.0f} MB, codes {codes}")
    return codes, before, during


@pytest.mark.conformance
def test_unread_pulls_are_all_answered_with_the_same_kinds(
    rmq: Cluster, differential: Differential
) -> None:
    apache_codes, _, _ = differential.apache_result("floods-unread-pulls", unread_pulls)
    assert sum(apache_codes.values()) == PULLS
    assert set(apache_codes) <= BUSY_KINDS, apache_codes

    rmq_codes, _, during = unread_pulls(rmq)

    assert sum(rmq_codes.values()) == PULLS
    assert set(rmq_codes) <= BUSY_KINDS, rmq_codes
    assert during < 300 * MB
