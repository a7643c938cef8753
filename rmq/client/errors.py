"""Errors raised by rmq's client: what went wrong, with the server's own words kept.

Three kinds, after the Java client's exceptions:

* `MQBrokerError(code, remark, addr)`: a broker answered a request with a response code
  the call does not accept.  `remark` is the broker's remark, never dropped or reworded.
* `MQClientError(code, remark)`: the client refuses or gives up: a name server answered
  with an unexpected code, a message fails validation (MESSAGE_ILLEGAL, as Java's
  `Validators`), or a send failed on every attempt.  `code` is a response code, one of the
  `ClientErrorCode` numbers below, or -1 when there is none (Java's default).
* `RouteNotFound(topic, remark)`: the name server knows no route for a topic
  (TOPIC_NOT_EXIST); a subclass of `MQClientError` because the producer treats it as
  "try the auto-create template topic" rather than as a failure.
* `NotANameServer(addr, remark)`: an address used as a name server answered a name-server
  request with REQUEST_CODE_NOT_SUPPORTED (a broker's address given as the name server).

Connection failures and timeouts keep the remoting layer's own exceptions
(`rmq.remoting.errors.RemotingConnectError` / `RemotingTimeoutError`); when the producer
gives up after retries it raises `MQClientError` with the last failure as `__cause__`.
"""

from __future__ import annotations

import enum

from rmq.remoting.codes import ResponseCode, code_name


class ClientErrorCode(enum.IntEnum):
    """Client-side error codes (Java's `ClientErrorCode`), used where no response code fits."""

    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005
    REQUEST_TIMEOUT_EXCEPTION = 10006
    CREATE_REPLY_MESSAGE_EXCEPTION = 10007


NO_CODE = -1


def _describe_code(code: int) -> str:
    if code == NO_CODE:
        return ""
    if code >= min(ClientErrorCode):
        return f"{code_name(code, ClientErrorCode)}: "
    return f"{code_name(code, ResponseCode)}: "


class ClientError(Exception):
    """Base class of every error raised by rmq.client."""


class MQClientError(ClientError):
    """The client refused or gave up; `remark` says why in full."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(f"{_describe_code(code)}{remark}")
        self.code = code
        self.remark = remark


class RouteNotFound(MQClientError):
    """The name server has no route for `topic` (TOPIC_NOT_EXIST)."""

    def __init__(self, topic: str, remark: str | None) -> None:
        super().__init__(
            ResponseCode.TOPIC_NOT_EXIST,
            remark or f"No topic route info in name server for {topic}",
        )
        self.topic = topic


class NotANameServer(MQClientError):
    """The server at `addr` answered a name-server request with REQUEST_CODE_NOT_SUPPORTED:
    it is something else (a broker, most likely) given as a name server."""

    def __init__(self, addr: str, remark: str) -> None:
        super().__init__(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
        self.addr = addr
        self.answer = (
            f"{code_name(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode)}: {remark.strip()}"
        )
        self.args = (f"{addr} is not a name server (it answered {self.answer})",)


class MQBrokerError(ClientError):
    """A broker answered with response code `code` and remark `remark`."""

    def __init__(self, code: int, remark: str | None, addr: str | None) -> None:
        where = f" (broker {addr})" if addr else ""
        super().__init__(f"{_describe_code(code)}{remark or ''}{where}")
        self.code = code
        self.remark = remark
        self.addr = addr
