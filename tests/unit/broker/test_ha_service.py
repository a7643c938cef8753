"""The replication service in one process: a master's HAService against a raw slave socket
(where streaming starts, batches, heartbeats, acks and the SYNC_MASTER waiters), and a
slave's HAService replicating from a master's over loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import BrokerRole
from rmq.remoting.errors import ListenError
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.ha.frames import TRANSFER_HEADER, pack_report, unpack_transfer_header
from rmq.server.broker.ha.service import HA_PORT_ROLE
from rmq.store.putmessage import PutMessageStatus
from tests.procs import free_port
from tests.unit.broker.helpers import TOPIC, make_broker, put, run, until

FILE_SIZE = 256 * 1024  # make_broker's commitlog file size
BATCH = 4096


def master_settings(**store: Any) -> dict[str, Any]:
    return {
        "ha_listen_port": free_port(),
        "broker_role": BrokerRole.SYNC_MASTER,
        "slave_timeout": 300,
        "ha_send_heartbeat_interval": 100,
        "ha_transfer_batch_size": BATCH,
        **store,
    }


@pytest.fixture
def master(tmp_path: Path) -> Iterator[BrokerContext]:
    broker = make_broker(tmp_path / "master", store=master_settings())
    yield broker
    broker.store.shutdown()


@contextlib.asynccontextmanager
async def started(*brokers: BrokerContext) -> AsyncIterator[None]:
    for broker in brokers:
        await broker.ha_service.start()
    try:
        yield
    finally:
        for broker in brokers:
            await broker.ha_service.stop()


@contextlib.asynccontextmanager
async def raw_slave(
    master: BrokerContext, first_report: int
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", master.store_config.ha_listen_port)
    writer.write(pack_report(first_report))
    await until(lambda: bool(master.ha_service.connections))
    try:
        yield reader, writer
    finally:
        writer.close()


async def read_transfer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    offset, size = unpack_transfer_header(await reader.readexactly(TRANSFER_HEADER.size))
    return offset, await reader.readexactly(size)


def fill_past_the_first_file(broker: BrokerContext) -> None:
    while broker.store.max_physical_offset() < FILE_SIZE + 1000:
        put(broker, body=b"x" * 1000)


def test_an_empty_slave_gets_the_masters_last_file_in_batches(master: BrokerContext) -> None:
    fill_past_the_first_file(master)
    end = master.store.max_physical_offset()

    async def scenario() -> None:
        async with started(master), raw_slave(master, 0) as (reader, _):
            offset, data = await read_transfer(reader)
            assert offset == FILE_SIZE
            assert len(data) == min(BATCH, end - FILE_SIZE)
            assert data == bytes(master.store.get_commitlog_data(FILE_SIZE) or b"")[:BATCH]
            while offset + len(data) < end:
                offset, data = await read_transfer(reader)
            assert offset + len(data) == end

    run(scenario())


def test_a_slave_with_data_gets_what_follows_its_offset_then_heartbeats(
    master: BrokerContext,
) -> None:
    first = put(master)
    put(master)
    end = master.store.max_physical_offset()

    async def scenario() -> None:
        async with started(master), raw_slave(master, first.next_offset) as (reader, _):
            offset, data = await read_transfer(reader)
            assert (offset, len(data)) == (first.next_offset, end - first.next_offset)
            assert await read_transfer(reader) == (end, b"")  # the heartbeat: size 0

    run(scenario())


def test_an_ack_past_the_masters_end_closes_the_connection(master: BrokerContext) -> None:
    put(master)
    end = master.store.max_physical_offset()

    async def scenario() -> None:
        async with started(master), raw_slave(master, end) as (reader, writer):
            writer.write(pack_report(end + 1))
            await until(lambda: not master.ha_service.connections)
            assert master.ha_service.push2slave_max_offset == end
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while await reader.read(1 << 16):
                    pass

    run(scenario())


def test_sync_master_waiters(master: BrokerContext) -> None:
    service = master.ha_service

    async def scenario() -> None:
        async with started(master):
            result = put(master)
            status = await service.wait_replica(result.next_offset)
            assert status is PutMessageStatus.SLAVE_NOT_AVAILABLE  # nobody connected
            async with raw_slave(master, result.next_offset) as (_, writer):
                second = put(master)
                waiting = asyncio.ensure_future(service.wait_replica(second.next_offset))
                await asyncio.sleep(0.05)
                assert not waiting.done()
                writer.write(pack_report(second.next_offset - 1))  # not enough
                await asyncio.sleep(0.05)
                assert not waiting.done()
                writer.write(pack_report(second.next_offset))
                assert await waiting is PutMessageStatus.PUT_OK
                third = put(master)
                loop = asyncio.get_running_loop()
                began = loop.time()
                timed_out = await service.wait_replica(third.next_offset)
                assert timed_out is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
                assert loop.time() - began >= 0.29  # slave_timeout=300
                assert service.runtime_info() == {
                    "haConnectionCount": "1",
                    "haPush2SlaveMaxOffset": str(second.next_offset),
                    "haSlaveFallBehindBytes": str(third.next_offset - second.next_offset),
                }
                master.store_config.ha_slave_fallbehind_max = 10
                fallen = await service.wait_replica(put(master).next_offset)
                assert fallen is PutMessageStatus.SLAVE_NOT_AVAILABLE
            await until(lambda: not service.connections)
            assert service.runtime_info() == {}

    run(scenario())


def test_a_slave_replicates_records_split_across_transfers(tmp_path: Path) -> None:
    master = make_broker(tmp_path / "m", store=master_settings(ha_transfer_batch_size=100))
    master_port = master.store_config.ha_listen_port
    slave = make_broker(
        tmp_path / "s",
        broker={"broker_id": 1},
        store={
            "broker_role": BrokerRole.SLAVE,
            "ha_listen_port": free_port(),
            "ha_master_address": f"127.0.0.1:{master_port}",
            "ha_send_heartbeat_interval": 100,
        },
    )
    try:
        for i in range(20):
            put(master, body=f"message {i}".encode() * 3)

        async def scenario() -> None:
            async with started(master, slave):
                end = master.store.max_physical_offset()
                await until(lambda: slave.store.max_physical_offset() == end, timeout=8)
                assert slave.store.get_max_offset_in_queue(TOPIC, 0) == 20
                copied = bytes(slave.store.get_commitlog_data(0) or b"")
                assert copied == bytes(master.store.get_commitlog_data(0) or b"")
                await until(lambda: master.ha_service.push2slave_max_offset == end)
                assert master.ha_service.runtime_info()["haSlaveFallBehindBytes"] == "0"
                status = await master.ha_service.wait_replica(put(master).next_offset)
                assert status is PutMessageStatus.PUT_OK
                assert slave.store.get_max_offset_in_queue(TOPIC, 0) == 21

        run(scenario())
    finally:
        master.store.shutdown()
        slave.store.shutdown()


def test_a_slave_drops_a_master_that_skips_and_reconnects(tmp_path: Path) -> None:
    slave_store = {"broker_role": BrokerRole.SLAVE, "ha_listen_port": free_port()}
    slave = make_broker(tmp_path / "s", broker={"broker_id": 1}, store=slave_store)
    source = make_broker(tmp_path / "src", store={"ha_listen_port": free_port()})
    first = put(source)
    record = bytes(source.store.get_commitlog_data(0) or b"")
    reports: list[list[int]] = []

    async def fake_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen: list[int] = []
        reports.append(seen)
        seen.append(int.from_bytes(await reader.readexactly(8), "big"))
        if len(reports) == 1:
            writer.write(TRANSFER_HEADER.pack(0, len(record)) + record)
            seen.append(int.from_bytes(await reader.readexactly(8), "big"))
            writer.write(TRANSFER_HEADER.pack(first.next_offset + 10, 0))  # a gap
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await reader.read()
        writer.close()

    async def scenario() -> None:
        server = await asyncio.start_server(fake_master, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, started(slave):
            slave.set_master("127.0.0.1:10911", f"127.0.0.1:{port}")
            await until(lambda: len(reports) == 2 and bool(reports[1]), timeout=5)
        assert reports == [[0, first.next_offset], [first.next_offset]]
        assert slave.store.get_max_offset_in_queue(TOPIC, 0) == 1

    try:
        run(scenario())
    finally:
        slave.store.shutdown()
        source.store.shutdown()


def test_a_taken_ha_port_is_a_listen_error_naming_it(tmp_path: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    broker = make_broker(tmp_path, store={"ha_listen_port": port})
    try:
        broker.configs.server.bind_address = "127.0.0.1"

        async def scenario() -> None:
            with pytest.raises(ListenError) as failure:
                await broker.ha_service.start()
            assert str(failure.value) == (
                f"cannot listen on 127.0.0.1:{port}, {HA_PORT_ROLE}: Address already in use"
            )

        run(scenario())
    finally:
        blocker.close()
        broker.store.shutdown()
