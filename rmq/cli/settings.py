"""Where the command line's settings come from: flags, environment, a TOML profile, defaults.

Every setting is resolved in the same order, by `resolve`:

    1. the command-line flag (`-n/--namesrv`, `-o/--output`, ...)
    2. the environment (`RMQ_NAMESRV`, then RocketMQ's own `NAMESRV_ADDR`; `RMQ_<NAME>` for others)
    3. the selected profile in the profile file
    4. the built-in default (name server `127.0.0.1:9876`)

and stops at the first source that has a value; the result remembers its source so that
`rmq profile show` can tell the user where a value came from.  The file is read only when
steps 1 and 2 came up empty, so a broken file never gets in the way of an explicit flag.

The profile file is TOML, read with the standard library's tomllib:

    current = "prod"

    [profiles.prod]
    namesrv = "10.0.0.1:9876;10.0.0.2:9876"

    [profiles.local]
    namesrv = "127.0.0.1:9876"

Its path is `$RMQ_CONFIG` if set, else `$XDG_CONFIG_HOME/rmq/rmq.toml`, else
`~/.config/rmq/rmq.toml`.  The profile in use is the one named by `rmq --profile NAME`, else
`$RMQ_PROFILE`, else `current`; naming a profile the file does not define is a usage error.
`save_config` rewrites the whole file atomically (temporary file, fsync, rename) and keeps
keys it does not know, but not comments.

Invalid configuration (a bad address from any source, a malformed file, an unknown profile)
is reported as an `RmqError` with exit code 2 and names the source that held the bad value.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from rmq.cli.errors import DEBUG_ENV, EXIT_USAGE, RmqError

CONFIG_ENV = "RMQ_CONFIG"
PROFILE_ENV = "RMQ_PROFILE"
NAMESRV_ENVS = ("RMQ_NAMESRV", "NAMESRV_ADDR")
OUTPUT_ENV = "RMQ_OUTPUT"
DEFAULT_NAMESRV = "127.0.0.1:9876"

ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("RMQ_NAMESRV", "name server address(es), host:port[;host:port]; beats NAMESRV_ADDR"),
    ("NAMESRV_ADDR", "RocketMQ's name server variable, used when RMQ_NAMESRV is unset"),
    (PROFILE_ENV, "the profile to use when --profile is not given (beats 'current')"),
    (CONFIG_ENV, "path of the profile file"),
    ("XDG_CONFIG_HOME", "the profile file is $XDG_CONFIG_HOME/rmq/rmq.toml when set"),
    (OUTPUT_ENV, "default for -o/--output: table, wide, json, ndjson or yaml"),
    ("RMQ_ACCESS_KEY", "ACL access key of cluster commands (--access-key)"),
    ("RMQ_SECRET_KEY", "ACL secret key of cluster commands (--secret-key)"),
    ("RMQ_SECURITY_TOKEN", "ACL security token sent with the access key, if any"),
    ("RMQ_TLS", "1 or true: cluster commands connect over TLS (--tls)"),
    ("RMQ_TLS_CA", "CA certificates (PEM) the server must be vouched for by (--tls-ca)"),
    (DEBUG_ENV, "1 turns on --debug: tracebacks and DEBUG logging on stderr"),
    ("NO_COLOR", "any value turns off colour in tables"),
)

_PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_HOST = re.compile(r"[A-Za-z0-9._\-:\[\]%]+")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_FILE_HEADER = "# rmq profiles: edit with 'rmq profile set|use|delete' or by hand.\n"

NAMESRV_HELP = (
    "Name server address(es). Default: $RMQ_NAMESRV, $NAMESRV_ADDR, the active "
    f"profile, then {DEFAULT_NAMESRV}."
)
"""The help of the shared -n/--namesrv option, by which rmq.cli.credentials finds the
commands that talk to a cluster."""

NamesrvOption = Annotated[
    str | None,
    typer.Option(
        "--namesrv",
        "-n",
        metavar="HOST:PORT[;HOST:PORT]",
        help=NAMESRV_HELP,
        show_default=False,
    ),
]


@dataclass(frozen=True)
class Resolved:
    """A setting's value and where it came from ("--namesrv", "NAMESRV_ADDR", "default", ...)."""

    value: str
    source: str


