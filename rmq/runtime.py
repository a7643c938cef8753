"""Running an rmq process: event loop, logging and shutdown on SIGTERM / Ctrl-C.

Every long-running rmq process is one asyncio event loop: the servers (name server, broker,
standalone) start their services, wait for a shutdown signal and stop them again, and the
client commands (produce, consume, request, reply, bench) run their loop until they are done
or a signal stops them.  This module owns the parts that are the same for all of them, and
imports nothing else of rmq, so servers and commands share it without the commands importing
a server (import-linter contracts in pyproject.toml):

* `setup_logging` sends log records to stderr in one format (time, level, logger, message);
  stdout stays free for what a command prints on purpose.
* `run_main` runs a process's main coroutine on uvloop when it is installed (the standard
  loop otherwise) and returns the process exit code.
* `shutdown_signals` catches SIGTERM and SIGINT while a process runs; when one arrives a
  server shuts down in order (stop accepting, close connections, persist state) and returns
  `exit_code_for(signal)`: 0 after SIGTERM, 130 after Ctrl-C (the shell's convention for
  an interrupted command).  `run_until_signal` is that whole life of one server that
  starts and stops (a name server's, a broker's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Protocol

LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s - %(message)s"

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def setup_logging(debug: bool = False) -> None:
    """Log to stderr at INFO, or at DEBUG when `debug` is set."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)


def exit_code_for(received: signal.Signals) -> int:
    """0 after a SIGTERM (an orderly stop), 128 + signal number otherwise (130 for Ctrl-C)."""
    return 0 if received == signal.SIGTERM else 128 + int(received)


@contextlib.contextmanager
def shutdown_signals() -> Iterator[asyncio.Future[signal.Signals]]:
    """Catch SIGTERM and SIGINT on the running loop while the block runs.

    Yields a future that resolves to the first of them delivered.  Enter the block before
    the server starts listening, so that a signal sent the moment the port opens is not
    lost.  After the first signal the handlers are removed, so a second Ctrl-C during a slow
    shutdown falls back to Python's default (KeyboardInterrupt).
    """
    loop = asyncio.get_running_loop()
    received: asyncio.Future[signal.Signals] = loop.create_future()

    def remove_handlers() -> None:
        for signum in SHUTDOWN_SIGNALS:
            loop.remove_signal_handler(signum)

    def on_signal(signum: signal.Signals) -> None:
        remove_handlers()
        if not received.done():
            received.set_result(signum)

    for signum in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        yield received
    finally:
        remove_handlers()


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_main(main: Coroutine[Any, Any, int]) -> int:
    """Run a process's main coroutine to completion and return its exit code."""
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)


class Server(Protocol):
    """A server that `run_until_signal` can run."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def run_until_signal(server: Server, log: logging.Logger) -> int:
    """Start `server`, wait for SIGTERM or Ctrl-C, stop it; returns the process exit code."""
    with shutdown_signals() as received:
        await server.start()
        signum = await received
        log.info("received %s, shutting down", signum.name)
        await server.stop()
    return exit_code_for(signum)
