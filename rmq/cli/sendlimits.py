"""Naming the size limit a refused message ran into: `maxMessageSize`.

Java's client refuses a body over the producer's `maxMessageSize` with "the message body size
over max value, MAX: N", and a broker refuses a record over its own `maxMessageSize` with
MESSAGE_ILLEGAL and "msg body length limit NB".  Both texts are kept as they are (scripts and
the conformance tests compare them); `explain` adds which setting that limit is, so a user
knows what to change.  Used by `rmq produce` for its client-side check and its failed sends.
"""

from __future__ import annotations

from rmq.client.errors import MQBrokerError, MQClientError
from rmq.remoting.codes import ResponseCode

CLIENT_LIMIT_TEXT = "the message body size over max value"
BROKER_LIMIT_TEXT = "msg body length limit"


def explain(exc: BaseException) -> str:
    """`exc`'s text, followed by which `maxMessageSize` refused the message when it is a size
    refusal."""
    text = str(exc) or type(exc).__name__
    note = limit_note(exc)
    return f"{text} ({note})" if note else text


def limit_note(exc: BaseException, body_size: int | None = None) -> str | None:
    """Which `maxMessageSize` refused a message, when `exc` (or its cause) is a size refusal
    of the client or of the broker; `body_size` is the body's length when known."""
    error: BaseException | None = exc
    while error is not None:
        if isinstance(error, MQClientError | MQBrokerError):
            if error.code != ResponseCode.MESSAGE_ILLEGAL:
                return None
            remark = error.remark or ""
            size = f"; the body is {body_size} bytes" if body_size is not None else ""
            if remark.startswith(CLIENT_LIMIT_TEXT):
                return f"over the producer's maxMessageSize{size}"
            if BROKER_LIMIT_TEXT in remark:
                return f"over the broker's maxMessageSize, or properties over 32 KiB{size}"
            return None
        error = error.__cause__
    return None
