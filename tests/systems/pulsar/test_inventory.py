"""``trimtab inventory --pulsar-admin``: brokers and their limits from the admin API (issue 42),
against the Pulsar admin stand-in (one real HTTP(S) server per broker), as a user types it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.standins.pulsar.standin import PulsarStandin, ServerTls
from tests.systems.pulsar.conftest import TOKEN
from tests.tls_certs import TlsFiles
from trimtab.cli import app

runner = CliRunner()
Start = Callable[..., PulsarStandin]


def _inventory(*args: str) -> Any:
    return runner.invoke(app, ["inventory", *args])


def _mixed(standin: PulsarStandin) -> dict[str, int]:
    """Brokers of 4, 8 and 16 cores (limits as a LinuxBrokerHostUsageImpl reports them)."""
    cores = dict(zip(standin.brokers, (4, 8, 16), strict=False))
    for broker, n in cores.items():
        standin.cluster.set_limits(broker, cpu=100.0 * n, memory=n * 2048.0)
    return cores


def test_brokers_and_limits_come_from_the_admin_api(
    pulsar_standin: Start, token_file: Path
) -> None:
    """Every active broker, cores/memory/NIC from its own report; the cluster from
    GET /admin/v2/clusters; each load report asked of the broker itself."""
    standin = pulsar_standin(brokers=3, tokens={TOKEN: "admin"})
    cores = _mixed(standin)
    result = _inventory(
        "--pulsar-admin",
        standin.admin_url,
        "--pulsar-token-file",
        str(token_file),
        "--allow-insecure",
        "--json",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    nodes = {n["node"]: n for n in doc["nodes"]}
    assert set(nodes) == set(standin.brokers)
    for broker, n in cores.items():
        row = nodes[broker]
        assert (row["cores"], row["memory_bytes"], row["nic_bps"]) == (n, n * 2048 * 2**20, 10**10)
        assert row["cluster"] == "standalone" and row["role"] == "broker"
        assert row["sources"]["cores"] == "measured"
        assert row["missing"] == ["disk_total_bytes"] and row["problems"] == []
    asked = {(c.broker, c.path) for c in standin.cluster.calls if "load-report" in c.path}
    assert asked == {(b, "/admin/v2/broker-stats/load-report") for b in standin.brokers}
    assert TOKEN not in result.output


def test_a_broker_without_a_report_is_listed_with_the_reason(pulsar_standin: Start) -> None:
    """A broker whose report fails (500) is a row with no capacities and the broker's reason;
    the summary names it. Without --json the CSV goes to stdout, the summary to stderr."""
    standin = pulsar_standin(brokers=3)
    broken = standin.brokers[1]
    standin.cluster.fail_report(broken, "Failed to generate LoadReport")
    result = _inventory("--pulsar-admin", standin.admin_url, "--cluster", "standalone")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("cluster,node,")
    assert len(lines) == 4 and any(line.startswith(f"standalone,{broken},") for line in lines)
    assert "Failed to generate LoadReport" in result.stderr
    assert "500" in result.stderr


def test_https_with_the_cluster_ca(pulsar_standin: Start, tls_files: TlsFiles) -> None:
    """https:// with --tls-ca; without the CA one error line says to give it."""
    standin = pulsar_standin(brokers=2, tls=ServerTls(tls_files.server_cert, tls_files.server_key))
    url = standin.admin_url.replace("127.0.0.1", "localhost")
    ok = _inventory("--pulsar-admin", url, "--tls-ca", str(tls_files.ca), "--json")
    assert ok.exit_code == 0, ok.output
    assert len(json.loads(ok.stdout)["nodes"]) == 2
    refused = _inventory("--pulsar-admin", url)
    assert refused.exit_code == 2
    assert refused.output.count("error:") == 1 and "--tls-ca" in refused.output


def test_unreachable_admin_url_and_refused_token_are_one_error_line(
    pulsar_standin: Start, token_file: Path, tmp_path: Path
) -> None:
    """Nothing listening: one line naming the URL. A token the brokers do not know: 401 and
    where the token came from. A token over http:// without --allow-insecure: refused."""
    down = _inventory("--pulsar-admin", "http://127.0.0.1:1", "--cluster", "c", "--timeout", "2")
    assert down.exit_code == 2
    assert down.output.count("error:") == 1 and "http://127.0.0.1:1" in down.output
    standin = pulsar_standin(brokers=1, tokens={TOKEN: "admin"})
    wrong = tmp_path / "wrong.jwt"
    wrong.write_text("not-the-token\n")
    wrong.chmod(0o600)
    args = ["--pulsar-admin", standin.admin_url, "--allow-insecure"]
    refused = _inventory(*args, "--pulsar-token-file", str(wrong))
    assert refused.exit_code == 2 and "401" in refused.output and "wrong.jwt" in refused.output
    cleartext = _inventory(*args[:2], "--pulsar-token-file", str(token_file))
    assert cleartext.exit_code == 2 and "--allow-insecure" in cleartext.output


def test_written_inventory_is_read_back_by_topology(pulsar_standin: Start, tmp_path: Path) -> None:
    """The CSV it writes is an inventory `topology` takes, with --defaults filling disks."""
    standin = pulsar_standin(brokers=3)
    _mixed(standin)
    defaults = tmp_path / "defaults.csv"
    defaults.write_text("node,region,rack,disk_total_bytes\n,eu,r1,1000000000000\n")
    out = tmp_path / "nodes.csv"
    args = ["--pulsar-admin", standin.admin_url, "--defaults", str(defaults), "-o", str(out)]
    result = _inventory(*args)
    assert result.exit_code == 0, result.output
    assert "3 node(s)" in result.stdout
    shown = runner.invoke(app, ["topology", "--inventory", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    nodes = json.loads(shown.stdout)["clusters"][0]["nodes"]
    assert sorted(n["cores"] for n in nodes) == [4, 8, 16]
