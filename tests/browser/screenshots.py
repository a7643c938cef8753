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
import json
import sys
import tempfile
from pathlib import Path

from tests.browser.console import ConsoleProcess, browser, fail_into_the_dlq, wait_until
from tests.procs import RmqProcesses, run_rmq_cli

TOPIC = "Orders"
GROUP = "billing"
FAILING = "audit"


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
            console = ConsoleProcess(namesrv, root / "state", interval="1s")
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
                    }
                    for name, path in pages.items():
                        driver.set_window_size(1280, 800)
                        driver.get(console.url + path)
                        height = driver.execute_script(
                            "return document.documentElement.scrollHeight"
                        )
                        driver.set_window_size(1280, min(max(height + 140, 400), 1800))
                        driver.get(console.url + path)
                        driver.save_screenshot(str(out / f"{name}.png"))
                        print(out / f"{name}.png")
            finally:
                console.stop()
        finally:
            processes.kill_all()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console"))
