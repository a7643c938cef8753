"""Transactional messages: END_TRANSACTION (37) commits or rolls back a half message.

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

The transaction check service that asks producers about half messages nobody resolved is
``transactioncheck.py``; it reads the op records written here.

Everything runs on the broker's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from rmq.common.config import BrokerRole
from rmq.common.javahash import tags_code
from rmq.common.message import MessageRecord
from rmq.common.msgconst import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rmq.common.naming import (
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rmq.common.properties import encode_properties_bytes
from rmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    with_transaction_type,
)
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import UNSET_RESPONSE_REMARK, RemotingCommand, create_response
from rmq.remoting.connection import Connection, Handler
from rmq.remoting.headers import EndTransactionRequestHeader
from rmq.server.broker.schedule.schedule import real_queue, reput_message
from rmq.store.putmessage import InnerMessage, PutMessageStatus

if TYPE_CHECKING:
    from rmq.server.broker.context import BrokerContext

log = logging.getLogger("rmq.broker")

REMOVE_TAG: Final = "d"
"""Tag of an op record: the half message it names is resolved."""
OP_PROPERTIES: Final = encode_properties_bytes(
    {PROPERTY_WAIT_STORE_MSG_OK: "true", PROPERTY_TAGS: REMOVE_TAG}
)
"""Property string of every op record, in the order Apache's HashMap writes it."""
OP_TAGS_CODE: Final = tags_code(REMOVE_TAG)

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


class EndTransactionProcessor:
    """Serves END_TRANSACTION: commits and rollbacks of half messages."""

    def __init__(self, context: BrokerContext, *, clock: Callable[[], int] | None = None) -> None:
        self.context = context
        self._clock = context.clock if clock is None else clock

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    async def end_transaction(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = request.read_header(EndTransactionRequestHeader)
        context = self.context
        if context.store_config.broker_role is BrokerRole.SLAVE:
            log.warning("message store is slave mode, so end transaction is forbidden")
            return create_response(ResponseCode.SLAVE_NOT_AVAILABLE, UNSET_RESPONSE_REMARK)
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
        half = context.store.look_message_by_offset(header.commit_log_offset)
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
        status = self.context.store.put_message(message).status
        if status in _COMMITTED:
            return None
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return create_response(
                ResponseCode.MESSAGE_ILLEGAL,
                "The message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {self.context.store_config.max_message_size}B, "
                "msg properties length limit 32KB.",
            )
        code, remark = _COMMIT_FAILURES.get(
            status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
        )
        return create_response(code, remark)

    def _put_op_record(self, half: MessageRecord) -> None:
        """Mark ``half`` resolved in the op queue of its half queue."""
        context = self.context
        message = InnerMessage(
            RMQ_SYS_TRANS_OP_HALF_TOPIC,
            half.queue_id,
            str(half.queue_offset).encode("ascii"),
            OP_PROPERTIES,
            OP_TAGS_CODE,
            born_timestamp=self._clock(),
            born_host=context.store_host,
        )
        result = context.store.put_message(message)
        if not result.ok:
            log.error(
                "writing the op record of half message %s (queue %d, offset %d) failed: %s",
                half.msg_id,
                half.queue_id,
                half.queue_offset,
                result.status.name,
            )
