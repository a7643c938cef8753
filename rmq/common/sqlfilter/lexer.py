"""Tokens of Apache's SQL92 selector grammar (``SelectorParser.jj`` at rocketmq-all-4.9.8).

Tokens are read on demand (:meth:`Lexer.next_token`), because Apache's generated parser does
the same and never reads past the one token after the expression: ``a > 1 b`` is ``a > 1``
(the parser stops at ``b``), while a character no token starts with fails only when it is the
token the parser looks at.

Between tokens: spaces, tabs, CR, LF, FF; ``-- comment`` up to and including a line end (a
``--`` with no line end after it is two minus signs); ``/* comment */``.  Tokens, longest
match first and keywords before identifiers on a tie: the keywords NOT AND OR BETWEEN IN
TRUE FALSE NULL IS (any case); decimal literals (``0`` or a non-zero digit and digits, with
an optional ``l``/``L``); floating literals (``5.``, ``5.5``, ``.5``, ``5e10``, ``5.5E-3``);
string literals in single quotes (a quote doubled inside); identifiers (an ASCII letter,
``_`` or ``$``, then letters, digits, ``_``, ``$``); ``= <> > >= < <= ( , ) + -``.
Positions are 0-based offsets into the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EOF", "KEYWORDS", "Lexer", "LexicalError", "Token"]

KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
EOF = "<EOF>"

_SKIP = re.compile(r"(?:[ \t\n\r\f]+|--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?")
_FLOAT = re.compile(
    r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
)
_STRING = re.compile(r"'(?:''|[^'])*'")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_OPERATOR = re.compile(r">=|<=|<>|[=><(),+\-]")


class LexicalError(Exception):
    """No token starts at ``position``."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position


@dataclass(frozen=True, slots=True)
class Token:
    """``kind`` is a keyword (upper case), an operator, DECIMAL, FLOAT, STRING, ID or EOF."""

    kind: str
    image: str
    position: int


class Lexer:
    """Reads the tokens of ``text`` one at a time."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._position = 0

    def next_token(self) -> Token:
        text = self._text
        skipped = _SKIP.match(text, self._position)
        start = skipped.end() if skipped is not None else self._position
        if start >= len(text):
            self._position = start
            return Token(EOF, "", start)
        token = self._longest(start)
        if token is None:
            raise LexicalError(start, f"unexpected character {text[start]!r}")
        self._position = start + len(token.image)
        return token

    def _longest(self, start: int) -> Token | None:
        text = self._text
        best: Token | None = None
        for kind, pattern in (
            ("FLOAT", _FLOAT),
            ("DECIMAL", _DECIMAL),
            ("STRING", _STRING),
            ("ID", _IDENTIFIER),
            ("OP", _OPERATOR),
        ):
            match = pattern.match(text, start)
            if match is None or (best is not None and len(match[0]) <= len(best.image)):
                continue
            image = match[0]
            if kind == "ID" and image.upper() in KEYWORDS:
                kind = image.upper()
            elif kind == "OP":
                kind = image
            best = Token(kind, image, start)
        if best is None and text[start] == "'":
            raise LexicalError(start, "unterminated string literal")
        return best
