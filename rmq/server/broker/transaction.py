"""Transactional messages: END_TRANSACTION (37) and the transaction check service.

The send path stores a transactional message as a *half* message: an ordinary record of
``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 carrying ``TRAN_MSG``, ``PGROUP``, ``REAL_TOPIC`` and
``REAL_QID`` (spec §5.5).  This module finishes the scheme as Apache 4.x does.

END_TRANSACTION (:class:`EndTransactionProcessor`, usually oneway).  The header names the
half message by its commitlog offset and its queue offset (``tranStateTableOffset``) and
says commit (8), rollback (12) or unknown (0, ignored).  The half message is read back and
checked against the header (producer group, queue offset, commitlog offset), answering
SYSTEM_ERROR with Apache's remark on a mismatch.  Commit writes the message to its real
topic and queue with the COMMIT transaction type, the half message's commitlog offset as
its prepared transaction offset and the half message's property string unchanged (so the
committed record still carries ``TRAN_MSG``, ``PGROUP``, ``REAL_TOPIC`` and ``REAL_QID``),
then writes an *op record*; rollback writes only the op record.  An op record marks a half
message as resolved: topic ``RMQ_SYS_TRANS_OP_HALF_TOPIC``, the half message's queue id,
tag ``d``, body the half message's queue offset in decimal, born host the broker itself.
As in Apache, the op topic is never added to the topic table.  A slave refuses with
SLAVE_NOT_AVAILABLE.

The check (:class:`TransactionalMessageCheckService`), every ``transactionCheckInterval``
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

from rmq.common.config import BrokerRole
from rmq.common.javahash import tags_code
from rmq.common.message import MessageRecord, decode_record, encode_record_into, record_size
from rmq.common.msgconst import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
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
from rmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    with_transaction_type,
)
from rmq.common.timeutil import now_millis
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rmq.server.broker.schedule import real_queue, reput_message
from rmq.store.commitlog import InnerMessage, PutMessageResult, PutMessageStatus
from rmq.store.store import GetMessageStatus

if TYPE_CHECKING:
    from rmq.server.broker.controller import BrokerController

log = logging.getLogger("rmq.broker")

REMOVE_TAG: Final = "d"
"""Tag of an op record: the half message it names is resolved."""
OP_PROPERTIES: Final = encode_properties_bytes(
    {PROPERTY_WAIT_STORE_MSG_OK: "true", PROPERTY_TAGS: REMOVE_TAG}
)
"""Property string of every op record, in the order Apache's HashMap writes it."""
OP_TAGS_CODE: Final = tags_code(REMOVE_TAG)
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

# How a commit's put is answered (Apache's EndTransactionProcessor): SUCCESS for these ...
_COMMITTED: Final = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)
# ... and these codes and remarks for the others.
_COMMIT_FAILURES: Final = {
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "Create mapped file failed.",
    ),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "Service not available now.",
    ),
    PutMessageStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "OS page cache busy, please try another machine",
    ),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def java_long(text: str) -> int:
    """``Long.parseLong`` as the transaction code uses it: -1 when ``text`` is no number."""
    return int(text) if _JAVA_LONG.fullmatch(text) else -1


def check_prepare_message(
    half: MessageRecord | None, header: EndTransactionRequestHeader
) -> str | None:
    """Why END_TRANSACTION does not match its half message (Apache's remark), or None."""
    if half is None:
        return "Find prepared transaction message failed"
    if half.properties.get(PROPERTY_PRODUCER_GROUP) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.physical_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None


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


