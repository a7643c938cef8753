"""Apache RocketMQ 4.9 stores and rmq stores, crossed both ways (matrix section "Stores").

1. Apache -> rmq: a fresh Apache cluster of its own, on small store files
   (`store_runs.SMALL_FILES`), takes the Java traffic of conformance/drivers StoreTraffic
   (tags, keys, user properties, compressed bodies, a batch, delay level 2, a committed and a
   rolled-back transaction; a push consumer group consumes phase one and has one message
   delivered again; then phase two is sent, with a message parked for an hour; then a new
   group reads everything) and stops with SIGTERM.  `rmq inspect` (verify, dump, export,
   config) and `rmq spark-export` must read the store without a warning and agree field by
   field with what the Java consumers received and the producer sent.
2. rmq -> Apache: the same traffic on a fresh rmq cluster; rmq's broker stops cleanly and
   Apache's broker starts on the same store directory (same brokerName): the consumer group
   resumes exactly where it stopped, a new group reads every record as sent (the parked one
   delivered by Apache), and the topics and groups created on rmq exist on Apache
   (tests/conformance/store_switch.py).  The same checks run with rmq's broker on a copy of
   the Apache store of part 1.
3. kill -9, crossed: on that store, Apache's broker is killed in the middle of a stream of
   sync sends and rmq's broker recovers the store, then rmq's is killed the same way and
   Apache's recovers it: every acknowledged message is at its queue and offset, and new sends
   are accepted.  Finally `rmq inspect verify` reads the store both brokers wrote.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import store_checks as checks
from tests.conformance import store_runs as runs
from tests.conformance import store_switch as switches
from tests.conformance.clusters import start_apache, start_rmq
from tests.conformance.java import ensure_built
from tests.conformance.matrix import stress_row
from tests.conformance.store_switch import Switch, in_topic, visible
from tests.procs import RmqProcess, RmqProcesses

SECTION = "Stores"
COLUMN = "result"


def row(name: str) -> pytest.MarkDecorator:
    return pytest.mark.matrix(SECTION, name, COLUMN)


def system_record_count(sends: list[dict[str, Any]]) -> int:
    """Records besides the topic's: a parked copy per delayed message, a half and an op
    record per transaction, and for the retried message a parked copy and a retry record."""
    delayed = sum(send["kind"] in checks.PARKED_QUEUE for send in sends)
    transactions = sum(send["kind"] in ("commit", "rollback") for send in sends)
    return delayed + 2 * transactions + 2


def retried(traffic: dict[str, Any]) -> tuple[str, str]:
    """(group, unique id) of the message the traffic's group asked to receive again."""
    prefix = traffic["retried"] + " "
    (msg_id,) = [s["msgId"] for s in traffic["sends"] if s["keys"].startswith(prefix)]
    return runs.GROUP, msg_id


def expect_none(record_property: Callable[[str, object], None], problems: list[str]) -> None:
    if problems:
        record_property("matrix_outcome", "different")
    assert not problems, "\n".join(problems[:40])


# -- 1. Apache -> rmq ---------------------------------------------------------------------------


@dataclass
class ApacheStore:
    store: Path
    traffic: dict[str, Any]

    @property
    def sends(self) -> list[dict[str, Any]]:
        return list(self.traffic["sends"])

    def java_records(self, name: str = "readAll") -> list[checks.Record]:
        return [checks.from_java(record) for record in self.traffic[name]]

    def delivered(self) -> list[dict[str, Any]]:
        """The sends in the topic: all but the rolled-back and the pending one."""
        return [s for s in visible(self.sends) if s["kind"] != "pending"]

    @property
    def record_count(self) -> int:
        return len(self.delivered()) + system_record_count(self.sends)


@pytest.fixture(scope="module")
def apache_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheStore]:
    ensure_built()
    root = tmp_path_factory.mktemp("store-apache")
    cluster = start_apache(root, runs.FIRST_BROKER)
    try:
        traffic = runs.traffic(cluster.namesrv_addr, root / "java", read_all=True)
        cluster.broker.stop(timeout=60)
        assert not (cluster.store_dir / "abort").exists(), "Apache's broker left its abort file"
    finally:
        cluster.processes.kill_all()
    yield ApacheStore(cluster.store_dir, traffic)


