"""Changing a running server's settings: UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG.

:class:`LiveSettings` holds what a running name server or broker is configured with: its
configs, the keys of its ``-c`` file no config knows (kept and shown, as Apache keeps them),
and the restart-only values changed since the start.  :meth:`LiveSettings.update` applies one
request's properties, all or nothing:

1. a key on the black list of any config refuses the whole request
   (:class:`ConfigBlackListError`, which the servers answer NO_PERMISSION as Apache does);
2. a key no config knows refuses it (:class:`~rmq.common.configfields.ConfigError` naming
   the keys; Apache answers success and ignores them);
3. every value is parsed and checked, then the class checks and the server's own rules run
   on a copy of the configs with the changes (and the earlier restart-only changes) applied;
   the first failure refuses the request, naming the key, value and what is allowed;
4. keys that apply at once (:attr:`Applies.LIVE`) and keys rmq does not use are set on the
   running configs; a restart-only key (:attr:`Applies.RESTART`) is kept aside: the running
   server keeps its value, while :meth:`LiveSettings.properties` (what GET_*_CONFIG answers
   and what is written to the config file) shows the new one.

:meth:`~LiveSettings.update` returns one line per key that does not take effect at once
(the option's :meth:`~rmq.common.configfields.Option.update_note`), which the servers send
back as the remark of their success answer.
"""

import copy
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from rmq.common.configfields import (
    Applies,
    ConfigError,
    ConfigObject,
    Option,
    apply_properties,
    find_option,
    options_of,
    to_properties,
    value_text,
)


class ConfigBlackListError(ConfigError):
    """UPDATE_*_CONFIG tried to change keys on the black list (Java answers NO_PERMISSION)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"can not update config in black list: {', '.join(keys)}")
        self.keys = keys


class ServerConfigs(Protocol):
    """The configs of one server (``NamesrvConfigs``, ``BrokerConfigs``)."""

    def all(self) -> tuple[ConfigObject, ...]: ...


S = TypeVar("S", bound=ServerConfigs)


class LiveSettings(Generic[S]):
    """The settings of a running server, changed by UPDATE_*_CONFIG (see the module doc).

    ``file_properties`` are the server's ``-c`` file: its keys no config shows (unknown keys
    and aliases) are kept and shown, as Apache registers the file's properties.  ``check``
    raises ConfigError when configs break a rule of the server (the rules ``build_*_configs``
    check at start); ``server`` names it in remarks.
    """

    def __init__(
        self,
        configs: S,
        file_properties: Mapping[str, str],
        check: Callable[[S], None],
        server: str,
    ) -> None:
        self.configs = configs
        known = to_properties(*configs.all())
        self.extras = {key: text for key, text in file_properties.items() if key not in known}
        self.check = check
        self.server = server
        self.pending: dict[str, str] = {}
        """Restart-only keys changed since the start: key -> value as text."""

    def properties(self) -> dict[str, str]:
        """Every setting as Java keys and text: the ``-c`` file's extra keys, then the
        configs, with the restart-only changes over them."""
        return {**self.extras, **to_properties(*self.configs.all()), **self.pending}

    def update(self, props: Mapping[str, str]) -> list[str]:
        """Apply one UPDATE_*_CONFIG body; the lines for keys that do not apply at once.

        Raises ConfigBlackListError or ConfigError (naming the key) and changes nothing when
        a key or value is refused.
        """
        running = self.configs.all()
        black_list: set[str] = set()
        for config in running:
            black_list |= config.black_list()
        refused = [key for key in props if key in black_list]
        if refused:
            raise ConfigBlackListError(refused)
        changes = self._canonical(props)
        trial = copy.deepcopy(self.configs)
        apply_properties({**self.pending, **changes}, *trial.all())
        self.check(trial)
        at_once: dict[str, str] = {}
        notes: list[str] = []
        for key, text in changes.items():
            options = [options_of(type(config))[key] for config in running if _has(config, key)]
            option = _deciding(options)
            if option.applies is Applies.RESTART:
                holder = next(config for config in trial.all() if _has(config, key))
                self.pending[key] = value_text(getattr(holder, option.attr))
            else:
                at_once[key] = text
            note = option.update_note()
            if note is not None:
                notes.append(note)
        apply_properties(at_once, *running)
        return notes

    def _canonical(self, props: Mapping[str, str]) -> dict[str, str]:
        """``props`` by the keys their options are named by (a key given both directly and
        through an alias takes the direct value); ConfigError for keys no config has."""
        running = self.configs.all()
        unknown = [key for key in props if find_option(key, running) is None]
        if unknown:
            names = ", ".join(unknown)
            raise ConfigError(
                f"unknown key{'s' if len(unknown) > 1 else ''} {names}: not a setting of "
                f"rmq's {self.server} (nothing was changed)",
                key=unknown[0],
                value=props[unknown[0]],
            )
        changes: dict[str, str] = {}
        direct: dict[str, str] = {}
        for key, text in props.items():
            option = find_option(key, running)
            assert option is not None
            (direct if key == option.key else changes)[option.key] = text
        return {**changes, **direct}


def _has(config: ConfigObject, key: str) -> bool:
    return key in options_of(type(config))


def _deciding(options: list[Option]) -> Option:
    """Of the options one key names in several configs, the one whose timing counts: a
    restart-only one, else one read at once, else any."""
    for applies in (Applies.RESTART, Applies.LIVE):
        for option in options:
            if option.applies is applies:
                return option
    return options[0]
