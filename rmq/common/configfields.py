"""The config option machinery: Java property keys, their types and parsers, applying text.

A config object (:class:`ConfigObject`, the five classes of :mod:`rmq.common.configobjects`)
is a dataclass whose fields are a Java config class's properties.  This module turns those
fields into options (:func:`options_of`) and applies, renders and updates property sets
through them.

Names.  The config-file key is the Java property name (``mappedFileSizeCommitLog``); the
attribute is derived from it mechanically by :func:`java_key_to_attr`: a ``_`` goes before
an upper-case letter that follows a lower-case letter or digit, and before the last letter
of an upper-case run that is followed by a lower-case letter; then everything is lower-cased
(``storePathRootDir`` -> ``store_path_root_dir``, ``brokerIP1`` -> ``broker_ip1``,
``checkCRCOnRecover`` -> ``check_crc_on_recover``, ``dLegerGroup`` -> ``d_leger_group``).
A field whose key does not follow the rule, or that has aliases, says so with
:func:`java_key` in its metadata; every field is checked against the rule when its class's
options are built.

Types follow Java's: ``str`` (``str | None`` where Java's default is null), ``bool``, ``int``
(Java int, 32 bits) or :data:`Long` (Java long, 64 bits), and ``StrEnum`` enums.  Parsing
text follows ``MixAll.properties2Object`` with two deliberate differences: a value Java would
silently ignore (``listenPort=abc``, an unknown enum name) is a :class:`ConfigError` naming
the file, key and value instead; and blanks around a number, boolean or enum name are
ignored (Java's ``Integer.parseInt("1 ")`` fails and keeps the default, which is never what
the user meant).  Booleans follow ``Boolean.parseBoolean``: ``true`` in any case is true,
anything else false.

Values Java rewrites in a getter are stored already rewritten, so every reader sees the
value the store uses: ``mappedFileSizeConsumeQueue`` is rounded up to a multiple of the
20-byte consume queue unit and ``diskMaxUsedSpaceRatio`` clamped to 10..95.  This happens at
construction and whenever properties are applied (not on plain attribute assignment).

API: :func:`build_config`, :func:`apply_properties` (several configs fed from one property
set, unknown keys reported once), :func:`to_properties`, :func:`update_config`
(UPDATE_*_CONFIG with the black list).
"""

import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from rmq.common.javanames import camel_case, snake_case

CONSUME_QUEUE_UNIT_SIZE = 20
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


class _JavaLong:
    """Marks an ``int`` field as a Java long (64 bits) rather than an int (32 bits)."""


Long = Annotated[int, _JavaLong]
"""A Java ``long`` field: an ``int`` checked against the 64-bit range when parsed."""


class ConfigError(ValueError):
    """A config value or file rmq cannot use; the message names file, key and value."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        key: str | None = None,
        value: str | None = None,
    ) -> None:
        super().__init__(f"{source}: {message}" if source else message)
        self.source = source
        self.key = key
        self.value = value


class ConfigBlackListError(ConfigError):
    """UPDATE_*_CONFIG tried to change keys on the black list (Java answers NO_PERMISSION)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"can not update config in black list: {', '.join(keys)}")
        self.keys = keys


def java_key(
    key: str | None = None, *, aliases: tuple[str, ...] = (), rmq_only: bool = False
) -> dict[str, Any]:
    """Field metadata: the Java key when the attribute's camelCase form is not it, aliases."""
    return {"key": key, "aliases": aliases, "rmq_only": rmq_only}


