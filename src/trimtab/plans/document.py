"""One plan as a versioned JSON document, bound to its SHA-256 digest.

Why a digest: an approval must name exactly what runs. Strimzi's approved proposals are
recomputed before they run, so what runs is not what was approved; here ``trimtab execute
--approve DIGEST`` runs the document whose canonical form hashes to DIGEST and nothing else.

The canonical form is the document without its ``digest`` key, serialised as JSON with sorted
keys, no whitespace, UTF-8, and no NaN or infinity (``json.dumps(..., sort_keys=True,
separators=(",", ":"), ensure_ascii=False, allow_nan=False)``). Anyone can recompute it with
``jq -cS 'del(.digest)' plan.json | sha256sum`` up to jq's own float printing.

Layout (``version`` 1)::

    {
      "format": "trimtab-plan", "version": 1,
      "system": "kafka" | "redpanda" | "pulsar", "cluster": "...",
      "created": "2026-11-28T15:00:00Z",
      "source": {"command": "...", "inputs": {...}, "settings": {...}},
      "summary": {...},                      # totals, scores before/after, bounds
      "settings": {...},                     # what execution needs: cooldowns, concurrency
      "actions": [ {"id", "kind", "item", "precondition", "target", "effect",
                    "reason", "required"} ... ],
      "rollback_of": null | "<digest of the plan this one reverses>",
      "digest": "<sha256 hex>"
    }

Action kinds: ``reassign`` (Kafka/Redpanda: ``item`` ``topic/partition``, precondition
``{"replicas": [...]}``, target ``{"replicas": [...]}`` and optionally ``"log_dirs"``),
``unload`` (Pulsar: ``item`` the bundle ``tenant/ns/0x..._0x...``, precondition ``{"owner":
broker}``, target ``{"owner": broker or null}``) and ``split`` (Pulsar: precondition ``{"owner":
broker}``, target ``{}``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trimtab.errors import PlanError

__all__ = [
    "FORMAT",
    "KINDS",
    "MIN_PREFIX",
    "SYSTEMS",
    "VERSION",
    "Action",
    "PlanDocument",
    "canonical_bytes",
    "check_digest_form",
    "load_plan",
    "match_digest",
    "read_plan",
]

FORMAT = "trimtab-plan"
VERSION = 1
SYSTEMS = ("kafka", "redpanda", "pulsar")
KINDS = ("reassign", "unload", "split")
MIN_PREFIX = 12  # hex digits of a digest prefix --approve accepts (48 bits: no accidental match)

_HEX = re.compile(r"[0-9a-f]+")


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes the digest is taken over: sorted keys, no whitespace, UTF-8, finite numbers."""
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Action:
    """One step of a plan, with the state it assumes (``precondition``) and the state it makes
    (``target``). ``id`` is stable: the journal and the events name actions by it."""

    id: str
    kind: str
    item: str
    precondition: Mapping[str, Any]
    target: Mapping[str, Any]
    effect: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    required: bool = True

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes this action loads (as strings, in order): for a reassignment the replicas
        it adds and removes, for an unload the source and destination owner. Per-broker
        concurrency limits count these."""
        if self.kind == "reassign":
            before = [str(n) for n in self.precondition.get("replicas", [])]
            after = [str(n) for n in self.target.get("replicas", [])]
            changed = [n for n in after if n not in before] + [n for n in before if n not in after]
            return tuple(dict.fromkeys(changed))
        owners = (self.precondition.get("owner"), self.target.get("owner"))
        return tuple(dict.fromkeys(str(o) for o in owners if o is not None))

    @property
    def bytes(self) -> int:
        """Bytes this action copies (0 when the plan does not know)."""
        return int(self.effect.get("bytes", 0) or 0)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "item": self.item,
            "precondition": dict(self.precondition),
            "target": dict(self.target),
            "effect": dict(self.effect),
            "reason": self.reason,
            "required": self.required,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Action:
        return Action(
            id=str(doc["id"]),
            kind=str(doc["kind"]),
            item=str(doc["item"]),
            precondition=dict(doc["precondition"]),
            target=dict(doc["target"]),
            effect=dict(doc.get("effect") or {}),
            reason=str(doc.get("reason", "")),
            required=bool(doc.get("required", True)),
        )


@dataclass(frozen=True, slots=True)
class PlanDocument:
    """A whole plan; :attr:`digest` is computed, never stored in the object."""

    system: str
    cluster: str
    created: str
    actions: tuple[Action, ...]
    source: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    rollback_of: str | None = None

    def __post_init__(self) -> None:
        if self.system not in SYSTEMS:
            raise PlanError(f"unknown plan system {self.system!r}: one of {', '.join(SYSTEMS)}")
        seen: set[str] = set()
        for a in self.actions:
            if a.kind not in KINDS:
                raise PlanError(f"action {a.id!r}: unknown kind {a.kind!r}")
            if a.id in seen:
                raise PlanError(f"action id {a.id!r} appears twice")
            seen.add(a.id)

    def body(self) -> dict[str, Any]:
        """The document without its digest (what the digest is taken over)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "system": self.system,
            "cluster": self.cluster,
            "created": self.created,
            "source": dict(self.source),
            "summary": dict(self.summary),
            "settings": dict(self.settings),
            "actions": [a.as_json() for a in self.actions],
            "rollback_of": self.rollback_of,
        }

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_bytes(self.body())).hexdigest()

    def as_json(self) -> dict[str, Any]:
        return self.body() | {"digest": self.digest}

    def dumps(self) -> str:
        """The file's text: indented for people, the digest last."""
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def action(self, action_id: str) -> Action:
        for a in self.actions:
            if a.id == action_id:
                return a
        raise KeyError(action_id)