@dataclass
class ConfigFile:
    """The parsed profile file: its path and its TOML data (empty when the file is missing)."""

    path: Path
    data: dict[str, Any]

    @property
    def current(self) -> str | None:
        value = self.data.get("current")
        return value if isinstance(value, str) else None

    @current.setter
    def current(self, name: str | None) -> None:
        if name is None:
            self.data.pop("current", None)
        else:
            self.data["current"] = name

    @property
    def profiles(self) -> dict[str, dict[str, Any]]:
        profiles: dict[str, dict[str, Any]] = self.data.get("profiles", {})
        return profiles

    def put(self, name: str, key: str, value: str) -> bool:
        """Set `key` in profile `name`, creating the profile; True when it was created."""
        profiles = self.data.setdefault("profiles", {})
        created = name not in profiles
        profiles.setdefault(name, {})[key] = value
        return created

    def remove(self, name: str) -> None:
        """Delete profile `name` and forget it as `current`."""
        del self.profiles[name]
        if self.current == name:
            self.current = None


def config_path() -> Path:
    """The profile file's path: $RMQ_CONFIG, $XDG_CONFIG_HOME/rmq/rmq.toml, ~/.config/..."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "rmq" / "rmq.toml"


def load_config(path: Path | None = None) -> ConfigFile:
    """Read and check the profile file; a missing file is an empty configuration."""
    path = path if path is not None else config_path()
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ConfigFile(path, {})
    except UnicodeDecodeError as exc:
        raise _config_error(path, f"not UTF-8 ({exc.reason})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _config_error(path, str(exc)) from exc
    if "current" in data and not isinstance(data["current"], str):
        raise _config_error(path, "'current' must be a string")
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict) or not all(isinstance(p, dict) for p in profiles.values()):
        raise _config_error(path, "'profiles' must hold one [profiles.NAME] table per profile")
    return ConfigFile(path, data)


def save_config(config: ConfigFile) -> None:
    """Write the profile file atomically, readable only by its owner."""
    text = _FILE_HEADER + dump_toml(config.data, config.path)
    target = Path(os.path.realpath(config.path))
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def context_profile_flag() -> str | None:
    """The value of the root `--profile` option of the command being run, if any."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    value = ctx.find_root().params.get("profile")
    return value if isinstance(value, str) else None


def select_profile(
    config: ConfigFile, profile_flag: str | None = None, *, flag: str = "--profile"
) -> Resolved | None:
    """The profile in use: `profile_flag` (default: `rmq --profile`), $RMQ_PROFILE, `current`."""
    if profile_flag is None:
        profile_flag = context_profile_flag()
    candidates = (
        (profile_flag, flag),
        (os.environ.get(PROFILE_ENV), PROFILE_ENV),
        (config.current, f"'current' in {config.path}"),
    )
    for name, source in candidates:
        if name:
            if name not in config.profiles:
                raise RmqError(
                    f"profile {name!r} (from {source}) is not defined in {config.path}",
                    "run 'rmq profile list' to see the profiles, or "
                    "'rmq profile set NAME --namesrv HOST:PORT' to create one",
                    EXIT_USAGE,
                )
            return Resolved(name, source)
    return None


def resolve(
    flag_value: str | None,
    *,
    flag: str,
    envs: Sequence[str],
    key: str | None,
    default: str,
    profile_flag: str | None = None,
) -> Resolved:
    """Resolve one setting: flag > environment (`envs` in order) > profile `key` > default."""
    if flag_value is not None:
        return Resolved(flag_value, flag)
    for env in envs:
        value = os.environ.get(env)
        if value:
            return Resolved(value, env)
    if key is not None:
        config = load_config()
        selected = select_profile(config, profile_flag)
        if selected is not None:
            value = config.profiles[selected.value].get(key)
            if isinstance(value, bool):  # a TOML boolean (`tls = true`)
                value = "true" if value else "false"
            if value is not None:
                if not isinstance(value, str):
                    raise _config_error(
                        config.path, f"{key} in profile {selected.value!r} must be a string"
                    )
                return Resolved(value, f"profile {selected.value!r}")
    return Resolved(default, "default")


