"""`rmq console`'s changes against Apache's cluster and against rmq's have the same effect:
a topic created from the console with three queues, a test message sent to it and found
with its body, a group's offsets reset an hour back after it read the message (its lag is 1
again), a consumer group created with 3 retries whose update to 5 the console previews from
what the broker stored, and the topic deleted after its preview.

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
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests.conformance.clusters import CLUSTER, Cluster
from tests.conformance.test_console import _Page
from tests.conformance.test_rmq_tools import rmq_cli
from tests.ports import free_port

SECTION = "rmq console against both clusters"
CASE = (
    "changes: topic created, test message sent and found, offsets reset back, group "
    "created and its update previewed, topic deleted"
)
TOPIC = "ConfConsoleMade"
GROUP = "ConfConsoleReader"
MADE_GROUP = "ConfConsoleMadeGroup"


class _Browser:
    """The console's session of one browser: its cookie and CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookie = ""
        self.csrf = ""

    def open(self, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        data = None
        if form is not None:
            data = urllib.parse.urlencode({**form, "csrf": self.csrf}).encode()
        request = urllib.request.Request(self.base + path, data=data)
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, body, headers = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as error:
            status, body, headers = error.code, error.read(), error.headers
        if headers.get("Set-Cookie"):
            self.cookie = headers["Set-Cookie"].split(";")[0]
        text = body.decode()
        token = re.search(r'name="csrf" value="([^"]+)"', text)
        if token:
            self.csrf = token.group(1)
        return status, text


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
        return _act(cluster, _Browser(base))
    finally:
        process.terminate()
        process.wait(15)


def _done(status: int, text: str) -> str:
    assert status == 200, text
    return _Page(text).ids["done"].replace("\n", " ")


def _act(cluster: Cluster, browser: _Browser) -> dict[str, Any]:
    def plain(text: str) -> str:
        return text.replace(cluster.broker_addr, "<broker>")

    status, _ = browser.open("/topics")
    assert status == 200 and browser.csrf
    made = _done(
        *browser.open(
            "/topic/update",
            {"topic": TOPIC, "cluster": CLUSTER, "read": "3", "write": "3", "perm": "6"},
        )
    )
    status, page = browser.open(f"/topic?name={TOPIC}")
    assert status == 200
    route = _Page(page).table("Route", 1)

    sent = _done(*browser.open("/topic/send", {"topic": TOPIC, "keys": "k1", "body": "made here"}))
    msg_id = re.search(r"message ([0-9A-F]{32})", sent).group(1)  # type: ignore[union-attr]
    status, page = browser.open(f"/message?id={msg_id}&topic={TOPIC}")
    body = _Page(page).ids["body"]

    rmq_cli(cluster, "consume", TOPIC, "-g", GROUP, "--from", "first", "-c", "1")
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    reset = {"group": GROUP, "topic": TOPIC, "to": "time", "time": an_hour_ago}
    status, preview = browser.open("/group/reset", reset)
    assert status == 200
    lag_after = _Page(preview).ids["lag-after"]
    reset_done = _done(*browser.open("/group/reset", {**reset, "confirm": "1"}))
    deadline = time.monotonic() + 60
    while True:  # the broker reports the committed offsets a moment after the reset
        status, page = browser.open(f"/group?name={GROUP}")
        total_lag = _Page(page).ids["total-lag"]
        if total_lag == "1" or time.monotonic() > deadline:
            break
        time.sleep(0.5)

    group_form = {"group": MADE_GROUP, "cluster": CLUSTER, "consume": "1", "retry_max_times": "3"}
    group_made = _done(*browser.open("/group/update", group_form))
    status, preview = browser.open("/group/update", {**group_form, "retry_max_times": "5"})
    assert status == 200
    group_changes = _Page(preview).table(f"Update group {MADE_GROUP}?")

    status, preview = browser.open("/topic/delete", {"topic": TOPIC})
    assert status == 200
    held = re.sub(r"<[^>]+>", "", preview.split("<ul>", 1)[1].split("</ul>", 1)[0])
    deleted = _done(*browser.open("/topic/delete", {"topic": TOPIC, "confirm": "1"}))
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