@row("Apache -> rmq: rmq inspect verify")
def test_apache_store_verifies(apache_store: ApacheStore, record_property: Any) -> None:
    overview = runs.inspect_json(apache_store.store, "overview")
    verified = runs.inspect_json(apache_store.store, "verify")
    problems = [str(p) for p in verified["problems"]]
    if not verified["ok"]:
        problems.append("verify: not ok")
    if verified["records"] != apache_store.record_count:
        problems.append(f"verify: {verified['records']} records, {apache_store.record_count} sent")
    if (overview["shutdown"], overview["lockHeld"]) != ("clean", False):
        problems.append(f"overview: shutdown {overview['shutdown']}, lock {overview['lockHeld']}")
    expect_none(record_property, problems)


@row("Apache -> rmq: rmq inspect dump = Java consumer, field by field")
def test_apache_store_dump(apache_store: ApacheStore, record_property: Any) -> None:
    dumped: list[checks.Record] = []
    for name in sorted(p.name for p in (apache_store.store / "commitlog").iterdir()):
        records = runs.inspect_json(apache_store.store, "dump", "--file", name)
        dumped += [checks.from_message_record(r) for r in records]
    java = apache_store.java_records() + apache_store.java_records("consumed")
    problems = checks.match_records(java, dumped, by="commitLogOffset")
    problems += checks.system_records(
        apache_store.sends, dumped, runs.TOPIC, retried(apache_store.traffic)
    )
    if len(dumped) != apache_store.record_count:
        problems.append(f"dump: {len(dumped)} records, expected {apache_store.record_count}")
    expect_none(record_property, problems)


@row("Apache -> rmq: rmq inspect export = Java consumer and producer, field by field")
def test_apache_store_export(apache_store: ApacheStore, record_property: Any) -> None:
    exported = [checks.from_message_record(r) for r in runs.inspect_export(apache_store.store)]
    topic_records = in_topic(exported)
    java = apache_store.java_records()
    problems = checks.match_records(java, exported)
    problems += checks.match_records(apache_store.java_records("consumed"), exported)
    problems += checks.match_sends(apache_store.sends, topic_records, ("rollback", "pending"))
    problems += checks.system_records(
        apache_store.sends, exported, runs.TOPIC, retried(apache_store.traffic)
    )
    if len(topic_records) != len(java) or len(exported) != apache_store.record_count:
        problems.append(
            f"export: {len(topic_records)} in {runs.TOPIC} of {len(exported)}, "
            f"Java read {len(java)}"
        )
    expect_none(record_property, problems)


