"""TLS settings, SSL contexts and the servers' modes (rmq.remoting.tls, tlsserver).

Certificates are made at test time with the openssl command; the servers and clients are
real sockets on loopback, in process."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from rmq.common.configfields import ConfigError
from rmq.remoting import tls
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import ResponseCode
from rmq.remoting.command import RemotingCommand, create_request, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.errors import RemotingConnectError
from rmq.remoting.server import RemotingServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

ECHO_CODE = 9999


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-signed certificate with its key in plain and encrypted (password "s3cret") and
    another, unrelated certificate."""
    root = tmp_path_factory.mktemp("certs")
    cert, key = tls.make_self_signed(root / "a")
    other, _ = tls.make_self_signed(root / "b", "elsewhere")
    encrypted = root / "encrypted.pem"
    subprocess.run(
        [
            "openssl",
            "pkey",
            "-in",
            str(key),
            "-aes256",
            "-passout",
            "pass:s3cret",
            "-out",
            str(encrypted),
        ],
        check=True,
        capture_output=True,
    )
    return {"cert": cert, "key": key, "encrypted": encrypted, "other": other}


@pytest.fixture
def plain_again() -> Iterator[None]:
    """Put the process-wide choices back to plain after the test."""
    yield
    tls.configure_server(tls.TlsSettings())
    tls.use_client_tls(None)


# --- settings ---------------------------------------------------------------------------------


def test_defaults_are_apaches_but_the_mode() -> None:
    settings = tls.TlsSettings.from_properties({})

    assert settings.mode is tls.TlsMode.DISABLED
    assert settings.test_mode is True
    assert settings.need_client_auth is tls.ClientAuth.NONE
    assert settings.config_file == "/etc/rocketmq/tls.properties"
    assert settings.client_enabled is False


def test_every_key_is_read() -> None:
    settings = tls.TlsSettings.from_properties(
        {
            "tls.server.mode": "Enforcing",
            "tls.test.mode.enable": "FALSE",
            "tls.server.need.client.auth": "require",
            "tls.server.certPath": "/c.pem",
            "tls.server.keyPath": "/k.pem",
            "tls.server.keyPassword": "pw",
            "tls.server.authClient": "true",
            "tls.server.trustCertPath": "/ca.pem",
            "tls.client.certPath": "/cc.pem",
            "tls.client.keyPath": "/ck.pem",
            "tls.client.keyPassword": "cpw",
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": "/cca.pem",
            "listenPort": "10911",
        }
    )

    assert settings == tls.TlsSettings(
        mode=tls.TlsMode.ENFORCING,
        test_mode=False,
        need_client_auth=tls.ClientAuth.REQUIRE,
        server_cert_path="/c.pem",
        server_key_path="/k.pem",
        server_key_password="pw",
        server_auth_client=True,
        server_trust_cert_path="/ca.pem",
        client_cert_path="/cc.pem",
        client_key_path="/ck.pem",
        client_key_password="cpw",
        client_auth_server=True,
        client_trust_cert_path="/cca.pem",
    )
    assert "pw" not in repr(settings) and "/c.pem" in repr(settings)


def test_enforcing_turns_the_own_client_on_unless_tls_enable_says_no() -> None:
    enforcing = {"tls.server.mode": "enforcing"}

    assert tls.TlsSettings.from_properties(enforcing).client_enabled is True
    assert (
        tls.TlsSettings.from_properties({**enforcing, "tls.enable": "false"}).client_enabled
        is False
    )
    assert tls.TlsSettings.from_properties({"tls.enable": "true"}).client_enabled is True


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tls.server.mode", "strict"),
        ("tls.enable", "yes"),
        ("tls.test.mode.enable", "1"),
        ("tls.server.need.client.auth", "always"),
    ],
)
def test_a_bad_value_names_its_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        tls.TlsSettings.from_properties({key: value}, "broker.conf")

    assert key in str(caught.value) and "broker.conf" in str(caught.value)


def test_the_config_file_overrides_all_but_mode_and_enable(tmp_path: Path) -> None:
    file = tmp_path / "tls.properties"
    file.write_text(
        "tls.server.mode=disabled\ntls.enable=true\ntls.test.mode.enable=false\n"
        "tls.server.certPath=/from/file.pem\n"
    )
    settings = tls.TlsSettings.from_properties(
        {
            "tls.server.mode": "permissive",
            "tls.config.file": str(file),
            "tls.server.certPath": "/from/property.pem",
            "tls.server.keyPath": "/k.pem",
        }
    ).with_config_file()

    assert settings.mode is tls.TlsMode.PERMISSIVE
    assert settings.enable is None
    assert settings.test_mode is False
    assert settings.server_cert_path == "/from/file.pem"
    assert settings.server_key_path == "/k.pem"


def test_a_missing_config_file_changes_nothing(tmp_path: Path) -> None:
    settings = tls.TlsSettings(config_file=str(tmp_path / "absent.properties"))

    assert settings.with_config_file() == settings


# --- contexts ---------------------------------------------------------------------------------


def test_own_certificate_with_an_encrypted_key(certs: dict[str, Path]) -> None:
    settings = tls.TlsSettings(
        test_mode=False,
        server_cert_path=str(certs["cert"]),
        server_key_path=str(certs["encrypted"]),
        server_key_password="s3cret",
    )

    assert tls.server_context(settings).verify_mode.name == "CERT_NONE"
    with pytest.raises(tls.TlsSetupError, match=r"encrypted\.pem"):
        tls.server_context(
            tls.TlsSettings(
                test_mode=False,
                server_cert_path=str(certs["cert"]),
                server_key_path=str(certs["encrypted"]),
                server_key_password="wrong",
            )
        )