def _round_up_to_consume_queue_unit(size: int) -> int:
    return -(-size // CONSUME_QUEUE_UNIT_SIZE) * CONSUME_QUEUE_UNIT_SIZE


def _clamp_disk_ratio(ratio: int) -> int:
    return min(max(ratio, 10), 95)


_NORMALISERS: dict[str, Callable[[int], int]] = {
    "mapped_file_size_consume_queue": _round_up_to_consume_queue_unit,
    "disk_max_used_space_ratio": _clamp_disk_ratio,
}


def _in_range(low: int, high: int | None, meaning: str = "") -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value < low or (high is not None and value > high):
            allowed = f"{low}..{high}" if high is not None else f">= {low}"
            return f"expected {allowed}{meaning}"
        return None

    return check


def _not_empty(value: Any) -> str | None:
    return "expected a directory, not an empty value" if not str(value).strip() else None


_VALIDATORS: dict[str, Callable[[Any], str | None]] = {
    "max_message_size": _in_range(1, None, " bytes"),
    "broker_permission": _in_range(0, 15, " (a perm: READ 4 | WRITE 2 | INHERIT 1 | PRIORITY 8)"),
    "mapped_file_size_commit_log": _in_range(1, None, " bytes"),
    "mapped_file_size_consume_queue": _in_range(
        1, None, f" bytes (rounded up to whole {CONSUME_QUEUE_UNIT_SIZE}-byte entries)"
    ),
    "store_path_root_dir": _not_empty,
}
"""Values no RocketMQ process can run with: checked whenever properties are applied, and
refused with a :class:`ConfigError` naming the key and the allowed values."""


def java_key_to_attr(key: str) -> str:
    """The attribute name of a Java config key (``brokerIP1`` -> ``broker_ip1``)."""
    return snake_case(key)


@dataclass(frozen=True)
class _Option:
    attr: str
    key: str
    aliases: tuple[str, ...]
    rmq_only: bool
    parse: Callable[[str], Any]


def _parse_str(text: str) -> str:
    return text


def _parse_bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _integer_parser(bounds: tuple[int, int], java_type: str) -> Callable[[str], int]:
    low, high = bounds

    def parse(text: str) -> int:
        stripped = text.strip()
        if _JAVA_INTEGER.fullmatch(stripped) is None or not low <= int(stripped) <= high:
            raise ValueError(f"not a Java {java_type} ({low}..{high})")
        return int(stripped)

    return parse


def _enum_parser(enum: type[StrEnum]) -> Callable[[str], StrEnum]:
    def parse(text: str) -> StrEnum:
        try:
            return enum(text.strip())
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise ValueError(f"not one of {allowed}") from None

    return parse


_parse_int = _integer_parser(_INT_RANGE, "int")
_parse_long = _integer_parser(_LONG_RANGE, "long")


def _parser_for(hint: Any) -> Callable[[str], Any]:
    if typing.get_origin(hint) is Annotated:
        assert _JavaLong in typing.get_args(hint)
        return _parse_long
    if hint is bool:
        return _parse_bool
    if hint is int:
        return _parse_int
    if hint is str or hint == str | None:
        return _parse_str
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return _enum_parser(hint)
    raise TypeError(f"unsupported config field type {hint!r}")


def options_of(cls: type) -> dict[str, _Option]:
    """The options of a config class by Java key and by alias (built once per class)."""
    options = _OPTIONS.get(cls)
    if options is None:
        options = _OPTIONS[cls] = _build_options(cls)
    return options


_OPTIONS: dict[type, dict[str, _Option]] = {}


def _build_options(cls: type) -> dict[str, _Option]:
    hints = typing.get_type_hints(cls, include_extras=True)
    table: dict[str, _Option] = {}
    for item in fields(cls):
        meta = item.metadata
        option = _Option(
            attr=item.name,
            key=meta.get("key") or camel_case(item.name),
            aliases=meta.get("aliases", ()),
            rmq_only=meta.get("rmq_only", False),
            parse=_parser_for(hints[item.name]),
        )
        assert java_key_to_attr(option.key) == option.attr, (option.key, option.attr)
        for name in (option.key, *option.aliases):
            assert name not in table, name
            table[name] = option
    return table


class ConfigObject:
    """Base of the config dataclasses: normalised values, black list."""

    def __post_init__(self) -> None:
        for attr, normalise in _NORMALISERS.items():
            if hasattr(self, attr):
                setattr(self, attr, normalise(getattr(self, attr)))

    def black_list(self) -> frozenset[str]:
        """Keys UPDATE_*_CONFIG may not change through this config (none by default)."""
        return frozenset()


def black_list_of(fixed: Iterable[str], configured: str) -> frozenset[str]:
    """The ``fixed`` keys and those of a ``configBlackList`` value (``;``-separated)."""
    return frozenset(fixed) | {key for key in configured.split(";") if key}


# ------------------------------------------------------------------- applying properties

C = TypeVar("C", bound=ConfigObject)


def _parse(option: _Option, key: str, text: str, source: str | None) -> Any:
    try:
        return option.parse(text)
    except ValueError as error:
        raise ConfigError(f"{key}={text!r}: {error}", source=source, key=key, value=text) from None


def _checked(option: _Option, key: str, text: str, source: str | None) -> Any:
    value = _parse(option, key, text, source)
    validate = _VALIDATORS.get(option.attr)
    problem = validate(value) if validate is not None and value is not None else None
    if problem is not None:
        raise ConfigError(f"{key}={text!r}: {problem}", source=source, key=key, value=text)
    return value


def apply_properties(
    props: Mapping[str, str], *configs: ConfigObject, source: str | None = None
) -> list[str]:
    """Set every key of ``props`` on each of ``configs`` that has it; return unknown keys.

    All values are parsed before anything is changed, so a :class:`ConfigError` leaves the
    configs untouched.  A key given both directly and through an alias takes the direct
    value.  Keys no config knows are returned once each, in ``props`` order.
    """
    updates: list[tuple[ConfigObject, _Option, Any]] = []
    alias_updates: list[tuple[ConfigObject, _Option, Any]] = []
    unknown: list[str] = []
    for key, text in props.items():
        known = False
        for config in configs:
            option = options_of(type(config)).get(key)
            if option is None:
                continue
            known = True
            target = updates if key == option.key else alias_updates
            target.append((config, option, _checked(option, key, text, source)))
        if not known:
            unknown.append(key)
    for config, option, value in alias_updates + updates:
        normalise = _NORMALISERS.get(option.attr)
        setattr(config, option.attr, normalise(value) if normalise else value)
    return unknown


def build_config(
    cls: type[C], props: Mapping[str, str], *, source: str | None = None
) -> tuple[C, list[str]]:
    """A config of class ``cls`` with defaults overridden by ``props``; and the unknown keys."""
    config = cls()
    return config, apply_properties(props, config, source=source)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_properties(*configs: ConfigObject) -> dict[str, str]:
    """Java key -> text of every set field (None omitted), for ``-p`` and GET_*_CONFIG."""
    result: dict[str, str] = {}
    for config in configs:
        for name, option in options_of(type(config)).items():
            value = getattr(config, option.attr)
            if name == option.key and value is not None:
                result[name] = _text(value)
    return result


def update_config(
    props: Mapping[str, str], *configs: ConfigObject, source: str | None = None
) -> list[str]:
    """Apply an UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG body; return the unknown keys.

    Raises :class:`ConfigBlackListError` naming every refused key, before changing anything,
    when a key is on the black list of one of ``configs`` (the namesrv always refuses
    ``configBlackList``, ``configStorePath``, ``kvConfigPath``, ``rocketmqHome``; the broker
    ``brokerConfigPath``, ``rocketmqHome``, ``configBlackList``; both also every key of their
    ``configBlackList``).
    """
    black_list: set[str] = set()
    for config in configs:
        black_list |= config.black_list()
    refused = [key for key in props if key in black_list]
    if refused:
        raise ConfigBlackListError(refused)
    return apply_properties(props, *configs, source=source)
