"""docs/architecture.md names code as it is: every name it writes in backticks as an
`identifier`, a `Class.member` or a `module.member` exists in rmq/ (or in a test helper the
page names by its path, such as `tests/unit/broker/helpers.py`).

The names are read from the source with `ast` (no module of rmq is imported):

* an identifier exists when the source uses it anywhere: a definition, an attribute, an
  argument, a keyword, an imported name or a name it reads (a builtin such as
  `memoryview`);
* `Class.member`: a class of rmq/ of that name whose body, whose `self.<member> = ...`
  assignments or whose rmq base classes define the member;
* `module.member`: a module or package of rmq/ of that name defining or importing the member
  at its top level; a module of Python's standard library (`os.fdatasync`) must have the
  attribute;
* `rmq.a.b.c`: the module `rmq.a.b` and its top-level name `c`.

Anything else in backticks (paths, file names such as `setup.py`, commands, `handlers()`,
`key=value`, `_pure_<name>`) is not a code name and is left alone.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
FILE_SUFFIXES = ("py", "pyx", "pyi", "toml", "cfg", "md", "json", "yml", "yaml", "properties")


@dataclass
class SourceNames:
    """What rmq/'s source defines and mentions."""

    mentioned: set[str] = field(default_factory=set)
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=lambda: defaultdict(list))
    modules: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Module or package name (its last dotted part) -> its top-level names."""

    def class_members(self, name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        members: set[str] = set()
        for node in self.classes.get(name, []):
            members |= _body_names(node.body)
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.ctx, ast.Store)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id in ("self", "cls")
                ):
                    members.add(inner.attr)
            for base in node.bases:
                base_name = base.id if isinstance(base, ast.Name) else None
                if base_name and base_name not in seen and base_name != name:
                    members |= self.class_members(base_name, seen | {name})
        return members


def _target_names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple | ast.List):
        return {name for item in target.elts for name in _target_names(item)}
    return set()


def _body_names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body defines or imports."""
    names: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                names |= _target_names(target)
        elif isinstance(statement, ast.AnnAssign):
            names |= _target_names(statement.target)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
        elif isinstance(statement, ast.If | ast.Try):
            names |= _body_names(statement.body)
    return names


def _sources(text: str) -> list[Path]:
    """rmq/'s modules and the test helpers `text` names by path."""
    helpers = [ROOT / path for path in re.findall(r"`(tests/[\w/]+\.py)`", text)]
    return sorted((ROOT / "rmq").rglob("*.py")) + [path for path in helpers if path.is_file()]


@cache
def source_names() -> SourceNames:
    found = SourceNames()
    for path in _sources(DOC.read_text(encoding="utf-8")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        module = path.parent.name if path.name == "__init__.py" else path.stem
        found.modules[module] |= _body_names(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.classes[node.name].append(node)
                found.mentioned.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.mentioned.add(node.name)
            elif isinstance(node, ast.Name):
                found.mentioned.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.mentioned.add(node.attr)
            elif isinstance(node, ast.arg | ast.keyword) and node.arg is not None:
                found.mentioned.add(node.arg)
            elif isinstance(node, ast.alias):
                found.mentioned.add((node.asname or node.name).split(".")[-1])
    return found


def code_names(text: str) -> list[str]:
    """The backticked spans of `text` that are identifiers or dotted names, in order."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return [
        span
        for span in spans
        if IDENTIFIER.fullmatch(span)
        or (DOTTED.fullmatch(span) and span.rpartition(".")[2] not in FILE_SUFFIXES)
    ]


def missing(name: str, names: SourceNames) -> str | None:
    """Why `name` does not exist in rmq/ (None when it does)."""
    if IDENTIFIER.fullmatch(name):
        return None if name in names.mentioned else "no such name in rmq/"
    parts = name.split(".")
    if parts[0] == "rmq":
        module_name, member = ".".join(parts[:-1]), parts[-1]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return f"no module {module_name}"
        return None if hasattr(module, member) else f"{module_name} has no {member}"
    if len(parts) != 2:
        return "a dotted name of more than two parts outside rmq."
    owner, member = parts
    if owner in names.classes:
        return None if member in names.class_members(owner) else f"class {owner} has no {member}"
    if owner in names.modules:
        return None if member in names.modules[owner] else f"module {owner} has no {member}"
    if owner not in sys.stdlib_module_names:
        return f"{owner} is neither a class nor a module of rmq/ or of Python's"
    module = importlib.import_module(owner)
    return None if hasattr(module, member) else f"module {owner} has no {member}"


def test_every_code_name_exists() -> None:
    names = source_names()
    wrong = {
        name: why
        for name in code_names(DOC.read_text(encoding="utf-8"))
        if (why := missing(name, names)) is not None
    }
    assert wrong == {}


def test_the_check_finds_what_is_not_there() -> None:
    """The rules themselves, on names that exist and names that do not."""
    names = source_names()
    text = (
        "`CommitLog.put_message`, `api.request_broker`, `os.fdatasync`, `tags_code`, "
        "`rmq.common.compression.compress`, `rmq/store/commitlog.py`, `handlers()`, "
        "`setup.py`, `make_broker`"
    )
    assert code_names(text) == [
        "CommitLog.put_message",
        "api.request_broker",
        "os.fdatasync",
        "tags_code",
        "rmq.common.compression.compress",
        "make_broker",
    ]
    assert [missing(name, names) for name in code_names(text)] == [None] * 6
    assert missing("_no_such_function_anywhere", names) == "no such name in rmq/"
    assert missing("CommitLog.no_such_method", names) == "class CommitLog has no no_such_method"
    assert missing("api.no_such_call", names) == "module api has no no_such_call"
    assert missing("request.next_offset", names) == "module request has no next_offset"
    assert missing("pull_request.next_offset", names) == (
        "pull_request is neither a class nor a module of rmq/ or of Python's"
    )
    assert missing("rmq.common.compression.nothing", names) == (
        "rmq.common.compression has no nothing"
    )
