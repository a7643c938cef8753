"""`rmq cluster leader transfer GROUP --to SELF_ID [--dry-run]`: hand a DLedger group's
leadership to another node and wait until the name server lists it as master.

    1. the name server's cluster info gives the addresses of broker group GROUP;
    2. GET_BROKER_CONFIG of each gives its `dLegerSelfId`, `dLegerGroup` and `dLegerPeers`
       (the DLedger ports); the master (brokerId 0) is the leader;
    3. the leader's GET_BROKER_RUNTIME_INFO gives its term (`dLegerTerm`, rmq's own key: a
       group led by an Apache broker is refused, its term cannot be read);
    4. LEADERSHIP_TRANSFER (rmq.server.broker.dledger.protocol's codec) goes to the leader's
       DLedger port; a refusal ends the command with its DLedger code (exit 1);
    5. the name server is asked until the broker of SELF_ID is brokerId 0 (`--timeout`);
       the result shows the new master and its term, from its runtime info.

`--dry-run` does steps 1-3 and prints the request it would send.  A SELF_ID that is not
among the peers is bad usage (exit 2); a SELF_ID that already leads succeeds with nothing
sent.  This module's app joins `rmq cluster` (`rmq.cli.main.VERBS`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rmq.cli.errors import EXIT_USAGE, RmqError
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.cli.topic import DryRunOption, run_admin

if TYPE_CHECKING:
    from rmq.client.admin import AdminClient

app = command_app()
leader = command_app(help="Drive the leadership of a DLedger broker group.")
app.add_typer(leader, name="leader")

POLL_S = 0.1


@dataclass
class Node:
    self_id: str
    addr: str
    dledger_addr: str


@dataclass
class GroupState:
    group: str
    nodes: dict[str, Node]
    leader: Node
    term: int


async def _group_state(admin: AdminClient, broker_name: str) -> GroupState:
    from rmq.client.adminops.cluster import broker_config
    from rmq.server.broker.dledger.config import PeersError, parse_peers

    info = await admin.cluster_info()
    entry = info.broker_addr_table.get(broker_name)
    if entry is None or not entry.broker_addrs:
        known = ", ".join(sorted(info.broker_addr_table)) or "none"
        raise RmqError(
            f"broker group {broker_name!r} is not known to the name server (known: {known})",
            "see 'rmq cluster list'",
        )
    nodes: dict[str, Node] = {}
    group = broker_name
    master = entry.broker_addrs.get(0)
    leader: Node | None = None
    for addr in sorted(entry.broker_addrs.values()):
        config = await broker_config(admin, addr)
        if config.get("enableDLegerCommitLog", "false").lower() != "true":
            raise RmqError(f"broker {addr} of {broker_name!r} does not run DLedger")
        self_id = config.get("dLegerSelfId", "")
        group = config.get("dLegerGroup") or broker_name
        try:
            peers = parse_peers(config.get("dLegerPeers", ""))
        except PeersError as exc:
            raise RmqError(f"broker {addr}: {exc}") from exc
        if self_id not in peers:
            raise RmqError(f"broker {addr}: dLegerSelfId {self_id!r} is not in dLegerPeers")
        node = Node(self_id, addr, peers[self_id])
        nodes[self_id] = node
        for peer_id, dledger_addr in peers.items():
            nodes.setdefault(peer_id, Node(peer_id, "", dledger_addr))
        if addr == master:
            leader = node
    if leader is None:
        raise RmqError(
            f"broker group {broker_name!r} has no master now (an election may be running)",
            "try again in a few seconds",
        )
    runtime = await admin.broker_runtime_info(leader.addr)
    term = runtime.get("dLegerTerm")
    if term is None or not term.lstrip("-").isdigit():
        raise RmqError(f"the leader {leader.addr} does not report its DLedger term (dLegerTerm)")
    return GroupState(group, nodes, leader, int(term))


def _request_body(state: GroupState, to: str) -> dict[str, Any]:
    from rmq.server.broker.dledger.protocol import base

    leader_id = state.leader.self_id
    body = base(state.group, None, leader_id, leader_id=leader_id, term=state.term)
    body.update(transferId=leader_id, transfereeId=to)
    return body


@leader.command("transfer")
def transfer(
    group: Annotated[str, typer.Argument(metavar="GROUP", help="Broker name of the group.")],
    to: Annotated[
        str, typer.Option("--to", metavar="SELF_ID", help="The node to lead (dLegerSelfId).")
    ],
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", metavar="SECONDS", help="How long to wait for the new master.", min=0.1
        ),
    ] = 30.0,
    dry_run: DryRunOption = False,
    namesrv: NamesrvOption = None,
    output: OutputOption = None,
) -> None:
    """Hand a DLedger group's leadership to node SELF_ID and wait for it to be master.

    Finds the group's DLedger ports in its brokers' dLegerPeers (GET_BROKER_CONFIG), sends
    LEADERSHIP_TRANSFER to the current leader's DLedger port, then waits until the name
    server lists the broker of SELF_ID as brokerId 0.
    """
    result = run_admin(
        resolve_namesrv(namesrv), lambda admin: _transfer(admin, group, to, timeout, dry_run)
    )
    render(result, columns=tuple(result), output=output)


async def _transfer(
    admin: AdminClient, broker_name: str, to: str, timeout: float, dry_run: bool
) -> dict[str, Any]:
    import asyncio

    from rmq.server.broker.dledger.protocol import (
        Code,
        DLedgerRequestCode,
        code_name,
        decode_body,
        request_command,
    )

    state = await _group_state(admin, broker_name)
    target = state.nodes.get(to)
    if target is None:
        raise RmqError(
            f"{to!r} is not a node of DLedger group {state.group!r} "
            f"(nodes: {', '.join(sorted(state.nodes))})",
            exit_code=EXIT_USAGE,
        )
    result: dict[str, Any] = {
        "group": broker_name,
        "from": state.leader.self_id,
        "to": to,
        "term": state.term,
    }
    if to == state.leader.self_id:
        return {**result, "master": state.leader.addr, "transferred": False}
    body = _request_body(state, to)
    if dry_run:
        return {
            **result,
            "request": DLedgerRequestCode.LEADERSHIP_TRANSFER.name,
            "target": state.leader.dledger_addr,
            "body": body,
        }
    started = time.monotonic()
    request = request_command(DLedgerRequestCode.LEADERSHIP_TRANSFER, body)
    response = await admin.remoting.invoke(state.leader.dledger_addr, request, max(timeout, 3.0))
    answer = decode_body(response.body)
    code = int(answer.get("code", Code.UNKNOWN))
    if code != Code.SUCCESS:
        raise RmqError(
            f"the leader {state.leader.self_id} ({state.leader.dledger_addr}) refused the "
            f"transfer to {to}: {code_name(code)}"
        )
    deadline = started + timeout
    while True:
        entry = (await admin.cluster_info()).broker_addr_table.get(broker_name)
        master = entry.broker_addrs.get(0) if entry is not None else None
        if master is not None and target.addr and master == target.addr:
            break
        if time.monotonic() > deadline:
            raise RmqError(
                f"{to} took the leadership but the name server did not list it as master "
                f"within {timeout:g}s (master now: {master or 'none'})",
                "see 'rmq cluster list'",
            )
        await asyncio.sleep(POLL_S)
    runtime = await admin.broker_runtime_info(master)
    return {
        **result,
        "term": int(runtime.get("dLegerTerm", state.term)),
        "master": master,
        "transferred": True,
        "elapsedMs": round((time.monotonic() - started) * 1000),
    }
