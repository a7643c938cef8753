"""`rmq exporter`'s process: collection rounds on an event loop, `/metrics` over HTTP.

An `Exporter` owns a `MetricStore`, the collection loop and the HTTP server:

* `run(stop)` is a coroutine: with one `AdminClient`, a round (`rmq.console.collect`) at
  once and then every `interval` seconds after the previous one started (at once when a
  round took longer), until `stop` is set.  A round that fails as a whole (no name server
  answers) is logged and committed as an empty round, so the series age out after
  `expire_after` seconds like any series no round reports;
* `serve()` starts the standard library's `ThreadingHTTPServer` on its own thread: `GET
  /metrics` answers the store's text (Prometheus format 0.0.4), `GET /` a line pointing
  there, anything else 404 (other methods: the server's 501).  A scrape reads only the
  store, under its lock, so it never waits for the cluster (docs/decisions.md, "rmq
  exporter's HTTP server").  Nothing it serves comes from the profile or the credentials:
  `/metrics` holds cluster, broker, topic, group and client names and addresses, and
  figures, no secret;
* `close()` stops the HTTP server.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rmq.console.metrics import CONTENT_TYPE, DEFAULT_EXPIRE_AFTER, MetricStore, Round

log = logging.getLogger(__name__)

DEFAULT_PORT = 5557
"""rocketmq-exporter's port."""

DEFAULT_INTERVAL = 60.0
"""Seconds between the starts of two rounds: the exporter collects once a minute."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            status, kind, body = 200, CONTENT_TYPE, self.server.store.render().encode()
        elif path == "/":
            status, kind = 200, "text/plain; charset=utf-8"
            body = b"rmq exporter: the metrics are at /metrics\n"
        else:
            status, kind, body = 404, "text/plain; charset=utf-8", b"not found\n"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], store: MetricStore) -> None:
        self.store = store
        super().__init__(address, _Handler)


class Exporter:
    """Collection rounds into a store and the HTTP server of `/metrics` (module docstring)."""

    def __init__(
        self,
        namesrv_addrs: str,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        interval: float = DEFAULT_INTERVAL,
        expire_after: float = DEFAULT_EXPIRE_AFTER,
    ) -> None:
        self.namesrv_addrs = namesrv_addrs
        self.host = host
        self.port = port
        self.interval = interval
        self.store = MetricStore(expire_after)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def serve(self) -> tuple[str, int]:
        """Start the HTTP server on its thread; the address it listens on (OSError when the
        port cannot be bound)."""
        self._server = _Server((self.host, self.port), self.store)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-http", daemon=True
        )
        self._thread.start()
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        """Stop the HTTP server (its thread ends with it)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def run(self, stop: asyncio.Event) -> None:
        """Collection rounds until `stop` is set."""
        from rmq.client.admin import AdminClient
        from rmq.console.collect import collect_round

        async with AdminClient(self.namesrv_addrs) as admin:
            while not stop.is_set():
                started = time.monotonic()
                work = asyncio.create_task(collect_round(admin))
                stopped = asyncio.create_task(stop.wait())
                await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
                stopped.cancel()
                if stop.is_set():
                    work.cancel()
                    await asyncio.gather(work, return_exceptions=True)
                    return
                try:
                    collected = work.result()
                except Exception as exc:
                    log.warning("metrics round failed: %s", exc)
                    collected = Round()
                self.store.commit(collected)
                wait = max(0.0, self.interval - (time.monotonic() - started))
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                except TimeoutError:
                    continue
