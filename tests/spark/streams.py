"""Helpers of the streaming tests (test_stream.py, test_cluster.py): producers that run beside
a stream, ``rmq spark-export --follow`` as a process of its own, and the scenario of issue-level
weight that both modules run, :func:`follow_through_kills`:

a followed export from a topic into Parquet under a running producer; its driver (the
``rmq`` process, its JVM and the Python workers the JVM started: one process group) is killed
with SIGKILL in the middle of the stream, ``kills`` times, and started again with the same
command each time; the last run reads up to everything the producer had acknowledged, then
stops on SIGINT (exit 130).  The output, read with Spark, then holds every acknowledged
message exactly once, counted by (brokerName, queueId, queueOffset), and nothing else; the
checkpoint ends with a committed batch at the offsets the last line reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from pyspark.sql import SparkSession

from rmq.client.api import SendResult
from rmq.client.message import Message
from rmq.client.producer import Producer
from tests.spark.cluster import driver_env

Position = tuple[str, int, int]
"""(brokerName, queueId, queueOffset): where a message is stored."""

BATCH_LINE = "rmq: batch "


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def send(namesrv: str, topic: str, numbers: range, pause: float = 0.0) -> list[SendResult]:
    async def run() -> list[SendResult]:
        results = []
        async with Producer("spark-stream-producer", namesrv) as producer:
            for n in numbers:
                message = Message(topic, f"message {n}".encode(), keys=f"k{n}", tags="T")
                results.append(await producer.send(message))
                if pause:
                    await asyncio.sleep(pause)
        return results

    return asyncio.run(asyncio.wait_for(run(), 120))


class Sender(threading.Thread):
    """Sends ``numbers`` to ``topic`` in the background, ``pause`` seconds apart."""

    def __init__(self, namesrv: str, topic: str, numbers: range, pause: float) -> None:
        super().__init__(daemon=True)
        self.args = (namesrv, topic, numbers, pause)
        self.results: list[SendResult] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.results = send(*self.args)
        except BaseException as exc:
            self.error = exc

    def finish(self) -> list[SendResult]:
        self.join(120)
        assert self.error is None, self.error
        return self.results


class Producing(threading.Thread):
    """Sends ``message N`` to ``topic``, N = ``first``, ``first`` + 1, ..., ``pause`` seconds
    apart, until :meth:`finish`; :attr:`acked` are the sends the broker acknowledged."""

    def __init__(self, namesrv: str, topic: str, pause: float, first: int = 0) -> None:
        super().__init__(daemon=True)
        self.namesrv, self.topic, self.pause, self.first = namesrv, topic, pause, first
        self.acked: list[SendResult] = []
        self.error: BaseException | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        async def produce() -> None:
            async with Producer("spark-stream-producer", self.namesrv) as producer:
                n = self.first
                while not self._stopping.is_set():
                    message = Message(self.topic, f"message {n}".encode(), keys=f"k{n}")
                    self.acked.append(await asyncio.wait_for(producer.send(message), 30))
                    n += 1
                    await asyncio.sleep(self.pause)

        try:
            asyncio.run(produce())
        except BaseException as exc:
            self.error = exc

    def finish(self) -> list[SendResult]:
        self._stopping.set()
        self.join(60)
        assert not self.is_alive(), "the producer did not stop"
        assert self.error is None, self.error
        return self.acked


def positions(results: Sequence[SendResult]) -> set[Position]:
    return {
        (r.message_queue.broker_name, r.message_queue.queue_id, r.queue_offset) for r in results
    }


def read_positions(spark: SparkSession, out: Path) -> list[Position]:
    """The positions of the rows of ``out`` as Spark reads it (the files its
    ``_spark_metadata`` log lists, when a stream wrote it)."""
    rows = spark.read.parquet(str(out)).select("brokerName", "queueId", "queueOffset").collect()
    return [(row.brokerName, row.queueId, row.queueOffset) for row in rows]


class Lines(threading.Thread):
    """Collects the lines of a pipe."""

    def __init__(self, pipe: IO[str]) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.lines: list[str] = []

    def run(self) -> None:
        for line in self.pipe:
            self.lines.append(line.rstrip("\n"))

    def batches(self) -> list[str]:
        return [line for line in list(self.lines) if line.startswith(BATCH_LINE)]


def batch_id(line: str) -> int:
    """N of a line ``rmq: batch N: R rows, offsets {...}``."""
    return int(line[len(BATCH_LINE) :].split(":")[0])


def batch_rows(line: str) -> int:
    return int(line.split(": ")[2].split()[0])


def batch_offsets(line: str) -> dict[str, Any]:
    offsets: dict[str, Any] = json.loads(line.split(" rows, offsets ")[1])
    return offsets


def spark_export(*args: str) -> subprocess.Popen[str]:
    """``rmq spark-export args`` in a process group of its own (with the JVM it starts and
    the JVM's Python workers), its stderr and stdout piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "rmq", "spark-export", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(),
        cwd="/",
        start_new_session=True,
    )


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL to the process group of ``process``, which is then reaped."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def covers(offsets: dict[str, Any], topic: str, acked: set[Position]) -> bool:
    """Whether the stream ``offsets`` (next offset to read per queue) are past every one of
    the ``acked`` positions of ``topic``."""
    queues = offsets.get(topic, {})
    return all(
        offset < queues.get(broker, {}).get(str(queue_id), 0) for broker, queue_id, offset in acked
    )