@row("Apache -> rmq: rmq inspect config (offsets, topics, groups, delay)")
def test_apache_store_config(apache_store: ApacheStore, record_property: Any) -> None:
    store = apache_store.store
    offsets = runs.inspect_json(store, "config", "offsets")
    topics = {t["topicName"]: t for t in runs.inspect_json(store, "config", "topics")}
    groups = {g["groupName"]: g for g in runs.inspect_json(store, "config", "groups")}
    delay = runs.inspect_json(store, "config", "delay")
    problems = []
    ends: dict[str, dict[tuple[str, int], int]] = {}
    for name in ("consumed", "readAll"):
        queue = ends.setdefault(name, {})
        for record in apache_store.traffic[name]:
            where = (record["topic"], record["queueId"])
            queue[where] = max(queue.get(where, 0), record["queueOffset"] + 1)
    stored = {(o["group"], o["topic"], o["queueId"]): o for o in offsets}
    for group, name in ((runs.GROUP, "consumed"), (f"{runs.GROUP}-all", "readAll")):
        for (topic, queue_id), end in ends[name].items():
            row = stored.get((group, topic, queue_id), {})
            if row.get("offset") != end or row.get("maxOffset") != ends["readAll"].get(
                (topic, queue_id), end
            ):
                problems.append(f"offsets of {group} on {topic} {queue_id}: {row}, expected {end}")
    main, side = topics.get(runs.TOPIC), topics.get(f"{runs.TOPIC}-Side")
    if main is None or (main["readQueueNums"], main["writeQueueNums"], main["perm"]) != (4, 4, 6):
        problems.append(f"topic {runs.TOPIC}: {main}")
    elif main["messages"] != len(apache_store.traffic["readAll"]):
        problems.append(f"topic {runs.TOPIC}: {main['messages']} messages")
    if side is None or (side["readQueueNums"], side["writeQueueNums"], side["perm"]) != (3, 2, 4):
        problems.append(f"topic {runs.TOPIC}-Side: {side}")
    group_row = groups.get(runs.GROUP)
    if group_row is None or (
        group_row["retryMaxTimes"],
        group_row["consumeBroadcastEnable"],
    ) != (7, False):
        problems.append(f"group {runs.GROUP}: {group_row}")
    levels = {d["level"]: (d["queueId"], d["offset"], d["maxOffset"], d["pending"]) for d in delay}
    # level 2: the delayed message, 3: the retry, both delivered; 4: the pending message, whose
    # level Apache's delayOffset.json does not name yet
    expected = {2: (1, 1, 1, 0), 3: (2, 1, 1, 0), 4: (3, None, 1, 1)}
    if levels != expected:
        problems.append(f"delay offsets (queue, offset, max, pending) {levels}, not {expected}")
    expect_none(record_property, problems)


# A Spark job of its own (a JVM for a minute or two of a loaded machine): under make stress.
# rmq inspect's rows above read the same store through the same record codec.
@stress_row
@row("Apache -> rmq: rmq spark-export = Java consumer, field by field")
def test_apache_store_spark_export(
    apache_store: ApacheStore, tmp_path: Path, record_property: Any
) -> None:
    out = tmp_path / "export"
    done = runs.rmq_cli(
        [
            "spark-export",
            str(apache_store.store),
            "--out",
            str(out),
            "--broker-name",
            "broker-a",
            "--master",
            "local[1]",
        ],
        timeout=300,
    )
    assert done.returncode == 0, f"rmq spark-export exited {done.returncode}\n{done.stderr[-4000:]}"
    rows = checks.read_parquet(out)
    java = apache_store.java_records() + apache_store.java_records("consumed")
    problems = checks.match_records(java, rows)
    problems += checks.system_records(
        apache_store.sends, rows, runs.TOPIC, retried(apache_store.traffic)
    )
    if len(rows) != apache_store.record_count:
        problems.append(f"spark-export: {len(rows)} rows, expected {apache_store.record_count}")
    names = {r["brokerName"] for r in rows}
    if names != {"broker-a"}:
        problems.append(f"spark-export: brokerName {names}")
    expect_none(record_property, problems)


# -- 2. broker switches -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rmq_to_apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switch]:
    """rmq's cluster takes the traffic; Apache's broker then serves rmq's store (and stays
    up for the kill -9 steps)."""
    ensure_built()
    root = tmp_path_factory.mktemp("store-rmq")
    cluster = start_rmq(root, runs.FIRST_BROKER)
    try:
        traffic = runs.traffic(cluster.namesrv_addr, root / "java", read_all=False)
        cluster.broker.stop_cleanly(timeout=30)
        config_files = sorted(p.name for p in (cluster.store_dir / "config").glob("*.json"))
        apache = runs.start_apache_on(
            cluster.processes, "apache-on-rmq-store", cluster.namesrv_addr, cluster.store_dir
        )
        served = in_topic([checks.from_java(r) for r in traffic["consumed"]])
        resumed = switches.resume(cluster.namesrv_addr, root / "java", traffic)
        yield Switch(
            "rmq",
            cluster.store_dir,
            cluster.processes,
            cluster.namesrv_addr,
            apache,
            traffic,
            served,
            config_files,
            resumed,
        )
    finally:
        cluster.processes.kill_all()


