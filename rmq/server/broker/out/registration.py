"""Registering the broker with its name servers (Apache's ``BrokerOuterAPI`` and the
registration half of ``BrokerController``).

:class:`BrokerRegistration` keeps the broker in every name server of ``namesrvAddr``
(``host:port`` items separated by ``;``, read again before each round so UPDATE_BROKER_CONFIG
changes apply):

* REGISTER_BROKER goes to all name servers at once over one pooled :class:`RemotingClient`
  connection each (a name server drops a broker whose connection closes).  The header carries
  the broker's address, name, cluster, id, ``haServerAddr`` (``brokerIP2:haListenPort``),
  ``compressed`` (``compressedRegister``) and ``bodyCrc32``; the body is a
  :class:`RegisterBrokerBody` with the topic table and its data version, every topic listed
  with the broker's ``brokerPermission`` while the broker is not both readable and writable.
  Each name server gets ``registerBrokerTimeoutMills``.  A failure is logged and the broker
  keeps running; the next round retries.
* The answer of the first name server that accepted (in ``namesrvAddr`` order) tells a
  slave its master (``masterAddr``, ``haServerAddr``, kept in
  :attr:`BrokerRegistration.master_addr` / :attr:`master_ha_server_addr` and handed to the
  ``on_master`` hook, which the controller points at ``BrokerContext.set_master``) and, when it
  carries the ``ORDER_TOPIC_CONFIG`` KV table, which topics are ordered
  (``TopicConfigManager.update_order_topic_config``).
* :meth:`BrokerRegistration.request` schedules a round and coalesces bursts: requests made
  while a round runs become one more round after it (a send that auto-creates twenty topics
  costs two registrations, not twenty).  Rounds never overlap.
* :meth:`BrokerRegistration.request_increment` registers one created or updated topic
  (UPDATE_AND_CREATE_TOPIC), as Apache's ``registerIncrementBrokerData``: REGISTER_BROKER
  whose topic table holds only that topic (with ``brokerPermission`` as its perm while the
  broker is not both readable and writable) and the table's current data version, sent to
  every name server without asking first.  The name servers add or update the topics a
  registration lists and keep the others, so the cost no longer grows with the table.
  Increments requested while a round runs are sent together in one registration after it;
  a pending full round covers them.  Without ``force`` a round
  first asks every name server (QUERY_DATA_VERSION) whether it holds the current data version
  and registers only if one does not, as Apache does when ``forceRegister=false``.
* :meth:`BrokerRegistration.run_periodically` starts a round 10 s after start and then every
  ``registerNameServerPeriod`` ms, clamped to 10-60 s as Apache does.
* :meth:`BrokerRegistration.unregister` sends UNREGISTER_BROKER to every name server (3 s
  each) at shutdown and closes the connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from rmq.common.config import BrokerConfig, MessageStoreConfig, NettyClientConfig
from rmq.remoting.bodies import (
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rmq.server.broker.topic.topicconfig import TopicConfigManager, restricted

log = logging.getLogger("rmq.broker")

T = TypeVar("T")

FIRST_PERIODIC_DELAY_S = 10.0
"""Seconds between the start and the first periodic registration (Apache's 10 s)."""
MIN_PERIOD_MS, MAX_PERIOD_MS = 10_000, 60_000
"""``registerNameServerPeriod`` is used clamped to this range."""
UNREGISTER_TIMEOUT_S = 3.0


class RegistrationError(Exception):
    """A name server answered a registration request with an error code."""


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """What one name server answered to REGISTER_BROKER."""

    master_addr: str | None
    ha_server_addr: str | None
    order_topics: KVTable | None


def register_period_seconds(register_name_server_period_ms: int) -> float:
    """The period of the registration rounds: the configured one clamped to 10-60 s."""
    return max(MIN_PERIOD_MS, min(register_name_server_period_ms, MAX_PERIOD_MS)) / 1000


def namesrv_addresses(namesrv_addr: str | None) -> list[str]:
    """The name servers of a ``namesrvAddr`` value (empty items ignored)."""
    return [addr.strip() for addr in (namesrv_addr or "").split(";") if addr.strip()]


def _check_success(response: RemotingCommand, addr: str) -> None:
    if response.code != ResponseCode.SUCCESS:
        raise RegistrationError(f"name server {addr} answered {response.code}: {response.remark}")


class BrokerRegistration:
    """The broker's registration with its name servers (see the module docstring)."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        client_config: NettyClientConfig,
        topic_config_manager: TopicConfigManager,
        broker_addr: str,
        on_master: Callable[[str | None, str | None], None] | None = None,
    ) -> None:
        self.broker_config = broker_config
        self.on_master = on_master
        self.store_config = store_config
        self.topic_config_manager = topic_config_manager
        self.broker_addr = broker_addr
        self.master_addr: str | None = None
        self.master_ha_server_addr: str | None = None
        self.client = RemotingClient(connect_timeout=client_config.connect_timeout_millis / 1000)
        self._pending = False
        self._pending_force = False
        self._pending_topics: dict[str, TopicConfig] = {}
        self._round: asyncio.Task[None] | None = None

    @property
    def ha_server_addr(self) -> str:
        return f"{self.broker_config.broker_ip2}:{self.store_config.ha_listen_port}"

    # -- scheduling ----------------------------------------------------------------------

    def request(self, force: bool = False) -> None:
        """Schedule a registration round; bursts of requests share rounds."""
        self._pending = True
        self._pending_force = self._pending_force or force
        self._start_round()

    def request_increment(self, config: TopicConfig) -> None:
        """Schedule the registration of ``config`` alone (see the module docstring)."""
        self._pending_topics[config.topic_name] = config
        self._start_round()

    def _start_round(self) -> None:
        if self._round is None or self._round.done():
            self._round = asyncio.get_running_loop().create_task(self._drain())

    async def wait_idle(self) -> None:
        """Wait until the scheduled rounds have run."""
        while self._round is not None and not self._round.done():
            await asyncio.shield(self._round)

    async def _drain(self) -> None:
        while self._pending or self._pending_topics:
            force = self._pending_force
            topics = self._pending_topics
            self._pending_topics = {}
            try:
                if self._pending:
                    self._pending = self._pending_force = False
                    await self.register_all(force=force)
                else:
                    await self.register_all(topics=list(topics.values()))
            except Exception:
                log.exception("registration with the name servers failed")

    async def run_periodically(self) -> None:
        """Register 10 s after start, then every ``registerNameServerPeriod`` (clamped)."""
        await asyncio.sleep(FIRST_PERIODIC_DELAY_S)
        while True:
            self.request(force=self.broker_config.force_register)
            await asyncio.sleep(
                register_period_seconds(self.broker_config.register_name_server_period)
            )

    # -- one round -----------------------------------------------------------------------

    def registration(
        self, topics: list[TopicConfig] | None = None
    ) -> tuple[RegisterBrokerRequestHeader, bytes]:
        """The REGISTER_BROKER header and body of the broker's current topic table, or of
        ``topics`` alone with the table's data version."""
        config = self.broker_config
        manager = self.topic_config_manager
        if topics is None:
            wrapper = manager.topic_config_wrapper(broker_permission=config.broker_permission)
        else:
            wrapper = TopicConfigSerializeWrapper(
                topic_config_table={
                    topic.topic_name: restricted(topic, config.broker_permission)
                    for topic in topics
                },
                data_version=manager.data_version,
            )
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])
        data = body.encode(compressed=config.compressed_register)
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=config.broker_cluster_name,
            ha_server_addr=self.ha_server_addr,
            broker_id=config.broker_id,
            compressed=config.compressed_register,
            body_crc32=body_crc32(data),
        )
        return header, data

    async def register_all(
        self, *, force: bool = True, topics: list[TopicConfig] | None = None
    ) -> list[RegisterBrokerResult]:
        """Register with every name server now; the answers of those that accepted.

        Without ``force``, only when a name server does not hold the current data version.
        With ``topics``, only those topics are sent (an increment; always sent).
        """
        addresses = namesrv_addresses(self.broker_config.namesrv_addr)
        if not addresses:
            return []
        if topics is None and not force and not await self.need_register(addresses):
            return []
        header, body = self.registration(topics)
        timeout = self.broker_config.register_broker_timeout_mills / 1000

        async def register(addr: str) -> RegisterBrokerResult:
            request = create_request(RequestCode.REGISTER_BROKER, header, body=body)
            response = await self.client.invoke(addr, request, timeout)
            _check_success(response, addr)
            result = _result_of(response)
            log.info("register broker[%d] to name server %s OK", self.broker_config.broker_id, addr)
            return result

        results = await self._each(addresses, register, "register broker to name server")
        if results:
            self._apply(results[0])
        return results

    def _apply(self, result: RegisterBrokerResult) -> None:
        if result.master_addr != self.master_addr:
            log.info("the master of this broker is %s", result.master_addr)
        self.master_addr = result.master_addr
        self.master_ha_server_addr = result.ha_server_addr
        if self.on_master is not None:
            self.on_master(result.master_addr, result.ha_server_addr)
        if result.order_topics is not None:
            self.topic_config_manager.update_order_topic_config(result.order_topics.table)

    async def need_register(self, addresses: list[str]) -> bool:
        """Whether a name server lacks the current topic data version (QUERY_DATA_VERSION);
        a name server that cannot be asked counts as lacking it."""
        config = self.broker_config
        version = self.topic_config_manager.data_version
        timeout = config.register_broker_timeout_mills / 1000
        header = QueryDataVersionRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id,
        )

        async def changed(addr: str) -> bool:
            request = create_request(RequestCode.QUERY_DATA_VERSION, header, body=version.encode())
            response = await self.client.invoke(addr, request, timeout)
            if response.code != ResponseCode.SUCCESS:
                return False
            answer = response.read_header(QueryDataVersionResponseHeader)
            if response.body:
                return answer.changed or DataVersion.decode(response.body) != version
            return answer.changed

        answers = await asyncio.gather(*map(changed, addresses), return_exceptions=True)
        for addr, answer in zip(addresses, answers, strict=True):
            if isinstance(answer, BaseException):
                log.warning("query data version from name server %s failed: %s", addr, answer)
        return any(answer is not False for answer in answers)

    async def unregister(self) -> None:
        """Stop scheduled rounds, UNREGISTER_BROKER with every name server, then close the
        connections."""
        await self._stop_rounds()
        config = self.broker_config
        header = UnRegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id,
        )

        async def unregister(addr: str) -> None:
            request = create_request(RequestCode.UNREGISTER_BROKER, header)
            response = await self.client.invoke(addr, request, UNREGISTER_TIMEOUT_S)
            _check_success(response, addr)
            log.info("unregister broker OK, name server %s", addr)

        await self._each(
            namesrv_addresses(config.namesrv_addr), unregister, "unregister broker from"
        )
        await self.close()

    async def close(self) -> None:
        """Stop scheduled rounds and close the name server connections."""
        await self._stop_rounds()
        await self.client.close()

    async def _stop_rounds(self) -> None:
        self._pending = False
        self._pending_topics = {}
        if self._round is not None:
            self._round.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._round
            self._round = None

    @staticmethod
    async def _each(
        addresses: list[str], call: Callable[[str], Awaitable[T]], what: str
    ) -> list[T]:
        """Run ``call`` for every address concurrently; log failures, return the successes
        in address order."""
        outcomes = await asyncio.gather(*map(call, addresses), return_exceptions=True)
        results: list[T] = []
        for addr, outcome in zip(addresses, outcomes, strict=True):
            if isinstance(outcome, asyncio.CancelledError):
                raise outcome
            if isinstance(outcome, (RemotingError, RegistrationError, OSError)):
                log.warning("%s %s failed: %s", what, addr, outcome)
            elif isinstance(outcome, BaseException):
                log.error("%s %s failed", what, addr, exc_info=outcome)
            else:
                results.append(outcome)
        return results


def _result_of(response: RemotingCommand) -> RegisterBrokerResult:
    header = response.read_header(RegisterBrokerResponseHeader)
    order_topics = KVTable.decode(response.body) if response.body else None
    return RegisterBrokerResult(header.master_addr, header.ha_server_addr, order_topics)
