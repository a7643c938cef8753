"""Asking producers about half messages left unresolved: the transaction check service.

The send path stores a transactional message as a half message and END_TRANSACTION
(``transaction.py``) resolves it with an op record.  What nobody resolves is found here.

:class:`TransactionalMessageCheckService` runs every ``transactionCheckInterval``
ms.  For each half queue, progress is kept as consumer offsets of group ``CID_RMQ_SYS_TRANS``
on the half queue and on its op queue.  A round reads the op records from the op offset on
(each names a resolved half offset), then walks the half queue from the half offset:

* a resolved half message is passed over;
* one checked ``transactionCheckMax`` times already, or older than the store keeps files,
  is moved to ``TRANS_CHECK_MAX_TIME_TOPIC`` (created on first use, one queue, perm RW);
* one stored after the round began, or younger than ``transactionTimeOut`` (or its own
  ``CHECK_IMMUNITY_TIME_IN_SECONDS``), ends the round for its queue: it is checked later;
* any other is appended again to the half queue with ``TRANSACTION_CHECK_TIMES`` counted up,
  and CHECK_TRANSACTION_STATE (39) is sent oneway to a producer of its ``PGROUP``, naming
  the new copy; the body is the message with its real topic and queue, encoded as a record
  (spec §3.10).  The producer answers with END_TRANSACTION for the copy.

The half offset then moves past everything walked over and the op offset past the op records
consumed without a gap.  A half message with ``CHECK_IMMUNITY_TIME_IN_SECONDS`` still inside
its immunity is appended again with ``TRAN_PREPARED_QUEUE_OFFSET`` (its first queue offset),
so an op record for the original resolves the copy.  One deliberate difference: a half
message appended again keeps its user flag and reconsume times (Apache's copy loses both).

Everything runs on the broker's event loop; a round yields to it regularly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

from rmq.common.message import MessageRecord, decode_record, encode_record_into, record_size
from rmq.common.msgconst import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.msgid import IPV6_HOST_LENGTH, parse_host
from rmq.common.naming import (
    CID_SYS_RMQ_TRANS,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rmq.common.perm import PERM_READ, PERM_WRITE
from rmq.common.properties import encode_properties_bytes
from rmq.common.recordwalk import RecordError
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import CheckTransactionStateRequestHeader
from rmq.server.broker.schedule.schedule import real_queue, reput_message
from rmq.server.broker.transaction.transaction import REMOVE_TAG
from rmq.store.putmessage import PutMessageResult
from rmq.store.store import GetMessageResult, GetMessageStatus

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

OP_BATCH: Final = 32
"""Op records read per store lookup."""
MAX_PROCESS_TIME_MS: Final = 60_000
"""A round spends at most this long on one half queue."""
YIELD_EVERY: Final = 64
"""Half messages looked at between two yields to the event loop."""
CHECK_MAX_TIME_QUEUE_NUMS: Final = 1
_PERM_RW: Final = PERM_READ | PERM_WRITE
_NO_NEW_MESSAGE = (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.OFFSET_OVERFLOW_ONE)
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def java_long(text: str) -> int:
    """``Long.parseLong`` as the transaction code uses it: -1 when ``text`` is no number."""
    return int(text) if _JAVA_LONG.fullmatch(text) else -1


def encode_check_body(
    record: MessageRecord, topic: str, queue_id: int, queue_offset: int, physical_offset: int
) -> bytes:
    """The CHECK_TRANSACTION_STATE body: the half message as a record (spec §3.10), with
    its real topic and queue and the position of the copy being checked."""
    body = record.body or b""
    topic_bytes = topic.encode()
    properties = encode_properties_bytes(record.properties)
    born_host = parse_host(record.born_host)
    store_host = parse_host(record.store_host)
    buffer = bytearray(
        record_size(
            len(body),
            len(topic_bytes),
            len(properties),
            len(born_host) == IPV6_HOST_LENGTH,
            len(store_host) == IPV6_HOST_LENGTH,
        )
    )
    encode_record_into(
        buffer,
        0,
        queue_id=queue_id,
        flag=record.flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=record.sys_flag,
        born_timestamp=record.born_timestamp,
        born_host=born_host,
        store_timestamp=record.store_timestamp,
        store_host=store_host,
        reconsume_times=record.reconsume_times,
        prepared_transaction_offset=record.prepared_transaction_offset,
        body=body,
        topic_bytes=topic_bytes,
        properties_bytes=properties,
    )
    return bytes(buffer)


class TransactionalMessageCheckService:
    """Asks producers about half messages left unresolved (see the module docstring)."""

    def __init__(self, context: BrokerContext, *, clock: Callable[[], int] | None = None) -> None:
        self.context = context
        self._clock = context.clock if clock is None else clock
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Check every ``transactionCheckInterval`` ms from now on (on the running loop)."""
        self._task = asyncio.get_running_loop().create_task(self._check_forever())

    async def stop(self) -> None:
        tasks = [*self._sends, *([self._task] if self._task is not None else [])]
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self._sends.clear()

    async def _check_forever(self) -> None:
        interval_s = self.context.broker_config.transaction_check_interval / 1000
        while True:
            await asyncio.sleep(interval_s)
            began = self._clock()
            try:
                await self.check()
            except Exception:
                log.exception("transaction check failed")
            log.info("transaction check took %d ms", self._clock() - began)

    async def check(self) -> None:
        """One round over every half queue (the half topic is created if missing)."""
        config = self.context.topic_config_manager.create_retry_topic_if_absent(
            RMQ_SYS_TRANS_HALF_TOPIC, 1, _PERM_RW
        )
        for queue_id in range(config.read_queue_nums):
            await self._check_queue(queue_id)

    # -- one half queue ------------------------------------------------------------------

    async def _check_queue(self, queue_id: int) -> None:
        started = self._clock()
        half_offset = self._consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id)
        resolved, done_ops, op_offset = self._read_op_records(
            queue_id, self._consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id), half_offset
        )
        offset = half_offset
        misses = 0
        looked = 0
        while self._clock() - started < MAX_PROCESS_TIME_MS:
            looked += 1
            if looked % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            op_offset_of_half = resolved.pop(offset, None)
            if op_offset_of_half is not None:
                done_ops.append(op_offset_of_half)
                offset += 1
                continue
            half, next_offset = self._half_message(queue_id, offset)
            if half is None:
                misses += 1
                if next_offset is None or misses > 1:
                    break
                offset = next_offset
                continue
            if not self._check_one(half, started, resolved, done_ops):
                break
            offset += 1
        if offset != half_offset:
            self._commit_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset)
        new_op_offset = op_offset
        for done in sorted(done_ops):
            if done != new_op_offset:
                break
            new_op_offset += 1
        if new_op_offset != op_offset:
            self._commit_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)

    def _check_one(
        self,
        half: MessageRecord,
        started: int,
        resolved: dict[int, int],
        done_ops: list[int],
    ) -> bool:
        """Handle one unresolved half message; False when it must wait for a later round
        (and so must every message after it).  Counts the check in ``half.properties``,
        which the copies written from here then carry."""
        broker_config = self.context.broker_config
        properties = half.properties
        now = self._clock()
        if self._count_check(properties) or now - half.born_timestamp > (
            self.context.store_config.file_reserved_time * 3_600_000
        ):
            self._discard(half)
            return True
        if half.store_timestamp >= started:
            return False
        age = now - half.born_timestamp
        timeout = broker_config.transaction_time_out
        immunity_text = properties.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
        immunity = timeout
        if immunity_text is not None:
            seconds = java_long(immunity_text)
            immunity = timeout if seconds == -1 else seconds * 1000
            if age < immunity:
                return self._resolve_immune(half, resolved, done_ops)
        elif 0 <= age < immunity:
            return False
        if not (age > immunity or age < 0):
            return False
        copy = self._put_back(half)
        if copy is None:
            return False
        self._send_check(half, copy)
        return True

    def _count_check(self, properties: dict[str, str]) -> bool:
        """True when the message was checked ``transactionCheckMax`` times; otherwise count
        this check in its ``TRANSACTION_CHECK_TIMES``."""
        text = properties.get(PROPERTY_TRANSACTION_CHECK_TIMES)
        times = 1
        if text is not None:
            times = java_long(text)
            if times >= self.context.broker_config.transaction_check_max:
                return True
            times += 1
        properties[PROPERTY_TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _resolve_immune(
        self, half: MessageRecord, resolved: dict[int, int], done_ops: list[int]
    ) -> bool:
        """A half message inside its immunity time: passed over when the op records resolve
        its original, otherwise appended again to be looked at later."""
        properties = half.properties
        original = properties.get(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
        if original is None:
            properties[PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] = str(half.queue_offset)
        else:
            original_offset = java_long(original)
            if original_offset == -1:
                return False
            op_offset = resolved.pop(original_offset, None)
            if op_offset is not None:
                done_ops.append(op_offset)
                return True
        return self._put_back(half) is not None

    # -- store access --------------------------------------------------------------------

    def _consume_offset(self, topic: str, queue_id: int) -> int:
        """The check's progress in a queue: its offset of group CID_RMQ_SYS_TRANS, else the
        queue's first offset (0 for a queue that does not exist yet)."""
        offset = self.context.consumer_offset_manager.query(CID_SYS_RMQ_TRANS, topic, queue_id)
        if offset == -1:
            offset = max(self.context.store.get_min_offset_in_queue(topic, queue_id), 0)
        return offset

    def _commit_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.context.consumer_offset_manager.commit(
            self.context.broker_addr, CID_SYS_RMQ_TRANS, topic, queue_id, offset
        )

    def _read_op_records(
        self, queue_id: int, op_offset: int, half_offset: int
    ) -> tuple[dict[int, int], list[int], int]:
        """The op records of a queue from ``op_offset`` on: half offset -> op offset for the
        half messages not walked yet, the op offsets already done with, and the op offset
        to count from (moved forward when ``op_offset`` is no longer readable)."""
        store = self.context.store
        resolved: dict[int, int] = {}
        done: list[int] = []
        offset = op_offset
        while True:
            result = store.get_messages(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, offset, OP_BATCH)
            if result.status is not GetMessageStatus.FOUND:
                if result.status not in _NO_NEW_MESSAGE and result.next_begin_offset != offset:
                    log.warning(
                        "op offset %d of queue %d is not readable (%s), moving to %d",
                        offset,
                        queue_id,
                        result.status.name,
                        result.next_begin_offset,
                    )
                    if offset == op_offset:
                        op_offset = result.next_begin_offset
                        self._commit_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, op_offset)
                    offset = result.next_begin_offset
                    continue
                break
            self._count_read(RMQ_SYS_TRANS_OP_HALF_TOPIC, result)
            for raw in result.messages:
                try:
                    op = decode_record(raw)
                except RecordError as exc:
                    log.error("unreadable op record in queue %d: %s", queue_id, exc)
                    continue
                if op.tags != REMOVE_TAG:
                    log.error("op record %s has the illegal tag %r", op.msg_id, op.tags)
                    continue
                half_queue_offset = java_long((op.body or b"").decode("utf-8", "replace"))
                if half_queue_offset < half_offset:
                    done.append(op.queue_offset)
                else:
                    resolved[half_queue_offset] = op.queue_offset
            offset = result.next_begin_offset
        return resolved, done, op_offset

    def _count_read(self, topic: str, result: GetMessageResult) -> None:
        """Half and op messages read count as got by ``CID_RMQ_SYS_TRANS`` (Apache's bridge)."""
        self.context.stats.items.get(
            CID_SYS_RMQ_TRANS, topic, result.message_count, result.buffer_total_size
        )

    def _half_message(self, queue_id: int, offset: int) -> tuple[MessageRecord | None, int | None]:
        """The half message at ``offset``; else None and where to look next (None: the
        queue has nothing new)."""
        result = self.context.store.get_messages(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, 1)
        if result.status is GetMessageStatus.FOUND:
            self._count_read(RMQ_SYS_TRANS_HALF_TOPIC, result)
            try:
                return decode_record(result.messages[0]), None
            except RecordError as exc:
                log.error("unreadable half message at offset %d: %s", offset, exc)
        elif result.status in _NO_NEW_MESSAGE:
            return None, None
        return None, result.next_begin_offset

    def _put_back(self, half: MessageRecord) -> PutMessageResult | None:
        """Append ``half`` (with its current properties) to its half queue again."""
        result = self.context.store.put_message(
            reput_message(half, RMQ_SYS_TRANS_HALF_TOPIC, half.queue_id)
        )
        if result.ok:
            return result
        log.error(
            "appending half message %s to queue %d again failed: %s",
            half.msg_id,
            half.queue_id,
            result.status.name,
        )
        return None

    def _discard(self, half: MessageRecord) -> None:
        """Move a half message checked too often (or too old) to TRANS_CHECK_MAX_TIME_TOPIC."""
        config = self.context.topic_config_manager.create_retry_topic_if_absent(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, CHECK_MAX_TIME_QUEUE_NUMS, _PERM_RW
        )
        queue_id = random.randrange(99_999_999) % config.write_queue_nums
        result = self.context.store.put_message(reput_message(half, config.topic_name, queue_id))
        log.error(
            "half message %s was checked too many times, moved to %s: %s",
            half.msg_id,
            config.topic_name,
            result.status.name,
        )

    # -- asking the producer -------------------------------------------------------------

    def _send_check(self, half: MessageRecord, copy: PutMessageResult) -> None:
        """Send CHECK_TRANSACTION_STATE for the copy ``copy`` of ``half`` to one producer of
        its group (oneway, in the background)."""
        group = half.properties.get(PROPERTY_PRODUCER_GROUP)
        target = real_queue(half)
        channel = (
            self.context.client_manager.available_producer_channel(group)
            if group is not None
            else None
        )
        if channel is None or target is None:
            log.warning(
                "cannot check transaction %s: no producer of group %s connected or no real "
                "queue (%s)",
                half.msg_id,
                group,
                target,
            )
            return
        uniq_key = half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=copy.queue_offset,
            commit_log_offset=copy.physical_offset,
            msg_id=uniq_key,
            transaction_id=uniq_key,
            offset_msg_id=copy.msg_id,
        )
        body = encode_check_body(half, *target, copy.queue_offset, copy.physical_offset)
        request = create_request(RequestCode.CHECK_TRANSACTION_STATE, header, body=body)
        # The client manager only holds the connections the client processor registered.
        task = asyncio.get_running_loop().create_task(
            self._send(cast(Connection, channel), request, group or "")
        )
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    @staticmethod
    async def _send(connection: Connection, request: RemotingCommand, group: str) -> None:
        try:
            await connection.send_oneway(request)
        except RemotingError as exc:
            log.error(
                "checking a transaction with %s of group %s failed: %s", connection, group, exc
            )
