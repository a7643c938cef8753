"""A running `rmq console` and a headless Chromium driven by Selenium, for the browser tests
and the screenshots of docs/console.md (`make screenshots`).

Chromium and its driver are Debian's (`/usr/bin/chromium`, `/usr/bin/chromedriver`: the
Makefile installs them where missing); `browser()` skips the test when they are absent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rmq.client.admin import AdminClient, AdminError
from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.client.errors import RouteNotFound
from rmq.common.naming import dlq_topic
from tests.ports import free_port
from tests.procs import rmq_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


class ConsoleProcess:
    """`rmq console` on a free port, its history under `state`; `extra` adds options."""

    def __init__(
        self, namesrv: str, state: Path, *, interval: str = "1s", extra: Sequence[str] = ()
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
        env["XDG_STATE_HOME"] = str(state)
        self.process = subprocess.Popen(
            rmq_command(
                [
                    *("console", "-n", namesrv, "--port", str(self.port)),
                    *("--interval", interval, *extra),
                ]
            ),
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline().decode()
        assert line == f"rmq console: serving {self.url}/\n", line

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(15)


@contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (a Selenium WebDriver) that keeps its console log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    scratch = tempfile.TemporaryDirectory(prefix="rmq-chromium-")  # its profile and sockets
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    options.add_argument(f"--user-data-dir={scratch.name}/profile")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(str(CHROMEDRIVER), env={**os.environ, "TMPDIR": scratch.name})
    try:
        driver = webdriver.Chrome(options=options, service=service)
        try:
            yield driver
        finally:
            driver.quit()
    finally:
        scratch.cleanup()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.2)


async def fail_into_the_dlq(namesrv: str, topic: str, group: str, count: int = 1) -> None:
    """Consume `topic` as `group` with maxReconsumeTimes 0, answering RECONSUME_LATER: the
    broker moves each message to `%DLQ%<group>`.  Returns once that topic holds `count`."""

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        return ConsumeStatus.RECONSUME_LATER

    async def held(admin: AdminClient) -> int:
        try:
            return sum(q.max_offset for q in await admin.topic_status(dlq_topic(group)))
        except (RouteNotFound, AdminError):
            return 0

    consumer = PushConsumer(
        group,
        namesrv,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=0,
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    async with consumer, AdminClient(namesrv) as admin:
        async with asyncio.timeout(60):
            while await held(admin) < count:
                await asyncio.sleep(0.2)


def click(driver: Any, button: Any) -> None:
    """Click `button` and wait until the page it leads to replaced this one."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element(By.TAG_NAME, "html")
    button.click()

    def replaced(_: Any) -> bool:
        try:
            page.is_enabled()
        except WebDriverException:  # stale, or no longer in the document
            return True
        return False

    WebDriverWait(driver, 30).until(replaced)


def add_account(users: Path, name: str, password: str, role: str) -> None:
    """`rmq console user add NAME --role ROLE` into the users file `users`."""
    from tests.procs import run_rmq_cli

    done = run_rmq_cli(
        [
            *("console", "user", "add", name, "--role", role),
            *("--password-stdin", "--users", str(users)),
        ],
        home=users.parent,
        input=password.encode() + b"\n",
    )
    assert done.returncode == 0, done.stderr
