"""Socket-address bytes and the two message ids: offset ids and unique ids (UNIQ_KEY).

Addresses travel as RocketMQ writes them: IP bytes (4 for IPv4, 16 for IPv6) followed by the
port as a big-endian int32, so 8 or 20 bytes.  ``pack_host`` builds that form once per
connection so the record encoder only copies bytes; ``host_str`` renders it back as
``ip:port`` (``[ip]:port`` for IPv6, compressed RFC 5952 form) through a small cache, because
a store holds few distinct hosts.

Offset message id: store host bytes + physical offset (int64), as uppercase hex (32 chars for
IPv4, 56 for IPv6).  It is what SEND responses return and VIEW_MESSAGE_BY_ID takes.

Unique message id (UNIQ_KEY): client IP, low 16 bits of the pid, a random int (Java writes its
class loader's hash there), milliseconds since the start of the current month in local time,
and a 16-bit counter.  The first three parts never change in a process, so
``UniqueIdGenerator`` renders them to hex once and each id only formats 12 more hex digits.
The client IP follows Java's ``UtilAll.getIP``: the first address that is neither a private
IPv4 (10/8, 172.16/12, 192.168/16) nor an internal IPv6 (unspecified, loopback, link-local,
site-local), else the first private IPv4, else four bytes of the current time.  Note that,
as in Java, 127.0.0.1 is not "private", so a host without a public address usually gets it.
"""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import os
import random
import socket
import struct
import threading
from collections.abc import Iterable
from typing import NamedTuple

from rmq.common.timeutil import now_millis

IPV4_HOST_LENGTH = 8
IPV6_HOST_LENGTH = 20
_PORT = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_SIOCGIFADDR = 0x8915
_HOST_CACHE_LIMIT = 4096
_host_cache: dict[bytes, str] = {}


def pack_host(ip: str, port: int) -> bytes:
    """The 8- or 20-byte address form of ``ip`` and ``port`` (IPv4-mapped IPv6 becomes IPv4)."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.packed + _PORT.pack(port)


def parse_host(text: str) -> bytes:
    """Pack an ``ip:port`` or ``[ipv6]:port`` string."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid address {text!r}: expected ip:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return pack_host(host, int(port))
    except ValueError:
        raise ValueError(f"invalid address {text!r}: expected ip:port") from None


def host_str(raw: bytes) -> str:
    """Render an 8- or 20-byte address as ``ip:port`` or ``[ipv6]:port``."""
    text = _host_cache.get(raw)
    if text is None:
        port = _PORT.unpack_from(raw, len(raw) - 4)[0]
        if len(raw) == IPV4_HOST_LENGTH:
            text = f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{port}"
        elif len(raw) == IPV6_HOST_LENGTH:
            text = f"[{ipaddress.IPv6Address(raw[:16])}]:{port}"
        else:
            raise ValueError(f"an address is 8 or 20 bytes, not {len(raw)}")
        if len(_host_cache) >= _HOST_CACHE_LIMIT:
            _host_cache.clear()
        _host_cache[bytes(raw)] = text
    return text


def _ip_str(ip: bytes) -> str:
    return str(ipaddress.ip_address(ip))


def _hex_bytes(msg_id: str, lengths: tuple[int, ...], what: str) -> bytes:
    if len(msg_id) not in lengths:
        raise ValueError(
            f"invalid {what} {msg_id!r}: expected {' or '.join(map(str, lengths))} hex characters"
        )
    try:
        return bytes.fromhex(msg_id)
    except ValueError:
        raise ValueError(f"invalid {what} {msg_id!r}: not hexadecimal") from None


# Offset message ids.


def offset_msg_id(store_host: bytes, physical_offset: int) -> str:
    """The offset message id of a record stored at ``physical_offset`` by ``store_host``."""
    return (store_host + _INT64.pack(physical_offset)).hex().upper()


class OffsetMsgId(NamedTuple):
    ip: str
    port: int
    physical_offset: int

    @property
    def address(self) -> str:
        """``ip:port`` (``[ip]:port`` for IPv6): the broker that stored the message."""
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


def decode_offset_msg_id(msg_id: str) -> OffsetMsgId:
    """Split an offset message id into store host IP, port and commitlog offset."""
    raw = _hex_bytes(msg_id, (32, 56), "offset message id")
    ip_len = 4 if len(raw) == 16 else 16
    port = _PORT.unpack_from(raw, ip_len)[0]
    offset = _INT64.unpack_from(raw, ip_len + 4)[0]
    return OffsetMsgId(_ip_str(raw[:ip_len]), port, offset)


# Unique message ids.


def _is_private_ipv4(ip: bytes) -> bool:
    return ip[0] == 10 or (ip[0] == 172 and 16 <= ip[1] <= 31) or (ip[0] == 192 and ip[1] == 168)


