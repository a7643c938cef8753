"""Java client scenarios of the producer side: DefaultMQProducer sends of every kind,
TransactionMQProducer, request-reply, message trace and the wire options of the client."""

from __future__ import annotations

from collections.abc import Callable

from tests.conformance.scenarios import Result, Scenario, received_all

Check = Callable[[Result], None]


def every(*checks: Check) -> Check:
    def check(result: Result) -> None:
        for one in checks:
            one(result)

    return check


def all_sent_ok(count: int) -> Check:
    def check(result: Result) -> None:
        assert result["statuses"] == ["SEND_OK"] * count, result["statuses"]

    return check


def flags(*names: str) -> Check:
    """Checks: each named result key is true."""

    def check(result: Result) -> None:
        false = [name for name in names if result.get(name) is not True]
        assert not false, f"false: {false}"

    return check


def _async(result: Result) -> None:
    assert result["callbacks"] == 20, f"{result['callbacks']} of 20 callbacks completed"
    assert result["outcomes"] == ["SEND_OK"] * 20, result["outcomes"]


def _batch(result: Result) -> None:
    assert result["splitBatches"] >= 3, "the large list was not split into several batches"
    assert result["idsPerBatch"][0] == 10, "the first batch's send result names 10 ids"
    assert not any(m["sysFlagCompressed"] for m in result["messages"]), "batch compressed"


def _orderly(result: Result) -> None:
    for key, placement in result["perKey"].items():
        assert len(placement["queues"]) == 1, f"{key} spread over {placement['queues']}"
        assert placement["inSendOrder"], f"{key} not in send order"


def _large(result: Result) -> None:
    compressed = {m["keys"]: m["sysFlagCompressed"] for m in result["messages"]}
    assert compressed == {
        "large-4095": False,
        "large-4096": True,
        "large-5000": True,
        "large-1572864r": True,
        "large-3145728": True,
    }, compressed


def _keys(result: Result) -> None:
    assert len(result["queryShared"]) == 3, "queryMessage(shared) did not find all three"
    assert len(result["queryOwn"]) == 1, "queryMessage(kp-0) did not find exactly one"
    props = result["messages"][0]["properties"]
    assert len(props) == 42 and props["emoji"] == "🚀🎉", props
    assert result["queryShared"] == result["messages"], "query by key differs from consumer"


def _transactions(result: Result) -> None:
    keys = sorted(m["keys"] for m in result["messages"])
    assert keys == ["commit-0", "commit-1", "unknown-commit-0", "unknown-commit-1"], keys
    assert result["checkedBack"] == [
        "unknown-commit-0",
        "unknown-commit-1",
        "unknown-rollback-0",
        "unknown-rollback-1",
    ], f"checked back: {result['checkedBack']}"


def _replies(result: Result) -> None:
    assert not result["failures"] and not result["responderErrors"], result
    assert result["replies"] == {
        f"request-{i}": {
            "topic": "DefaultCluster_REPLY_TOPIC",
            "body": f"reply to request-{i}",
            "properties": {"answers": f"request-{i}"},
        }
        for i in range(3)
    }, result["replies"]


def _trace(result: Result) -> None:
    assert result["consumed"] == 3, f"the traced consumer got {result['consumed']} of 3"
    assert result["traceTypes"] == {"Pub": 3, "SubBefore": 3, "SubAfter": 3}, result
    assert result["traceMessageTopics"] == ["RMQ_SYS_TRACE_TOPIC"], result


def wire(codes: list[int], serialize: str, port_below: int, vip: bool) -> Check:
    """Checks of WireScenarios.send: the send codes, the header serialization both ways,
    how far below listenPort the sends went (2: the fast port) and the client's vip flag."""

    def check(result: Result) -> None:
        assert result["sendCodes"] == codes, f"sent with {result['sendCodes']}"
        assert result["requestSerializeTypes"] == [serialize], result["requestSerializeTypes"]
        assert result["responseSerializeTypes"] == [serialize], result["responseSerializeTypes"]
        assert result["sendPortsBelowListenPort"] == [port_below], result
        assert result["vipChannelEnabled"] is vip, result["vipChannelEnabled"]
        assert result["traceOn"] is True and result["regionId"] == "DefaultRegion", result

    return check


def _wire_topic(name: str) -> dict[str, object]:
    return {"batch": 3, "topics": {name: 2}, "topic": name}


