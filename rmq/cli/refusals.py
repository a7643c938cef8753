"""Failures that end a command at once, in one line: every further request would fail alike.

Two kinds: a broker's ACL refusal (`rmq.cli.aclerrors.acl_error`: what is missing, for which
access key) and a server in TLS enforcing mode closing a plain client's connection without a
word (`rmq.cli.tlsoptions.plain_refused`: add --tls).  `refusal` finds either inside a client
error, its causes and the failures of an `AdminError`.  Commands that go on after a failed
request (a producer's next send, a consumer's next pull) stop at a refusal instead.

Since the refusal becomes the command's one error line, `quiet_refused_retries` keeps the
client's warnings about the attempts it failed ("send ... failed (...), retrying",
"unregistering from broker ... failed") off stderr unless `--debug` is on.
"""

from __future__ import annotations

import logging

from rmq.cli.aclerrors import acl_error
from rmq.cli.errors import RmqError
from rmq.cli.tlsoptions import plain_refused


def refusal(exc: BaseException, *, topic_perm: str = "PUB") -> RmqError | None:
    """The one-line error of the refusal inside `exc` (`topic_perm`: the permission on a topic
    the command needed), else None."""
    return acl_error(exc, topic_perm=topic_perm) or plain_refused(exc)


class _RetryFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING or logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(arg, BaseException) and refusal(arg) for arg in args)


_RETRY_FILTER = _RetryFilter()


def quiet_refused_retries() -> None:
    """Drop the client's warnings about attempts a refusal failed (see the module docstring)."""
    client_log = logging.getLogger("rmq.client")
    if _RETRY_FILTER not in client_log.filters:
        client_log.addFilter(_RETRY_FILTER)
