"""`rmq group` against rmq's own two-broker cluster with a running group
(tests/integration/mqadmin_cluster.py): every read checked in json and rendered as a table,
every change read back through a second command, and the failure paths (exit 1 or 2, one
line on stderr)."""

from __future__ import annotations

from typing import Any

from tests.integration.mqadmin_cluster import (
    BROKERS,
    CLUSTER,
    GROUP,
    MEMBERS,
    QUEUES,
    TOPIC,
    MqadminCluster,
)
from tests.integration.test_friendly_config import as_json, rmq

UNKNOWN = "NoSuchFriendlyGroup"


def _fails(cluster: MqadminCluster, *args: str, code: int = 1) -> str:
    done = rmq(cluster, *args)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def _queues(data: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((row["brokerName"], row["queueId"]) for row in data)


ALL_QUEUES = [(name, queue) for name in BROKERS for queue in range(QUEUES)]


def test_group_list(mqadmin_cluster: MqadminCluster) -> None:
    rows = as_json(rmq(mqadmin_cluster, "group", "list", "-o", "json"))
    row = next(row for row in rows if row["group"] == GROUP)
    assert row["cluster"] == CLUSTER
    assert row["members"] == MEMBERS
    assert row["lag"] == 0
    assert row["consumeEnable"] is True
    table = rmq(mqadmin_cluster, "group", "list", "--cluster", CLUSTER)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["GROUP", "MEMBERS", "LAG"]
    assert any(line.split() == [GROUP, str(MEMBERS), "0"] for line in table.stdout.splitlines())
    assert "NoSuchCluster" in _fails(mqadmin_cluster, "group", "list", "--cluster", "NoSuchCluster")


def test_group_describe(mqadmin_cluster: MqadminCluster) -> None:
    data = as_json(rmq(mqadmin_cluster, "group", "describe", GROUP, "-o", "json"))
    assert data["group"] == GROUP
    assert data["state"] == "Stable"
    assert data["consumeType"] == "CONSUME_PASSIVELY"
    assert data["messageModel"] == "CLUSTERING"
    assert data["totalLag"] == 0
    assert len(data["members"]) == MEMBERS
    assert all(member["language"] == "JAVA" for member in data["members"])
    assert data["subscriptions"] == sorted([TOPIC, f"%RETRY%{GROUP}"])
    queues = [queue for queue in data["queues"] if queue["topic"] == TOPIC]
    assert _queues(queues) == ALL_QUEUES
    clients = {member["clientId"] for member in data["members"]}
    for queue in queues:
        assert queue["committedOffset"] == queue["endOffset"] == 1
        assert queue["lag"] == 0
        assert queue["clientId"] in clients
        assert queue["lastConsumeTimestamp"] > 0
    by_option = as_json(
        rmq(mqadmin_cluster, "group", "describe", "-g", GROUP, "-t", TOPIC, "-o", "json")
    )
    assert {queue["topic"] for queue in by_option["queues"]} == {TOPIC}
    table = rmq(mqadmin_cluster, "group", "describe", GROUP)
    assert table.returncode == 0, table.stderr
    assert "QUEUES" in table.stdout and "COMMITTED OFFSET" in table.stdout
    assert "Stable" in table.stdout
    error = _fails(mqadmin_cluster, "group", "describe", UNKNOWN)
    assert f"consumer group {UNKNOWN!r} not found" in error
    _fails(mqadmin_cluster, "group", "describe", code=2)


def test_group_connections(mqadmin_cluster: MqadminCluster) -> None:
    data = as_json(rmq(mqadmin_cluster, "group", "connections", GROUP, "-o", "json"))
    assert data["group"] == GROUP
    assert data["consumeType"] == "CONSUME_PASSIVELY"
    assert data["messageModel"] == "CLUSTERING"
    assert data["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
    assert len(data["connections"]) == MEMBERS
    assert all(
        conn["version"] == "V4_9_8" and "@" in conn["clientId"] for conn in data["connections"]
    )
    assert [sub["topic"] for sub in data["subscriptions"]] == sorted([TOPIC, f"%RETRY%{GROUP}"])
    assert all(sub["subString"] == "*" for sub in data["subscriptions"])
    table = rmq(mqadmin_cluster, "group", "connections", GROUP)
    assert table.stdout.splitlines()[0].split() == [
        "CLIENT",
        "ID",
        "CLIENT",
        "ADDR",
        "LANGUAGE",
        "VERSION",
    ]
    assert len(table.stdout.splitlines()) == 1 + MEMBERS
    assert UNKNOWN in _fails(mqadmin_cluster, "group", "connections", UNKNOWN)


def test_group_update_and_delete(mqadmin_cluster: MqadminCluster) -> None:
    group = "FriendlyUpdateGroup"
    dry = as_json(rmq(mqadmin_cluster, "group", "update", group, "--dry-run", "-o", "json"))
    assert [row["request"] for row in dry] == ["UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"]
    assert group not in {
        row["group"] for row in as_json(rmq(mqadmin_cluster, "group", "list", "-o", "json"))
    }
    updated = as_json(
        rmq(
            mqadmin_cluster,
            "group",
            "update",
            group,
            "--retry-max-times",
            "3",
            "--consume-disable",
            "-o",
            "json",
        )
    )
    assert updated["group"] == group
    assert sorted(updated["brokerAddrs"]) == sorted(mqadmin_cluster.broker_addrs.values())
    assert updated["retryMaxTimes"] == 3
    row = next(
        row
        for row in as_json(rmq(mqadmin_cluster, "group", "list", "-o", "json"))
        if row["group"] == group
    )
    assert row["retryMaxTimes"] == 3
    assert row["consumeEnable"] is False
    assert row["members"] == 0
    # destructive: refused without --yes when stdin is not a terminal
    assert "--yes" in _fails(mqadmin_cluster, "group", "delete", group, code=2)
    dry = as_json(rmq(mqadmin_cluster, "group", "delete", group, "--dry-run", "-o", "json"))
    assert [row["request"] for row in dry] == [
        "DELETE_SUBSCRIPTIONGROUP",
        "DELETE_TOPIC_IN_BROKER",
        "DELETE_TOPIC_IN_BROKER",
    ]
    # a member's heartbeat makes the retry topic; no message went to the dead-letter topic
    assert rmq(mqadmin_cluster, "group", "update", group).returncode == 0  # may consume again
    consumed = rmq(mqadmin_cluster, "consume", TOPIC, "-g", group, "--from", "first", "-c", "1")
    assert consumed.returncode == 0, consumed.stderr
    deleted = as_json(
        rmq(mqadmin_cluster, "group", "delete", group, "--remove-offset", "--yes", "-o", "json")
    )
    assert sorted(deleted["brokerAddrs"]) == sorted(mqadmin_cluster.broker_addrs.values())
    assert deleted["deletedTopics"] == [f"%RETRY%{group}"]
    again = _fails(mqadmin_cluster, "group", "delete", group, "--remove-offset", "--yes")
    assert again == (
        f"rmq: error: consumer group {group!r} not found (every master of the cluster): "
        "nothing was deleted; check the name with 'rmq group list'\n"
    )
    assert group not in {
        row["group"] for row in as_json(rmq(mqadmin_cluster, "group", "list", "-o", "json"))
    }


def _committed(cluster: MqadminCluster, group: str, topic: str) -> dict[tuple[str, int], int]:
    data = as_json(rmq(cluster, "group", "describe", group, "-t", topic, "-o", "json"))
    return {(q["brokerName"], q["queueId"]): q["committedOffset"] for q in data["queues"]}


def test_group_reset_and_clone_offsets(mqadmin_cluster: MqadminCluster) -> None:
    topic, group, clone = "FriendlyResetTopic", "FriendlyResetGroup", "FriendlyCloneGroup"
    created = rmq(
        mqadmin_cluster, "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "2", "-w", "2"
    )
    assert created.returncode == 0, created.stderr
    records = "".join(f'{{"body":"m{n}"}}\n' for n in range(8))
    assert rmq(mqadmin_cluster, "produce", topic, stdin=records).returncode == 0
    consumed = rmq(mqadmin_cluster, "consume", topic, "-g", group, "--from", "first", "-c", "2")
    assert consumed.returncode == 0, consumed.stderr
    assert sum(_committed(mqadmin_cluster, group, topic).values()) == 2
    offline = as_json(rmq(mqadmin_cluster, "group", "describe", group, "-o", "json"))
    assert (offline["state"], offline["members"], offline["totalLag"]) == ("Empty", [], 6)
    assert all(queue["clientId"] is None for queue in offline["queues"])
    args = ("group", "reset-offsets", group, "--topic", topic)
    assert "--yes" in _fails(mqadmin_cluster, *args, "--to", "last", code=2)
    assert "--to" in _fails(mqadmin_cluster, *args, "--to", "sideways", "--yes", code=2)
    dry = as_json(rmq(mqadmin_cluster, *args, "--to", "last", "--dry-run", "-o", "json"))
    assert dry[0]["request"] == "INVOKE_BROKER_TO_RESET_OFFSET"
    assert dry[0]["extFields"]["timestamp"] == "-1"
    assert sum(_committed(mqadmin_cluster, group, topic).values()) == 2
    rows = as_json(rmq(mqadmin_cluster, *args, "--to", "last", "--yes", "-o", "json"))
    assert _queues(rows) == [(name, queue) for name in BROKERS for queue in range(2)]
    assert sum(row["offset"] for row in rows) == 8
    assert all(row["online"] is False for row in rows)
    assert sum(_committed(mqadmin_cluster, group, topic).values()) == 8
    rows = as_json(
        rmq(mqadmin_cluster, *args, "--to", "@2000-01-01T00:00:00", "--yes", "-o", "json")
    )
    assert sum(row["offset"] for row in rows) == 0
    assert sum(_committed(mqadmin_cluster, group, topic).values()) == 0
    rows = as_json(
        rmq(mqadmin_cluster, *args, "--to", "first", "--no-force", "--yes", "-o", "json")
    )
    assert sum(row["offset"] for row in rows) == 0
    rows = as_json(rmq(mqadmin_cluster, *args, "--to", "last", "--yes", "-o", "json"))
    assert sum(row["offset"] for row in rows) == 8
    # clone the group's offsets (the ends) to a new group
    dry = as_json(
        rmq(
            mqadmin_cluster,
            "group",
            "clone-offsets",
            group,
            clone,
            "-t",
            topic,
            "--dry-run",
            "-o",
            "json",
        )
    )
    assert dry[0]["request"] == "UPDATE_CONSUMER_OFFSET"
    rows = as_json(
        rmq(mqadmin_cluster, "group", "clone-offsets", group, clone, "-t", topic, "-o", "json")
    )
    assert sum(row["offset"] for row in rows) == 8
    assert {row["destination"] for row in rows} == {clone}
    table = rmq(mqadmin_cluster, "group", "clone-offsets", group, clone, "-t", topic)
    assert table.stdout.splitlines()[0].split() == [
        "TOPIC",
        "BROKER",
        "NAME",
        "QUEUE",
        "ID",
        "OFFSET",
    ]
    assert UNKNOWN in _fails(mqadmin_cluster, "group", "clone-offsets", UNKNOWN, clone, "-t", topic)
    assert UNKNOWN in _fails(
        mqadmin_cluster, *("group", "reset-offsets", UNKNOWN, "-t", topic), "--to", "last", "--yes"
    )


def test_cloned_group_is_shown_with_its_lag(mqadmin_cluster: MqadminCluster) -> None:
    """A group whose offsets were cloned has no retry topic and no subscription group (as on
    Apache's broker): describe, list, monitor and consumerProgress -g show it with its lag,
    and monitor shows the lag of groups with no member online."""
    topic, group, clone = "FriendlyCloneTopic", "FriendlyCloneSource", "FriendlyCloneTarget"
    created = rmq(
        mqadmin_cluster, "topic", "update", "-t", topic, "--cluster", CLUSTER, "-r", "2", "-w", "2"
    )
    assert created.returncode == 0, created.stderr
    records = "".join(f'{{"body":"m{n}"}}\n' for n in range(8))
    assert rmq(mqadmin_cluster, "produce", topic, stdin=records).returncode == 0
    consumed = rmq(mqadmin_cluster, "consume", topic, "-g", group, "--from", "first", "-c", "2")
    assert consumed.returncode == 0, consumed.stderr
    cloned = rmq(mqadmin_cluster, "group", "clone-offsets", group, clone, "-t", topic)
    assert cloned.returncode == 0, cloned.stderr

    data = as_json(rmq(mqadmin_cluster, "group", "describe", clone, "-o", "json"))
    assert (data["state"], data["members"], data["totalLag"]) == ("Empty", [], 6)
    assert _queues(data["queues"]) == [(name, queue) for name in BROKERS for queue in range(2)]
    rows = {
        row["group"]: row for row in as_json(rmq(mqadmin_cluster, "group", "list", "-o", "json"))
    }
    assert (rows[clone]["members"], rows[clone]["lag"], rows[clone]["retryMaxTimes"]) == (
        0,
        6,
        None,
    )
    assert rows[group]["lag"] == 6
    round_rows = as_json(rmq(mqadmin_cluster, "monitor", "--rounds", "1", "-o", "json"))
    lags = {(row["group"], row["topic"]): (row["lag"], row["members"]) for row in round_rows}
    assert lags[(clone, topic)] == (6, 0)
    assert lags[(group, topic)] == (6, 0)
    progress = mqadmin_cluster.run("consumerProgress", "-g", clone)
    assert progress.returncode == 0, progress.stderr
    assert progress.stdout.splitlines()[-1] == "Diff Total: 6"
    assert UNKNOWN in _fails(mqadmin_cluster, "group", "describe", UNKNOWN)
