"""What config values look like: environment defaults, text rules and Java's getter rewrites.

The config classes (:mod:`rmq.common.configobjects`) declare each key with
:func:`rmq.common.configfields.setting`; what several keys share lives here:

* environment-dependent defaults, computed when a config object is built: ``$HOME/...``
  paths, the host name (the default ``brokerName``), the first non-loopback IPv4 address
  (``brokerIP1``/``brokerIP2``), the CPU count (thread pool sizes);
* :class:`~rmq.common.configfields.Rule` s for text keys: an IP address (``brokerIP1``, which
  every record carries packed), a host (an IP address or a host name: ``brokerIP2``,
  ``bindAddress``), ``host:port`` lists (``namesrvAddr``, ``haMasterAddress``), a topic name
  (``msgTraceTopicName``), hours of the day (``deleteWhen``), delay levels
  (``messageDelayLevel``);
* the rewrites Java's getters apply (a consume queue file holds whole 20-byte entries,
  ``diskMaxUsedSpaceRatio`` is used clamped to 10..95).
"""

import functools
import ipaddress
import os
import re
import socket
from pathlib import Path

from rmq.common.configfields import CONSUME_QUEUE_UNIT_SIZE, Rule
from rmq.common.delay import parse_delay_levels
from rmq.common.naming import TOPIC_MAX_LENGTH, VALID_NAME_PATTERN, topic_error

# ------------------------------------------------------------------- environment defaults


def home_path(*parts: str) -> str:
    """A path under the user's home directory."""
    return str(Path.home().joinpath(*parts))


def cpu_count() -> int:
    return os.cpu_count() or 1


@functools.cache
def local_host_name() -> str:
    """The host name (Java ``InetAddress.getLocalHost().getHostName()``), the default brokerName."""
    return socket.gethostname() or "DEFAULT_BROKER"


@functools.cache
def local_address() -> str:
    """The default ``brokerIP1``: a non-loopback IPv4 address of this host.

    Like Java's ``RemotingUtil.getLocalAddress``, an address outside ``127.0.*`` and
    ``192.168.*`` is preferred, then the last one found; candidates are the source address
    of the default route (no packet is sent) and the host name's addresses.  Falls back to
    ``127.0.0.1``.
    """
    candidates: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            candidates.append(probe.getsockname()[0])
        except OSError:
            pass
    try:
        infos = socket.getaddrinfo(local_host_name(), None, socket.AF_INET)
    except OSError:
        infos = []
    candidates.extend(str(info[4][0]) for info in infos)
    usable = [ip for ip in dict.fromkeys(candidates) if not ip.startswith("127.")]
    preferred = [ip for ip in usable if not ip.startswith("192.168")]
    if preferred:
        return preferred[0]
    return usable[-1] if usable else "127.0.0.1"


# ---------------------------------------------------------------------------- text rules

_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def is_ip_address(text: str) -> bool:
    """An IPv4 or IPv6 address (an IPv6 scope such as ``%eth0`` allowed)."""
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def is_host(text: str) -> bool:
    """An IP address or a host name; dotted numbers must be an IPv4 address."""
    if is_ip_address(text):
        return True
    labels = text.split(".")
    if all(label.isdigit() for label in labels):
        return False
    return len(text) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def _is_host_port(text: str) -> bool:
    host, _, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    # isdigit() alone also takes digits int() refuses, such as superscripts.
    return is_host(host) and port.isascii() and port.isdigit() and 0 < int(port) < 65536


def _is_host_port_list(text: str) -> bool:
    return all(_is_host_port(address) for address in text.split(";"))


def _is_hours(text: str) -> bool:
    hours = [part.strip() for part in text.split(";")]
    return all(hour.isascii() and hour.isdigit() and int(hour) < 24 for hour in hours)


def _is_delay_levels(text: str) -> bool:
    try:
        parse_delay_levels(text)
    except ValueError:
        return False
    return True


IP_ADDRESS = Rule(is_ip_address, "an IPv4 or IPv6 address")
HOST = Rule(is_host, "an IP address or a host name")
NAMESRV_ADDRS = Rule(_is_host_port_list, "host:port items separated by ';'")
HOST_PORT = Rule(_is_host_port, "host:port")
HOURS = Rule(_is_hours, "hours of the day 0..23 separated by ';' (e.g. 04 or 04;16)")
TOPIC = Rule(
    lambda text: topic_error(text) is None,
    f"a topic name: {VALID_NAME_PATTERN}, at most {TOPIC_MAX_LENGTH} characters",
)
DELAY_LEVELS = Rule(
    _is_delay_levels, "delays such as 1s 5m 2h separated by blanks (a number and s, m, h or d)"
)

# ------------------------------------------------------------------------ getter rewrites


def round_up_to_consume_queue_unit(size: int) -> int:
    """``getMappedFileSizeConsumeQueue``: a consume queue file holds whole entries."""
    return -(-size // CONSUME_QUEUE_UNIT_SIZE) * CONSUME_QUEUE_UNIT_SIZE


def clamp_disk_ratio(ratio: int) -> int:
    """``getDiskMaxUsedSpaceRatio``: the percentage is used within 10..95."""
    return min(max(ratio, 10), 95)
