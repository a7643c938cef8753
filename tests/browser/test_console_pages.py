"""`rmq console` in a real headless Chromium against a live standalone: a topic created with
`rmq topic create` shows with its queues, a message sent with `rmq produce` is found by key
and by id with its body, a traced message shows its trace (send and consumption), a group's
lag falls as `rmq consume` reads, the overview draws the TPS collected, and the browser's
console logs no error on any page."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.console import (
    CHROMEDRIVER,
    CHROMIUM,
    ConsoleProcess,
    browser,
    click,
    fail_into_the_dlq,
    wait_until,
)
from tests.procs import RmqProcesses, StandaloneProcess, run_rmq_cli, unique

# CI (`.ci/run`, CI=true) installs Chromium through `make unit`: there a missing browser fails.
pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and not os.environ.get("CI"),
    reason="Chromium and chromedriver are not installed (make unit installs them as root)",
)


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> StandaloneProcess:
    return module_processes.start_standalone(props={"traceTopicEnable": True})


@pytest.fixture(scope="module")
def console(
    standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    running = ConsoleProcess(standalone.namesrv_addr, tmp_path_factory.mktemp("state"))
    try:
        yield running
    finally:
        assert running.stop() == 0


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with browser() as opened:
        yield opened


@pytest.fixture(autouse=True)
def no_console_errors(driver: Any) -> Iterator[None]:
    driver.get_log("browser")  # what earlier tests left
    yield
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def cli(standalone: StandaloneProcess, home: Path, *args: str, data: bytes = b"") -> str:
    done = run_rmq_cli([*args, "-n", standalone.namesrv_addr], home=home, input=data)
    assert done.returncode == 0, done.stderr
    return done.stdout


def visit(driver: Any, console: ConsoleProcess, path: str) -> str:
    """Open `path`; the page's text (a page with a down cluster fails the test)."""
    from selenium.webdriver.common.by import By

    driver.get(console.url + path)
    text: str = driver.find_element(By.TAG_NAME, "body").text
    assert "did not answer" not in text, text
    return text


def rows(driver: Any, heading: str) -> list[list[str]]:
    """The cells of the first table after the <h2> `heading`."""
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.XPATH, f"//h2[text()={heading!r}]/following-sibling::table[1]")
    return [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]


