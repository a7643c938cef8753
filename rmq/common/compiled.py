"""Which compiled hot paths are in use, and the switch that turns them off.

``pip install`` builds the Cython extension modules listed in ``EXTENSIONS`` when a C compiler
is there (setup.py, optional: a failed build leaves the pure-Python code alone).  Each pure
module picks its compiled twin at import with :func:`load`, keeping its own function as
``_pure_<name>``::

    _fast = load("rmq.common._speedups")
    if _fast is not None:
        frame_at = _fast.frame_at

The pure functions stay the reference: the compiled ones hand every call they do not accept
to them.  ``RMQ_PURE_PYTHON=1`` in the environment (read once, at import) forces the pure code
everywhere.  ``python -m rmq.common.compiled`` prints which modules are in use.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

PURE_PYTHON_ENV = "RMQ_PURE_PYTHON"

EXTENSIONS = ("rmq.common._speedups", "rmq.remoting._framesplit")
"""Every compiled module (setup.py builds these; the names of their .pyx sources)."""


def pure_python_forced() -> bool:
    """Whether ``RMQ_PURE_PYTHON`` asks for the pure-Python code (any value but empty or 0)."""
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def load(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None when it is not built or the switch is on."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def status() -> dict[str, str]:
    """Each compiled module and what is in use for it: ``compiled``, ``pure (RMQ_PURE_PYTHON)``
    or ``pure (not built)``."""
    result = {}
    for name in EXTENSIONS:
        if pure_python_forced():
            result[name] = f"pure ({PURE_PYTHON_ENV})"
        else:
            result[name] = "compiled" if load(name) is not None else "pure (not built)"
    return result


if __name__ == "__main__":  # pragma: no cover - a diagnostic
    for module, state in status().items():
        sys.stdout.write(f"{module}: {state}\n")
