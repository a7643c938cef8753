"""Commons-CLI 1.2 as mqadmin 4.9.8 uses it: `PosixParser` and `HelpFormatter` (width 110).

`parse` turns a command's arguments into option values exactly as `PosixParser.parse` does
(`-t X`, `-tX`, `--topic X`, `--topic=X`, `-topic X`, values stripped of one leading and one
trailing double quote, option groups) and raises `ParseError` where Commons-CLI throws a
ParseException (unknown option, missing argument, missing required option or group, two
options of one group).  `usage` renders `HelpFormatter.printHelp(app, options, true)`.

Both walk the options in the order Commons-CLI does: `Options` keeps them in a Java HashMap,
so the order before sorting is that map's iteration order, and the sort (case-insensitive on
the key, stable) leaves keys equal but for case in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rmq.cli.mqadmin.registry import Opt
from rmq.common.javahash import java_hash_order

WIDTH = 110
LEFT_PAD = 1
DESC_PAD = 3
GLOBAL_OPTIONS = (
    Opt("h", "help", False, False, "Print help"),
    Opt("n", "namesrvAddr", True, False,
        "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"),
)  # fmt: skip


class ParseError(Exception):
    """What Commons-CLI's ParseException stands for: mqadmin prints the usage and exits 1."""


@dataclass(frozen=True)
class Options:
    """A command's Commons-CLI options: the globals first, then the command's own."""

    options: tuple[Opt, ...]

    @classmethod
    def of(cls, own: Sequence[Opt]) -> Options:
        return cls((*GLOBAL_OPTIONS, *own))

    def key(self, opt: Opt) -> str:
        return opt.short or opt.long

    def sorted(self) -> list[Opt]:
        """`helpOptions()` sorted as HelpFormatter sorts them."""
        by_key = {self.key(opt): opt for opt in self.options}
        order = java_hash_order(self.key(opt) for opt in self.options)
        return sorted((by_key[key] for key in order), key=lambda opt: self.key(opt).lower())

    def find(self, token: str) -> Opt | None:
        """`Options.getOption`: by short name first, then by long name, hyphens stripped."""
        name = token[2:] if token.startswith("--") else token[1:] if token[:1] == "-" else token
        for opt in self.options:
            if opt.short == name:
                return opt
        for opt in self.options:
            if opt.long == name:
                return opt
        return None

    def groups(self) -> dict[str, list[Opt]]:
        found: dict[str, list[Opt]] = {}
        for opt in self.options:
            if opt.group is not None:
                found.setdefault(opt.group, []).append(opt)
        return found


def _flatten(options: Options, args: Sequence[str]) -> list[str]:
    """PosixParser.flatten with stopAtNonOption false."""
    tokens: list[str] = []
    for token in args:
        if token.startswith("--"):
            name, equals, value = token.partition("=")
            if options.find(name) is None:
                tokens.append(token)
            else:
                tokens.append(name)
                if equals:
                    tokens.append(value)
        elif token == "-":
            tokens.append(token)
        elif token.startswith("-"):
            if len(token) == 2 or options.find(token) is not None:
                tokens.append(token)
            else:
                tokens.extend(_burst(options, token))
        else:
            tokens.append(token)
    return tokens


def _burst(options: Options, token: str) -> list[str]:
    tokens: list[str] = []
    for index in range(1, len(token)):
        opt = options.find(token[index])
        if opt is None:
            tokens.append(token)
            break
        tokens.append("-" + token[index])
        if opt.has_arg and index + 1 != len(token):
            tokens.append(token[index + 1 :])
            break
    return tokens


def _unquote(value: str) -> str:
    if value.startswith('"'):
        value = value[1:]
    if value.endswith('"'):
        value = value[:-1]
    return value


