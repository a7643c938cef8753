"""`rmq console` without a cluster: the port it cannot bind is a one-line error, `--port 0`
takes a free port and says which, a name server that does not answer shows as down on the
overview and as an error on the pages that need it (never a traceback), an unknown path is
404, and Ctrl-C stops it with 130."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.procs import rmq_command, run_rmq_cli


def test_port_in_use_is_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = run_rmq_cli(
            ["console", "-n", "127.0.0.1:1", "--port", str(port)], home=tmp_path, timeout=30
        )
    assert done.returncode == 1
    assert done.stderr.startswith(f"rmq: error: cannot listen on 127.0.0.1:{port}: ")
    assert len(done.stderr.splitlines()) == 1
    bad = run_rmq_cli(["console", "--interval", "soon"], home=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("rmq: error: --interval: ")


def test_a_silent_name_server_free_port_and_ctrl_c(tmp_path: Path) -> None:
    process = subprocess.Popen(
        rmq_command(["console", "-n", "127.0.0.1:1", "--port", "0", "--interval", "1h"]),
        stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)},
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert line.startswith("rmq console: serving http://127.0.0.1:"), line
        url = line.split("serving ", 1)[1].strip()
        with urllib.request.urlopen(url, timeout=30) as answer:
            overview = answer.read().decode()
        assert '127.0.0.1:1</td><td><span class="down">down: ' in overview
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(url + "topics", timeout=30)
        assert failed.value.code == 502
        page = failed.value.read().decode()
        assert "The cluster did not answer" in page and "Traceback" not in page
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "admin", timeout=30)
        assert missing.value.code == 404
        process.send_signal(signal.SIGINT)
        assert process.wait(15) == 130
    finally:
        process.kill()
        process.wait()
