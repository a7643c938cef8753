"""Builds rmq's optional compiled hot paths (see rmq/common/compiled.py): every rmq/**/*.pyx
becomes a C extension when Cython and a C compiler are there.  Nothing here may fail the
install: without Cython, without a compiler or when a module does not compile, rmq installs
with its pure-Python code, which is the reference the compiled modules must match.  All other
metadata is in pyproject.toml.  Set RMQ_NO_COMPILE=1 to skip the build entirely.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _extensions() -> list[Extension]:
    if os.environ.get("RMQ_NO_COMPILE", "") not in ("", "0"):
        return []
    sources = sorted(path.relative_to(ROOT) for path in (ROOT / "rmq").rglob("*.pyx"))
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        sys.stderr.write("rmq: Cython is not installed; using the pure-Python hot paths\n")
        return []
    modules = [
        Extension(
            ".".join(source.with_suffix("").parts),
            [str(source)],
            optional=True,
            extra_compile_args=["-O2", "-g0"] if os.name == "posix" else [],
        )
        for source in sources
    ]
    try:
        built: list[Extension] = cythonize(
            modules, compiler_directives={"language_level": "3"}, quiet=True
        )
    except Exception as exc:  # a Cython error: install without the compiled modules
        sys.stderr.write(f"rmq: Cython failed ({exc}); using the pure-Python hot paths\n")
        return []
    return built


class OptionalBuildExt(build_ext):
    """build_ext that reports a module it cannot build instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            sys.stderr.write(f"rmq: no compiled hot paths ({exc}); using pure Python\n")

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            sys.stderr.write(f"rmq: {ext.name} not compiled ({exc}); using pure Python\n")


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
