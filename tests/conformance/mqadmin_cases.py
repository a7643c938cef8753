"""Every mqadmin command of Apache's 4.9.8 tools jar as a case: the arguments it runs with, the
state it needs, what its Apache run must show, the normalisation rules its output needs and,
where rmq's servers do not serve what it needs yet, the expected-failure reason.

`SETUP` is what `rmq.conformance.MqAdminClients` builds on both clusters before the first
command (tests/conformance/mqadmin_run.py): topics, groups, eight messages with keys and tags
on the four queues of `MqaTopic`, one message sent with trace on, a producer that stays
connected and a push consumer that has consumed everything (one message through its retry
topic).  Cases that change state work on topics and groups of their own, so their order does
not matter, and both clusters always get the same commands.

Arguments are templates: `{broker}` (the broker's address), `{cluster}`, `{out}` (a fresh
directory for files the command writes), `{msgN}` / `{offmsgN}` (unique and offset id of the
N-th message sent), `{traced}`; `-n <name server>` is added after the command name.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmq.remoting.bodies import KVTable, SubscriptionGroupWrapper, TopicList
from rmq.remoting.codes import RequestCode
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from tests.conformance.clusters import BROKER_NAME, CLUSTER
from tests.conformance.mqadmin_normalise import (
    Rule,
    Where,
    cluster_load,
    commitlog_offsets,
    elapsed,
    foreign,
    is_foreign,
    json_document,
    object_ids,
    rates,
    rmq_only_keys,
    runtime_values,
    times,
    unordered,
)
from tests.procs import RemotingSession

TOPIC = "MqaTopic"
GROUP = "MqaGroup"
PRODUCER_GROUP = "MqaProducerGroup"
SEND_TOPIC = "MqaSendTopic"
MESSAGES = 8

SETUP: Mapping[str, Any] = {
    "brokerName": BROKER_NAME,
    "topics": {
        TOPIC: 4,
        SEND_TOPIC: 1,
        "MqaTraceTopic": 1,
        "MqaDeleteTopic": 2,
        "MqaPermTopic": 2,
    },
    "groups": [GROUP, "MqaDeleteGroup"],
    # printMsg, consumeMessage... pull as TOOLS_CONSUMER, and heartbeat it (creating its retry
    # topic) only when they happen to live a second: done once beforehand on both clusters
    "heartbeatGroups": ["TOOLS_CONSUMER"],
    "producerGroup": PRODUCER_GROUP,
    "messages": [
        {
            "topic": TOPIC,
            "queue": i % 4,
            "tags": "TagA" if i % 2 == 0 else "TagB",
            "keys": f"MqaKey-{i}",
            "body": f"mqadmin-{i}",
        }
        for i in range(MESSAGES)
    ],
    "traced": {
        "topic": "MqaTraceTopic",
        "producerGroup": "MqaTraceProducerGroup",
        "keys": "MqaTraceKey",
        "tags": "TagT",
        "body": "traced",
    },
    "consumers": [
        {
            "group": GROUP,
            "instance": "MqaConsumer",
            "topic": TOPIC,
            "expression": "*",
            "expect": MESSAGES,
            "retryKey": f"MqaKey-{MESSAGES - 1}",
        }
    ],
}


@dataclass
class Target:
    """One side of a comparison: where mqadmin runs against and what the set-up reported."""

    kind: str
    namesrv_addr: str | None
    broker_addr: str
    home: Path
    out: Path
    paths: dict[str, str] = field(default_factory=dict)
    ready: Mapping[str, Any] = field(default_factory=dict)
    foreign: frozenset[str] = frozenset()
    foreign_topics: int = 0

    def fill(self, template: str) -> str:
        """`template` with its `{name}` placeholders (`values`) filled in."""
        values = self.values()
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)

    def values(self) -> dict[str, str]:
        values = {"broker": self.broker_addr, "cluster": CLUSTER, "out": str(self.out)}
        for i, sent in enumerate(self.ready.get("sent", ())):
            values[f"msg{i}"] = sent["msgId"]
            values[f"offmsg{i}"] = sent["offsetMsgId"]
        if "traced" in self.ready:
            values["traced"] = self.ready["traced"]["msgId"]
        return values

    def where(self) -> Where:
        names: dict[str, str] = {}
        for i, sent in enumerate(self.ready.get("sent", ())):
            names[sent["msgId"]] = f"<msg-{i}>"
            names[sent["offsetMsgId"]] = f"<offset-msg-{i}>"
        if "traced" in self.ready:
            names[self.ready["traced"]["msgId"]] = "<traced-msg>"
            names[self.ready["traced"]["offsetMsgId"]] = "<traced-offset-msg>"
        return Where(
            namesrv_addr=self.namesrv_addr or "",
            broker_addr=self.broker_addr,
            paths={**self.paths, str(self.out): "<out>"},
            ids=names,
            foreign=self.foreign,
            foreign_topics=self.foreign_topics,
        )


Hook = Callable[[Target], None]


@dataclass(frozen=True)
class Case:
    """One matrix row: `runs` (argument templates, one mqadmin call each, outputs joined)."""

    row: str
    runs: Sequence[Sequence[str]]
    expect: Sequence[str]
    """What Apache's output must contain (templates too): the proof the command did its job."""
    rules: Sequence[Rule] = ()
    missing: str | None = None
    before: Hook | None = None
    after: Hook | None = None
    files: Sequence[str] = ()
    """Files the command writes under `{out}`, compared like its output (after the output)."""
    file_rules: Sequence[Rule] = ()
    until: str | None = None
    """For a command that never ends: the output line prefix that completes its first report
    (the process is killed then), or "monitor" for startMonitoring's report in the client log."""
    acl: bool = False
    """Runs against the ACL-enabled brokers (`mqadmin_acl`), not the shared clusters."""
    settle: Callable[[Mapping[str, Target]], None] | None = None
    """Waits, before both runs, until what the command shows can be the same on both sides."""

    @property
    def command(self) -> str:
        """The mqadmin command the row is about (a row may add a variant: "topicList -c")."""
        return self.row.split()[0]

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "-", self.row).strip("-")


