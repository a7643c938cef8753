"""A fork server for the suites' `rmq` command runs: each run a process of its own, without
paying the CLI's imports each time.

A test run makes about two thousand `python -m rmq ...` calls that run to their end; most of
each call's CPU time (about 0.2 of 0.3 s) is the interpreter start and the imports of the
command, the client and rich, the same every time.  `ForkServer` starts one helper process per
test worker that imports all of that once (`PRELOADED`) and waits on a Unix socket; each run
is forked from it:

* the client (`ForkServer.run`) sends the argv, the environment and the working directory,
  with three file descriptors (stdin, stdout and stderr: pipes, as `subprocess.run` gives a
  child), and reads the outputs until they close;
* the server forks a watcher, which forks the run: the run takes the descriptors as 0, 1 and
  2, the environment, the directory and the argv, and calls `rmq.cli.main.main` as
  `python -m rmq` does, ending as that interpreter would (other threads joined, atexit
  handlers, flushes, exit code) but without tearing the preloaded modules down (`_end_run`);
* the watcher sends the run's pid, then its return code as `subprocess` gives it (negative
  for a signal) and its CPU time (`ForkServer.cpu` adds them up for tests/cpu_report.py);
  when the client goes away first (its test timed out and closed the connection) the watcher
  kills the run.

So a run is a real process with its own descriptors, environment, directory and exit, as
with `subprocess.run`; what it does not redo is Python's start-up and the imports.  A run
falls back to `subprocess.run` wherever that could show: an environment that differs from the
server's in what is read at interpreter start or import (`IMPORT_TIME_ENV`, `PYTHON*`), shell
completion requests (their tests measure imports), and when the server cannot start.  The
server ignores its own SIGINT (a Ctrl-C of the test run reaches the runs through their
process group) and ends when the worker that started it ends (its stdin closes).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import locale
import os
import pkgutil
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

PRELOADED = ("asyncio", "rich.console", "rich.table", "rich.text")
"""What the server imports beyond every module of `PRELOADED_PACKAGES`."""

PRELOADED_PACKAGES = ("rmq.cli", "rmq.client", "rmq.remoting", "rmq.common")
"""The packages the server imports whole: every command module and what the commands import
inside their functions (the servers, the store, the console and Spark are left out: few
runs load them)."""

IMPORT_TIME_ENV = frozenset(
    {
        "RMQ_PURE_PYTHON",
        "_RMQ_COMPLETE",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TERMINAL_WIDTH",
        "FORCE_COLOR",
        "PY_COLORS",
        "GITHUB_ACTIONS",
        "TYPER_USE_RICH",
        "TYPER_STANDARD_TRACEBACK",
        "_TYPER_STANDARD_TRACEBACK",
        "_TYPER_FORCE_DISABLE_TERMINAL",
    }
)
"""Variables read when the interpreter starts or a module is imported: a run whose value of
one differs from the server's must start afresh."""

_START_ENV = dict(os.environ)
"""The environment the server starts with: the worker's at its start (tests change their
own later)."""

_PID = struct.Struct(">q")
_STATUS = struct.Struct(">id")
_LENGTH = struct.Struct(">I")


def _import_time_values(env: Mapping[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in env.items()
        if key in IMPORT_TIME_ENV or key.startswith("PYTHON")
    }


# -- the server ----------------------------------------------------------------------------


def _preload() -> None:
    for name in PRELOADED:
        importlib.import_module(name)
    for package in PRELOADED_PACKAGES:
        path = importlib.import_module(package).__path__
        for module in pkgutil.walk_packages(path, f"{package}."):
            importlib.import_module(module.name)
    if threading.active_count() != 1:
        raise SystemExit("cli_forkserver: a preloaded module started a thread")


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _receive_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, _LENGTH.size, 3)
    if len(head) < _LENGTH.size:
        head += _recv_exact(conn, _LENGTH.size - len(head))
    (length,) = _LENGTH.unpack(head)
    return json.loads(_recv_exact(conn, length)), fds


