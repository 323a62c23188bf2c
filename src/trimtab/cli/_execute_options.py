"""The options of ``trimtab execute``, each declared once (the command's signature stays short).

The target options (``--bootstrap-servers``... ``--allow-insecure``) are checked against the
plan's system in :mod:`trimtab.cli._execute_target`; the others in :mod:`trimtab.cli.execute`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "AbortOnOption",
    "AbortOption",
    "ApproveOption",
    "BootstrapOption",
    "CommandConfigOption",
    "ControlFileOption",
    "InsecureOption",
    "JournalOption",
    "MaxInFlightOption",
    "MaxLoadOption",
    "MaxPerBrokerOption",
    "MaxThrottleOption",
    "PollOption",
    "PulsarAdminOption",
    "PulsarCaOption",
    "PulsarCertOption",
    "PulsarKeyOption",
    "PulsarTokenOption",
    "RedpandaAdminOption",
    "RedpandaAuthOption",
    "ReplanOption",
    "ResumeOption",
    "RollbackOption",
    "StallTimeoutOption",
    "ThrottleFileOption",
    "ThrottleOption",
    "TimeoutOption",
    "WindowOption",
]

ApproveOption = Annotated[
    str | None,
    typer.Option(
        "--approve", help="The plan's digest (or a unique prefix of 12+ hex digits): run it."
    ),
]
JournalOption = Annotated[
    Path | None,
    typer.Option(
        "--journal",
        help="Journal file (default PLAN.journal.jsonl beside the plan).",
        dir_okay=False,
    ),
]
ResumeOption = Annotated[
    bool, typer.Option("--resume", help="Continue the journal's run (after a crash or a stop).")
]
AbortOption = Annotated[
    bool,
    typer.Option("--abort", help="Cancel the moves a run left in flight and remove its throttles."),
]
RollbackOption = Annotated[
    bool,
    typer.Option(
        "--rollback",
        help="Reverse the actions the journal shows done (its own plan: dry run, then --approve).",
    ),
]
ReplanOption = Annotated[
    bool,
    typer.Option(
        "--replan",
        help="Plan again with the plan's own command, on the live cluster; prints the new digest.",
    ),
]
ThrottleOption = Annotated[
    str | None, typer.Option("--throttle", help="Replication throttle: bytes/s or 50MB/s, 64MiB/s.")
]
MaxThrottleOption = Annotated[
    str | None, typer.Option("--max-throttle", help="Highest throttle the control file may set.")
]
ThrottleFileOption = Annotated[
    Path | None,
    typer.Option("--throttle-file", help="File holding a rate, re-read on SIGHUP.", dir_okay=False),
]
ControlFileOption = Annotated[
    Path | None,
    typer.Option(
        "--control-file",
        help="Control file (default PLAN.control): write a rate or 'abort' into it.",
        dir_okay=False,
    ),
]
WindowOption = Annotated[
    str | None, typer.Option("--window", help="Start batches only between HH:MM-HH:MM local time.")
]
MaxInFlightOption = Annotated[
    int | None,
    typer.Option(
        "--max-in-flight",
        help="Moves in flight in the cluster (default: concurrent_moves of the plan or config).",
        min=1,
        max=100_000,
    ),
]
MaxPerBrokerOption = Annotated[
    int | None,
    typer.Option(
        "--max-in-flight-per-broker",
        help="Moves in flight touching one broker (default: no limit but --max-in-flight).",
        min=1,
        max=100_000,
    ),
]
MaxLoadOption = Annotated[
    float | None,
    typer.Option(
        "--max-load", help="A broker load above this in its load report is harm (back-off)."
    ),
]
StallTimeoutOption = Annotated[
    float,
    typer.Option(
        "--stall-timeout", help="Seconds without progress after which a move is stalled (back-off)."
    ),
]
AbortOnOption = Annotated[
    int,
    typer.Option(
        "--abort-on",
        help="Back-offs allowed; the next one stops the run as --abort does.",
        min=0,
        max=1000,
    ),
]
PollOption = Annotated[
    float, typer.Option("--poll-interval", help="Seconds between progress and guard readings.")
]
BootstrapOption = Annotated[
    str | None, typer.Option("--bootstrap-servers", help="Kafka/Redpanda brokers HOST:PORT[,...].")
]
CommandConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        help="Kafka client properties (security.protocol, sasl.*, ssl.*).",
        dir_okay=False,
    ),
]
RedpandaAdminOption = Annotated[
    str | None, typer.Option("--redpanda-admin", help="Redpanda admin API URL (its throttle).")
]
RedpandaAuthOption = Annotated[
    Path | None,
    typer.Option(
        "--redpanda-auth-file", help="File with the admin API's user:password.", dir_okay=False
    ),
]
PulsarAdminOption = Annotated[
    str | None, typer.Option("--pulsar-admin", help="Pulsar admin REST URL.")
]
PulsarTokenOption = Annotated[
    Path | None,
    typer.Option("--pulsar-token-file", help="File with the Pulsar token.", dir_okay=False),
]
PulsarCaOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-ca", help="PEM CA certificates of the Pulsar admin endpoint.", dir_okay=False
    ),
]
PulsarCertOption = Annotated[
    Path | None, typer.Option("--tls-cert", help="PEM client certificate (Pulsar).", dir_okay=False)
]
PulsarKeyOption = Annotated[
    Path | None, typer.Option("--tls-key", help="PEM key of --tls-cert (Pulsar).", dir_okay=False)
]
InsecureOption = Annotated[
    bool, typer.Option("--allow-insecure", help="Allow a plain-HTTP admin URL or a token over it.")
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", help="Seconds one call to the cluster may take.")
]