class EndTransactionProcessor:
    """Serves END_TRANSACTION: commits and rollbacks of half messages."""

    def __init__(
        self, controller: BrokerController, *, clock: Callable[[], int] = now_millis
    ) -> None:
        self.controller = controller
        self._clock = clock

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    async def end_transaction(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = request.read_header(EndTransactionRequestHeader)
        controller = self.controller
        if controller.store_config.broker_role is BrokerRole.SLAVE:
            log.warning("message store is slave mode, so end transaction is forbidden")
            return create_response(ResponseCode.SLAVE_NOT_AVAILABLE)
        action = header.commit_or_rollback
        if action not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            if action == TRANSACTION_NOT_TYPE:
                log.warning(
                    "producer %s left transaction %s pending%s; remark: %s",
                    connection.remote_addr,
                    header.msg_id,
                    " when checked" if header.from_transaction_check else "",
                    request.remark,
                )
            return None
        if header.from_transaction_check or action == TRANSACTION_ROLLBACK_TYPE:
            log.warning(
                "producer %s %s transaction %s%s; remark: %s",
                connection.remote_addr,
                "commits" if action == TRANSACTION_COMMIT_TYPE else "rolls back",
                header.msg_id,
                " when checked" if header.from_transaction_check else "",
                request.remark,
            )
        half = controller.store.look_message_by_offset(header.commit_log_offset)
        mismatch = check_prepare_message(half, header)
        if mismatch is not None:
            return create_response(ResponseCode.SYSTEM_ERROR, mismatch)
        assert half is not None
        if action == TRANSACTION_COMMIT_TYPE:
            refused = self._commit(half, header)
            if refused is not None:
                return refused
        self._put_op_record(half)
        return create_response(ResponseCode.SUCCESS)

    def _commit(
        self, half: MessageRecord, header: EndTransactionRequestHeader
    ) -> RemotingCommand | None:
        """Write the committed message to its real queue; the error answer, or None."""
        target = real_queue(half)
        if target is None:
            return create_response(
                ResponseCode.SYSTEM_ERROR,
                f"the half message at {half.physical_offset} names no real topic and queue",
            )
        delay = half.properties.get(PROPERTY_DELAY_TIME_LEVEL, "")
        message = reput_message(
            half,
            *target,
            sys_flag=with_transaction_type(half.sys_flag, TRANSACTION_COMMIT_TYPE),
            prepared_transaction_offset=header.commit_log_offset,
            delay_level=int(delay) if delay.isdigit() else 0,
        )
        status = self.controller.store.put_message(message).status
        if status in _COMMITTED:
            return None
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return create_response(
                ResponseCode.MESSAGE_ILLEGAL,
                "The message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {self.controller.store_config.max_message_size}B, "
                "msg properties length limit 32KB.",
            )
        code, remark = _COMMIT_FAILURES.get(
            status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
        )
        return create_response(code, remark)

    def _put_op_record(self, half: MessageRecord) -> None:
        """Mark ``half`` resolved in the op queue of its half queue."""
        controller = self.controller
        message = InnerMessage(
            RMQ_SYS_TRANS_OP_HALF_TOPIC,
            half.queue_id,
            str(half.queue_offset).encode("ascii"),
            OP_PROPERTIES,
            OP_TAGS_CODE,
            born_timestamp=self._clock(),
            born_host=controller.store_host,
        )
        result = controller.store.put_message(message)
        if not result.ok:
            log.error(
                "writing the op record of half message %s (queue %d, offset %d) failed: %s",
                half.msg_id,
                half.queue_id,
                half.queue_offset,
                result.status.name,
            )


class TransactionalMessageCheckService:
    """Asks producers about half messages left unresolved (see the module docstring)."""

    def __init__(
        self, controller: BrokerController, *, clock: Callable[[], int] = now_millis
    ) -> None:
        self.controller = controller
        self._clock = clock
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
        interval_s = self.controller.broker_config.transaction_check_interval / 1000
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
        config = self.controller.topic_config_manager.create_retry_topic_if_absent(
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
        broker_config = self.controller.broker_config
        properties = half.properties
        now = self._clock()
        if self._count_check(properties) or now - half.born_timestamp > (
            self.controller.store_config.file_reserved_time * 3_600_000
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
            if times >= self.controller.broker_config.transaction_check_max:
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
        offset = self.controller.consumer_offset_manager.query(CID_SYS_RMQ_TRANS, topic, queue_id)
        if offset == -1:
            offset = max(self.controller.store.get_min_offset_in_queue(topic, queue_id), 0)
        return offset

    def _commit_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.controller.consumer_offset_manager.commit(
            self.controller.broker_addr, CID_SYS_RMQ_TRANS, topic, queue_id, offset
        )

    def _read_op_records(
        self, queue_id: int, op_offset: int, half_offset: int
    ) -> tuple[dict[int, int], list[int], int]:
        """The op records of a queue from ``op_offset`` on: half offset -> op offset for the
        half messages not walked yet, the op offsets already done with, and the op offset
        to count from (moved forward when ``op_offset`` is no longer readable)."""
        store = self.controller.store
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

    def _half_message(self, queue_id: int, offset: int) -> tuple[MessageRecord | None, int | None]:
        """The half message at ``offset``; else None and where to look next (None: the
        queue has nothing new)."""
        result = self.controller.store.get_messages(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, 1)
        if result.status is GetMessageStatus.FOUND:
            try:
                return decode_record(result.messages[0]), None
            except RecordError as exc:
                log.error("unreadable half message at offset %d: %s", offset, exc)
        elif result.status in _NO_NEW_MESSAGE:
            return None, None
        return None, result.next_begin_offset

    def _put_back(self, half: MessageRecord) -> PutMessageResult | None:
        """Append ``half`` (with its current properties) to its half queue again."""
        result = self.controller.store.put_message(
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
        config = self.controller.topic_config_manager.create_retry_topic_if_absent(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, CHECK_MAX_TIME_QUEUE_NUMS, _PERM_RW
        )
        queue_id = random.randrange(99_999_999) % config.write_queue_nums
        result = self.controller.store.put_message(reput_message(half, config.topic_name, queue_id))
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
            self.controller.client_manager.available_producer_channel(group)
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