@pytest.fixture(scope="module")
def apache_to_rmq(
    apache_store: ApacheStore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Switch]:
    """rmq's broker serves a copy of the Apache store of part 1."""
    root = tmp_path_factory.mktemp("rmq-on-apache-store")
    store = root / "store"
    shutil.copytree(apache_store.store, store)
    processes = RmqProcesses(root)
    try:
        namesrv = processes.start_namesrv("rmq-namesrv")
        broker = runs.start_rmq_on(processes, "rmq-on-apache-store", namesrv.addr, store)
        resumed = switches.resume(namesrv.addr, root / "java", apache_store.traffic)
        yield Switch(
            "Apache",
            store,
            processes,
            namesrv.addr,
            broker,
            apache_store.traffic,
            apache_store.java_records(),
            sorted(p.name for p in (store / "config").glob("*.json")),
            resumed,
        )
    finally:
        processes.kill_all()


SWITCHES = {"rmq_to_apache": ("rmq", "Apache"), "apache_to_rmq": ("Apache", "rmq")}


def switch_cases(what: str) -> list[Any]:
    """One case per switch; `what` names the row with {first} and {second}."""
    return [
        pytest.param(
            fixture,
            marks=row(
                f"{first}'s store, {second}'s broker: " + what.format(first=first, second=second)
            ),
            id=fixture,
        )
        for fixture, (first, second) in SWITCHES.items()
    ]


def expect_no_switch_problems(
    request: pytest.FixtureRequest,
    fixture: str,
    record_property: Any,
    problems: Callable[[Switch], list[str]],
) -> None:
    """What the switch tests share: `problems` of the switch `fixture` names must be none."""
    switch: Switch = request.getfixturevalue(fixture)
    expect_none(record_property, problems(switch))


