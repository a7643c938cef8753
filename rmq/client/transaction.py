"""The transactional producer, as Apache 4.9's `TransactionMQProducer` behaves.

    async def execute(msg: Message, result: SendResult) -> LocalTransactionState:
        ...  # do the local transaction; result.msg_id is the transaction id
    async def check(msg: MessageExt) -> LocalTransactionState:
        ...  # the broker asks: what became of transaction msg.msg_id?

    async with TransactionProducer("order-tx", "127.0.0.1:9876", execute=execute,
                                   check=check) as producer:
        result = await producer.send_in_transaction(Message("Orders", b"paid"))
        result.local_transaction_state  # what `execute` decided

`send_in_transaction` sends the message as a *half* message (properties TRAN_MSG=true and
PGROUP=<group>, sysFlag TRANSACTION_PREPARED_TYPE; a delay level is dropped), which no
consumer sees.  When the broker stored it (SEND_OK) the local-transaction callback runs;
FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE roll back without it.  Its
answer goes to the broker in END_TRANSACTION (oneway, to the master of the broker that
stored the half message): COMMIT_MESSAGE makes the message visible in its topic,
ROLLBACK_MESSAGE drops it, UNKNOW leaves it to the broker's check.  A send that fails raises
as `Producer.send` does, and nothing else happens.

The broker checks a half message nobody resolved (older than its `transactionTimeOut`, every
`transactionCheckInterval`, up to `transactionCheckMax` times, after which it moves it to
TRANS_CHECK_MAX_TIME_TOPIC) by sending CHECK_TRANSACTION_STATE to one connected producer of
the message's PGROUP: so a transactional producer needs a group of its own, the same in every
process that can answer for its transactions, and must stay running while its transactions
may be unresolved.  The check callback gets the half message as a `MessageExt` (its `msg_id`
is the transaction id the local callback saw as `result.msg_id`) and its answer goes back as
END_TRANSACTION with fromTransactionCheck=true on the connection the question came on.
Without a check callback no question is answered (Java's producer without a listener).

Both callbacks may be plain functions or coroutine functions.  One that raises, or returns
None, means UNKNOW, as in Java; the exception is logged and named in END_TRANSACTION's remark.
Checks run concurrently, each in the task that serves its request.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rmq.client import api
from rmq.client.api import SendResult, SendStatus
from rmq.client.errors import MQClientError
from rmq.client.message import Message
from rmq.client.messageext import MessageExt
from rmq.client.producer import Producer
from rmq.common.message import MessageRecord
from rmq.common.msgconst import (
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.msgid import decode_offset_msg_id
from rmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

__all__ = [
    "CheckLocalTransaction",
    "ExecuteLocalTransaction",
    "LocalTransactionState",
    "TransactionProducer",
    "TransactionSendResult",
]

log = logging.getLogger("rmq.client")


class LocalTransactionState(enum.Enum):
    """A local transaction's outcome (Java's names); the value is END_TRANSACTION's
    commitOrRollback."""

    COMMIT_MESSAGE = TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = TRANSACTION_ROLLBACK_TYPE
    UNKNOW = TRANSACTION_NOT_TYPE


_Answer = LocalTransactionState | None
ExecuteLocalTransaction = Callable[[Message, SendResult], _Answer | Awaitable[_Answer]]
"""Runs the local transaction of a half message the broker stored (`SendResult.msg_id` is
the transaction id)."""
CheckLocalTransaction = Callable[[MessageExt], _Answer | Awaitable[_Answer]]
"""Answers the broker's question about a half message (`MessageExt.msg_id` is the
transaction id)."""

_ROLLED_BACK_STATUSES = frozenset(
    {SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE}
)


@dataclasses.dataclass(slots=True)
class TransactionSendResult(SendResult):
    """The send's result and what the local transaction decided."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


async def _decide(
    callback: Callable[..., _Answer | Awaitable[_Answer]], *args: Any
) -> tuple[LocalTransactionState, Exception | None]:
    """The callback's answer (UNKNOW for None) or UNKNOW and the exception it raised."""
    try:
        answer = callback(*args)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        log.warning("transaction callback %r failed: %r", callback, exc)
        return LocalTransactionState.UNKNOW, exc
    return answer or LocalTransactionState.UNKNOW, None


