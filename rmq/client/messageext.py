"""The received message: a decoded stored record as a client sees it, and pull-body decoding.

What a consumer pulls, what a request gets back as its reply (:mod:`rmq.client.requestreply`)
and what a broker's transaction check-back carries are all a :class:`MessageExt`, so it
lives here, below every module that uses it (it imports nothing of the client).

:class:`MessageExt` wraps one :class:`rmq.common.message.MessageRecord` (the one record
codec decodes it) with what the client adds, as Java's ``MessageExt`` does:

* ``broker_name``: the broker name of the queue it was pulled from;
* ``topic``: the record's topic, except that a message redelivered from the group's
  ``%RETRY%<group>`` topic shows its original topic (the RETRY_TOPIC property);
* ``body``: the decompressed body, decompressed once;
* ``reconsume_times``: starts as the record's and grows when a failed message is retried
  locally because sending it back to the broker failed;
* ``properties``: every property of the record plus MIN_OFFSET / MAX_OFFSET of the queue at
  pull time (the record's own dict, extended in place).

:meth:`MessageExt.to_record_dict` is the CLI.md message record (``to_record_dict`` of
:mod:`rmq.common.jsonrecord`) with those values.

:func:`decode_pull_body` turns a PULL_MESSAGE body into messages the way Java's
``PullAPIWrapper.processPullResult`` does: decode until the first bad record, drop messages
whose tag string is not subscribed (the broker filters by tag *hash*, which collides), add
the queue's offsets as properties.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rmq.common.jsonrecord import to_record_dict
from rmq.common.message import MessageRecord, decode_record, iter_records
from rmq.common.msgconst import (
    PROPERTY_MAX_OFFSET,
    PROPERTY_MIN_OFFSET,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
)
from rmq.common.naming import retry_topic

__all__ = ["MessageExt", "decode_pull_body"]


class MessageExt:
    """One consumed message (see the module docstring)."""

    __slots__ = ("body", "broker_name", "properties", "reconsume_times", "record", "topic")

    def __init__(self, record: MessageRecord, broker_name: str) -> None:
        self.record = record
        self.broker_name = broker_name
        self.topic = record.topic
        self.properties = record.properties
        self.reconsume_times = record.reconsume_times
        self.body: bytes = record.decompressed_body() or b""

    @property
    def queue_id(self) -> int:
        return self.record.queue_id

    @property
    def queue_offset(self) -> int:
        return self.record.queue_offset

    @property
    def commit_log_offset(self) -> int:
        return self.record.physical_offset

    @property
    def msg_id(self) -> str:
        """UNIQ_KEY when the producer set one, else the offset message id."""
        return self.record.msg_id

    @property
    def offset_msg_id(self) -> str:
        return self.record.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.record.tags

    @property
    def keys(self) -> list[str]:
        return self.record.keys

    @property
    def flag(self) -> int:
        return self.record.flag

    @property
    def sys_flag(self) -> int:
        return self.record.sys_flag

    @property
    def born_timestamp(self) -> int:
        return self.record.born_timestamp

    @property
    def store_timestamp(self) -> int:
        return self.record.store_timestamp

    @property
    def born_host(self) -> str:
        return self.record.born_host

    @property
    def store_host(self) -> str:
        return self.record.store_host

    @property
    def body_crc(self) -> int:
        return self.record.body_crc

    @property
    def prepared_transaction_offset(self) -> int:
        return self.record.prepared_transaction_offset

    @property
    def transaction_id(self) -> str | None:
        """The UNIQ_KEY of a transactional (TRAN_MSG) message, as Java sets it."""
        if self.properties.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
            return self.record.uniq_key
        return None

    def restore_retry_topic(self, consumer_group: str) -> None:
        """Show a message redelivered through ``%RETRY%<group>`` under its original topic."""
        original = self.properties.get(PROPERTY_RETRY_TOPIC)
        if original is not None and self.topic == retry_topic(consumer_group):
            self.topic = original

    def to_record_dict(self) -> dict[str, Any]:
        """The CLI.md message record of this message."""
        record = self.record._replace(topic=self.topic, reconsume_times=self.reconsume_times)
        return to_record_dict(record, self.broker_name)

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, broker_name={self.broker_name!r}, "
            f"queue_id={self.queue_id}, queue_offset={self.queue_offset}, msg_id={self.msg_id!r})"
        )


def decode_pull_body(
    body: Any,
    broker_name: str,
    tags_set: Collection[str],
    min_offset: int,
    max_offset: int,
) -> list[MessageExt]:
    """The messages of a PULL_MESSAGE body that the subscription wants.

    ``tags_set`` is the subscription's tag strings (empty: every tag); a message whose TAGS
    is not one of them was a tag-hash collision on the broker and is left out.
    """
    min_text = str(min_offset)
    max_text = str(max_offset)
    messages = []
    for _, record in iter_records(body):
        if tags_set and record.tags not in tags_set:
            continue
        properties = record.properties
        properties[PROPERTY_MIN_OFFSET] = min_text
        properties[PROPERTY_MAX_OFFSET] = max_text
        messages.append(MessageExt(record, broker_name))
    return messages


def decode_message(record: Any, broker_name: str) -> MessageExt:
    """The one stored record ``record`` (CONSUME_MESSAGE_DIRECTLY's body) as a message of
    ``broker_name``; raises what :func:`decode_record` raises for bytes that are not one."""
    return MessageExt(decode_record(record), broker_name)
