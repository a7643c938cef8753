"""`make screenshots`: PNGs of the console's main pages for docs/console.md.

    python -m tests.browser.screenshots DIR

Starts a standalone under a temporary directory, creates a topic, sends messages with a key,
traced, lets a group consume part of them (traced too) and another fail all of them into its
dead-letter queue, starts `rmq console` collecting every second and, once the overview has a
few points, saves overview, cluster, topics, topic, groups, group, messages, message, trace
and dead-letter pages as DIR/<page>.png from a headless Chromium.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.browser.console import (
    ConsoleProcess,
    add_account,
    browser,
    click,
    fail_into_the_dlq,
    wait_until,
)
from tests.procs import RmqProcesses, run_rmq_cli

TOPIC = "Orders"
GROUP = "billing"
FAILING = "audit"
ADMIN, PASSWORD = "alice", "screenshots-only"


def charted(state: Path) -> bool:
    """Whether the history has six rounds, one of them with the broker's put TPS."""
    rounds = [json.loads(line) for f in state.rglob("tps-*.jsonl") for line in f.open()]
    busy = any(tps_in > 0 for r in rounds for tps_in, _ in r["brokers"].values())
    return len(rounds) >= 6 and busy


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "rmq").mkdir()
        processes = RmqProcesses(root / "rmq")
        try:
            standalone = processes.start_standalone("broker-a", props={"traceTopicEnable": True})
            namesrv = standalone.namesrv_addr

            def cli(*args: str, data: bytes = b"") -> str:
                done = run_rmq_cli([*args, "-n", namesrv], home=root, input=data)
                assert done.returncode == 0, done.stderr
                return done.stdout

            cli("topic", "create", TOPIC, "--write-queues", "4", "--read-queues", "4")
            users = root / "users.json"
            add_account(users, ADMIN, PASSWORD, "admin")
            console = ConsoleProcess(
                namesrv, root / "state", interval="1s", extra=["--users", str(users)]
            )
            try:
                lines = b"".join(
                    b'{"body": "order %d", "keys": "order-%d"}\n' % (i, i) for i in range(40)
                )
                sent = cli("produce", TOPIC, "--trace", data=lines)
                consumed = cli(
                    "consume", TOPIC, "-g", GROUP, "--from", "first", "-c", "25", "--trace"
                )
                msg_id = json.loads(consumed.splitlines()[5])["msgId"]
                assert msg_id in sent
                asyncio.run(fail_into_the_dlq(namesrv, TOPIC, FAILING, 40))
                wait_until(lambda: charted(root / "state"), "the overview's history", 90)
                with browser(1280, 800) as driver:
                    shoot(
                        driver, out, "login", functools.partial(driver.get, console.url + "/login")
                    )
                    log_in(driver, console.url)
                    pages = {
                        "overview": f"/?topic={TOPIC}",
                        "cluster": "/cluster",
                        "topics": "/topics",
                        "topic": f"/topic?name={TOPIC}",
                        "groups": "/groups",
                        "group": f"/group?name={GROUP}",
                        "messages": f"/messages?topic={TOPIC}",
                        "message": f"/message?id={msg_id}&topic={TOPIC}",
                        "trace": f"/trace?id={msg_id}",
                        "dlq": f"/dlq?group={FAILING}",
                        "acl": "/acl",
                    }
                    for name, path in pages.items():
                        shoot(driver, out, name, functools.partial(driver.get, console.url + path))
                    dialogs = {
                        "reset-preview": (f"/group?name={GROUP}", "reset-offsets"),
                        "delete-preview": (f"/topic?name={TOPIC}", "delete-topic"),
                        "group-update-preview": (f"/group?name={GROUP}", "update-group"),
                    }
                    for name, (path, fieldset) in dialogs.items():
                        show = functools.partial(press, driver, console.url + path, fieldset)
                        shoot(driver, out, name, show)
            finally:
                console.stop()
        finally:
            processes.kill_all()


def shoot(driver: Any, out: Path, name: str, show: Callable[[], None]) -> None:
    """Save what `show()` puts in the window as OUT/NAME.png, the window as tall as the
    page (400 to 1800 pixels)."""
    driver.set_window_size(1280, 800)
    show()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(height + 140, 400), 1800))
    show()
    driver.save_screenshot(str(out / f"{name}.png"))
    print(out / f"{name}.png")


def log_in(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/login")
    driver.find_element(By.NAME, "user").send_keys(ADMIN)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    click(driver, driver.find_element(By.TAG_NAME, "button"))


def press(driver: Any, page: str, fieldset: str) -> None:
    """Open `page` and send the form in `fieldset` as it is: the preview it answers."""
    from selenium.webdriver.common.by import By

    driver.get(page)
    click(driver, driver.find_element(By.ID, fieldset).find_element(By.TAG_NAME, "button"))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console"))
