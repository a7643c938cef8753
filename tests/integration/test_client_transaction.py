"""rmq's transactional producer against a real `rmq standalone` whose transaction check runs
every second on half messages older than a second (at most twice each).

Committed messages become visible in their topic, rolled-back ones never do; a transaction
left unknown (by the answer UNKNOW, by None, or by a callback that raised) is checked back
through CHECK_TRANSACTION_STATE and the check's answer decides it; a transaction still
unknown after `transactionCheckMax` checks is moved to TRANS_CHECK_MAX_TIME_TOPIC.  What is
visible is read with raw pulls (`pull_topic` of the producer's tests).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from rmq.client.api import SendResult
from rmq.client.errors import MQBrokerError, MQClientError
from rmq.client.message import Message
from rmq.client.messageext import MessageExt
from rmq.client.transaction import LocalTransactionState, TransactionProducer
from rmq.common.message import MessageRecord
from rmq.common.msgconst import PROPERTY_PRODUCER_GROUP, PROPERTY_TRANSACTION_PREPARED
from rmq.common.naming import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
from rmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    transaction_type,
)
from rmq.remoting.codes import ResponseCode
from tests.integration.test_client_producer import pull_topic
from tests.procs import RmqProcesses, StandaloneProcess

TRANSACTION_PROPS = {
    "transactionTimeOut": 1000,
    "transactionCheckInterval": 1000,
    "transactionCheckMax": 2,
}
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW
_names = itertools.count()


@pytest.fixture(scope="module")
def standalone(module_processes: RmqProcesses) -> Iterator[StandaloneProcess]:
    process = module_processes.start_standalone("tx-client", props=TRANSACTION_PROPS)
    yield process
    process.stop_cleanly()


async def visible_bodies(addr: str, topic: str, count: int, timeout: float = 30.0) -> list[str]:
    """The bodies in `topic` once there are `count` of them (or what there is at the
    deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        records = await pull_topic(addr, topic)
        if len(records) >= count or time.monotonic() > deadline:
            return sorted((record.body or b"").decode() for record in records)
        await asyncio.sleep(0.2)


def test_commit_rollback_and_checked_unknowns(standalone: StandaloneProcess) -> None:
    topic = f"TxClient{next(_names)}"
    checked: Counter[str] = Counter()
    sent: dict[str, SendResult] = {}

    async def execute(msg: Message, result: SendResult) -> LocalTransactionState | None:
        sent[msg.body.decode()] = result
        await asyncio.sleep(0)
        if msg.body.startswith(b"raise"):
            raise RuntimeError("the local transaction broke")
        return {b"commit": COMMIT, b"rollback": ROLLBACK, b"none": None}.get(msg.body, UNKNOW)

    def check(msg: MessageExt) -> LocalTransactionState:  # a plain function works too
        body = msg.body.decode()
        checked[body] += 1
        assert msg.msg_id == sent[body].msg_id
        assert msg.topic == topic
        assert msg.properties[PROPERTY_PRODUCER_GROUP] == "tx-client-group"
        return ROLLBACK if body == "unknown-rollback" else COMMIT

    async def scenario() -> None:
        async with TransactionProducer(
            "tx-client-group", standalone.namesrv_addr, execute=execute, check=check
        ) as producer:
            states = {}
            for body in ("commit", "rollback", "unknown", "none", "raise", "unknown-rollback"):
                result = await producer.send_in_transaction(Message(topic, body.encode()))
                states[body] = result.local_transaction_state
            assert states == {
                "commit": COMMIT,
                "rollback": ROLLBACK,
                "unknown": UNKNOW,
                "none": UNKNOW,
                "raise": UNKNOW,
                "unknown-rollback": UNKNOW,
            }
            assert await visible_bodies(standalone.addr, topic, 4) == [
                "commit",
                "none",
                "raise",
                "unknown",
            ]
            deadline = time.monotonic() + 10
            while checked["unknown-rollback"] == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        assert set(checked) == {"unknown", "none", "raise", "unknown-rollback"}
        records = await pull_topic(standalone.addr, topic)
        assert len(records) == 4
        for record in records:
            assert transaction_type(record.sys_flag) == TRANSACTION_COMMIT_TYPE
            assert record.properties[PROPERTY_TRANSACTION_PREPARED] == "true"
            assert record.msg_id == sent[(record.body or b"").decode()].msg_id

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_transaction_unknown_after_check_max_checks_is_discarded(
    standalone: StandaloneProcess,
) -> None:
    topic = f"TxClientMax{next(_names)}"
    checks: list[MessageExt] = []

    async def check(msg: MessageExt) -> LocalTransactionState:
        checks.append(msg)
        return UNKNOW

    async def scenario() -> None:
        async with TransactionProducer(
            "tx-client-max", standalone.namesrv_addr, execute=lambda m, r: UNKNOW, check=check
        ) as producer:
            result = await producer.send_in_transaction(Message(topic, b"never decided"))
            deadline = time.monotonic() + 30
            discarded: list[MessageRecord] = []
            while not discarded and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                try:  # the topic is created by the first discard
                    records = await pull_topic(
                        standalone.addr, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1
                    )
                except MQBrokerError as exc:
                    assert exc.code == ResponseCode.TOPIC_NOT_EXIST
                    continue
                discarded = [record for record in records if record.msg_id == result.msg_id]
        assert len(discarded) == 1
        record = discarded[0]
        assert record.body == b"never decided"
        # stored as the half topic holds it: the transaction type cleared, as Apache's bridge does
        assert transaction_type(record.sys_flag) == TRANSACTION_NOT_TYPE
        assert record.properties["REAL_TOPIC"] == topic
        assert [msg.msg_id for msg in checks] == [result.msg_id] * 2  # transactionCheckMax
        assert await pull_topic(standalone.addr, topic) == []

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_transactional_send_needs_a_local_transaction(standalone: StandaloneProcess) -> None:
    async def scenario() -> None:
        async with TransactionProducer("tx-client-none", standalone.namesrv_addr) as producer:
            with pytest.raises(MQClientError, match="tranExecutor is null"):
                await producer.send_in_transaction(Message("TxClientNone", b"x"))

    asyncio.run(asyncio.wait_for(scenario(), 30))
