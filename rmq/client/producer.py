"""The producer: sends messages to a topic's queues, as RocketMQ's `DefaultMQProducer` does.

    async with Producer("my-group", "127.0.0.1:9876") as producer:
        result = await producer.send(Message("TopicA", b"hello", tags="TagA"))
        await producer.send(Message("Orders", body), sharding_key=order_id)
        await producer.send_batch([Message("TopicA", b"1"), Message("TopicA", b"2")])

`send` is a coroutine; any number may be in flight at once, and all of them share the
instance's one connection per broker.  The ways to send:

* `send`: waits for the broker; on a connection failure, a timeout, or one of the response
  codes RocketMQ retries on (TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR,
  NO_PERMISSION, NO_BUYER_ID, NOT_IN_CURRENT_UNIT) it tries again, up to
  `retry_times_when_send_failed` (2) more times, on a queue of another broker when there is
  one.  All attempts share one deadline, `send_timeout` (3 s).  When every attempt failed it
  raises `MQClientError` naming the attempts and the brokers, with the last failure as
  `__cause__`; other broker answers raise their `MQBrokerError` at once.
* `send_async`: the same as a task, with optional callbacks; like Java's async send it
  retries (`retry_times_when_send_async_failed`) only failures of the connection.
* `send_oneway`: writes the request and returns; nothing is known about its fate.
* ordered sends: `sharding_key=` picks the queue by the key's Java hash modulo the queue
  count (Java's `SelectMessageQueueByHash`), or `selector=` picks it with any function of
  the queue list and the message; `Message.queue_id` pins a queue id.  Such sends go to the
  chosen queue once, without retries, since another queue would break the order.
* `request`: sends a message as a request and waits for its reply
  (`rmq.client.requestreply`); `request_async` does it in a task.
* `send_batch`: a list of messages of one topic in one SEND_BATCH_MESSAGE request; each
  keeps its own properties and unique id, and the broker stores them with consecutive queue
  offsets.

Queue choice is round-robin over the topic's write queues (`TopicPublishInfo`).  A broker
whose send failed is avoided for `fault_isolation` seconds (30) while another broker has
queues, and a retry never picks the broker that just failed when another exists.  Every send
gets a fresh UNIQ_KEY (the result's `msg_id`); a body of 4 KiB or more
(`compress_body_over`) is sent zlib-compressed with sysFlag COMPRESSED | ZLIB.

A send is prepared once for all its attempts (`_Outgoing`: body, properties, unique id), and
the header fields every send to one topic shares are encoded once per topic
(`api.SendRequestTemplate`): an attempt only adds the queue and the birth time.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from rmq.client import api, requestreply
from rmq.client.api import SendResult, SendStatus
from rmq.client.callbacks import ExceptionCallback, run_callbacks
from rmq.client.errors import ClientErrorCode, MQBrokerError, MQClientError
from rmq.client.instance import DEFAULT_TOPIC_QUEUE_NUMS, ClientInstance, TopicPublishInfo
from rmq.client.member import ClientMember
from rmq.client.message import (
    DEFAULT_MAX_MESSAGE_SIZE,
    Message,
    half_properties_text,
    unique_ids,
    wait_property_text,
)
from rmq.client.messageext import MessageExt
from rmq.client.requestreply import is_reply
from rmq.client.tracehooks import SendTraceHook
from rmq.common.compression import (
    DEFAULT_COMPRESS_BODY_OVER,
    DEFAULT_COMPRESS_LEVEL,
    CompressionType,
    compress,
)
from rmq.common.javahash import java_hash
from rmq.common.message import encode_batch
from rmq.common.naming import AUTO_CREATE_TOPIC_KEY_TOPIC, DEFAULT_PRODUCER_GROUP, is_retry_topic
from rmq.common.sysflag import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE
from rmq.common.timeutil import now_millis
from rmq.remoting.bodies import MessageQueue
from rmq.remoting.codes import ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError

__all__ = [
    "Message",
    "Producer",
    "QueueSelector",
    "SendResult",
    "SendStatus",
    "select_by_hash",
]

log = logging.getLogger("rmq.client")

DEFAULT_SEND_TIMEOUT = 3.0  # DefaultMQProducer.sendMsgTimeout
DEFAULT_FAULT_ISOLATION = 30.0

RETRY_RESPONSE_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)
"""Broker answers after which a sync send tries again (DefaultMQProducer.retryResponseCodes;
SYSTEM_BUSY as in RocketMQ 5, where 4.9 gives up at once)."""
BUSY_BACKOFF = 0.1
"""Seconds a send waits before its next attempt after SYSTEM_BUSY (doubled each time)."""

_COMPRESSED_ZLIB = COMPRESSED_FLAG | CompressionType.ZLIB.sys_flag_bits

QueueSelector = Callable[[Sequence[MessageQueue], Message], MessageQueue]
"""Picks the queue of an ordered send from the topic's write queues."""

