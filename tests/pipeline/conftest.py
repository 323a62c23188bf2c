"""One local Spark session for the whole test run (it takes ~10 s to start)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from trimtab.pipeline.generate import FleetSpec, GeneratedFleet, generate_fleet
from trimtab.pipeline.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session(
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
        app_name="trimtab-tests",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dirty_fleet(tmp_path_factory: pytest.TempPathFactory) -> GeneratedFleet:
    """A small fleet with malformed rows of every kind the generator knows."""
    out = tmp_path_factory.mktemp("fleet")
    return generate_fleet(
        FleetSpec(clusters=2, brokers=4, bookies=4, bundles=16, minutes=20, bad_rows=0.02), out
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
