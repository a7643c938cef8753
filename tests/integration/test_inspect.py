"""`rmq inspect` on a store written by a real `rmq broker`, as a user runs it.

A name server and a broker run as processes; rmq's producer sends messages (tags, keys, a
body big enough to be stored compressed) and a consumer offset is committed.  While the
broker runs, one-shot `python -m rmq inspect STORE ...` commands see its lock (by pid) and a
clean store; after a clean shutdown they see the shutdown, the committed offsets with their
lag, and exactly the messages that were sent.  Then the interactive shell is driven through
a pseudo-terminal with real keystrokes (TAB completion included), and the store's bytes and
modification times are compared with a snapshot taken before any of it: inspecting never
writes.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmq.client import api
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.client import RemotingClient
from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcess, RmqProcesses, rmq_command

TOPIC = "InspectTopic"
GROUP = "inspect-app"
MESSAGES = 40
BIG_BODY = ("compressed " * 1000).encode()
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")


@dataclass
class Sent:
    body: bytes
    msg_id: str
    queue_id: int
    queue_offset: int
    tags: str
    keys: list[str]


@dataclass
class BrokerStore:
    broker: RmqProcess
    root: Path
    sent: list[Sent]
    committed: dict[int, int]


async def produce(namesrv: str, broker: RmqProcess) -> tuple[list[Sent], dict[int, int]]:
    sent = []
    async with Producer("inspect-producer", namesrv) as producer:
        for n in range(MESSAGES):
            body = BIG_BODY if n == 7 else f"message {n}".encode()
            tags = "TagA" if n % 2 else "TagB"
            keys = [f"order-{n}", "inspected"]
            result = await producer.send(Message(TOPIC, body, tags=tags, keys=keys))
            assert result.status is api.SendStatus.SEND_OK
            sent.append(
                Sent(
                    body,
                    result.msg_id,
                    result.message_queue.queue_id,
                    result.queue_offset,
                    tags,
                    keys,
                )
            )
    committed = {0: 1, 1: 3}
    async with RemotingClient() as client:
        for queue_id, offset in committed.items():
            queue = MessageQueue(TOPIC, broker.name, queue_id)
            await api.update_consumer_offset(client, broker.addr, GROUP, queue, offset, 5.0)
    return sent, committed


@pytest.fixture(scope="module")
def broker_store(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[BrokerStore]:
    broker = module_processes.start_broker("inspected", namesrv=namesrv)
    sent, committed = asyncio.run(asyncio.wait_for(produce(namesrv.addr, broker), 30))
    yield BrokerStore(broker, broker.home / "store", sent, committed)
    broker.kill()


def inspect(
    root: Path, *args: str, home: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home or root.parent)}
    result = cli_run(
        rmq_command(["inspect", str(root), *args]),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def snapshot(root: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_inspect_next_to_the_running_broker(broker_store: BrokerStore) -> None:
    overview = as_json(inspect(broker_store.root, "overview", "-o", "json"))
    assert overview["lockHeld"] is True
    assert overview["lockHolderPid"] == broker_store.broker.popen.pid
    assert overview["shutdown"] == "running"
    topic = next(t for t in overview["topicSummaries"] if t["topic"] == TOPIC)
    assert topic["messages"] == MESSAGES

    verify = inspect(broker_store.root, "verify", "-o", "json")
    assert as_json(verify)["problems"] == []

    wanted = broker_store.sent[11]
    found = as_json(inspect(broker_store.root, "by-key", "order-11", "-t", TOPIC, "-o", "json"))
    assert [(r["msgId"], r["body"]) for r in found] == [(wanted.msg_id, wanted.body.decode())]
    assert broker_store.broker.running


def test_inspect_after_a_clean_shutdown(broker_store: BrokerStore) -> None:
    broker_store.broker.stop_cleanly()
    root = broker_store.root
    overview = as_json(inspect(root, "overview", "-o", "json"))
    assert (overview["lockHeld"], overview["abortFile"], overview["shutdown"]) == (
        False,
        False,
        "clean",
    )
    assert "not running: the lock is free" in inspect(root, "overview").stdout

    exported = [
        json.loads(line) for line in inspect(root, "export", "-t", TOPIC).stdout.splitlines()
    ]
    by_id = {record["msgId"]: record for record in exported}
    assert len(exported) == MESSAGES
    for sent in broker_store.sent:
        record = by_id[sent.msg_id]
        assert record["body"] == sent.body.decode()
        assert (record["tags"], record["keys"]) == (sent.tags, sent.keys)
        assert (record["queueId"], record["queueOffset"]) == (sent.queue_id, sent.queue_offset)

    stats = as_json(inspect(root, "stats", "-t", TOPIC, "--by", "topic", "-o", "json"))
    assert stats[0]["messages"] == MESSAGES and stats[0]["crcErrors"] == 0
    assert stats[0]["tags"] == {"TagA": MESSAGES // 2, "TagB": MESSAGES // 2}

    big = next(s for s in broker_store.sent if s.body == BIG_BODY)
    dump = inspect(root, "by-id", big.msg_id).stdout
    assert "compressed compressed" in dump
    (record,) = as_json(inspect(root, "by-unique-key", big.msg_id, "-o", "json"))
    assert record["sysFlag"] & 1 and record["body"] == BIG_BODY.decode()
    detail = inspect(root, "dump", str(record["commitLogOffset"])).stdout
    assert "compressed," in detail and f"{len(BIG_BODY)} bytes decompressed" in detail

    counts: dict[int, int] = {}
    for sent in broker_store.sent:
        counts[sent.queue_id] = counts.get(sent.queue_id, 0) + 1
    offsets = as_json(inspect(root, "config", "offsets", "-o", "json"))
    mine = {row["queueId"]: row for row in offsets if row["group"] == GROUP}
    assert {queue_id: row["offset"] for queue_id, row in mine.items()} == broker_store.committed
    for queue_id, row in mine.items():
        assert row["maxOffset"] == counts[queue_id]
        assert row["lag"] == counts[queue_id] - broker_store.committed[queue_id]
    assert inspect(root, "verify").stdout.startswith("Verification\nRESULT")


class Terminal:
    """A process on a pseudo-terminal: keystrokes in, screen text (escapes removed) out."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.screen = b""
        self.seen = 0

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, pattern: str, timeout: float = 15.0) -> str:
        """Wait until `pattern` shows up after the previous match; returns the text between."""
        regex = re.compile(pattern.encode())
        deadline = time.monotonic() + timeout
        while True:
            text = _ANSI.sub(b"", self.screen)
            found = regex.search(text, self.seen)
            if found:
                before = text[self.seen : found.end()].decode(errors="replace")
                self.seen = found.end()
                return before
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{pattern!r} not shown; screen:\n{text.decode(errors='replace')}"
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.2))
            if ready:
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:
                    assert self.process.poll() is None, f"exited; screen:\n{text.decode()}"

    def close(self) -> int:
        """Wait for the exit (a process still running after 15 s is killed)."""
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()
        finally:
            os.close(self.master)


