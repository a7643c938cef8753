"""The message property string: RocketMQ's ``name 0x01 value 0x02 ...`` encoding.

Encoding joins ``name + "\\x01" + value`` pairs with ``"\\x02"`` (no trailing separator; an
empty map is the empty string); pairs whose value is None are left out.  Decoding follows
Java's ``MessageDecoder.string2messageProperties``: split on 0x02, keep a segment only when its
first 0x01 is neither the first nor the last character (empty names and empty values are
dropped, a value may itself contain 0x01), and let later duplicates win.

Records carry the string as UTF-8; ``decode_properties_bytes`` decodes straight from a
bytes-like slice (a memoryview of a mapped file included) without an intermediate copy.
Malformed UTF-8 becomes U+FFFD, as Java's ``new String(bytes, UTF_8)`` does.
"""

from __future__ import annotations

from collections.abc import Mapping

from rmq.common.msgconst import SYSTEM_PROPERTY_NAMES

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
_PROPERTY_SEPARATOR_BYTE = 0x02

# Java's String.trim() strips every char <= U+0020.
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Serialize a property map; pairs with a None value are skipped."""
    return PROPERTY_SEPARATOR.join(
        f"{name}{NAME_VALUE_SEPARATOR}{value}"
        for name, value in properties.items()
        if value is not None
    )


def encode_properties_bytes(properties: Mapping[str, str | None]) -> bytes:
    """The UTF-8 property string as stored in records and sent in batch bodies."""
    return encode_properties(properties).encode("utf-8")


def decode_properties(text: str) -> dict[str, str]:
    """Parse a property string with Java's rules (see the module docstring)."""
    properties: dict[str, str] = {}
    if not text:
        return properties
    for segment in text.split(PROPERTY_SEPARATOR):
        name, _, value = segment.partition(NAME_VALUE_SEPARATOR)
        if name and value:
            properties[name] = value
    return properties


def decode_properties_bytes(data: bytes | bytearray | memoryview) -> dict[str, str]:
    """Parse a UTF-8 property string held in any bytes-like object."""
    if not data:
        return {}
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        text = str(data, "utf-8", "replace")
    return decode_properties(text)


def merge_batch_properties(inner: bytes | memoryview, batch: bytes) -> bytes:
    """The stored property string of one message of a batch.

    The broker appends the batch-level properties to each inner message's own string,
    inserting a 0x02 when both are non-empty and the inner one does not already end with it.
    """
    if not batch:
        return bytes(inner)
    if not inner:
        return batch
    if inner[-1] == _PROPERTY_SEPARATOR_BYTE:
        return b"".join((inner, batch))
    return b"".join((inner, b"\x02", batch))


def user_property_error(name: str, value: str) -> str | None:
    """Why Java's ``Message.putUserProperty`` would refuse this pair, or None if it accepts it."""
    if name in SYSTEM_PROPERTY_NAMES:
        return f"The Property<{name}> is used by system, input another please"
    if not name.strip(_JAVA_TRIM) or not value.strip(_JAVA_TRIM):
        return "The name or value of property can not be null or blank string!"
    return None
