"""rmq mqadmin's framework without a cluster: Commons-CLI 1.2 parsing and usage text (the
byte comparison with the real mqadmin is tests/conformance/test_mqadmin.py's), Java's printf,
and the dispatcher's listing, lookup and exit codes."""

from __future__ import annotations

import io
import math

import pytest

from rmq.cli.mqadmin import commonscli
from rmq.cli.mqadmin.dispatch import main
from rmq.cli.mqadmin.javafmt import double_to_string, jformat, parse_int
from rmq.cli.mqadmin.registry import Opt

UPDATE_TOPIC = commonscli.Options.of(
    [
        Opt("b", "brokerAddr", True, False, "create topic to which broker", "target"),
        Opt("c", "clusterName", True, False, "create topic to which cluster", "target"),
        Opt("t", "topic", True, True, "topic name"),
        Opt("r", "readQueueNums", True, False, "set read queue nums"),
        Opt("o", "order", True, False, "set topic's order(true|false)"),
        Opt("x", "flag", False, False, "a flag"),
    ]
)


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (["-t", "T", "-b", "B"], {"t": "T", "b": "B"}),
        (["-tT", "-cC"], {"t": "T", "c": "C"}),
        (["--topic", "T", "--clusterName=C"], {"t": "T", "c": "C"}),
        (["-topic", "T", "-b", "B"], {"t": "T", "b": "B"}),
        (["-t", '"T"', "-b", "B", "-r", "-5"], {"t": "T", "b": "B", "r": "-5"}),
        (["-xt", "T", "-b", "B"], {"x": None, "t": "T", "b": "B"}),
        (["-t", "first", "-t", "second", "-b", "B"], {"t": "first", "b": "B"}),
        (["-t", "T", "-b", "B", "stray", "--", "-z"], {"t": "T", "b": "B"}),
    ],
)
def test_posix_parser_forms(args: list[str], values: dict[str, str | None]) -> None:
    assert commonscli.parse(UPDATE_TOPIC, args) == values


@pytest.mark.parametrize(
    "args",
    [
        ["-b", "B"],  # -t missing
        ["-t", "T"],  # neither of the required group
        ["-t", "T", "-b", "B", "-c", "C"],  # both of the group
        ["-t", "T", "-b", "B", "-z"],  # unknown option
        ["-t", "T", "-b", "B", "--nope"],
        ["-t", "-b", "B"],  # -t's argument is an option
        ["-b", "B", "-t"],
    ],
)
def test_posix_parser_errors(args: list[str]) -> None:
    with pytest.raises(commonscli.ParseError):
        commonscli.parse(UPDATE_TOPIC, args)


def test_usage_sorts_options_and_prints_a_required_group_bare() -> None:
    assert commonscli.usage("mqadmin updateTopic", UPDATE_TOPIC) == (
        "usage: mqadmin updateTopic -b <arg> | -c <arg>  [-h] [-n <arg>] [-o <arg>] [-r <arg>]"
        " -t <arg> [-x]\n"
        " -b,--brokerAddr <arg>      create topic to which broker\n"
        " -c,--clusterName <arg>     create topic to which cluster\n"
        " -h,--help                  Print help\n"
        " -n,--namesrvAddr <arg>     Name server address list, eg: "
        "'192.168.0.1:9876;192.168.0.2:9876'\n"
        " -o,--order <arg>           set topic's order(true|false)\n"
        " -r,--readQueueNums <arg>   set read queue nums\n"
        " -t,--topic <arg>           topic name\n"
        " -x,--flag                  a flag\n"
    )


def test_usage_wraps_at_110_columns_under_the_first_word() -> None:
    options = commonscli.Options.of(
        [Opt(letter, f"option{letter}", True, True, "x " * 60) for letter in "abcdefgijklm"]
    )
    text = commonscli.usage("mqadmin wide", options)
    first, second = text.splitlines()[:2]
    assert len(first) <= 110 and second.startswith(" " * 7 + "<arg> -l")
    # descriptions continue under their first word: the widest option plus three blanks
    continued = [line for line in text.splitlines() if line.startswith(" " * 26 + "x x")]
    assert continued and all(len(line) <= 110 for line in text.splitlines())


def test_java_printf() -> None:
    assert jformat("%-8s|%5d|%05d|%n", "ab", 42, -7) == "ab      |   42|-0007|\n"
    assert jformat("%s %s %s %S", None, True, 2.0, "x") == "null true 2.0 X"
    assert jformat("%.2f %.2f %9.2f %.4f", 0.125, 2.675, 3.0, 0.47) == (
        "0.13 2.68      3.00 0.4700"
    )
    assert jformat("%,d %x %%", 1234567, 255) == "1,234,567 ff %"
    assert [double_to_string(v) for v in (1e7, 1.5e-4, 123.0, -0.0, math.nan)] == [
        "1.0E7",
        "1.5E-4",
        "123.0",
        "-0.0",
        "NaN",
    ]
    assert parse_int("-12") == -12
    for bad in ("1.5", " 1", "", "2147483648"):
        with pytest.raises(ValueError, match="For input string"):
            parse_int(bad)


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out, err=io.StringIO())
    return code, out.getvalue()


def test_dispatcher_listing_lookup_and_exit_codes() -> None:
    code, listing = run()
    assert code == 0
    assert listing.startswith("The most commonly used mqadmin commands are:\n   updateTopic ")
    assert listing.endswith(
        "\nSee 'mqadmin help <command>' for more information on a specific command.\n"
    )
    assert "   topicRoute           Examine topic route info\n" in listing
    assert run("nosuch") == (1, "The sub command nosuch not exist.\n")
    assert run("help", "nosuch") == (1, "The sub command nosuch not exist.\n")
    assert run("help") == (1, "The sub command help not exist.\n")
    code, usage = run("help", "topicroute")
    assert code == 0 and usage.startswith("usage: mqadmin topicRoute [-h] [-l] [-n <arg>] -t <arg>")
    assert run("TopicRoute") == (1, usage)  # -t missing: a parse error
    assert run("topicRoute", "-h", "-t", "T") == (0, usage)
