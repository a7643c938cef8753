"""`rmq console`'s ACL changes on an ACL-enabled cluster, Apache's or rmq's (run by
test_acl_clients.py on its clusters, after the Java client's steps): the console, signing with
the ACL's admin account, creates a topic and an account allowed to publish to it, which
`rmq produce` then sends with; after the account is deleted (confirmed after its preview) the
same send is refused.  Whether the ACL page could list the accounts is recorded too: Apache's
broker since 4.9.8 does not answer GET_BROKER_CLUSTER_ACL_CONFIG (the deliberate difference of
the ACL section), and the page names such a broker instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.cli_forkserver import run as cli_run
from tests.conformance.console_http import ConsoleSession, done
from tests.ports import free_port
from tests.procs import RmqProcess

TOPIC = "ConfConsoleAclTopic"
NEWCOMER = {"accessKey": "ConfConsoleKey", "secretKey": "ConfConsoleSecret"}


def _produce(namesrv: RmqProcess, home: Path, body: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env["HOME"] = str(home)
    keys = ["--access-key", NEWCOMER["accessKey"], "--secret-key", NEWCOMER["secretKey"]]
    return cli_run(
        [sys.executable, "-m", "rmq", "produce", TOPIC, "-n", namesrv.addr, *keys],
        input=json.dumps({"body": body}) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )


def _until_refused(namesrv: RmqProcess, home: Path) -> subprocess.CompletedProcess[str]:
    """The brokers reload their ACL file a moment after a change."""
    deadline = time.monotonic() + 30
    while True:
        done = _produce(namesrv, home, "after the deletion")
        if done.returncode != 0 or time.monotonic() > deadline:
            return done
        time.sleep(0.5)


def console_acl_effects(
    namesrv: RmqProcess, broker: RmqProcess, root: Path, admin: dict[str, str], cluster: str
) -> dict[str, Any]:
    """The console's ACL changes on a running ACL cluster (module docstring), what they did."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env["XDG_STATE_HOME"] = str(root / "console-state")
    env["XDG_CONFIG_HOME"] = str(root / "console-config")
    keys = ["--access-key", admin["accessKey"], "--secret-key", admin["secretKey"]]
    console = subprocess.Popen(
        [
            *(sys.executable, "-m", "rmq", "console", "-n", namesrv.addr, *keys),
            *("--port", str(port), "--interval", "1h"),
        ],
        stderr=subprocess.PIPE,
        env=env,
    )
    cli_home = root / "console-cli-home"
    cli_home.mkdir()
    try:
        assert console.stderr is not None
        console.stderr.readline()
        browser = ConsoleSession(f"http://127.0.0.1:{port}")
        status, page = browser.open("/acl")
        assert status == 200, page
        listed = "does not list accounts" not in page
        created = done(
            *browser.open(
                "/topic/update",
                {"topic": TOPIC, "cluster": cluster, "read": "2", "write": "2", "perm": "6"},
            )
        )
        account = {
            "cluster": cluster,
            "access_key": NEWCOMER["accessKey"],
            "secret_key": NEWCOMER["secretKey"],
            "default_topic_perm": "DENY",
            "topic_perms": f"{TOPIC}=PUB",
        }
        saved = done(*browser.open("/acl/account", account))
        assert NEWCOMER["secretKey"] not in saved
        deadline = time.monotonic() + 30
        while True:
            sent = _produce(namesrv, cli_home, "with the console's account")
            if sent.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        status, preview = browser.open(
            "/acl/delete", {"cluster": cluster, "access_key": NEWCOMER["accessKey"]}
        )
        assert status == 200 and "This deletes account" in preview
        deleted = done(
            *browser.open(
                "/acl/delete",
                {"cluster": cluster, "access_key": NEWCOMER["accessKey"], "confirm": "1"},
            )
        )
        refused = _until_refused(namesrv, cli_home)
    finally:
        console.terminate()
        console.wait(15)
    addr = broker.addr
    return {
        "listed": listed,
        "created": created.replace(addr, "<broker>"),
        "saved": saved.replace(addr, "<broker>"),
        "sent": (sent.returncode, json.loads(sent.stdout)["status"] if sent.stdout else None),
        "deleted": deleted.replace(addr, "<broker>"),
        "refused": refused.returncode,
    }