def follow_through_kills(
    spark: SparkSession,
    namesrv: str,
    topic: str,
    root: Path,
    *,
    kills: int,
    extra: Sequence[str] = (),
    start_seconds: float = 180.0,
    jitter: float = 0.0,
) -> None:
    """The scenario of the module docstring.  Each run but the last is killed once it has
    reported two micro-batches, ``jitter`` seconds later at most (uniformly drawn: a kill
    between batches or in the middle of one).  ``extra`` are more options of the command
    (its master, Spark settings); ``start_seconds`` bounds the wait for two batches."""
    out, checkpoint = root / "out", root / "checkpoint"
    command = (
        *("-n", namesrv, "-t", topic, "--follow", "--checkpoint", str(checkpoint)),
        *("--out", str(out), "--trigger", "1", *extra),
    )
    before = positions(send(namesrv, topic, range(40)))
    producer = Producing(namesrv, topic, pause=0.05, first=40)
    runs: list[list[str]] = []
    try:
        for _ in range(kills):
            runs.append(_killed_run(command, producer, start_seconds, jitter))
        acked, last_run = _last_run(command, producer, topic, start_seconds)
        runs.append(last_run)
        acked |= before
    finally:
        if producer.is_alive():
            producer.finish()

    reported = [[batch_id(line) for line in run] for run in runs]
    for earlier, later in itertools.pairwise(reported):
        assert min(later) > max(earlier), f"a restart continues after the last batch: {reported}"
    written = read_positions(spark, out)
    repeated = {p: n for p, n in Counter(written).items() if n > 1}
    assert repeated == {}, f"{len(repeated)} messages written more than once"
    assert set(written) == acked, (
        f"{len(acked - set(written))} acknowledged messages missing, "
        f"{len(set(written) - acked)} unknown"
    )
    bodies = {bytes(r.body) for r in spark.read.parquet(str(out)).select("body").collect()}
    assert bodies == {f"message {n}".encode() for n in range(len(acked))}

    # The checkpoint is consistent: its last planned batch is committed, at the offsets the
    # last line reported, so a restart plans the next batch from there.
    last = max(int(path.name) for path in (checkpoint / "offsets").iterdir() if path.name.isdigit())
    assert (checkpoint / "commits" / str(last)).is_file()
    offsets_line = (checkpoint / "offsets" / str(last)).read_text().splitlines()[-1]
    assert json.loads(offsets_line) == batch_offsets(runs[-1][-1])


def _started(
    command: Sequence[str], producer: Producing, start_seconds: float
) -> tuple[subprocess.Popen[str], Lines]:
    """``rmq spark-export command`` started, once it has reported two micro-batches; the
    producer is started after the first, when it is not running yet (so the first batch
    does not hold everything sent while the JVM started)."""
    process = spark_export(*command)
    assert process.stderr is not None
    errors = Lines(process.stderr)
    errors.start()
    try:
        for count in (1, 2):
            wait_for(
                f"{count} batch lines",
                lambda: len(errors.batches()) >= count or process.poll() is not None,  # noqa: B023
                timeout=start_seconds,
            )
            if producer.ident is None:  # not started yet
                producer.start()
    except AssertionError as exc:
        kill_group(process)
        raise AssertionError("\n".join([str(exc), *errors.lines[-30:]])) from None
    except BaseException:
        kill_group(process)
        raise
    if process.poll() is not None:
        raise AssertionError("\n".join(errors.lines))
    return process, errors


def _killed_run(
    command: Sequence[str], producer: Producing, start_seconds: float, jitter: float
) -> list[str]:
    """A run killed with SIGKILL mid-stream: its batch lines."""
    process, errors = _started(command, producer, start_seconds)
    try:
        assert producer.is_alive(), "the producer runs while the driver dies"
        time.sleep(random.uniform(0, jitter))  # where the kill lands, not a wait for a state
    finally:
        kill_group(process)
    errors.join(10)
    return errors.batches()


def _last_run(
    command: Sequence[str], producer: Producing, topic: str, start_seconds: float
) -> tuple[set[Position], list[str]]:
    """The run that reads what the producer acknowledged, then stops on SIGINT: the
    acknowledged positions and the run's batch lines."""
    process, errors = _started(command, producer, start_seconds)
    try:
        acked = positions(producer.finish())
        wait_for(
            "a batch reaching every acknowledged message",
            lambda: covers(batch_offsets(errors.batches()[-1]), topic, acked),
            timeout=120,
        )
        process.send_signal(signal.SIGINT)
        assert process.wait(120) == 130, errors.lines
    finally:
        if process.poll() is None:
            kill_group(process)
    errors.join(10)
    assert any(line.startswith("rmq: stopped after") for line in errors.lines), errors.lines
    assert process.stdout is not None and process.stdout.read() == ""
    return acked, errors.batches()
