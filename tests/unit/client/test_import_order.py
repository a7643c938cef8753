"""The client's modules import without a cycle: each can be the first one a program imports.

The import-linter contract "the client's modules import one another without a cycle"
(pyproject.toml) holds the import graph acyclic, counting imports inside functions and under
TYPE_CHECKING.  It does not see what a package's ``__init__`` drags in: importing
``rmq.client.consumer.x`` runs ``rmq/client/consumer/__init__.py`` first, which imports the
push consumer and all it needs.  This test imports every client module first, in a fresh
interpreter, so a cycle through a package's ``__init__`` fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import rmq.client

_IMPORT_EACH_FIRST = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "rmq.client" or m.startswith("rmq.client.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {exc!r}")
print("\\n".join(failed))
"""


def client_modules() -> list[str]:
    """Every module of rmq.client, from its files (importing nothing)."""
    root = Path(rmq.client.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(("rmq.client", *parts)))
    return names


def test_every_client_module_imports_first() -> None:
    modules = client_modules()
    assert "rmq.client.consumer.push" in modules and "rmq.client.requestreply" in modules
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH_FIRST, *modules],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == ""