def read_plan(text: str, source: str = "plan") -> PlanDocument:
    """Parse a plan document; a file that is not one, from a newer trimtab, or whose digest
    does not match its content (it was edited) is a :class:`PlanError` naming ``source``."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PlanError(f"{source}: not a plan document (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PlanError(
            f'{source}: not a trimtab plan document (no "format": "{FORMAT}"); '
            "write one with `trimtab rebalance --plan FILE` or `trimtab shed --plan FILE`"
        )
    version = doc.get("version")
    if version != VERSION:
        raise PlanError(
            f"{source}: plan version {version!r}, this trimtab reads version {VERSION}; "
            "re-plan with this trimtab"
        )
    try:
        plan = PlanDocument(
            system=str(doc["system"]),
            cluster=str(doc["cluster"]),
            created=str(doc["created"]),
            actions=tuple(Action.from_json(a) for a in doc["actions"]),
            source=dict(doc.get("source") or {}),
            summary=dict(doc.get("summary") or {}),
            settings=dict(doc.get("settings") or {}),
            rollback_of=doc.get("rollback_of"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"{source}: malformed plan document ({exc!r})") from None
    stored = doc.get("digest")
    if stored != plan.digest:
        raise PlanError(
            f"{source}: the plan was changed after it was written (its digest says "
            f"{str(stored)[:16]}…, its content hashes to {plan.digest[:16]}…); re-plan, or "
            "review the file and write it again with trimtab"
        )
    return plan


def load_plan(path: Path) -> PlanDocument:
    """:func:`read_plan` on a file; an unreadable file is a :class:`PlanError` naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PlanError(f"cannot read plan {path}: {reason}") from None
    return read_plan(text, str(path))


def check_digest_form(approved: str) -> str:
    """The approval as hex digits, or a refusal: the form is checked before any connection,
    so a typo is reported before an unreachable cluster is."""
    given = approved.strip().lower()
    if not _HEX.fullmatch(given):
        raise PlanError(
            f"--approve {approved!r} is not a hex digest; use the digest the dry run prints"
        )
    if len(given) < MIN_PREFIX:
        raise PlanError(
            f"--approve needs at least {MIN_PREFIX} hex digits of the digest, got {len(given)}"
        )
    return given


def match_digest(plan: PlanDocument, approved: str, *, candidates: Sequence[str] = ()) -> None:
    """Refuse an approval that does not name ``plan``: the full digest, or a prefix of at
    least :data:`MIN_PREFIX` hex digits that no other candidate digest shares."""
    given = check_digest_form(approved)
    digest = plan.digest
    if not digest.startswith(given):
        raise PlanError(
            f"--approve {given[:16]}… does not match this plan (digest {digest[:16]}…): the plan "
            "is not the one approved; run the dry run again and approve what it prints"
        )
    if any(c != digest and c.startswith(given) for c in candidates):
        raise PlanError(f"--approve {given} is ambiguous; give more digits")
