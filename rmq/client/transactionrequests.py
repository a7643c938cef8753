"""CHECK_TRANSACTION_STATE (39): a broker asks a producer group about a half message.

The broker's transaction check service picks one connection of the half message's producer
group (its ``PGROUP`` property) and sends the request oneway; the body is the half message as
a stored record, with its real topic and queue.  As Apache's ``ClientRemotingProcessor``
does, the client decodes it, finds its producer of that group and hands the question over
(:class:`TransactionChecker`: the transactional producer answers with END_TRANSACTION on the
same connection).  A body that does not decode, a message without ``PGROUP`` or a group
this client has no transactional producer of is logged and left unanswered; the request
itself is never answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from rmq.common.message import MessageRecord, decode_record
from rmq.common.msgconst import PROPERTY_PRODUCER_GROUP
from rmq.common.recordwalk import RecordError
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.connection import Connection
from rmq.remoting.headers import CheckTransactionStateRequestHeader

__all__ = ["TransactionChecker", "register_transaction_requests"]

log = logging.getLogger("rmq.client")


class TransactionChecker(Protocol):
    """A producer that answers the broker's questions about its half messages."""

    async def check_transaction_state(
        self,
        connection: Connection,
        record: MessageRecord,
        header: CheckTransactionStateRequestHeader,
    ) -> None:
        """Find out the state of the half message `record` and tell the broker."""
        ...


def register_transaction_requests(
    remoting: RemotingClient, find_producer: Callable[[str], TransactionChecker | None]
) -> None:
    """Serve CHECK_TRANSACTION_STATE on `remoting` for the producers `find_producer` finds
    by group."""

    async def check_transaction_state(connection: Connection, request: RemotingCommand) -> None:
        header = request.read_header(CheckTransactionStateRequestHeader)
        try:
            record = decode_record(bytes(request.body or b""))
        except RecordError as exc:
            log.warning("broker %s: undecodable transaction check: %s", connection, exc)
            return
        group = record.properties.get(PROPERTY_PRODUCER_GROUP)
        producer = find_producer(group) if group is not None else None
        if producer is None:
            log.warning(
                "broker %s checks transaction %s of producer group %s: no such producer here",
                connection,
                header.transaction_id,
                group,
            )
            return
        await producer.check_transaction_state(connection, record, header)

    remoting.register(RequestCode.CHECK_TRANSACTION_STATE, check_transaction_state)
