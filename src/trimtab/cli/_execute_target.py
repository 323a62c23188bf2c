"""The target options of ``trimtab execute`` and the connection they make.

The plan says which system it is for; the options for that system must be given (one
``error:`` line names the missing one). Secrets come only from files (``--command-config``,
``--redpanda-auth-file``, ``--pulsar-token-file``). The targets themselves live in
:mod:`trimtab.systems.kafka.target` and :mod:`trimtab.systems.pulsar.target`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trimtab.cli._common import print_warnings
from trimtab.errors import TrimtabError
from trimtab.plans.document import PlanDocument
from trimtab.plans.target import Target

__all__ = ["TargetFlags", "connect"]


@dataclass(frozen=True, slots=True)
class TargetFlags:
    """The command's target options, as given."""

    bootstrap_servers: str | None = None
    command_config: Path | None = None
    redpanda_admin: str | None = None
    redpanda_auth_file: Path | None = None
    pulsar_admin: str | None = None
    pulsar_token_file: Path | None = None
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    allow_insecure: bool = False
    max_load: float | None = None
    timeout_s: float = 10.0
    config: Path | None = None  # --config: a broker.conf may give the Pulsar token and CA


def _module(name: str, system: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise TrimtabError(f"this trimtab has no {system} executor ({name} is missing)") from None


def _refuse(given: Mapping[str, object], why: str) -> None:
    """One error for the first option of another system that was given."""
    for name, value in given.items():
        if value is not None:
            raise TrimtabError(f"{name} {why}")


def connect(plan: PlanDocument, flags: TargetFlags, *, where: str) -> Target:
    """The target of ``plan`` (``where``: the plan file, for messages)."""
    if plan.system in ("kafka", "redpanda"):
        return _connect_kafka(plan, flags, where)
    return _connect_pulsar(plan, flags, where)


def _connect_kafka(plan: PlanDocument, flags: TargetFlags, where: str) -> Target:
    if not flags.bootstrap_servers:
        raise TrimtabError(
            f"{where} is a {plan.system} plan: give --bootstrap-servers HOST:PORT[,...]"
        )
    pulsar_only = {
        "--pulsar-admin": flags.pulsar_admin,
        "--pulsar-token-file": flags.pulsar_token_file,
        "--tls-ca": flags.tls_ca,
        "--tls-cert": flags.tls_cert,
        "--tls-key": flags.tls_key,
    }
    _refuse(
        pulsar_only,
        f"is for Pulsar plans; {where} is a {plan.system} plan (Kafka TLS and "
        "SASL settings go in --command-config, as Kafka's tools take them)",
    )
    kafka = _module("trimtab.systems.kafka.target", "Kafka")
    options = kafka.KafkaTargetOptions(
        bootstrap_servers=flags.bootstrap_servers,
        command_config=flags.command_config,
        system=plan.system,
        redpanda_admin=flags.redpanda_admin,
        redpanda_auth_file=flags.redpanda_auth_file,
        timeout_s=flags.timeout_s,
    )
    print_warnings(kafka.option_warnings(options))  # e.g. a secret file others can read
    target: Target = kafka.connect_kafka(options)
    return target


def _connect_pulsar(plan: PlanDocument, flags: TargetFlags, where: str) -> Target:
    if not flags.pulsar_admin:
        raise TrimtabError(f"{where} is a pulsar plan: give --pulsar-admin URL")
    kafka_only = {
        "--bootstrap-servers": flags.bootstrap_servers,
        "--command-config": flags.command_config,
        "--redpanda-admin": flags.redpanda_admin,
        "--redpanda-auth-file": flags.redpanda_auth_file,
    }
    _refuse(kafka_only, f"is for Kafka and Redpanda plans; {where} is a pulsar plan")
    pulsar = _module("trimtab.systems.pulsar.target", "Pulsar")
    options = pulsar.PulsarTargetOptions(
        admin_url=flags.pulsar_admin,
        cluster=plan.cluster,
        token_file=flags.pulsar_token_file,
        tls_ca=flags.tls_ca,
        tls_cert=flags.tls_cert,
        tls_key=flags.tls_key,
        allow_insecure=flags.allow_insecure,
        cooldown_s=float(plan.settings.get("broker_cooldown_s", 0) or 0),
        max_load=flags.max_load,
        timeout_s=flags.timeout_s,
        broker_conf=flags.config if flags.config and flags.config.suffix != ".toml" else None,
    )
    target: Target = pulsar.connect_pulsar(options)
    print_warnings(list(getattr(target, "warnings", ())))
    return target
