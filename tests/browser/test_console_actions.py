"""Changing the cluster from `rmq console` as a person would, in a headless Chromium against a
live standalone, with a users file of an admin and a viewer (`rmq console user add`):

* every page asks for a login; a wrong password is refused and the next try within the
  wait is not even checked; the session cookie is HttpOnly and SameSite=Strict;
* the admin creates a topic, sends a test message and finds it, reads it with
  `rmq consume`, resets the group's offsets an hour back (the preview shows the lag the
  reset brings back, the group page then shows it) and deletes the topic after its preview;
* the viewer sees no form of a change, and the server refuses each of the admin's requests
  replayed with the viewer's session; a change without the CSRF token, or from another
  site's page, is refused whoever sends it.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.browser.console import (
    CHROMEDRIVER,
    CHROMIUM,
    ConsoleProcess,
    add_account,
    browser,
    click,
    wait_until,
)
from tests.procs import RmqProcesses, StandaloneProcess, run_rmq_cli, unique

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and not os.environ.get("CI"),
    reason="Chromium and chromedriver are not installed (make unit installs them as root)",
)

ADMIN, ADMIN_PASSWORD = "alice", "alice-secret-1"
VIEWER, VIEWER_PASSWORD = "bob", "bob-secret-22"


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> StandaloneProcess:
    return module_processes.start_standalone()


@pytest.fixture(scope="module")
def console(
    standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    home = tmp_path_factory.mktemp("accounts")
    users = home / "users.json"
    add_account(users, ADMIN, ADMIN_PASSWORD, "admin")
    add_account(users, VIEWER, VIEWER_PASSWORD, "viewer")
    assert users.stat().st_mode & 0o077 == 0  # owner-only
    running = ConsoleProcess(
        standalone.namesrv_addr, tmp_path_factory.mktemp("state"), extra=["--users", str(users)]
    )
    try:
        yield running
    finally:
        assert running.stop() == 0


@pytest.fixture(scope="module")
def shared_browser() -> Iterator[Any]:
    with browser() as opened:
        yield opened


@pytest.fixture
def driver(shared_browser: Any, console: ConsoleProcess) -> Any:
    """The module's Chromium, logged out: no cookie of an earlier test's session."""
    shared_browser.get(console.url + "/login")
    shared_browser.delete_all_cookies()
    shared_browser.get_log("browser")  # what earlier tests left
    return shared_browser


def cli(standalone: StandaloneProcess, home: Path, *args: str, data: bytes = b"") -> str:
    done = run_rmq_cli([*args, "-n", standalone.namesrv_addr], home=home, input=data)
    assert done.returncode == 0, done.stderr
    return done.stdout


def log_in(
    driver: Any, console: ConsoleProcess, name: str, password: str, page: str = "/login"
) -> None:
    """Log in through the login form at `page`, waiting out a throttle an earlier failure
    left."""
    from selenium.webdriver.common.by import By

    def tried() -> bool:
        driver.get(console.url + page)
        driver.find_element(By.NAME, "user").send_keys(name)
        driver.find_element(By.NAME, "password").send_keys(password)
        click(driver, driver.find_element(By.TAG_NAME, "button"))
        return "Too many failed logins" not in driver.find_element(By.TAG_NAME, "body").text

    wait_until(tried, f"{name} gets past the login throttle", 20)
    assert (
        driver.find_element(By.ID, "who").text
        == f"{name} ({'admin' if name == ADMIN else 'viewer'})"
    )


def submit(driver: Any, fieldset: str, **values: str) -> str:
    """Fill the form in fieldset `fieldset` and send it; the next page's text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    box = driver.find_element(By.ID, fieldset)
    for name, value in values.items():
        element = box.find_element(By.NAME, name)
        if element.tag_name == "select":
            Select(element).select_by_visible_text(value)
        else:
            element.clear()
            element.send_keys(value)
    click(driver, box.find_element(By.TAG_NAME, "button"))
    return str(driver.find_element(By.TAG_NAME, "body").text)


