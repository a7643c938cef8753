"""Loopback ports for the servers tests start, safe when test modules run in parallel.

A port asked of the kernel (bind to port 0) comes from its ephemeral range, the same range every
outgoing connection takes its local port from; between the probe's close and the server's bind,
another worker's client connection, or another worker's probe, may take it ("Address already in
use").  So the ports handed out here come from below that range (`LOW`..`HIGH`), which outgoing
connections never use, and each is claimed in a shared directory by a file created with O_EXCL
that names the claiming process: two test processes (pytest-xdist workers, or two pytest runs)
never hand out the same port while the first lives.  Claims of processes that are gone are taken
over.  A process hands out its ports in turn through the whole range before it comes back to
one, so a stopped server's port stays free for its restart.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
from collections.abc import Container, Iterable
from pathlib import Path

LOOPBACK = "127.0.0.1"
LOW, HIGH = 20_000, 32_000
"""Below Linux's default ephemeral range (net.ipv4.ip_local_port_range, 32768-60999)."""

_CLAIMS = Path(tempfile.gettempdir()) / "rmq-test-ports"
_next = LOW + random.SystemRandom().randrange(HIGH - LOW)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(port: int) -> bool:
    """Whether this process now holds `port`'s claim (a claim of a dead process is taken over)."""
    _CLAIMS.mkdir(exist_ok=True)
    path = _CLAIMS / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(path.read_text(encoding="ascii") or "0")
            except (OSError, ValueError):
                holder = 0
            if holder == os.getpid():
                return True  # handed out once already: only after a wrap-around, so long ago
            if holder and _alive(holder):
                return False
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w", encoding="ascii") as claim:
            claim.write(str(os.getpid()))
        return True
    return False


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _candidates(width: int) -> range:
    """The next run of `width` ports this process has not handed out, wrapping around."""
    global _next
    if _next + width > HIGH:
        _next = LOW
    start = _next
    _next += width
    return range(start, start + width)


def free_ports(width: int, avoid: Container[int] = ()) -> range:
    """`width` consecutive loopback ports, claimed by this process and free right now."""
    for _ in range(HIGH - LOW):
        ports = _candidates(width)
        if any(port in avoid for port in ports):
            continue
        if all(_claim(port) for port in ports) and all(_bindable(port) for port in ports):
            return ports
    raise AssertionError(f"no {width} consecutive free loopback ports in {LOW}..{HIGH}")


def claim_ports(ports: Iterable[int]) -> bool:
    """Whether this process now holds the claim of each of `ports` and each is free right now:
    for the ports a server derives from one handed out (a cluster layout's, from its base
    port), which another worker must not be handed while this one's servers start."""
    wanted = list(ports)
    return all(_claim(port) for port in wanted) and all(_bindable(port) for port in wanted)


def free_port(avoid: Container[int] = ()) -> int:
    """A TCP port on the loopback interface that nothing listens on right now, claimed by this
    process, and not one of `avoid` (the ports a server chosen but not started yet will bind)."""
    return free_ports(1, avoid)[0]


def free_broker_port() -> int:
    """A loopback port p for a broker's listenPort such that p - 2 (the fast port) and p + 1
    (the HA port) are free and claimed too."""
    return free_ports(4)[2]
