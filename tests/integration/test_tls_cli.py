"""TLS on real processes: `rmq standalone` in each mode and `rmq produce` / `rmq consume`
with and without `--tls` / `--tls-ca`.

Certificates are made at test time with the openssl command.  A standalone in enforcing mode
has an enforcing name server too, so its start-up is awaited with this process's clients on
TLS (the same process-wide choice `--tls` makes)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from rmq.remoting import tls
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import create_request
from rmq.remoting.frame import encode_frame
from tests.cli_forkserver import run as cli_run
from tests.procs import LOOPBACK, RmqProcesses, StandaloneProcess, rmq_command

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

TIMEOUT = 60


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[RmqProcesses]:
    procs = RmqProcesses(tmp_path)
    yield procs
    procs.kill_all()


def _standalone(
    processes: RmqProcesses, *, props: dict[str, object] | None = None, args: Sequence[str] = ()
) -> StandaloneProcess:
    """A standalone; its registration is checked over TLS (harmless for permissive)."""
    tls.use_client_tls(tls.client_context(tls.TlsSettings()))
    try:
        return processes.start_standalone(props=props, args=args)
    finally:
        tls.use_client_tls(None)


def _rmq(args: Sequence[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return cli_run(
        rmq_command(args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _produce(
    server: StandaloneProcess, *flags: str, body: str = "hello"
) -> subprocess.CompletedProcess[str]:
    return _rmq(["produce", "-n", server.namesrv_addr, *flags, "TlsTopic"], f"{body}\n")


def test_enforcing_serves_tls_clients_and_refuses_plain_ones(processes: RmqProcesses) -> None:
    server = _standalone(processes, args=["-D", "tls.server.mode=enforcing"])

    for body in ("one", "two"):
        sent = _produce(server, "--tls", body=body)
        assert sent.returncode == 0, sent.stderr
        assert '"status":"SEND_OK"' in sent.stdout
    consumed = _rmq(["consume", "-n", server.namesrv_addr, "--tls", "TlsTopic", "-c", "2"])
    assert consumed.returncode == 0, consumed.stderr
    bodies = sorted(json.loads(line)["body"] for line in consumed.stdout.splitlines())
    assert bodies == ["one", "two"]

    refused = _produce(server)
    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "closed" in refused.stderr and "add --tls" in refused.stderr
    assert "TLS enforcing mode" in server.log_text()
    _check_fast_port(server.port - 2)

    listed = cli_run(
        rmq_command(["mqadmin", "clusterList", "-n", server.namesrv_addr]),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "RMQ_TLS": "1"},
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert server.addr in listed.stdout


def _check_fast_port(port: int) -> None:
    """The broker's fast port takes a TLS handshake and closes a plain connection unanswered."""
    context = tls.client_context(tls.TlsSettings())
    with (
        socket.create_connection((LOOPBACK, port), timeout=TIMEOUT) as raw,
        context.wrap_socket(raw) as secure,
    ):
        assert secure.version() is not None
    with socket.create_connection((LOOPBACK, port), timeout=TIMEOUT) as plain:
        plain.sendall(encode_frame(create_request(RequestCode.GET_BROKER_RUNTIME_INFO)))
        assert plain.recv(1) == b""


def test_permissive_serves_both(processes: RmqProcesses) -> None:
    server = _standalone(processes, props={"tls.server.mode": "permissive"})

    plain = _produce(server)
    secure = _produce(server, "--tls")

    assert (plain.returncode, secure.returncode) == (0, 0), (plain.stderr, secure.stderr)


def test_disabled_refuses_a_tls_client(processes: RmqProcesses) -> None:
    server = processes.start_standalone()

    refused = _produce(server, "--tls")

    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"TLS handshake with {server.namesrv_addr} failed" in refused.stderr


def test_own_certificate_from_the_config_file_and_tls_ca(
    processes: RmqProcesses, tmp_path: Path
) -> None:
    cert, key = tls.make_self_signed(tmp_path / "mine")
    stranger, _ = tls.make_self_signed(tmp_path / "theirs", "stranger")
    config = tmp_path / "tls.properties"
    config.write_text(
        f"tls.test.mode.enable=false\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
        "tls.client.authServer=true\n"
        f"tls.client.trustCertPath={cert}\n"
    )
    server = _standalone(
        processes, props={"tls.server.mode": "enforcing", "tls.config.file": config}
    )

    trusted = _produce(server, "--tls-ca", str(cert))
    untrusted = _produce(server, "--tls-ca", str(stranger))

    assert trusted.returncode == 0, trusted.stderr
    assert untrusted.returncode == 1
    assert "certificate is not trusted" in untrusted.stderr
    assert len(untrusted.stderr.strip().splitlines()) == 1, untrusted.stderr


def test_a_bad_tls_setting_is_a_usage_error() -> None:
    bad_mode = _rmq(["namesrv", "--port", "0", "-D", "tls.server.mode=strict"])
    bad_key = _rmq(["namesrv", "--port", "0", "-D", "tls.server.mood=enforcing"])

    assert bad_mode.returncode == 2 and "tls.server.mode='strict'" in bad_mode.stderr
    assert bad_key.returncode == 2 and "tls.server.mood" in bad_key.stderr


def test_a_plain_client_of_an_enforcing_broker_is_told_to_add_tls(
    processes: RmqProcesses,
) -> None:
    """A permissive name server routes a plain client to an enforcing broker, which closes each
    of its connections unanswered: the command ends with one line suggesting --tls, not a
    warning per retry and a CONNECT_BROKER_EXCEPTION."""
    namesrv = processes.start_namesrv(props={"tls.server.mode": "permissive"})
    broker = processes.start_broker(namesrv=namesrv, props={"tls.server.mode": "enforcing"})
    n = ["-n", namesrv.addr]
    made = _rmq(["topic", "update", "TlsOnly", *n, "--tls"])
    assert made.returncode == 0, made.stderr
    sent = _rmq(["produce", "TlsOnly", *n, "--tls"], "kept\n")
    assert sent.returncode == 0, sent.stderr

    expected = (
        f"rmq: error: {broker.addr} closed the connection without an answer, as a server in "
        "TLS enforcing mode does to a plain client; add --tls (or set RMQ_TLS=1)\n"
    )
    for args, stdin in (
        (["produce", "TlsOnly", *n], "refused\n"),
        (["consume", "TlsOnly", *n, "--from", "first", "-e"], ""),
        (["topic", "update", "TlsOther", *n], ""),
    ):
        refused = _rmq(args, stdin)
        assert (refused.returncode, refused.stderr) == (1, expected), args
        assert refused.stdout == "", args
    read = _rmq(["consume", "TlsOnly", *n, "--tls", "--from", "first", "-e"])
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["body"] for line in read.stdout.splitlines()] == ["kept"]
