"""Java's text forms for the mqadmin commands: `String.format`/`printf` and `toString`.

`jformat(fmt, *args)` follows java.util.Formatter for the conversions mqadmin uses: `%s`
(of None "null", of a bool "true"/"false", of a float Double.toString), `%d`, `%f`/`%.Nf`
(HALF_UP rounding of the shortest decimal form, as Java rounds), `%x`, `%b`, `%c`, `%n`,
`%%`, with the flags `-`, `0`, `,` and a width.  `jprintf(out, fmt, *args)` writes it.
`parse_int` / `parse_bool` read option values as Integer.parseInt / Boolean.parseBoolean.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import TextIO

_SPEC = re.compile(
    r"%(?P<flags>[-0,+ #]*)(?P<width>\d+)?(?:\.(?P<precision>\d+))?(?P<conv>[a-zA-Z%])"
)


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str | None, bits: int = 32) -> int:
    """`Integer.parseInt` (`bits=64`: `Long.parseLong`); ValueError with Java's message."""
    if text is None or _JAVA_INT.fullmatch(text) is None:
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f'For input string: "{text}"')
    return value


def parse_bool(text: str | None) -> bool:
    """`Boolean.parseBoolean`."""
    return text is not None and text.lower() == "true"


def jstr(value: object) -> str:
    """`String.valueOf(value)`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    return str(value)


def double_to_string(value: float) -> str:
    """`Double.toString`: plain decimal between 10^-3 and 10^7, else computerized notation."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = format(Decimal(repr(value)), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int), "a finite float"
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    scale = len(digits) + exponent - 1
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{scale}"


def _fixed(value: object, precision: int) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return double_to_string(value)
        number = Decimal(repr(value))
    else:
        number = Decimal(str(value))
    return format(number.quantize(Decimal(1).scaleb(-precision), ROUND_HALF_UP), "f")


def _convert(conv: str, flags: str, precision: str | None, value: object) -> str:
    if conv in "sS":
        text = jstr(value)
        if precision is not None:
            text = text[: int(precision)]
        return text.upper() if conv == "S" else text
    if conv == "d":
        if not isinstance(value, int):
            raise TypeError(f"%d of {value!r}")
        return f"{value:,}" if "," in flags else str(value)
    if conv == "f":
        text = _fixed(value, 6 if precision is None else int(precision))
        if "," in flags:
            whole, _, fraction = text.partition(".")
            text = f"{int(whole):,}" + ("." + fraction if fraction else "")
        return text
    if conv in "xX":
        if not isinstance(value, int):
            raise TypeError(f"%x of {value!r}")
        text = format(value if value >= 0 else value & 0xFFFFFFFFFFFFFFFF, "x")
        return text.upper() if conv == "X" else text
    if conv in "bB":
        return (
            jstr(value is not None and value is not False)
            if not isinstance(value, bool)
            else jstr(value)
        )
    if conv == "c":
        return value if isinstance(value, str) else chr(int(str(value)))
    raise ValueError(f"unsupported conversion %{conv}")


def jformat(fmt: str, *args: object) -> str:
    """`String.format(fmt, args...)` for the conversions listed in the module docstring."""
    out: list[str] = []
    pos = 0
    next_arg = 0
    for match in _SPEC.finditer(fmt):
        out.append(fmt[pos : match.start()])
        pos = match.end()
        conv = match.group("conv")
        if conv == "n":
            out.append("\n")
            continue
        if conv == "%":
            out.append("%")
            continue
        flags = match.group("flags")
        text = _convert(conv, flags, match.group("precision"), args[next_arg])
        next_arg += 1
        width = int(match.group("width") or 0)
        if len(text) < width:
            if "-" in flags:
                text = text.ljust(width)
            elif "0" in flags and conv in "dfxX":
                sign = text[:1] if text[:1] == "-" else ""
                text = sign + text[len(sign) :].rjust(width - len(sign), "0")
            else:
                text = text.rjust(width)
        out.append(text)
    out.append(fmt[pos:])
    return "".join(out)


def jprintf(out: TextIO, fmt: str, *args: object) -> None:
    """`System.out.printf(fmt, args...)` onto `out`."""
    out.write(jformat(fmt, *args))
