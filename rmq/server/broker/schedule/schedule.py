"""Delayed messages: delivering what the store parked in ``SCHEDULE_TOPIC_XXXX`` when it is due.

A message with delay level L (a ``DELAY`` property, or a consumer's send-back) is stored by
the commitlog in ``SCHEDULE_TOPIC_XXXX`` queue ``L - 1`` with ``REAL_TOPIC`` / ``REAL_QID``
properties, and the tags-code slot of its consume-queue entry holds its delivery time (store
time + the level's delay).  :class:`ScheduleMessageService` (Apache's
``ScheduleMessageService``) moves each such message to its real topic and queue once that
time has come.

Design.

* Progress: per level, the next queue offset of the schedule queue still to deliver
  (``offset_table``).  Every entry below it has been delivered.  The table is written to
  ``config/delayOffset.json`` (``{"offsetTable":{1:0,2:5}}``, bare integer keys, fastjson
  pretty format) every ``flushDelayOffsetInterval`` ms and at stop, and read back at start,
  clamped to what the consume queue still holds.  A crash between two writes delivers the
  messages of that window again: delivery is at least once.
* One asyncio task delivers for every level.  All messages of a level wait the same delay,
  so a level's queue is in delivery-time order and only its head needs looking at: each round
  delivers the due entries of every level (at most :data:`DELIVER_BATCH` per level, then the
  loop yields) and sleeps until the earliest head is due, but never longer than
  :data:`MAX_WAIT_MS`, so messages that arrive meanwhile are seen promptly.  An idle broker
  costs one dictionary lookup per level per round.  A delivery time further ahead than the
  level's delay (the clock went back) counts as due now.
* Delivering a message: the parked record is read by its physical offset and put again with
  topic ``REAL_TOPIC``, queue ``REAL_QID``, the same body, flag, sysFlag, born time and host
  and reconsume times, and the tags code of its ``TAGS``.  Its property string is the parked
  one as it is: Apache removes ``DELAY`` only from the in-memory map after the string was
  built, so consumers still see ``DELAY``, ``REAL_TOPIC`` and ``REAL_QID`` (spec §5.2).  A
  put that fails is retried :data:`RETRY_DELAY_MS` later from the same entry.  A record that
  is gone, or that names no valid real queue, is skipped with an error in the log (Apache
  would retry the latter forever).

Everything runs on the broker's event loop, like every other write to the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from rmq.common import fastjson
from rmq.common.config import MessageStoreConfig
from rmq.common.delay import parse_delay_levels, schedule_queue_id
from rmq.common.javahash import tags_code
from rmq.common.message import MessageRecord
from rmq.common.msgconst import (
    PROPERTY_KEYS,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from rmq.common.msgid import parse_host
from rmq.common.naming import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from rmq.common.properties import encode_properties_bytes
from rmq.common.timeutil import now_millis
from rmq.store.configfile import load_config_file, persist_config
from rmq.store.consumequeue import PRE_BLANK_SIZE, iter_entries
from rmq.store.putmessage import InnerMessage
from rmq.store.store import MessageStore

log = logging.getLogger("rmq.broker")

MAX_WAIT_MS: Final = 100
"""Longest sleep between two rounds, so that new arrivals are looked at promptly."""
RETRY_DELAY_MS: Final = 100
"""Wait before retrying a delivery whose put failed."""
DELIVER_BATCH: Final = 64
"""Most messages one level delivers in one round before the loop yields."""
ERROR_BACKOFF_S: Final = 10.0
"""Pause after a round failed unexpectedly (Apache's DELAY_FOR_A_PERIOD)."""

_OFFSET_TABLE = "offsetTable"


def reput_message(
    record: MessageRecord,
    topic: str,
    queue_id: int,
    *,
    properties: Mapping[str, str] | None = None,
    sys_flag: int | None = None,
    prepared_transaction_offset: int = 0,
    delay_level: int = 0,
) -> InnerMessage:
    """A stored record written again to ``topic`` / ``queue_id`` (delayed delivery,
    transaction commit and check).

    Body, flag, born time and host and reconsume times are the record's; the property
    string, tags code, keys and unique key come from ``properties`` (default: the record's
    own), and the sysFlag is the record's unless given.
    """
    props = record.properties if properties is None else properties
    return InnerMessage(
        topic,
        queue_id,
        record.body or b"",
        encode_properties_bytes(props),
        tags_code(props.get(PROPERTY_TAGS)),
        props.get(PROPERTY_KEYS),
        props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        record.flag,
        record.sys_flag if sys_flag is None else sys_flag,
        record.born_timestamp,
        parse_host(record.born_host),
        record.reconsume_times,
        prepared_transaction_offset,
        delay_level,
    )


def real_queue(record: MessageRecord) -> tuple[str, int] | None:
    """``REAL_TOPIC`` and ``REAL_QID`` of a parked (delayed or half) message, or None when
    either is missing or the queue id is not a number."""
    topic = record.properties.get(PROPERTY_REAL_TOPIC)
    queue_id = record.properties.get(PROPERTY_REAL_QUEUE_ID, "")
    try:
        return (topic, int(queue_id)) if topic else None
    except ValueError:
        return None


def decode_delay_offsets(text: str) -> dict[int, int]:
    """The level -> offset table of a ``delayOffset.json`` text (raises ValueError)."""
    document = fastjson.loads(text)
    table: Any = document.get(_OFFSET_TABLE, {}) if isinstance(document, dict) else None
    if not isinstance(table, dict):
        raise ValueError(f'expected {{"{_OFFSET_TABLE}":{{level:offset}}}}')
    return {int(level): int(offset) for level, offset in table.items()}


class ScheduleMessageService:
    """Delivers the delayed messages of one store (see the module docstring).

    ``clock`` returns the current time in ms; it must agree with the store's clock, which
    wrote the delivery times.
    """

    def __init__(
        self,
        store: MessageStore,
        store_config: MessageStoreConfig,
        delay_offset_path: str | os.PathLike[str],
        *,
        clock: Callable[[], int] = now_millis,
        on_delivered: Callable[[int, str, int, int], None] | None = None,
    ) -> None:
        self.path = Path(delay_offset_path)
        self._store = store
        self._on_delivered = on_delivered
        """Told ``(level, topic, messages, bytes)`` of each delivery (the stats items)."""
        self._delays = parse_delay_levels(store_config.message_delay_level)
        self._persist_interval_s = store_config.flush_delay_offset_interval / 1000
        self._clock = clock
        self._start_empty_on_damage = store_config.start_with_empty_metadata_on_damage
        self._offsets: dict[int, int] = {}
        self._tasks: list[asyncio.Task[None]] = []

    # -- progress ------------------------------------------------------------------------

    def offset_table(self) -> dict[int, int]:
        """Level -> next schedule-queue offset to deliver (a copy, levels in order)."""
        return dict(sorted(self._offsets.items()))

    def encode(self) -> bytes:
        """The GET_ALL_DELAY_OFFSET body: ``{"offsetTable":{1:0,2:5}}`` (compact fastjson)."""
        return fastjson.dumps_bytes({_OFFSET_TABLE: self.offset_table()})

    def load(self) -> None:
        """Read ``delayOffset.json`` (or its ``.bak``) and clamp each level's offset to the
        range its schedule queue still holds.

        Raises :class:`~rmq.store.configfile.ConfigFileError` when the file is damaged and
        has no usable backup (unless ``startWithEmptyMetadataOnDamage``).
        """
        loaded = load_config_file(
            self.path, decode_delay_offsets, start_empty_on_damage=self._start_empty_on_damage
        )
        self._offsets = {} if loaded is None else loaded.value
        for level, offset in list(self._offsets.items()):
            queue = self._store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, schedule_queue_id(level))
            if queue is None:
                continue
            corrected = min(max(offset, queue.min_offset), queue.max_offset)
            if corrected != offset:
                log.error(
                    "delay offset of level %d is %d, outside its schedule queue [%d, %d]; "
                    "continuing from %d",
                    level,
                    offset,
                    queue.min_offset,
                    queue.max_offset,
                    corrected,
                )
                self._offsets[level] = corrected

    def persist(self) -> None:
        """Write ``delayOffset.json``; a failure is logged, not raised."""
        try:
            persist_config(self.path, {_OFFSET_TABLE: self.offset_table()})
        except OSError as exc:
            log.error("cannot persist delay offsets to %s: %s", self.path, exc)

    # -- delivery ------------------------------------------------------------------------

    def deliver_due(self) -> float:
        """Deliver every due message (up to :data:`DELIVER_BATCH` per level); returns the
        seconds to wait before the next round (0 when a level has more to deliver now)."""
        now = self._clock()
        wait_ms = MAX_WAIT_MS
        for level in range(1, len(self._delays) + 1):
            next_look = self._deliver_level(level, now)
            if next_look is not None:
                wait_ms = min(wait_ms, max(next_look - now, 0))
        return wait_ms / 1000

    def _deliver_level(self, level: int, now: int) -> int | None:
        """Deliver the due head of one level; returns when to look at it again (ms), None
        when its queue is drained."""
        queue = self._store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, schedule_queue_id(level))
        if queue is None:
            return None
        start = offset = self._offsets.get(level, 0)
        if offset < queue.min_offset:
            log.error(
                "delay offset %d of level %d is below its schedule queue's minimum %d",
                offset,
                level,
                queue.min_offset,
            )
            offset = queue.min_offset
        latest = now + self._delays[level - 1]
        next_look: int | None = None
        entries = queue.get_entries(offset, DELIVER_BATCH)
        if entries is not None:
            next_look = now
            for physical_offset, size, deliver_at in iter_entries(entries):
                if now < deliver_at <= latest:
                    next_look = deliver_at
                    break
                if size != PRE_BLANK_SIZE and not self._deliver(physical_offset, level):
                    next_look = now + RETRY_DELAY_MS
                    break
                offset += 1
            else:
                if offset >= queue.max_offset:
                    next_look = None
        if offset != start:
            self._offsets[level] = offset
        return next_look

    def _deliver(self, physical_offset: int, level: int) -> bool:
        """Put the parked message at ``physical_offset`` to its real queue; False when the
        put failed and must be retried."""
        record = self._store.look_message_by_offset(physical_offset)
        if record is None:
            log.error(
                "delayed message of level %d at %d is not readable, skipped", level, physical_offset
            )
            return True
        target = real_queue(record)
        if target is None or target[0] == RMQ_SYS_TRANS_HALF_TOPIC:
            log.error(
                "delayed message %s of level %d names no valid real queue (%s), skipped",
                record.msg_id,
                level,
                target,
            )
            return True
        result = self._store.put_message(reput_message(record, *target))
        if not result.ok:
            log.warning(
                "delivering delayed message %s to %s failed (%s), will retry",
                record.msg_id,
                target,
                result.status.name,
            )
        elif self._on_delivered is not None:
            self._on_delivered(level, result.topic, result.msg_num, result.wrote_bytes)
        return result.ok

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load the offsets and start delivering and persisting (on the running loop)."""
        self.load()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._deliver_forever()),
            loop.create_task(self._persist_forever()),
        ]

    async def stop(self) -> None:
        """Stop delivering and write the offsets (call before the store shuts down)."""
        if not self._tasks:
            return
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks)
        self._tasks = []
        self.persist()

    async def _deliver_forever(self) -> None:
        while True:
            try:
                wait = self.deliver_due()
            except Exception:
                log.exception("delayed message delivery failed")
                wait = ERROR_BACKOFF_S
            await asyncio.sleep(wait)

    async def _persist_forever(self) -> None:
        while True:
            await asyncio.sleep(self._persist_interval_s)
            self.persist()
