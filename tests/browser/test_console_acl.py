"""The console's ACL page in a headless Chromium against an `rmq broker` with aclEnable=true:
the console signs with the ACL's admin account; its admin sees the accounts (never a
secret), creates an account that `rmq produce` then sends with, and deletes it after a
preview, after which the same send is refused."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.console import CHROMEDRIVER, CHROMIUM, ConsoleProcess, add_account, browser
from tests.browser.test_console_actions import ADMIN as CONSOLE_ADMIN
from tests.browser.test_console_actions import ADMIN_PASSWORD, confirm, log_in, submit
from tests.integration.test_acl_cli import ADMIN, TOPIC, AclCluster, until
from tests.integration.test_acl_cli import cluster as cluster  # the module's ACL broker

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and not os.environ.get("CI"),
    reason="Chromium and chromedriver are not installed (make unit installs them as root)",
)

NEWCOMER = ("ConsoleMadeKey", "ConsoleMadeSecret9")


@pytest.fixture(scope="module")
def console(
    cluster: AclCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    home = tmp_path_factory.mktemp("acl-console")
    users = home / "users.json"
    add_account(users, CONSOLE_ADMIN, ADMIN_PASSWORD, "admin")
    keys = ["--access-key", ADMIN[0], "--secret-key", ADMIN[1]]
    running = ConsoleProcess(
        cluster.namesrv.addr, home / "state", extra=["--users", str(users), *keys]
    )
    try:
        yield running
    finally:
        assert running.stop() == 0


def test_an_admin_creates_an_account_that_rmq_produce_uses_then_deletes_it(
    cluster: AclCluster, console: ConsoleProcess, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    assert cluster.produce(NEWCOMER).returncode != 0  # no such account yet
    with browser() as driver:
        log_in(driver, console, CONSOLE_ADMIN, ADMIN_PASSWORD)
        driver.get(console.url + "/acl")
        listed = driver.find_element(By.TAG_NAME, "table").text
        assert ADMIN[0] in listed and "RmqWriterKey" in listed
        assert ADMIN[1] not in driver.page_source  # no secret on the page

        text = submit(
            driver,
            "acl-account",
            access_key=NEWCOMER[0],
            secret_key=NEWCOMER[1],
            default_topic_perm="DENY",
            topic_perms=f"{TOPIC}=PUB",
        )
        assert f"Account {NEWCOMER[0]} saved on {cluster.broker.addr}" in text
        assert NEWCOMER[1] not in driver.page_source
        sent = until(lambda: cluster.produce(NEWCOMER, "from the console's account"), ok=True)
        assert sent.returncode == 0 and "SEND_OK" in sent.stdout, sent.stderr
        driver.get(console.url + "/acl")
        row = next(
            r.text
            for r in driver.find_elements(By.CSS_SELECTOR, "tbody tr")
            if NEWCOMER[0] in r.text
        )
        assert f"{TOPIC}=PUB" in row and "DENY" in row

        text = submit(driver, "acl-delete", access_key=NEWCOMER[0])
        assert f"This deletes account {NEWCOMER[0]} from the ACL of {cluster.broker.addr}" in text
        assert f"Account {NEWCOMER[0]} deleted" in confirm(driver)
    refused = until(lambda: cluster.produce(NEWCOMER), ok=False)
    assert refused.returncode != 0