def confirm(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    click(driver, driver.find_element(By.CSS_SELECTOR, "form.confirm button"))
    return str(driver.find_element(By.TAG_NAME, "body").text)


def test_every_page_asks_for_a_login_and_failed_logins_wait(
    console: ConsoleProcess, driver: Any
) -> None:
    from selenium.webdriver.common.by import By

    driver.get(console.url + "/topics")
    assert driver.current_url == console.url + "/login?next=%2Ftopics"
    driver.find_element(By.NAME, "user").send_keys(ADMIN)
    driver.find_element(By.NAME, "password").send_keys("not-the-password")
    click(driver, driver.find_element(By.TAG_NAME, "button"))
    assert driver.find_element(By.ID, "problem").text == "Wrong name or password."
    log_in(driver, console, ADMIN, ADMIN_PASSWORD, "/login?next=%2Ftopics")  # after the wait
    assert driver.title.startswith("Topics")  # where it was going
    session = {c["name"]: c for c in driver.get_cookies()}["rmq_console_session"]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    click(driver, driver.find_element(By.CSS_SELECTOR, "#who + form button"))  # log out
    driver.get(console.url + "/cluster")
    assert driver.current_url.startswith(console.url + "/login")
    errors = [
        entry
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE"  # the refused login's 401 is meant
        and not (entry["source"] == "network" and "/login - " in entry["message"])
    ]
    assert errors == []

    # three failures checked, each after the wait the one before set (1 s, then 2 s): the
    # right password right after the third is not even checked (a 4 s wait)
    checked = 0
    while checked < 3:
        status, _ = Client(console.url).request("/login", {"user": ADMIN, "password": "nope"})
        if status == 429:
            time.sleep(0.2)
            continue
        assert status == 401
        checked += 1
    status, page = Client(console.url).request(
        "/login", {"user": ADMIN, "password": ADMIN_PASSWORD}
    )
    assert status == 429 and "Too many failed logins: try again in" in page
    logged_in(console, ADMIN, ADMIN_PASSWORD)  # waits the 4 s out


def test_an_admin_creates_a_topic_sends_finds_resets_and_deletes(
    standalone: StandaloneProcess, console: ConsoleProcess, tmp_path: Path, driver: Any
) -> None:
    from selenium.webdriver.common.by import By

    topic, group = unique("ConsoleMade"), unique("console_reset")
    log_in(driver, console, ADMIN, ADMIN_PASSWORD)
    driver.get(console.url + "/topics")
    text = submit(driver, "create-topic", topic=topic, read="4", write="4")
    assert f"Topic {topic} created on {standalone.addr}: 4 read and 4 write queues" in text
    click(driver, driver.find_element(By.LINK_TEXT, topic))
    assert [row.split()[1] for row in queue_rows(driver)] == ["0", "1", "2", "3"]

    text = submit(driver, "send-message", tags="TagA", keys="made-here", body="hello console")
    assert f"Sent to {topic}: message" in text
    msg_id = re.search(r"message ([0-9A-F]{32})", text).group(1)  # type: ignore[union-attr]
    click(driver, driver.find_element(By.LINK_TEXT, msg_id))
    assert driver.find_element(By.ID, "body").text == "hello console"
    consumed = cli(
        standalone, tmp_path, "consume", topic, "-g", group, "--from", "first", "-c", "1"
    )
    assert json.loads(consumed)["msgId"] == msg_id

    driver.get(console.url + f"/group?name={group}")
    assert driver.find_element(By.ID, "total-lag").text == "0"
    text = submit(driver, "reset-offsets")  # to an hour ago, the form's default
    assert driver.title.startswith(f"Reset {group}'s offsets?")
    assert driver.find_element(By.ID, "lag-after").text == "1"
    text = confirm(driver)
    assert f"Offsets of {group} on {topic} reset" in text
    driver.get(console.url + f"/group?name={group}")
    assert driver.find_element(By.ID, "total-lag").text == "1"  # the lag jumped back

    driver.get(console.url + f"/message?id={msg_id}&topic={topic}")
    text = submit(driver, "send-again")
    assert f"Sent {msg_id} again to {topic} as" in text
    copy = re.search(r"as ([0-9A-F]{32})", text).group(1)  # type: ignore[union-attr]
    click(driver, driver.find_element(By.LINK_TEXT, copy))
    assert driver.find_element(By.ID, "body").text == "hello console"

    driver.get(console.url + f"/topic?name={topic}")
    text = submit(driver, "delete-topic")
    assert "Messages it holds: 2" in text and group in text
    text = confirm(driver)
    assert f"Topic {topic} deleted from DefaultCluster" in text
    driver.get(console.url + "/topics")
    assert topic not in driver.find_element(By.TAG_NAME, "table").text
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def queue_rows(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    table = driver.find_element(
        By.XPATH, "//h2[text()='Status per queue']/following-sibling::table[1]"
    )
    return [row.text for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]


@dataclass
class Client:
    """A browser's part of a session, spoken with urllib: its cookie and CSRF token."""

    url: str
    cookie: str = ""
    csrf: str = ""

    def request(
        self, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        data = urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.url + path, data=data, headers=headers or {})
        if self.cookie:
            request.add_header("Cookie", self.cookie)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=30) as answer:
                status, body, got = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as error:
            status, body, got = error.code, error.read(), error.headers
        if got.get("Set-Cookie"):
            self.cookie = got["Set-Cookie"].split(";")[0]
        text = body.decode()
        found = re.search(r'name="csrf" value="([^"]+)"', text)
        if found:
            self.csrf = found.group(1)
        return status, text


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def logged_in(console: ConsoleProcess, name: str, password: str) -> Client:
    client = Client(console.url)
    deadline = time.monotonic() + 20
    while True:
        status, _ = client.request("/login", {"user": name, "password": password, "next": "/"})
        if status != 429 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status == 303, status
    assert client.request("/topics")[0] == 200 and client.csrf
    return client


def test_a_viewer_is_refused_every_change_and_changes_need_the_csrf_token(
    standalone: StandaloneProcess, console: ConsoleProcess
) -> None:
    admin = logged_in(console, ADMIN, ADMIN_PASSWORD)
    viewer = logged_in(console, VIEWER, VIEWER_PASSWORD)
    topic = unique("ConsoleReplay")
    requests = [
        (
            "/topic/update",
            {"topic": topic, "cluster": "DefaultCluster", "read": "2", "write": "2", "perm": "6"},
        ),
        ("/topic/send", {"topic": topic, "body": "x"}),
        ("/group/reset", {"group": "g", "topic": topic, "to": "last", "confirm": "1"}),
        ("/topic/delete", {"topic": topic, "confirm": "1"}),
    ]
    status, page = viewer.request(f"/topic?name={topic}")
    for path, form in requests:
        status, page = viewer.request(path, {**form, "csrf": viewer.csrf})
        assert status == 403 and "bob is a viewer, and viewers change nothing" in page, path
    status, page = admin.request("/topic/update", {**requests[0][1], "csrf": admin.csrf})
    assert status == 200 and f"Topic {topic} created" in page
    status, page = viewer.request(f"/topic?name={topic}")
    assert status == 200 and '<form method="post" action="/topic/' not in page  # no forms
    status, page = viewer.request(requests[1][0], {**requests[1][1], "csrf": viewer.csrf})
    assert status == 403

    # the admin's own session, without its token, with another's, or from another site
    assert admin.request(requests[1][0], requests[1][1])[0] == 403
    assert admin.request(requests[1][0], {**requests[1][1], "csrf": viewer.csrf})[0] == 403
    evil = {"Origin": "http://evil.example"}
    assert admin.request(requests[1][0], {**requests[1][1], "csrf": admin.csrf}, evil)[0] == 403
    # and without a session at all: asked to log in, nothing changed
    status, _ = Client(console.url).request(requests[3][0], requests[3][1])
    assert status == 401
    status, page = admin.request(f"/topic?name={topic}")
    assert status == 200 and "Status per queue" in page


def test_an_admin_resends_a_dead_letter_and_it_is_consumed_and_exports_it(
    standalone: StandaloneProcess, console: ConsoleProcess, tmp_path: Path, driver: Any
) -> None:
    import asyncio
    import subprocess

    from selenium.webdriver.common.by import By

    from tests.browser.console import fail_into_the_dlq
    from tests.procs import rmq_command

    topic, group = unique("ConsoleDead"), unique("console_dead")
    cli(standalone, tmp_path, "topic", "create", topic)
    sent = json.loads(cli(standalone, tmp_path, "produce", topic, data=b"dead one\n"))
    asyncio.run(fail_into_the_dlq(standalone.namesrv_addr, topic, group))
    reading = subprocess.Popen(
        rmq_command(["consume", topic, "-g", group, "-n", standalone.namesrv_addr]),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        log_in(driver, console, ADMIN, ADMIN_PASSWORD)

        def online() -> bool:
            driver.get(console.url + f"/group?name={group}")
            return "No client of this group is online." not in driver.page_source

        wait_until(online, f"rmq consume -g {group} online", 60)
        driver.get(console.url + f"/dlq?group={group}")
        assert "1 messages in the range" in driver.find_element(By.ID, "result").text
        driver.find_element(By.NAME, "ids").click()
        click(driver, driver.find_element(By.CSS_SELECTOR, "button[value=chosen]"))
        verdicts = driver.find_element(By.TAG_NAME, "table").text
        assert sent["msgId"] in verdicts and "CR_SUCCESS" in verdicts, verdicts
        assert reading.stdout is not None
        record = json.loads(reading.stdout.readline())  # the member printed it
        assert record["body"] == "dead one" and record["msgId"] == sent["msgId"]
    finally:
        reading.terminate()
        reading.wait(30)

    admin = logged_in(console, ADMIN, ADMIN_PASSWORD)
    status, exported = admin.request(f"/dlq/export?group={group}")
    (line,) = exported.splitlines()
    assert status == 200 and json.loads(line)["body"] == "dead one"
    assert json.loads(line)["topic"] == f"%DLQ%{group}"
    viewer = logged_in(console, VIEWER, VIEWER_PASSWORD)
    offset_id = json.loads(line)["offsetMsgId"]
    form = {"group": group, "ids": offset_id, "which": "chosen", "csrf": viewer.csrf}
    assert viewer.request("/dlq/resend", form)[0] == 403


def test_an_admin_creates_updates_and_deletes_a_consumer_group(
    standalone: StandaloneProcess, console: ConsoleProcess, tmp_path: Path, driver: Any
) -> None:
    from selenium.webdriver.common.by import By

    group = unique("console_made")
    log_in(driver, console, ADMIN, ADMIN_PASSWORD)
    driver.get(console.url + "/groups")
    text = submit(driver, "create-group", group=group, retry_max_times="3")
    assert f"Consumer group {group} saved on {standalone.addr}" in text
    wide = json.loads(cli(standalone, tmp_path, "group", "list", "-o", "json"))
    assert group in {row["group"] for row in wide}

    driver.get(console.url + f"/group?name={group}")
    submit(driver, "update-group", retry_max_times="5")
    assert driver.title.startswith(f"Update group {group}?")
    changes = driver.find_element(By.TAG_NAME, "table").text
    assert "retries before the DLQ 3 5" in changes, changes
    assert "may consume" not in changes  # unchanged settings are not listed
    assert f"Consumer group {group} updated" in confirm(driver)

    driver.get(console.url + f"/group?name={group}")
    text = submit(driver, "delete-group")
    assert f"This deletes consumer group {group} from {standalone.addr}" in text
    assert f"Consumer group {group} deleted from {standalone.addr}" in confirm(driver)
    rows = json.loads(cli(standalone, tmp_path, "group", "list", "-o", "json"))
    assert group not in {row["group"] for row in rows}
