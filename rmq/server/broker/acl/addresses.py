"""White remote addresses of the plain ACL: the patterns of `plain_acl.yml` and their matching.

A pattern (a global white address or an account's `whiteRemoteAddress`) is one of the forms
Apache 4.9.8's RemoteAddressStrategyFactory knows, with its quirks kept:

* blank: matches nothing;  `*`, `*.*.*.*`, `*:*:*:*:*:*:*:*`: matches every address;
* `192.168.1.{1,2,3}` (ending in `}`): the listed last parts; `a,b,c`: the listed addresses;
* a `*` or an `a-b` range in one part (`192.168.*.*`, `192.168.1.1-100`): only the FIRST
  such part (of parts 2-4) is checked, the parts before it must be equal, those after it are
  not looked at;
* anything else: one IPv4 or IPv6 address, compared in expanded form.

A pattern Apache refuses raises `AclError` with Apache's message.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from rmq.server.broker.acl.errors import AclError

Matcher = Callable[[str], bool]


def is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ip(address: str, parts: int) -> str:
    """Apache's AclUtils.expandIP: upper case, `::` widened to `parts` groups, each group
    left-padded with zeros to four characters."""
    address = address.upper()
    pad = parts - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" + ":" * pad)
    return ":".join(group.rjust(4, "0") for group in address.split(":"))


def _split(text: str, separator: str) -> list[str]:
    """commons-lang StringUtils.split: no empty tokens."""
    return [token for token in text.split(separator) if token]


def _in_byte_range(text: str) -> bool:
    try:
        return 0 <= int(text.strip()) <= 255
    except ValueError:
        return False


def _scope_error(address: str) -> AclError:
    return AclError(f"Netaddress examine scope Exception netaddress is {address}")


def _match_all(_address: str) -> bool:
    return True


def _match_none(_address: str) -> bool:
    return False


def _normalised(address: str) -> str:
    return expand_ip(address, 8) if is_ipv6(address) else address


def _multiple(addresses: list[str]) -> Matcher:
    allowed = set()
    for address in addresses:
        if is_ipv4(address):
            allowed.add(address)
        elif is_ipv6(address):
            allowed.add(expand_ip(address, 8))
        else:
            raise AclError(f"Netaddress examine Exception netaddress is {address}")
    return lambda remote: _normalised(remote) in allowed


def _one(pattern: str) -> Matcher:
    if not (is_ipv4(pattern) or is_ipv6(pattern)):
        raise AclError(f"Netaddress examine Exception netaddress is {pattern}")
    wanted = expand_ip(pattern, 8).upper()
    return lambda remote: expand_ip(remote, 8).upper() == wanted


def _bounds(value: str, *, base: int, limit: int, pattern: str) -> tuple[int, int] | None:
    """(start, end) of one part: `*` is the whole range, `a-b` a range, else None."""
    if value == "*":
        return 0, limit
    if "-" not in value:
        return None
    if value.startswith("-"):
        raise AclError(
            f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} "
        )
    low, high = (int(v, base) for v in _split(value, "-")[:2])
    if not (0 <= low <= limit and 0 <= high <= limit and low <= high):
        raise AclError(
            "RangeRemoteAddressStrategy netaddress examine scope Exception "
            f"start is {low} , end is {high}"
        )
    return low, high


def _range_v4(pattern: str) -> Matcher:
    parts = _split(pattern, ".")
    for index in (1, 2, 3):
        if index >= len(parts):
            # Java's ArrayIndexOutOfBoundsException, whose message Apache answers
            raise AclError(f"Index {index} out of bounds for length {len(parts)}")
        bounds = _bounds(parts[index].strip(), base=10, limit=255, pattern=pattern)
        if bounds is not None and bounds[1] > 0:
            break
    else:
        return _match_none
    if len(parts) != 4 or not all(_in_byte_range(p) for p in parts[: index - 1]):
        raise _scope_error(pattern)
    head = "".join(p.strip() + "." for p in parts[:index])
    low, high = bounds

    def match(remote: str) -> bool:
        if not is_ipv4(remote) or not remote.startswith(head):
            return False
        rest = remote[len(head) :].split(".")
        return low <= int(rest[0]) <= high

    return match


def _range_v6(pattern: str) -> Matcher:
    asterisk, minus = pattern.find("*"), pattern.find("-")
    if asterisk > -1 and asterisk != len(pattern) - 1:
        raise _scope_error(pattern)
    if minus > -1:
        last = pattern.rfind(":")
        limit = last if asterisk == -1 else pattern.rfind(":", 0, last)
        if minus <= limit:
            raise _scope_error(pattern)
    parts = _split(pattern, ":")
    for index in range(1, len(parts)):
        bounds = _bounds(parts[index].strip(), base=16, limit=0xFFFF, pattern=pattern)
        if bounds is not None and bounds[1] > 0:
            break
    else:
        return _match_none
    if asterisk > -1 and minus > -1:
        cut = pattern[: pattern[: pattern.rfind(":")].rfind(":")]
        head = expand_ip(cut, 6)
    else:
        head = expand_ip(pattern[: pattern.rfind(":")], 7)
    position = len(_split(head, ":"))
    low, high = bounds

    def match(remote: str) -> bool:
        if not is_ipv6(remote):
            return False
        expanded = expand_ip(remote, 8).upper()
        if not expanded.startswith(head):
            return False
        return low <= int(expanded[5 * position : 5 * position + 4], 16) <= high

    return match


def address_matcher(pattern: str | None) -> Matcher:
    """The matcher of one white-address pattern (AclError when Apache refuses it)."""
    if pattern is None or not pattern.strip():
        return _match_none
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _match_all
    if pattern.endswith("}"):
        separator = ":" if ":" in pattern else "."
        parts = _split(pattern, separator)
        if separator == "." and len(parts) < 4:
            raise AclError("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) ")
        if not parts[-1].startswith("{"):
            raise AclError(
                "MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress"
            )
        prefix = pattern[: pattern.index("{")]
        return _multiple([prefix + item for item in _split(parts[-1][1:-1], ",")])
    if "," in pattern:
        return _multiple(_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _range_v6(pattern) if ":" in pattern else _range_v4(pattern)
    return _one(pattern)


def client_host(remote_addr: str) -> str:
    """The host part of a "host:port" / "[v6]:port" peer address, as the ACL compares it."""
    host = remote_addr[: remote_addr.rfind(":")] if ":" in remote_addr else remote_addr
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host
