"""The name server's request handlers: request code -> route table / KV config / settings.

One async handler per request code the Apache name server serves (its
`DefaultRequestProcessor`), registered on the remoting server by `NamesrvProcessor.register`.
A handler decodes the custom header (a bad one becomes SYSTEM_ERROR in the remoting layer),
calls `RouteInfoManager` or `KVConfigManager` and builds the response.  Codes the name server
does not serve get REQUEST_CODE_NOT_SUPPORTED from the remoting layer; Apache's name server
sends nothing at all for them and its clients time out, which helps nobody.

Bodies are the shared protocol bodies of `rmq.remoting.bodies`, written as fastjson writes
them (spec §2.6): bean properties in alphabetical order, integer map keys bare
(`"brokerAddrs":{0:"..."}`), null properties left out.  The one exception is the route answer
to a request of version >= 4.9.4 or with `acceptStandardJsonOnly=true`: standard JSON (quoted
and sorted keys, non-ASCII escaped), as Apache 4.9.4+ sends it (spec §2.8).

REGISTER_BROKER bodies come in three forms (spec §2.5), told apart and decoded by
`RegisterBrokerBody.open_request` (as `decode_request` does, in stages): a bare
TopicConfigSerializeWrapper from brokers older than 3.0.11 (version < 37), a
RegisterBrokerBody in JSON, or the zlib-compressed binary form (`compressed=true`).  A
non-zero `bodyCrc32` header is checked against the body first.  A body that cannot be
decoded (including a topic config without `topicName`, which Java would
register under a null topic name) is answered with SYSTEM_ERROR and the broker stays as it
was.

A registration is read in stages.  A JSON body in the exact layout fastjson writes (what
Java and rmq brokers send) gives its DataVersion and filter servers from its first bytes
(`RegisterBrokerBody.peek_request`); when the route table will not use its topics
(`RouteInfoManager.needs_topics`: they are used for a master that is new or whose DataVersion
changed), nothing more of it is read.  Otherwise `RegisterBrokerBody.open_request` reads
everything but the topic table's entries (the JSON parsed in one go, a compressed body
inflated and split), and, when the topics are used, the entries follow `TOPIC_SLICE` at a
time with the event loop free between slices.  Registrations of one broker address that read
their topics may be read side by side but are applied in the order they arrived, so an
older table never overwrites a newer one.  The periodic re-registration of a broker whose
topics did not change therefore costs a few microseconds whatever its size (a compressed or
unusually laid out body: one JSON parse or inflate, and no per-topic Python work), and a
large changed table does not hold up the requests that arrive while it is read.  Apache
decodes the whole body before it compares DataVersions, so one difference shows: a body
broken after its DataVersion (a topic without `topicName`, JSON cut short after the head,
a compressed topic text with a bad number) is refused by Apache every time, and here only
when its topics are read; with an unchanged DataVersion it is accepted as the heartbeat it
is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from rmq.common import fastjson, javaprops
from rmq.common.config import (
    ConfigBlackListError,
    ConfigError,
    NamesrvConfigs,
    namesrv_settings,
)
from rmq.common.faq import APPLY_TOPIC_URL, suggest_todo
from rmq.remoting.bodies import (
    BodyError,
    DataVersion,
    KVTable,
    OpenedRegisterBody,
    RegisterBrokerBody,
    TopicConfig,
    TopicList,
    body_crc32,
)
from rmq.remoting.codes import MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rmq.remoting.server import RemotingServer
from rmq.server.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from rmq.server.namesrv.routeinfo import RegisterBrokerResult, RouteInfoManager
from rmq.store.configfile import persist_config_text

log = logging.getLogger("rmq.namesrv")

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]

TOPIC_SLICE = 500
"""Topic entries of a REGISTER_BROKER body decoded between two turns of the event loop
(about 2 ms of work)."""


def _success(header: object | None = None, body: bytes | None = None) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, None, header, body=body)


def _topic_list_handler(listing: Callable[[], TopicList]) -> Handler:
    """The handler of a topic list request without a header."""

    async def handler(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return _success(body=listing().encode())

    return handler


def _undecodable(connection: Connection, exc: BodyError) -> RemotingCommand:
    remark = f"Failed to decode RegisterBrokerBody: {exc}"
    log.warning("registerBroker from %s: %s", connection, remark)
    return create_response(ResponseCode.SYSTEM_ERROR, remark)


async def read_topics(opened: OpenedRegisterBody) -> list[TopicConfig]:
    """Decode the topic entries of a register body, yielding to the event loop between
    slices of `TOPIC_SLICE`."""
    topics: list[TopicConfig] = []
    for index, entries in enumerate(opened.topic_slices(TOPIC_SLICE)):
        if index:
            await asyncio.sleep(0)
        topics.extend(config for _, config in entries)
    return topics


# -- the processor -------------------------------------------------------------------------


class NamesrvProcessor:
    """Serves the name server's request codes from its route table, KV config and settings.

    `file_properties` are the `-c` file: Apache keeps its keys that no config object knows in
    its config view, so GET_NAMESRV_CONFIG shows them.  UPDATE_NAMESRV_CONFIG goes through
    `rmq.common.configupdate.LiveSettings`: black-listed keys get NO_PERMISSION as in Apache;
    unlike Apache, unknown keys and values a key does not allow get SYSTEM_ERROR with a remark
    naming the key, and change nothing; the success answer's remark has one line per key that
    does not take effect at once.
    """

    def __init__(
        self,
        routes: RouteInfoManager,
        kv: KVConfigManager,
        configs: NamesrvConfigs,
        file_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.routes = routes
        self.kv = kv
        self.configs = configs
        self.settings = namesrv_settings(configs, file_properties or {})
        # Broker address -> the turn of its latest registration that reads its topics.
        self._reading_topics: dict[str, asyncio.Future[None]] = {}

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: _topic_list_handler(
                self.routes.get_all_topic_list
            ),
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: _topic_list_handler(
                self.routes.get_system_topic_list
            ),
            RequestCode.GET_UNIT_TOPIC_LIST: _topic_list_handler(self.routes.get_unit_topic_list),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: _topic_list_handler(
                self.routes.get_has_unit_sub_topic_list
            ),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: _topic_list_handler(
                self.routes.get_has_unit_sub_ununit_topic_list
            ),
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }

    def register(self, server: RemotingServer) -> None:
        for code, handler in self.handlers().items():
            server.register(code, handler)

    # -- KV config -----------------------------------------------------------------------

    async def put_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(PutKVConfigRequestHeader)
        self.kv.put(header.namespace, header.key, header.value)
        return _success()

    async def get_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetKVConfigRequestHeader)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return create_response(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return _success(GetKVConfigResponseHeader(value=value))

    async def delete_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(DeleteKVConfigRequestHeader)
        self.kv.delete(header.namespace, header.key)
        return _success()

    async def get_kv_list_by_namespace(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetKVListByNamespaceRequestHeader)
        table = self.kv.get_namespace(header.namespace)
        if table is None:
            return create_response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return _success(body=KVTable(table=table).encode())

    # -- broker registration -------------------------------------------------------------

    async def register_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = request.read_header(RegisterBrokerRequestHeader)
        body = request.body
        if header.body_crc32 != 0 and body_crc32(body) != header.body_crc32:
            log.warning("registerBroker from %s: crc32 not match", connection)
            return create_response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        head = RegisterBrokerBody.peek_request(
            body, compressed=header.compressed, version=request.version
        )
        if head is not None and not self._needs_topics(header, head[0]):
            result = self._register(header, head[0], head[1], None, connection)
            return self._registered(result)
        try:
            opened = RegisterBrokerBody.open_request(
                body, compressed=header.compressed, version=request.version
            )
        except BodyError as exc:
            return _undecodable(connection, exc)
        version, filters = opened.data_version, opened.filter_server_list
        if not self._needs_topics(header, version):
            result = self._register(header, version, filters, None, connection)
        else:
            async with self._in_arrival_order(header.broker_addr) as previous:
                try:
                    topics = await read_topics(opened)
                except BodyError as exc:
                    return _undecodable(connection, exc)
                if previous is not None:
                    await asyncio.shield(previous)
                if connection.closed:
                    # It closed while the topics were read: registering now would bring
                    # back a broker that the close has just dropped.
                    return None
                result = self._register(header, version, filters, topics, connection)
        return self._registered(result)

    def _registered(self, result: RegisterBrokerResult) -> RemotingCommand:
        order_topic_config = self.kv.get_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _success(
            RegisterBrokerResponseHeader(
                ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
            ),
            KVTable(table=order_topic_config).encode() if order_topic_config is not None else None,
        )

    def _needs_topics(self, header: RegisterBrokerRequestHeader, version: DataVersion) -> bool:
        return self.routes.needs_topics(
            header.broker_addr, header.broker_name, header.broker_id, version
        )

    def _register(
        self,
        header: RegisterBrokerRequestHeader,
        data_version: DataVersion,
        filter_server_list: list[str] | None,
        topics: list[TopicConfig] | None,
        connection: Connection,
    ) -> RegisterBrokerResult:
        return self.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            data_version,
            topics,
            filter_server_list,
            connection,
        )

    @contextlib.asynccontextmanager
    async def _in_arrival_order(
        self, broker_addr: str
    ) -> AsyncIterator[asyncio.Future[None] | None]:
        """Registrations of one address that read their topics are applied in the order
        they arrived, although they are read side by side: each yields the turn of the one
        before it (None when there is none), which it awaits before it applies."""
        previous = self._reading_topics.get(broker_addr)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reading_topics[broker_addr] = turn
        try:
            yield previous
        finally:
            turn.set_result(None)
            if self._reading_topics.get(broker_addr) is turn:
                del self._reading_topics[broker_addr]

    async def unregister_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(UnRegisterBrokerRequestHeader)
        self.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        log.info(
            "broker %s (%s id %d) unregistered",
            header.broker_addr,
            header.broker_name,
            header.broker_id,
        )
        return _success()

    async def query_data_version(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryDataVersionRequestHeader)
        document = fastjson.loads(request.body) if request.body else None
        reported = DataVersion.from_json(document) if document is not None else None
        changed = reported is None or self.routes.is_broker_topic_config_changed(
            header.broker_addr, reported
        )
        if not changed:
            self.routes.touch_broker(header.broker_addr)
        known = self.routes.query_broker_data_version(header.broker_addr)
        return _success(
            QueryDataVersionResponseHeader(changed=changed),
            known.encode() if known is not None else None,
        )

    # -- routes and clusters -------------------------------------------------------------

    async def get_route_info_by_topic(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetRouteInfoRequestHeader)
        route = self.routes.pickup_topic_route_data(header.topic)
        if route is None:
            log.debug(
                "GET_ROUTEINFO_BY_TOPIC topic=%s from %s -> TOPIC_NOT_EXIST",
                header.topic,
                connection,
            )
            return create_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}"
                + suggest_todo(APPLY_TOPIC_URL),
            )
        if self.configs.namesrv.order_message_enable:
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        standard = request.version >= MQVersion.V4_9_4 or bool(header.accept_standard_json_only)
        return _success(body=route.encode(standard=standard))

    async def get_broker_cluster_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=self.routes.get_all_cluster_info().encode())

    async def wipe_write_perm_of_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(WipeWritePermOfBrokerRequestHeader)
        count = self.routes.wipe_write_perm_of_broker(header.broker_name)
        log.info(
            "wipe write perm of broker[%s], client: %s, %d", header.broker_name, connection, count
        )
        return _success(WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count))

    async def add_write_perm_of_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(AddWritePermOfBrokerRequestHeader)
        count = self.routes.add_write_perm_of_broker(header.broker_name)
        log.info(
            "add write perm of broker[%s], client: %s, %d", header.broker_name, connection, count
        )
        return _success(AddWritePermOfBrokerResponseHeader(add_topic_count=count))

    async def delete_topic_in_namesrv(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(DeleteTopicFromNamesrvRequestHeader)
        self.routes.delete_topic(header.topic, header.cluster_name or None)
        return _success()

    # -- topic lists ---------------------------------------------------------------------

    async def get_topics_by_cluster(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetTopicsByClusterRequestHeader)
        return _success(body=self.routes.get_topics_by_cluster(header.cluster).encode())

    # -- the name server's own settings --------------------------------------------------

    def config_properties(self) -> dict[str, str]:
        """Every setting as Java keys and text: the `-c` file's extra keys, then the configs,
        with the restart-only changes over them."""
        return self.settings.properties()

    async def get_namesrv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=javaprops.dumps(self.config_properties()).encode("utf-8"))

    async def update_namesrv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateConfig called by %s", connection)
        if not request.body:
            return _success()
        try:
            props = javaprops.loads(bytes(request.body).decode("utf-8"))
        except (UnicodeDecodeError, javaprops.PropertiesSyntaxError) as exc:
            return create_response(ResponseCode.SYSTEM_ERROR, f"string2Properties error: {exc}")
        try:
            notes = self.settings.update(props)
        except ConfigBlackListError as exc:
            log.warning("updateConfig from %s refused: %s", connection, exc)
            return create_response(
                ResponseCode.NO_PERMISSION, "Can not update config in black list."
            )
        except ConfigError as exc:
            log.warning("updateConfig from %s refused: %s", connection, exc)
            return create_response(ResponseCode.SYSTEM_ERROR, str(exc))
        for note in notes:
            log.info("updateConfig: %s", note)
        path = self.configs.namesrv.config_store_path
        try:
            persist_config_text(path, javaprops.dumps(self.config_properties()))
        except OSError as exc:
            log.error("updateConfig: cannot persist the config to %s: %s", path, exc)
            return create_response(
                ResponseCode.SYSTEM_ERROR,
                f"config updated in memory but not persisted to {path}: {exc.strerror}",
            )
        return create_response(ResponseCode.SUCCESS, "\n".join(notes) or None)
