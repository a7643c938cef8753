"""The config option machinery: Java property keys, their types, allowed values and parsing.

A config object (:class:`ConfigObject`, the classes of :mod:`rmq.common.configobjects` and
:mod:`rmq.common.configbroker`) is a dataclass whose fields are a Java config class's
properties.  Every field is declared with :func:`setting`, which puts everything rmq knows
about the key beside its default, once: the default, the Java key when the attribute's
camelCase form is not it and its aliases, the allowed values (``low``/``high`` for numbers, a
:class:`Rule` for text), a normaliser, and when a change made while the server runs takes
effect (:class:`Applies`).  :func:`options_of` turns the fields into options; a field declared
without :func:`setting` fails the import.

Names.  The config-file key is the Java property name (``mappedFileSizeCommitLog``); the
attribute is derived from it mechanically by :func:`java_key_to_attr`: a ``_`` goes before
an upper-case letter that follows a lower-case letter or digit, and before the last letter
of an upper-case run that is followed by a lower-case letter; then everything is lower-cased
(``storePathRootDir`` -> ``store_path_root_dir``, ``brokerIP1`` -> ``broker_ip1``,
``checkCRCOnRecover`` -> ``check_crc_on_recover``, ``dLegerGroup`` -> ``d_leger_group``).
Every field is checked against the rule when its class's options are built.

Types follow Java's: ``str`` (``str | None`` where Java's default is null), ``bool``, ``int``
(Java int, 32 bits) or :data:`Long` (Java long, 64 bits), and ``StrEnum`` enums.  Parsing
text follows ``MixAll.properties2Object`` with deliberate differences: a value Java would
silently ignore or misread (``listenPort=abc``, an unknown enum name, ``autoCreateTopicEnable=
maybe``, which Java reads as false) or a value outside the key's allowed values is a
:class:`ConfigError` naming the file, key, value and what is allowed; blanks around a
number, boolean or enum name are ignored (Java's ``Integer.parseInt("1 ")`` fails and keeps
the default, which is never what the user meant).  A boolean is ``true`` or ``false`` in any
case.  Numbers without declared bounds are still held to Java's int or long range.

Values Java rewrites in a getter are stored already rewritten (``mappedFileSizeConsumeQueue``
is rounded up to a multiple of the 20-byte consume queue unit), so every reader sees the value
the store uses.  This happens at construction and whenever properties are applied.  Checks
that tie several keys of one config together are the class's :meth:`ConfigObject.check`.

API: :func:`setting`, :func:`options_of`, :func:`build_config`, :func:`apply_properties`
(several configs fed from one property set, unknown keys reported once),
:func:`to_properties`.  Changing the settings of a running server is
:mod:`rmq.common.configupdate`'s.
"""

import copy
import enum
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import Annotated, Any, TypeVar, overload

from rmq.common.javanames import camel_case, snake_case

CONSUME_QUEUE_UNIT_SIZE = 20
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_META = "rmq_setting"

T = TypeVar("T")


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


class Applies(enum.Enum):
    """When a value changed on a running server (UPDATE_*_CONFIG) takes effect."""

    LIVE = "at once"
    """Read where it is used: the running server uses the new value from then on."""
    RESTART = "after a restart"
    """Read when the server starts: the new value is saved to the config file and shown by
    GET_*_CONFIG, and the running server keeps the value it started with."""
    UNUSED = "never"
    """Kept and shown for Apache's tools, but nothing in rmq reads it."""


@dataclass(frozen=True)
class Rule:
    """What a text value must look like: ``accepts(text)``, and ``allowed`` in words."""

    accepts: Callable[[str], bool]
    allowed: str


NOT_BLANK = Rule(lambda text: bool(text.strip()), "a non-empty value")


@dataclass(frozen=True)
class _Declared:
    """What :func:`setting` records in a field's metadata."""

    applies: Applies
    key: str | None
    aliases: tuple[str, ...]
    rmq_only: bool
    low: int | None
    high: int | None
    unit: str
    rule: Rule | None
    normalise: Callable[[int], int] | None
    note: str | None
    shown: str | None


@overload
def setting(
    default: T,
    *,
    applies: Applies,
    key: str | None = ...,
    aliases: tuple[str, ...] = ...,
    rmq_only: bool = ...,
    low: int | None = ...,
    high: int | None = ...,
    unit: str = ...,
    rule: Rule | None = ...,
    normalise: Callable[[int], int] | None = ...,
    note: str | None = ...,
    shown: str | None = ...,
) -> T: ...


@overload
def setting(
    *,
    factory: Callable[[], T],
    shown: str,
    applies: Applies,
    key: str | None = ...,
    aliases: tuple[str, ...] = ...,
    rmq_only: bool = ...,
    low: int | None = ...,
    high: int | None = ...,
    unit: str = ...,
    rule: Rule | None = ...,
    normalise: Callable[[int], int] | None = ...,
    note: str | None = ...,
) -> T: ...


