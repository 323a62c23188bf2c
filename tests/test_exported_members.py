"""Every module's ``__all__`` names what it defines; ruff's RUF022 keeps it sorted."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import trimtab

MODULES = sorted(m.name for m in pkgutil.walk_packages(trimtab.__path__, "trimtab."))


@pytest.mark.parametrize("name", MODULES)
def test_all_is_complete_and_resolvable(name: str) -> None:
    """__all__ exists without repeats, and each name in it is defined by the module."""
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names undefined {missing}"


#: What an engine may never load: I/O libraries, the real systems' clients, Spark, file readers.
IO_LIBRARIES = (
    "kazoo",
    "grpc",
    "google.protobuf",
    "pyspark",
    "pyarrow",
    "httpx",
    "kafka",
    "jproperties",
    "prometheus_client",
    "trimtab.systems",
    "trimtab.readers",
    "trimtab.pipeline",
    "trimtab.config.loader",
)
ENGINES = ("trimtab.placement", "trimtab.shedding", "trimtab.allocation", "trimtab.topology")


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_import_no_io_library(engine: str) -> None:
    """Importing an engine and every module in it loads none of the I/O libraries: the engines
    decide on snapshots (the import-linter contract in pyproject.toml says the same statically)."""
    code = f"""
import importlib, pkgutil, sys
package = importlib.import_module({engine!r})
for info in pkgutil.walk_packages(package.__path__, {engine!r} + "."):
    importlib.import_module(info.name)
loaded = sorted({{m for m in sys.modules for lib in {IO_LIBRARIES!r}
                 if m == lib or m.startswith(lib + ".")}})
print(" ".join(loaded))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == [], f"{engine} loads {run.stdout.strip()}"
