"""What recovery found and did, said in the log and kept in a report file under the store.

:func:`report_recovery` logs a :class:`~rmq.store.recovery.RecoveryResult`: every damaged
span recovery skipped at ERROR, data it dropped (commitlog bytes and records cut, consume
queue and index entries removed, per topic and queue, damaged files set aside) at WARNING, a
clean start at INFO; and, when anything was skipped, dropped, removed, restored, set aside or
rebuilt, writes it as JSON to
``<store>/recovery/<UTC time>.json`` (:func:`report_to_json` is the layout;
``rmq inspect recovery`` reads the files back).  The skipped bytes are not copied: they stay
in place in the commitlog, and the report names the file, position and length.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rmq.store.recovery import RecoveryResult

log = logging.getLogger("rmq.store")

REPORT_DIR = "recovery"
"""The directory under the store root that holds the report files."""


def report_to_json(result: RecoveryResult, now_ms: int) -> dict[str, Any]:
    """The report file's content (documented in docs/store.md)."""
    return {
        "time": now_ms,
        "mode": "abnormal" if result.abnormal else "normal",
        "startOffset": result.start_offset,
        "endOffset": result.end_offset,
        "dispatched": result.dispatched,
        "skipped": [
            {
                "file": span.file,
                "position": span.position,
                "offset": span.offset,
                "length": span.length,
                "reason": span.reason,
                **(
                    {
                        "topic": span.topic,
                        "queueId": span.queue_id,
                        "queueOffset": span.queue_offset,
                    }
                    if span.reason == "body-crc"
                    else {"detail": span.detail}
                ),
            }
            for span in result.skipped
        ],
        "truncated": [
            {"file": os.path.basename(cut.path), "position": cut.position, "length": cut.length}
            for cut in result.truncated
        ],
        "droppedRecords": result.dropped_records,
        "consumeQueueEntriesRemoved": result.consume_queue_removed,
        "consumeQueueEntriesBlanked": result.consume_queue_blanked,
        "indexEntriesRemoved": result.index_removed,
        "restoredFiles": [
            {"file": os.path.basename(path), "size": size} for path, size in result.restored
        ],
        "setAside": [
            {"file": moved.file, "movedTo": moved.moved_to, "reason": moved.reason}
            for moved in result.set_aside
        ],
        "rebuiltQueues": result.rebuilt_queues,
        "reindexedFrom": result.reindexed_from,
    }


def _has_news(result: RecoveryResult) -> bool:
    return bool(
        result.skipped
        or result.truncated
        or result.consume_queue_removed
        or result.index_removed
        or result.restored
        or result.set_aside
        or result.rebuilt_queues
        or result.reindexed_from >= 0
    )


def report_recovery(result: RecoveryResult, store_root: Path | None) -> Path | None:
    """Log ``result`` and, when there is anything to report, write the report file under
    ``store_root`` (not when None); returns its path."""
    path = None
    if store_root is not None and _has_news(result):
        now_ms = int(time.time() * 1000)
        directory = store_root / REPORT_DIR
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now_ms / 1000))
        path = directory / f"{stamp}.{now_ms % 1000:03d}Z.json"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(report_to_json(result, now_ms), indent=2) + "\n")
        except OSError as exc:
            log.error("cannot write the recovery report %s: %s", path, exc.strerror)
            path = None
    where = f" (report {path})" if path is not None else ""
    for span in result.skipped:
        record = (
            f" (topic {span.topic}, queue {span.queue_id}, queue offset {span.queue_offset})"
            if span.reason == "body-crc"
            else f" ({span.detail})"
        )
        log.error(
            "recovery skipped damaged commitlog bytes: %s position %d (offset %d), %d bytes, "
            "%s%s; left in place, not dispatched%s",
            span.file,
            span.position,
            span.offset,
            span.length,
            "body CRC mismatch" if span.reason == "body-crc" else "damaged framing",
            record,
            where,
        )
    for restored_path, size in result.restored:
        log.warning("recovery grew %s from %d bytes back to its mapped size", restored_path, size)
    dropped = sum(cut.length for cut in result.truncated)
    if result.truncated:
        log.warning(
            "recovery cut the commitlog at %d: %d bytes, %d records dropped (%s)%s",
            result.end_offset,
            dropped,
            result.dropped_records,
            ", ".join(
                f"{os.path.basename(c.path)}@{c.position}+{c.length}" for c in result.truncated
            ),
            where,
        )
    for queue, count in sorted(result.consume_queue_removed.items()):
        log.warning("recovery removed %d consume queue entries of %s", count, queue)
    for queue, count in sorted(result.consume_queue_blanked.items()):
        log.error("recovery blanked %d consume queue entries of %s (damaged records)", count, queue)
    if result.index_removed:
        log.warning("recovery removed %d index entries", result.index_removed)
    if result.set_aside:
        log.warning(
            "recovery set %d damaged files aside, each named above%s", len(result.set_aside), where
        )
    log.log(
        logging.ERROR if result.skipped else logging.WARNING if dropped else logging.INFO,
        "%s recovery: commitlog valid from %d to %d, %d records dispatched, %d spans skipped, "
        "%d bytes cut%s",
        "abnormal" if result.abnormal else "normal",
        result.start_offset,
        result.end_offset,
        result.dispatched,
        len(result.skipped),
        dropped,
        where,
    )
    return path