def test_a_created_topic_shows_with_its_queues(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic = unique("ConsoleTopic")
    cli(standalone, tmp_path, "topic", "create", topic, "--write-queues", "3", "--read-queues", "3")
    text = visit(driver, console, "/topics")
    assert topic in text
    driver.find_element(By.LINK_TEXT, topic).click()
    assert driver.title.startswith(f"Topic {topic}")
    queues = rows(driver, "Status per queue")
    assert [row[1] for row in queues] == ["0", "1", "2"]
    assert all(row[2:4] == ["0", "0"] for row in queues)
    route = rows(driver, "Route")
    assert route[0][2] == f"0: {standalone.addr}"


def test_a_produced_message_is_found_by_key_and_by_id_with_its_body(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic, key = unique("ConsoleMsg"), unique("order")
    cli(standalone, tmp_path, "topic", "create", topic)
    sent = cli(standalone, tmp_path, "produce", topic, "--keys", key, data=b"the body of it\n")

    msg_id = json.loads(sent.splitlines()[0])["msgId"]
    assert "No group consumes its topic." in visit(driver, console, f"/message?id={msg_id}")

    visit(driver, console, "/messages")
    forms = driver.find_elements(By.TAG_NAME, "form")
    forms[1].find_element(By.NAME, "topic").send_keys(topic)
    forms[1].find_element(By.NAME, "key").send_keys(key)
    forms[1].find_element(By.TAG_NAME, "button").click()
    result = driver.find_element(By.ID, "result").text
    assert "1 found" in result and msg_id in result and key in result
    driver.find_element(By.LINK_TEXT, msg_id).click()
    assert driver.find_element(By.ID, "body").text == "the body of it"

    visit(driver, console, "/messages")
    form = driver.find_elements(By.TAG_NAME, "form")[2]
    form.find_element(By.NAME, "id").send_keys(msg_id)
    form.find_element(By.TAG_NAME, "button").click()
    assert msg_id in driver.find_element(By.ID, "result").text
    driver.find_element(By.LINK_TEXT, msg_id).click()
    assert driver.find_element(By.ID, "body").text == "the body of it"
    properties = dict(row for row in rows(driver, "Properties"))
    assert properties["KEYS"] == key

    # the time range of the last hour holds it, positioned by the broker's lookup
    text = visit(driver, console, f"/messages?topic={topic}")
    assert "1 messages in the range" in text and msg_id in text


def test_a_traced_message_shows_its_trace(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic, group = unique("ConsoleTraced"), unique("console_traced")
    cli(standalone, tmp_path, "topic", "create", topic)
    sent = cli(
        standalone,
        tmp_path,
        "produce",
        topic,
        "--trace",
        "--tags",
        "T",
        "--keys",
        "k1",
        data=b"t\n",
    )
    msg_id = json.loads(sent)["msgId"]
    assert "No trace of" in visit(driver, console, f"/trace?id={unique('nobody')}")
    cli(
        standalone, tmp_path, "consume", topic, "-g", group, "--from", "first", "-c", "1", "--trace"
    )

    def traced() -> list[list[str]]:
        visit(driver, console, f"/message?id={msg_id}&topic={topic}")
        driver.find_element(By.LINK_TEXT, "Its trace").click()
        return rows(driver, "Trace records")

    def complete() -> bool:
        return {row[0] for row in traced()} >= {"Pub", "SubBefore", "SubAfter"}

    wait_until(complete, f"the trace of {msg_id} shows its send and its consumption")
    by_type = {row[0]: row for row in traced()}
    assert by_type["Pub"][1] == "rmq-produce" and by_type["Pub"][6:9] == [topic, "T", "k1"]
    assert by_type["SubAfter"][1] == group and by_type["SubAfter"][5] == "success"


def test_a_group_lag_falls_as_it_consumes(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic, group = unique("ConsoleLag"), unique("console_group")
    cli(standalone, tmp_path, "topic", "create", topic, "--write-queues", "2", "--read-queues", "2")
    first = json.loads(cli(standalone, tmp_path, "produce", topic, data=b"first\n"))["msgId"]
    cli(standalone, tmp_path, "consume", topic, "-g", group, "--from", "first", "-c", "1")
    cli(standalone, tmp_path, "produce", topic, data=b"".join(b"m%d\n" % i for i in range(6)))

    def lag() -> int:
        visit(driver, console, f"/group?name={group}")
        return int(driver.find_element(By.ID, "total-lag").text)

    assert lag() == 6
    listed = visit(driver, console, f"/groups?q={group}")
    assert "1 of" in listed
    cells = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "tbody tr td")]
    assert cells[:2] == [group, "6"]

    cli(standalone, tmp_path, "consume", topic, "-g", group, "-c", "4")
    assert lag() == 2
    cli(standalone, tmp_path, "consume", topic, "-g", group, "-c", "2")
    assert lag() == 0
    text = visit(driver, console, f"/topic?name={topic}")
    assert group in text
    visit(driver, console, f"/message?id={first}&topic={topic}")
    assert rows(driver, "Consumer groups")[0][0] == group  # offline: NOT_ONLINE or UNKNOWN


def test_cluster_broker_overview_and_metrics(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic = unique("ConsoleTps")
    cli(standalone, tmp_path, "topic", "create", topic)
    cli(standalone, tmp_path, "produce", topic, data=b"a\nb\nc\n")
    text = visit(driver, console, "/cluster")
    assert standalone.addr in text and "up" in text
    driver.find_element(By.LINK_TEXT, standalone.addr).click()
    keys = [row[0] for row in rows(driver, "Runtime status")]
    assert "brokerVersionDesc" in keys
    config = dict(row for row in rows(driver, "Configuration"))
    assert config["listenPort"] == str(standalone.port)

    def charted() -> bool:
        visit(driver, console, f"/?topic={topic}")
        charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
        return len(charts) == 2 and bool(charts[1].find_elements(By.CSS_SELECTOR, "polyline"))

    wait_until(charted, f"the overview charts {topic}'s TPS")
    status = rows(driver, "Name servers")
    assert status == [[standalone.namesrv_addr, "up", "in use"]]

    def exported() -> bool:
        driver.get(console.url + "/metrics")
        return f'topic="{topic}"' in driver.find_element(By.TAG_NAME, "body").text

    wait_until(exported, "/metrics has the topic's series")


def test_a_connected_producer_shows(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    import subprocess

    from tests.procs import rmq_command

    topic, group = unique("ConsoleProducer"), unique("console_producers")
    cli(standalone, tmp_path, "topic", "create", topic)
    sending = subprocess.Popen(
        rmq_command(["produce", topic, "-g", group, "-n", standalone.namesrv_addr]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        assert sending.stdin is not None and sending.stdout is not None
        sending.stdin.write(b"one\n")
        sending.stdin.flush()
        assert b"SEND_OK" in sending.stdout.readline()  # connected, and stays while stdin is open

        def listed() -> bool:
            visit(driver, console, "/producers")
            return any(row[0] == group for row in table_rows(driver))

        wait_until(listed, f"the producers page lists {group}")
        row = next(row for row in table_rows(driver) if row[0] == group)
        assert row[1] == standalone.name and row[3].startswith("127.0.0.1:")
    finally:
        if sending.stdin is not None:
            sending.stdin.close()
        assert sending.wait(30) == 0


def table_rows(driver: Any) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in driver.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]


def test_an_online_consumer_shows_with_its_running_info(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    import subprocess

    from selenium.webdriver.common.by import By

    from tests.procs import rmq_command

    topic, group = unique("ConsoleOnline"), unique("console_online")
    cli(standalone, tmp_path, "topic", "create", topic)
    cli(standalone, tmp_path, "produce", topic, data=b"a\nb\n")
    reading = subprocess.Popen(
        rmq_command(
            ["consume", topic, "-g", group, "--from", "first", "-n", standalone.namesrv_addr]
        ),
        stdout=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        assert reading.stdout is not None
        reading.stdout.readline()  # subscribed and consuming

        def online() -> bool:
            text = visit(driver, console, f"/group?name={group}")
            return "Running info" in text

        wait_until(online, f"{group}'s running info on its page")
        clients = rows(driver, "Clients")
        assert len(clients) == 1 and clients[0][1].startswith("127.0.0.1:")
        running = rows(driver, "Running info")
        assert [row[1] for row in running] == sorted([topic, f"%RETRY%{group}"])
        assert all(row[0] == clients[0][0] for row in running)
        assert "Model CLUSTERING" in driver.find_element(By.TAG_NAME, "main").text
        listed = visit(driver, console, f"/groups?q={group}")
        assert "1 of" in listed
        assert table_rows(driver)[0][4] == "1"  # one client online
    finally:
        reading.terminate()
        reading.wait(30)


def test_a_time_range_is_positioned_by_the_broker_and_paged(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    import time
    from datetime import datetime
    from urllib.parse import urlencode

    from selenium.webdriver.common.by import By

    topic = unique("ConsoleRange")
    cli(standalone, tmp_path, "topic", "create", topic, "--write-queues", "2", "--read-queues", "2")
    before = [
        json.loads(line)["msgId"]
        for line in cli(standalone, tmp_path, "produce", topic, data=b"old\n" * 5).splitlines()
    ]
    # the range starts at the next whole second after the first sends were stored
    start = int(time.time()) + 1
    wait_until(lambda: time.time() > start, "the range's start has passed")
    sent = cli(
        standalone, tmp_path, "produce", topic, data=b"".join(b"new %d\n" % i for i in range(25))
    )
    after = {json.loads(line)["msgId"] for line in sent.splitlines()}
    query = {
        "topic": topic,
        "begin": datetime.fromtimestamp(start).strftime("%Y-%m-%dT%H:%M:%S"),
        "end": datetime.fromtimestamp(time.time() + 60).strftime("%Y-%m-%dT%H:%M:%S"),
    }
    text = visit(driver, console, "/messages?" + urlencode(query))
    assert "25 messages in the range; page 1 of 2" in text
    first = {row[0] for row in rows_of_result(driver)}
    driver.find_element(By.LINK_TEXT, "next").click()
    assert "page 2 of 2" in driver.find_element(By.ID, "result").text
    second = {row[0] for row in rows_of_result(driver)}
    assert len(first) == 20 and len(second) == 5
    assert first | second == after and not set(before) & (first | second)


def rows_of_result(driver: Any) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    result = driver.find_element(By.ID, "result")
    return [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in result.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]


def test_a_dead_letter_shows_on_the_dlq_page(
    standalone: StandaloneProcess, console: ConsoleProcess, driver: Any, tmp_path: Path
) -> None:
    import asyncio

    from selenium.webdriver.common.by import By

    topic, group = unique("ConsoleDlq"), unique("console_dlq")
    cli(standalone, tmp_path, "topic", "create", topic)
    sent = cli(standalone, tmp_path, "produce", topic, data=b"it failed\n")
    msg_id = json.loads(sent)["msgId"]
    assert f"{group} has no dead letters." in visit(driver, console, f"/dlq?group={group}")

    asyncio.run(fail_into_the_dlq(standalone.namesrv_addr, topic, group))
    visit(driver, console, f"/group?name={group}")
    click(driver, driver.find_element(By.LINK_TEXT, "its dead letters"))
    result = driver.find_element(By.ID, "result").text
    assert "1 messages in the range" in result and msg_id in result
    listed = driver.find_element(By.XPATH, "//p[starts-with(., 'Groups with dead letters')]")
    assert group in listed.text.split(": ", 1)[1].split(", ")
    click(driver, driver.find_element(By.LINK_TEXT, msg_id))
    assert driver.find_element(By.ID, "body").text == "it failed"
    facts = dict(row for row in rows(driver, "Properties"))
    assert facts["RETRY_TOPIC"] == topic and facts["ORIGIN_MESSAGE_ID"]

    visit(driver, console, "/dlq")
    form = driver.find_elements(By.TAG_NAME, "form")[1]
    form.find_element(By.NAME, "group").send_keys(group)
    form.find_element(By.NAME, "id").send_keys(msg_id)
    click(driver, form.find_element(By.TAG_NAME, "button"))
    found = driver.find_element(By.ID, "result").text
    assert "1 found" in found and msg_id in found