SuccessCallback = Callable[[SendResult], None]


def select_by_hash(queues: Sequence[MessageQueue], key: str) -> MessageQueue:
    """The queue of a sharding key: Java's `key.hashCode() % size`, made non-negative."""
    return queues[abs(java_hash(key)) % len(queues)]


class _Outgoing(NamedTuple):
    """One send, encoded once and shared by its attempts."""

    template: api.SendRequestTemplate
    topic: str
    body: bytes
    sys_flag: int
    flag: int
    properties: str
    batch: bool
    msg_id: str


class _BrokerFaults:
    """Broker names to avoid, each until a deadline after its last failed send."""

    __slots__ = ("_isolation", "_until")

    def __init__(self, isolation: float) -> None:
        self._isolation = isolation
        self._until: dict[str, float] = {}

    def failed(self, broker_name: str) -> None:
        if self._isolation > 0:
            self._until[broker_name] = time.monotonic() + self._isolation

    def succeeded(self, broker_name: str) -> None:
        if self._until:
            self._until.pop(broker_name, None)

    def unavailable(self) -> frozenset[str]:
        if not self._until:
            return frozenset()
        now = time.monotonic()
        for broker_name in [name for name, until in self._until.items() if until <= now]:
            del self._until[broker_name]
        return frozenset(self._until)


