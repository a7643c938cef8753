"""`rmq cluster` on three `rmq broker` processes in one DLedger group: `cluster list` and
`cluster broker-status` show each node's role, term and committed index (rmq's extra runtime
keys); `cluster leader transfer` moves the leadership to a chosen node (and its dry run,
refusals and no-op)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from rmq.remoting.codes import ResponseCode
from tests.integration.test_dledger_broker import Group, send, start_group, wait_for
from tests.procs import RemotingSession, RmqProcesses, run_rmq_cli, unique


def rmq(group: Group, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_rmq_cli([*args, "-n", group.namesrv.addr], home=home, timeout=120)


def as_json(group: Group, home: Path, *args: str) -> Any:
    done = rmq(group, home, *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def listed(group: Group, home: Path) -> dict[str, dict[str, Any]]:
    return {row["addr"]: row for row in as_json(group, home, "cluster", "list")}


def test_cluster_list_and_broker_status_show_role_term_and_committed_index(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    group = start_group(rmq_processes)
    master = group.master()
    assert master is not None
    wait_for(
        "the name server and the nodes agree on the leader",
        lambda: (
            sorted(r["role"] for r in listed(group, tmp_path).values())
            == ["FOLLOWER", "FOLLOWER", "LEADER"]
        ),
    )
    rows = listed(group, tmp_path)
    assert set(rows) == {b.addr for b in group.brokers}
    assert rows[master]["role"] == "LEADER" and rows[master]["brokerId"] == 0
    terms = {row["term"] for row in rows.values()}
    assert len(terms) == 1 and terms.pop() >= 1
    before = rows[master]["committedIndex"]
    assert isinstance(before, int)

    with RemotingSession(timeout=10) as session:
        sent = send(session, master, unique("DLedgerCli"), b"one", 0)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    wait_for(
        "every node's committed index past the send",
        lambda: all(r["committedIndex"] > before for r in listed(group, tmp_path).values()),
    )

    table = rmq(group, tmp_path, "cluster", "list", "-o", "wide")
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split()[6] == "ROLE"  # after CLUSTER, BROKER NAME, BROKER ID, ADDR
    assert "TERM" in header.split() and "COMMITTED INDEX" in header
    assert sorted(line.split()[4] for line in lines) == ["FOLLOWER", "FOLLOWER", "LEADER"]

    status = as_json(group, tmp_path, "cluster", "broker-status", "--broker", master)
    keys = {row["key"]: row["value"] for row in status}
    assert keys["dLegerRole"] == "LEADER"
    assert int(keys["dLegerCommittedIndex"]) > before
    assert keys["dLegerLeaderId"] == keys["dLegerSelfId"]


def fails(group: Group, home: Path, code: int, *args: str) -> str:
    done = rmq(group, home, *args)
    assert (done.returncode, done.stdout) == (code, ""), done
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("rmq: error: ")
    return done.stderr


def test_leader_transfer_moves_the_master_to_the_chosen_node(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    group = start_group(rmq_processes)
    master = group.master()
    assert master is not None
    name = group.brokers[0].name.rsplit("-", 1)[0]
    leader_id = f"n{group.by_addr(master)}"
    to = next(f"n{i}" for i, b in enumerate(group.brokers) if b.addr != master)
    target = group.brokers[int(to[1:])].addr
    before = listed(group, tmp_path)[master]["term"]

    plan = as_json(group, tmp_path, "cluster", "leader", "transfer", name, "--to", to, "--dry-run")
    assert plan["request"] == "LEADERSHIP_TRANSFER" and (plan["from"], plan["to"]) == (
        leader_id,
        to,
    )
    assert plan["body"]["transferId"] == leader_id and plan["body"]["remoteId"] == leader_id
    assert plan["body"]["transfereeId"] == to and plan["body"]["term"] == before
    assert plan["target"].startswith("127.0.0.1:") and plan["target"] != master
    assert group.master() == master  # the dry run sent nothing

    assert "not a node" in fails(
        group, tmp_path, 2, "cluster", "leader", "transfer", name, "--to", "n9"
    )
    assert "not known" in fails(
        group, tmp_path, 1, "cluster", "leader", "transfer", "no-such-group", "--to", to
    )
    same = as_json(group, tmp_path, "cluster", "leader", "transfer", name, "--to", leader_id)
    assert (same["transferred"], same["master"]) == (False, master)

    done = as_json(group, tmp_path, "cluster", "leader", "transfer", name, "--to", to)
    assert (done["transferred"], done["master"], done["from"]) == (True, target, leader_id)
    assert done["term"] > before
    assert group.master() == target
    rows = listed(group, tmp_path)
    assert rows[target]["role"] == "LEADER" and rows[target]["brokerId"] == 0
    with RemotingSession(timeout=10) as session:
        sent = send(session, target, unique("DLedgerMoved"), b"after", 0)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
