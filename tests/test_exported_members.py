"""Every module's ``__all__`` names what it defines; ruff's RUF022 keeps it sorted."""

from __future__ import annotations

import importlib
import pkgutil

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


def test_engines_do_not_import_spark() -> None:
    """The engines are plain Python + NumPy: importing them must not pull in pyspark."""
    import subprocess
    import sys

    code = (
        "import sys, trimtab.cluster, trimtab.config, trimtab.contract, trimtab.readers.inventory,"
        " trimtab.topology;"
        "sys.exit(1 if any(m.startswith('pyspark') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