def _watch(conn: socket.socket, run_pid: int) -> None:
    """The watcher: send the run's pid, wait for its end or the client's, send its code."""
    conn.sendall(_PID.pack(run_pid))
    pidfd = os.pidfd_open(run_pid)
    with selectors.DefaultSelector() as selector:
        selector.register(conn, selectors.EVENT_READ)
        selector.register(pidfd, selectors.EVENT_READ)
        while True:
            ready = {key.fd for key, _ in selector.select()}
            if pidfd in ready:
                break
            if not conn.recv(64):  # the client went away: the run goes too
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run_pid, signal.SIGKILL)
                selector.unregister(conn)
    _pid, status, usage = os.wait4(run_pid, 0)
    with contextlib.suppress(OSError):
        conn.sendall(
            _STATUS.pack(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
        )


def _become_run(request: dict[str, object], fds: list[int]) -> None:
    """In the forked run: take the request's descriptors, environment, directory, argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(request["cwd"]))
    argv = request["argv"]
    assert isinstance(argv, list)
    sys.argv = ["rmq", *argv]
    signal.signal(signal.SIGINT, signal.default_int_handler)


def serve(path: str) -> dict[str, object] | None:
    """Serve on `path` until stdin closes; returns a request in a forked run (else None)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is not listener:
                return None  # the worker ended
            conn, _addr = listener.accept()
            try:
                request, fds = _receive_request(conn)
            except (EOFError, OSError, ValueError):
                conn.close()
                continue
            if os.fork() == 0:  # the watcher
                selector.close()
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                run_pid = os.fork()
                if run_pid == 0:
                    conn.close()
                    _become_run(request, fds)
                    return request
                for fd in fds:
                    os.close(fd)
                try:
                    _watch(conn, run_pid)
                finally:
                    os._exit(0)
            conn.close()
            for fd in fds:
                os.close(fd)


def _main() -> None:
    _preload()
    gc.freeze()  # the preloaded objects stay out of the runs' collections (no copied pages)
    if serve(sys.argv[1]) is None:
        return
    from rmq.cli.main import main

    code: object = 0
    try:
        main()
    except SystemExit as end:
        code = end.code
    os._exit(_end_run(code))


def _end_run(code: object) -> int:
    """What the interpreter does at its end (other threads joined, atexit handlers, flushed
    stdio), without tearing down the preloaded modules; the exit status of `code` as
    SystemExit gives it."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr, flush=True)
    return 1


# -- the client ----------------------------------------------------------------------------


class ForkServer:
    """One worker's fork server, started on first use (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._path = ""
        self._env: dict[str, str] = {}
        self._failed = False
        self.cpu = 0.0
        self.last_pid = 0
        """The pid of the latest run (for tests of this module)."""
        """The CPU time of the runs that ended (they are not this process's children)."""

    def _server(self) -> str | None:
        with self._lock:
            if self._failed:
                return None
            if self._process is None or self._process.poll() is not None:
                directory = tempfile.mkdtemp(prefix="rmq-forkserver-")
                self._path = os.path.join(directory, "socket")
                self._env = _START_ENV
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "tests.cli_forkserver", self._path],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=self._env,
                    cwd=Path(__file__).resolve().parent.parent,
                )
                atexit.register(self.close)
                assert self._process.stdout is not None
                if self._process.stdout.readline() != b"ready\n":
                    self._failed = True
                    self._process.kill()
                    self._process.wait()
                    return None
            return self._path

    def serves(self, env: Mapping[str, str]) -> bool:
        """Whether a run with `env` can be forked (else it must start afresh)."""
        return self._server() is not None and _import_time_values(env) == _import_time_values(
            self._env
        )

    def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str] | None = None,
        input: bytes = b"",
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """`rmq args...` forked from the server: its return code, stdout and stderr, as
        `subprocess.run([sys.executable, "-m", "rmq", *args], capture_output=True, ...)`
        gives them (TimeoutExpired after killing it)."""
        path = self._server()
        assert path is not None, "the fork server is not running: check serves() first"
        request = json.dumps(
            {"argv": list(args), "env": dict(env), "cwd": os.fspath(cwd or os.getcwd())}
        ).encode()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            socket.send_fds(conn, [_LENGTH.pack(len(request))], [in_r, out_w, err_w])
            conn.sendall(request)
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        try:
            (pid,) = _PID.unpack(_recv_exact(conn, _PID.size))
            self.last_pid = pid
            deadline = None if timeout is None else time.monotonic() + timeout
            out, err = _communicate(in_w, out_r, err_r, input, deadline)
            if out is None or err is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired([sys.executable, "-m", "rmq", *args], timeout or 0)
            conn.settimeout(None if deadline is None else max(deadline - time.monotonic(), 1))
            code, cpu = _STATUS.unpack(_recv_exact(conn, _STATUS.size))
        finally:
            conn.close()
        with self._lock:
            self.cpu += cpu
        return subprocess.CompletedProcess(["rmq", *args], code, out, err)

    def close(self) -> None:
        with self._lock:
            if self._process is not None:
                assert self._process.stdin is not None
                self._process.stdin.close()
                self._process.wait(timeout=10)
                with contextlib.suppress(OSError):
                    os.unlink(self._path)
                    os.rmdir(os.path.dirname(self._path))
                self._process = None


