"""`rmq console` when a broker goes away: the cluster page shows it down with the reason
while the name server still lists it, and up again once it is back, without restarting the
console; the TPS history a console wrote is drawn again by a console started after it."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from rmq.console.history import History, day_of
from tests.browser.console import ConsoleProcess, wait_until
from tests.procs import RmqProcesses


def page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
        text: str = answer.read().decode()
        return text


def test_a_broker_that_goes_away_shows_down_then_up(
    rmq_processes: RmqProcesses, tmp_path: Path
) -> None:
    namesrv = rmq_processes.start_namesrv()
    broker = rmq_processes.start_broker("broker-a", namesrv=namesrv)
    console = ConsoleProcess(namesrv.addr, tmp_path / "state", interval="60s")
    try:
        assert '<span class="ok">up</span>' in page(console.url + "/cluster")
        broker.kill()
        text = page(console.url + "/cluster")
        assert broker.addr in text and '<span class="down">down: ' in text
        rmq_processes.restart(broker)
        wait_until(
            lambda: '<span class="down">' not in page(console.url + "/cluster"),
            "the broker shows up again",
        )
    finally:
        assert console.stop() == 0


def test_a_restarted_console_draws_the_day_so_far(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    written = History(tmp_path)
    written.append({"t": now - 2000, "brokers": {"b/0": [1.5, 0.5]}, "topics": {"T": 2.0}})
    written.append({"t": now - 1000, "brokers": {"b/0": [3.0, 1.0]}, "topics": {}})
    again = History(tmp_path)
    day = day_of(now)
    assert again.days() == [day]
    assert again.broker_series(day) == {
        "b/0 in": [(now - 2000, 1.5), (now - 1000, 3.0)],
        "b/0 out": [(now - 2000, 0.5), (now - 1000, 1.0)],
    }
    assert again.topic_series(day, "T") == [(now - 2000, 2.0), (now - 1000, 0.0)]
    assert again.busiest_topics(day) == [("T", 2.0)]