class TransactionProducer(Producer):
    """A `Producer` that also sends in transactions (see the module docstring); `execute`
    is the default local-transaction callback, `check` answers the broker's checks.  The
    other options are `Producer`'s."""

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | None = None,
        *,
        execute: ExecuteLocalTransaction | None = None,
        check: CheckLocalTransaction | None = None,
        **options: Any,
    ) -> None:
        super().__init__(group, namesrv_addrs, **options)
        self.execute = execute
        self.check = check

    async def _join(self) -> None:
        self.instance.register_producer(self.group, self)
        await self.instance.send_heartbeat_to_all_brokers()

    async def send_in_transaction(
        self,
        msg: Message,
        execute: ExecuteLocalTransaction | None = None,
        *,
        sharding_key: str | None = None,
    ) -> TransactionSendResult:
        """Send `msg` as a half message, run `execute` (else the producer's) and end the
        transaction as it decided; `sharding_key` picks the queue as `send`'s does."""
        execute = execute or self.execute
        if execute is None:
            raise MQClientError(-1, "tranExecutor is null")
        if msg.delay_level:
            msg = dataclasses.replace(msg, delay_level=0)
        result = await self._send(
            msg, sharding_key, None, None, self.retry_times_when_send_failed, True, half=True
        )
        state, error = LocalTransactionState.UNKNOW, None
        if result.status is SendStatus.SEND_OK:
            state, error = await _decide(execute, msg, result)
        elif result.status in _ROLLED_BACK_STATUSES:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        remark = f"executeLocalTransactionBranch exception: {error!r}" if error else None
        try:
            await self._end(msg, result, state, remark)
        except (RemotingError, MQClientError) as exc:
            log.warning(
                "local transaction %s ended %s, but telling the broker failed: %s",
                result.msg_id,
                state.name,
                exc,
            )
        fields = {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}
        return TransactionSendResult(**fields, local_transaction_state=state)

    async def _end(
        self, msg: Message, result: SendResult, state: LocalTransactionState, remark: str | None
    ) -> None:
        """END_TRANSACTION for the half message `result` names (traced first when the
        producer is, as Java's end-transaction hook runs before the request)."""
        queue = result.message_queue
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=decode_offset_msg_id(result.offset_msg_id).physical_offset,
            commit_or_rollback=state.value,
            msg_id=result.msg_id,
            transaction_id=result.transaction_id,
            bname=queue.broker_name,
        )
        addr = await self.instance.broker_address(queue)
        if self.send_trace is not None:
            properties = {**msg.properties, PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: result.msg_id}
            if msg.tags:
                properties[PROPERTY_TAGS] = msg.tags
            if msg.keys_text:
                properties[PROPERTY_KEYS] = msg.keys_text
            self.send_trace.end_transaction(
                properties, msg.topic, result.msg_id, addr, state.name, False
            )
        await api.end_transaction_oneway(self.instance.remoting, addr, header, remark)

    async def check_transaction_state(
        self,
        connection: Connection,
        record: MessageRecord,
        header: CheckTransactionStateRequestHeader,
    ) -> None:
        """Answer the broker's check of the half message `record` (the `TransactionChecker`
        the instance calls)."""
        if self.check is None:
            log.warning("producer %s has no check callback: check left unanswered", self.group)
            return
        state, error = await _decide(self.check, MessageExt(record, header.bname or ""))
        answer = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=state.value,
            from_transaction_check=True,
            msg_id=record.msg_id,
            transaction_id=header.transaction_id,
            bname=header.bname,
        )
        remark = f"checkLocalTransactionState Exception: {error!r}" if error else None
        if self.send_trace is not None:
            self.send_trace.end_transaction(
                record.properties,
                record.topic,
                record.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, record.msg_id),
                connection.remote_addr,
                state.name,
                True,
            )
        try:
            request = api.end_transaction_request(answer, remark)
            await connection.send_oneway(self.instance.remoting.before_request(request))
        except RemotingError as exc:
            log.warning("answering the check of %s failed: %s", record.msg_id, exc)
