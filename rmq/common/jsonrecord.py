"""The message record's JSON form: rendering a stored record and parsing one back.

The "message record" of docs/cli.md is the one JSON object every command shows a message as:
``rmq consume`` prints it, ``rmq inspect`` exports it, the Spark rows follow its columns, and
``rmq produce -f json`` reads it back, so the output of ``rmq consume`` can be sent again as
it is.  Both directions live here so they cannot drift apart.

Rendering (:func:`to_record_dict`): the body is always the decompressed one, UTF-8 text when
it decodes, else base64 with ``"bodyEncoding": "base64"``.

Parsing (:func:`record_fields`, :func:`line_fields`): a record, or a plain line with the
command line's defaults, becomes :class:`MessageFields` (what a client message is built
from), or :class:`RecordJsonError` saying what is wrong with it in words a user can act on.
``body`` is text, base64 (with ``"bodyEncoding":"base64"``) or any other JSON value sent as
its compact JSON text; ``keys`` an array or one space-separated string; ``properties`` string
values (numbers and booleans as their JSON text), system properties dropped; ``queueId``,
``shardingKey``, ``delayLevel`` and ``flag`` optional.  Every other field is ignored.  The
module imports only the standard library at load time (orjson when it parses), so the CLI's
command modules may import it without slowing ``rmq --help``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from rmq.common.msgconst import KEY_SEPARATOR, SYSTEM_PROPERTY_NAMES

if TYPE_CHECKING:
    from rmq.common.message import MessageRecord

_SEPARATORS = ("\x01", "\x02")


def to_record_dict(record: MessageRecord, broker_name: str | None = None) -> dict[str, Any]:
    """The "message record" object of the rmq CLI, inspect exports and Spark rows.

    The body is always the decompressed one: UTF-8 text when it decodes, else base64 with
    ``"bodyEncoding": "base64"``; None when the record was decoded without its body.
    """
    return {
        "topic": record.topic,
        "brokerName": broker_name,
        "queueId": record.queue_id,
        "queueOffset": record.queue_offset,
        "commitLogOffset": record.physical_offset,
        "msgId": record.msg_id,
        "offsetMsgId": record.offset_msg_id,
        "tags": record.tags,
        "keys": record.keys,
        "properties": dict(record.properties),
        **body_fields(record.decompressed_body()),
        "bodyCrc": record.body_crc,
        "flag": record.flag,
        "sysFlag": record.sys_flag,
        "bornTimestamp": record.born_timestamp,
        "storeTimestamp": record.store_timestamp,
        "bornHost": record.born_host,
        "storeHost": record.store_host,
        "reconsumeTimes": record.reconsume_times,
        "preparedTransactionOffset": record.prepared_transaction_offset,
    }


def body_fields(body: bytes | None) -> dict[str, Any]:
    """A record's body fields: UTF-8 text when it decodes, else base64 with
    ``"bodyEncoding": "base64"``; ``{"body": None}`` for a body not read."""
    if body is None:
        return {"body": None}
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body": base64.b64encode(body).decode("ascii"), "bodyEncoding": "base64"}


class RecordJsonError(ValueError):
    """A line that is not a valid message record."""


@dataclass(frozen=True)
class RecordDefaults:
    """What the command line sets for every message (records may override it)."""

    tags: str | None = None
    keys: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    sharding_key_field: str | None = None


class MessageFields(NamedTuple):
    """A parsed record: what a message is built from, and the key that orders it."""

    body: bytes
    tags: str | None
    keys: list[str]
    properties: dict[str, str]
    queue_id: int | None = None
    delay_level: int = 0
    flag: int = 0
    sharding_key: str | None = None


def json_object(text: bytes) -> dict[str, Any]:
    """``text`` as a JSON object; RecordJsonError when it is not valid JSON or not an object."""
    import orjson

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        reason = exc.msg.partition(",")[0]
        raise RecordJsonError(f"not a JSON object ({reason} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise RecordJsonError(f"not a JSON object but {_json_type(value)}")
    return value


def line_fields(body: bytes, defaults: RecordDefaults) -> MessageFields:
    """A plain line as a message: the line is the body, the defaults add the rest."""
    sharding_key = None
    if defaults.sharding_key_field is not None:
        try:
            document = json_object(body)
        except RecordJsonError as exc:
            raise RecordJsonError(
                f"--sharding-key-field {defaults.sharding_key_field} needs a JSON object: "
                f"the line is {exc}"
            ) from None
        sharding_key = _sharding_key(document, defaults.sharding_key_field)
    return _checked(
        MessageFields(
            body,
            defaults.tags,
            list(defaults.keys),
            dict(defaults.properties),
            sharding_key=sharding_key,
        )
    )


def record_fields(record: Mapping[str, Any], defaults: RecordDefaults) -> MessageFields:
    """A record (the message record schema) as a message's fields and its sharding key."""
    tags = record.get("tags")
    if tags is not None and not isinstance(tags, str):
        raise RecordJsonError(f'"tags" must be a string, not {_json_type(tags)}')
    keys = _keys(record.get("keys"))
    properties = dict(defaults.properties)
    properties.update(_properties(record.get("properties")))
    sharding_key = record.get("shardingKey")
    if sharding_key is not None:
        sharding_key = _text("shardingKey", sharding_key)
    elif defaults.sharding_key_field is not None:
        sharding_key = _sharding_key(record, defaults.sharding_key_field)
    return _checked(
        MessageFields(
            _body(record),
            tags if tags is not None else defaults.tags,
            keys if keys is not None else list(defaults.keys),
            properties,
            queue_id=_int_field(record, "queueId", 0, 1 << 31),
            delay_level=_int_field(record, "delayLevel", 0, 1 << 31) or 0,
            flag=_int_field(record, "flag", -(1 << 31), 1 << 31) or 0,
            sharding_key=sharding_key,
        )
    )


