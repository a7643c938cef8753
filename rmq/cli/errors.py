"""The command line's error policy: one line on stderr, a documented exit code, no traceback.

Every failure a user sees is printed as exactly one line on stderr,

    rmq: error: <what failed>; <what to do>

and the process exits with one of the codes in `EXIT_STATUSES`: 1 when an operation was
attempted and failed, 2 when the command line or the configuration is invalid (click's usage
errors keep their 2), 130 when the user pressed Ctrl-C.  Tracebacks are printed only when
debugging is on (`rmq --debug` or `RMQ_DEBUG=1`), before the line.

Commands raise `RmqError` for failures they understand.  Lower layers raise their own
exceptions; `as_rmq_error` maps the common ones (click's, OSError and its connection and
timeout subclasses) to a clear message and a hint, and anything else to "unexpected error"
with a pointer to `--debug`.  `report` is the single place that prints and picks the code;
`rmq.cli.main.run` calls it for everything that escapes a command.

`option_value` turns a parser's ValueError into click's usage error naming the option.

Destructive commands (`delete`, `reset-offsets`, `clean-*`, `write-perm wipe`) take
`YesOption` and call `require_confirmation`: a terminal gets a yes/no prompt on stderr
(Ctrl-C there exits 130 like anywhere else), anything else must pass `--yes` (exit 2
otherwise), so a script never hangs on a prompt.

This module also configures logging, because `--debug` governs both: DEBUG records with
timestamps and logger names when debugging, otherwise only warnings and errors, each as a
short `rmq: warning: ...` line.  Logs always go to stderr so stdout stays clean for data.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Annotated, TextIO, TypeVar

import click
import typer

T = TypeVar("T")

PROG_NAME = "rmq"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success"),
    (EXIT_FAILURE, "the operation was attempted and failed (connection, I/O, server error)"),
    (
        EXIT_USAGE,
        "bad usage: unknown command or option, invalid value, unknown profile, "
        "malformed configuration",
    ),
    (EXIT_INTERRUPTED, "interrupted with Ctrl-C"),
)

DEBUG_ENV = "RMQ_DEBUG"
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
# click (and typer, a second time) append "Did you mean 'x'?" to unknown names.
_SUGGESTION = re.compile(r"(?P<what>.*?)\.? Did you mean (?P<names>[^?]*)\?", re.DOTALL)


class RmqError(Exception):
    """A failure the command understands: what failed, what to do, and the exit code."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = EXIT_FAILURE):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code

    def line(self) -> str:
        """The one line printed on stderr."""
        text = f"{PROG_NAME}: error: {self.message}"
        return f"{text}; {self.hint}" if self.hint else text


YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.", show_default=False)
]


def require_confirmation(action: str, *, yes: bool) -> None:
    """Gate for destructive commands: `action` ("delete profile 'x'") is asked about on a
    terminal and needs --yes anywhere else."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise RmqError(f"refusing to {action} without confirmation", "pass --yes", EXIT_USAGE)
    sys.stderr.write(f"{action[:1].upper()}{action[1:]}? [y/N]: ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise RmqError("cancelled; nothing was changed")


def option_value(parse: Callable[[str], T], text: str | None, option: str) -> T | None:
    """``parse(text)`` (None for None); its ValueError becomes click's usage error naming
    ``option`` (exit 2)."""
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=f"'{option}'") from None


def debug_from_env() -> bool:
    """True when RMQ_DEBUG asks for debugging (1, true, yes or on)."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() in _TRUE_WORDS


def as_rmq_error(exc: BaseException, *, debug: bool = False) -> RmqError:
    """Map any exception to the message and exit code a user should see."""
    if isinstance(exc, RmqError):
        return exc
    if isinstance(exc, click.UsageError):
        text = exc.format_message().strip()
        suggestion = _SUGGESTION.match(text)
        if suggestion:
            return RmqError(
                suggestion["what"], f"did you mean {suggestion['names']}?", exc.exit_code
            )
        hint = f"see '{exc.ctx.command_path} --help'" if exc.ctx else None
        return RmqError(_sentence(text), hint, exc.exit_code)
    if isinstance(exc, click.ClickException):
        return RmqError(_sentence(exc.format_message()), None, exc.exit_code)
    if isinstance(exc, click.Abort):
        return RmqError("aborted")
    from rmq.cli.tlsoptions import plain_refused

    refused = plain_refused(exc)
    if refused is not None:
        return refused
    if isinstance(exc, ConnectionError | TimeoutError):
        return RmqError(
            f"connection failed: {_describe_os_error(exc)}",
            "check that the server is running and that the address (-n/--namesrv) is right",
        )
    if isinstance(exc, FileNotFoundError):
        return RmqError(_describe_os_error(exc), "check the path")
    if isinstance(exc, PermissionError):
        return RmqError(_describe_os_error(exc), "check the file permissions")
    if isinstance(exc, OSError):
        return RmqError(_describe_os_error(exc))
    hint = None if debug else "run with --debug for a traceback"
    return RmqError(f"unexpected error: {type(exc).__name__}: {exc}", hint)


def exception_chain(
    exc: BaseException, server: str | None = None
) -> Iterator[tuple[str | None, BaseException]]:
    """`exc` and its causes, each failure of an `AdminError` among them with its own causes
    after it, each with the server an AdminError names it under (`server` for those outside
    any)."""
    from rmq.client.admin import AdminError

    error: BaseException | None = exc
    while error is not None:
        yield server, error
        if isinstance(error, AdminError):
            for addr, failure in error.failures.items():
                yield from exception_chain(failure, addr)
        error = error.__cause__


def report(exc: BaseException, *, debug: bool, stderr: TextIO | None = None) -> int:
    """Print `exc` following the policy and return the process exit code."""
    err = stderr if stderr is not None else sys.stderr
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        exc.show(err)
        return exc.exit_code
    if debug and not isinstance(exc, click.ClickException | click.Abort):
        traceback.print_exception(exc, file=err)
    error = as_rmq_error(exc, debug=debug)
    print(error.line(), file=err)
    return error.exit_code


def configure_logging(debug: bool) -> None:
    """Send log records to stderr: everything with details when debugging, else warnings."""
    import logging

    class ShortFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"{PROG_NAME}: {record.levelname.lower()}: {record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    if debug:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(ShortFormatter())
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING, handlers=[handler], force=True
    )


def _sentence(message: str) -> str:
    """Click's messages end with a full stop; ours continue with '; <hint>'."""
    return message.strip().rstrip(".")


def _describe_os_error(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return exc.strerror or str(exc) or type(exc).__name__
