"""Flow control: the limits that keep what a peer can make an endpoint hold bounded.

A peer can drive a server's memory three ways, and each has a limit here:

* **bytes awaiting write.**  A peer that sends requests without reading the responses makes
  them pile up in the connection's write buffer.  Past ``write_buffer_high`` bytes the
  connection stops reading (no new requests are taken from it) until the buffer drains below
  ``write_buffer_low``: Netty's channel writability, applied to reading as Apache's
  flow control intends.  A writer waits while the buffer is over the mark, so the buffer
  holds at most the high mark plus one response.
* **requests in progress.**  Every request read becomes a running handler until its response
  is written.  At ``max_requests_per_connection`` on one connection, the connection is not
  read until one of them ends (a client that pipelines faster than the broker serves is
  slowed down, not refused).  Past ``max_requests_in_progress`` over the whole endpoint, a
  new request is answered at once with SYSTEM_BUSY and Apache's remark for a full processor
  queue (`OVERLOAD_REMARK`); a oneway request is dropped.  Long-polling pulls count while
  they are held, so the defaults leave room for a consumer with thousands of queues.
* **partial frames.**  A frame's length is checked against the maximum frame size before
  any of it is kept (see `frame.FrameSplitter`).  The bytes held in incomplete frames over
  all of an endpoint's connections are counted by `PartialFrameBudget`; past
  ``partial_frame_memory`` the connection whose incomplete frame is the oldest is closed
  with a WARNING line, until the total is under the limit again.

`FlowLimits` carries the numbers (``None`` turns a limit off); :func:`flow_limits` reads them
from a ``NettyServerConfig``: Apache's ``writeBufferHighWaterMark`` / ``writeBufferLowWaterMark``
when both are set (> 0, as Apache applies them), and the rmq-only keys
``serverMaxRequestsPerConnection``, ``serverMaxRequestsInProgress`` and
``serverPartialFrameMemoryLimit`` (each at least 1: a server's limits cannot be turned off
by a setting).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rmq.common import flowdefaults

if TYPE_CHECKING:
    from rmq.common.configobjects import NettyServerConfig

log = logging.getLogger("rmq.remoting")

OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
"""Apache's remark when a request finds its processor's queue full (NettyRemotingAbstract)."""

# The write buffer marks when writeBufferHighWaterMark / writeBufferLowWaterMark are not set.
DEFAULT_WRITE_BUFFER_HIGH = 4 * 1024 * 1024
DEFAULT_WRITE_BUFFER_LOW = 1024 * 1024


@dataclass(frozen=True)
class FlowLimits:
    """The numbers of one endpoint's flow control (``None``: no limit)."""

    write_buffer_high: int
    write_buffer_low: int
    max_requests_per_connection: int | None
    max_requests_in_progress: int | None
    partial_frame_memory: int | None

    def __post_init__(self) -> None:
        if not 0 <= self.write_buffer_low <= self.write_buffer_high:
            raise ValueError(
                f"write buffer marks {self.write_buffer_low}/{self.write_buffer_high}: "
                "expected 0 <= low <= high"
            )


def flow_limits(config: NettyServerConfig) -> FlowLimits:
    """The flow limits `config` sets."""
    high, low = config.write_buffer_high_water_mark, config.write_buffer_low_water_mark
    if high <= 0 or low <= 0:
        high, low = DEFAULT_WRITE_BUFFER_HIGH, DEFAULT_WRITE_BUFFER_LOW
    return FlowLimits(
        write_buffer_high=high,
        write_buffer_low=low,
        max_requests_per_connection=config.server_max_requests_per_connection,
        max_requests_in_progress=config.server_max_requests_in_progress,
        partial_frame_memory=config.server_partial_frame_memory_limit,
    )


DEFAULT_LIMITS = FlowLimits(
    write_buffer_high=DEFAULT_WRITE_BUFFER_HIGH,
    write_buffer_low=DEFAULT_WRITE_BUFFER_LOW,
    max_requests_per_connection=flowdefaults.MAX_REQUESTS_PER_CONNECTION,
    max_requests_in_progress=flowdefaults.MAX_REQUESTS_IN_PROGRESS,
    partial_frame_memory=flowdefaults.PARTIAL_FRAME_MEMORY_LIMIT,
)
"""The limits of a server whose config sets none of the keys (`flow_limits` of a default
NettyServerConfig), and of every client connection."""


class PartialFrameHolder(Protocol):
    """A connection as the budget sees it: something to close when it is over."""

    def abort_for(self, reason: str) -> None: ...


class PartialFrameBudget:
    """Counts the bytes held in incomplete frames per connection and closes the oldest
    holder while the total is over the limit."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.total = 0
        # connection -> bytes held; insertion order is the order its partial frame began.
        self._held: dict[PartialFrameHolder, int] = {}

    def update(self, holder: PartialFrameHolder, held: int) -> None:
        """`holder` now keeps `held` bytes of an incomplete frame (0: none)."""
        before = self._held.get(holder)
        if held == 0:
            if before is not None:
                self.total -= self._held.pop(holder)
            return
        if before is None:
            self._held[holder] = held
        else:
            self.total -= before
            self._held[holder] = held
        self.total += held
        self._enforce()

    def _enforce(self) -> None:
        while self.limit is not None and self.total > self.limit and self._held:
            oldest = next(iter(self._held))
            over = self.total
            self.update(oldest, 0)
            oldest.abort_for(
                f"incomplete frames on all connections hold {over} bytes, over the limit of "
                f"{self.limit} (serverPartialFrameMemoryLimit); this connection's is the oldest"
            )