def setting(
    default: Any = MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    applies: Applies,
    key: str | None = None,
    aliases: tuple[str, ...] = (),
    rmq_only: bool = False,
    low: int | None = None,
    high: int | None = None,
    unit: str = "",
    rule: Rule | None = None,
    normalise: Callable[[int], int] | None = None,
    note: str | None = None,
    shown: str | None = None,
) -> Any:
    """A config field: its default (or ``factory``) and everything else about its key.

    ``applies``: when a change on a running server takes effect; ``key``: the Java key when
    the attribute's camelCase form is not it; ``aliases``: other accepted spellings;
    ``rmq_only``: not a key of RocketMQ 4.9; ``low``/``high``: the allowed numbers
    (inclusive) and ``unit`` the word for them; ``rule``: what a text value must look like;
    ``normalise``: the rewrite Java's getter applies; ``note``: what UPDATE_*_CONFIG
    answers for the key instead of the default words for ``applies``; ``shown``: the default
    in words where it depends on the machine or the process (required with ``factory``).
    """
    assert factory is None or shown is not None, "a computed default needs its words"
    declared = _Declared(
        applies, key, aliases, rmq_only, low, high, unit, rule, normalise, note, shown
    )
    metadata = {_META: declared}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def java_key_to_attr(key: str) -> str:
    """The attribute name of a Java config key (``brokerIP1`` -> ``broker_ip1``)."""
    return snake_case(key)


# ------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Option:
    """One key of a config class: names, when a change applies, and how text becomes a value."""

    attr: str
    key: str
    aliases: tuple[str, ...]
    rmq_only: bool
    applies: Applies
    note: str | None
    allowed: str
    """What the key accepts, in words (``a whole number 1..2147483647 (ms)``)."""
    shown: str | None
    """The default in words where it depends on the machine or the process."""
    parse: Callable[[str], Any]
    """Text -> value; raises ValueError when the text is not one of the allowed values."""
    normalise: Callable[[int], int] | None

    def update_note(self) -> str | None:
        """The line UPDATE_*_CONFIG answers for a change of this key (None: applied at once)."""
        if self.note is not None:
            return self.note
        if self.applies is Applies.RESTART:
            return f"{self.key} takes effect after a restart"
        if self.applies is Applies.UNUSED:
            return f"{self.key} is kept but not used by rmq"
        return None


