"""Ending a transaction: END_TRANSACTION (37), which a producer sends oneway.

A transactional producer sends it after its local transaction ran (on the connection pool, to
the master of the half message's broker) and after each CHECK_TRANSACTION_STATE the broker
asked it (on the connection the question came on, as Java answers on the asking channel).
"""

from __future__ import annotations

from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import EndTransactionRequestHeader


def end_transaction_request(
    header: EndTransactionRequestHeader, remark: str | None = None
) -> RemotingCommand:
    """The END_TRANSACTION request of `header`; `remark` says why a local transaction or a
    check failed (Java puts the exception there)."""
    request = create_request(RequestCode.END_TRANSACTION, header)
    request.remark = remark
    return request


async def end_transaction_oneway(
    remoting: RemotingClient,
    addr: str,
    header: EndTransactionRequestHeader,
    remark: str | None = None,
) -> None:
    """Write END_TRANSACTION to the broker at `addr`; nothing is answered."""
    await remoting.invoke_oneway(addr, end_transaction_request(header, remark))
