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


def test_without_accounts_only_loopback_and_account_commands_refuse_bad_input(
    tmp_path: Path,
) -> None:
    refused = run_rmq_cli(["console", "-n", "127.0.0.1:1", "--host", "10.9.8.7"], home=tmp_path)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
    assert refused.stderr.startswith("rmq: error: refusing to listen on 10.9.8.7 without a login")
    assert "--insecure-no-login" in refused.stderr
    missing = run_rmq_cli(["console", "--users", str(tmp_path / "none.json")], home=tmp_path)
    assert missing.returncode == 1 and "no users file" in missing.stderr

    users = str(tmp_path / "users.json")
    listed = run_rmq_cli(["console", "user", "list", "-o", "json"], home=tmp_path)
    assert (listed.returncode, listed.stdout.strip()) == (0, "[]")
    no_tty = run_rmq_cli(["console", "user", "add", "ann", "--users", users], home=tmp_path)
    assert no_tty.returncode == 1 and "pass --password-stdin" in no_tty.stderr
    short = run_rmq_cli(
        ["console", "user", "add", "ann", "--password-stdin", "--users", users],
        home=tmp_path,
        input=b"short\n",
    )
    assert short.returncode == 1 and "at least 8 characters" in short.stderr
    added = run_rmq_cli(
        ["console", "user", "add", "ann", "--role", "admin", "--password-stdin", "--users", users],
        home=tmp_path,
        input=b"long enough\n",
    )
    assert added.returncode == 0, added.stderr
    both = run_rmq_cli(["console", "--users", users, "--insecure-no-login"], home=tmp_path)
    assert both.returncode == 1 and "drop one or the other" in both.stderr
    gone = run_rmq_cli(["console", "user", "delete", "bob", "--users", users], home=tmp_path)
    assert gone.returncode == 1 and "no user bob" in gone.stderr
    deleted = run_rmq_cli(["console", "user", "delete", "ann", "--users", users], home=tmp_path)
    assert deleted.returncode == 0
    listed = run_rmq_cli(["console", "user", "list", "--users", users, "-o", "json"], home=tmp_path)
    assert listed.stdout.strip() == "[]"


def test_without_accounts_a_change_still_needs_its_csrf_token(tmp_path: Path) -> None:
    process = subprocess.Popen(
        rmq_command(["console", "-n", "127.0.0.1:1", "--port", "0", "--interval", "1h"]),
        stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)},
    )
    try:
        assert process.stderr is not None
        url = process.stderr.readline().decode().split("serving ", 1)[1].strip()
        with urllib.request.urlopen(url + "trace", timeout=30) as answer:
            cookie = answer.headers["Set-Cookie"].split(";")[0]
            assert "HttpOnly" in answer.headers["Set-Cookie"]
        form = b"topic=T&body=x"
        request = urllib.request.Request(url + "topic/send", data=form)
        request.add_header("Cookie", cookie)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403
        assert "CSRF token is missing or wrong" in refused.value.read().decode()
        # a request without the cookie gets a new session, and still no token
        with pytest.raises(urllib.error.HTTPError) as fresh:
            urllib.request.urlopen(
                urllib.request.Request(url + "topic/send", data=form), timeout=30
            )
        assert fresh.value.code == 403
    finally:
        process.terminate()
        assert process.wait(15) == 0


def test_name_servers_are_switched_only_among_the_configured_ones(tmp_path: Path) -> None:
    process = subprocess.Popen(
        rmq_command(
            ["console", "-n", "127.0.0.1:1;127.0.0.1:2", "--port", "0", "--interval", "1h"]
        ),
        stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)},
    )
    try:
        assert process.stderr is not None
        url = process.stderr.readline().decode().split("serving ", 1)[1].strip()
        opener = urllib.request.build_opener(NoRedirect)

        def overview() -> tuple[str, str, str]:
            with opener.open(
                urllib.request.Request(url, headers={"Cookie": cookie}), timeout=60
            ) as answer:
                page = answer.read().decode()
            token = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            rows = page.split("<h2>Name servers</h2>", 1)[1].split("</table>", 1)[0]
            in_use = rows.split("in use", 1)[0].rsplit("<tr><td>", 1)[1].split("<", 1)[0]
            return page, token, in_use

        cookie = ""
        with opener.open(url, timeout=60) as first:
            cookie = first.headers["Set-Cookie"].split(";")[0]
        _, token, in_use = overview()
        assert in_use == "127.0.0.1:1"

        def use(addr: str) -> int:
            form = f"addr={addr}&csrf={token}".encode()
            request = urllib.request.Request(
                url + "namesrv/use", data=form, headers={"Cookie": cookie}
            )
            try:
                with opener.open(request, timeout=60) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as error:
                return error.code

        assert use("127.0.0.1:2") == 303
        assert overview()[2] == "127.0.0.1:2"
        assert use("10.1.2.3:9876") == 400  # never a server it was not given
        assert overview()[2] == "127.0.0.1:2"
    finally:
        process.terminate()
        assert process.wait(15) == 0


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
