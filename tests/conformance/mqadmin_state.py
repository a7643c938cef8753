"""The two sides of an mqadmin comparison (`Target`) and the state hooks cases run on them.

A `Target` is one cluster as mqadmin sees it: the addresses it runs against, where its output
files go, what the set-up reported (message ids, client ids) and the names other conformance
modules left on the cluster; `where()` turns it into the facts the normalisation rules need
(tests/conformance/mqadmin_normalise.py).  The hooks prepare or restore state around a
command over rmq's own remoting client (tests/procs.py `RemotingSession`), the same way on
both clusters.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmq.remoting.bodies import (
    KVTable,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
)
from rmq.remoting.codes import RequestCode
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    CreateTopicRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from tests.conformance.clusters import BROKER_NAME, CLUSTER
from tests.conformance.mqadmin_normalise import Where, is_foreign
from tests.procs import RemotingSession


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
    tools_home: Path | None = None
    """mqadmin's ROCKETMQ_HOME when not the distribution's (its `conf/tools.yml` signs)."""
    foreign: frozenset[str] = frozenset()
    foreign_topics: int = 0
    foreign_groups: int = 0
    foreign_broker_topics: int = 0

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
            foreign_groups=self.foreign_groups,
            foreign_broker_topics=self.foreign_broker_topics,
        )


Hook = Callable[[Target], None]


def _namesrv(target: Target, code: int, header: object, body: bytes | None = None) -> bytes:
    assert target.namesrv_addr is not None
    with RemotingSession() as session:
        response = session.invoke(target.namesrv_addr, code, header, body=body)
    assert response.code == 0, f"{target.kind}: request {code} answered {response.code}"
    return bytes(response.body or b"")


def foreign_names(target: Target) -> tuple[frozenset[str], int, int, int]:
    """The topics (name server) and groups (broker) other conformance modules left on the
    target's cluster, how many of them are topics, how many subscription groups of the broker
    they are, and how many topics of the broker's own table."""
    if target.namesrv_addr is None:
        return frozenset(), 0, 0, 0
    body = _namesrv(target, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None)
    topics = {name for name in TopicList.decode(body).topic_list if is_foreign(name)}
    with RemotingSession() as session:
        response = session.invoke(target.broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        topic_table = session.invoke(target.broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert response.code == 0, f"{target.kind}: GET_ALL_SUBSCRIPTIONGROUP_CONFIG failed"
    assert topic_table.code == 0, f"{target.kind}: GET_ALL_TOPIC_CONFIG failed"
    broker_topics = TopicConfigSerializeWrapper.decode(topic_table.body or b"").topic_config_table
    # exportMetrics counts the user topics (getUserTopicConfig): retry and DLQ topics left out
    foreign_broker_topics = sum(
        1
        for name in broker_topics
        if is_foreign(name) and not name.startswith(("%RETRY%", "%DLQ%"))
    )
    table = SubscriptionGroupWrapper.decode(response.body or b"").subscription_group_table
    groups = {name for name in table if is_foreign(name)}
    subscription_groups = len(groups)
    groups |= {re.sub(r"^%(?:RETRY|DLQ)%", "", name) for name in topics if name.startswith("%")}
    return frozenset(topics | groups), len(topics), subscription_groups, foreign_broker_topics


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


def restore_perm_topic(target: Target) -> None:
    """MqaPermTopic back to its set-up perm (6), so that each side's updateTopicPerm changes
    it from the same value."""
    header = CreateTopicRequestHeader(
        topic="MqaPermTopic",
        default_topic="TBW102",
        read_queue_nums=2,
        write_queue_nums=2,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
    )
    with RemotingSession() as session:
        response = session.invoke(target.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == 0, f"{target.kind}: UPDATE_AND_CREATE_TOPIC failed"


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
