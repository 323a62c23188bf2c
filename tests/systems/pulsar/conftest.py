"""Fixtures of the Pulsar target tests: the admin stand-in, an admin token file, and
targets closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.standins.pulsar.fixtures import pulsar_standin
from trimtab.systems.pulsar.target import PulsarTarget, PulsarTargetOptions, connect_pulsar

__all__ = ["TOKEN", "connect", "pulsar_standin", "secret_file", "token_file"]

#: The stand-ins' admin token (a super-user's) in these tests: searched for in every output.
TOKEN = "eyJhbGciOiJIUzI1NiJ9.c3VwZXJ1c2Vy.admin-signature"


def secret_file(directory: Path, text: str, name: str = "admin.jwt") -> Path:
    """``text`` in ``directory/name``, readable by its owner only."""
    path = directory / name
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return secret_file(tmp_path, TOKEN)


@pytest.fixture
def connect() -> Iterator[Callable[..., PulsarTarget]]:
    """``connect(url, **options)``: :func:`connect_pulsar` for cluster ``standalone``; every
    target is closed after the test (its httpx connections)."""
    opened: list[PulsarTarget] = []

    def open_target(url: str, **options: object) -> PulsarTarget:
        target = connect_pulsar(PulsarTargetOptions(url, "standalone", **options))  # type: ignore[arg-type]
        opened.append(target)
        return target

    yield open_target
    for target in opened:
        target.close()
