"""Campaign rows for the plans issue 43 found a person would not trust, each run as the user
typed it (in-process through :func:`trimtab.cli.main`, or as a real ``trimtab`` process where
the case is a long-running loop).

- a round trip: ``shed --zk … --until-balanced`` on three brokers at 87.5, 6.2 and 7.5 % moved
  one bundle there and back, and printed both unloads;
- moves nobody needs: the demo recommended 33 transfers on clusters within the target, and its
  per-core chart averaged the even share over bookies too;
- labels: moves off the hottest broker read ``Underloaded`` with no plain why;
- the live loop: ``shed --zk --follow`` moved a bundle *to* a broker whose report had just been
  refused, and printed "reported -55s after its last unload";
- a balance left alone: 6 partitions at RF 2 on 2 of 7 equal brokers planned 0 moves;
- the hit count: "hit 1 time(s) in a row; acting after 1", and then no action.

The stream's cases (a file read in two halves, a Latin-1 file) are in test_found_stream.py: they
cost a JVM of their own.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from kazoo.client import KazooClient
from pyspark.sql import SparkSession

from tests.online.conftest import ZooKeeperServer
from tests.online.test_shed_follow import Brokers, start_loop, stop_loop, until
from tests.online.test_shed_follow import brokers as brokers  # the fixture
from tests.robustness.harness import check_contract, invoke
from tests.shedding.pulsar_reports import broker_report, document

ROOT = Path(__file__).parents[2]
SHEDDING = ROOT / "examples" / "shedding"
#: A transfer's plain why names its source as the hottest or above the mean, or the move as the
#: back half of a swap (transfer shedder) or a trade (balanced).
SOURCE_WHY = re.compile(
    r"^((swap|trade): )?\S+ at \d+% (is the most loaded|is above the mean|takes a larger)"
)


@pytest.fixture
def three_brokers(zookeeper: ZooKeeperServer) -> Iterator[str]:
    """Issue 43's three brokers, at 87.5, 6.2 and 7.5 % with four bundles each, as
    ``LocalBrokerData`` under ``/loadbalance/brokers`` of a root of their own."""
    root = f"/roundtrip-{os.getpid()}"
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=30)
    now = time.time()
    try:
        for i, cpu in enumerate((0.875, 0.062, 0.075), start=1):
            broker = f"broker-{i}:8080"
            bundles = {f"public/ns{i}/0x{k:08x}_0x{k + 1:08x}": 1e7 * cpu for k in range(4)}
            report = broker_report(broker, cpu=cpu, bundles=bundles, last_update=now)
            path = f"{root}/loadbalance/brokers/{broker}"
            client.create(path, document(report), makepath=True)
        yield f"{zookeeper.hosts}{root}"
    finally:
        client.delete(root, recursive=True)
        client.stop()
        client.close()


@pytest.mark.parametrize("strategy", ["balanced", "transfer", "threshold"])
def test_a_shed_over_zookeeper_is_net_and_never_moves_a_bundle_back(
    three_brokers: str, strategy: str
) -> None:
    """No bundle in the plan twice, none back where it started; every source is the hottest
    broker or above the mean when its cycle starts (or gives a bundle back in a swap), and the
    pulsar-admin script carries exactly the net unloads."""
    args = ["shed", "--zk", three_brokers, "--until-balanced", "--strategy", strategy]
    run = invoke([*args, "--json"], watchdog=60)
    check_contract(run)
    assert run.result.exit_code == 0, run.describe()
    doc = json.loads(run.result.stdout)
    net = doc["net_transfers"]
    assert len({t["bundle"] for t in net}) == len(net)
    assert all(t["source"] != t["destination"] for t in net)
    for t in doc["transfers"]:
        assert SOURCE_WHY.match(t["why"]) and t["why"].split(" at ")[0].endswith(t["source"]), t
    assert doc["std_after"] <= doc["std_before"]
    script = invoke([*args, "--format", "pulsar-admin"], watchdog=60)
    check_contract(script)
    unloads = [x for x in script.result.stdout.splitlines() if x.startswith("pulsar-admin ")]
    assert len(unloads) == len(net)
    namespaces = sorted(t["bundle"].rsplit("/", 1)[0] for t in net)
    assert sorted(x.split()[3] for x in unloads) == namespaces


@pytest.mark.parametrize("threshold", [0, 1, 3])
def test_the_hit_count_note_says_when_the_shedder_acts_and_it_does(
    threshold: int, tmp_path: Path
) -> None:
    """With ``loadBalancerSheddingConditionHitCountThreshold`` T the transfer shedder acts in
    cycle T + 1 (upstream's count is exclusive); each waiting cycle's note says so, in the table
    and in ``--json`` alike."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"loadBalancerSheddingConditionHitCountThreshold={threshold}\n")
    args = ["shed", "--load-reports", str(SHEDDING / "load-reports"), "--strategy", "transfer"]
    args += ["--cycles", str(threshold + 1), "-c", str(conf)]
    run = invoke([*args, "--json"], watchdog=60)
    table = invoke(args, watchdog=60)
    for r in (run, table):
        check_contract(r)
        assert r.result.exit_code == 0, r.describe()
    doc = json.loads(run.result.stdout)
    waits = [d for d in doc["decisions"] if d["reason"] == "HitCount"]
    assert [d["cycle"] for d in waits] == list(range(1, threshold + 1))
    for d in waits:
        times = "1 time" if d["cycle"] == 1 else f"{d['cycle']} times"
        assert d["note"].startswith(f"shedding condition hit {times} in a row; it acts at ")
        assert f"it acts at {threshold + 1} in a row" in d["note"]
    assert {t["cycle"] for t in doc["transfers"]} == {threshold + 1}
    if waits:
        assert f"it acts at {threshold + 1} in a row" in " ".join(table.result.stdout.split())


def test_the_follow_loop_leaves_a_broker_with_a_refused_report_alone(
    zookeeper: ZooKeeperServer, brokers: Brokers, tmp_path: Path
) -> None:
    """``shed --zk … --follow``: one broker's report turns to garbage while another runs hot.
    Until a good report comes back the refused broker is neither source nor destination, its
    decision row says it waits, and no duration is negative; then it takes load again."""
    proc = start_loop(zookeeper, brokers, tmp_path)
    refused = "broker1:8080"
    lines: list[dict[str, object]] = []
    try:
        until(proc, lambda c: len(c["brokers"]) == 5)

        def spoil() -> None:
            brokers.live.discard(refused)
            brokers.client.set(brokers.path(refused), b"{not json")
            brokers.cpu["broker5:8080"] = 0.95

        brokers.change(spoil)
        for _ in range(12):
            lines.append(until(proc, lambda c: True))
        brokers.change(lambda: brokers.live.add(refused))
        back = until(proc, lambda c: any(t["destination"] == refused for t in c["transfers"]))
    finally:
        stop_loop(proc)
    waiting = [c for c in lines if refused in json.dumps(c.get("decisions", c))]
    assert waiting, lines[-1]
    for cycle in lines:
        for t in cycle["transfers"]:  # type: ignore[attr-defined]
            assert refused not in (t["source"], t["destination"]), cycle
    assert any("until a good report" in json.dumps(c) for c in lines), lines[-1]
    assert not re.search(r"-\d+(\.\d+)?s\b", json.dumps([*lines, back])), lines
    assert any(t["destination"] == refused for t in back["transfers"])


@pytest.mark.slow
def test_the_demo_recommends_no_moves_where_a_cluster_is_within_the_target(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The demo's two commands as ``make demo`` types them. A cluster whose broker loads are
    within the target (std under it, every broker within mean ± target) gets "Nothing to do" and
    no unload; a recommended plan lowers the hottest broker by at least ``min_hottest_gain``
    (0.02); the per-core chart's even share counts writable brokers' cores only."""
    fleet, out = tmp_path / "fleet", tmp_path / "results"
    made = invoke(["generate-fleet", "--out", str(fleet), "--bad-rows", "0.01"], watchdog=300)
    check_contract(made)
    args = ["pipeline", "run", "--input", str(fleet), "--output", str(out)]
    run = invoke([*args, "--master", "local[2]", "--conf", "spark.ui.enabled=false"], watchdog=1200)
    check_contract(run, outputs=[out])
    assert run.result.exit_code == 0, run.describe()
    doc = json.loads((out / "run.json").read_text())
    loads = pd.read_parquet(out / "plan_loads")
    for cluster, info in doc["clusters"].items():
        mine = loads[loads["cluster"] == cluster]
        before, target = mine["load_before"], info["target_std"]
        within = before.std(ddof=0) < target and (before - before.mean()).abs().max() <= target
        if within:
            assert info["recommended"] is None and info["unloads"] == 0, (cluster, info)
            assert info["recommendation"].startswith("Nothing to do: the cluster is within")
        if info["recommended"] is not None:
            assert before.max() - mine["load_after"].max() >= 0.02 - 1e-9, (cluster, info)
    inventory = pd.read_parquet(out / "inventory")
    allocations = pd.read_parquet(out / "allocations")
    html = (out / "report.html").read_text()
    shown = [float(x) for x in re.findall(r"even share \((\d+\.\d+)\)", html)]
    expected = []
    for cluster in sorted(doc["clusters"]):
        nodes = inventory[(inventory["cluster"] == cluster) & (inventory["state"] == "writable")]
        cores = nodes[nodes["role"] == "broker"]["cores"].sum()
        expected.append(round((allocations["cluster"] == cluster).sum() / cores, 2))
    assert sorted(shown) == sorted(expected)  # the report's clusters in its own order


def test_small_topics_on_seven_equal_brokers_are_balanced(tmp_path: Path) -> None:
    """6 partitions at RF 2 all on brokers 1 and 2 of 7 equal brokers: `rebalance --mode
    continuous` planned 0 moves ("balance 3.5 -> 3.5"); it now moves down to the bound."""
    inventory = tmp_path / "inventory.csv"
    inventory.write_text(
        "cluster,node,rack,cores,memory_bytes,disk_total_bytes,nic_bps,state\n"
        + "".join(f"c,{b},r{b},4,{2**36},{10**12},{10**10},writable\n" for b in range(1, 8))
    )
    assignment = tmp_path / "assignment.json"
    partitions = [{"topic": "t", "partition": p, "replicas": [1, 2]} for p in range(6)]
    assignment.write_text(json.dumps({"version": 1, "partitions": partitions}))
    args = ["rebalance", "-i", str(inventory), "-a", str(assignment), "--mode", "continuous"]
    run = invoke([*args, "--json"], watchdog=60)
    check_contract(run)
    doc = json.loads(run.result.stdout)
    assert run.result.exit_code == 0 and len(doc["moves"]) == doc["lower_bound_moves"] > 0


def test_a_shed_plan_is_net_and_says_why_each_transfer() -> None:
    """`shed --until-balanced` on the example reports: no bundle moves twice, every transfer
    has a plain why beside upstream's label, and the pulsar-admin lines are the net moves
    grouped by cycle with the pause between cycles."""
    reports = str(SHEDDING / "load-reports")
    run = invoke(["shed", "--load-reports", reports, "--until-balanced", "--json"], watchdog=60)
    check_contract(run)
    doc = json.loads(run.result.stdout)
    bundles = [t["bundle"] for t in doc["net_transfers"]]
    assert bundles and len(bundles) == len(set(bundles))
    assert all(SOURCE_WHY.match(t["why"]) and t["reason"] for t in doc["transfers"])
    script = invoke(
        ["shed", "--load-reports", reports, "--until-balanced", "--format", "pulsar-admin"],
        watchdog=60,
    )
    check_contract(script)
    lines = script.result.stdout.splitlines()
    commands = [line for line in lines if line.startswith("pulsar-admin ")]
    assert len(commands) == len(bundles)
    assert any(line.startswith("sleep ") for line in lines) == (
        len({t["cycle"] for t in doc["net_transfers"]}) > 1
    )
