"""Start real `rmq` processes for integration tests and stop them cleanly.

Every server under test is `python -m rmq [--debug] <command> ...` in its own process, with:

* HOME pointed at a per-test directory, so default paths (`~/namesrv/kvConfig.json`,
  `~/store`) never touch the real home;
* a free loopback port chosen by `free_port` (bind to port 0, read it, close);
* stdout and stderr captured in files next to HOME (`<name>.out`, `<name>.log`), so a
  failing test can show the server's log;
* readiness = the port accepts TCP connections (the process dying first is an error that
  shows its log).

`RmqProcess.stop()` sends SIGTERM and returns the exit code, `stop_cleanly()` also asserts
it is 0; `kill()` is the kill -9 of crash tests.  `RmqProcesses` (the `rmq_processes`
fixture in conftest.py) tracks what a test started and kills whatever is still running
when the test ends.  `start_namesrv` writes a namesrv.conf and starts `rmq namesrv -c`;
`start_broker` writes a broker.conf (loopback address, free port, small store files) and
starts `rmq broker -c`, and `start_standalone` starts `rmq standalone` on two free ports;
both wait until the broker is registered with its name server (GET_BROKER_CLUSTER_INFO lists
it), so a test never races the first registration.  Other servers are started the same way
through `RmqProcesses.start`.

`RemotingSession` talks to them from synchronous tests: rmq's own `RemotingClient` on a
private event loop, one request at a time; `send_header` is the header of a raw send.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import TracebackType

from rmq.common.properties import encode_properties
from rmq.common.sysflag import PULL_SUBSCRIPTION
from rmq.remoting.bodies import ClusterInfo
from rmq.remoting.client import RemotingClient
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.errors import RemotingError
from rmq.remoting.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from tests.cli_forkserver import run as cli_run
from tests.ports import LOOPBACK as LOOPBACK
from tests.ports import free_broker_port as free_broker_port
from tests.ports import free_port as free_port

SMALL_STORE_PROPS: Mapping[str, object] = {
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 30_000 * 20,
    "maxHashSlotNum": 50_000,
    "maxIndexNum": 200_000,
}
"""Store file sizes for tests: 16 MiB commitlog files, 30,000-entry consume queue files and
4 MiB index files instead of Apache's 1 GiB / 6 MB / 420 MB."""


def broker_ports(listen_port: int) -> range:
    """Every port a broker on `listen_port` binds: the fast port (listenPort - 2), listenPort
    and the HA port (listenPort + 1)."""
    return range(listen_port - 2, listen_port + 2)


def unique(prefix: str) -> str:
    """A fresh name: `prefix`, a dash and eight random hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def write_properties(path: Path, props: Mapping[str, object]) -> Path:
    """Write a `.properties` file (values with `str()`, booleans in Java's spelling)."""
    lines = []
    for key, value in props.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{key}={text}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


@dataclass
class RmqProcess:
    """One running `rmq` server process."""

    name: str
    args: tuple[str, ...]
    debug: bool
    popen: subprocess.Popen[bytes]
    port: int
    home: Path
    log_path: Path
    stdout_path: Path
    command: tuple[str, ...] = ()
    """The full argv when it is not `python -m rmq args...` (Apache's Java servers)."""

    @property
    def addr(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def rss_anon(self) -> int:
        """Anonymous resident memory in bytes (RssAnon of /proc/<pid>/status: mapped store
        files do not count)."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) << 10
        raise AssertionError(f"no RssAnon line for {self.name}")

    def open_files(self, kind: str = "") -> int:
        """How many descriptors the process holds open (/proc/<pid>/fd); with `kind`, only
        those whose link starts with it ("socket:" counts the connections and listeners)."""
        links = []
        for fd in Path(f"/proc/{self.popen.pid}/fd").iterdir():
            with contextlib.suppress(FileNotFoundError):  # closed meanwhile
                links.append(os.readlink(fd))
        return sum(link.startswith(kind) for link in links)

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        """Wait until `text` appears in the log; returns the log."""
        deadline = time.monotonic() + timeout
        while True:
            log = self.log_text()
            if text in log:
                return log
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: {text!r} not logged within {timeout}s\n{log}")
            time.sleep(0.05)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, wait for the exit, return the exit code (kill -9 after `timeout`)."""
        if self.running:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.name} did not stop within {timeout}s of SIGTERM\n{self.log_tail()}"
            ) from None

    def stop_cleanly(self, timeout: float = 15.0) -> None:
        """Stop with SIGTERM and assert exit code 0."""
        code = self.stop(timeout)
        assert code == 0, f"{self.name} exited with {code} after SIGTERM\n{self.log_tail()}"

    def kill(self) -> None:
        """kill -9 and reap."""
        if self.running:
            self.popen.kill()
        self.popen.wait()