def _is_internal_ipv6(ip: bytes) -> bool:
    address = ipaddress.IPv6Address(ip)
    return (
        address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_site_local
    )


def pick_client_ip(addresses: Iterable[bytes]) -> bytes | None:
    """Choose the unique-id IP from packed interface addresses, in Java's order of preference."""
    first_private: bytes | None = None
    for ip in addresses:
        if len(ip) == 4:
            if not _is_private_ipv4(ip):
                return ip
            if first_private is None:
                first_private = ip
        elif len(ip) == 16 and not _is_internal_ipv6(ip):
            return ip
    return first_private


def _interface_addresses() -> dict[int, list[bytes]]:
    """Packed addresses per interface index on Linux (empty elsewhere or on failure)."""
    by_index: dict[int, list[bytes]] = {}
    try:
        import fcntl

        interfaces = socket.if_nameindex()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for index, name in interfaces:
                request = struct.pack("256s", name.encode()[:15])
                try:
                    reply = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
                except OSError:
                    continue
                by_index.setdefault(index, []).append(reply[20:24])
        with open("/proc/net/if_inet6", encoding="ascii") as lines:
            for line in lines:
                fields = line.split()
                by_index.setdefault(int(fields[1], 16), []).append(bytes.fromhex(fields[0]))
    except (ImportError, OSError):
        pass
    return by_index


def local_addresses() -> list[bytes]:
    """Packed addresses of this host's interfaces, last interface first as the JDK lists them.

    IPv4 comes from SIOCGIFADDR and IPv6 from /proc/net/if_inet6 (Linux); elsewhere, or if
    those fail, the addresses the host name resolves to.
    """
    by_index = _interface_addresses()
    if by_index:
        return [ip for index in sorted(by_index, reverse=True) for ip in by_index[index]]
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]).packed for info in infos]


def _month_start_ms(now_ms: int, months_back: int = 0) -> int:
    """Local-time start of the month containing ``now_ms``, moved back ``months_back`` months."""
    local = datetime.datetime.fromtimestamp(now_ms / 1000)
    month_index = local.year * 12 + local.month - 1 - months_back
    start = datetime.datetime(month_index // 12, month_index % 12 + 1, 1)
    return int(start.timestamp() * 1000)


class UniqueIdGenerator:
    """Creates UNIQ_KEY values for one process; ``next_id`` is thread-safe."""

    def __init__(
        self, ip: bytes | None = None, pid: int | None = None, salt: int | None = None
    ) -> None:
        if ip is None:
            ip = pick_client_ip(local_addresses())
        if ip is None:
            ip = _INT64.pack(now_millis())[4:]
        if len(ip) not in (4, 16):
            raise ValueError(f"a client IP is 4 or 16 bytes, not {len(ip)}")
        pid = os.getpid() if pid is None else pid
        salt = random.getrandbits(32) if salt is None else salt & 0xFFFFFFFF
        self.prefix = (ip + struct.pack(">HI", pid & 0xFFFF, salt)).hex().upper()
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._month_start = 0
        self._next_month_start = 0

    def _elapsed_in_month(self, now_ms: int) -> int:
        if now_ms >= self._next_month_start:
            with self._lock:
                if now_ms >= self._next_month_start:
                    self._month_start = _month_start_ms(now_ms)
                    self._next_month_start = _month_start_ms(now_ms, -1)
        elapsed = now_ms - self._month_start
        if -1_000_000 < elapsed < 0:
            return 0
        return elapsed & 0xFFFFFFFF

    def next_id(self) -> str:
        now_ms = now_millis()
        elapsed = self._elapsed_in_month(now_ms)
        return f"{self.prefix}{elapsed:08X}{next(self._counter) & 0xFFFF:04X}"


class UniqueIdInfo(NamedTuple):
    ip: str
    pid: int
    salt: int
    time_ms: int
    counter: int


def decode_unique_id(msg_id: str, now_ms: int | None = None) -> UniqueIdInfo:
    """Take a UNIQ_KEY apart; the time is rebuilt like Java's ``getNearlyTimeFromID``.

    Only the offset into a month is stored, so the month is assumed to be the current one
    (at ``now_ms``), or the previous one when that would put the time at or after ``now_ms``.
    """
    raw = _hex_bytes(msg_id, (32, 56), "unique message id")
    ip_len = 16 if len(raw) == 28 else 4
    pid, salt, elapsed, counter = struct.unpack_from(">HIIH", raw, ip_len)
    if now_ms is None:
        now_ms = now_millis()
    month_start = _month_start_ms(now_ms)
    if month_start + elapsed >= now_ms:
        month_start = _month_start_ms(now_ms, 1)
    return UniqueIdInfo(_ip_str(raw[:ip_len]), pid, salt, month_start + elapsed, counter)