@pytest.mark.parametrize("fixture", switch_cases("topics and groups created on {first} exist"))
def test_switch_topics_and_groups(
    fixture: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    expect_no_switch_problems(
        request, fixture, record_property, switches.topics_and_groups_problems
    )


@pytest.mark.parametrize(
    "fixture", switch_cases("finds messages by key and id in {first}'s index files")
)
def test_switch_index_lookups(
    fixture: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    expect_no_switch_problems(request, fixture, record_property, switches.index_lookup_problems)


@pytest.mark.parametrize("fixture", switch_cases("a consumer group resumes from {first}'s offsets"))
def test_switch_group_resumes(
    fixture: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    expect_no_switch_problems(request, fixture, record_property, switches.resume_problems)


@pytest.mark.parametrize(
    "fixture", switch_cases("a new group reads every record as sent and as {first} served it")
)
def test_switch_new_group_reads_all(
    fixture: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    expect_no_switch_problems(request, fixture, record_property, switches.read_all_problems)


# -- 3. kill -9, crossed ------------------------------------------------------------------------


@dataclass
class CrashChain:
    """The kill -9 steps on the switched store, each run once, in order, on first use."""

    switch: Switch
    home: Path
    done: dict[str, Any] = field(default_factory=dict)

    def _once(self, name: str, step: Callable[[], Any]) -> Any:
        if name not in self.done:
            try:
                self.done[name] = ("ok", step())
            except Exception as exc:  # kept: later steps report it
                self.done[name] = ("error", exc)
        state, value = self.done[name]
        if state == "error":
            raise AssertionError(f"step {name} failed") from value
        return value

    @property
    def namesrv(self) -> str:
        return self.switch.namesrv_addr

    def rmq_recovers(self) -> tuple[runs.StreamRun, runs.StreamRun, RmqProcess]:
        """Apache's broker killed mid-stream; rmq's broker recovers, is checked, then is
        killed mid-stream itself."""

        def step() -> tuple[runs.StreamRun, runs.StreamRun, RmqProcess]:
            first = runs.stream(self.namesrv, self.home, label="apache", kill=self.switch.broker)
            broker = runs.start_rmq_on(
                self.switch.processes, "rmq-recovers", self.namesrv, self.switch.store
            )
            second = runs.stream(
                self.namesrv, self.home, label="rmq", kill=broker, verify=first.acked, fresh=3
            )
            return first, second, broker

        return self._once("rmq recovers", step)  # type: ignore[no-any-return]

    def apache_recovers(self) -> tuple[runs.StreamRun, RmqProcess]:
        first, second, _ = self.rmq_recovers()

        def step() -> tuple[runs.StreamRun, RmqProcess]:
            broker = runs.start_apache_on(
                self.switch.processes, "apache-recovers", self.namesrv, self.switch.store
            )
            earlier = first.acked + second.result["fresh"] + second.acked
            third = runs.stream(
                self.namesrv, self.home, label="final", kill=None, verify=earlier, fresh=3
            )
            return third, broker

        return self._once("apache recovers", step)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def crash_chain(rmq_to_apache: Switch) -> CrashChain:
    return CrashChain(rmq_to_apache, rmq_to_apache.processes.root / "java-crash")


def recovery_problems(recovery: runs.StreamRun, acked: list[dict[str, Any]]) -> list[str]:
    """The recovering broker's check of `acked`, and its fresh sends placed after them."""
    problems = [str(p) for p in recovery.result["problems"] + recovery.result["freshProblems"]]
    if recovery.result["verified"] != len(acked):
        problems.append(f"verified {recovery.result['verified']} of {len(acked)} acked sends")
    last: dict[int, int] = {}
    for ack in acked:
        last[ack["queueId"]] = max(last.get(ack["queueId"], -1), ack["queueOffset"])
    for sent in recovery.result["fresh"]:
        if sent["queueOffset"] <= last.get(sent["queueId"], -1):
            problems.append(
                f"new send {sent['keys']} reused offset {sent['queueId']}@{sent['queueOffset']}"
            )
    return problems


@row("kill -9 of Apache's broker mid-stream: rmq's broker recovers every ack, takes new sends")
def test_rmq_recovers_apache_kill(crash_chain: CrashChain, record_property: Any) -> None:
    first, second, _ = crash_chain.rmq_recovers()
    expect_none(record_property, recovery_problems(second, first.acked))


@row("kill -9 of rmq's broker mid-stream: Apache's broker recovers every ack, takes new sends")
def test_apache_recovers_rmq_kill(crash_chain: CrashChain, record_property: Any) -> None:
    first, second, _ = crash_chain.rmq_recovers()
    third, _ = crash_chain.apache_recovers()
    earlier = first.acked + second.result["fresh"] + second.acked
    expect_none(record_property, recovery_problems(third, earlier))


@row("the store both brokers wrote and recovered: rmq inspect verify, nothing lost or twice")
def test_crossed_store_verifies(crash_chain: CrashChain, record_property: Any) -> None:
    first, second, _ = crash_chain.rmq_recovers()
    third, broker = crash_chain.apache_recovers()
    broker.stop(timeout=60)
    store = crash_chain.switch.store
    verified = runs.inspect_json(store, "verify")
    problems = [str(p) for p in verified["problems"]]
    if not verified["ok"]:
        problems.append("verify: not ok")
    copies: dict[str, int] = {}
    for record in runs.inspect_export(store, "-t", runs.TOPIC):
        copies[record["msgId"]] = copies.get(record["msgId"], 0) + 1
    acked = first.acked + second.result["fresh"] + second.acked + third.result["fresh"]
    once = [s["msgId"] for s in visible(crash_chain.switch.sends) if s["kind"] != "pending"]
    once += [a["msgId"] for a in acked]
    problems += [
        f"{msg_id}: {copies.get(msg_id, 0)} records" for msg_id in once if copies.get(msg_id) != 1
    ]
    # Delivered by Apache after the switch, but a broker persists delivery progress only
    # every flushDelayOffsetInterval (Apache: first after 10 s), so each kill -9 may deliver
    # it again: at least once.
    (pending,) = [s["msgId"] for s in crash_chain.switch.sends if s["kind"] == "pending"]
    if copies.get(pending, 0) < 1:
        problems.append(f"the pending delayed message {pending} was never delivered")
    halves = runs.inspect_export(store, "-t", checks.HALF_TOPIC)
    if len(halves) != 2:
        problems.append(f"{len(halves)} half records: the transactions were checked again")
    expect_none(record_property, problems)