SERVER = ForkServer()
"""This process's fork server."""

_RUN_OPTIONS = frozenset({"capture_output", "input", "env", "cwd", "timeout", "text", "check"})


@overload
def run(
    argv: Sequence[str] | str, *, text: Literal[True], **options: Any
) -> subprocess.CompletedProcess[str]: ...


@overload
def run(
    argv: Sequence[str] | str, *, text: Literal[False] = False, **options: Any
) -> subprocess.CompletedProcess[bytes]: ...


def run(
    argv: Sequence[str] | str, *, text: bool = False, **options: Any
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(argv, **options)`, forked from `SERVER` when `argv` is `python -m rmq
    ...` with this interpreter, its output captured and nothing else asked of it than
    `input`, `env`, `cwd`, `timeout`, `text`, `check` and stdin=DEVNULL."""
    if text:
        options["text"] = True
    if isinstance(argv, str):  # a shell command line
        return subprocess.run(argv, **options)
    argv = list(argv)
    wanted = dict(options)
    if wanted.get("stdin", subprocess.DEVNULL) is subprocess.DEVNULL:
        wanted.pop("stdin", None)
    if wanted.get("stdout") is subprocess.PIPE and wanted.get("stderr") is subprocess.PIPE:
        del wanted["stdout"], wanted["stderr"]
        wanted["capture_output"] = True
    env = wanted.get("env")
    env = dict(os.environ if env is None else env)
    if (
        argv[:3] != [sys.executable, "-m", "rmq"]
        or not wanted.pop("capture_output", False)
        or not _RUN_OPTIONS.issuperset(wanted)
        or not SERVER.serves(env)
    ):
        return subprocess.run(argv, **options)
    data = wanted.get("input") or b""
    if isinstance(data, str):
        data = data.encode(locale.getpreferredencoding(False))
    done: subprocess.CompletedProcess[Any] = SERVER.run(
        argv[3:], env=env, cwd=wanted.get("cwd"), input=data, timeout=wanted.get("timeout")
    )
    done.args = argv
    if text:
        done = subprocess.CompletedProcess(
            argv, done.returncode, _text(done.stdout), _text(done.stderr)
        )
    if wanted.get("check"):
        done.check_returncode()
    return done


def _text(data: bytes) -> str:
    """What a text-mode pipe of `subprocess` reads: the locale's encoding, universal newlines."""
    decoded = data.decode(locale.getpreferredencoding(False))
    return decoded.replace("\r\n", "\n").replace("\r", "\n")


def _communicate(
    in_w: int, out_r: int, err_r: int, data: bytes, deadline: float | None
) -> tuple[bytes | None, bytes | None]:
    """Write `data` to the run's stdin and read its stdout and stderr to their ends; None,
    None at the deadline.  Closes the three descriptors."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    view = memoryview(data)
    os.set_blocking(in_w, False)
    selector = selectors.DefaultSelector()
    try:
        if view:
            selector.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
            in_w = -1
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None, None
            for key, _ in selector.select(left):
                if key.fd == in_w:
                    try:
                        view = view[os.write(in_w, view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        selector.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    chunks[key.fd].append(chunk)
                else:
                    selector.unregister(key.fd)
        return b"".join(chunks[out_r]), b"".join(chunks[err_r])
    finally:
        selector.close()
        for fd in (in_w, out_r, err_r):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)


if __name__ == "__main__":
    _main()
