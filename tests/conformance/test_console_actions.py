"""`rmq console`'s changes against Apache's cluster and against rmq's have the same effect:
a topic created from the console with three queues, a test message sent to it and found
with its body, a group's offsets reset an hour back after it read the message (its lag is 1
again), a consumer group created with 3 retries whose update to 5 the console previews from
what the broker stored, a dead letter exported as NDJSON and resent to its group (a running
`rmq consume` prints it, the broker relays the member's CR_SUCCESS), and the topic deleted
after its preview.

The console runs without accounts (each browser is the local admin, with a session and its
CSRF token), its forms are posted over HTTP and its pages parsed (`_Page` of
test_console.py); the message ids and addresses each broker assigns are left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.conformance.clusters import CLUSTER, Cluster
from tests.conformance.console_http import ConsoleSession, done
from tests.conformance.test_console import _Page
from tests.conformance.test_rmq_tools import rmq_cli
from tests.ports import free_port

SECTION = "rmq console against both clusters"
CASE = (
    "changes: topic created, test message sent and found, offsets reset back, group "
    "created and its update previewed, a dead letter exported and resent, topic deleted"
)
TOPIC = "ConfConsoleMade"
GROUP = "ConfConsoleReader"
MADE_GROUP = "ConfConsoleMadeGroup"
DEAD_GROUP = "ConfConsoleDeadGroup"


def _effects(cluster: Cluster) -> dict[str, Any]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env["XDG_STATE_HOME"] = str(cluster.root / "console-actions-state")
    env["XDG_CONFIG_HOME"] = str(cluster.root / "console-actions-config")  # no accounts
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "rmq", "console", "-n", cluster.namesrv_addr),
            *("--port", str(port), "--interval", "1h"),
        ],
        stderr=subprocess.PIPE,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert line == f"rmq console: serving {base}/\n", line
        return _act(cluster, ConsoleSession(base))
    finally:
        process.terminate()
        process.wait(15)


def _act(cluster: Cluster, browser: ConsoleSession) -> dict[str, Any]:
    def plain(text: str) -> str:
        return text.replace(cluster.broker_addr, "<broker>")

    status, _ = browser.open("/topics")
    assert status == 200 and browser.csrf
    made = done(
        *browser.open(
            "/topic/update",
            {"topic": TOPIC, "cluster": CLUSTER, "read": "3", "write": "3", "perm": "6"},
        )
    )
    status, page = browser.open(f"/topic?name={TOPIC}")
    assert status == 200
    route = _Page(page).table("Route", 1)

    sent = done(*browser.open("/topic/send", {"topic": TOPIC, "keys": "k1", "body": "made here"}))
    msg_id = re.search(r"message ([0-9A-F]{32})", sent).group(1)  # type: ignore[union-attr]
    status, page = browser.open(f"/message?id={msg_id}&topic={TOPIC}")
    body = _Page(page).ids["body"]

    rmq_cli(cluster, "consume", TOPIC, "-g", GROUP, "--from", "first", "-c", "1")
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    reset = {"group": GROUP, "topic": TOPIC, "to": "time", "time": an_hour_ago}
    status, preview = browser.open("/group/reset", reset)
    assert status == 200
    lag_after = _Page(preview).ids["lag-after"]
    reset_done = done(*browser.open("/group/reset", {**reset, "confirm": "1"}))
    deadline = time.monotonic() + 60
    while True:  # the broker reports the committed offsets a moment after the reset
        status, page = browser.open(f"/group?name={GROUP}")
        total_lag = _Page(page).ids["total-lag"]
        if total_lag == "1" or time.monotonic() > deadline:
            break
        time.sleep(0.5)

    group_form = {"group": MADE_GROUP, "cluster": CLUSTER, "consume": "1", "retry_max_times": "3"}
    group_made = done(*browser.open("/group/update", group_form))
    status, preview = browser.open("/group/update", {**group_form, "retry_max_times": "5"})
    assert status == 200
    group_changes = _Page(preview).table(f"Update group {MADE_GROUP}?")

    dead = _dead_letter(cluster, browser)

    status, preview = browser.open("/topic/delete", {"topic": TOPIC})
    assert status == 200
    held = re.sub(r"<[^>]+>", "", preview.split("<ul>", 1)[1].split("</ul>", 1)[0])
    deleted = done(*browser.open("/topic/delete", {"topic": TOPIC, "confirm": "1"}))
    status, page = browser.open("/topics")
    listed = [row["topic"] for row in _Page(page).table("Topics")]
    return {
        "created": plain(made),
        "route": route,
        "sent": sent.startswith(f"Sent to {TOPIC}: message {msg_id} on "),
        "body": body,
        "lag after, previewed": lag_after,
        "reset": reset_done,
        "total lag after the reset": total_lag,
        "group saved": plain(group_made),
        "group update preview": group_changes,
        "delete preview": held,
        "deleted": deleted,
        "still listed": TOPIC in listed,
        "dead letter": dead,
    }


def _dead_letter(cluster: Cluster, browser: ConsoleSession) -> dict[str, Any]:
    """A message failed into DEAD_GROUP's DLQ (maxReconsumeTimes 0), exported as NDJSON and
    resent to the group, where a running `rmq consume -g DEAD_GROUP` prints it."""
    import asyncio
    import json

    from tests.browser.console import fail_into_the_dlq

    asyncio.run(fail_into_the_dlq(cluster.namesrv_addr, TOPIC, DEAD_GROUP))
    status, exported = browser.open(f"/dlq/export?group={DEAD_GROUP}")
    assert status == 200
    records = [json.loads(line) for line in exported.splitlines()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env["HOME"] = str(cluster.root / "console-dead-home")
    reading = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmq",
            "consume",
            TOPIC,
            "-g",
            DEAD_GROUP,
            "-n",
            cluster.namesrv_addr,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            status, page = browser.open(f"/group?name={DEAD_GROUP}")
            if "No client of this group is online." not in page or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        form = {"group": DEAD_GROUP, "ids": records[0]["offsetMsgId"], "which": "chosen"}
        status, page = browser.open("/dlq/resend", form)
        assert status == 200, page
        verdicts = _Page(page).table(f"Resent to {DEAD_GROUP}")
        assert reading.stdout is not None
        printed = json.loads(reading.stdout.readline())
    finally:
        reading.terminate()
        reading.wait(30)
    return {
        "exported": [
            {k: r[k] for k in ("topic", "body", "keys", "reconsumeTimes") if k in r}
            for r in records
        ],
        "verdicts": [
            {k: v for k, v in row.items() if k in ("result", "remark")} for row in verdicts
        ],
        "printed": {k: printed[k] for k in ("topic", "body")},
    }


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, CASE, label), id=f"console-{kind}")
        for kind, label in (("apache", "Apache"), ("rmq", "rmq"))
    ],
)
def test_console_changes(kind: str, request: pytest.FixtureRequest, differential: Any) -> None:
    expected = differential.apache_result("tools:console-actions", _effects)
    assert expected["body"] == "made here" and expected["sent"] is True, expected
    assert expected["total lag after the reset"] == "1" and not expected["still listed"]
    if kind == "apache":
        return
    assert _effects(request.getfixturevalue("rmq")) == expected