def parse(options: Options, args: Sequence[str]) -> dict[str, str | None]:
    """Option key -> value (None for a flag) of the options given; the first value wins when
    an option is repeated, as `CommandLine.getOptionValue` returns the first."""
    tokens = _flatten(options, args)
    values: dict[str, str | None] = {}
    required = {options.key(opt) for opt in options.options if opt.required and not opt.group}
    groups = options.groups()
    missing_groups = set(groups)
    selected: dict[str, str] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "--":
            break
        if token == "-" or not token.startswith("-"):
            continue
        opt = options.find(token)
        if opt is None:
            raise ParseError(f"Unrecognized option: {token}")
        key = options.key(opt)
        required.discard(key)
        if opt.group is not None:
            missing_groups.discard(opt.group)
            if selected.setdefault(opt.group, key) != key:
                raise ParseError(f"option {key} of an already selected group")
        value: str | None = None
        if opt.has_arg:
            if index < len(tokens) and not (
                tokens[index].startswith("-") and options.find(tokens[index]) is not None
            ):
                value = _unquote(tokens[index])
                index += 1
            else:
                raise ParseError(f"Missing argument for option: {key}")
        values.setdefault(key, value)
    if required or missing_groups:
        raise ParseError("Missing required option")
    return values


# -- HelpFormatter ---------------------------------------------------------------------------


def usage(app: str, options: Options) -> str:
    """`HelpFormatter.printHelp(app, options, true)` at width 110, newlines included."""
    parts = [f"usage: {app} "]
    ordered = options.sorted()
    done: set[str] = set()
    for position, opt in enumerate(ordered):
        if opt.group is not None:
            if opt.group not in done:
                done.add(opt.group)
                parts.append(_group_usage(options, options.groups()[opt.group]))
        else:
            parts.append(_option_usage(opt, opt.required))
        if position + 1 < len(ordered):
            parts.append(" ")
    line = "".join(parts)
    text = _wrap(line, line.index(" ") + 1) + "\n"
    return text + _options_text(ordered) + "\n"


def _option_usage(opt: Opt, required: bool) -> str:
    text = f"-{opt.short}" if opt.short else f"--{opt.long}"
    if opt.has_arg:
        text += " <arg>"
    return text if required else f"[{text}]"


def _group_usage(options: Options, members: list[Opt]) -> str:
    """A required group's members (mqadmin's groups are all required) without brackets."""
    ordered = [opt for opt in options.sorted() if opt in members]
    return " | ".join(_option_usage(opt, True) for opt in ordered)


def _options_text(ordered: list[Opt]) -> str:
    prefixes = []
    for opt in ordered:
        prefix = " " * LEFT_PAD
        prefix += f"-{opt.short},--{opt.long}" if opt.short else f"   --{opt.long}"
        if opt.has_arg:
            prefix += " <arg>"
        prefixes.append(prefix)
    width = max(len(prefix) for prefix in prefixes)
    lines = []
    for opt, prefix in zip(ordered, prefixes, strict=True):
        text = prefix.ljust(width) + " " * DESC_PAD + opt.description
        lines.append(_wrap(text, width + DESC_PAD))
    return "\n".join(lines)


def _find_wrap(text: str, width: int, start: int = 0) -> int:
    newline = text.find("\n", start)
    if newline != -1 and newline <= width:
        return newline + 1
    tab = text.find("\t", start)
    if tab != -1 and tab <= width:
        return tab + 1
    if start + width >= len(text):
        return -1
    pos = start + width
    while pos >= start and text[pos] not in " \n\r":
        pos -= 1
    if pos > start:
        return pos
    pos = start + width
    while pos < len(text) and text[pos] not in " \n\r":
        pos += 1
    return -1 if pos == len(text) else pos


def _wrap(text: str, tab_stop: int) -> str:
    """HelpFormatter.renderWrappedText."""
    pos = _find_wrap(text, WIDTH)
    if pos == -1:
        return text.rstrip()
    out = [text[:pos].rstrip()]
    if tab_stop >= WIDTH:
        tab_stop = 1
    padding = " " * tab_stop
    while True:
        text = padding + text[pos:].strip()
        pos = _find_wrap(text, WIDTH)
        if pos == -1:
            out.append(text)
            return "\n".join(out)
        if len(text) > WIDTH and pos == tab_stop - 1:
            pos = WIDTH
        out.append(text[:pos].rstrip())