# -- hooks: state a case needs, done over rmq's own remoting client ------------------------


def _namesrv(target: Target, code: int, header: object, body: bytes | None = None) -> bytes:
    assert target.namesrv_addr is not None
    with RemotingSession() as session:
        response = session.invoke(target.namesrv_addr, code, header, body=body)
    assert response.code == 0, f"{target.kind}: request {code} answered {response.code}"
    return bytes(response.body or b"")


def foreign_names(target: Target) -> tuple[frozenset[str], int]:
    """The topics (name server) and groups (broker) other conformance modules left on the
    target's cluster, and how many of them are topics."""
    if target.namesrv_addr is None:
        return frozenset(), 0
    body = _namesrv(target, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None)
    topics = {name for name in TopicList.decode(body).topic_list if is_foreign(name)}
    with RemotingSession() as session:
        response = session.invoke(target.broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert response.code == 0, f"{target.kind}: GET_ALL_SUBSCRIPTIONGROUP_CONFIG failed"
    table = SubscriptionGroupWrapper.decode(response.body or b"").subscription_group_table
    groups = {name for name in table if is_foreign(name)}
    groups |= {re.sub(r"^%(?:RETRY|DLQ)%", "", name) for name in topics if name.startswith("%")}
    return frozenset(topics | groups), len(topics)


def wipe_write_perm(target: Target) -> None:
    _namesrv(
        target,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        WipeWritePermOfBrokerRequestHeader(broker_name=BROKER_NAME),
    )


def add_write_perm(target: Target) -> None:
    _namesrv(
        target,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        AddWritePermOfBrokerRequestHeader(broker_name=BROKER_NAME),
    )


def put_kv_to_delete(target: Target) -> None:
    _namesrv(
        target,
        RequestCode.PUT_KV_CONFIG,
        PutKVConfigRequestHeader(namespace="MqaNamespace", key="MqaDeleteKey", value="gone"),
    )


def restore_product_env(target: Target) -> None:
    _namesrv(target, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"productEnvName=center\n")


TPS_WINDOWS = (10, 60, 600)
WINDOW_MARGIN_S = 4


def _uptime_s(target: Target) -> float:
    with RemotingSession() as session:
        response = session.invoke(target.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert response.code == 0, f"{target.kind}: GET_BROKER_RUNTIME_INFO failed"
    boot = int(KVTable.decode(response.body or b"").table["bootTimestamp"])
    return time.time() - boot / 1000


def same_tps_windows(targets: Mapping[str, Target]) -> None:
    """A broker reports a TPS window (10, 60, 600 s) once it holds that many seconds of
    samples, so the number of windows brokerStatus shows depends on the broker's uptime, and
    the two brokers were started seconds apart: wait until both are on the same side of every
    window's boundary, a few seconds clear of it (at most about the gap between their starts)."""
    deadline = time.monotonic() + 120
    while True:
        uptimes = [_uptime_s(target) for target in targets.values()]
        sides = {tuple(uptime > window + 1 for window in TPS_WINDOWS) for uptime in uptimes}
        clear = all(
            abs(uptime - (window + 1)) > WINDOW_MARGIN_S
            for uptime in uptimes
            for window in TPS_WINDOWS
        )
        if len(sides) == 1 and clear:
            return
        assert time.monotonic() < deadline, f"broker uptimes {uptimes} never settled"
        time.sleep(0.5)


def own_topic_count(text: str, where: Where) -> str:
    """wipeWritePerm / addWritePerm print how many topics of the broker they changed, which
    counts the topics other conformance modules left: their number (`Where.foreign_topics`,
    from the name server's topic list) is subtracted, the rest must match."""
    own = lambda m: f"OK, {int(m.group(1)) - where.foreign_topics} own"  # noqa: E731
    return re.sub(r"OK, (\d+)", own, text)


# -- the cases ----------------------------------------------------------------------------

MESSAGE_RULES = (times, commitlog_offsets)
PRINT_ALL = ("-p", "true", "-d", "true", "-f", "true")


def _missing(*codes: str) -> str:
    named = [f"{name} ({int(RequestCode[name])})" for name in codes]
    return "missing " + ", ".join(named) + " on rmq's broker"


CASES: list[Case] = [
    Case(
        "updateTopic",
        [["updateTopic", "-c", "{cluster}", "-t", "MqaUpdateTopic", "-r", "3", "-w", "3"]],
        ["create topic to {broker} success.", "topicName=MqaUpdateTopic, readQueueNums=3"],
    ),
    Case(
        "deleteTopic",
        [["deleteTopic", "-c", "{cluster}", "-t", "MqaDeleteTopic"]],
        ["delete topic [MqaDeleteTopic] from NameServer success."],
    ),
    Case(
        "updateSubGroup",
        [["updateSubGroup", "-c", "{cluster}", "-g", "MqaNewGroup", "-r", "5", "-q", "2"]],
        ["create subscription group to {broker} success.", "retryQueueNums=2, retryMaxTimes=5"],
    ),
    Case(
        "deleteSubGroup",
        [["deleteSubGroup", "-c", "{cluster}", "-g", "MqaDeleteGroup"]],
        ["delete subscription group [MqaDeleteGroup] from broker [{broker}] in cluster"],
    ),
    Case(
        "updateBrokerConfig",
        [["updateBrokerConfig", "-c", "{cluster}", "-k", "brokerPermission", "-v", "6"]],
        ["update broker config success, {broker}"],
    ),
    Case(
        "updateTopicPerm",
        [["updateTopicPerm", "-c", "{cluster}", "-t", "MqaPermTopic", "-p", "4"]],
        ["update topic perm from 6 to 4 in {broker} success."],
    ),
    Case(
        "topicRoute",
        [["topicRoute", "-t", TOPIC], ["topicRoute", "-t", TOPIC, "-l"]],
        ['"readQueueNums":4', "Total:"],
    ),
    Case("topicStatus", [["topicStatus", "-t", TOPIC]], ["broker-a", "#Max Offset"], [times]),
    Case("topicClusterList", [["topicClusterList", "-t", TOPIC]], [CLUSTER]),
    Case(
        "queryMsgById",
        [["queryMsgById", "-i", "{offmsg0}"]],
        ["Keys:                [MqaKey-0]", "MessageTrack [consumerGroup=MqaGroup"],
        MESSAGE_RULES,
        missing=_missing("QUERY_TOPIC_CONSUME_BY_WHO"),
    ),
    Case(
        "queryMsgByKey",
        [["queryMsgByKey", "-t", TOPIC, "-k", "MqaKey-1"]],
        ["{msg1}"],
    ),
    Case(
        "queryMsgByUniqueKey",
        [["queryMsgByUniqueKey", "-t", TOPIC, "-i", "{msg2}"]],
        ["Keys:                [MqaKey-2]", "MessageTrack [consumerGroup=MqaGroup"],
        MESSAGE_RULES,
        missing=_missing("QUERY_TOPIC_CONSUME_BY_WHO"),
    ),
    Case(
        "queryMsgByOffset",
        [["queryMsgByOffset", "-t", TOPIC, "-b", BROKER_NAME, "-i", "1", "-o", "1"]],
        ["Keys:                [MqaKey-5]", "MessageTrack [consumerGroup=MqaGroup"],
        MESSAGE_RULES,
        missing=_missing("QUERY_TOPIC_CONSUME_BY_WHO"),
    ),
    Case(
        "queryMsgTraceById",
        [["queryMsgTraceById", "-i", "{traced}"]],
        ["Pub        MqaTraceProducerGroup", "success"],
        [times, elapsed],
    ),
    Case(
        "printMsg",
        [["printMsg", "-t", TOPIC]],
        ["BODY: mqadmin-0", "BODY: mqadmin-7"],
        MESSAGE_RULES,
    ),
    Case(
        "printMsgByQueue",
        [["printMsgByQueue", "-t", TOPIC, "-a", BROKER_NAME, "-i", "0", *PRINT_ALL]],
        ["KEYS=MqaKey-4", "BODY: mqadmin-4", "TagA"],
        MESSAGE_RULES,
    ),
    Case(
        "sendMsgStatus",
        [["sendMsgStatus", "-b", BROKER_NAME, "-s", "64", "-c", "3"]],
        ["sendStatus=SEND_OK"],
        [elapsed],
    ),
    Case(
        "brokerConsumeStats",
        [["brokerConsumeStats", "-b", "{broker}"]],
        ["MqaGroup", "Diff Total: 0"],
        [times, foreign],
        missing=_missing("GET_BROKER_CONSUME_STATS"),
    ),
    Case(
        "producerConnection",
        [["producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC]],
        ["@MqaProducer", "JAVA"],
    ),
    Case(
        "consumerConnection",
        [["consumerConnection", "-g", GROUP]],
        ["@MqaConsumer", "%RETRY%MqaGroup", "CONSUME_FROM_FIRST_OFFSET"],
    ),
    Case(
        "consumerProgress",
        [["consumerProgress", "-g", GROUP], ["consumerProgress"]],
        ["%RETRY%MqaGroup", "Diff Total: 0", "PUSH   CLUSTERING"],
        [times, rates, foreign],
    ),
    Case(
        "consumerStatus",
        [["consumerStatus", "-g", GROUP]],
        ["@MqaConsumer", "Rebalance OK"],
        [times],
        missing=_missing("GET_CONSUMER_RUNNING_INFO"),
    ),
    Case(
        "cloneGroupOffset",
        [["cloneGroupOffset", "-s", GROUP, "-d", "MqaCloneGroup", "-t", TOPIC]],
        ["clone group offset success. srcGroup[MqaGroup], destGroup=[MqaCloneGroup]"],
    ),
    Case(
        "producer",
        [["producer", "-b", "{broker}"]],
        ["producer group (MqaProducerGroup)"],
        [times, unordered, foreign],
        missing=_missing("GET_ALL_PRODUCER_INFO"),
    ),
    Case("clusterList", [["clusterList"]], ["DefaultCluster    broker-a"], [cluster_load]),
    Case("topicList", [["topicList"]], [TOPIC, "%RETRY%MqaGroup"], [unordered, foreign]),
    Case(
        "topicList -c",
        [["topicList", "-c"]],
        ["MqaTopic                                                          MqaGroup"],
        [unordered, foreign],
        missing=_missing("QUERY_TOPIC_CONSUME_BY_WHO"),
    ),
    Case(
        "updateKvConfig",
        [["updateKvConfig", "-s", "MqaNamespace", "-k", "MqaKey", "-v", "MqaValue"]],
        ["create or update kv config to namespace success."],
    ),
    Case(
        "deleteKvConfig",
        [["deleteKvConfig", "-s", "MqaNamespace", "-k", "MqaDeleteKey"]],
        ["delete kv config from namespace success."],
        before=put_kv_to_delete,
    ),
    Case(
        "wipeWritePerm",
        [["wipeWritePerm", "-b", BROKER_NAME]],
        ["wipe write perm of broker[broker-a] in name server[", "] OK, "],
        [own_topic_count],
        after=add_write_perm,
    ),
    Case(
        "addWritePerm",
        [["addWritePerm", "-b", BROKER_NAME]],
        ["add write perm of broker[broker-a] in name server[", "] OK, "],
        [own_topic_count],
        before=wipe_write_perm,
    ),
    Case(
        "resetOffsetByTime",
        [["resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "now"]],
        ["rollback consumer offset by specified group[MqaGroup]", "broker-a"],
        [unordered],
        missing=_missing("INVOKE_BROKER_TO_RESET_OFFSET"),
    ),
    Case(
        "skipAccumulatedMessage",
        [["skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC]],
        ["#brokerName", "broker-a"],
        [unordered],
        missing=_missing("INVOKE_BROKER_TO_RESET_OFFSET"),
    ),
    Case(
        "updateOrderConf",
        [
            ["updateOrderConf", "-t", "MqaOrderTopic", "-v", "broker-a:4", "-m", "put"],
            ["updateOrderConf", "-t", "MqaOrderTopic", "-m", "get"],
            ["updateOrderConf", "-t", "MqaOrderTopic", "-m", "delete"],
        ],
        ["update orderConf success.", "orderConf=[broker-a:4]", "delete orderConf success."],
    ),
    Case(
        "cleanExpiredCQ",
        [["cleanExpiredCQ", "-c", "{cluster}"]],
        ["success"],
        missing=_missing("CLEAN_EXPIRED_CONSUMEQUEUE"),
    ),
    Case(
        "deleteExpiredCommitLog",
        [["deleteExpiredCommitLog", "-c", "{cluster}"]],
        ["success"],
        missing=_missing("DELETE_EXPIRED_COMMITLOG"),
    ),
    Case(
        "cleanUnusedTopic",
        [["cleanUnusedTopic", "-c", "{cluster}"]],
        ["success"],
        missing=_missing("CLEAN_UNUSED_TOPIC"),
    ),
    Case(
        "startMonitoring",
        [["startMonitoring"]],
        ["beginRound", "UndoneMsgs [consumerGroup=MqaGroup", "endRound"],
        [foreign, unordered],
        until="monitor",
    ),
    Case(
        "statsAll",
        [["statsAll", "-t", TOPIC]],
        ["MqaTopic                                                          MqaGroup"],
        [rates],
        missing=_missing("QUERY_TOPIC_CONSUME_BY_WHO", "VIEW_BROKER_STATS_DATA"),
    ),
    Case(
        "allocateMQ",
        [["allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"]],
        ['"10.0.0.1":[{"brokerName":"broker-a","queueId":0'],
    ),
    Case(
        "checkMsgSendRT",
        [["checkMsgSendRT", "-t", SEND_TOPIC, "-a", "3", "-s", "64"]],
        ["broker-a                          0     true", "Avg RT:"],
        [elapsed],
    ),
    Case(
        "clusterRT",
        [["clusterRT", "-a", "3", "-s", "64", "-i", "60"]],
        ["DefaultCluster            broker-a"],
        [elapsed],
        until=CLUSTER,
    ),
    # late in the run: brokerStatus waits until both brokers show the same TPS windows
    Case(
        "brokerStatus",
        [["brokerStatus", "-b", "{broker}"]],
        ["brokerVersionDesc", "msgPutTotalTodayNow"],
        [runtime_values],
        settle=same_tps_windows,
    ),
    Case(
        "getNamesrvConfig",
        [["getNamesrvConfig"]],
        ["kvConfigPath", "orderMessageEnable"],
        [unordered, rmq_only_keys],
    ),
    Case(
        "updateNamesrvConfig",
        [["updateNamesrvConfig", "-k", "productEnvName", "-v", "MqaEnv"]],
        ["update name server config success!", "productEnvName : MqaEnv"],
        after=restore_product_env,
    ),
    Case(
        "getBrokerConfig",
        [["getBrokerConfig", "-b", "{broker}"]],
        ["brokerClusterName", "messageDelayLevel"],
        [unordered, rmq_only_keys],
    ),
    Case(
        "getConsumerConfig",
        [["getConsumerConfig", "-g", GROUP]],
        ["groupName                               =  MqaGroup"],
    ),
    Case(
        "queryCq",
        [["queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-c", "2"]],
        ["ConsumeQueueData{physicOffset="],
        [commitlog_offsets],
        missing=_missing("QUERY_CONSUME_QUEUE"),
    ),
    Case(
        "sendMessage",
        [
            [
                *("sendMessage", "-t", SEND_TOPIC, "-p", "hello", "-k", "MqaSendKey"),
                *("-c", "TagS", "-b", BROKER_NAME, "-i", "0"),
            ]
        ],
        ["SEND_OK"],
    ),
    Case(
        "consumeMessage",
        [["consumeMessage", "-t", TOPIC, "-b", BROKER_NAME, "-i", "1", "-o", "0", "-c", "2"]],
        ["Consume ok", "BODY: mqadmin-5"],
        MESSAGE_RULES,
    ),
    Case(
        "exportMetadata",
        [["exportMetadata", "-c", "{cluster}", "-f", "{out}"]],
        ["metadata.json success"],
        files=["metadata.json"],
        file_rules=[json_document, times],
        missing=_missing("GET_SYSTEM_TOPIC_LIST_FROM_BROKER"),
    ),
    Case(
        "exportConfigs",
        [["exportConfigs", "-c", "{cluster}", "-f", "{out}"]],
        ["configs.json success"],
        files=["configs.json"],
        file_rules=[json_document, rmq_only_keys],
    ),
    Case(
        "exportMetrics",
        [["exportMetrics", "-c", "{cluster}", "-f", "{out}"]],
        ["metrics.json success"],
        files=["metrics.json"],
        file_rules=[json_document],
        missing=_missing("GET_SYSTEM_TOPIC_LIST_FROM_BROKER", "VIEW_BROKER_STATS_DATA"),
    ),
]

ACL_PERMS = ["-i", "DENY", "-u", "SUB", "-t", "MqaTopic=PUB", "-g", "MqaGroup=SUB", "-m", "false"]

CASES += [
    Case(
        "updateAclConfig",
        [
            [
                "updateAclConfig",
                "-b",
                "{broker}",
                "-a",
                "MqaAccessKey",
                "-s",
                "MqaSecret1",
                *ACL_PERMS,
            ]
        ],
        ["create or update plain access config to {broker} success.", "PlainAccessConfig@"],
        [object_ids],
        missing=_missing("UPDATE_AND_CREATE_ACL_CONFIG"),
        acl=True,
    ),
    Case(
        "deleteAclConfig",
        [
            ["updateAclConfig", "-b", "{broker}", "-a", "MqaDeleteKey", "-s", "MqaSecret2"],
            ["deleteAclConfig", "-b", "{broker}", "-a", "MqaDeleteKey"],
        ],
        ["delete plain access config account from {broker} success."],
        [object_ids],
        missing=_missing("UPDATE_AND_CREATE_ACL_CONFIG", "DELETE_ACL_CONFIG"),
        acl=True,
    ),
    Case(
        "clusterAclConfigVersion",
        [["clusterAclConfigVersion", "-b", "{broker}"]],
        ["MqaAclCluster", "broker-a"],
        [times],
        missing=_missing("GET_BROKER_CLUSTER_ACL_INFO"),
        acl=True,
    ),
    Case(
        "updateGlobalWhiteAddr",
        [["updateGlobalWhiteAddr", "-b", "{broker}", "-g", "127.0.0.1,10.10.*.*"]],
        ["update global white remote addresses to {broker} success."],
        missing=_missing("UPDATE_GLOBAL_WHITE_ADDRS_CONFIG"),
        acl=True,
    ),
]