def _integer_parser(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        stripped = text.strip()
        if _JAVA_INTEGER.fullmatch(stripped) is None or not low <= int(stripped) <= high:
            raise ValueError
        return int(stripped)

    return parse


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise ValueError
    return word == "true"


def _enum_parser(enum_type: type[StrEnum]) -> Callable[[str], StrEnum]:
    def parse(text: str) -> StrEnum:
        return enum_type(text.strip())

    return parse


def _text_parser(rule: Rule | None) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if rule is not None and not rule.accepts(text):
            raise ValueError
        return text

    return parse


def _integer_option(declared: _Declared, java: tuple[int, int]) -> tuple[str, Callable[[str], Any]]:
    low = java[0] if declared.low is None else declared.low
    high = java[1] if declared.high is None else declared.high
    assert java[0] <= low <= high <= java[1], (low, high)
    unit = f" ({declared.unit})" if declared.unit else ""
    return f"a whole number {low}..{high}{unit}", _integer_parser(low, high)


def _typed(hint: Any, declared: _Declared) -> tuple[str, Callable[[str], Any]]:
    """The allowed values in words and the parser of a field of type ``hint``."""
    if typing.get_origin(hint) is Annotated:
        assert _JavaLong in typing.get_args(hint)
        return _integer_option(declared, _LONG_RANGE)
    assert declared.rule is None or hint in (str, str | None), hint
    if hint is bool:
        return "true or false", _parse_bool
    if hint is int:
        return _integer_option(declared, _INT_RANGE)
    assert declared.low is declared.high is None, hint
    if hint is str or hint == str | None:
        rule = declared.rule
        return (rule.allowed if rule is not None else "any text"), _text_parser(rule)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return "one of " + ", ".join(member.value for member in hint), _enum_parser(hint)
    raise TypeError(f"unsupported config field type {hint!r}")


def options_of(cls: type) -> dict[str, Option]:
    """The options of a config class by Java key and by alias (built once per class)."""
    options = _OPTIONS.get(cls)
    if options is None:
        options = _OPTIONS[cls] = _build_options(cls)
    return options


_OPTIONS: dict[type, dict[str, Option]] = {}


def _build_options(cls: type) -> dict[str, Option]:
    hints = typing.get_type_hints(cls, include_extras=True)
    table: dict[str, Option] = {}
    for item in fields(cls):
        declared = item.metadata.get(_META)
        assert isinstance(declared, _Declared), f"{cls.__name__}.{item.name}: use setting()"
        allowed, parse = _typed(hints[item.name], declared)
        option = Option(
            attr=item.name,
            key=declared.key or camel_case(item.name),
            aliases=declared.aliases,
            rmq_only=declared.rmq_only,
            applies=declared.applies,
            note=declared.note,
            allowed=allowed,
            shown=declared.shown,
            parse=parse,
            normalise=declared.normalise,
        )
        assert java_key_to_attr(option.key) == option.attr, (option.key, option.attr)
        for name in (option.key, *option.aliases):
            assert name not in table, name
            table[name] = option
    return table


def canonical_options(config: "ConfigObject") -> list[Option]:
    """The options of ``config``'s class, once each (aliases left out), in field order."""
    return [option for name, option in options_of(type(config)).items() if name == option.key]


def find_option(key: str, configs: Iterable["ConfigObject"]) -> Option | None:
    """The option ``key`` names (a key or an alias) in the first of ``configs`` that has it."""
    for config in configs:
        option = options_of(type(config)).get(key)
        if option is not None:
            return option
    return None


class ConfigObject:
    """Base of the config dataclasses: normalised values, cross-key checks, black list."""

    def __post_init__(self) -> None:
        for option in canonical_options(self):
            if option.normalise is not None:
                setattr(self, option.attr, option.normalise(getattr(self, option.attr)))

    def check(self) -> None:
        """Raise ConfigError when keys of this config do not fit together (none by default)."""

    def black_list(self) -> frozenset[str]:
        """Keys UPDATE_*_CONFIG may not change through this config (none by default)."""
        return frozenset()


def black_list_of(fixed: Iterable[str], configured: str) -> frozenset[str]:
    """The ``fixed`` keys and those of a ``configBlackList`` value (``;``-separated)."""
    return frozenset(fixed) | {key for key in configured.split(";") if key}


# ------------------------------------------------------------------- applying properties

C = TypeVar("C", bound=ConfigObject)


def parse_value(option: Option, key: str, text: str, source: str | None = None) -> Any:
    """``text`` as a value of ``option`` (given as ``key``); ConfigError naming key, value
    and the allowed values when it is not one."""
    try:
        value = option.parse(text)
    except ValueError:
        raise ConfigError(
            f"{key}={text!r}: expected {option.allowed}", source=source, key=key, value=text
        ) from None
    return option.normalise(value) if option.normalise is not None else value


def apply_properties(
    props: Mapping[str, str], *configs: ConfigObject, source: str | None = None
) -> list[str]:
    """Set every key of ``props`` on each of ``configs`` that has it; return unknown keys.

    All values are parsed and checked (each config's :meth:`ConfigObject.check` included)
    before anything is changed, so a :class:`ConfigError` leaves the configs untouched.  A
    key given both directly and through an alias takes the direct value.  Keys no config
    knows are returned once each, in ``props`` order.
    """
    updates: list[tuple[int, Option, Any]] = []
    alias_updates: list[tuple[int, Option, Any]] = []
    unknown: list[str] = []
    for key, text in props.items():
        known = False
        for index, config in enumerate(configs):
            option = options_of(type(config)).get(key)
            if option is None:
                continue
            known = True
            target = updates if key == option.key else alias_updates
            target.append((index, option, parse_value(option, key, text, source)))
        if not known:
            unknown.append(key)
    trial = [copy.copy(config) for config in configs]
    for index, option, value in alias_updates + updates:
        setattr(trial[index], option.attr, value)
    for config in trial:
        try:
            config.check()
        except ConfigError as error:
            raise ConfigError(str(error), source=source, key=error.key, value=error.value) from None
    for config, changed in zip(configs, trial, strict=True):
        config.__dict__.update(changed.__dict__)
    return unknown


def build_config(
    cls: type[C], props: Mapping[str, str], *, source: str | None = None
) -> tuple[C, list[str]]:
    """A config of class ``cls`` with defaults overridden by ``props``; and the unknown keys."""
    config = cls()
    return config, apply_properties(props, config, source=source)


def value_text(value: object) -> str:
    """A value as a properties file holds it (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_properties(*configs: ConfigObject) -> dict[str, str]:
    """Java key -> text of every set field (None omitted), for ``-p`` and GET_*_CONFIG."""
    result: dict[str, str] = {}
    for config in configs:
        for option in canonical_options(config):
            value = getattr(config, option.attr)
            if value is not None:
                result[option.key] = value_text(value)
    return result