def test_without_test_mode_a_certificate_is_needed() -> None:
    with pytest.raises(tls.TlsSetupError, match=r"tls\.server\.certPath"):
        tls.server_context(tls.TlsSettings(test_mode=False))


def test_client_auth_modes_ask_for_a_client_certificate(certs: dict[str, Path]) -> None:
    base = tls.TlsSettings(
        test_mode=False,
        server_cert_path=str(certs["cert"]),
        server_key_path=str(certs["key"]),
        server_trust_cert_path=str(certs["cert"]),
    )
    optional = tls.server_context(replace(base, need_client_auth=tls.ClientAuth.OPTIONAL))
    required = tls.server_context(replace(base, need_client_auth=tls.ClientAuth.REQUIRE))

    assert (optional.verify_mode.name, required.verify_mode.name) == (
        "CERT_OPTIONAL",
        "CERT_REQUIRED",
    )


def test_client_trusts_anyone_in_test_mode_and_checks_with_a_ca(certs: dict[str, Path]) -> None:
    assert tls.client_context(tls.TlsSettings()).verify_mode.name == "CERT_NONE"
    checking = tls.verifying_client_context(str(certs["cert"]))
    assert checking.verify_mode.name == "CERT_REQUIRED"
    assert checking.check_hostname is False


# --- servers in each mode ---------------------------------------------------------------------


async def _echo(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, remark="echo", body=request.body)


async def _talk(mode: tls.TlsMode, client_tls: bool) -> str:
    """Start a server in `mode`, send one request from a plain or TLS client: "echo", or
    the client's error."""
    tls.configure_server(tls.TlsSettings(mode=mode))
    server = RemotingServer("127.0.0.1", 0)
    server.register(ECHO_CODE, _echo)
    async with server:
        context = tls.client_context(tls.TlsSettings()) if client_tls else None
        async with RemotingClient(ssl_context=context) as client:
            request = create_request(ECHO_CODE, body=b"ping")
            try:
                response = await client.invoke(f"127.0.0.1:{server.port}", request, 10.0)
            except RemotingConnectError as exc:
                return str(exc)
            assert response.body == b"ping"
            return response.remark or ""


@pytest.mark.usefixtures("plain_again")
def test_permissive_serves_plain_and_tls() -> None:
    assert asyncio.run(_talk(tls.TlsMode.PERMISSIVE, client_tls=False)) == "echo"
    assert asyncio.run(_talk(tls.TlsMode.PERMISSIVE, client_tls=True)) == "echo"


@pytest.mark.usefixtures("plain_again")
def test_enforcing_closes_plain_connections() -> None:
    assert asyncio.run(_talk(tls.TlsMode.ENFORCING, client_tls=True)) == "echo"
    assert asyncio.run(_talk(tls.TlsMode.ENFORCING, client_tls=False)).endswith(" closed")


@pytest.mark.usefixtures("plain_again")
def test_disabled_refuses_a_tls_client() -> None:
    assert asyncio.run(_talk(tls.TlsMode.DISABLED, client_tls=False)) == "echo"
    error = asyncio.run(_talk(tls.TlsMode.DISABLED, client_tls=True))
    assert error.startswith("TLS handshake with 127.0.0.1:") and "disabled" in error


@pytest.mark.usefixtures("plain_again")
def test_clients_take_the_process_default() -> None:
    context = tls.client_context(tls.TlsSettings())
    tls.use_client_tls(context)

    assert RemotingClient().ssl_context is context
    assert RemotingClient(ssl_context=None).ssl_context is None


async def _verified_by(server: RemotingServer, ca: Path) -> str:
    """ "echo" when a client trusting only `ca` gets an answer from `server`, else its error."""
    async with RemotingClient(ssl_context=tls.verifying_client_context(str(ca))) as client:
        request = create_request(ECHO_CODE, body=b"ping")
        try:
            response = await client.invoke(f"127.0.0.1:{server.port}", request, 10.0)
        except RemotingConnectError as exc:
            return str(exc)
        return response.remark or ""


@pytest.mark.usefixtures("plain_again")
def test_a_renewed_certificate_is_served_to_new_connections(tmp_path: Path) -> None:
    old_cert, old_key = tls.make_self_signed(tmp_path / "old")
    new_cert, new_key = tls.make_self_signed(tmp_path / "new", "renewed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(old_cert, cert)
    shutil.copy(old_key, key)
    tls.configure_server(
        tls.TlsSettings(
            mode=tls.TlsMode.ENFORCING,
            test_mode=False,
            server_cert_path=str(cert),
            server_key_path=str(key),
        )
    )

    async def scenario() -> tuple[str, str, str, str]:
        server = RemotingServer("127.0.0.1", 0)
        server.register(ECHO_CODE, _echo)
        async with server:
            before = await _verified_by(server, old_cert)
            shutil.copy(new_cert, cert)  # the certificate alone: not usable yet, kept
            half = await _verified_by(server, old_cert)
            shutil.copy(new_key, key)
            return (
                before,
                half,
                await _verified_by(server, new_cert),
                await _verified_by(server, old_cert),
            )

    before, half, renewed, stale = asyncio.run(scenario())

    assert (before, half, renewed) == ("echo", "echo", "echo")
    assert "certificate is not trusted" in stale
