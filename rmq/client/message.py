"""The message a producer sends: topic, body, tags, keys, user properties and a few options.

`Message` is deliberately light: a slotted dataclass that holds what the user gave and
nothing the client adds.  The system properties a send puts on the wire (TAGS, KEYS, DELAY,
WAIT and the per-send UNIQ_KEY) are rendered from its fields by `properties_text`, so a
`Message` can be sent any number of times, each send getting its own unique id, and
`properties` only ever holds user properties: `validate` refuses the names RocketMQ
reserves for the system, as Java's `Message.putUserProperty` does.  The unique ids come from
`unique_ids()`, the process's one generator (a consumer's trace records take their request
ids from it too).

`keys` is one key, a space-separated string of keys, or a sequence of keys (joined with
spaces, Java's `setKeys(Collection)`).  `delay_level` (1-18 with the broker's default
levels) asks for delayed delivery; `queue_id` pins the send to that queue id (on any broker
that has it); `flag` is the user int the record carries untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from rmq.client.errors import MQClientError
from rmq.common.msgconst import (
    KEY_SEPARATOR,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rmq.common.msgid import UniqueIdGenerator
from rmq.common.naming import client_topic_error, is_send_forbidden, send_forbidden_error
from rmq.common.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, user_property_error
from rmq.remoting.codes import ResponseCode

DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # DefaultMQProducer.maxMessageSize

_UNIQ_KEY_PREFIX = f"{PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX}{NAME_VALUE_SEPARATOR}"
_WAIT_FALSE = f"{PROPERTY_WAIT_STORE_MSG_OK}{NAME_VALUE_SEPARATOR}false"
_WAIT_TRUE = f"{PROPERTY_WAIT_STORE_MSG_OK}{NAME_VALUE_SEPARATOR}true"


@dataclass(slots=True)
class Message:
    """One message to send (see the module docstring for the fields)."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | Sequence[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0
    delay_level: int = 0
    queue_id: int | None = None
    wait_store_msg_ok: bool = True

    @property
    def keys_text(self) -> str | None:
        """KEYS as stored: the keys joined with spaces (None without keys)."""
        keys = self.keys
        if keys is None or isinstance(keys, str):
            return keys or None
        return KEY_SEPARATOR.join(keys) or None

    def validate(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        """Raise MQClientError with Java's message when the client would refuse to send."""
        topic_error = client_topic_error(self.topic)
        if topic_error is not None:
            raise MQClientError(-1, topic_error)
        if is_send_forbidden(self.topic):
            raise MQClientError(-1, send_forbidden_error(self.topic))
        if not self.body:
            raise MQClientError(ResponseCode.MESSAGE_ILLEGAL, "the message body length is zero")
        if len(self.body) > max_message_size:
            raise MQClientError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message body size over max value, MAX: {max_message_size}",
            )
        for name, value in self.properties.items():
            error = user_property_error(name, value)
            if error is not None:
                raise MQClientError(-1, error)

    def properties_text(self, uniq_id: str | None) -> str:
        """The property string of one send: user properties, then TAGS, KEYS, DELAY, WAIT
        and, when given, UNIQ_KEY."""
        parts = [f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in self.properties.items()]
        if self.tags:
            parts.append(f"{PROPERTY_TAGS}{NAME_VALUE_SEPARATOR}{self.tags}")
        keys = self.keys_text
        if keys is not None:
            parts.append(f"{PROPERTY_KEYS}{NAME_VALUE_SEPARATOR}{keys}")
        if self.delay_level > 0:
            parts.append(f"{PROPERTY_DELAY_TIME_LEVEL}{NAME_VALUE_SEPARATOR}{self.delay_level}")
        parts.append(_WAIT_TRUE if self.wait_store_msg_ok else _WAIT_FALSE)
        if uniq_id is not None:
            parts.append(_UNIQ_KEY_PREFIX + uniq_id)
        return PROPERTY_SEPARATOR.join(parts)


def wait_property_text(wait_store_msg_ok: bool) -> str:
    """The WAIT property alone: the properties of a batch's header."""
    return _WAIT_TRUE if wait_store_msg_ok else _WAIT_FALSE


def half_properties_text(producer_group: str) -> str:
    """What a transaction's half message adds to its property string: TRAN_MSG=true and
    PGROUP, the group whose producers the broker asks about it."""
    return (
        f"{PROPERTY_SEPARATOR}{PROPERTY_TRANSACTION_PREPARED}{NAME_VALUE_SEPARATOR}true"
        f"{PROPERTY_SEPARATOR}{PROPERTY_PRODUCER_GROUP}{NAME_VALUE_SEPARATOR}{producer_group}"
    )


@functools.cache
def unique_ids() -> UniqueIdGenerator:
    """The process's UNIQ_KEY generator (one counter per process, as in Java)."""
    return UniqueIdGenerator()
