"""What a new user trips on, against a real `rmq standalone`: the oversize-message errors name
`maxMessageSize`, `topic update` refuses zero queues, `topic delete` of an unknown topic
fails, `topic list` hides the brokers' own topics unless `--all`, `topic status -o wide` adds
columns, `-n` at a broker says it is not a name server, an address from a profile or the
environment is named as such, and timeouts print rounded."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from rmq.common.naming import SYSTEM_TOPICS
from tests.procs import LOOPBACK, RmqProcesses, StandaloneProcess, run_rmq_cli

BROKER_MAX_MESSAGE_SIZE = 2048
CLIENT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone(
        "first-use", props={"maxMessageSize": BROKER_MAX_MESSAGE_SIZE}
    )
    yield process
    process.stop_cleanly()


def rmq(
    *args: str, home: Path, input: bytes = b"", env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_rmq_cli(args, home=home, input=input, env=env)


def one_error(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The single `rmq: error:` line of a command that failed with `code`."""
    assert done.returncode == code, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rmq: error: "), done.stderr
    return lines[0]


# -- maxMessageSize ---------------------------------------------------------------------------


def first_error_of_sending(standalone: StandaloneProcess, home: Path, body: bytes) -> str:
    """The first stderr line of `rmq produce -f lines` sending `body`, which must fail."""
    namesrv = standalone.namesrv_addr
    done = rmq("produce", "Big", "-f", "lines", "-n", namesrv, home=home, input=body + b"\n")
    assert done.returncode == 1, done.stderr
    return done.stderr.splitlines()[0]


