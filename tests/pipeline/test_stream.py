"""``trimtab pipeline stream`` as a real process on local Spark: minute files land one at a
time (bad rows and a late file among them), each minute's decisions are those of
``trimtab pipeline run --replay`` on the files seen so far (and the engine's, with the
shedder's state carried over), and a SIGKILL and restart from the checkpoint neither loses nor
repeats a decision."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.pipeline.conftest import interrupted
from tests.pipeline.engine_reference import (
    DECISION_COLUMNS,
    NODE_FIELDS,
    decision_rows,
    engine_cycle,
)
from tests.pipeline.test_standalone import standalone_master  # noqa: F401 (a fixture)
from trimtab.cli import app
from trimtab.config import Config
from trimtab.config.loader import read_config
from trimtab.pipeline.bundle_samples import BundleSamples
from trimtab.pipeline.generate import FleetSpec, generate_fleet
from trimtab.shedding import (
    Limits,
    LoadModel,
    NodeSample,
    ShedderState,
    shedder_for,
)

#: Acting after two hits in a row, so that the three minutes see a skip, then moves, then a
#: cycle whose choices depend on the moves before (the unloaded bundles' cooldown).
PROPERTIES = "loadBalancerSheddingConditionHitCountThreshold=2\n"
DECISION = ["label", "reason", "broker", "bundle"]
MOVE = ["bundle", "source", "destination"]
TABLES = ("node_metrics", "bundle_metrics")
#: What the bad rows break, as the batch job names it (plus the duplicate sent again later).
BAD = {
    ("node_metrics", "wrong_type"),
    ("node_metrics", "negative"),
    ("node_metrics", "unknown_node"),
    ("node_metrics", "unknown_cluster"),
    ("node_metrics", "missing_key"),
    ("node_metrics", "duplicate"),
    ("node_metrics", "late"),
    ("bundle_metrics", "bad_bundle"),
}


@dataclass
class Fleet:
    gen: Path
    input: Path
    nodes: pd.DataFrame
    node_metrics: pd.DataFrame
    bundle_metrics: pd.DataFrame
    seen: list[pd.DataFrame] = field(default_factory=list)  # accepted rows, step by step
    #: `pipeline run --replay`'s decisions on the files seen after each minute's step: the
    #: files are the same whatever the stream's master, so both runs of the test share them
    replays: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    root = tmp_path_factory.mktemp("stream")
    gen = generate_fleet(
        FleetSpec(clusters=2, brokers=4, bookies=2, bundles=16, minutes=3), root / "gen"
    ).out
    (root / "in" / "nodes").mkdir(parents=True)
    for file in (gen / "nodes").glob("*.parquet"):
        (root / "in" / "nodes" / file.name).write_bytes(file.read_bytes())
    return Fleet(
        gen,
        root / "in",
        pq.read_table(gen / "nodes").to_pandas(),
        pq.read_table(gen / "node_metrics").to_pandas(),
        pq.read_table(gen / "bundle_metrics").to_pandas(),
    )


def land(*files: tuple[Path, str, pa.Table | str]) -> None:
    """Files appear whole and together: all written hidden, then all renamed (as a mover
    would), so that one trigger does not see half of a minute's files."""
    for directory, name, table in files:
        directory.mkdir(parents=True, exist_ok=True)
        if isinstance(table, str):
            (directory / f".{name}").write_text(table)
        else:
            pq.write_table(table, directory / f".{name}")
    for directory, name, _ in files:
        (directory / f".{name}").rename(directory / name)


