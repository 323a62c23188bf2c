"""``trimtab execute`` as a user types it, on a Pulsar plan, against the admin stand-in:
dry run, --approve, a bundle re-owned mid-run, --rollback, a wrong digest, and the token in
no output."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.standins.pulsar.standin import PulsarStandin, ServerTls
from tests.systems.pulsar.conftest import TOKEN
from tests.tls_certs import TlsFiles
from trimtab.cli import app
from trimtab.plans.document import Action, PlanDocument

Start = Callable[..., PulsarStandin]
runner = CliRunner()


def plan_of(standin: PulsarStandin, moves: Sequence[tuple[str, str, str | None]]) -> PlanDocument:
    """A shed plan of ``moves`` (bundle, from, to), as ``shed --plan`` writes one."""
    actions = tuple(
        Action(
            f"u{i}",
            "unload",
            bundle,
            {"owner": source},
            {"owner": dest},
            {"throughput": 2_000_000, "cycle": 1},
            "overloaded",
        )
        for i, (bundle, source, dest) in enumerate(moves)
    )
    return PlanDocument(
        system="pulsar",
        cluster="standalone",
        created="2026-11-28T16:00:00Z",
        actions=actions,
        source={"argv": ["trimtab", "shed", "--plan", "plan.json"]},
        summary={"actions": len(actions)},
        settings={"broker_cooldown_s": 0},
    )


@pytest.fixture
def standin(pulsar_standin: Start) -> PulsarStandin:
    return pulsar_standin(brokers=3, namespaces={"t/ns": 6}, tokens={TOKEN: "admin"})


@pytest.fixture
def plan_file(standin: PulsarStandin, tmp_path: Path) -> Path:
    """Two bundles of broker 1 to broker 2, one of broker 0 to broker 1."""
    b = standin.brokers
    ones = standin.cluster.owned_by(b[1])
    zero = standin.cluster.owned_by(b[0])[0]
    moves = [(ones[0], b[1], b[2]), (zero, b[0], b[1]), (ones[1], b[1], b[2])]
    path = tmp_path / "plan.json"
    path.write_text(plan_of(standin, moves).dumps())
    return path


def execute(standin: PulsarStandin, token_file: Path, *args: str, url: str = "") -> Any:
    argv = [
        "execute",
        *args,
        "--pulsar-admin",
        url or standin.admin_url,
        "--pulsar-token-file",
        str(token_file),
        "--poll-interval",
        "0.05",
    ]
    if not url:
        argv.append("--allow-insecure")
    return runner.invoke(app, argv, env={"COLUMNS": "200"})


def digest(path: Path) -> str:
    return str(json.loads(path.read_text())["digest"])


def owners(standin: PulsarStandin, plan: Path) -> list[str | None]:
    actions = json.loads(plan.read_text())["actions"]
    return [standin.cluster.owner(a["item"]) for a in actions]


def targets(plan: Path) -> list[str | None]:
    return [a["target"]["owner"] for a in json.loads(plan.read_text())["actions"]]


def test_the_dry_run_only_reads(standin: PulsarStandin, token_file: Path, plan_file: Path) -> None:
    result = execute(standin, token_file, str(plan_file))
    assert result.exit_code == 0, result.output
    assert digest(plan_file) in result.output
    assert "would run 3" in result.output
    assert standin.cluster.counts()["writes"] == 0


def test_approve_lands_every_unload_on_its_destination(
    standin: PulsarStandin, token_file: Path, plan_file: Path
) -> None:
    result = execute(standin, token_file, str(plan_file), "--approve", digest(plan_file)[:12])
    assert result.exit_code == 0, result.output
    assert owners(standin, plan_file) == targets(plan_file)
    assert len([c for c in standin.cluster.writes() if c.status == 204]) == 3


def test_a_bundle_reowned_mid_run_stops_with_exit_3_and_a_diff(
    standin: PulsarStandin, token_file: Path, plan_file: Path
) -> None:
    """The first unload lands; then someone moves the third bundle: the batch that holds it
    is re-checked, nothing of it starts, and the run stops with the diff."""
    b = standin.brokers
    third = json.loads(plan_file.read_text())["actions"][2]["item"]
    unload = standin.cluster.unload

    def unload_then_interfere(bundle: str, destination: str | None) -> None:
        unload(bundle, destination)
        standin.cluster.reown(third, b[0])

    standin.cluster.unload = unload_then_interfere  # type: ignore[method-assign]
    result = execute(
        standin, token_file, str(plan_file), "--approve", digest(plan_file), "--max-in-flight", "1"
    )
    assert result.exit_code == 3, result.output
    assert "no longer holds" in result.output
    assert third in result.output and b[0] in result.output
    assert standin.cluster.owner(third) == b[0]


def test_rollback_unloads_back_to_the_original_owners(
    standin: PulsarStandin, token_file: Path, plan_file: Path
) -> None:
    before = owners(standin, plan_file)
    assert (
        execute(standin, token_file, str(plan_file), "--approve", digest(plan_file)).exit_code == 0
    )
    dry = execute(standin, token_file, str(plan_file), "--rollback")
    assert dry.exit_code == 0, dry.output
    rollback = plan_file.parent / "plan.rollback.json"
    result = execute(
        standin, token_file, str(plan_file), "--rollback", "--approve", digest(rollback)
    )
    assert result.exit_code == 0, result.output
    assert owners(standin, plan_file) == before


def test_a_wrong_digest_is_refused_without_a_write(
    standin: PulsarStandin, token_file: Path, plan_file: Path
) -> None:
    result = execute(standin, token_file, str(plan_file), "--approve", "0" * 64)
    assert result.exit_code == 2
    assert result.output.count("error:") == 1
    assert standin.cluster.counts()["writes"] == 0


def test_https_and_a_refused_cleartext_token(
    pulsar_standin: Start, tls_files: TlsFiles, token_file: Path, tmp_path: Path
) -> None:
    """Over TLS the run needs no --allow-insecure; over http without it, one error line."""
    tls = ServerTls(tls_files.server_cert, tls_files.server_key)
    secured = pulsar_standin(brokers=2, namespaces={"t/ns": 4}, tokens={TOKEN: "admin"}, tls=tls)
    b = secured.brokers
    plan = tmp_path / "plan.json"
    plan.write_text(plan_of(secured, [(secured.cluster.owned_by(b[0])[0], b[0], b[1])]).dumps())
    ok = execute(
        secured,
        token_file,
        str(plan),
        "--approve",
        digest(plan),
        "--tls-ca",
        str(tls_files.ca),
        url=secured.admin_url,
    )
    assert ok.exit_code == 0, ok.output
    assert owners(secured, plan) == [b[1]]
    plain = pulsar_standin(brokers=1, tokens={TOKEN: "admin"})
    refused = execute(plain, token_file, str(plan), url=plain.admin_url)
    assert refused.exit_code == 2
    assert refused.output.count("error:") == 1 and "--allow-insecure" in refused.output


def test_the_token_is_in_no_output_after_failing_runs(
    standin: PulsarStandin, token_file: Path, plan_file: Path, tmp_path: Path
) -> None:
    """A run that stops on a changed bundle, one with a wrong token, one refused for
    cleartext, and a --json run: stdout, stderr, the journal, the plan files, searched."""
    b = standin.brokers
    third = json.loads(plan_file.read_text())["actions"][2]["item"]
    standin.cluster.reown(third, b[0])
    wrong = tmp_path / "wrong.jwt"
    wrong.write_text("wrong-token-value\n")
    wrong.chmod(0o600)
    results = [
        execute(standin, token_file, str(plan_file), "--approve", digest(plan_file), "--json"),
        execute(standin, token_file, str(plan_file), "--resume"),
        execute(standin, wrong, str(plan_file)),
        execute(standin, token_file, str(plan_file), url=standin.admin_url),
    ]
    assert [r.exit_code for r in results] == [3, 3, 2, 2], [r.output for r in results]
    texts = [r.output for r in results] + [r.stdout for r in results]
    texts += [p.read_text() for p in tmp_path.iterdir() if p.is_file() and p.suffix != ".jwt"]
    assert len(texts) > len(results) * 2
    assert not [t for t in texts if TOKEN in t]


def test_the_token_can_come_from_a_broker_conf(
    standin: PulsarStandin, token_file: Path, plan_file: Path, tmp_path: Path
) -> None:
    """--config broker.conf: brokerClientAuthenticationParameters=file:///... as upstream."""
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n"
        f"brokerClientAuthenticationParameters=file://{token_file}\n"
    )
    argv = ["execute", str(plan_file), "--approve", digest(plan_file), "--config", str(conf)]
    argv += ["--pulsar-admin", standin.admin_url, "--allow-insecure", "--poll-interval", "0.05"]
    result = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert owners(standin, plan_file) == targets(plan_file)
    assert "warning: sending the Pulsar admin token in cleartext" in result.output
    assert TOKEN not in result.output