class Producer(ClientMember):
    """Sends messages for producer group `group` (see the module docstring).

    `namesrv_addrs` ("host:port;host:port") makes the producer create, start and shut down
    its own `ClientInstance`; an `instance` given instead is shared and left running.
    """

    role = "producer"
    reserved_group = DEFAULT_PRODUCER_GROUP

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | None = None,
        *,
        instance: ClientInstance | None = None,
        instance_name: str | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_body_over: int = DEFAULT_COMPRESS_BODY_OVER,
        compress_level: int = DEFAULT_COMPRESS_LEVEL,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        fault_isolation: float = DEFAULT_FAULT_ISOLATION,
    ) -> None:
        super().__init__(group, namesrv_addrs, instance, instance_name)
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_times_when_send_async_failed = retry_times_when_send_async_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_body_over = compress_body_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self._faults = _BrokerFaults(fault_isolation)
        self._templates: dict[tuple[str, str, int, bool], api.SendRequestTemplate] = {}
        self._ids = unique_ids()
        self._async_sends: set[asyncio.Task[SendResult]] = set()
        self.send_trace: SendTraceHook | None = None  # rmq.client.trace: Pub records

    # --- lifecycle ----------------------------------------------------------------------------

    async def _join(self) -> None:
        self.instance.register_producer(self.group)
        await self.instance.send_heartbeat_to_all_brokers()

    async def _leave(self) -> None:
        """Wait for the async sends still in flight, then unregister the group."""
        await asyncio.gather(*self._async_sends, return_exceptions=True)
        await self.instance.unregister_producer(self.group)

    # --- sending ------------------------------------------------------------------------------

    async def send(
        self,
        msg: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send `msg` and wait until the broker stored it (see the module docstring)."""
        return await self._send(
            msg, sharding_key, selector, timeout, self.retry_times_when_send_failed, True
        )

    def send_async(
        self,
        msg: Message,
        on_success: SuccessCallback | None = None,
        on_exception: ExceptionCallback | None = None,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        timeout: float | None = None,
    ) -> asyncio.Task[SendResult]:
        """Start sending `msg` in a task and return it; `on_success(result)` or
        `on_exception(error)` runs when it ends.  `shutdown` waits for these tasks."""
        task = asyncio.get_running_loop().create_task(
            self._send(
                msg,
                sharding_key,
                selector,
                timeout,
                self.retry_times_when_send_async_failed,
                False,
            )
        )
        self._async_sends.add(task)
        task.add_done_callback(functools.partial(self._async_done, on_success, on_exception))
        return task

    async def _send(
        self,
        msg: Message,
        sharding_key: str | None,
        selector: QueueSelector | None,
        timeout: float | None,
        retries: int,
        retry_broker_errors: bool,
        *,
        half: bool = False,
    ) -> SendResult:
        """Send `msg` as the public sends do; `half` makes it a transaction's half message
        (the transactional producer's send)."""
        deadline = self._deadline(timeout)
        outgoing = self._prepare(msg, half=half)
        info = self.instance.cached_publish_info(msg.topic) or await self._publish_info(msg.topic)
        chooser = self._chooser(msg, sharding_key, selector)
        if chooser is not None:
            queue = chooser(info.message_queues, msg)
            return await self._send_to(outgoing, queue, deadline - _now())
        return await self._send_with_retries(
            outgoing, info, 1 + retries, deadline, retry_broker_errors=retry_broker_errors
        )

    def _async_done(
        self,
        on_success: SuccessCallback | None,
        on_exception: ExceptionCallback | None,
        task: asyncio.Task[SendResult],
    ) -> None:
        self._async_sends.discard(task)
        run_callbacks(on_success, on_exception, task, f"a send callback of producer {self.group}")

    async def send_oneway(
        self,
        msg: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
    ) -> None:
        """Write `msg` to a broker without waiting for any answer."""
        outgoing = self._prepare(msg)
        info = self.instance.cached_publish_info(msg.topic) or await self._publish_info(msg.topic)
        chooser = self._chooser(msg, sharding_key, selector)
        queue = chooser(info.message_queues, msg) if chooser is not None else self._select(info)
        addr = await self.instance.broker_address(queue)
        await api.send_message_oneway(self.instance.remoting, addr, _request(outgoing, queue))

    async def send_batch(
        self, msgs: Sequence[Message], *, timeout: float | None = None
    ) -> SendResult:
        """Send `msgs` (one topic, no delay level) as one batch; `msg_id` of the result is
        their UNIQ_KEYs and `offset_msg_id` their offset ids, comma-joined."""
        deadline = self._deadline(timeout)
        outgoing = self._prepare_batch(msgs)
        info = self.instance.cached_publish_info(outgoing.topic) or await self._publish_info(
            outgoing.topic
        )
        return await self._send_with_retries(
            outgoing,
            info,
            1 + self.retry_times_when_send_failed,
            deadline,
            retry_broker_errors=True,
        )

    # --- request-reply ------------------------------------------------------------------------

    async def request(self, msg: Message, timeout: float) -> MessageExt:
        """Send `msg` as a request and wait up to `timeout` seconds for its reply
        (`rmq.client.requestreply`); raises `RequestTimeoutError` when none comes."""
        return await requestreply.request(self, msg, timeout)

    def request_async(
        self,
        msg: Message,
        timeout: float,
        on_success: Callable[[MessageExt], None] | None = None,
        on_exception: ExceptionCallback | None = None,
    ) -> asyncio.Task[MessageExt]:
        """`request` in a task; `on_success(reply)` or `on_exception(error)` runs when it
        ends."""
        return requestreply.request_async(self, msg, timeout, on_success, on_exception)

    # --- building requests --------------------------------------------------------------------

    def _check_running(self) -> None:
        if not self._running:
            raise MQClientError(
                -1, f"The producer {self.group} is not running: start it before sending"
            )

    def _deadline(self, timeout: float | None) -> float:
        return _now() + (self.send_timeout if timeout is None else timeout)

    def _prepare(self, msg: Message, *, half: bool = False) -> _Outgoing:
        """Encode one send; a `half` message carries TRAN_MSG=true and the group in PGROUP
        and is flagged TRANSACTION_PREPARED_TYPE, as Java's transactional send does."""
        self._check_running()
        msg.validate(self.max_message_size)
        body = msg.body
        sys_flag = 0
        if len(body) >= self.compress_body_over:
            body = compress(body, CompressionType.ZLIB, self.compress_level)
            sys_flag = _COMPRESSED_ZLIB
        msg_id = self._ids.next_id()
        properties = msg.properties_text(msg_id)
        if half:
            sys_flag |= TRANSACTION_PREPARED_TYPE
            properties += half_properties_text(self.group)
        return _Outgoing(
            self._template(msg.topic, reply=is_reply(msg)),
            msg.topic,
            body,
            sys_flag,
            msg.flag,
            properties,
            False,
            msg_id,
        )

    def _prepare_batch(self, msgs: Sequence[Message]) -> _Outgoing:
        self._check_running()
        if not msgs:
            raise MQClientError(ResponseCode.MESSAGE_ILLEGAL, "the batch has no message")
        first = msgs[0]
        for msg in msgs:
            if msg.delay_level > 0:
                raise MQClientError(-1, "TimeDelayLevel is not supported for batching")
            if is_retry_topic(msg.topic):
                raise MQClientError(-1, "Retry Group is not supported for batching")
            if msg.topic != first.topic:
                raise MQClientError(-1, "The topic of the messages in one batch should be the same")
            if msg.wait_store_msg_ok != first.wait_store_msg_ok:
                raise MQClientError(
                    -1, "The waitStoreMsgOK of the messages in one batch should the same"
                )
            msg.validate(self.max_message_size)
        ids = [self._ids.next_id() for _ in msgs]
        body = encode_batch(
            (msg.flag, msg.body, msg.properties_text(msg_id).encode())
            for msg, msg_id in zip(msgs, ids, strict=True)
        )
        if len(body) > self.max_message_size:
            raise MQClientError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message body size over max value, MAX: {self.max_message_size} "
                f"(a batch of {len(msgs)} messages encodes to {len(body)} bytes)",
            )
        return _Outgoing(
            self._template(first.topic),
            first.topic,
            body,
            0,
            0,
            wait_property_text(first.wait_store_msg_ok),
            True,
            ",".join(ids),
        )

    def _template(self, topic: str, *, reply: bool = False) -> api.SendRequestTemplate:
        """The request template of this producer's sends to `topic` (of its replies, sent
        with SEND_REPLY_MESSAGE_V2, with `reply`)."""
        key = (topic, self.create_topic_key, self.default_topic_queue_nums, reply)
        template = self._templates.get(key)
        if template is None:
            template = api.SendRequestTemplate(self.group, *key)
            self._templates[key] = template
        return template

    # --- routing ------------------------------------------------------------------------------

    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        """Fetch the publish info of a topic the instance has none cached for."""
        try:
            return await self.instance.publish_info(
                topic,
                default_topic=self.create_topic_key,
                default_topic_queue_nums=self.default_topic_queue_nums,
            )
        except RemotingError as exc:
            raise MQClientError(
                ClientErrorCode.NO_NAME_SERVER_EXCEPTION,
                f"cannot get the route of topic {topic} from the name servers "
                f"{';'.join(self.instance.namesrv_addrs)}: {exc}",
            ) from exc

    def _chooser(
        self, msg: Message, sharding_key: str | None, selector: QueueSelector | None
    ) -> QueueSelector | None:
        """How an ordered send picks its queue; None for round-robin sends."""
        if selector is not None:
            return selector
        if sharding_key is not None:
            return lambda queues, _: select_by_hash(queues, sharding_key)
        if msg.queue_id is not None:
            return self._pinned_queue
        return None

    def _pinned_queue(self, queues: Sequence[MessageQueue], msg: Message) -> MessageQueue:
        """The queue with `msg.queue_id`, on a broker not being avoided if there is one."""
        candidates = [queue for queue in queues if queue.queue_id == msg.queue_id]
        if not candidates:
            raise MQClientError(
                -1, f"topic {msg.topic} has no write queue {msg.queue_id} on any broker"
            )
        avoid = self._faults.unavailable()
        return next((q for q in candidates if q.broker_name not in avoid), candidates[0])

    def _select(self, info: TopicPublishInfo, last_broker: str | None = None) -> MessageQueue:
        """Round-robin, away from brokers that failed lately and from `last_broker`."""
        avoid = self._faults.unavailable()
        if last_broker is not None:
            avoid |= {last_broker}
        queue = info.select_queue(avoid)
        if queue.broker_name in avoid and last_broker is not None and len(avoid) > 1:
            queue = info.select_queue((last_broker,))
        return queue

    # --- attempts -----------------------------------------------------------------------------

    async def _send_to(
        self, outgoing: _Outgoing, queue: MessageQueue, timeout: float
    ) -> SendResult:
        """One attempt on `queue`; the broker's health is recorded either way."""
        if timeout <= 0:
            raise MQClientError(
                ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION,
                f"send to topic {outgoing.topic} timed out before an attempt could start",
            )
        try:
            addr = await self.instance.broker_address(queue)
            trace = self.send_trace
            traced = None
            if trace is not None:
                traced = trace.before(outgoing.topic, outgoing.properties, len(outgoing.body), addr)
            result = await api.send_message(
                self.instance.remoting,
                addr,
                queue,
                _request(outgoing, queue),
                timeout,
                msg_id=outgoing.msg_id,
            )
        except (RemotingError, MQClientError, MQBrokerError):
            self._faults.failed(queue.broker_name)
            raise
        self._faults.succeeded(queue.broker_name)
        if trace is not None and traced is not None:
            trace.after(traced, result)
        return result

    async def _send_with_retries(
        self,
        outgoing: _Outgoing,
        info: TopicPublishInfo,
        attempts: int,
        deadline: float,
        *,
        retry_broker_errors: bool,
    ) -> SendResult:
        started = _now()
        brokers_sent: list[str] = []
        failure: Exception | None = None
        result: SendResult | None = None
        for _ in range(attempts):
            queue = self._select(info, brokers_sent[-1] if brokers_sent else None)
            brokers_sent.append(queue.broker_name)
            remaining = deadline - _now()
            if remaining <= 0:
                raise _send_failed(outgoing, brokers_sent[:-1], started, failure, timed_out=True)
            try:
                result = await self._send_to(outgoing, queue, remaining)
            except MQBrokerError as exc:
                if not retry_broker_errors or exc.code not in RETRY_RESPONSE_CODES:
                    raise
                failure = exc
                if exc.code == ResponseCode.SYSTEM_BUSY:
                    backoff = BUSY_BACKOFF * 2 ** (len(brokers_sent) - 1)
                    await asyncio.sleep(max(0.0, min(backoff, deadline - _now())))
            except (RemotingError, MQClientError) as exc:
                failure = exc
            else:
                if result.status is SendStatus.SEND_OK or not (
                    self.retry_another_broker_when_not_store_ok
                ):
                    return result
                continue
            log.warning(
                "send to %s of topic %s failed (%s), %s",
                queue,
                outgoing.topic,
                failure,
                "retrying" if len(brokers_sent) < attempts else "giving up",
            )
        if result is not None:
            return result
        raise _send_failed(outgoing, brokers_sent, started, failure)


def _now() -> float:
    return time.monotonic()


def _request(outgoing: _Outgoing, queue: MessageQueue) -> RemotingCommand:
    """The request of one attempt of `outgoing` on `queue`, born now."""
    return outgoing.template.request(
        queue,
        outgoing.sys_flag,
        now_millis(),
        outgoing.flag,
        outgoing.properties,
        outgoing.body,
        batch=outgoing.batch,
    )


def _send_failed(
    outgoing: _Outgoing,
    brokers_sent: list[str],
    started: float,
    failure: Exception | None,
    *,
    timed_out: bool = False,
) -> MQClientError:
    """The error of a send that failed on every attempt (or ran out of time before the
    next one), coded as Java codes it; the last failure becomes its cause."""
    code: int = -1
    if timed_out:
        code = ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION
    elif isinstance(failure, MQBrokerError | MQClientError):
        code = failure.code
    elif isinstance(failure, RemotingConnectError):
        code = ClientErrorCode.CONNECT_BROKER_EXCEPTION
    elif isinstance(failure, RemotingTimeoutError):
        code = ClientErrorCode.ACCESS_BROKER_TIMEOUT
    outcome = "ran out of its timeout" if timed_out else "still failed"
    error = MQClientError(
        code,
        f"Send [{len(brokers_sent)}] times, {outcome}, cost [{(_now() - started) * 1000:.0f}]ms, "
        f"Topic: {outgoing.topic}, BrokersSent: [{', '.join(brokers_sent)}]; "
        f"last error: {failure}",
    )
    error.__cause__ = failure
    return error
