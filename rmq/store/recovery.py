"""Store recovery: from the files a previous run left to a consistent store.

Recovery is *normal* when the previous run removed its ``abort`` file (walk the last three
commitlog files, cut a torn tail) and *abnormal* otherwise (walk from the newest commitlog
file whose first record is older than the checkpoint says is safely flushed, re-dispatching
every valid record).  Either way the consume queues and the index are cut back to the valid
commitlog end, records the consume queues have not seen yet are dispatched, and the queue
offsets of the append path are rebuilt from the consume queues.  :func:`recover` returns what
was found and cut as a :class:`RecoveryResult`.

The commitlog walk is :meth:`~rmq.store.commitlog.CommitLog.scan` (which stops at the first
record that is not whole and valid) and re-dispatching is
:meth:`~rmq.store.dispatch.Dispatcher.redispatch`, so recovery repeats exactly what the
append path did.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rmq.common.config import MessageStoreConfig
from rmq.store.checkpoint import StoreCheckpoint
from rmq.store.commitlog import CommitLog
from rmq.store.consumequeue import ConsumeQueueStore
from rmq.store.dispatch import Dispatcher
from rmq.store.mappedfile import TruncatedRange

log = logging.getLogger("rmq.store")


@dataclass(slots=True)
class RecoveryResult:
    """What :meth:`MessageStore.start` found: normal or abnormal, the valid commitlog range,
    how many records were re-dispatched, and every byte range it cut."""

    abnormal: bool
    start_offset: int = 0
    end_offset: int = 0
    dispatched: int = 0
    truncated: list[TruncatedRange] = field(default_factory=list)


def recover(
    config: MessageStoreConfig,
    commitlog: CommitLog,
    dispatcher: Dispatcher,
    checkpoint: StoreCheckpoint,
    *,
    abnormal: bool,
) -> RecoveryResult:
    """Recover a store whose files are loaded (see the module docstring)."""
    consume_queues = dispatcher.consume_queues
    index = dispatcher.index
    consume_queues.recover()
    result = RecoveryResult(abnormal=abnormal)
    min_timestamp = (
        checkpoint.min_timestamp_index()
        if index is not None and config.message_index_safe
        else checkpoint.min_timestamp()
    )
    start = commitlog.recovery_start(abnormal, min_timestamp)
    on_record = dispatcher.redispatch if abnormal else None
    dispatcher.redispatched = 0
    end = commitlog.scan(start, check_crc=config.check_crc_on_recover, on_record=on_record)
    result.start_offset = start
    result.end_offset = end
    result.truncated = commitlog.truncate(end)
    for cut in result.truncated:
        log.warning(
            "recovery cut %d bytes of %s at position %d", cut.length, cut.path, cut.position
        )
    consume_queues.truncate_dirty(end)
    if index is not None:
        index.truncate_dirty(end)
    _rebuild_queue_offsets(commitlog, consume_queues)
    _catch_up(commitlog, dispatcher, end)
    result.dispatched = dispatcher.redispatched
    consume_queues.correct_min_offsets(max(commitlog.min_offset(), 0))
    log.info(
        "%s recovery: commitlog valid from %d to %d, %d records dispatched",
        "abnormal" if abnormal else "normal",
        start,
        end,
        result.dispatched,
    )
    return result


def _catch_up(commitlog: CommitLog, dispatcher: Dispatcher, end: int) -> None:
    """Dispatch the records after the newest one the consume queues hold."""
    consume_queues = dispatcher.consume_queues
    start = max(
        max((queue.max_physical_offset for queue in consume_queues), default=-1),
        commitlog.min_offset(),
        0,
    )
    if start < end:
        dispatcher.dispatch_from(commitlog, start)
        _rebuild_queue_offsets(commitlog, consume_queues)


def _rebuild_queue_offsets(commitlog: CommitLog, consume_queues: ConsumeQueueStore) -> None:
    commitlog.topic_queue_table = {
        (queue.topic, queue.queue_id): queue.max_offset for queue in consume_queues
    }
