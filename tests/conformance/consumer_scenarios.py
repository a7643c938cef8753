"""Java client scenarios of the consumer side: push consumers (concurrently, orderly,
clustering, broadcasting, filters, where to start, retries to the DLQ), the lite pull consumer
and the pull consumer.

The drivers are PushScenarios, PushOrderly, RetryScenarios, LiteScenarios and PullScenarios
in conformance/drivers (shared helpers in ConsumerSupport); every message they send is
numbered (`index` and `parity` properties, `key-<i>`, `body-<i>`), and results name messages
by index, so they are the same on any broker.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.conformance.scenarios import Result, Scenario


def _indexes(count: int, start: int = 0) -> list[int]:
    return list(range(start, start + count))


def _push_concurrently(result: Result) -> None:
    assert result["count"] == 20 and result["duplicates"] == 0, result
    assert result["heldAllQueues"] and result["denseOffsets"], result
    assert result["committedAll"] and sum(result["consumerOffsets"]) == 20, result
    assert all(m["reconsumeTimes"] == 0 for m in result["messages"])


def _push_orderly(result: Result) -> None:
    assert result["count"] == 40 and result.get("lockedQueues", 4) == 4, result
    assert not result["overlapped"], "two threads consumed one queue at once"
    assert result["perQueue"] == {str(q): list(range(q, 40, 4)) for q in range(4)}, result
    assert all(result["inOrder"].values()), result


def _orderly_clustering(result: Result) -> None:
    _push_orderly(result)
    assert result["splitAndLocked"] and result["lockedPerConsumer"] == [2, 2], result
    assert result["duplicates"] == 0, result
    assert not result["foreignLockGranted"], "the broker granted a lock another client holds"


def _clustering(result: Result) -> None:
    assert result["split"] and result["consumersInGroup"] == 2, result
    assert result["queuesHeld"] == [2, 2], result
    assert result["received"] == _indexes(20) and result["duplicates"] == 0, result
    assert result["countsPerConsumer"] == [10, 10], result
    # After one consumer left, the other holds every queue and resumes where it stopped.
    assert result["afterOneLeft"] == {"survivorHeldAll": True, "survivorReceived": _indexes(20, 20)}


def _broadcasting(result: Result) -> None:
    assert result["eachHeldAllQueues"], result
    assert result["received"] == [_indexes(20), _indexes(20)], result
    assert result["counts"] == [20, 20], "a broadcasting consumer got a message twice"


def _tags(result: Result) -> None:
    assert result["TagA || TagC"] == [i for i in range(30) if i % 3 != 1], result
    assert result["*"] == _indexes(30), result


def _sql92(result: Result) -> None:
    assert result["received"] == [i for i in range(20) if i > 5 and i % 2 == 0], result


FROM_WHERE = {
    "first": 20,
    "last": 20,
    "timestamp": 20,
    "broadcast-first": 20,
    "broadcast-last": 0,
    "broadcast-timestamp": 10,
    "between-broadcast-last": 10,
}
"""The consumers of the where-to-start scenario and what each receives of two batches of 10."""


def _from_where(result: Result) -> None:
    # A new clustering group on a queue whose first message is still in memory starts at
    # offset 0 whatever its ConsumeFromWhere (the broker answers QUERY_CONSUMER_OFFSET with 0);
    # broadcasting consumers keep offsets locally: last = the max offset when they start,
    # timestamp = SEARCH_OFFSET_BY_TIMESTAMP at the boundary between the batches.
    assert result["betweenHeldQueues"], result
    assert result["received"] == {
        name: _indexes(count, 20 - count) for name, count in FROM_WHERE.items()
    }, result["received"]
    # SEARCH_OFFSET_BY_TIMESTAMP answers the message stored nearest in time: just after batch 1
    # the last of batch 1, at the boundary the first of batch 2, after all the last message.
    assert all(result["searchOffsetNearest"].values()), result


def _dead_letter(slug: str, origin: str) -> Callable[[Result], None]:
    """Checks of a retries-until-the-DLQ scenario whose topic is Conf-<slug> and group
    CG-<slug>: 4 messages, maxReconsumeTimes 2; ORIGIN_MESSAGE_ID is the first delivery's
    `origin` id (the broker's offset message id when the broker builds the retry, the client's
    unique key when the orderly client sends it)."""

    def check(result: Result) -> None:
        assert result["deliveries"] == {str(i): [0, 1, 2] for i in range(4)}, result
        assert result["deliveredTopics"] == [f"Conf-{slug}"], result
        assert [m["keys"] for m in result["dlq"]] == [f"key-{i}" for i in range(4)], result
        for message in result["dlq"]:
            assert message["topic"] == f"%DLQ%CG-{slug}", message
            assert message["RETRY_TOPIC"] == f"Conf-{slug}", message
            assert message["originMessageId"] == origin, message
            assert message["uniqKey"] == "uniqKey", message
        assert result["dlqRoute"]["readQueueNums"] == 1, result["dlqRoute"]
        assert result.get("retriesInPlace", True), "orderly retries left their place"

    return check


def _dead_letter_scenario(name: str, driver: str, origin: str) -> Scenario:
    slug = name.replace(" ", "-")
    spec = {"topic": f"Conf-{slug}", "group": f"CG-{slug}"}
    return Scenario(name, driver, spec, _dead_letter(slug, origin))


def _lite_subscribe(result: Result) -> None:
    assert result["received"] == _indexes(20) and result["duplicates"] == 0, result
    assert result["committedAll"] and result["consumerOffsets"] == [5, 5, 5, 5], result
    assert result["resumed"] == _indexes(4, 20), result


def _lite_assign(result: Result) -> None:
    assert result["fetchMessageQueues"] == [0, 1], result
    assert result["perQueue"] == {"0": _indexes(6, 4), "1": [20, 21]}, result
    assert result["offsetForTimestamp"] == 5, result
    assert result["committedAll"] and result["consumerOffsets"] == [10, 12], result


def _pull(result: Result) -> None:
    def pulled(key: str, status: str, indexes: list[int], next_begin: int) -> None:
        got = result[key]
        assert (got["status"], got["indexes"], got["nextBeginOffset"]) == (
            status,
            indexes,
            next_begin,
        ), (key, got)

    assert result["queues"] == [0, 1, 2, 3], result
    pulled("all", "FOUND", _indexes(10), 10)
    assert (result["all"]["minOffset"], result["all"]["maxOffset"]) == (0, 10), result["all"]
    pulled("window", "FOUND", _indexes(4, 3), 7)
    pulled("tagA", "FOUND", list(range(0, 10, 2)), 10)
    pulled("tagAorB", "FOUND", _indexes(5, 5), 10)
    pulled("noMatch", "NO_MATCHED_MSG", [], 10)
    pulled("atEnd", "NO_NEW_MSG", [], 10)
    pulled("beyondEnd", "OFFSET_ILLEGAL", [], 10)
    pulled("emptyQueue", "NO_NEW_MSG", [], 0)
    pulled("emptyQueueBeyond", "OFFSET_ILLEGAL", [], 0)
    pulled("blocked", "FOUND", [100], 1)
    pulled("moreThanTheBrokerGives", "FOUND", _indexes(32, 200), 32)
    assert result["offsetInMemory"] == 7 and result["offsetInBroker"] == 7, result


def _push(name: str, method: str, check: Callable[[Result], None], **spec: object) -> Scenario:
    return Scenario(name, f"PushScenarios.{method}", spec, check)


SCENARIOS: list[Scenario] = [
    _push("push consumer concurrently", "concurrently", _push_concurrently),
    Scenario("push consumer orderly", "PushOrderly.single", {}, _push_orderly),
    Scenario("push orderly, two consumers", "PushOrderly.clustering", {}, _orderly_clustering),
    _push("push clustering, two consumers", "clustering", _clustering),
    _push("push broadcasting, two consumers", "broadcasting", _broadcasting),
    _push(
        "push tag expressions",
        "tags",
        _tags,
        expressions={"TagA || TagC": 20, "*": 30},
    ),
    Scenario(
        "push SQL92 selector",
        "PushScenarios.sql92",
        {"sql": "index > 5 AND parity = 'even'", "expected": 7},
        _sql92,
    ),
    _push(
        "push consume from first / last / timestamp",
        "fromWhere",
        _from_where,
        expected=FROM_WHERE,
    ),
    _dead_letter_scenario("retries until the DLQ", "RetryScenarios.deadLetter", "offsetMsgId"),
    _dead_letter_scenario(
        "orderly retries until the DLQ", "RetryScenarios.orderlyDeadLetter", "uniqKey"
    ),
    Scenario("lite pull subscribe, commit, resume", "LiteScenarios.subscribe", {}, _lite_subscribe),
    Scenario("lite pull assign and seek", "LiteScenarios.assign", {"seek": 4}, _lite_assign),
    Scenario("pull consumer offsets and statuses", "PullScenarios.pull", {}, _pull),
]