def namesrv_setting(flag_value: str | None = None, *, profile_flag: str | None = None) -> Resolved:
    """The name server address list to use, validated, with its source."""
    setting = resolve(
        flag_value,
        flag="--namesrv",
        envs=NAMESRV_ENVS,
        key="namesrv",
        default=DEFAULT_NAMESRV,
        profile_flag=profile_flag,
    )
    resolved = Resolved(validate_namesrv(setting.value, setting.source), setting.source)
    _namesrv_sources[resolved.value] = resolved.source
    return resolved


_namesrv_sources: dict[str, str] = {}
"""Where each name server list this process resolved came from, for `namesrv_origin`."""


def resolve_namesrv(flag_value: str | None) -> str:
    """The name server address list (`host:port[;host:port]`) a command should talk to."""
    return namesrv_setting(flag_value).value


def namesrv_origin(addr: str) -> str:
    """`addr` (a name server list, or one address of one) with where it came from when that
    was not the -n flag: "127.0.0.1:9876 (from profile 'dev')", "... (from NAMESRV_ADDR)",
    "... (the default)"; for the errors a wrong address causes."""
    for addrs, source in _namesrv_sources.items():
        if addr == addrs or addr in addrs.split(";"):
            if source == "default":
                return f"{addr} (the default)"
            if source != "--namesrv":
                return f"{addr} (from {source})"
    return addr


def validate_namesrv(value: str, source: str) -> str:
    """Check a `host:port[;host:port]` list and return it without stray blanks."""
    addresses = [part.strip() for part in value.split(";") if part.strip()]
    bad = [address for address in addresses if not _is_host_port(address)]
    if bad or not addresses:
        raise RmqError(
            f"invalid name server address {(bad[0] if bad else value)!r} from {source}",
            "use host:port, several separated by ';' (e.g. 10.0.0.1:9876;10.0.0.2:9876)",
            EXIT_USAGE,
        )
    return ";".join(addresses)


def validate_profile_name(name: str) -> str:
    """Profile names are letters, digits, '_', '.' and '-', starting with a letter or digit."""
    if not _PROFILE_NAME.fullmatch(name):
        raise RmqError(
            f"invalid profile name {name!r}",
            "use letters, digits, '_', '.' and '-', starting with a letter or digit",
            EXIT_USAGE,
        )
    return name


def dump_toml(data: Mapping[str, Any], path: Path) -> str:
    """TOML text for `data` (tables, scalars, arrays of scalars), as tomllib would read it."""
    lines: list[str] = []
    _dump_table(data, (), lines, path)
    return "\n".join(lines).lstrip("\n") + "\n"


def _dump_table(
    table: Mapping[str, Any], keys: tuple[str, ...], lines: list[str], path: Path
) -> None:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    if keys and (scalars or not tables):
        lines += ["", f"[{'.'.join(_toml_key(k) for k in keys)}]"]
    for key, value in scalars:
        lines.append(f"{_toml_key(key)} = {_toml_value(value, (*keys, key), path)}")
    for key, value in tables:
        _dump_table(value, (*keys, key), lines, path)


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_value(value: Any, keys: tuple[str, ...], path: Path) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list) and not any(isinstance(v, dict) for v in value):
        return "[" + ", ".join(_toml_value(v, keys, path) for v in value) + "]"
    raise _config_error(path, f"cannot rewrite the value of {'.'.join(keys)}; edit it by hand")


def _toml_string(text: str) -> str:
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _is_host_port(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    return bool(sep and _HOST.fullmatch(host) and port.isdigit() and 0 < int(port) < 65536)


def _config_error(path: Path, detail: str) -> RmqError:
    return RmqError(f"bad profile file {path}: {detail}", "fix the file or remove it", EXIT_USAGE)
