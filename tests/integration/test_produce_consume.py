"""`rmq produce` and `rmq consume` as a user runs them: `python -m rmq ...` subprocesses
against a real `rmq standalone`.

Ten thousand messages (binary bodies as base64, UTF-8 keys and properties, a few big enough
to be compressed) go in through `rmq produce`, come out of `rmq consume` exactly once, and
go through a shell pipe `rmq consume | rmq produce` into a second topic intact.  The reading
options (-c, -e, --from in all its forms, --filter, --format) are checked against what was
sent; failures exit 1 naming what failed; Ctrl-C exits 130, and a consumer group stopped with
Ctrl-C (or after -c, broadcasting included) continues in its next run with exactly the
messages it had not printed.  `rmq bench produce|consume` run end to end.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcesses, StandaloneProcess, free_port

_names = itertools.count()


def topic_name(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


@dataclass
class Cli:
    """Runs `python -m rmq` against the standalone, with a HOME of its own."""

    namesrv: str
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "rmq", *args, "-n", self.namesrv]

    def run(
        self, *args: str, input: bytes = b"", timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        return cli_run(
            self.argv(*args), input=input, capture_output=True, env=self.env, timeout=timeout
        )

    def ok(self, *args: str, input: bytes = b"") -> bytes:
        result = self.run(*args, input=input)
        assert result.returncode == 0, result.stderr.decode()
        return result.stdout

    def popen(self, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*args),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
        )

    def produce(self, topic: str, records: Sequence[dict[str, Any]], *options: str) -> list[Any]:
        return ndjson(self.ok("produce", topic, *options, input=to_ndjson(records)))

    def consume(self, topic: str, *options: str) -> list[Any]:
        return ndjson(self.ok("consume", topic, *options))


def to_ndjson(records: Sequence[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()


def ndjson(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines()]


def body_of(record: dict[str, Any]) -> bytes:
    if record.get("bodyEncoding") == "base64":
        return base64.b64decode(record["body"])
    return str(record["body"]).encode()


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("produce-consume")
    yield process
    process.stop_cleanly()


def cli_for(namesrv_addr: str, home: Path) -> Cli:
    """A `Cli` for the name server, with HOME `home` and no RMQ_* or NAMESRV_ADDR settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RMQ_") and name != "NAMESRV_ADDR"
    }
    return Cli(namesrv_addr, {**env, "HOME": str(home)})