def test_shell_on_a_terminal_never_writes(broker_store: BrokerStore, tmp_path: Path) -> None:
    if broker_store.broker.running:
        broker_store.broker.stop_cleanly()
    root = broker_store.root
    before = snapshot(root)
    state = tmp_path / "state"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(state),
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    terminal = Terminal(rmq_command(["inspect", str(root)]), env)
    try:
        terminal.expect(r"inspect store>")
        terminal.type("ov\t")
        terminal.expect("overview")
        terminal.type("\r")
        terminal.expect(r"BROKER\s+not running")
        terminal.expect(r"inspect store>")
        terminal.type(f"queue {TOPIC[:5]}\t")
        terminal.expect(TOPIC)
        terminal.type(" 1 -c 2 -o ndjson\r")
        lines = terminal.expect(r'\{"topic"[^\n]*"queueOffset":1,[^\n]*\}\n')
        records = [json.loads(line) for line in re.findall(r'\{"topic"[^\n]*\}', lines)]
        assert [(r["queueId"], r["queueOffset"]) for r in records] == [(1, 0), (1, 1)]
        terminal.type("nosuch\r")
        terminal.expect(r"rmq: error: No such command 'nosuch'")
        terminal.type("verify\r")
        terminal.expect(r"RESULT\s+clean")
        terminal.type("help\r")
        terminal.expect("by-unique-key")
        terminal.type("quit\r")
    finally:
        code = terminal.close()
    assert code == 0
    history = (state / "rmq" / "inspect_history").read_text()
    assert "+overview\n" in history and f"+queue {TOPIC} 1 -c 2 -o ndjson\n" in history
    for command in (["stats"], ["files", "index"], ["config-diff"], ["checkpoint"]):
        inspect(root, *command, home=tmp_path)
    assert snapshot(root) == before