def wait_until_listening(process: RmqProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not process.running:
            raise AssertionError(
                f"{process.name} exited with {process.popen.returncode} before listening\n"
                f"{process.log_text()}"
            )
        try:
            with socket.create_connection((LOOPBACK, process.port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise AssertionError(
                    f"{process.name} not listening on {process.addr} within {timeout}s\n"
                    f"{process.log_text()}"
                ) from None
            time.sleep(0.05)


@dataclass
class StandaloneProcess(RmqProcess):
    """A running `rmq standalone`: `port`/`addr` are the broker's, `namesrv_addr` the name
    server's."""

    namesrv_port: int = 0

    @property
    def namesrv_addr(self) -> str:
        return f"{LOOPBACK}:{self.namesrv_port}"


def registered_brokers(namesrv_addr: str, timeout: float = 5.0) -> dict[int, str]:
    """Broker id -> address of every broker the name server lists (GET_BROKER_CLUSTER_INFO),
    merged over all broker names."""
    with RemotingSession(timeout) as session:
        response = session.invoke(namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert response.code == ResponseCode.SUCCESS, response
    info = ClusterInfo.decode(response.body or b"{}")
    return {
        broker_id: addr
        for data in info.broker_addr_table.values()
        for broker_id, addr in data.broker_addrs.items()
    }


def wait_registered(
    namesrv_addr: str, broker_addr: str, timeout: float, process: RmqProcess | None = None
) -> None:
    """Wait until the name server lists `broker_addr` (fails early if `process` exits)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if broker_addr in registered_brokers(namesrv_addr).values():
                return
        except (RemotingError, OSError):
            pass
        if process is not None and not process.running:
            raise AssertionError(
                f"{process.name} exited with {process.popen.returncode} before registering\n"
                f"{process.log_text()}"
            )
        if time.monotonic() > deadline:
            log = process.log_tail() if process is not None else ""
            raise AssertionError(
                f"{broker_addr} not registered with {namesrv_addr} within {timeout}s\n{log}"
            )
        time.sleep(0.05)


def rmq_command(args: Sequence[str], *, debug: bool = False) -> list[str]:
    """The argv of `python -m rmq [--debug] args...` with this interpreter."""
    return [sys.executable, "-m", "rmq", *(["--debug"] if debug else []), *args]


def run_rmq_cli(
    args: Sequence[str],
    *,
    home: Path,
    input: bytes = b"",
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`rmq args...` to its end, HOME `home`, without the caller's RMQ_* and NAMESRV_ADDR
    (only those of `env`); stdout and stderr as text."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    clean.pop("NAMESRV_ADDR", None)
    done = cli_run(
        rmq_command(args),
        input=input,
        capture_output=True,
        timeout=timeout,
        env={**clean, "HOME": str(home), **(env or {})},
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


@dataclass
class RmqProcesses:
    """The processes one test started, in a directory of its own."""

    root: Path
    started: list[RmqProcess] = field(default_factory=list)

    def start(
        self,
        name: str,
        args: Sequence[str],
        *,
        port: int,
        home: Path | None = None,
        debug: bool = False,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = 20.0,
        command: Sequence[str] = (),
    ) -> RmqProcess:
        """Start `rmq args...` (or `command`, a full argv, when given) and wait until `port`
        accepts connections.

        `home` defaults to `<root>/<name>-home`.  The log files are appended to, so a
        restarted server's log follows the previous run's.
        """
        home = home if home is not None else self.root / f"{name}-home"
        home.mkdir(parents=True, exist_ok=True)
        log_path = self.root / f"{name}.log"
        stdout_path = self.root / f"{name}.out"
        with log_path.open("ab") as log, stdout_path.open("ab") as out:
            popen = subprocess.Popen(
                list(command) or rmq_command(args, debug=debug),
                stdout=out,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "HOME": str(home), **(env or {})},
            )
        process = RmqProcess(
            name, tuple(args), debug, popen, port, home, log_path, stdout_path, tuple(command)
        )
        self.started.append(process)
        wait_until_listening(process, ready_timeout)
        return process

    def restart(self, process: RmqProcess) -> RmqProcess:
        """Start a stopped process again: same command line, port and HOME."""
        assert not process.running, f"{process.name} is still running"
        return self.start(
            process.name,
            process.args,
            port=process.port,
            home=process.home,
            debug=process.debug,
            command=process.command,
        )

    def start_namesrv(
        self,
        name: str = "namesrv",
        *,
        props: Mapping[str, object] | None = None,
        debug: bool = False,
    ) -> RmqProcess:
        """`rmq namesrv -c <root>/<name>.conf` on a free loopback port.

        The conf sets `listenPort` and `bindAddress=127.0.0.1`; `props` adds or overrides
        keys (e.g. the rmq-only `scanNotActiveBrokerInterval`, `brokerChannelExpiredTime`).
        """
        port = free_port()
        conf = write_properties(
            self.root / f"{name}.conf",
            {"listenPort": port, "bindAddress": LOOPBACK, **(props or {})},
        )
        return self.start(name, ["namesrv", "-c", str(conf)], port=port, debug=debug)

    def start_broker(
        self,
        name: str = "broker",
        *,
        namesrv: RmqProcess | str | None,
        props: Mapping[str, object] | None = None,
        debug: bool = False,
        ready_timeout: float = 20.0,
        env: Mapping[str, str] | None = None,
    ) -> RmqProcess:
        """`rmq broker -c <root>/<name>.conf` on a free loopback port, registered with
        `namesrv` (a process or "host:port"; None: no name server); `env` adds environment
        variables.

        The conf sets `brokerName` = `name`, `brokerIP1` and `bindAddress` 127.0.0.1,
        `listenPort`, `namesrvAddr` and the small store sizes of `SMALL_STORE_PROPS`; the
        store is `<HOME>/store` (HOME is `<root>/<name>-home`).  `props` adds or overrides
        keys.  Returns once the name server lists the broker.
        """
        port = free_broker_port()
        namesrv_addr = namesrv.addr if isinstance(namesrv, RmqProcess) else namesrv
        conf_props: dict[str, object] = {
            "brokerName": name,
            "brokerIP1": LOOPBACK,
            "bindAddress": LOOPBACK,
            "listenPort": port,
            **SMALL_STORE_PROPS,
        }
        if namesrv_addr is not None:
            conf_props["namesrvAddr"] = namesrv_addr
        conf = write_properties(self.root / f"{name}.conf", {**conf_props, **(props or {})})
        process = self.start(
            name,
            ["broker", "-c", str(conf)],
            port=port,
            debug=debug,
            env=env,
            ready_timeout=ready_timeout,
        )
        if namesrv_addr is not None:
            wait_registered(namesrv_addr, process.addr, ready_timeout, process)
        return process

    def restart_broker(self, process: RmqProcess, namesrv: RmqProcess | str) -> RmqProcess:
        """Start a stopped broker again (same conf, port and HOME) and wait until `namesrv`
        lists it."""
        restarted = self.restart(process)
        namesrv_addr = namesrv.addr if isinstance(namesrv, RmqProcess) else namesrv
        wait_registered(namesrv_addr, restarted.addr, 20.0, restarted)
        return restarted

    def start_standalone(
        self,
        name: str = "standalone",
        *,
        props: Mapping[str, object] | None = None,
        args: Sequence[str] = (),
        debug: bool = False,
        ready_timeout: float = 20.0,
    ) -> StandaloneProcess:
        """`rmq standalone -c <root>/<name>.conf --namesrv-port N --broker-port M` on free
        loopback ports; the conf is that of `start_broker` (without `namesrvAddr`).
        `args` adds command-line options.  Returns once the broker is registered."""
        broker_port = free_broker_port()
        namesrv_port = free_port(avoid=broker_ports(broker_port))
        conf = write_properties(
            self.root / f"{name}.conf",
            {
                "brokerName": name,
                "brokerIP1": LOOPBACK,
                "bindAddress": LOOPBACK,
                **SMALL_STORE_PROPS,
                **(props or {}),
            },
        )
        argv = [
            "standalone",
            "-c",
            str(conf),
            "--namesrv-port",
            str(namesrv_port),
            "--broker-port",
            str(broker_port),
            *args,
        ]
        started = self.start(name, argv, port=broker_port, debug=debug, ready_timeout=ready_timeout)
        process = StandaloneProcess(
            **{item.name: getattr(started, item.name) for item in fields(started)},
            namesrv_port=namesrv_port,
        )
        self.started[self.started.index(started)] = process
        wait_registered(process.namesrv_addr, process.addr, ready_timeout, process)
        return process

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()


def send_header(
    topic: str,
    properties: Mapping[str, str],
    *,
    producer_group: str = "TestProducer",
    queue_id: int = 0,
    batch: bool = False,
) -> SendMessageRequestHeader:
    """The header of a SEND_MESSAGE(_V2) / SEND_BATCH_MESSAGE to `queue_id` of `topic`
    (auto-created from TBW102 with 4 queues), born now."""
    return SendMessageRequestHeader(
        producer_group=producer_group,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(dict(properties)),
        batch=batch,
    )


def pull_header(
    topic: str, consumer_group: str, *, queue_id: int = 0, queue_offset: int = 0
) -> PullMessageRequestHeader:
    """A PULL_MESSAGE of up to 32 messages of every tag, answered at once (no long polling),
    committing nothing."""
    return PullMessageRequestHeader(
        consumer_group=consumer_group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=queue_offset,
        max_msg_nums=32,
        sys_flag=PULL_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )


class RemotingSession:
    """Synchronous requests over rmq's `RemotingClient` (one pooled connection per address).

    Closing the session closes its connections, which is how a test makes a broker's
    connection to the name server go away.
    """

    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._client = RemotingClient()

    def invoke(
        self,
        addr: str,
        code: int,
        header: object | None = None,
        *,
        body: bytes | None = None,
        version: int | None = None,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send one request and return the response (`version` overrides rmq's 409)."""
        request = create_request(code, header, body=body)
        if version is not None:
            request.version = version
        return self.send(addr, request, timeout)

    def send(
        self, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Send a prepared request and return the response."""
        invocation = self._client.invoke(addr, request, timeout or self.timeout)
        return self._loop.run_until_complete(invocation)

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._client.close())
            self._loop.close()

    def __enter__(self) -> RemotingSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def queue_offset_ranges(
    broker_addr: str, topic: str, queue_ids: Iterable[int]
) -> dict[int, tuple[int, int]]:
    """Queue id -> (min, max) queue offset of each queue of `topic`, as the broker answers
    GET_MIN_OFFSET and GET_MAX_OFFSET."""
    ranges = {}
    with RemotingSession() as session:
        for queue_id in queue_ids:
            low = session.invoke(
                broker_addr,
                RequestCode.GET_MIN_OFFSET,
                GetMinOffsetRequestHeader(topic=topic, queue_id=queue_id),
            )
            high = session.invoke(
                broker_addr,
                RequestCode.GET_MAX_OFFSET,
                GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id),
            )
            assert low.code == high.code == ResponseCode.SUCCESS, (low, high)
            ranges[queue_id] = (
                low.read_header(GetMinOffsetResponseHeader).offset,
                high.read_header(GetMaxOffsetResponseHeader).offset,
            )
    return ranges
