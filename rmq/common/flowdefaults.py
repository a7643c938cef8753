"""The remoting server's flow-control defaults: the values of the rmq-only settings
`serverMaxRequestsPerConnection`, `serverMaxRequestsInProgress` and
`serverPartialFrameMemoryLimit` (rmq.common.configobjects.NettyServerConfig), and the limits
every connection without a server config uses (rmq.remoting.limits.DEFAULT_LIMITS), declared
once here so that a client gets them without importing the config objects."""

from __future__ import annotations

MAX_REQUESTS_PER_CONNECTION = 4096
"""Requests in progress on one connection at which it is no longer read."""
MAX_REQUESTS_IN_PROGRESS = 32768
"""Requests in progress on the whole server past which SYSTEM_BUSY answers."""
PARTIAL_FRAME_MEMORY_LIMIT = 128 * 1024 * 1024
"""Bytes of incomplete frames over all connections past which the oldest one's is closed."""
