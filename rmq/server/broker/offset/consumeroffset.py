"""Committed consumer offsets (``config/consumerOffset.json``) and the rule for a group that
has none.

:class:`ConsumerOffsetManager` owns the table ``"<topic>@<group>"`` -> queue id -> offset, the
next consume-queue offset the group will consume in that queue, exactly the shape of the
file (``{"offsetTable":{"t@g":{0:12,1:7}}}``, queue ids as bare integers).  Design:

* Commits (UPDATE_CONSUMER_OFFSET, and the offsets a pull request carries) only change
  memory; the broker calls :meth:`ConsumerOffsetManager.persist` every
  ``flushConsumerOffsetInterval`` (5 s) and at shutdown.  The file is written whole,
  atomically, with the previous content kept as ``.bak``
  (:class:`~rmq.server.broker.configmanager.ConfigManager`).  Committing an offset lower than
  the stored one is allowed (a consumer may rewind) and logged.
* Reads answer the consumer and the admin requests: one queue's offset, a group's offsets
  on a topic, which topics a group has offsets for and which groups a topic has, cloning a
  group's offsets (CLONE_GROUP_OFFSET), dropping a group (DELETE_SUBSCRIPTIONGROUP with
  ``cleanOffset``) and the lowest offset any group still needs (QUERY_CORRECTION_OFFSET).
* A group with no stored offset for a queue (QUERY_CONSUMER_OFFSET): see
  :func:`offset_for_new_group`.

Offsets are used from the broker's event loop only, so there are no locks.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Mapping

from rmq.remoting.bodies import ConsumerOffsetSerializeWrapper
from rmq.server.broker.configmanager import ConfigManager

log = logging.getLogger("rmq.broker")

TOPIC_GROUP_SEPARATOR = "@"

QUERY_NOT_FOUND_REMARK = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
"""QUERY_NOT_FOUND remark of QUERY_CONSUMER_OFFSET when :func:`offset_for_new_group` is None."""


def offset_for_new_group(
    min_offset_in_queue: int, offset_zero_in_disk: Callable[[], bool]
) -> int | None:
    """The offset QUERY_CONSUMER_OFFSET answers for a queue the group has no offset for.

    ``min_offset_in_queue`` is the store's minimum consume-queue offset of the queue (0 for
    a queue without messages) and ``offset_zero_in_disk`` tells whether the message at
    consume-queue offset 0 is "in disk": further behind the commitlog's end than the share
    of physical memory the store keeps hot (``accessMessageInMemoryMaxRatio``, 40 %); a
    queue with no entry 0 is not in disk.  It is only called when the minimum is 0.

    The answer is 0 (SUCCESS) when nothing was ever cleaned from the queue and its first
    message is still in memory, so that a brand-new group of a young topic consumes it from
    the start even though clients ask to "consume from last offset" (the C++ client cannot
    ask otherwise, INTEROP.md).  Otherwise None: answer QUERY_NOT_FOUND with
    :data:`QUERY_NOT_FOUND_REMARK`, and the client applies its ``consumeFromWhere``.
    """
    if min_offset_in_queue <= 0 and not offset_zero_in_disk():
        return 0
    return None


def topic_group_key(topic: str, group: str) -> str:
    """The offset table key of a group on a topic: ``"<topic>@<group>"``."""
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


def _split_key(key: str) -> tuple[str, str] | None:
    """(topic, group) of a table key; None for a key without exactly one separator."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    if len(parts) != 2:
        return None
    return parts[0], parts[1]


