"""Where rmq's client signs: every request a producer (or admin client) sends carries AccessKey
and a Signature the broker can verify when the client has credentials, and none without."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rmq.client.admin import AdminClient
from rmq.client.credentials import SessionCredentials, default_credentials, use_default_credentials
from rmq.client.instance import ClientInstance
from rmq.client.message import Message
from rmq.client.producer import Producer
from rmq.remoting.aclsign import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, request_signature
from rmq.remoting.codes import RequestCode
from rmq.remoting.command import RemotingCommand
from tests.unit.client.fakes import FakeBroker, FakeNamesrv, route_of, run

CREDENTIALS = SessionCredentials("HookAccessKey", "HookSecretKey")


@pytest.fixture(autouse=True)
def no_default() -> Iterator[None]:
    use_default_credentials(None)
    yield
    use_default_credentials(None)


def _signed_by(request: RemotingCommand, credentials: SessionCredentials) -> bool:
    fields = request.ext_fields or {}
    return fields.get(ACCESS_KEY) == credentials.access_key and fields.get(
        SIGNATURE
    ) == request_signature(request, credentials.secret_key)


def _produce(credentials: SessionCredentials | None) -> tuple[list[RemotingCommand], int]:
    """Send one message through a fake cluster; the broker's sends and heartbeats, and how
    many route requests the name server got."""
    kept: list[RemotingCommand] = []
    routes = 0

    async def main() -> None:
        nonlocal routes
        namesrv, broker = FakeNamesrv(), FakeBroker("broker-a")
        for server in (namesrv, broker):
            await server.start()
        namesrv.routes["T"] = route_of({"broker-a": broker.addr})
        instance = ClientInstance(namesrv.addr, credentials=credentials)
        try:
            async with instance, Producer("PG", instance=instance) as producer:
                await producer.send(Message("T", b"signed body"))
                await instance.send_heartbeat_to_all_brokers()
        finally:
            for server in (namesrv, broker):
                await server.close()
        kept.extend([*broker.sends, *broker.heartbeats])
        routes = namesrv.route_requests["T"]

    run(main())
    return kept, routes


def test_requests_are_signed_only_with_credentials() -> None:
    signed, routes = _produce(CREDENTIALS)
    assert routes >= 1 and len(signed) >= 2
    assert all(_signed_by(request, CREDENTIALS) for request in signed)
    assert not any(SECURITY_TOKEN in (r.ext_fields or {}) for r in signed)
    assert signed[0].body == b"signed body"

    plain, _ = _produce(None)
    assert plain and not any(
        key in (request.ext_fields or {}) for request in plain for key in (ACCESS_KEY, SIGNATURE)
    )


def test_default_credentials_and_security_token() -> None:
    token = SessionCredentials("HookAccessKey", "HookSecretKey", security_token="Token1")
    use_default_credentials(token)
    assert default_credentials() is token
    signed, _ = _produce(None)
    assert signed and all(_signed_by(request, token) for request in signed)
    assert all((request.ext_fields or {}).get(SECURITY_TOKEN) == "Token1" for request in signed)


def test_admin_client_signs_and_secret_stays_out_of_repr() -> None:
    kept: list[RemotingCommand] = []

    async def main() -> None:
        broker = FakeBroker("broker-a")
        await broker.start()
        try:
            async with AdminClient("127.0.0.1:1", credentials=CREDENTIALS) as admin:
                request = RemotingCommand(RequestCode.HEART_BEAT, ext_fields={"clientID": "x"})
                await admin.remoting.invoke(broker.addr, request, 3.0)
        finally:
            await broker.close()
        kept.extend(broker.heartbeats)

    run(main())
    assert len(kept) == 1 and _signed_by(kept[0], CREDENTIALS)
    assert "HookSecretKey" not in repr(CREDENTIALS)
