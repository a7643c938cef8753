"""DLedger stores crossed both ways: the same sends through a one-node DLedger group of rmq's
broker and one of Apache's (each with its own name server; small store files, so the data
files roll and close with blanks) give data and index files whose entries agree field by
field, and each broker kind then serves every message from the store the other wrote.

The same sends: Apache's Java client (driver ``DLedgerTraffic.send``) sends numbered
messages of varied sizes to a one-queue topic, one at a time.  Field by field: every data
file entry (magic, size, index, pos, channel, CRCs, and the message inside it: every field
of the commitlog record, its properties included) and every index unit (magic, pos, size,
index).  Normalised, as differing by nature: terms (each group numbers its own elections),
store and born timestamps, the born and store hosts, and the client's unique message id.
Then each broker stops with SIGTERM and the other kind starts on its store (same group,
brokerName and selfId): Apache's client reads every message back at the queue offset and
with the msgId its send was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmq.common.message import decode_record
from rmq.common.msgconst import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
from rmq.store.dledger.entry import BLANK_MAGIC, INDEX_UNIT_SIZE, decode_entry, decode_index
from tests.conformance.dledger_nodes import node_props, start_node, stop_node, wait_for
from tests.conformance.java import run_driver
from tests.conformance.store_runs import SMALL_FILES
from tests.ports import free_port
from tests.procs import RmqProcess, RmqProcesses, registered_brokers, unique

SECTION = "DLedger stores (rmq's and Apache's, the same sends)"
MESSAGES = 60
KINDS = ("rmq", "apache")


@dataclass
class Side:
    kind: str
    name: str
    namesrv: str
    store: Path
    peers: str
    broker: RmqProcess
    acks: list[dict[str, Any]]


def start_single(processes: RmqProcesses, kind: str, side: Side | None = None) -> Side:
    """A one-node group of `kind`; given `side`, on its store, group and name server."""
    if side is None:
        name = unique(f"dlstore-{kind}")
        namesrv = processes.start_namesrv(f"{name}-ns").addr
        store = processes.root / f"{name}-store"
        peers = f"n0-127.0.0.1:{free_port()}"
    else:
        name, namesrv, store, peers = side.name, side.namesrv, side.store, side.peers
    props = node_props(
        name,
        namesrv,
        peers,
        "n0",
        {**SMALL_FILES, "storePathRootDir": store, "storePathCommitLog": store / "commitlog"},
    )
    broker = start_node(processes, kind, unique(f"{name}-{kind}"), props)
    wait_for(f"{kind}'s broker the master", lambda: registered_brokers(namesrv) == {0: broker.addr})
    return Side(kind, name, namesrv, store, peers, broker, side.acks if side else [])


def stop(side: Side) -> None:
    stop_node(side.kind, side.broker)


def entries(store: Path) -> list[dict[str, Any]]:
    """Every entry of the node's data files, normalised; blanks as their file position."""
    out: list[dict[str, Any]] = []
    terms: dict[int, int] = {}
    for path in sorted((store / "dledger-n0" / "data").iterdir()):
        data = path.read_bytes()
        offset = 0
        while offset + 8 <= len(data):
            magic = int.from_bytes(data[offset : offset + 4], "big", signed=True)
            if magic == BLANK_MAGIC:
                out.append({"blank": f"{path.name}+{offset}"})
                break
            if magic == 0:
                break
            entry = decode_entry(data, offset)
            record = decode_record(entry.body)
            properties = dict(record.properties)
            properties.pop(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            out.append(
                {
                    "entry": (entry.magic, entry.size, entry.index, entry.pos, entry.channel),
                    "crcs": (entry.chain_crc, entry.body_crc),
                    "term": terms.setdefault(entry.term, len(terms)),
                    "record": record._replace(
                        born_timestamp=0,
                        store_timestamp=0,
                        born_host="",
                        store_host="",
                        offset_msg_id="",
                        properties=properties,
                    ),
                }
            )
            offset += entry.size
    return out


def index_units(store: Path) -> list[tuple[int, ...]]:
    """Every index unit (magic, pos, size, index; the term normalised) up to the first empty."""
    units: list[tuple[int, ...]] = []
    terms: dict[int, int] = {}
    for path in sorted((store / "dledger-n0" / "index").iterdir()):
        data = path.read_bytes()
        for offset in range(0, len(data) - INDEX_UNIT_SIZE + 1, INDEX_UNIT_SIZE):
            unit = decode_index(data, offset)
            if unit.magic == 0:
                return units
            units.append(
                (
                    unit.magic,
                    unit.pos,
                    unit.size,
                    unit.index,
                    terms.setdefault(unit.term, len(terms)),
                )
            )
    return units


def read_back(processes: RmqProcesses, side: Side, topic: str) -> None:
    """Apache's client reads every acknowledged message at its offset, with its msgId."""
    read = run_driver(
        "DLedgerTraffic.consume",
        {
            "namesrv": side.namesrv,
            "topic": topic,
            "group": unique("dlstore-read"),
            "padded": True,
            "expect": [ack["i"] for ack in side.acks],
        },
        home=processes.root / "java-client",
    )
    at = {m["queueOffset"]: m for m in read["messages"]}
    assert len(at) == len(read["messages"]) == MESSAGES, read["messages"]
    for ack in side.acks:
        message = at[ack["queueOffset"]]
        assert message["msgId"] == ack["msgId"]
        assert message["body"].split(".", 1)[0] == f"dledger-{ack['i']}"


@pytest.mark.matrix(SECTION, "same sends: data and index entries field by field", "result")
def test_the_same_sends_give_the_same_dledger_files_and_each_broker_reads_the_others(
    rmq_processes: RmqProcesses,
) -> None:
    (rmq_processes.root / "java-client").mkdir()
    topic = unique("DLedgerStore")
    sides = []
    for kind in KINDS:
        side = start_single(rmq_processes, kind)
        sent = run_driver(
            "DLedgerTraffic.send",
            {
                "namesrv": side.namesrv,
                "topic": topic,
                "group": unique("dlstore"),
                "create": True,
                "queues": 1,
                "count": MESSAGES,
                "padded": True,
            },
            home=rmq_processes.root / "java-client",
        )
        assert sent["failures"] == 0, sent
        side.acks = sent["acks"]
        stop(side)
        sides.append(side)
    rmq_side, apache_side = sides
    assert [ack["queueOffset"] for ack in rmq_side.acks] == list(range(MESSAGES))
    rmq_entries, apache_entries = entries(rmq_side.store), entries(apache_side.store)
    assert len(rmq_entries) > MESSAGES, "the data files did not roll"
    for mine, theirs in zip(rmq_entries, apache_entries, strict=True):
        assert mine == theirs
    assert index_units(rmq_side.store) == index_units(apache_side.store)

    for side, other in ((rmq_side, "apache"), (apache_side, "rmq")):
        crossed = start_single(rmq_processes, other, side)
        read_back(rmq_processes, crossed, topic)
        stop(crossed)
