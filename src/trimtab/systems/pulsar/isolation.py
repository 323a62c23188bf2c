"""Namespace isolation policies and anti-affinity groups, read from the files an operator has.

Formats: ``pulsar-admin ns-isolation-policy list CLUSTER`` JSON (policy name →
``NamespaceIsolationData``) or one ``get`` document, and the anti-affinity groups as
``{group: [namespace, ...]}`` (``namespaces get-anti-affinity-namespaces`` output per group)
or a ``namespace,group`` CSV table. They become the broker filters' values
(:class:`~trimtab.shedding.filters.Policies`), which decide where a bundle may go; a file that
cannot be read or is not such a document is an :class:`~trimtab.errors.InputError` naming it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

from trimtab.errors import InputError
from trimtab.readers.sniff import read_text, seems_to_be
from trimtab.readers.special_files import refuse_special
from trimtab.shedding.filters import (
    AntiAffinityGroups,
    IsolationPolicies,
    IsolationPolicy,
    Policies,
)

__all__ = ["read_anti_affinity", "read_isolation_policies", "read_policies"]


#: The commands that print what :func:`_load_json` reads, for refusals.
_COMMANDS = {
    "isolation policies": "pulsar-admin ns-isolation-policy list CLUSTER > isolation-policies.json",
    "anti-affinity groups": "a JSON {group: [namespace, ...]} or a CSV (docs/commands/shed.md)",
}


def _load_json(path: Path, what: str) -> Any:
    refuse_special(what, path)
    command = _COMMANDS.get(what, "a JSON file")
    text = read_text(path, f"a JSON file of {what}", command)
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        guess = seems_to_be(text)
        seems = f"it seems to be {guess}" if guess else f"not JSON ({exc})"
        raise InputError(
            f"{what} {path} is not a JSON file of {what}: {seems}. Make one with: {command}"
        ) from None


def _strings(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {key} must be a list of strings")
    return list(value)


def _policy(name: str, data: Any, where: str) -> IsolationPolicy:
    if not isinstance(data, dict):
        raise InputError(f"{where}: must be a NamespaceIsolationData object")
    namespaces = _strings(data.get("namespaces"), where, "namespaces")
    primary = _strings(data.get("primary"), where, "primary")
    if not namespaces or not primary:
        raise InputError(f"{where}: namespaces and primary must each list at least one regex")
    failover = data.get("auto_failover_policy") or {}
    params = failover.get("parameters") or {} if isinstance(failover, dict) else {}
    kind = failover.get("policy_type", "min_available") if isinstance(failover, dict) else None
    if kind != "min_available":
        raise InputError(f"{where}: auto_failover_policy.policy_type must be min_available")
    try:
        limit = int(params.get("min_limit", 1))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: min_limit must be a whole number") from exc
    secondary = _strings(data.get("secondary"), where, "secondary")
    return IsolationPolicy.of(name, namespaces, primary, secondary, min_limit=limit, where=where)


def read_isolation_policies(path: Path) -> IsolationPolicies:
    """``ns-isolation-policy list`` JSON (name → data) or one policy's ``get`` document."""
    doc = _load_json(path, "isolation policies")
    if isinstance(doc, dict) and "namespaces" in doc:
        doc = {path.stem: doc}
    if not isinstance(doc, dict):
        raise InputError(f"isolation policies {path}: expected a JSON object of policies")
    return IsolationPolicies(
        tuple(_policy(str(k), v, f"isolation policies {path}: {k}") for k, v in doc.items())
    )


def read_anti_affinity(path: Path) -> AntiAffinityGroups:
    """``{group: [namespace, ...]}`` JSON, or a CSV table with ``namespace,group`` columns."""
    groups: dict[str, str] = {}
    if path.suffix.lower() == ".json":
        doc = _load_json(path, "anti-affinity groups")
        if not isinstance(doc, dict):
            raise InputError(f"anti-affinity groups {path}: expected {{group: [namespace, ...]}}")
        for group, members in doc.items():
            for ns in _strings(members, f"anti-affinity groups {path}", str(group)):
                groups[ns] = str(group)
        return AntiAffinityGroups(MappingProxyType(groups))
    refuse_special("anti-affinity groups", path)
    text = read_text(path, "a CSV of anti-affinity groups", _COMMANDS["anti-affinity groups"])
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"anti-affinity groups {path}: not a CSV table ({exc})") from None
    for line, row in enumerate(rows, start=2):
        ns = (row.get("namespace") or "").strip()
        group = (row.get("group") or row.get("antiAffinityGroup") or "").strip()
        if not ns or not group:
            guess = seems_to_be(text) if line == 2 else None
            seems = f" (it seems to be {guess})" if guess and "CSV" not in guess else ""
            raise InputError(
                f"anti-affinity groups {path}:{line}: needs namespace and group columns{seems}. "
                f"Make one with: {_COMMANDS['anti-affinity groups']}"
            )
        groups[ns] = group
    return AntiAffinityGroups(MappingProxyType(groups))


def read_policies(isolation: Path | None, anti_affinity: Path | None) -> Policies | None:
    """The policies ``trimtab shed --isolation-policies/--anti-affinity`` name (None: none)."""
    if isolation is None and anti_affinity is None:
        return None
    return Policies(
        isolation=read_isolation_policies(isolation) if isolation else IsolationPolicies(),
        anti_affinity=read_anti_affinity(anti_affinity) if anti_affinity else AntiAffinityGroups(),
    )