def minute(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    stamps = sorted(frame["ts"].unique())
    picked: pd.DataFrame = frame[frame["ts"] == stamps[index]]
    return picked


def bad_csv(fleet: Fleet) -> str:
    """Node rows that each break one rule, in the contract's column order."""
    good = minute(fleet.node_metrics, 0).iloc[0].to_dict()
    columns = list(fleet.node_metrics.columns)

    def line(**changes: Any) -> str:
        row = good | changes
        return ",".join("" if row[c] is None else _text(row[c]) for c in columns)

    rows = [
        line(cpu="abc"),
        line(net_in_bps=-5.0),
        line(node="nope.example:8080"),
        line(cluster="nope"),
        line(cluster=None),
    ]
    return ",".join(columns) + "\n" + "\n".join(rows) + "\n"


def _text(value: Any) -> str:
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return repr(float(value)) if isinstance(value, float) else str(value)


class Stream:
    """The command as a process; its status file read until a step has been decided."""

    def __init__(self, fleet: Fleet, out: Path, config: Path, master: str) -> None:
        self.args = [
            sys.executable,
            "-c",
            "import sys; from trimtab.cli import main; sys.argv[0] = 'trimtab'; sys.exit(main())",
            "pipeline",
            "stream",
            "--input",
            str(fleet.input),
            "--output",
            str(out),
            "--trigger",
            "2s",
            "--watermark",
            "1m",
            "--master",
            master,
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--config",
            str(config),
            "--json",
        ]
        self.out = out
        self.log = out.parent / "stream.log"
        self.lines = out.parent / "stream.jsonl"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log, self.lines.open("ab") as lines:
            self.process = subprocess.Popen(self.args, stdout=lines, stderr=log)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def interrupt(self) -> None:
        """Ctrl-C, as a user stops it: the trigger under way is published, then the process
        exits 0 after one line saying so, with no traceback (PySpark's own SIGINT handler
        raised KeyboardInterrupt inside a call to the JVM, and every write under way failed)."""
        assert self.process is not None
        mark = self.log.stat().st_size
        self.process.send_signal(signal.SIGINT)
        assert self.process.wait(180) == 0
        said = self.log.read_bytes()[mark:].decode(errors="replace")
        assert "SIGINT: stopping once the trigger under way is published" in said
        assert "Traceback" not in said, said[-3000:]

    def wait_rows(self, rows: int, timeout_s: float = 300) -> dict[str, Any]:
        """Wait until the published totals count ``rows`` rows read."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                pytest.fail(f"the stream exited: {self.log.read_text()[-3000:]}")
            status = self.status()
            if status is not None and status["totals"]["rows_in"] >= rows:
                return status
            time.sleep(0.5)
        pytest.fail(f"no trigger counted {rows} rows: {self.log.read_text()[-3000:]}")

    def status(self) -> dict[str, Any] | None:
        path = self.out / "status.json"
        try:
            loaded: dict[str, Any] = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return loaded


@pytest.fixture(params=["local", "standalone"])
def stream(fleet: Fleet, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Stream]:
    """The command on ``local[2]``, or on a standalone master with two one-core workers (the
    fixture of test_standalone.py); each run starts from an empty input."""
    master = "local[2]"
    if request.param == "standalone":
        master = request.getfixturevalue("standalone_master")
    for name in ("node_metrics", "bundle_metrics"):
        for file in (fleet.input / name).glob("*"):
            file.unlink()
    config = tmp_path / "broker.conf"
    config.write_text(PROPERTIES)
    running = Stream(fleet, tmp_path / "out", config, master)
    yield running
    running.stop()


@pytest.mark.slow
@pytest.mark.spark  # the stream fixture runs `trimtab pipeline stream`
def test_stream_follows_minute_files_and_survives_sigkill(
    fleet: Fleet, stream: Stream, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    nodes_dir, bundles_dir = fleet.input / "node_metrics", fleet.input / "bundle_metrics"
    node_minutes = [minute(fleet.node_metrics, i) for i in range(3)]
    bundle_minutes = [minute(fleet.bundle_metrics, i) for i in range(3)]
    brokers = fleet.nodes[fleet.nodes["role"].fillna("").str.lower().isin(["broker", ""])]
    held = str(brokers["node"].iloc[0])  # its minute-1 sample lands late
    held_cluster = str(brokers["cluster"].iloc[0])
    late = node_minutes[1][node_minutes[1]["node"] == held]
    landed: dict[str, pd.DataFrame] = {}  # each landed file's rows, by "table/name"
    total = 0

    def drop(
        step: int,
        nodes: pd.DataFrame,
        bundles: pd.DataFrame,
        *bad: tuple[Path, str, pa.Table | str],
        extra: int = 0,
    ) -> int:
        files = [(nodes_dir, f"m{step}.parquet", _arrow(nodes))] if len(nodes) else []
        if len(bundles):
            files.append((bundles_dir, f"m{step}.parquet", _arrow(bundles)))
        land(*files, *bad)
        landed[f"node_metrics/m{step}.parquet"] = nodes
        landed[f"bundle_metrics/m{step}.parquet"] = bundles
        snapshot(fleet.input, tmp_path / f"seen-{step}")
        return len(nodes) + len(bundles) + extra

    stream.start()
    # minute 0, with a CSV of bad node rows and a bundle row with a bad name
    bad_bundle = bundle_minutes[0].iloc[[0]].assign(bundle="not-a-bundle")
    bad = [(nodes_dir, "m0-bad.csv", bad_csv(fleet))]
    bad.append((bundles_dir, "m0-bad.parquet", _arrow(bad_bundle)))
    total += drop(0, node_minutes[0], bundle_minutes[0], *bad, extra=5 + 1)
    stream.wait_rows(total)
    # minute 1 without one broker's sample (it lands late, below)
    total += drop(1, node_minutes[1][node_minutes[1]["node"] != held], bundle_minutes[1])
    stream.wait_rows(total)
    # minute 2, then SIGKILL while the trigger may be running, and a restart
    total += drop(2, node_minutes[2], bundle_minutes[2])
    time.sleep(1.5)
    stream.kill()
    stream.start()
    stream.wait_rows(total)
    # the late file, with an exact copy of a minute-2 row sent again (of minute 2: a minute-0
    # row is refused as late instead whenever Spark has run its no-data batch, which moves
    # the watermark past minute 0, before this file lands)
    copy = node_minutes[2][node_minutes[2]["node"] == held]
    total += drop(3, pd.concat([late, copy]), bundle_minutes[0].iloc[:0])
    stream.wait_rows(total)
    # a sample of a window the watermark (1 minute) has sealed since: refused as late
    too_late = node_minutes[0].iloc[[1]].assign(cpu=0.5)
    land((nodes_dir, "m4.parquet", _arrow(too_late)))
    refused_late = {"node_metrics/m4.parquet": too_late}
    total += 1
    status = stream.wait_rows(total)

    decided = pd.read_parquet(stream.out / "decisions")
    decided["data_time"] = _naive(decided["data_time"])
    transfers = pd.read_parquet(stream.out / "transfers")
    stream.interrupt()  # the replays' Spark runs once the stream's is done: two cores
    # What each trigger read, from the query's checkpoint. A minute's files, landed together,
    # are mostly read by one trigger, not always: the sources (one per table and format) are
    # listed one after the other, so a landing between two listings splits the minute's node
    # and bundle files over two triggers, and the minute gets two cycles, as a live shedder
    # deciding on what has arrived would give it. The references follow the triggers as run.
    triggers = trigger_files(stream.out / "_checkpoint")
    batch_of = {name: batch for batch, (_, names) in triggers.items() for name in names}
    steps = [
        (
            batch,
            _rows(landed, names, "node_metrics", fleet.node_metrics),
            _rows(landed, names, "bundle_metrics", fleet.bundle_metrics),
        )
        for batch, (_, names) in sorted(triggers.items())
    ]
    # Minute k's trigger (cycle k + 1, when minutes 0..k were each read by one trigger)
    # decides what `pipeline run --replay` decides at minute k on the files seen then: its
    # latest cycle, at the same data time. Only the latest is compared: a replay decides each
    # minute on every file given, so a file landing late would count in its own (earlier)
    # minute there, while the stream had decided that minute without it. That is why the late
    # file's trigger (minute 2 decided again) has no replay to equal: a replay on the files
    # seen after it has the late sample in minute 1's cycle, as the live shedder would have
    # had it, and from there its own shedder state. A minute split over two triggers has no
    # replay either (a replay decides once per minute), nor have the minutes after it (their
    # shedder state has one more cycle). The engine check below covers every trigger.
    whole = 0
    while whole < 3 and len({batch_of[f"{t}/m{whole}.parquet"] for t in TABLES}) == 1:
        whole += 1
    for step in range(whole):
        if step not in fleet.replays:
            request.getfixturevalue("spark")  # the test session's, reused by the command
            fleet.replays[step] = replay(tmp_path / f"seen-{step}", tmp_path / f"replay-{step}")
        replayed, replayed_moves = fleet.replays[step]
        for cluster in sorted(set(fleet.nodes["cluster"])):
            mine = replayed[replayed["cluster"] == cluster]
            assert sorted(mine["cycle"].unique()) == list(range(1, step + 2)), (cluster, step)
            for ours, theirs, columns in (
                (decided, mine, [*DECISION, "data_time"]),
                (transfers, replayed_moves[replayed_moves["cluster"] == cluster], MOVE),
            ):
                at = ours[(ours["cluster"] == cluster) & (ours["cycle"] == step + 1)]
                latest = theirs[theirs["cycle"] == step + 1]
                assert _records(at[columns]) == _records(latest[columns]), (cluster, step)
    # Every trigger, the late file's included, against the engine run cycle by cycle here.
    expected = reference(fleet, steps, held_cluster)
    for cluster, want in expected.items():
        got = decided[decided["cluster"] == cluster]
        moved = transfers[transfers["cluster"] == cluster]
        # nothing missing, nothing repeated: one cycle per trigger that had rows, in order
        assert sorted(got["cycle"].unique()) == list(range(1, len(want) + 1)), cluster
        for cycle, (batch, rows) in enumerate(want, start=1):
            mine = got[got["cycle"] == cycle]
            assert set(mine["batch"]) == {batch}, (cluster, cycle)
            assert _records(mine[DECISION]) == _records(rows[DECISION]), (cluster, cycle)
            mine = moved[moved["cycle"] == cycle][MOVE]
            assert _records(mine) == _records(rows[rows["source"].notna()][MOVE]), cluster
    assert len(transfers) == (decided["label"] == "Success").sum() > 0

    refused = pd.read_parquet(stream.out / "quarantine")
    assert set(zip(refused["table"], refused["rule"], strict=True)) == BAD
    assert len(refused) == 8
    # the batch job's reasons, word for word (as `pipeline run` wrote them on these files)
    reasons = dict(zip(refused["rule"], refused["reason"], strict=True))
    stamp = pd.Timestamp(copy["ts"].iloc[0]).strftime("%Y-%m-%d %H:%M:%S")
    assert reasons["duplicate"] == (
        f"an exact duplicate of an earlier row for ts {stamp}, cluster {held_cluster}, node {held}"
    )
    assert reasons["unknown_node"] == (
        f"node nope.example:8080 is not a node of cluster {node_minutes[0]['cluster'].iloc[0]}"
    )
    assert reasons["unknown_cluster"] == "cluster nope is not in the inventory"
    assert reasons["negative"] == "net_in_bps -5.0 is negative"
    assert reasons["wrong_type"] == "not a number: cpu"
    assert reasons["bad_bundle"] == (
        "bad bundle name not-a-bundle: expected tenant/namespace/0xLOWER_0xUPPER"
    )
    assert status["totals"] == {"rows_in": total, "rows_quarantined": 8}
    assert set(status["clusters"]) == set(fleet.nodes["cluster"])
    # Minute 0 is sealed for a cluster once the watermark has passed it, in the first trigger
    # that then has rows of the cluster: the late file's, for its cluster (and the other's
    # too, when minute 2 was split). One node_load row per node, each of one sample.
    minute_one_ms = pd.Timestamp(node_minutes[1]["ts"].iloc[0]).value // 10**6
    rows_of = landed | refused_late
    sealing = {
        cluster
        for watermark_ms, names in triggers.values()
        if watermark_ms >= minute_one_ms
        for name in names
        if name in rows_of
        for cluster in rows_of[name]["cluster"]
    }
    assert held_cluster in sealing
    sealed = pd.read_parquet(stream.out / "node_load")
    zero = node_minutes[0][node_minutes[0]["cluster"].isin(sealing)]
    assert sorted(sealed["node"]) == sorted(zero["node"]) and (sealed["samples"] == 1).all()
    assert set(sealed["window_start"]) == {
        pd.Timestamp(node_minutes[0]["ts"].iloc[0]).tz_convert(None)
    }
    # --json: one JSON document per trigger on stdout, nothing else
    printed = [json.loads(line) for line in stream.lines.read_text().splitlines()]
    assert sum(p["rows_in"] for p in printed) >= total
    assert printed[-1] == status


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trigger", "soon"], "--trigger 'soon' is not a duration"),
        (["--trigger", "0s"], "--trigger '0s' must be from 1 s to 7 days"),
        (["--watermark", "9d"], "--watermark '9d' must be from 1 s to 7 days"),
        (["--strategy", "nope"], "--strategy 'nope' is not a shedder"),
        (["--conf", "novalue"], "--conf takes key=value"),
        (["--window", "x"], "--window"),
    ],
)
def test_options_are_checked_before_spark_starts(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "in" / "nodes").mkdir(parents=True)
    result = CliRunner().invoke(
        app,
        [
            "pipeline",
            "stream",
            "--input",
            str(tmp_path / "in"),
            "--output",
            str(tmp_path / "o"),
            *args,
        ],
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.count("error:") == 1 and message in result.stderr


def _java_child(pid: int) -> bool:
    """Whether process ``pid`` has started a JVM (Spark's driver) as its child (Linux)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()  # "pid (name) state ppid ..."
        except OSError:  # the process ended meanwhile
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 1 :]
        if name == "java" and int(rest.split()[1]) == pid:
            return True
    return False


@pytest.mark.spark
@pytest.mark.subprocess
def test_ctrl_c_while_spark_starts_stops_cleanly(tmp_path: Path) -> None:
    """SIGINT while Spark is starting (its JVM is up, the session not yet): the command says
    it stops, exits 0 once Spark is up, starts no query and prints no traceback. (PySpark's
    own handler, installed on the main thread with the session, raised KeyboardInterrupt
    inside a call to the JVM: exit 130 and py4j's tracebacks.)"""
    (tmp_path / "in" / "nodes").mkdir(parents=True)
    command = [sys.executable, "-c", "import sys; from trimtab.cli import main; main()"]
    args = ["pipeline", "stream", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o")]
    status, said = interrupted([*command, *args], tmp_path / "stream.log", _java_child)
    assert status == 0, said[-3000:]
    assert "SIGINT: stopping once the trigger under way is published" in said
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said[-3000:]
    assert not (tmp_path / "o" / "_checkpoint").exists()


def test_an_input_without_inventory_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["pipeline", "stream", "--input", str(tmp_path), "--output", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "no nodes/ directory" in result.stderr


def snapshot(source: Path, target: Path) -> None:
    """The input's landed files as they are now (hidden ones, still being written, left out)."""
    for name in ("nodes", "node_metrics", "bundle_metrics"):
        (target / name).mkdir(parents=True)
        for file in (source / name).glob("[!._]*"):
            shutil.copyfile(file, target / name / file.name)


def replay(seen: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``trimtab pipeline run --replay`` on ``seen``, in this process (the test session's
    Spark is reused): its decisions and transfers, ``data_time`` as the stream writes it."""
    config = out.parent / "replay.conf"
    config.write_text(PROPERTIES)
    args = ["pipeline", "run", "--input", str(seen), "--output", str(out), "--replay"]
    args += ["--config", str(config), "--master", "local[2]", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    decisions = pd.read_parquet(out / "decisions")
    decisions["data_time"] = _naive(decisions["data_time"])
    return decisions, pd.read_parquet(out / "transfers")


def _naive(times: pd.Series) -> pd.Series:
    """UTC times without a zone, as the stream's tables hold them."""
    stamps = pd.to_datetime(times, utc=True).dt.tz_convert(None)
    return stamps.astype("datetime64[us]")


def _arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False)


def _records(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    plain = frame.astype(object)
    return sorted(
        tuple(None if pd.isna(v) else v for v in r) for r in plain.itertuples(index=False)
    )


def reference(
    fleet: Fleet, steps: list[tuple[int, pd.DataFrame, pd.DataFrame]], late_cluster: str
) -> dict[str, list[tuple[int, pd.DataFrame]]]:
    """The engine on the data seen after each trigger, per cluster that got accepted rows in
    it: every broker's samples folded from the first (no streaming state), its bundles'
    newest samples, one cycle with the shedder's state from the cluster's cycle before; with
    the trigger's batch."""
    path = fleet.input.parent / "reference.conf"
    path.write_text(PROPERTIES)
    config = read_config(path).config
    model = LoadModel.of(config.shedding)
    shedder = shedder_for(config.shedding)
    states: dict[str, ShedderState] = {}
    cycles: dict[str, int] = {}
    decided: dict[str, list[tuple[int, pd.DataFrame]]] = {}
    seen_nodes = fleet.node_metrics.iloc[:0]
    seen_bundles = fleet.bundle_metrics.iloc[:0]
    for batch, nodes, bundles in steps:
        seen_nodes = pd.concat([seen_nodes, nodes]).drop_duplicates(["cluster", "node", "ts"])
        seen_bundles = pd.concat([seen_bundles, bundles])
        touched = set(nodes["cluster"]) | set(bundles["cluster"])
        for cluster in sorted(touched):
            cycles[cluster] = cycles.get(cluster, 0) + 1
            result = engine_cycle(
                model,
                shedder,
                cluster,
                fleet.nodes,
                seen_nodes,
                seen_bundles,
                state=states.get(cluster),
                cycle=cycles[cluster],
            )
            states[cluster] = result.state
            rows = pd.DataFrame(decision_rows(result), columns=DECISION_COLUMNS)
            decided.setdefault(cluster, []).append((batch, rows))
    assert late_cluster in decided
    return decided


def trigger_files(checkpoint: Path) -> dict[int, tuple[int, set[str]]]:
    """Per batch of the query's checkpoint: its watermark (ms) and the files it read, as
    ``table/name``. ``offsets/N`` holds each source's log offset after batch N (one line per
    source, ``-`` before its first file); ``sources/I/*`` lists source I's files per offset."""
    read: dict[int, dict[int, set[str]]] = {}  # source -> its log offset -> files
    for log in (checkpoint / "sources").glob("*/[0-9]*"):  # N, or N.compact (every 10)
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            name = "/".join(Path(entry["path"]).parts[-2:])
            read.setdefault(int(log.parent.name), {}).setdefault(entry["batchId"], set()).add(name)
    triggers: dict[int, tuple[int, set[str]]] = {}
    before: dict[int, int] = {}
    for path in sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name)):
        _, meta, *offsets = path.read_text().splitlines()
        names: set[str] = set()
        for source, text in enumerate(offsets):
            offset = -1 if text == "-" else int(json.loads(text)["logOffset"])
            for new in range(before.get(source, -1) + 1, offset + 1):
                names |= read.get(source, {}).get(new, set())
            before[source] = offset
        triggers[int(path.name)] = (int(json.loads(meta)["batchWatermarkMs"]), names)
    return triggers


def _rows(
    landed: dict[str, pd.DataFrame], names: set[str], table: str, empty: pd.DataFrame
) -> pd.DataFrame:
    """The rows of ``table``'s landed files among ``names`` (refused or unknown files left out)."""
    frames = [
        landed[name] for name in sorted(names) if name in landed and name.startswith(f"{table}/")
    ]
    return pd.concat([empty.iloc[:0], *frames])


def two_bundles() -> BundleSamples:
    """Two bundle samples, one with its stored bytes, one refused as a conflict."""
    return BundleSamples(
        bundle=["t/n/0x0_0x1", "t/n/0x1_0x2"],
        broker=["b1:8080", "b2:8080"],
        ts_us=[120_000_000, 60_000_000],
        rates=[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
        storage=[None, 1024.0],
        source=["f", None],
        conflict=[False, True],
    )


def test_cluster_state_survives_its_json_form() -> None:
    """What the state store keeps per cluster comes back the same: the pending samples, the
    folds, the bundles and every part of the shedder's state."""
    from types import MappingProxyType

    from trimtab.pipeline.stream import ClusterStream
    from trimtab.shedding import Folded, Prediction

    state = ClusterStream(
        sealed_us=60_000_000,
        pending={"b1:8080": {120_000_000: {"cpu": 0.5, "_source_file": "f"}}},
        folded={
            "b1:8080": Folded(
                last=NodeSample(ts=60.0, cpu=0.4),
                weighted_max_ema=0.3,
                msg_throughput_ema=10.0,
                samples=2,
            )
        },
        bundles=two_bundles(),
        shedder=ShedderState(
            hit_count=2,
            recently_unloaded_bundles=MappingProxyType({"t/n/0x0_0x1": 90.0}),
            recently_unloaded_brokers=MappingProxyType({"b1:8080": 90.0}),
            scores=MappingProxyType({"b1:8080": 0.7}),
            predictions=(
                Prediction(broker="b1:8080", delta=0.1, throughput=5.0, at=90.0, samples=2),
            ),
            spread_hits=1,
        ),
        cycles=3,
    )
    assert ClusterStream.loads(state.dumps()) == state


def test_cluster_state_of_an_earlier_checkpoint_still_loads() -> None:
    """A checkpoint written before the bundle samples were kept as columns (per
    ``"bundle|broker"`` a JSON list) is read into the same state, so an upgrade goes on from
    its checkpoint."""
    import json

    from trimtab.pipeline.stream import ClusterStream

    earlier = {
        "sealed_us": 0,
        "pending": {},
        "folded": {},
        "bundles": {
            "t/n/0x0_0x1|b1:8080": [120_000_000, 1.0, 2.0, 3.0, 4.0, None, "f", False],
            "t/n/0x1_0x2|b2:8080": [60_000_000, 5.0, 6.0, 7.0, 8.0, 1024, None, True],
        },
        "shedder": json.loads(ClusterStream().dumps())["shedder"],
        "cycles": 2,
    }
    state = ClusterStream.loads(json.dumps(earlier))
    assert state.bundles == two_bundles()
    assert state.cycles == 2
    assert ClusterStream.loads(state.dumps()) == state


def checked_row(table: str, ts_us: int, source: str, **values: Any) -> dict[str, Any]:
    """One row of cluster ``c`` as the state function gets it, checked (no rule broken):
    the columns of both telemetry tables, the other table's empty, the sample's at 0.5."""
    from trimtab.pipeline.bundle_samples import BUNDLE_VALUES, RATES

    empty = [*NODE_FIELDS, "disk_free_bytes", "disk_total_bytes", *BUNDLE_VALUES]
    row = dict.fromkeys([*empty, "node", "bundle", "broker", "_rule", "_reason", "_raw"])
    row |= dict.fromkeys(NODE_FIELDS if table == "node_metrics" else RATES, 0.5)
    row |= {"_table": table, "cluster": "c", "ts_us": ts_us, "_source_file": source}
    return row | {"_landed_us": 0} | values


def test_conflicting_samples_are_both_refused_and_the_stream_goes_on() -> None:
    """A second row for a node's sample time that differs: refused as ``conflict``, and the
    first one no longer counts (as the batch job refuses both); an equal one: ``duplicate``."""
    from trimtab.pipeline.stream import ClusterStream, Decider, Inventory, Node, current_fold

    limits = Limits(cores=8.0, memory_bytes=2.0**35, nic_bps=1e10)
    inventory = Inventory({"c": {n: Node(limits, True, True) for n in ("a:1", "b:1")}})
    decider = Decider(inventory, Config(), None, 0, 60_000_000)

    def row(node: str, source: str, **changes: float) -> dict[str, Any]:
        return checked_row("node_metrics", 0, source, node=node, **changes)

    state = ClusterStream()
    first = pd.DataFrame([row("a:1", "f1"), row("b:1", "f1")])
    decider.run("c", first, state, 0)
    again = pd.DataFrame([row("a:1", "f2", cpu=0.9), row("b:1", "f2")])
    out = decider.run("c", again, state, 0)
    refused = {(r["rule"], r["reason"]) for r in out if r["kind"] == "quarantine"}
    assert refused == {
        (
            "conflict",
            "conflicting rows for ts 1970-01-01 00:00:00, cluster c, node a:1: this one and "
            "one in f1 differ, so both are refused",
        ),
        (
            "duplicate",
            "an exact duplicate of an earlier row for ts 1970-01-01 00:00:00, cluster c, node b:1",
        ),
    }
    model = LoadModel.of(Config().shedding)
    assert current_fold(state, "a:1", inventory.clusters["c"]["a:1"], model, None) is None
    assert current_fold(state, "b:1", inventory.clusters["c"]["b:1"], model, None) is not None


def test_a_bundle_no_longer_reported_is_forgotten_after_the_load_data_ttl() -> None:
    """A bundle that stops reporting (it moved, split or was deleted) stays in the cluster's
    state only while the shedder could still see it: once its newest sample is older than the
    newest data by more than loadBalancerBrokerLoadDataTTLInSeconds, it is dropped, so the
    state does not grow with every bundle the stream has ever seen."""
    from trimtab.pipeline.stream import (
        OUT_COLUMNS,
        ClusterStream,
        Decider,
        Inventory,
        Node,
        _status,
    )

    limits = Limits(cores=8.0, memory_bytes=2.0**35, nic_bps=1e10)
    inventory = Inventory({"c": {n: Node(limits, True, True) for n in ("a:1", "b:1")}})
    decider = Decider(inventory, Config(), None, 0, 60_000_000)
    ttl_us = Config().shedding.load_data_ttl_seconds * 1_000_000

    def node(name: str, ts_us: int) -> dict[str, Any]:
        return checked_row("node_metrics", ts_us, f"n{ts_us}", node=name)

    def bundle(name: str, broker: str, ts_us: int) -> dict[str, Any]:
        return checked_row("bundle_metrics", ts_us, f"b{ts_us}", bundle=name, broker=broker)

    state = ClusterStream()
    first = [node("a:1", 0), node("b:1", 0), bundle("t/n/gone", "a:1", 0)]
    decider.run("c", pd.DataFrame([*first, bundle("t/n/kept", "b:1", 0)]), state, 0)
    assert sorted(state.bundles.bundle) == ["t/n/gone", "t/n/kept"]
    at = ttl_us  # exactly the TTL later: still seen (upstream's ">"), still kept
    decider.run("c", pd.DataFrame([node("a:1", at), bundle("t/n/kept", "b:1", at)]), state, 0)
    assert sorted(state.bundles.bundle) == ["t/n/gone", "t/n/kept"]
    at = ttl_us + 60_000_000
    out = decider.run("c", pd.DataFrame([node("a:1", at), bundle("t/n/kept", "b:1", at)]), state, 0)
    assert state.bundles.bundle.tolist() == ["t/n/kept"]
    table, _ = state.bundles.newest()
    assert table.names == ("t/n/kept",)
    # The cycle names what it forgot, and status.json counts it once, a rerun included.
    (summary,) = (row for row in out if row["kind"] == "cluster")
    assert (summary["samples"], summary["bundle"]) == (1, "t/n/gone")
    trigger = datetime.fromtimestamp(at / 1e6 + 5, UTC)
    shown = _status(pd.DataFrame(out, columns=OUT_COLUMNS), trigger, 7, None)
    stale = {"count": 1, "latest": ["t/n/gone"]}
    assert shown["clusters"]["c"]["stale_bundles"] == stale
    again = _status(pd.DataFrame(out, columns=OUT_COLUMNS), trigger, 7, shown)
    assert again["clusters"]["c"]["stale_bundles"] == stale
    later = _status(pd.DataFrame(out, columns=OUT_COLUMNS), trigger, 8, shown)
    assert later["clusters"]["c"]["stale_bundles"] == {"count": 2, "latest": ["t/n/gone"]}
