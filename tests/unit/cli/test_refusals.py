"""Refusals that end a command in one line: a TLS-only server closing a plain connection (and
the ACL's, tests/unit/cli/test_aclerrors.py), wherever they sit in a client error."""

from __future__ import annotations

import logging

import pytest

from rmq.cli.errors import as_rmq_error
from rmq.cli.refusals import quiet_refused_retries, refusal
from rmq.client.admin import AdminError
from rmq.client.errors import MQClientError
from rmq.remoting import tls
from rmq.remoting.errors import PlainConnectionRefused, RemotingConnectError

BROKER = "127.0.0.1:10911"
LINE = (
    f"rmq: error: {BROKER} closed the connection without an answer, as a server in TLS "
    "enforcing mode does to a plain client; add --tls (or set RMQ_TLS=1)"
)


def closed() -> PlainConnectionRefused:
    return PlainConnectionRefused(f"connection to {BROKER} closed", BROKER)


def failed_send(cause: Exception) -> MQClientError:
    error = MQClientError(10001, f"Send [3] times, still failed; last error: {cause}")
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "exc",
    [
        closed(),
        failed_send(closed()),
        AdminError("create topic T failed", {BROKER: closed()}),
    ],
)
def test_a_plain_connection_closed_unanswered_suggests_tls(exc: Exception) -> None:
    found = refusal(exc)
    assert found is not None and found.line() == LINE
    assert as_rmq_error(exc).line() == LINE


def test_a_tls_record_in_answer_suggests_tls() -> None:
    answered = PlainConnectionRefused(f"connection to {BROKER} closed", BROKER, tls_record=True)
    found = refusal(failed_send(answered))
    assert found is not None
    assert found.line() == LINE.replace(
        "closed the connection without an answer", "answered in TLS"
    )


def test_no_tls_line_for_other_failures_or_with_tls() -> None:
    assert refusal(failed_send(RemotingConnectError(f"connection to {BROKER} closed"))) is None
    tls.use_client_tls(tls.client_context(tls.TlsSettings()))
    try:
        assert refusal(failed_send(closed())) is None
    finally:
        tls.use_client_tls(None)


def test_retry_warnings_about_a_refusal_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("rmq.client")  # the producer's and the instance's logger
    filters = list(log.filters)
    quiet_refused_retries()
    try:
        with caplog.at_level(logging.WARNING, logger="rmq.client"):
            log.warning("send to %s failed (%s), retrying", "q", closed())
            log.warning("send to %s failed (%s), retrying", "q", RemotingConnectError("reset"))
    finally:
        log.filters[:] = filters
    assert [record.getMessage() for record in caplog.records] == [
        "send to q failed (reset), retrying"
    ]