SCENARIOS: list[Scenario] = [
    Scenario(
        "producer sync send",
        "ProducerScenarios.sync",
        {"count": 20, "topics": {"ConfSync": 4}, "topic": "ConfSync"},
        received_all(20),
    ),
    Scenario(
        "producer async send",
        "ProducerScenarios.async",
        {"count": 20, "topics": {"ConfAsync": 4}, "topic": "ConfAsync"},
        every(received_all(20), _async),
    ),
    Scenario(
        "producer oneway send",
        "ProducerScenarios.oneway",
        {"count": 20, "topics": {"ConfOneway": 4}, "topic": "ConfOneway"},
        received_all(20),
    ),
    Scenario(
        "producer batch send (one batch and a list split into batches)",
        "ProducerScenarios.batch",
        {"count": 10, "large": 40, "topics": {"ConfBatch": 4}, "topic": "ConfBatch"},
        every(received_all(50), _batch),
    ),
    Scenario(
        "producer orderly send (MessageQueueSelector)",
        "ProducerScenarios.orderly",
        {"perKey": 10, "topics": {"ConfOrderly": 4}, "topic": "ConfOrderly"},
        every(received_all(30), all_sent_ok(30), _orderly),
    ),
    Scenario(
        "producer delay level 2",
        "ProducerScenarios.delay",
        {"level": 2, "delaySeconds": 2, "topics": {"ConfDelay": 2}, "topic": "ConfDelay"},
        every(
            received_all(2),
            flags("plainDelivered", "plainBeforeDelayed", "delayedDelivered", "delayedNotEarly"),
        ),
    ),
    Scenario(
        "producer large and compressed bodies",
        "ProducerLookups.large",
        {"topics": {"ConfLarge": 2}, "topic": "ConfLarge"},
        every(received_all(5), all_sent_ok(5), flags("intact"), _large),
    ),
    Scenario(
        "producer keys and UTF-8 properties (consumer, query by key, view by id)",
        "ProducerLookups.keysAndProperties",
        {"count": 3, "properties": 40, "topics": {"ConfKeys": 2}, "topic": "ConfKeys"},
        every(
            received_all(3),
            flags("consumerSeesSendIds", "viewByOffsetIdMatches", "queryByUniqueIdMatches"),
            _keys,
        ),
    ),
    Scenario(
        "transactional producer: commit, rollback, unknown then check-back",
        "TransactionScenarios.outcomes",
        {"perOutcome": 2, "topics": {"ConfTx": 2}, "topic": "ConfTx"},
        every(received_all(4), all_sent_ok(8), flags("unknownCheckedBack"), _transactions),
    ),
    Scenario(
        "producer request-reply",
        "RequestScenarios.requestReply",
        {"count": 3, "timeout": 15, "topics": {"ConfRequest": 2}, "topic": "ConfRequest"},
        _replies,
    ),
    Scenario(
        "message trace (enableMsgTrace producer and consumer)",
        "TraceScenarios.pubSub",
        {"count": 3, "topics": {"ConfTraced": 2}, "topic": "ConfTraced"},
        _trace,
    ),
    Scenario(
        "wire: client defaults (JSON headers, SEND_MESSAGE_V2, main port)",
        "WireScenarios.send",
        _wire_topic("ConfWireDefault"),
        every(received_all(4), all_sent_ok(2), wire([310, 320], "JSON", 0, vip=False)),
    ),
    Scenario(
        "wire: ROCKETMQ binary headers (rocketmq.serialize.type)",
        "WireScenarios.send",
        _wire_topic("ConfWireBinary"),
        every(received_all(4), all_sent_ok(2), wire([310, 320], "ROCKETMQ", 0, vip=False)),
        props={"rocketmq.serialize.type": "ROCKETMQ"},
    ),
    Scenario(
        "wire: SEND_MESSAGE V1 header (sendSmartMsg=false)",
        "WireScenarios.send",
        _wire_topic("ConfWireV1"),
        every(received_all(4), all_sent_ok(2), wire([10, 320], "JSON", 0, vip=False)),
        props={"org.apache.rocketmq.client.sendSmartMsg": "false"},
    ),
    Scenario(
        "wire: VIP channel (vipChannelEnabled, fast port listenPort - 2)",
        "WireScenarios.send",
        {**_wire_topic("ConfWireVip"), "vipChannel": True},
        every(received_all(4), all_sent_ok(2), wire([310, 320], "JSON", 2, vip=True)),
    ),
]