@pytest.fixture(scope="module")
def cli(standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    return cli_for(standalone.namesrv_addr, tmp_path_factory.mktemp("cli-home"))


def test_ten_thousand_messages_round_trip_intact_and_once(cli: Cli, tmp_path: Path) -> None:
    rng = random.Random(7)
    sent: list[dict[str, Any]] = []
    for n in range(10_000):
        if n % 1000 == 0:
            body = rng.randbytes(6000)  # compressed on the wire, decompressed when consumed
        elif n % 3:
            body = rng.randbytes(rng.randint(1, 200))
        else:
            body = f"текст {n} ✓".encode()
        sent.append(
            {
                "body": base64.b64encode(body).decode(),
                "bodyEncoding": "base64",
                "tags": f"Tag{n % 3}",
                "keys": [f"ключ-{n}", f"键{n}"],
                "properties": {"名前": f"値{n}", "seq": str(n)},
            }
        )
    first, second = topic_name("RoundTrip"), topic_name("Copied")

    results = cli.produce(first, sent, "--async")
    assert [row["line"] for row in results] == list(range(1, 10_001))
    assert {row["status"] for row in results} == {"SEND_OK"}
    ids = [row["msgId"] for row in results]
    assert len(set(ids)) == 10_000

    # A shell pipe: everything consumed from the first topic is produced into the second.
    copy = tmp_path / "copy.ndjson"
    pipeline = (
        f"{shlex.join(cli.argv('consume', first, '-e'))} | tee {shlex.quote(str(copy))}"
        f" | {shlex.join(cli.argv('produce', second, '--async', '--summary'))}"
    )
    piped = cli_run(
        pipeline, shell=True, capture_output=True, env=cli.env, timeout=120, check=False
    )
    assert piped.returncode == 0, piped.stderr.decode()
    summary = json.loads(piped.stdout)
    assert (summary["topic"], summary["sent"], summary["failed"]) == (second, 10_000, 0)

    consumed = ndjson(copy.read_bytes())
    assert Counter(record["msgId"] for record in consumed) == Counter(ids)
    by_id = {row["msgId"]: row for row in results}
    for record in consumed:
        row = by_id[record["msgId"]]
        assert (record["queueId"], record["queueOffset"]) == (row["queueId"], row["queueOffset"])

    copied = cli.consume(second, "-e")
    assert len(copied) == 10_000
    for record in copied:
        n = int(record["properties"]["seq"])
        original = sent[n]
        assert body_of(record) == base64.b64decode(original["body"]), n
        assert record["keys"] == original["keys"]
        assert record["tags"] == original["tags"]
        assert record["properties"]["名前"] == f"値{n}"
        assert record["topic"] == second
    assert sorted(int(record["properties"]["seq"]) for record in copied) == list(range(10_000))


@pytest.fixture(scope="module")
def forty(cli: Cli) -> tuple[str, list[Any], int]:
    """A topic with 40 messages (tags TagA/TagB alternating), sent in two halves; the time
    between the halves (ms) is returned with the results of the send."""
    topic = topic_name("Reading")
    records = [{"body": f"m{n}", "tags": "TagA" if n % 2 else "TagB"} for n in range(40)]
    results = cli.produce(topic, records[:20])
    time.sleep(0.05)
    between = int(time.time() * 1000)
    time.sleep(0.05)
    results += [{**row, "line": row["line"] + 20} for row in cli.produce(topic, records[20:])]
    return topic, results, between


def test_exit_at_end_count_and_filters(cli: Cli, forty: tuple[str, list[Any], int]) -> None:
    topic, _, _ = forty
    everything = cli.consume(topic, "-e")
    assert sorted(record["body"] for record in everything) == sorted(f"m{n}" for n in range(40))
    for queue_id in {record["queueId"] for record in everything}:
        offsets = [record["queueOffset"] for record in everything if record["queueId"] == queue_id]
        assert offsets == sorted(offsets)

    assert len(cli.consume(topic, "-c", "5")) == 5  # without -e: stops at the count

    tag_a = cli.consume(topic, "--filter", "TagA", "-e")
    assert sorted(record["body"] for record in tag_a) == sorted(f"m{n}" for n in range(40) if n % 2)
    assert len(cli.consume(topic, "--filter", "TagA || TagB", "-e")) == 40


def test_start_positions(cli: Cli, forty: tuple[str, list[Any], int]) -> None:
    topic, results, between = forty
    assert cli.consume(topic, "--from", "last", "-e") == []

    later = cli.consume(topic, "--from", f"@{between}", "-e")
    assert sorted(record["body"] for record in later) == sorted(f"m{n}" for n in range(20, 40))

    max_offsets: dict[int, int] = {}
    for row in results:
        max_offsets[row["queueId"]] = max(max_offsets.get(row["queueId"], -1), row["queueOffset"])
    tail = cli.consume(topic, "--from=-1", "-e")
    assert {(r["queueId"], r["queueOffset"]) for r in tail} == set(max_offsets.items())

    from_eight = cli.consume(topic, "--from", "8", "-e")
    expected = sorted(row["msgId"] for row in results if row["queueOffset"] >= 8)
    assert expected and sorted(record["msgId"] for record in from_eight) == expected


def test_format_templates(cli: Cli, forty: tuple[str, list[Any], int]) -> None:
    topic, _, _ = forty
    records = {r["msgId"]: r for r in cli.consume(topic, "-e")}
    lines = cli.ok("consume", topic, "-e", "-f", "%i %t|%v|%g|%b|%p|%o|%T\\n").splitlines()
    assert len(lines) == 40
    for line in lines:
        msg_id, rest = line.decode().split(" ", 1)
        record = records[msg_id]
        assert rest.split("|") == [
            record["topic"],
            record["body"],
            record["tags"],
            record["brokerName"],
            str(record["queueId"]),
            str(record["queueOffset"]),
            str(record["storeTimestamp"]),
        ]


def test_ordered_async_and_batched_sends(cli: Cli) -> None:
    topic = topic_name("Ordered")
    records = [{"body": f"{n}", "orderId": f"order-{n % 3}"} for n in range(60)]
    results = cli.produce(
        topic, records, "--async", "--sharding-key-field", "orderId", "-f", "lines"
    )
    assert len(results) == 60
    for key in range(3):
        rows = [row for row in results if (row["line"] - 1) % 3 == key]
        assert len({row["queueId"] for row in rows}) == 1
        offsets = [row["queueOffset"] for row in rows]
        assert offsets == sorted(offsets)

    batched = cli.produce(
        topic_name("Batched"), [{"body": str(n)} for n in range(25)], "--batch", "10"
    )
    assert [row["line"] for row in batched] == list(range(1, 26))
    for start in (0, 10, 20):
        batch = batched[start : start + 10]
        assert len({row["queueId"] for row in batch}) == 1
        first = batch[0]["queueOffset"]
        assert [row["queueOffset"] for row in batch] == list(range(first, first + len(batch)))


def test_invalid_lines_are_named_and_the_rest_is_sent(cli: Cli) -> None:
    topic = topic_name("Invalid")
    lines = b'{"body":"one"}\n{"body":\nplain three\n{"tags":"T"}\n{"body":"five"}\n'
    result = cli.run("produce", topic, input=lines)
    assert result.returncode == 1
    assert [row["line"] for row in ndjson(result.stdout)] == [1, 3, 5]
    errors = result.stderr.decode().splitlines()
    assert errors[0].startswith("rmq: error: line 2: not a JSON object (")
    assert errors[1].startswith('rmq: error: line 4: no "body" field')
    assert errors[-1] == "rmq: error: 2 messages failed (lines 2, 4), 3 sent; see the errors above"
    assert sorted(record["body"] for record in cli.consume(topic, "-e")) == [
        "five",
        "one",
        "plain three",
    ]


def test_a_text_line_under_json_format_is_not_a_json_object(cli: Cli) -> None:
    topic = topic_name("TextAsJson")
    result = cli.run("produce", topic, "-f", "json", input=b'{"body":"one"}\ntext line\n')
    assert result.returncode == 1
    assert [row["line"] for row in ndjson(result.stdout)] == [1]
    assert result.stderr.decode().splitlines() == [
        "rmq: error: line 2: not a JSON object (invalid literal at column 1); "
        "-f lines sends each line as it is",
        "rmq: error: 1 message failed (line 2), 1 sent; see the errors above",
    ]


def test_unknown_topic_and_unreachable_name_server_exit_1(cli: Cli) -> None:
    result = cli.run("consume", "NoSuchTopic", "-e")
    assert result.returncode == 1
    assert (
        result.stderr.decode()
        .splitlines()[-1]
        .startswith("rmq: error: topic 'NoSuchTopic' not found")
    )
    down = Cli(f"127.0.0.1:{free_port()}", cli.env)
    for args in (("consume", "Anything", "-e"), ("produce", "Anything")):
        result = down.run(*args, input=b"never sent\n")
        assert result.returncode == 1, args
        assert "rmq: error: cannot reach the server" in result.stderr.decode()
        assert result.stdout == b""


def test_ctrl_c_commits_what_was_printed_and_the_group_continues(cli: Cli) -> None:
    topic, group = topic_name("Interrupted"), topic_name("group")
    cli.produce(topic, [{"body": f"{n:05d} " + "x" * 400} for n in range(3000)], "--batch", "32")

    consumer = cli.popen("consume", topic, "-g", group)
    assert consumer.stdout is not None
    first_lines = [consumer.stdout.readline() for _ in range(20)]
    consumer.send_signal(signal.SIGINT)
    rest = consumer.stdout.read()  # through the buffer readline filled
    code = consumer.wait(timeout=30)
    assert code == 130, consumer.communicate()[1].decode()
    first = [json.loads(line)["body"][:5] for line in [*first_lines, *rest.splitlines()]]
    assert 20 <= len(first) < 3000

    second = [record["body"][:5] for record in cli.consume(topic, "-g", group, "-e")]
    assert Counter(first + second) == Counter(f"{n:05d}" for n in range(3000))


def test_ctrl_c_stops_reading_and_waits_for_sends_under_way(cli: Cli) -> None:
    topic = topic_name("ProduceInterrupted")
    producer = cli.popen("produce", topic, stdin=subprocess.PIPE)
    assert producer.stdin is not None and producer.stdout is not None
    producer.stdin.write(b"a\nb\nc\n")
    producer.stdin.flush()
    sent = [json.loads(producer.stdout.readline())["line"] for _ in range(3)]
    producer.send_signal(signal.SIGINT)
    code = producer.wait(timeout=30)
    out, errors = producer.communicate(b"never read\n")
    assert code == 130, errors.decode()
    assert (sent, out, errors) == ([1, 2, 3], b"", b"")
    assert sorted(record["body"] for record in cli.consume(topic, "-e")) == ["a", "b", "c"]


def test_bench_produce_and_consume(cli: Cli) -> None:
    topic, group = topic_name("Bench"), topic_name("bench")
    produced = json.loads(
        cli.ok(
            "bench", "produce", "-t", topic, "-s", "256", "--in-flight", "4", "-c", "500", "--json"
        )
    )
    assert (produced["topic"], produced["messageSize"], produced["inFlight"]) == (topic, 256, 4)
    assert (produced["sendTotal"], produced["sendFailed"], produced["responseFailed"]) == (
        500,
        0,
        0,
    )
    assert 0 < produced["p50RtMs"] <= produced["p99RtMs"] <= produced["maxRtMs"]

    lines = cli.ok("bench", "produce", "-t", topic, "-b", "32", "-c", "64").decode().splitlines()
    assert lines[0] == f"topic: {topic} messageSize: 128 threads: 1 inFlight: 1 batchSize: 32"
    assert lines[-1].startswith("[Complete] Send Total: 64 Send TPS: ")

    consumed = json.loads(
        cli.ok(
            "bench", "consume", "-t", topic, "-g", group, "--from", "first", "-c", "564", "--json"
        )
    )
    assert consumed["consumeTotal"] >= 564
    assert 0 <= consumed["p50S2cRtMs"] <= consumed["p99S2cRtMs"] <= consumed["maxS2cRtMs"]


def test_a_broadcasting_group_continues_from_its_local_offsets(
    cli: Cli, forty: tuple[str, list[Any], int]
) -> None:
    topic, _, _ = forty
    group = topic_name("broadcast")
    first = cli.consume(topic, "-g", group, "--broadcast", "-c", "10")
    rest = cli.consume(topic, "-g", group, "--broadcast", "-e")
    bodies = [record["body"] for record in first + rest]
    assert (len(first), Counter(bodies)) == (10, Counter(f"m{n}" for n in range(40)))
    offsets_file = Path(cli.env["HOME"], ".rocketmq_offsets")
    assert list(offsets_file.glob(f"*@DEFAULT/{group}/offsets.json"))


def _consume_one_sent_later(cli: Cli, topic: str, *options: str) -> None:
    """Run `rmq consume TOPIC --from last -c 1 OPTIONS` and send until it has read one."""
    reader = cli.popen("consume", topic, "--from", "last", "-c", "1", *options)
    deadline = time.monotonic() + 30
    while reader.poll() is None:
        assert time.monotonic() < deadline, "the consumer read nothing"
        cli.produce(topic, [{"body": "wake"}])
        time.sleep(0.3)
    _, err = reader.communicate()
    assert reader.returncode == 0, err.decode()


def test_a_tool_consumer_leaves_no_info_lines_in_the_broker_log(
    cli: Cli, standalone: StandaloneProcess
) -> None:
    """`rmq consume` without -g (group TOOLS_CONSUMER) connects, subscribes and leaves: the
    broker logs that at DEBUG; a group's members stay at INFO."""
    topic = topic_name("QuietTools")
    cli.produce(topic, [{"body": "first"}])
    start = len(standalone.log_text())
    _consume_one_sent_later(cli, topic)
    _consume_one_sent_later(cli, topic, "-g", "LoudGroup")
    standalone.wait_for_log("consumer group LoudGroup has no connection left, removed")
    lines = standalone.log_text()[start:].splitlines()
    infos = [line for line in lines if " INFO " in line]
    assert [line for line in infos if "group TOOLS_CONSUMER" in line] == []
    loud = "\n".join(line for line in infos if "group LoudGroup" in line)
    for said in (
        "new consumer connected, group LoudGroup",
        "group LoudGroup subscribes a new topic",
        "consumer group LoudGroup changed by a heartbeat",
        "unregister a consumer of group LoudGroup",
        "consumer group LoudGroup has no connection left, removed",
    ):
        assert said in loud, loud
