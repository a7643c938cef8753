"""Every mqadmin command of Apache's 4.9.8 tools jar as a case: the arguments it runs with, the
state it needs, what its Apache run must show, the normalisation rules its output needs and,
where rmq's servers do not serve what it needs yet, the expected-failure reason.

`SETUP` is what `rmq.conformance.MqAdminClients` builds on both clusters before the first
command (tests/conformance/mqadmin_run.py): topics, groups, eight messages with keys and tags
on the four queues of `MqaTopic`, one message sent with trace on, a producer that stays
connected and a push consumer that has consumed everything (one message through its retry
topic).  Cases that change state work on topics and groups of their own, so their order does
not matter, and both clusters always get the same commands; state a case needs beyond that is
made by its hooks (tests/conformance/mqadmin_state.py).

Arguments are templates: `{broker}` (the broker's address), `{cluster}`, `{out}` (a fresh
directory for files the command writes), `{msgN}` / `{offmsgN}` (unique and offset id of the
N-th message sent), `{traced}`; `-n <name server>` is added after the command name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rmq.remoting.codes import RequestCode
from tests.conformance.clusters import BROKER_NAME, CLUSTER
from tests.conformance.mqadmin_acl import same_acl_version
from tests.conformance.mqadmin_normalise import (
    Rule,
    cluster_load,
    commitlog_offsets,
    elapsed,
    failure,
    foreign,
    json_document,
    metric_rates,
    monitor_own_group,
    object_ids,
    own_diff_total,
    own_group_size,
    own_topic_count,
    rates,
    rmq_only_keys,
    runtime_values,
    send_offsets,
    times,
    trace_reader_lag,
    unordered,
)
from tests.conformance.mqadmin_state import (
    Hook,
    Target,
    add_write_perm,
    put_kv_to_delete,
    restore_perm_topic,
    restore_product_env,
    same_tps_windows,
    wipe_write_perm,
)

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
    fails: bool = False
    """Apache's run fails: `expect` is what its failure must show (compared after `failure`)."""
    deliberate: Sequence[str] = ()
    """Where `rmq mqadmin` deliberately differs from Apache's mqadmin (docs/spec-notes.md):
    what its output must show instead; the column's cell is then `different (deliberate)`."""

    @property
    def command(self) -> str:
        """The mqadmin command the row is about (a row may add a variant: "topicList -c")."""
        return self.row.split()[0]

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "-", self.row).strip("-")


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
        after=restore_perm_topic,
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
    ),
    Case(
        "queryMsgById of a unique key",
        [["queryMsgById", "-i", "{msg0}"]],
        ["CODE: 208  DESC: query message by id finished, but no message."],
        [failure],
        fails=True,
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
    ),
    Case(
        "queryMsgByOffset",
        [["queryMsgByOffset", "-t", TOPIC, "-b", BROKER_NAME, "-i", "1", "-o", "1"]],
        ["Keys:                [MqaKey-5]", "MessageTrack [consumerGroup=MqaGroup"],
        MESSAGE_RULES,
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
        [elapsed, send_offsets],
    ),
    Case(
        "brokerConsumeStats",
        [["brokerConsumeStats", "-b", "{broker}"]],
        [f"{TOPIC:<64}  {GROUP}", "Diff Total:"],
        [times, own_diff_total, foreign],
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
        [times, rates, foreign, trace_reader_lag],
    ),
    Case(
        "consumerStatus",
        [["consumerStatus", "-g", GROUP]],
        ["@MqaConsumer", "Rebalance OK"],
        [times],
    ),
    Case(
        "cloneGroupOffset",
        [["cloneGroupOffset", "-s", GROUP, "-d", "MqaCloneGroup", "-t", TOPIC]],
        ["clone group offset success. srcGroup[MqaGroup], destGroup=[MqaCloneGroup]"],
    ),
    Case(
        "consumerProgress -g of a cloned group",
        [
            ["cloneGroupOffset", "-s", GROUP, "-d", "MqaProgressClone", "-t", TOPIC],
            ["consumerProgress", "-g", "MqaProgressClone"],
        ],
        ["CODE: 17  DESC: No topic route info in name server for the topic: %RETRY%MqaProgress"],
        [failure, times],
        fails=True,
        deliberate=["Diff Total: 0"],
    ),
    Case(
        "producer",
        [["producer", "-b", "{broker}"]],
        ["producer group (MqaProducerGroup)"],
        [times, unordered, foreign],
    ),
    Case("clusterList", [["clusterList"]], ["DefaultCluster    broker-a"], [cluster_load]),
    Case("topicList", [["topicList"]], [TOPIC, "%RETRY%MqaGroup"], [unordered, foreign]),
    Case(
        "topicList -c",
        [["topicList", "-c"]],
        ["MqaTopic                                                          MqaGroup"],
        [unordered, foreign],
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
    ),
    Case(
        "skipAccumulatedMessage",
        [["skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC]],
        ["#brokerName", "broker-a"],
        [unordered],
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
    ),
    Case(
        "deleteExpiredCommitLog",
        [["deleteExpiredCommitLog", "-c", "{cluster}"]],
        ["success"],
    ),
    Case(
        "cleanUnusedTopic",
        [["cleanUnusedTopic", "-c", "{cluster}"]],
        ["success"],
    ),
    Case(
        "startMonitoring",
        [["startMonitoring"]],
        ["beginRound", "UndoneMsgs [consumerGroup=MqaGroup, topic=MqaTopic", "endRound"],
        [foreign, monitor_own_group, unordered],
        until="monitor",
    ),
    Case(
        "statsAll",
        [["statsAll", "-t", TOPIC]],
        ["MqaTopic                                                          MqaGroup"],
        [rates],
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
        file_rules=[json_document, own_group_size, metric_rates],
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
        acl=True,
    ),
    Case(
        "clusterAclConfigVersion",
        [["clusterAclConfigVersion", "-b", "{broker}"]],
        ["MqaAclCluster", "broker-a"],
        [times],
        acl=True,
        settle=same_acl_version,
    ),
    Case(
        "updateGlobalWhiteAddr",
        [["updateGlobalWhiteAddr", "-b", "{broker}", "-g", "127.0.0.1,10.10.*.*"]],
        ["update global white remote addresses to {broker} success."],
        acl=True,
    ),
]