def test_a_body_over_the_producers_limit_names_max_message_size(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    body = b"x" * (CLIENT_MAX_MESSAGE_SIZE + 1)
    assert first_error_of_sending(standalone, tmp_path, body) == (
        "rmq: error: line 1: the message body size over max value, MAX: "
        f"{CLIENT_MAX_MESSAGE_SIZE} (over the producer's maxMessageSize; "
        f"the body is {len(body)} bytes)"
    )


def test_a_broker_refusal_names_the_brokers_max_message_size(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    body = b"y" * (BROKER_MAX_MESSAGE_SIZE + 100)
    first = first_error_of_sending(standalone, tmp_path, body)
    assert first.startswith("rmq: error: line 1: ")
    assert f"msg body length limit {BROKER_MAX_MESSAGE_SIZE}B" in first
    assert first.endswith("(over the broker's maxMessageSize, or properties over 32 KiB)")


# -- topic commands ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [(("-r", "0", "-w", "0"), "'--read-queues' / '-r'"), (("-w", "0"), "'--write-queues' / '-w'")],
)
def test_topic_update_refuses_zero_queues(
    standalone: StandaloneProcess, tmp_path: Path, args: tuple[str, ...], option: str
) -> None:
    done = rmq("topic", "update", "NoQueues", *args, "-n", standalone.namesrv_addr, home=tmp_path)
    error = one_error(done, 2)
    assert f"Invalid value for {option}: 0 is not in the range x>=1" in error
    route = rmq("topic", "route", "NoQueues", "-n", standalone.namesrv_addr, home=tmp_path)
    assert "topic 'NoQueues' not found" in one_error(route)


def test_topic_delete_of_an_unknown_topic_fails_naming_it(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    done = rmq(
        "topic", "delete", "NoSuchTopic", "--yes", "-n", standalone.namesrv_addr, home=tmp_path
    )
    assert done.stdout == ""
    assert one_error(done) == (
        "rmq: error: topic 'NoSuchTopic' not found: the name server has no route for it; "
        "nothing was deleted; check the name with 'rmq topic list --all'"
    )


def test_topic_list_hides_the_brokers_own_topics_unless_all(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    namesrv = standalone.namesrv_addr
    for topic in ("UserTopic", "%RETRY%SomeGroup", "%DLQ%SomeGroup"):
        created = rmq("topic", "update", topic, "-n", namesrv, home=tmp_path)
        assert created.returncode == 0, created.stderr

    def listed(*extra: str) -> set[str]:
        done = rmq("topic", "list", "-o", "json", "-n", namesrv, *extra, home=tmp_path)
        assert done.returncode == 0, done.stderr
        return {row["topic"] for row in json.loads(done.stdout)}

    internal = {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "DefaultCluster",
        "DefaultCluster_REPLY_TOPIC",
        "first-use",
        "%RETRY%SomeGroup",
        "%DLQ%SomeGroup",
    }
    everything = listed("--all")
    assert internal | {"UserTopic"} <= everything
    shown = listed()
    assert "UserTopic" in shown
    assert not shown & internal
    assert everything - shown <= internal | SYSTEM_TOPICS


def test_topic_status_wide_adds_messages_and_the_broker_address(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    namesrv = standalone.namesrv_addr
    created = rmq("topic", "update", "Wide", "-r", "2", "-w", "2", "-n", namesrv, home=tmp_path)
    assert created.returncode == 0, created.stderr
    sent = rmq("produce", "Wide", "-f", "lines", "-n", namesrv, home=tmp_path, input=b"a\nb\nc\n")
    assert sent.returncode == 0, sent.stderr

    table = rmq("topic", "status", "Wide", "-n", namesrv, home=tmp_path).stdout.splitlines()
    wide = rmq("topic", "status", "Wide", "-o", "wide", "-n", namesrv, home=tmp_path)
    lines = wide.stdout.splitlines()
    assert wide.returncode == 0 and len(lines) == len(table) == 3
    assert lines[0].split() == [
        *table[0].split(), "MESSAGES", "BROKER", "ADDR", "LAST", "UPDATE", "TIMESTAMP",
    ]  # fmt: skip
    rows = [line.split() for line in lines[1:]]
    assert {row[-2] for row in rows} == {standalone.addr}
    assert sum(int(row[-3]) for row in rows) == 3


# -- the name server address ------------------------------------------------------------------


def test_n_at_a_broker_says_it_is_not_a_name_server(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    broker = standalone.addr
    expected = (
        f"rmq: error: {broker} is not a name server (it answered "
        "REQUEST_CODE_NOT_SUPPORTED(3): request type {code} not supported); "
        "point -n/--namesrv at a name server (port 9876 unless set otherwise)"
    )
    listed = rmq("topic", "list", "-n", broker, home=tmp_path)
    assert one_error(listed) == expected.format(code=106)
    produced = rmq("produce", "T", "-n", broker, home=tmp_path, input=b"x\n")
    assert one_error(produced) == expected.format(code=105)


def test_an_address_from_the_environment_or_a_profile_is_named_as_such(
    standalone: StandaloneProcess, tmp_path: Path
) -> None:
    broker = standalone.addr
    from_env = rmq("cluster", "list", home=tmp_path, env={"NAMESRV_ADDR": broker})
    assert one_error(from_env).startswith(
        f"rmq: error: {broker} (from NAMESRV_ADDR) is not a name server"
    )
    config = {"RMQ_CONFIG": str(tmp_path / "rmq.toml")}
    with socket.socket() as unused:
        unused.bind((LOOPBACK, 0))
        closed = f"{LOOPBACK}:{unused.getsockname()[1]}"
    made = rmq("profile", "set", "dev", "--namesrv", closed, home=tmp_path, env=config)
    assert made.returncode == 0, made.stderr
    down = rmq("--profile", "dev", "topic", "list", home=tmp_path, env=config)
    assert f"check that the name server(s) {closed} (from profile 'dev') and" in one_error(down)
    flagged = rmq("topic", "list", "-n", closed, home=tmp_path, env=config)
    assert f"name server(s) {closed} and" in one_error(flagged)


def test_a_timeout_prints_rounded(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind((LOOPBACK, 0))
        silent.listen()
        addr = f"{LOOPBACK}:{silent.getsockname()[1]}"
        done = rmq("topic", "list", "-n", addr, home=tmp_path)
    error = one_error(done)
    assert f"from {addr} within 5.0s;" in error
    assert not re.search(r"\d\.\d{2,}s", error), error