class ConsumerOffsetManager(ConfigManager[ConsumerOffsetSerializeWrapper]):
    """The committed offsets of every group on one broker, persisted to
    ``consumerOffset.json``."""

    content = "topic@group offset tables"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path, ConsumerOffsetSerializeWrapper, self.offset_wrapper)
        self._table: dict[str, dict[int, int]] = {}

    # -- persistence ---------------------------------------------------------------------

    def _apply(self, body: ConsumerOffsetSerializeWrapper) -> int:
        """The stored offsets replace the table."""
        self._table = body.offset_table
        return len(self._table)

    def offset_wrapper(self) -> ConsumerOffsetSerializeWrapper:
        """A snapshot of every offset (GET_ALL_CONSUMER_OFFSET, the file's content)."""
        return ConsumerOffsetSerializeWrapper(
            offset_table={key: dict(offsets) for key, offsets in self._table.items()}
        )

    def put_all(self, offset_table: Mapping[str, Mapping[int, int]]) -> None:
        """Take every ``topic@group`` entry of ``offset_table`` (replacing the entry of the
        same key, keeping the others) and persist: a slave copying its master's offsets, as
        Apache's SlaveSynchronize does with ``putAll``."""
        self._table.update({key: dict(offsets) for key, offsets in offset_table.items()})
        self.persist()

    # -- commits and queries -------------------------------------------------------------

    def commit(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store ``offset`` as the group's next offset in the queue."""
        key = topic_group_key(topic, group)
        offsets = self._table.setdefault(key, {})
        stored = offsets.get(queue_id)
        offsets[queue_id] = offset
        if stored is not None and offset < stored:
            log.warning(
                "consumer offset moved back: client %s, %s, queue %d, %d -> %d",
                client_host,
                key,
                queue_id,
                stored,
                offset,
            )

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The group's stored offset in the queue, -1 when there is none."""
        return self._table.get(topic_group_key(topic, group), {}).get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int] | None:
        """Queue id -> offset of the group on the topic (a copy); None when it has none."""
        offsets = self._table.get(topic_group_key(topic, group))
        return None if offsets is None else dict(offsets)

    def topics_of_group(self, group: str) -> set[str]:
        """Topics the group has offsets for."""
        return {
            split[0]
            for split in map(_split_key, self._table)
            if split is not None and split[1] == group
        }

    def offsets_by_topic(self) -> dict[str, dict[str, dict[int, int]]]:
        """topic -> group -> queue id -> offset, a copy (safe to call from another thread)."""
        by_topic: dict[str, dict[str, dict[int, int]]] = {}
        for key, offsets in list(self._table.items()):
            split = _split_key(key)
            if split is not None:
                by_topic.setdefault(split[0], {})[split[1]] = dict(offsets)
        return by_topic

    def groups_of_topic(self, topic: str) -> set[str]:
        """Groups that have offsets for the topic."""
        return {
            split[1]
            for split in map(_split_key, self._table)
            if split is not None and split[0] == topic
        }

    def query_min_offset_in_all_groups(
        self,
        topic: str,
        filter_groups: Collection[str],
        min_offset_in_queue: Callable[[str, int], int],
    ) -> dict[int, int]:
        """Per queue of the topic, the lowest offset a group other than ``filter_groups``
        still needs (QUERY_CORRECTION_OFFSET); offsets already below the store's minimum
        (``min_offset_in_queue(topic, queue_id)``) do not count."""
        lowest: dict[int, int] = {}
        for key, offsets in self._table.items():
            split = _split_key(key)
            if split is None or split[0] != topic or split[1] in filter_groups:
                continue
            for queue_id, offset in offsets.items():
                if offset >= min_offset_in_queue(topic, queue_id):
                    lowest[queue_id] = min(offset, lowest.get(queue_id, offset))
        return lowest

    # -- changes -------------------------------------------------------------------------

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        """Give ``dest_group`` a copy of ``src_group``'s offsets on the topic (nothing when the
        source has none)."""
        offsets = self._table.get(topic_group_key(topic, src_group))
        if offsets is not None:
            self._table[topic_group_key(topic, dest_group)] = dict(offsets)

    def remove_group(self, group: str) -> None:
        """Drop every offset of the group."""
        for key in list(self._table):
            split = _split_key(key)
            if split is not None and split[1] == group:
                del self._table[key]
                log.warning("clean group offset %s", key)
