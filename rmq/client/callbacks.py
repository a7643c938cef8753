"""The callbacks of the client's asynchronous calls: an async send's and an async request's.

`Producer.send_async` and `requestreply.request_async` both run a task and then call the
caller's `on_success(result)` or `on_exception(error)`; `run_callbacks` is that step, for
either.  It imports nothing of the client, so both may use it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ExceptionCallback", "run_callbacks"]

log = logging.getLogger("rmq.client")

ExceptionCallback = Callable[[BaseException], None]
T = TypeVar("T")


def run_callbacks(
    on_success: Callable[[T], None] | None,
    on_exception: ExceptionCallback | None,
    task: asyncio.Task[T],
    what: str,
) -> None:
    """Call `on_success(result)` or `on_exception(error)` for a finished `task` (neither when
    it was cancelled); a callback that raises is logged as `what` failed."""
    if task.cancelled():
        return
    error = task.exception()
    try:
        if error is None:
            if on_success is not None:
                on_success(task.result())
        elif on_exception is not None:
            on_exception(error)
    except Exception:
        log.exception("%s failed", what)
