"""The two checks every request of the client API goes through: who answered, and with what code.

`request_broker` / `request_namesrv` are public so that the admin API can send the requests
that have no function of their own without writing the checks again.
"""

from __future__ import annotations

from rmq.client.errors import MQBrokerError, MQClientError
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import ResponseCode
from rmq.remoting.command import Buffer, RemotingCommand

SUCCESS_ONLY = frozenset({ResponseCode.SUCCESS})


async def request_broker(
    remoting: RemotingClient,
    addr: str,
    request: RemotingCommand,
    timeout: float,
    accepted: frozenset[int] = SUCCESS_ONLY,
) -> RemotingCommand:
    """Send `request` to the broker at `addr`; a response code outside `accepted` raises
    MQBrokerError with the broker's remark."""
    response = await remoting.invoke(addr, request, timeout)
    if response.code not in accepted:
        raise MQBrokerError(response.code, response.remark, addr)
    return response


async def request_namesrv(
    remoting: RemotingClient, addr: str, request: RemotingCommand, timeout: float
) -> RemotingCommand:
    """Send `request` to the name server at `addr`; anything but SUCCESS raises
    MQClientError with the name server's remark."""
    response = await remoting.invoke(addr, request, timeout)
    if response.code != ResponseCode.SUCCESS:
        raise MQClientError(response.code, response.remark or "")
    return response


def body_of(response: RemotingCommand, addr: str, what: str) -> Buffer:
    """The body of a response that must have one (SYSTEM_ERROR naming `what` if empty)."""
    if not response.body:
        raise MQClientError(ResponseCode.SYSTEM_ERROR, f"{addr} answered {what} without a body")
    return response.body
