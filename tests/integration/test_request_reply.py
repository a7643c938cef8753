"""Request-reply end to end: `rmq request` and `rmq reply` (subprocesses) and rmq's client
against a real `rmq standalone`.

A request sent by `rmq request` is answered by `rmq reply --exec CMD` with CMD's stdout, and
the reply printed is the message record of the reply the broker pushed (reply topic,
correlation id, the requester's client id); a request nobody answers times out with exit 1;
a failing CMD sends no reply; a reply whose requester is gone is refused by the broker
(`channel of <id> not found`) and `rmq reply` says so; `-e` answers a backlog and commits it.
The client API: `Producer.request` and `request_async`, `create_reply_message`, and the
timeout error.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from rmq.client.consumer import ConsumeFromWhere, ConsumeStatus, MessageExt, PushConsumer
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.client.requestreply import RequestTimeoutError, create_reply_message
from rmq.common.naming import reply_topic
from tests.integration import test_produce_consume as produce_consume
from tests.integration.test_produce_consume import ndjson, topic_name
from tests.procs import RmqProcesses, StandaloneProcess

CLUSTER = "DefaultCluster"
ECHO = shlex.join(
    [
        sys.executable,
        "-c",
        "import json, sys; r = json.load(sys.stdin); print('re:' + r['body'], end='')",
    ]
)
"""A reply command: the reply body is `re:` and the request's body."""


class Cli(produce_consume.Cli):
    """`rmq` subprocesses against the standalone (test_produce_consume's), creating topics."""

    def topic(self, prefix: str) -> str:
        topic = topic_name(prefix)
        result = self.run("topic", "create", topic)
        assert result.returncode == 0, result.stderr.decode()
        return topic


def finish(process: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, bytes, bytes]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("request-reply")
    yield process
    process.stop_cleanly()


@pytest.fixture(scope="module")
def cli(standalone: StandaloneProcess, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    home = tmp_path_factory.mktemp("cli-home")
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("RMQ_") and name != "NAMESRV_ADDR"
    }
    return Cli(standalone.namesrv_addr, {**env, "HOME": str(home)})


def test_rmq_request_is_answered_by_rmq_reply(cli: Cli) -> None:
    topic = cli.topic("ReqA")
    replier = cli.popen("reply", topic, "--exec", ECHO, "-g", "ReplyA", "-c", "3")
    try:
        result = cli.run(
            "request", topic, "--timeout", "60", input=b'one\n{"body": "two"}\nthree\n'
        )
        assert result.returncode == 0, result.stderr.decode()
        code, out, err = finish(replier)
    finally:
        replier.kill()
    replies = ndjson(result.stdout)
    assert [reply["body"] for reply in replies] == ["re:one", "re:two", "re:three"]
    for reply in replies:
        assert reply["topic"] == reply_topic(CLUSTER)
        properties = reply["properties"]
        assert properties["MSG_TYPE"] == "reply"
        assert properties["TTL"] == "60000"
        assert "PUSH_REPLY_TIME" in properties and "ARRIVE_TIME" in properties
    assert code == 0, err.decode()
    answered = ndjson(out)
    assert [row["correlationId"] for row in answered] == [
        reply["properties"]["CORRELATION_ID"] for reply in replies
    ]
    assert {row["replyTo"] for row in answered} == {
        reply["properties"]["REPLY_TO_CLIENT"] for reply in replies
    }
    assert len({row["correlationId"] for row in answered}) == 3


def test_a_request_without_replier_times_out(cli: Cli) -> None:
    topic = cli.topic("ReqNone")
    started = time.monotonic()
    result = cli.run("request", topic, "ping", "--timeout", "1")
    assert result.returncode == 1
    assert result.stdout == b""
    assert b"no reply to line 1 within 1 s" in result.stderr
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert time.monotonic() - started < 30


def test_a_failing_command_sends_no_reply(cli: Cli) -> None:
    topic = cli.topic("ReqFail")
    replier = cli.popen("reply", topic, "--exec", "exit 3", "-g", "ReplyFail", "-c", "1")
    try:
        result = cli.run("request", topic, "ping", "--timeout", "8")
        code, out, err = finish(replier)
    finally:
        replier.kill()
    assert result.returncode == 1
    assert b"no reply to line 1" in result.stderr
    assert code == 1
    assert out == b""
    assert b"'exit 3' exited with status 3: no reply sent" in err
    assert b"1 of 1 request(s) got no reply" in err


def test_a_reply_to_a_requester_gone_is_refused(cli: Cli) -> None:
    topic = cli.topic("ReqGone")
    requester = cli.popen("request", topic, "ping", "--timeout", "120")
    try:
        _wait_stored(cli, topic, 1)
        requester.send_signal(signal.SIGKILL)
        requester.wait(30)
    finally:
        requester.kill()
    result = cli.run("reply", topic, "--exec", ECHO, "-g", "ReplyGone", "-e")
    assert result.returncode == 1
    assert result.stdout == b""
    stderr = result.stderr.decode()
    assert "the reply was refused" in stderr and "not found" in stderr, stderr
    # Consumed all the same: the group's next run finds nothing to answer.
    again = cli.run("reply", topic, "--exec", ECHO, "-g", "ReplyGone", "-e")
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout == b""


def _wait_stored(cli: Cli, topic: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        result = cli.run("consume", topic, "-e")
        if len(result.stdout.splitlines()) >= count:
            return
        assert time.monotonic() < deadline, result.stderr.decode()
        time.sleep(0.2)


def test_exit_at_end_skips_expired_requests(cli: Cli) -> None:
    topic = cli.topic("ReqOld")
    result = cli.run("request", topic, "late", "--timeout", "0.5")
    assert result.returncode == 1
    late = cli.run("reply", topic, "--exec", ECHO, "-g", "ReplyOld", "-e")
    assert late.returncode == 1
    assert b"expired (its requester waited 500 ms for a reply): no reply sent" in late.stderr


def test_client_request_and_request_async(standalone: StandaloneProcess, cli: Cli) -> None:
    topic, unanswered = cli.topic("ReqApi"), cli.topic("ReqApiNobody")
    asyncio.run(_client_round_trip(standalone.namesrv_addr, topic, unanswered))


async def _client_round_trip(namesrv: str, topic: str, unanswered: str) -> None:
    replier = Producer("ApiReplier", namesrv, instance_name="api-replier")
    await replier.start()
    consumer = PushConsumer(
        "ApiReplyGroup",
        instance=replier.instance,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic)
    seen: list[MessageExt] = []

    async def listener(messages: list[MessageExt]) -> ConsumeStatus:
        for msg in messages:
            seen.append(msg)
            await replier.send(create_reply_message(msg, b"pong:" + msg.body))
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(listener)
    await consumer.start()
    requester = Producer("ApiRequester", namesrv, instance_name="api-requester")
    await requester.start()
    try:
        reply = await requester.request(Message(topic, b"ping", tags="T"), 60)
        assert reply.body == b"pong:ping"
        request = seen[0]
        assert request.properties["REPLY_TO_CLIENT"] == requester.instance.client_id
        assert reply.properties["CORRELATION_ID"] == request.properties["CORRELATION_ID"]
        got: list[MessageExt] = []
        task = requester.request_async(Message(topic, b"second"), 60, got.append)
        await task
        assert [msg.body for msg in got] == [b"pong:second"]
        assert len(requester.instance.request_futures) == 0
        with pytest.raises(RequestTimeoutError, match="wait reply message timeout, 300 ms"):
            await requester.request(Message(unanswered, b"x"), 0.3)
    finally:
        await requester.shutdown()
        await consumer.shutdown()
        await replier.shutdown()
