"""A broker switch in the store conformance tests (tests/conformance/test_stores.py): one
implementation's broker took the Java traffic and stopped cleanly, the other's now serves
the same store directory.  `Switch` holds what the Java drivers saw on both sides; the
`*_problems` functions check it, each returning the differences found (empty when none):

* the topics and the subscription group created on the first broker, with their settings,
  are the second broker's (so it read config/ under the same storePathRootDir);
* the second broker finds every message by key and by unique id through the index files
  the first one wrote;
* the traffic's consumer group resumes exactly where it stopped: what it had not consumed,
  retries included, and nothing else;
* a new group reads every record as it was sent, and every stored field as the first broker
  served it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conformance import store_checks as checks
from tests.conformance import store_runs as runs
from tests.procs import RmqProcess, RmqProcesses


def visible(sends: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sends that reach the topic: all but the rolled-back transaction."""
    return [send for send in sends if send["kind"] != "rollback"]


def in_topic(records: list[checks.Record]) -> list[checks.Record]:
    return [record for record in records if record["topic"] == runs.TOPIC]


def keys_of(sends: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Key -> sorted unique ids of the sends carrying it."""
    out: dict[str, list[str]] = {}
    for send in sends:
        for key in send["keys"].split(" "):
            out.setdefault(key, []).append(send["msgId"])
    return {key: sorted(ids) for key, ids in out.items()}


@dataclass
class Switch:
    """`first` ("rmq" or "Apache") took `traffic`; the other's `broker` now serves `store`
    and gave `resumed` (StoreTraffic.resume).  `served` are the records the first broker
    delivered (every stored field), for comparison."""

    first: str
    store: Path
    processes: RmqProcesses
    namesrv_addr: str
    broker: RmqProcess
    traffic: dict[str, Any]
    served: list[checks.Record]
    config_files: list[str]
    resumed: dict[str, Any]

    @property
    def second(self) -> str:
        return "Apache" if self.first == "rmq" else "rmq"

    @property
    def sends(self) -> list[dict[str, Any]]:
        return list(self.traffic["sends"])


def resume(namesrv_addr: str, home: Path, traffic: dict[str, Any]) -> dict[str, Any]:
    """StoreTraffic.resume on the broker now serving the store of `traffic`."""
    sends = visible(traffic["sends"])
    return runs.resume(
        namesrv_addr,
        home,
        unconsumed=len(sends) - len({r["msgId"] for r in traffic["consumed"]}),
        total=len(sends),
        keys=sorted(keys_of(sends)),
        ids=[send["msgId"] for send in sends],
    )


def topics_and_groups_problems(switch: Switch) -> list[str]:
    problems = []
    for name in ("topics.json", "subscriptionGroup.json", "consumerOffset.json"):
        if name not in switch.config_files:
            problems.append(f"{switch.first} wrote no {switch.store}/config/{name}")
    shapes = {runs.TOPIC: (4, 4, 6), f"{runs.TOPIC}-Side": (3, 2, 4)}
    for name, shape in shapes.items():
        config = switch.resumed["topics"].get(name)
        if config is None or shape != (
            config["readQueueNums"],
            config["writeQueueNums"],
            config["perm"],
        ):
            problems.append(f"{switch.second}'s topic {name}: {config}, expected {shape}")
    if not switch.resumed["namesrvTopics"]:
        problems.append(f"the name server does not list {runs.TOPIC} from {switch.second}")
    group = switch.resumed["group"]
    if group is None or (group["retryMaxTimes"], group["consumeBroadcastEnable"]) != (7, False):
        problems.append(f"{switch.second}'s group {runs.GROUP}: {group}")
    return problems


def index_lookup_problems(switch: Switch) -> list[str]:
    sends = visible(switch.sends)
    lookups = switch.resumed["lookups"]
    problems = [
        f"QUERY_MESSAGE {key}: {lookups['byKey'].get(key)}, expected {ids}"
        for key, ids in keys_of(sends).items()
        if lookups["byKey"].get(key) != ids
    ]
    problems += [
        f"viewMessage {send['msgId']}: {lookups['byId'].get(send['msgId'])}"
        for send in sends
        if lookups["byId"].get(send["msgId"]) != send["msgId"]
    ]
    return problems


def resume_problems(switch: Switch) -> list[str]:
    consumed = {r["msgId"] for r in switch.traffic["consumed"]}
    unconsumed = [s for s in visible(switch.sends) if s["msgId"] not in consumed]
    resumed = [checks.from_java(r) for r in switch.resumed["resumed"]]
    problems = checks.match_sends(unconsumed, resumed)
    got = sorted(r["msgId"] for r in resumed)
    if got != sorted(s["msgId"] for s in unconsumed):
        problems.append(f"resumed {len(got)} messages, {len(unconsumed)} were not consumed")
    return problems


def read_all_problems(switch: Switch) -> list[str]:
    read = [checks.from_java(r) for r in switch.resumed["readAll"]]
    problems = checks.match_sends(switch.sends, read)
    problems += checks.match_records(switch.served, read)
    if len(read) != len(visible(switch.sends)):
        problems.append(f"read {len(read)} records, sent {len(visible(switch.sends))}")
    return problems
