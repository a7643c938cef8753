"""The console's cluster page in a headless Chromium shows how each broker stands in its
group: a DLedger group of three `rmq broker` processes as one LEADER and two FOLLOWERs with
their term and committed index, and a master with its slave as "1 slave, 1 connected" and
the slave's bytes behind its master; when the master is killed its slave says its master is
down."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.browser.console import CHROMEDRIVER, CHROMIUM, ConsoleProcess, browser, wait_until
from tests.integration.test_dledger_broker import start_group
from tests.integration.test_replication import start_pair
from tests.procs import RmqProcesses, unique

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and not os.environ.get("CI"),
    reason="Chromium and chromedriver are not installed (make unit installs them as root)",
)


def cluster_rows(driver: Any, console: ConsoleProcess) -> dict[str, dict[str, str]]:
    """The cluster page's rows by broker address, each cell by its column's heading."""
    from selenium.webdriver.common.by import By

    driver.get(console.url + "/cluster")
    headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "thead th")]
    rows = {}
    for tr in driver.find_elements(By.CSS_SELECTOR, "tbody tr"):
        texts = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        cells = dict(zip(headers, texts, strict=True))
        rows[cells["address"]] = cells
    return rows


def test_the_cluster_page_shows_dledger_roles_and_master_slave_replication(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    group = start_group(rmq_processes)
    master, slave = start_pair(rmq_processes, group.namesrv, "ASYNC_MASTER", unique("ha"))
    nodes = {broker.addr for broker in group.brokers}
    console = ConsoleProcess(group.namesrv.addr, tmp_path / "state")
    try:
        with browser() as driver:
            seen: dict[str, dict[str, str]] = {}

            def settled() -> bool:
                seen.clear()
                seen.update(cluster_rows(driver, console))
                roles = sorted(seen[a]["role"] for a in nodes if a in seen)
                return (
                    roles == ["FOLLOWER", "FOLLOWER", "LEADER"]
                    and master.addr in seen
                    and seen[master.addr]["replication"].startswith("1 slave, 1 connected")
                    and slave.addr in seen
                    and bool(
                        re.fullmatch(
                            r"\d+ bytes behind its master", seen[slave.addr]["replication"]
                        )
                    )
                )

            wait_until(settled, "the DLedger roles and the slave's replication", 60)
            terms = {seen[a]["term"] for a in nodes}
            assert len(terms) == 1 and int(terms.pop()) >= 1
            assert all(int(seen[a]["committed index"]) >= -1 for a in nodes)  # -1: none yet
            assert {seen[a]["replication"] for a in nodes} == {"-"}
            assert seen[master.addr]["role"] == "MASTER" and seen[slave.addr]["role"] == "SLAVE"
            assert seen[master.addr]["term"] == "-" and seen[slave.addr]["term"] == "-"
            assert all(row["status"] == "up" for row in seen.values())

            master.popen.send_signal(signal.SIGKILL)
            master.popen.wait(10)

            def master_down() -> bool:
                rows = cluster_rows(driver, console)
                return (
                    rows[master.addr]["status"].startswith("down")
                    and rows[slave.addr]["replication"] == "its master is down"
                )

            wait_until(master_down, "the master down and its slave saying so", 60)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == []
    finally:
        assert console.stop() == 0
