"""The sample fleet generator (no Spark needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trimtab.pipeline.generate import BAD_RULES, FleetSpec, generate_fleet


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for file in sorted(root.rglob("*")):
        if file.is_file():
            h.update(file.relative_to(root).as_posix().encode())
            h.update(file.read_bytes())
    return h.hexdigest()


def test_same_seed_writes_identical_files(tmp_path: Path) -> None:
    """Two runs with one seed give byte-identical tables; another seed differs."""
    spec = FleetSpec(clusters=2, brokers=3, bookies=3, bundles=8, minutes=5, bad_rows=0.05)
    generate_fleet(spec, tmp_path / "a")
    generate_fleet(spec, tmp_path / "b")
    generate_fleet(
        FleetSpec(clusters=2, brokers=3, bookies=3, bundles=8, minutes=5, seed=8), tmp_path / "c"
    )
    assert digest(tmp_path / "a") == digest(tmp_path / "b") != digest(tmp_path / "c")


def test_fleet_has_the_promised_shape(tmp_path: Path) -> None:
    """Row counts follow the spec; each cluster has one empty broker and one read-only bookie."""
    spec = FleetSpec(clusters=3, brokers=5, bookies=4, bundles=12, minutes=7)
    fleet = generate_fleet(spec, tmp_path)
    assert fleet.rows["node_metrics"] == 3 * (5 + 4) * 7
    assert fleet.rows["bundle_metrics"] == 3 * 12 * 7
    nodes = pq.read_table(tmp_path / "nodes" / "nodes.parquet").to_pylist()
    bundles = pq.read_table(tmp_path / "bundle_metrics").to_pylist()
    for cluster in {n["cluster"] for n in nodes}:
        members = [n for n in nodes if n["cluster"] == cluster]
        assert sum(n["state"] == "readonly" for n in members) == 1
        brokers = [n["node"] for n in members if ":8080" in n["node"]]
        owners = {b["broker"] for b in bundles if b["cluster"] == cluster}
        assert len(set(brokers) - owners) == 1  # the newly added broker owns nothing yet
    assert len({n["cores"] for n in nodes}) > 1 and len({n["disk_total_bytes"] for n in nodes}) > 1


def test_bad_rows_cover_every_rule(tmp_path: Path) -> None:
    """With bad rows on, every rule of each table (inventory and telemetry) has a row."""
    fleet = generate_fleet(
        FleetSpec(clusters=1, brokers=2, bookies=2, bundles=4, minutes=3, bad_rows=0.2), tmp_path
    )
    for table, rules in BAD_RULES.items():
        assert set(fleet.bad[table]) == set(rules)


@pytest.mark.parametrize("field", ["clusters", "minutes", "bundles"])
def test_spec_rejects_empty_sizes(field: str) -> None:
    """A fleet of nothing is refused with the field named."""
    with pytest.raises(ValueError, match=field):
        FleetSpec(**{field: 0})  # type: ignore[arg-type]
