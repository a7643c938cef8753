"""`rmq console`: a web console to look at and change the cluster in a browser.

    rmq console [-n NAMESRV] [--host 127.0.0.1] [--port 8080] [--interval 60s]
                [--users FILE | --insecure-no-login]
    rmq console user add NAME --role viewer|admin [--password-stdin] [--replace] [--users FILE]
    rmq console user delete NAME [--users FILE]
    rmq console user list [--users FILE] [-o FORMAT]

Runs `rmq.console.web.Console`: the pages (overview with TPS charts, cluster, topics,
consumer groups, producers, messages, message trace, dead letters), the changes an admin
makes from them, and `/metrics` on `--host:--port`, the TPS history and the metrics
collected every `--interval`.  When the server listens it prints one line to stderr with
its URL (the port it got with `--port 0`).  Stops on SIGTERM (exit 0) or Ctrl-C (exit
130); a port it cannot bind is an error (exit 1).

Logging in: with a users file (`--users FILE`, or the default file once `rmq console user
add` made it) every page asks for a login and each account is a viewer or an admin.
Without one there is no login, so the console listens on loopback only: a `--host` that is
not a loopback address is refused unless `--insecure-no-login` says the risk is taken.
"""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path
from typing import Annotated

import typer

from rmq.cli.errors import RmqError
from rmq.cli.main import command_app
from rmq.cli.output import OutputOption, render
from rmq.cli.serve import duration_seconds, serve_http
from rmq.cli.settings import NamesrvOption, resolve_namesrv

app = command_app(
    invoke_without_command=True,
    no_args_is_help=False,
)
user_app = command_app(help="Manage the console's accounts (the users file).")
app.add_typer(user_app, name="user")

DEFAULT_PORT = 8080

UsersOption = Annotated[
    Path | None,
    typer.Option(
        "--users",
        metavar="FILE",
        dir_okay=False,
        help="The users file (default: console-users.json beside the profile file).",
        show_default=False,
    ),
]


@app.callback()
def console(
    ctx: typer.Context,
    namesrv: NamesrvOption = None,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port (0: any free)."),
    ] = DEFAULT_PORT,
    interval: Annotated[
        str,
        typer.Option(
            "--interval",
            metavar="DURATION",
            help="Time between two TPS and metrics collections (10s, 1m).",
        ),
    ] = "60s",
    users: UsersOption = None,
    insecure_no_login: Annotated[
        bool,
        typer.Option(
            "--insecure-no-login",
            help="Listen on a non-loopback --host without a users file: anyone who reaches "
            "the port can change the cluster.",
        ),
    ] = False,
) -> int:
    """Serve a web console to look at the cluster: brokers, topics, groups, messages.

    Pages: an overview (each name server's status, broker and topic TPS charts collected
    every --interval while the console runs and kept under $XDG_STATE_HOME/rmq/console, so a
    restart keeps the day), the cluster (brokers, roles incl. DLedger term and committed
    index, replication, versions, TPS, runtime status and configuration), topics (kinds,
    status per queue, route, consumer groups), consumer groups (lag, clients, progress per
    queue), producers, messages (by topic and time range with paging, by key, by id; each with
    its properties, body and trace), dead letters (a group's DLQ by time range or id) and
    /metrics (the same series as rmq exporter).  Admins create, update and delete topics,
    send test messages and reset a group's offsets; a change that destroys or moves
    something shows what it will do first.  With a users file (--users, or the default one
    'rmq console user add' writes) every page asks for a login; without one the console
    listens on loopback only unless --insecure-no-login.  Stops on SIGTERM or Ctrl-C.
    """
    if ctx.invoked_subcommand is not None:
        return 0
    from rmq.console.users import Users, UsersError, default_users_path
    from rmq.console.web import Console

    every = duration_seconds(interval, "--interval")
    path = users if users is not None else default_users_path()
    try:
        accounts = Users.load(path, missing_ok=users is None)
    except UsersError as exc:
        raise RmqError(str(exc)) from None
    login = users is not None or bool(accounts.users)
    if login and insecure_no_login:
        raise RmqError(f"--insecure-no-login with accounts in {path}: drop one or the other")
    if not login and not insecure_no_login and not _loopback(host):
        raise RmqError(
            f"refusing to listen on {host or 'every address'} without a login",
            "add accounts (rmq console user add NAME --role admin) and pass --users, or "
            "pass --insecure-no-login",
        )
    served = Console(
        resolve_namesrv(namesrv),
        host=host,
        port=port,
        interval=every,
        users=accounts if login else None,
    )
    return serve_http(served, "console", host, port, "/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@user_app.command("add")
def add_user(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The account's name.")],
    role: Annotated[
        str, typer.Option("--role", metavar="viewer|admin", help="What the account may do.")
    ] = "viewer",
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="Read the password from stdin's first line."),
    ] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="Set a new password and role of an account.")
    ] = False,
    users: UsersOption = None,
) -> None:
    """Add an account to the console's users file (created, owner-only, if missing).

    The password is asked twice on a terminal, or read from stdin with --password-stdin;
    it is kept as its scrypt hash and never printed.  A viewer reads every page; an admin
    may also change the cluster.
    """
    from rmq.console.users import Users, UsersError, default_users_path

    path = users if users is not None else default_users_path()
    password = _password(password_stdin)
    try:
        accounts = Users.load(path, missing_ok=True)
        accounts.add(name, password, role, replace=replace)
        accounts.save()
    except UsersError as exc:
        raise RmqError(str(exc)) from None
    print(f"{name} ({role}) saved in {path}", file=sys.stderr)


def _password(from_stdin: bool) -> str:
    import getpass

    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise RmqError("no terminal to ask the password on", "pass --password-stdin")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise RmqError("the two passwords differ")
    return first


@user_app.command("delete")
def delete_user(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The account's name.")],
    users: UsersOption = None,
) -> None:
    """Delete an account from the console's users file (a running console ends its
    sessions at their next request)."""
    from rmq.console.users import Users, UsersError, default_users_path

    path = users if users is not None else default_users_path()
    try:
        accounts = Users.load(path)
        accounts.delete(name)
        accounts.save()
    except UsersError as exc:
        raise RmqError(str(exc)) from None


@user_app.command("list")
def list_users(users: UsersOption = None, output: OutputOption = None) -> None:
    """List the accounts of the console's users file: name and role (no password)."""
    from rmq.console.users import Users, UsersError, default_users_path

    path = users if users is not None else default_users_path()
    try:
        accounts = Users.load(path, missing_ok=users is None)
    except UsersError as exc:
        raise RmqError(str(exc)) from None
    rows = [{"name": name, "role": accounts.users[name].role} for name in sorted(accounts.users)]
    render(rows, columns=("name", "role"), output=output)