def _checked(fields: MessageFields) -> MessageFields:
    """``fields`` when no text in them holds a property separator (\\u0001, \\u0002)."""
    keys_text = KEY_SEPARATOR.join(fields.keys) if fields.keys else None
    texts = [fields.tags, keys_text, *fields.properties, *fields.properties.values()]
    for text in texts:
        if text is not None and any(sep in text for sep in _SEPARATORS):
            raise RecordJsonError(
                f"{text!r} contains \\u0001 or \\u0002, which separate properties"
            )
    return fields


def _body(record: Mapping[str, Any]) -> bytes:
    import orjson

    if "body" not in record:
        raise RecordJsonError('no "body" field (to send JSON documents as bodies, use -f lines)')
    body = record["body"]
    encoding = record.get("bodyEncoding")
    if encoding == "base64":
        if not isinstance(body, str):
            raise RecordJsonError(f'a base64 "body" must be a string, not {_json_type(body)}')
        try:
            return base64.b64decode(body, validate=True)
        except binascii.Error as exc:
            raise RecordJsonError(f'"body" is not valid base64: {exc}') from None
    if encoding not in (None, "utf-8", "utf8", "text"):
        raise RecordJsonError(f'unknown "bodyEncoding" {encoding!r}: use "base64" or leave it out')
    if body is None:
        raise RecordJsonError('"body" is null')
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


def _keys(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [key for key in value.split(KEY_SEPARATOR) if key]
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise RecordJsonError('"keys" must be an array of strings or one space-separated string')
    for key in value:
        if not key or KEY_SEPARATOR in key:
            raise RecordJsonError(f"key {key!r} is empty or has a space (KEYS is space-separated)")
    return value


def _properties(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordJsonError(f'"properties" must be an object, not {_json_type(value)}')
    return {
        name: _text(f"property {name}", item)
        for name, item in value.items()
        if name not in SYSTEM_PROPERTY_NAMES
    }


def _sharding_key(document: Mapping[str, Any], name: str) -> str:
    value = document.get(name)
    if value is None:
        properties = document.get("properties")
        if isinstance(properties, dict):
            value = properties.get(name)
    if value is None:
        raise RecordJsonError(f"no {name!r} field for the sharding key (--sharding-key-field)")
    return _text(name, value)


def _text(name: str, value: Any) -> str:
    """A string field's value; numbers and booleans as their JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise RecordJsonError(
        f"{name} must be a string, a number or a boolean, not {_json_type(value)}"
    )


def _int_field(record: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = record.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
        raise RecordJsonError(
            f'"{name}" must be an integer from {low} to {high - 1}, not {value!r}'
        )
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)
