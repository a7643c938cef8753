"""Java field names <-> Python attribute names.

Headers, protocol bodies and config classes are declared as Python dataclasses with
snake_case attributes; on the wire and in files they carry Java's camelCase field names.
These two functions are the one mapping between the two spellings.
"""

from __future__ import annotations

import re

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def camel_case(name: str) -> str:
    """The Java name of a snake_case attribute (`broker_addrs` -> `brokerAddrs`)."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def snake_case(name: str) -> str:
    """The attribute name of a Java name (`brokerIP1` -> `broker_ip1`)."""
    return _WORD_BOUNDARY.sub("_", name).lower()
